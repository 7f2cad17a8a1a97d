"""Type checking of a vertex's ``compute``: statements, locals and their types.

How a local's type is chosen: every local has ONE static type for its whole life, the
widest of the types of all values assigned to it anywhere in ``compute`` (including
``+=`` results and for-loop targets), in the order bool < int32 < uint32 < int64 <
uint64 < float32. So ``s = 0`` followed by ``s += x`` with a float ``x`` makes ``s`` a
float, as in Python; assignments of narrower values are converted. An annotation
(``s: int = 0``) fixes the type instead. Locals referring to field data (``row =
self.rows[i]``) must always refer to the same field.

The types are found by iterating to a fixed point (a local's type only widens); a final
pass builds the typed IR, checking that every read of a local comes after an
assignment on every path (definite assignment).
"""
from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from .fields import Direction, FieldKind
from .typecheck_calls import KNOWN
from .typecheck_expr import _BINOPS, ExprChecker, Unknown, loc_of
from .typed_ir import (STORAGE, VK, Assign, Break, Breakpoint, Const, Continue, Expr, FieldRef, ForEach, ForRange,
                       Function, If, Len, Local, Return, Stmt, Store, T, ViewT, While, join)

_STATEMENTS = {
    "Try": ("'try' is not supported in vertex codelets",
            "vertex code cannot raise or catch exceptions: test conditions with if, and return False to fail"),
    "TryStar": ("'try' is not supported in vertex codelets", None),
    "With": ("'with' is not supported in vertex codelets", None),
    "AsyncWith": ("'async with' is not supported in vertex codelets", None),
    "AsyncFor": ("'async for' is not supported in vertex codelets", None),
    "Raise": ("'raise' is not supported in vertex codelets",
              "return False to make the vertex fail (the engine raises ApplicationRuntimeError)"),
    "Assert": ("'assert' is not supported in vertex codelets", "write: if not (condition): return False"),
    "Import": ("'import' is not supported inside compute", "import modules at the top of the file"),
    "ImportFrom": ("'import' is not supported inside compute", "import modules at the top of the file"),
    "Global": ("'global' is not supported in vertex codelets",
               "vertex code cannot change globals; read module-level constants directly, or use a field"),
    "Nonlocal": ("'nonlocal' is not supported in vertex codelets", None),
    "Delete": ("'del' is not supported in vertex codelets", None),
    "FunctionDef": ("functions cannot be defined inside compute", "inline the code"),
    "AsyncFunctionDef": ("functions cannot be defined inside compute", "inline the code"),
    "ClassDef": ("classes cannot be defined inside compute", None),
    "Match": ("'match' is not supported in vertex codelets", "use if / elif"),
}


