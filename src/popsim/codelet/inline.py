"""Helper functions in vertex code: ``compute`` may call plain Python functions, which
are inlined into it before type checking, so a family of vertices shares its code the
way Python code does (an op's formula, a reduction's step) instead of building source.

    def sigmoid(x):
        return 1.0 / (1.0 + math.exp(-x))

    class Sigmoid(MultiVertex):
        ...
        def compute(self, worker_id):
            for i in range(worker_id, len(self.out), self.num_workers()):
                self.out[i] = sigmoid(self.data[i])

A helper is a ``def`` (decorators that return the function itself, as a registry's do, are
fine) with positional or keyword parameters (defaults are allowed) whose body is vertex
code ending in one ``return``, or a ``lambda``: its statements run before the statement
that calls it, in the caller's order, with its parameters and locals renamed so that
they never meet the caller's (``_p_h<n>_<name>``); the call becomes the returned value.
Its global names (``math``, a constant, another helper) are looked up in the helper's
own module or closure, as Python would. A call in a place evaluated only sometimes (a
conditional expression's branch, the right of ``and`` / ``or``, a ``while`` condition)
can only inline a helper that is a single ``return``; the others must be called on a
line of their own first. Inlined code reports errors at the call, naming the helper.

The typed IR never sees a call: both back ends (emit_c.py, interpret.py) run the
inlined code, so compiled and interpreted vertices agree as for any other code.
"""
from __future__ import annotations

import ast
import copy
import functools
import inspect
import itertools
import linecache
import textwrap
from typing import Dict, List, Optional


__all__ = ["inline_helpers", "scope_of", "origin_of"]

#: deeper nesting than this is taken to be recursion
MAX_DEPTH = 16
_SCOPE, _ORIGIN, _INLINED = "_popsim_scope", "_popsim_origin", "_popsim_inlined"


def scope_of(node: ast.AST, default):
    """The function whose globals and closure a name in ``node`` is looked up in."""
    return getattr(node, _SCOPE, default)


def origin_of(node: ast.AST) -> Optional[str]:
    """'helper f (file.py:12)' for a node inlined from a helper, else None."""
    return getattr(node, _ORIGIN, None)


def is_inlined_name(node: ast.AST) -> bool:
    return getattr(node, _INLINED, False)


class _NotAHelper(Exception):
    """A function vertex code calls that cannot be inlined (the message says why)."""


def _lambda_node(fn, filename: str) -> ast.Lambda:
    """The lambda expression ``fn`` was made from: of the lambdas on its first line, the
    one whose body holds the source positions of ``fn``'s code (several lambdas can
    share a line, as in an op table)."""
    tree = ast.parse("".join(linecache.getlines(filename)))
    code = fn.__code__
    spots = [(p[0], p[2]) for p in code.co_positions() if p[0] is not None and p[2] is not None and p != (
        code.co_firstlineno, code.co_firstlineno, 0, 0)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda) and node.lineno == code.co_firstlineno:
            b = node.body
            if all((b.lineno, b.col_offset) <= spot <= (b.end_lineno, b.end_col_offset) for spot in spots):
                return node
    raise _NotAHelper(f"cannot find the source of lambda {fn.__qualname__} on line {code.co_firstlineno} of "
                      f"{filename}: define it with def")


class _Helper:
    """One parsed helper: its parameters, defaults, body before the return, and the
    returned expression."""

    def __init__(self, fn):
        self.fn = fn
        where = f"helper {fn.__qualname__}"
        try:
            lines, self.first = inspect.getsourcelines(fn)
            self.filename = inspect.getsourcefile(fn) or inspect.getfile(fn)
        except (OSError, TypeError) as e:
            raise _NotAHelper(f"cannot read the source of {where} ({e}): vertex code inlines the functions it "
                              "calls from their source, so define them in a .py file") from None
        if fn.__name__ == "<lambda>":
            node = _lambda_node(fn, self.filename)
            node = ast.FunctionDef(name=fn.__name__, args=node.args, body=[ast.Return(value=node.body)],
                                   decorator_list=[])
        else:
            node = ast.parse(textwrap.dedent("".join(lines))).body[0]
        if not isinstance(node, ast.FunctionDef):
            raise _NotAHelper(f"{where} is not a def (vertex code can call functions defined with def)")
        a = node.args
        if a.vararg or a.kwarg or getattr(a, "posonlyargs", None) or a.kwonlyargs:
            raise _NotAHelper(f"{where}: vertex code helpers take plain parameters (no *args, **kwargs, "
                              "keyword-only or positional-only ones)")
        if hasattr(fn, "__wrapped__"):  # a decorator's wrapper: its code is not the def's
            raise _NotAHelper(f"{where} is wrapped by a decorator; vertex code can call the undecorated function")
        self.params = [p.arg for p in a.args]
        self.defaults = dict(zip(self.params[len(self.params) - len(a.defaults):], a.defaults))
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]  # the docstring
        if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
            raise _NotAHelper(f"{where} must end with 'return <value>' to be called from vertex code")
        for n in ast.walk(ast.Module(body=body[:-1], type_ignores=[])):
            if isinstance(n, ast.Return):
                raise _NotAHelper(f"{where} ({self.filename}:{self.first + n.lineno - 1}) returns before its last "
                                  "line: a vertex code helper has one return, at its end")
            if isinstance(n, (ast.FunctionDef, ast.Lambda, ast.ClassDef, ast.Global, ast.Nonlocal)):
                raise _NotAHelper(f"{where}: {type(n).__name__} is not supported in vertex code helpers")
        self.body, self.value = body[:-1], body[-1].value
        self.locals = set(self.params)
        for n in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                self.locals.add(n.id)


