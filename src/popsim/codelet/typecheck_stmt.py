"""Typing rules for statements in a vertex's ``compute``: blocks, assignments, control
flow and loops, with the definite-assignment rule (a local is read only after an
assignment on every path). Expressions are typecheck_expr.py's.
"""
from __future__ import annotations

import ast
from typing import List, Optional, Tuple, cast

from ..errors import CodeletSyntaxError
from .fields import Direction, FieldKind
from .typecheck_calls import KNOWN
from .typecheck_expr import _BINOPS, loc_of
from .typecheck_state import Rules
from .typed_ir import (STORAGE, VK, Assign, Break, Breakpoint, Const, Continue, Expr, FieldRef, ForEach, ForRange,
                       If, Len, Local, Return, Stmt, Store, T, ViewT, While, join)

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


class Statements(Rules):
    """Statements -> typed IR."""

    def block(self, stmts) -> Tuple[List[Stmt], bool]:
        """Statements -> IR, and whether the block always ends in break / continue /
        return (code after that is still checked, and kept)."""
        out: List[Stmt] = []
        done = False
        for s in stmts:
            method = getattr(self, "s_" + type(s).__name__, None)
            if method is None:
                msg, fix = _STATEMENTS.get(type(s).__name__, (None, None))
                raise self.c.err(s, msg or f"'{type(s).__name__}' statements are not supported in vertex codelets", fix)
            result = method(s)
            if isinstance(result, tuple):
                out.extend(result[0])
                done = done or result[1]
            else:
                out.extend(result)
        return out, done

    def branch(self, stmts):
        """A nested block for definite assignment: returns (ir, terminated, defined after)."""
        saved = None if self.c.defined is None else set(self.c.defined)
        ir, done = self.block(stmts)
        after = self.c.defined
        self.c.defined = saved
        return ir, done, after

    def s_Assign(self, node):
        targets = node.targets
        if len(targets) == 1 and isinstance(targets[0], (ast.Tuple, ast.List)):
            return self._unpack(targets[0], node.value, node)
        value = self.c.ex(self.exprs.expr, node.value)
        out: List[Stmt] = []
        if len(targets) > 1 and value is not None and not isinstance(value, (Const, Local)):
            temp = self.c.new_temp(value.ty, value.loc)
            out.append(Assign(loc_of(node), temp, value))
            value = temp
        for t in targets:
            out.extend(self.assign_to(t, value, node))
        return out

    def _unpack(self, target, value_node, node):
        if not isinstance(value_node, (ast.Tuple, ast.List)) or len(value_node.elts) != len(target.elts):
            raise self.c.err(node, "unpacking is only supported from a tuple of the same length (a, b = b, a)")
        out: List[Stmt] = []
        temps = []
        for v in value_node.elts:
            e = self.c.ex(self.exprs.expr, v)
            if e is not None and not isinstance(e, Const):
                temp = self.c.new_temp(e.ty, e.loc)
                out.append(Assign(loc_of(node), temp, e))
                e = temp
            temps.append(e)
        for t, e in zip(target.elts, temps):
            out.extend(self.assign_to(t, e, node))
        return out

    def assign_to(self, target, value: Optional[Expr], node) -> List[Stmt]:
        loc = loc_of(node)
        if isinstance(target, ast.Name):
            self.c.bind(target.id, value.ty if value is not None else None, target)
            if value is None or not self.c.final:
                return []
            ty = self.c.types[target.id]
            return [Assign(loc, Local(ty, loc_of(target), target.id), self.exprs.conv(value, ty, target))]
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                and target.value.id == self.c.self_name:
            i = self.exprs.field_index(target)
            spec = self.c.fields[i]
            self.check_writable(i, target)
            if spec.kind is not FieldKind.SCALAR_EDGE:
                raise self.c.err(target, f"field '{spec.name}' is a {spec.kind.value}: assign its elements",
                                 f"self.{target.attr}[i] = value")
            if value is None:
                return []
            return [Store(loc, None, None, self.exprs.conv(value, STORAGE[spec.dtype].value, target), None, i)]
        if isinstance(target, ast.Subscript):
            view = self.c.ex(self.exprs.subject, target.value)
            idx = self.c.ex(self.exprs.index_of, target)
            if view is None or idx is None or value is None:
                return []
            return [self.store(view, idx, value, target)]
        if isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
            raise self.c.err(target, "nested unpacking is not supported in vertex code", "assign one value at a time")
        raise self.c.err(target, f"cannot assign to '{ast.unparse(target)}' in vertex code")

    def store(self, view: Expr, idx: Expr, value: Expr, target) -> Store:
        vt = cast(ViewT, view.ty)  # (subject: a view)
        if vt.kind is VK.ROWS:
            name = self.c.fields[vt.field].name
            raise self.c.err(target, f"list field '{name}' holds rows: assign their elements",
                             f"self.{self.c.attrs[vt.field]}[i][j] = value")
        self.check_writable(vt.field, target)
        ty = STORAGE[self.c.fields[vt.field].dtype].value
        return Store(loc_of(target), view, idx, self.exprs.conv(value, ty, target),
                     self.exprs.checked_site(view, idx, target),
                     vt.field)

    def check_writable(self, field: int, node):
        spec = self.c.fields[field]
        if spec.direction is Direction.INPUT:
            raise self.c.err(node, f"field '{spec.name}' is an Input and cannot be written",
                             "declare it InOut[...] (read and written) or Output[...] (written only)")
        if spec.direction is Direction.NONE:
            raise self.c.err(node, f"state field '{spec.name}' is read-only in vertex code",
                             "keep changing values in an InOut field")

    def s_AugAssign(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.exprs.unsupported(node.op)
        target = node.target
        loc = loc_of(node)
        if isinstance(target, ast.Name):
            cur = self.c.ex(self.exprs.expr, target)
            rhs = self.c.ex(self.exprs.numeric, node.value)
            if cur is None or rhs is None:
                return []
            return self.assign_to(target, self.exprs.binary(op, self.exprs.conv(cur, cur.ty, target), rhs, node), node)
        if isinstance(target, ast.Attribute):
            cur = self.c.ex(self.exprs.expr, target)
            rhs = self.c.ex(self.exprs.numeric, node.value)
            if cur is None or rhs is None:
                return []
            return self.assign_to(target, self.exprs.binary(op, cur, rhs, node), node)
        if isinstance(target, ast.Subscript):
            out: List[Stmt] = []
            view = self.c.ex(self.exprs.subject, target.value)
            idx = self.c.ex(self.exprs.index_of, target)
            if view is None or idx is None:
                self.c.ex(self.exprs.numeric, node.value)
                return []
            if not isinstance(view, (FieldRef, Local)):
                temp = self.c.new_temp(view.ty, view.loc)
                out.append(Assign(loc, temp, view))
                view = temp
            if not isinstance(idx, (Const, Local)):
                temp = self.c.new_temp(idx.ty, idx.loc)
                out.append(Assign(loc, temp, idx))
                idx = temp
            if view.ty.kind is VK.ROWS:
                self.store(view, idx, idx, target)  # raises the "holds rows" error
            old = self.exprs.element(view, idx, target)
            rhs = self.c.ex(self.exprs.numeric, node.value)
            if rhs is None:
                return out
            out.append(self.store(view, idx, self.exprs.binary(op, old, rhs, node), target))
            return out
        raise self.c.err(target, f"cannot assign to '{ast.unparse(target)}' in vertex code")

    def s_AnnAssign(self, node):
        if not isinstance(node.target, ast.Name):
            raise self.c.err(node, "only locals can be annotated inside compute",
                             "declare fields as class annotations")
        if node.value is None:
            return []
        return self.assign_to(node.target, self.c.ex(self.exprs.expr, node.value), node)

    def s_Pass(self, node):
        return []

    def s_Expr(self, node):
        v = node.value
        if isinstance(v, ast.Constant):
            return []            # a docstring or ...
        if isinstance(v, ast.Call):
            kind, _ = self.calls.callee(v)
            if kind == "print":
                return [self.calls.print_stmt(v)]
            if kind == "breakpoint":
                if v.args or v.keywords:
                    raise self.c.err(v, "breakpoint() takes no arguments in vertex code")
                return [Breakpoint(loc_of(node))]
        raise self.c.err(node, "this expression's value is not used", "assign it to a local or a field")

    def s_If(self, node):
        test = self.c.ex(lambda: self.exprs.truth(self.exprs.expr(node.test), node.test))
        if isinstance(test, Const):
            # a constant condition (a template parameter): only the branch it takes is
            # checked and compiled, so one template can declare a field for some of its
            # instances and use it under the same condition
            taken, done, defined = self.branch(node.body if test.value else node.orelse)
            if self.c.defined is not None:
                self.c.defined = defined
            return taken, done
        body, done1, d1 = self.branch(node.body)
        orelse, done2, d2 = self.branch(node.orelse)
        if self.c.defined is not None:
            if done1 and done2:
                self.c.defined = d1 | d2
            elif done1:
                self.c.defined = d2
            elif done2:
                self.c.defined = d1
            else:
                self.c.defined = d1 & d2
        return [If(loc_of(node), test, body, orelse)], done1 and done2

    def s_While(self, node):
        if node.orelse:
            raise self.c.err(node.orelse[0], "'else' on loops is not supported in vertex codelets",
                             "set a flag before 'break' and test it after the loop")
        test = self.c.ex(lambda: self.exprs.truth(self.exprs.expr(node.test), node.test))
        self.c.loops += 1
        body, _, _ = self.branch(node.body)
        self.c.loops -= 1
        return [While(loc_of(node), test, body)]

    def s_For(self, node):
        if node.orelse:
            raise self.c.err(node.orelse[0], "'else' on loops is not supported in vertex codelets",
                             "set a flag before 'break' and test it after the loop")
        it = node.iter
        kind = None
        if isinstance(it, ast.Call) and isinstance(it.func, (ast.Name, ast.Attribute)) \
                and not self.exprs.refers_to_data(it.func):
            kind = self.loop_callee(it)
        if kind == "range":
            return self._for_range(node)
        saved = None if self.c.defined is None else set(self.c.defined)
        if kind == "enumerate":
            if len(it.args) != 1 or it.keywords:
                raise self.c.err(it, "enumerate() takes one vector or list field in vertex code")
            t = node.target
            if not (isinstance(t, ast.Tuple) and len(t.elts) == 2 and all(isinstance(e, ast.Name) for e in t.elts)):
                raise self.c.err(t, "write: for i, x in enumerate(...)")
            index_name, target = t.elts
            self.c.bind(index_name.id, T.I32, index_name)
            iter_node = it.args[0]
        else:
            target, iter_node = node.target, it
        view = self.c.ex(self.iterable, iter_node)
        if not isinstance(target, ast.Name):
            raise self.c.err(target, "the loop variable must be a name in vertex code", "write: for x in ...")
        elem = None
        if view is not None:
            elem = ViewT(view.ty.field, VK.ROW) if view.ty.kind is VK.ROWS else STORAGE[
                self.c.fields[view.ty.field].dtype].value
        self.c.bind(target.id, elem, target)
        counter = self.c.new_counter()
        self.c.loops += 1
        body, _, _ = self.branch(node.body)
        self.c.loops -= 1
        self.c.defined = saved
        if not self.c.final or view is None:
            return []
        var = Local(self.c.types[target.id], loc_of(target), target.id)
        if isinstance(var.ty, ViewT) != isinstance(elem, ViewT):
            raise self.c.err(target, f"loop variable '{target.id}' is also used for {self.c.what(var.ty)}")
        idx = Local(self.c.types[index_name.id], loc_of(index_name), index_name.id) if kind == "enumerate" else None
        return [ForEach(loc_of(node), var, view, body, idx, counter)]

    def loop_callee(self, it: ast.Call) -> str:
        """"range" / "enumerate" for the calls a for loop can run over; anything else is
        refused with the for-loop message."""
        try:
            obj = self.exprs.resolve(it.func)
        except CodeletSyntaxError:  # not a name vertex code knows: the for-loop message says what is
            obj = None
        try:
            kind = KNOWN.get(obj, (None,))[0]
        except TypeError:
            kind = None
        if kind in ("range", "enumerate"):
            return kind
        raise self.c.err(it, f"for-loops cannot run over {ast.unparse(it.func)}(...) in vertex code",
                         "loop over range(...), enumerate(self.a), a vector field or a list field's rows")

    def iterable(self, node) -> Expr:
        e = self.exprs.expr(node) if not self._is_scalar_field(node) else None
        if e is None or not isinstance(e.ty, ViewT):
            raise self.c.err(node, f"for-loops in vertex code cannot run over '{ast.unparse(node)}'",
                             "loop over range(...), enumerate(self.a), a vector field (for x in self.a) or the rows "
                             "of a list field (for row in self.rows); or use for i in range(len(...)) and index")
        if e.ty.kind is not VK.ROWS:
            self.exprs.check_readable(e.ty.field, node)
        return e

    def _is_scalar_field(self, node) -> bool:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == self.c.self_name and node.attr in self.c.field_by_attr:
            spec = self.c.fields[self.c.field_by_attr[node.attr]]
            return spec.kind in (FieldKind.SCALAR_EDGE, FieldKind.STATE)
        return False

    def _for_range(self, node):
        it = node.iter
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.c.err(it, "range() takes 1 to 3 integer arguments")
        if not isinstance(node.target, ast.Name):
            raise self.c.err(node.target, "the loop variable must be a name in vertex code")
        args = [self.c.ex(self.exprs.integer, a, "a range() argument") for a in it.args]
        ty = None
        if all(a is not None for a in args):
            ty = T.I32
            for a in args:
                ty = join(ty, a.ty)
            signed = any(a.ty.is_signed and not (isinstance(a, Const) and a.value >= 0) for a in args)
            if signed and ty is T.U32:
                ty = T.I64          # mixing int32 and uint32: iterate exactly, as Python does
            if len(args) == 3 and isinstance(args[2], Const) and args[2].value == 0:
                raise self.c.err(it.args[2], "range() step must not be zero")
        saved = None if self.c.defined is None else set(self.c.defined)
        self.c.bind(node.target.id, ty, node.target)
        counter = self.c.new_counter()
        proof = self._in_range_proof(node, args)
        self.c.proven.extend(proof)
        self.c.loops += 1
        body, _, _ = self.branch(node.body)
        self.c.loops -= 1
        del self.c.proven[len(self.c.proven) - len(proof):]
        self.c.defined = saved
        if not self.c.final:
            return []
        loc = loc_of(it)
        start, stop, step = (Const(ty, loc, 0), args[0], Const(ty, loc, 1)) if len(args) == 1 else \
            (args[0], args[1], args[2] if len(args) == 3 else Const(ty, loc, 1))
        var = Local(self.c.types[node.target.id], loc_of(node.target), node.target.id)
        if isinstance(var.ty, ViewT):
            raise self.c.err(node.target, f"loop variable '{var.name}' is also used for {self.c.what(var.ty)}")
        conv = self.exprs.conv
        return [ForRange(loc_of(node), var, conv(start, ty), conv(stop, ty), conv(step, ty), body,
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
        key = self.exprs.view_key(stop.view)
        assigned = {n.id for n in ast.walk(ast.Module(body=node.body, type_ignores=[]))
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        var = node.target.id
        if key is None or var in assigned or (key[0] == "local" and key[1] in assigned) \
                or (key[0] == "row" and key[2] in assigned):
            return []
        if self.c.types.get(var) is not T.I32:
            return []
        return [(var, key)]

    def s_Break(self, node):
        if not self.c.loops:
            raise self.c.err(node, "'break' outside a loop")
        return [Break(loc_of(node))], True

    def s_Continue(self, node):
        if not self.c.loops:
            raise self.c.err(node, "'continue' outside a loop")
        return [Continue(loc_of(node))], True

    def s_Return(self, node):
        v = node.value
        if v is None or (isinstance(v, ast.Constant) and v.value is None):
            return [Return(loc_of(node), None)], True
        e = self.c.ex(lambda: self.exprs.truth(self.exprs.expr(v), v))
        return [Return(loc_of(node), e)], True