class Checker(ExprChecker):
    def __init__(self, src, node: ast.FunctionDef, func, cls, vertex_name: str, fields, attrs, multi: bool):
        self.node = node
        self_name, worker = self._params(src, node, multi)
        super().__init__(src, func, cls, fields, attrs, multi, vertex_name, self_name)
        self.worker_name = worker
        self.types = {}
        self.fixed = {}
        self.decided = {}
        self.defined: Optional[set] = None
        self.loops = 0
        self.counters: List[str] = []
        self.changed = False
        self._collect(node.body)
        if worker is not None:
            self.local_names.add(worker)
            self.types.setdefault(worker, T.I32)

    @staticmethod
    def _params(src, node, multi) -> Tuple[str, Optional[str]]:
        base = "MultiVertex" if multi else "Vertex"
        want = "(self, worker_id)" if multi else "(self)"
        if isinstance(node, ast.AsyncFunctionDef):
            raise src.error(node, "compute cannot be async")
        if node.decorator_list:
            raise src.error(node.decorator_list[0], "compute cannot be decorated in vertex code")
        a = node.args
        params = [p.arg for p in list(getattr(a, "posonlyargs", [])) + list(a.args)]
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or len(params) != (2 if multi else 1):
            raise src.error(node, f"{base}.compute must take exactly {want}",
                            "a MultiVertex gets its worker id as the second parameter; a Vertex takes only self")
        return params[0], (params[1] if multi else None)

    # -- locals --------------------------------------------------------------------------------
    def _collect(self, body):
        """Every name assigned anywhere in compute is a local (as in Python)."""
        for node in ast.walk(ast.Module(body=body, type_ignores=[])):
            targets = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
                targets = [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                        self._declare(n)
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                ty = self.element_type(self._annotation(node.annotation))
                if ty is None:
                    raise self.err(node.annotation, f"'{ast.unparse(node.annotation)}' is not a type for a local",
                                   "annotate locals with float, int, bool or popsim.UNSIGNED_INT / LONGLONG / "
                                   "UNSIGNED_LONGLONG (half values are computed as float)")
                name = node.target.id
                if name in self.fixed and self.fixed[name] is not ty:
                    raise self.err(node, f"local '{name}' is annotated twice with different types")
                self.fixed[name] = self.types[name] = ty
                self.decided[name] = node.lineno

    def _annotation(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return self.resolve(node)

    def _declare(self, n: ast.Name):
        if n.id == self.self_name:
            raise self.err(n, f"'{n.id}' cannot be assigned in vertex code")
        if n.id.startswith("_p_"):
            raise self.err(n, "names starting with _p_ are reserved for popsim in vertex code", "rename the local")
        self.local_names.add(n.id)

    def is_local(self, name: str) -> bool:
        return name in self.local_names

    def local_type(self, name: str, node):
        ty = self.types.get(name)
        if self.final:
            if name not in self.defined or ty is None:
                raise self.err(node, f"local variable '{name}' may be read before it is assigned",
                               f"assign '{name}' a value on every path before this line (e.g. {name} = 0 at the top "
                               "of compute); vertex code has no None")
            return ty
        if ty is None:
            raise Unknown(name)
        return ty

    def bind(self, name: str, ty, node):
        """Record that a value of type ``ty`` is assigned to local ``name``."""
        if ty is None:
            return
        if self.defined is not None:
            self.defined.add(name)
        cur = self.types.get(name)
        if cur is None:
            self.types[name] = ty
            self.decided[name] = node.lineno
            self.changed = True
            return
        if isinstance(cur, ViewT) or isinstance(ty, ViewT):
            if cur != ty:
                raise self.err(node, f"local '{name}' holds {self._what(cur)} (line {self.decided[name]}) and here "
                               f"{self._what(ty)}: a local keeps one type for its whole life",
                               "use a different name for each")
            return
        if name in self.fixed:
            return
        wider = join(cur, ty)
        if wider is not cur:
            self.types[name] = wider
            self.decided[name] = node.lineno
            self.changed = True

    def _what(self, ty) -> str:
        if isinstance(ty, ViewT):
            name = self.fields[ty.field].name
            return {VK.ROW: f"a row of field '{name}'", VK.VECTOR: f"field '{name}'"}.get(ty.kind, f"field '{name}'")
        return f"a {ty.describe()} number"

    def ex(self, fn, *args):
        """Evaluate a builder; during inference an unknown local gives None."""
        if self.final:
            return fn(*args)
        try:
            return fn(*args)
        except Unknown:
            return None

    # -- driver --------------------------------------------------------------------------------
    def check(self) -> Function:
        for _ in range(64):
            self.changed = False
            self.sites, self.seq, self.temps = [], 0, {}
            self.block(self.node.body)
            if not self.changed:
                break
        self.final = True
        self.sites, self.seq, self.temps, self.counters = [], 0, {}, []
        self.defined = set([self.worker_name] if self.worker_name else [])
        body, _ = self.block(self.node.body)
        order = [n for n in self._order() if n in self.types]
        return Function(
            name=self.vertex_name, qualname=f"{self.cls.__qualname__}.compute", filename=self.src.filename,
            line=self.node.lineno, self_name=self.self_name, worker_name=self.worker_name, fields=self.fields,
            attrs=self.attrs, body=body, locals={n: self.types[n] for n in order}, temps=dict(self.temps),
            sites=list(self.sites), counters=list(self.counters))

    def _order(self):
        seen = [self.worker_name] if self.worker_name else []
        for node in ast.walk(ast.Module(body=self.node.body, type_ignores=[])):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in seen:
                seen.append(node.id)
        return seen

    def block(self, stmts) -> Tuple[List[Stmt], bool]:
        """Statements -> IR, and whether the block always ends in break / continue /
        return (code after that is still checked, and kept)."""
        out: List[Stmt] = []
        done = False
        for s in stmts:
            method = getattr(self, "s_" + type(s).__name__, None)
            if method is None:
                msg, fix = _STATEMENTS.get(type(s).__name__, (None, None))
                raise self.err(s, msg or f"'{type(s).__name__}' statements are not supported in vertex codelets", fix)
            result = method(s)
            if isinstance(result, tuple):
                out.extend(result[0])
                done = done or result[1]
            else:
                out.extend(result)
        return out, done

    def branch(self, stmts):
        """A nested block for definite assignment: returns (ir, terminated, defined after)."""
        saved = None if self.defined is None else set(self.defined)
        ir, done = self.block(stmts)
        after = self.defined
        self.defined = saved
        return ir, done, after

    # -- assignments --------------------------------------------------------------------------
    def s_Assign(self, node):
        targets = node.targets
        if len(targets) == 1 and isinstance(targets[0], (ast.Tuple, ast.List)):
            return self._unpack(targets[0], node.value, node)
        value = self.ex(self.expr, node.value)
        out: List[Stmt] = []
        if len(targets) > 1 and value is not None and not isinstance(value, (Const, Local)):
            temp = self.new_temp(value.ty, value.loc)
            out.append(Assign(loc_of(node), temp, value))
            value = temp
        for t in targets:
            out.extend(self.assign_to(t, value, node))
        return out

    def _unpack(self, target, value_node, node):
        if not isinstance(value_node, (ast.Tuple, ast.List)) or len(value_node.elts) != len(target.elts):
            raise self.err(node, "unpacking is only supported from a tuple of the same length (a, b = b, a)")
        out: List[Stmt] = []
        temps = []
        for v in value_node.elts:
            e = self.ex(self.expr, v)
            if e is not None and not isinstance(e, Const):
                temp = self.new_temp(e.ty, e.loc)
                out.append(Assign(loc_of(node), temp, e))
                e = temp
            temps.append(e)
        for t, e in zip(target.elts, temps):
            out.extend(self.assign_to(t, e, node))
        return out

    def assign_to(self, target, value: Optional[Expr], node) -> List[Stmt]:
        loc = loc_of(node)
        if isinstance(target, ast.Name):
            self.bind(target.id, value.ty if value is not None else None, target)
            if value is None or not self.final:
                return []
            ty = self.types[target.id]
            return [Assign(loc, Local(ty, loc_of(target), target.id), self.conv(value, ty, target))]
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                and target.value.id == self.self_name:
            i = self.field_index(target)
            spec = self.fields[i]
            self.check_writable(i, target)
            if spec.kind is not FieldKind.SCALAR_EDGE:
                raise self.err(target, f"field '{spec.name}' is a {spec.kind.value}: assign its elements",
                               f"self.{target.attr}[i] = value")
            if value is None:
                return []
            return [Store(loc, None, None, self.conv(value, STORAGE[spec.dtype].value, target), None, i)]
        if isinstance(target, ast.Subscript):
            view = self.ex(self.subject, target.value)
            idx = self.ex(self.index_of, target)
            if view is None or idx is None or value is None:
                return []
            return [self.store(view, idx, value, target)]
        if isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
            raise self.err(target, "nested unpacking is not supported in vertex code", "assign one value at a time")
        raise self.err(target, f"cannot assign to '{ast.unparse(target)}' in vertex code")

    def store(self, view: Expr, idx: Expr, value: Expr, target) -> Store:
        vt = view.ty
        if vt.kind is VK.ROWS:
            name = self.fields[vt.field].name
            raise self.err(target, f"list field '{name}' holds rows: assign their elements",
                           f"self.{self.attrs[vt.field]}[i][j] = value")
        self.check_writable(vt.field, target)
        ty = STORAGE[self.fields[vt.field].dtype].value
        return Store(loc_of(target), view, idx, self.conv(value, ty, target), self.checked_site(view, idx, target),
                     vt.field)

    def check_writable(self, field: int, node):
        spec = self.fields[field]
        if spec.direction is Direction.INPUT:
            raise self.err(node, f"field '{spec.name}' is an Input and cannot be written",
                           "declare it InOut[...] (read and written) or Output[...] (written only)")
        if spec.direction is Direction.NONE:
            raise self.err(node, f"state field '{spec.name}' is read-only in vertex code",
                           "keep changing values in an InOut field")

    def s_AugAssign(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.unsupported(node.op)
        target = node.target
        loc = loc_of(node)
        if isinstance(target, ast.Name):
            cur = self.ex(self.expr, target)
            rhs = self.ex(self.numeric, node.value)
            if cur is None or rhs is None:
                return []
            return self.assign_to(target, self.binary(op, self.conv(cur, cur.ty, target), rhs, node), node)
        if isinstance(target, ast.Attribute):
            cur = self.ex(self.expr, target)
            rhs = self.ex(self.numeric, node.value)
            if cur is None or rhs is None:
                return []
            return self.assign_to(target, self.binary(op, cur, rhs, node), node)
        if isinstance(target, ast.Subscript):
            out: List[Stmt] = []
            view = self.ex(self.subject, target.value)
            idx = self.ex(self.index_of, target)
            if view is None or idx is None:
                self.ex(self.numeric, node.value)
                return []
            if not isinstance(view, (FieldRef, Local)):
                temp = self.new_temp(view.ty, view.loc)
                out.append(Assign(loc, temp, view))
                view = temp
            if not isinstance(idx, (Const, Local)):
                temp = self.new_temp(idx.ty, idx.loc)
                out.append(Assign(loc, temp, idx))
                idx = temp
            if view.ty.kind is VK.ROWS:
                self.store(view, idx, idx, target)  # raises the "holds rows" error
            old = self.element(view, idx, target)
            rhs = self.ex(self.numeric, node.value)
            if rhs is None:
                return out
            out.append(self.store(view, idx, self.binary(op, old, rhs, node), target))
            return out
        raise self.err(target, f"cannot assign to '{ast.unparse(target)}' in vertex code")

    def s_AnnAssign(self, node):
        if not isinstance(node.target, ast.Name):
            raise self.err(node, "only locals can be annotated inside compute",
                           "declare fields as class annotations")
        if node.value is None:
            return []
        return self.assign_to(node.target, self.ex(self.expr, node.value), node)

    # -- other simple statements -----------------------------------------------------------------
    def s_Pass(self, node):
        return []

    def s_Expr(self, node):
        v = node.value
        if isinstance(v, ast.Constant):
            return []            # a docstring or ...
        if isinstance(v, ast.Call):
            kind, _ = self.callee(v)
            if kind == "print":
                return [self.print_stmt(v)]
            if kind == "breakpoint":
                if v.args or v.keywords:
                    raise self.err(v, "breakpoint() takes no arguments in vertex code")
                return [Breakpoint(loc_of(node))]
        raise self.err(node, "this expression's value is not used", "assign it to a local or a field")

    # -- control flow ---------------------------------------------------------------------------
    def s_If(self, node):
        test = self.ex(lambda: self.truth(self.expr(node.test), node.test))
        body, done1, d1 = self.branch(node.body)
        orelse, done2, d2 = self.branch(node.orelse)
        if self.defined is not None:
            if done1 and done2:
                self.defined = d1 | d2
            elif done1:
                self.defined = d2
            elif done2:
                self.defined = d1
            else:
                self.defined = d1 & d2
        return [If(loc_of(node), test, body, orelse)], done1 and done2

    def s_While(self, node):
        if node.orelse:
            raise self.err(node.orelse[0], "'else' on loops is not supported in vertex codelets",
                           "set a flag before 'break' and test it after the loop")
        test = self.ex(lambda: self.truth(self.expr(node.test), node.test))
        self.loops += 1
        body, _, _ = self.branch(node.body)
        self.loops -= 1
        return [While(loc_of(node), test, body)]

    def s_For(self, node):
        if node.orelse:
            raise self.err(node.orelse[0], "'else' on loops is not supported in vertex codelets",
                           "set a flag before 'break' and test it after the loop")
        it = node.iter
        kind = None
        if isinstance(it, ast.Call) and isinstance(it.func, (ast.Name, ast.Attribute)) \
                and not self.refers_to_data(it.func):
            kind = self.loop_callee(it)
        if kind == "range":
            return self._for_range(node)
        saved = None if self.defined is None else set(self.defined)
        if kind == "enumerate":
            if len(it.args) != 1 or it.keywords:
                raise self.err(it, "enumerate() takes one vector or list field in vertex code")
            t = node.target
            if not (isinstance(t, ast.Tuple) and len(t.elts) == 2 and all(isinstance(e, ast.Name) for e in t.elts)):
                raise self.err(t, "write: for i, x in enumerate(...)")
            index_name, target = t.elts
            self.bind(index_name.id, T.I32, index_name)
            iter_node = it.args[0]
        else:
            target, iter_node = node.target, it
        view = self.ex(self.iterable, iter_node)
        if not isinstance(target, ast.Name):
            raise self.err(target, "the loop variable must be a name in vertex code", "write: for x in ...")
        elem = None
        if view is not None:
            elem = ViewT(view.ty.field, VK.ROW) if view.ty.kind is VK.ROWS else STORAGE[
                self.fields[view.ty.field].dtype].value
        self.bind(target.id, elem, target)
        counter = self._counter()
        self.loops += 1
        body, _, _ = self.branch(node.body)
        self.loops -= 1
        self.defined = saved
        if not self.final or view is None:
            return []
        var = Local(self.types[target.id], loc_of(target), target.id)
        if isinstance(var.ty, ViewT) != isinstance(elem, ViewT):
            raise self.err(target, f"loop variable '{target.id}' is also used for {self._what(var.ty)}")
        idx = Local(self.types[index_name.id], loc_of(index_name), index_name.id) if kind == "enumerate" else None
        return [ForEach(loc_of(node), var, view, body, idx, counter)]

    def loop_callee(self, it: ast.Call) -> str:
        """"range" / "enumerate" for the calls a for loop can run over; anything else is
        refused with the for-loop message."""
        try:
            obj = self.resolve(it.func)
        except Exception:
            obj = None
        try:
            kind = KNOWN.get(obj, (None,))[0]
        except TypeError:
            kind = None
        if kind in ("range", "enumerate"):
            return kind
        raise self.err(it, f"for-loops cannot run over {ast.unparse(it.func)}(...) in vertex code",
                       "loop over range(...), enumerate(self.a), a vector field or a list field's rows")

    def iterable(self, node) -> Expr:
        e = self.expr(node) if not self._is_scalar_field(node) else None
        if e is None or not isinstance(e.ty, ViewT):
            raise self.err(node, f"for-loops in vertex code cannot run over '{ast.unparse(node)}'",
                           "loop over range(...), enumerate(self.a), a vector field (for x in self.a) or the rows "
                           "of a list field (for row in self.rows); or use for i in range(len(...)) and index")
        if e.ty.kind is not VK.ROWS:
            self.check_readable(e.ty.field, node)
        return e

    def _is_scalar_field(self, node) -> bool:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == self.self_name and node.attr in self.field_by_attr:
            spec = self.fields[self.field_by_attr[node.attr]]
            return spec.kind in (FieldKind.SCALAR_EDGE, FieldKind.STATE)
        return False

    def _counter(self) -> str:
        name = f"k{len(self.counters)}"
        self.counters.append(name)
        return name

    def _for_range(self, node):
        it = node.iter
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.err(it, "range() takes 1 to 3 integer arguments")
        if not isinstance(node.target, ast.Name):
            raise self.err(node.target, "the loop variable must be a name in vertex code")
        args = [self.ex(self.integer, a, "a range() argument") for a in it.args]
        ty = None
        if all(a is not None for a in args):
            ty = T.I32
            for a in args:
                ty = join(ty, a.ty)
            signed = any(a.ty.is_signed and not (isinstance(a, Const) and a.value >= 0) for a in args)
            if signed and ty is T.U32:
                ty = T.I64          # mixing int32 and uint32: iterate exactly, as Python does
            if len(args) == 3 and isinstance(args[2], Const) and args[2].value == 0:
                raise self.err(it.args[2], "range() step must not be zero")
        saved = None if self.defined is None else set(self.defined)
        self.bind(node.target.id, ty, node.target)
        counter = self._counter()
        proof = self._in_range_proof(node, args)
        self.proven.extend(proof)
        self.loops += 1
        body, _, _ = self.branch(node.body)
        self.loops -= 1
        del self.proven[len(self.proven) - len(proof):]
        self.defined = saved
        if not self.final:
            return []
        loc = loc_of(it)
        start, stop, step = (Const(ty, loc, 0), args[0], Const(ty, loc, 1)) if len(args) == 1 else \
            (args[0], args[1], args[2] if len(args) == 3 else Const(ty, loc, 1))
        var = Local(self.types[node.target.id], loc_of(node.target), node.target.id)
        if isinstance(var.ty, ViewT):
            raise self.err(node.target, f"loop variable '{var.name}' is also used for {self._what(var.ty)}")
        return [ForRange(loc_of(node), var, self.conv(start, ty), self.conv(stop, ty), self.conv(step, ty), body,
                         counter)]

    def _in_range_proof(self, node, args) -> list:
        """[(loop variable, view key)] when ``for i in range([0,] len(v)[, step >= 1])``
        keeps i within v's bounds: v is a field or a local view the body does not
        reassign, and neither is i (len() of a field never exceeds its size)."""
        if any(a is None for a in args) or args[0].ty is not T.I32:
            return []
        stop = args[0] if len(args) == 1 else args[1]
        if len(args) >= 2 and not (isinstance(args[0], Const) and args[0].value >= 0):
            return []
        if len(args) == 3 and not (isinstance(args[2], Const) and args[2].value >= 1):
            return []
        if not isinstance(stop, Len) or any(a.ty is not T.I32 for a in args):
            return []
        key = self.view_key(stop.view)
        assigned = {n.id for n in ast.walk(ast.Module(body=node.body, type_ignores=[]))
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        var = node.target.id
        if key is None or var in assigned or (key[0] == "local" and key[1] in assigned) \
                or (key[0] == "row" and key[2] in assigned):
            return []
        if self.types.get(var) is not T.I32:
            return []
        return [(var, key)]

    def s_Break(self, node):
        if not self.loops:
            raise self.err(node, "'break' outside a loop")
        return [Break(loc_of(node))], True

    def s_Continue(self, node):
        if not self.loops:
            raise self.err(node, "'continue' outside a loop")
        return [Continue(loc_of(node))], True

    def s_Return(self, node):
        v = node.value
        if v is None or (isinstance(v, ast.Constant) and v.value is None):
            return [Return(loc_of(node), None)], True
        e = self.ex(lambda: self.truth(self.expr(v), v))
        return [Return(loc_of(node), e)], True


def check_function(src, node, func, cls, vertex_name, fields, attrs, multi) -> Function:
    """The typed IR of ``compute`` (raises CodeletSyntaxError)."""
    return Checker(src, node, func, cls, vertex_name, fields, attrs, multi).check()