@functools.lru_cache(maxsize=1024)
def _parsed(fn) -> _Helper:
    """A helper parsed once per process, not once per vertex class that calls it (a table's
    function is called by every instantiation of several templates; inlining copies it)."""
    return _Helper(fn)


class _Inliner:
    def __init__(self, src, func, self_name: str, compute_locals, known):
        self.src, self.func, self.self_name, self.known = src, func, self_name, known
        self.compute_locals = compute_locals
        self.counter = itertools.count()

    # -- finding helpers -------------------------------------------------------------------
    def resolve(self, node, scope):
        """The object a callee names, or None when it is not a plain global."""
        if isinstance(node, ast.Name):
            if scope is self.func and node.id in self.compute_locals:
                return None
            code = scope.__code__
            if node.id in code.co_freevars and scope.__closure__:
                try:
                    return scope.__closure__[code.co_freevars.index(node.id)].cell_contents
                except ValueError:
                    return None
            return scope.__globals__.get(node.id)
        if isinstance(node, ast.Attribute) and not (isinstance(node.value, ast.Name)
                                                    and node.value.id == self.self_name):
            base = self.resolve(node.value, scope)
            return getattr(base, node.attr, None) if base is not None else None
        return None

    def helper(self, call: ast.Call, scope) -> Optional[_Helper]:
        fn = self.resolve(call.func, scope_of(call.func, scope))
        if not inspect.isfunction(fn) or fn in self.known:
            return None
        try:
            return _parsed(fn)
        except _NotAHelper as e:
            raise self.src.error(call, str(e)) from None

    # -- statements ------------------------------------------------------------------------
    def block(self, stmts: List[ast.stmt], scope, depth: int) -> List[ast.stmt]:
        out: List[ast.stmt] = []
        for s in stmts:
            hoisted: List[ast.stmt] = []
            if isinstance(s, ast.If):
                s.test = self.expr(s.test, scope, depth, hoisted)
                s.body, s.orelse = self.block(s.body, scope, depth), self.block(s.orelse, scope, depth)
            elif isinstance(s, ast.For):
                s.iter = self.expr(s.iter, scope, depth, hoisted)
                s.body, s.orelse = self.block(s.body, scope, depth), self.block(s.orelse, scope, depth)
            elif isinstance(s, ast.While):
                s.test = self.expr(s.test, scope, depth, None)  # evaluated each time round
                s.body, s.orelse = self.block(s.body, scope, depth), self.block(s.orelse, scope, depth)
            else:
                for name, value in ast.iter_fields(s):
                    if isinstance(value, ast.expr):
                        setattr(s, name, self.expr(value, scope, depth, hoisted))
                    elif isinstance(value, list) and value and isinstance(value[0], ast.expr):
                        setattr(s, name, [self.expr(v, scope, depth, hoisted) for v in value])
            out.extend(hoisted)
            out.append(s)
        return out

    # -- expressions: ``hoisted`` is None where the expression is evaluated only sometimes --
    def expr(self, node: ast.expr, scope, depth: int, hoisted: Optional[List[ast.stmt]]) -> ast.expr:
        if isinstance(node, ast.IfExp):
            node.test = self.expr(node.test, scope, depth, hoisted)
            node.body = self.expr(node.body, scope, depth, None)
            node.orelse = self.expr(node.orelse, scope, depth, None)
            return node
        if isinstance(node, ast.BoolOp):
            node.values = [self.expr(v, scope, depth, hoisted if i == 0 else None) for i, v in enumerate(node.values)]
            return node
        if isinstance(node, ast.Compare):
            node.left = self.expr(node.left, scope, depth, hoisted)
            node.comparators = [self.expr(v, scope, depth, hoisted if i == 0 else None)
                                for i, v in enumerate(node.comparators)]
            return node
        for name, value in ast.iter_fields(node):
            if isinstance(value, ast.expr):
                setattr(node, name, self.expr(value, scope, depth, hoisted))
            elif isinstance(value, list):
                setattr(node, name, [self.expr(v, scope, depth, hoisted) if isinstance(v, ast.expr) else v
                                     for v in value])
        if isinstance(node, ast.Call):
            for k in node.keywords:
                k.value = self.expr(k.value, scope, depth, hoisted)
            h = self.helper(node, scope)
            if h is not None:
                return self.inline(node, h, scope, depth, hoisted)
        return node

    def inline(self, call: ast.Call, h: _Helper, scope, depth: int, hoisted) -> ast.expr:
        name = h.fn.__qualname__
        if depth >= MAX_DEPTH:
            raise self.src.error(call, f"helper '{name}' is nested more than {MAX_DEPTH} calls deep "
                                 "(vertex code cannot recurse)")
        args = self.bind(call, h, scope)
        n = next(self.counter)
        rename = {v: f"_p_h{n}_{v}" for v in h.locals}
        origin = origin_of(call) or f"helper {name} ({h.filename.rsplit('/', 1)[-1]}:{h.first})"
        body = [self.adopt(s, h, rename, call, origin) for s in copy.deepcopy(h.body)]
        value = self.adopt(copy.deepcopy(h.value), h, rename, call, origin)
        if hoisted is None:
            if body:
                raise self.src.error(call, f"helper '{name}' has statements, so it cannot be called where the "
                                     "value is computed only sometimes (a conditional branch, after and/or, a while "
                                     "condition)", f"call it on a line of its own first: t = {name}(...)")
            return self.substitute(value, args, rename, call, depth, name)
        for param, arg in args.items():
            target = self.mark(ast.Name(id=rename[param], ctx=ast.Store()), call, origin)
            hoisted.append(ast.copy_location(ast.Assign(targets=[target], value=arg), call))
        hoisted.extend(self.block(body, h.fn, depth + 1))
        return self.expr(value, h.fn, depth + 1, hoisted)

    def bind(self, call: ast.Call, h: _Helper, scope) -> Dict[str, ast.expr]:
        name = h.fn.__qualname__
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            raise self.src.error(call, f"*args and **kwargs cannot be passed to helper '{name}' in vertex code")
        if len(call.args) > len(h.params):
            raise self.src.error(call, f"helper '{name}' takes {len(h.params)} arguments, "
                                 f"{len(call.args)} given")
        args = dict(zip(h.params, call.args))
        for k in call.keywords:
            if k.arg not in h.params or k.arg in args:
                raise self.src.error(k, f"helper '{name}' got an unexpected or repeated argument '{k.arg}'")
            args[k.arg] = k.value
        for p in h.params:
            if p not in args:
                if p not in h.defaults:
                    raise self.src.error(call, f"helper '{name}' is missing its argument '{p}'")
                args[p] = self.mark_tree(copy.deepcopy(h.defaults[p]), call, h.fn, None)
        for a in args.values():
            if isinstance(a, ast.Name) and a.id == self.self_name and scope is self.func:
                raise self.src.error(a, f"'{self.self_name}' cannot be passed to helper '{name}'",
                                     f"pass the field itself ({self.self_name}.x) or its values")
        return {p: args[p] for p in h.params}

    def substitute(self, value, args, rename, call, depth, name) -> ast.expr:
        """A single-return helper in a place evaluated only sometimes: its parameters
        become the argument expressions (each argument is used once, or is a plain name
        or constant, so nothing is evaluated twice)."""
        by_local = {rename[p]: a for p, a in args.items()}
        uses: Dict[str, int] = {}
        for n in ast.walk(value):
            if isinstance(n, ast.Name) and n.id in by_local:
                uses[n.id] = uses.get(n.id, 0) + 1
        for local, count in uses.items():
            if count > 1 and not isinstance(by_local[local], (ast.Name, ast.Constant)):
                raise self.src.error(call, f"helper '{name}' uses a parameter twice, so it cannot take an "
                                     "expression where the value is computed only sometimes",
                                     f"compute the argument on a line of its own first: t = ...; {name}(t)")

        class Put(ast.NodeTransformer):
            def visit_Name(self, n):
                return copy.deepcopy(by_local[n.id]) if n.id in by_local else n

        return self.expr(Put().visit(value), self.func, depth + 1, None)

    # -- marking inlined code --------------------------------------------------------------
    def adopt(self, node, h: _Helper, rename, call, origin):
        """A copy of the helper's code placed at the call: its locals renamed, its other
        names looked up in the helper's scope, its location the call's."""
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                if n.id in rename:
                    n.id = rename[n.id]
                    setattr(n, _INLINED, True)
                elif not hasattr(n, _SCOPE):
                    setattr(n, _SCOPE, h.fn)
        return self.mark_tree(node, call, None, origin)

    def mark_tree(self, node, call, scope, origin):
        for n in ast.walk(node):
            if isinstance(n, (ast.expr, ast.stmt, ast.keyword)):
                ast.copy_location(n, call)
            if origin and not hasattr(n, _ORIGIN):
                setattr(n, _ORIGIN, origin)
            if scope is not None and isinstance(n, ast.Name) and not hasattr(n, _SCOPE):
                setattr(n, _SCOPE, scope)
        return node

    def mark(self, node, call, origin):
        setattr(node, _INLINED, True)
        return self.mark_tree(node, call, None, origin)



def inline_helpers(src, node: ast.FunctionDef, func, self_name: str, known) -> None:
    """Inline, in place, every call in ``node`` (compute) to a plain Python function
    other than those in ``known`` (the functions vertex code calls natively)."""
    params = {p.arg for p in node.args.args}
    assigned = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    node.body = _Inliner(src, func, self_name, params | assigned, known).block(node.body, func, 0)
