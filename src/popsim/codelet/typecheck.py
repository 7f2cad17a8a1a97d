"""Type checking of a vertex's ``compute``: the passes, in order, over one CheckState.

How a local's type is chosen: every local has ONE static type for its whole life, the
widest of the types of all values assigned to it anywhere in ``compute`` (including
``+=`` results and for-loop targets), in the order bool < int32 < uint32 < int64 <
uint64 < float32. So ``s = 0`` followed by ``s += x`` with a float ``x`` makes ``s`` a
float, as in Python; assignments of narrower values are converted. An annotation
(``s: int = 0``) fixes the type instead. Locals referring to field data (``row =
self.rows[i]``) must always refer to the same field.

The types are found by walking the body to a fixed point (a local's type only widens);
a final walk builds the typed IR, checking that every read of a local comes after an
assignment on every path (definite assignment). The walks apply the typing rules of
typecheck_stmt.py (statements), typecheck_expr.py (expressions) and typecheck_calls.py
(calls), which share the pass's CheckState (typecheck_state.py).
"""
from __future__ import annotations

import ast
from typing import Callable, Tuple

from .inline import inline_helpers, is_inlined_name
from .typecheck_calls import KNOWN, Calls
from .typecheck_expr import Expressions
from .typecheck_state import CheckState
from .typecheck_stmt import Statements
from .typed_ir import Function, T

# Inference walks before a local's type must have settled (each walk can only widen one).
_MAX_INFERENCE_WALKS = 64


def check_signature(c: CheckState) -> None:
    """compute takes (self) on a Vertex, (self, worker_id) on a MultiVertex."""
    node, src = c.node, c.src
    base = "MultiVertex" if c.multi else "Vertex"
    want = "(self, worker_id)" if c.multi else "(self)"
    if isinstance(node, ast.AsyncFunctionDef):
        raise src.error(node, "compute cannot be async")
    if node.decorator_list:
        raise src.error(node.decorator_list[0], "compute cannot be decorated in vertex code")
    a = node.args
    params = [p.arg for p in list(getattr(a, "posonlyargs", [])) + list(a.args)]
    if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or len(params) != (2 if c.multi else 1):
        raise src.error(node, f"{base}.compute must take exactly {want}",
                        "a MultiVertex gets its worker id as the second parameter; a Vertex takes only self")
    c.self_name = params[0]
    c.worker_name = params[1] if c.multi else None


def collect_locals(c: CheckState) -> None:
    """Every name assigned anywhere in compute is a local (as in Python); an annotation
    (``s: int = 0``) fixes a local's type. The worker id is an int local."""
    for node in ast.walk(ast.Module(body=c.node.body, type_ignores=[])):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
            targets = [node.target]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    _declare(c, n)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            annotation = node.annotation
            text = annotation.value if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str) \
                else None  # a string annotation
            ty = c.exprs.element_type(text if text is not None else c.exprs.resolve(annotation))
            if ty is None:
                raise c.err(annotation, f"'{ast.unparse(annotation)}' is not a type for a local",
                            "annotate locals with float, int, bool or popsim.UNSIGNED_INT / LONGLONG / "
                            "UNSIGNED_LONGLONG (half values are computed as float)")
            name = node.target.id
            if name in c.fixed and c.fixed[name] is not ty:
                raise c.err(node, f"local '{name}' is annotated twice with different types")
            c.fixed[name] = c.types[name] = ty
            c.decided[name] = node.lineno
    if c.worker_name is not None:
        c.local_names.add(c.worker_name)
        c.types.setdefault(c.worker_name, T.I32)


def _declare(c: CheckState, n: ast.Name) -> None:
    if n.id == c.self_name:
        raise c.err(n, f"'{n.id}' cannot be assigned in vertex code")
    if n.id.startswith("_p_") and not is_inlined_name(n):
        raise c.err(n, "names starting with _p_ are reserved for popsim in vertex code", "rename the local")
    c.local_names.add(n.id)


def inline_calls(c: CheckState) -> None:
    """Calls to plain Python functions become their code (inline.py)."""
    inline_helpers(c.src, c.node, c.func, c.self_name, KNOWN)


def infer_local_types(c: CheckState) -> None:
    """Walk the body until no local's type widens any more."""
    for _ in range(_MAX_INFERENCE_WALKS):
        c.changed = False
        c.reset_walk()
        c.stmts.block(c.node.body)
        if not c.changed:
            break


def build_typed_ir(c: CheckState) -> None:
    """The final walk: the typed IR, with definite assignment and index-check sites."""
    c.final = True
    c.reset_walk()
    c.defined = set([c.worker_name] if c.worker_name else [])
    body, _ = c.stmts.block(c.node.body)
    order = [n for n in _assignment_order(c) if n in c.types]
    c.function = Function(
        name=c.vertex_name, qualname=f"{c.cls.__qualname__}.compute", filename=c.src.filename,
        line=c.node.lineno, self_name=c.self_name, worker_name=c.worker_name, fields=c.fields,
        attrs=c.attrs, body=body, locals={n: c.types[n] for n in order}, temps=dict(c.temps),
        sites=list(c.sites), counters=list(c.counters))


def _assignment_order(c: CheckState):
    seen = [c.worker_name] if c.worker_name else []
    for node in ast.walk(ast.Module(body=c.node.body, type_ignores=[])):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in seen:
            seen.append(node.id)
    return seen


#: The passes of a type check, run in this order on one CheckState.
PASSES: Tuple[Tuple[str, Callable[[CheckState], None]], ...] = (
    ("signature", check_signature),
    ("helpers", inline_calls),
    ("locals", collect_locals),
    ("local types", infer_local_types),
    ("typed IR", build_typed_ir),
)


def check_function(src, node, func, cls, vertex_name, fields, attrs, multi) -> Function:
    """The typed IR of ``compute`` (raises CodeletSyntaxError)."""
    c = CheckState(src, node, func, cls, vertex_name, fields, attrs, multi)
    c.stmts, c.exprs, c.calls = Statements(c), Expressions(c), Calls(c)
    for _, run in PASSES:
        run(c)
    assert c.function is not None  # build_typed_ir, the last pass, made it
    return c.function
