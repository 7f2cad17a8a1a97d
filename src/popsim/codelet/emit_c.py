"""Typed IR -> C: one function per vertex type plus the four ABI functions of
include/popsim_codelet.h (called as abi.py specifies). The vertex's state object is simply its popsim_field array:
init does nothing and bind copies the array.

Index errors (checked builds) are recorded in a local ``E`` (the first in Python's
evaluation order wins, whatever order C evaluates operands in) and tested after each
statement that can record one; compute then returns -1 with ctx filled in.

Loops poll the run's interrupt flag (popsim_exec.interrupt, set by Ctrl-C), so a vertex
stuck in a loop returns -1 with POPSIM_INTERRUPTED and the run stops with
KeyboardInterrupt: a while loop on every iteration; a for loop, whose trip count is known
when it starts, once per chunk of POLL_EVERY iterations (an outer loop over chunks
around the plain loop), which keeps hot counted loops as fast as without the poll.

A for loop with a fast body (loop_versioning.py) runs it when its guards hold, else its
checked body; a fast body's hoisted cycles are added once per chunk, after the poll.
"""
from __future__ import annotations

from typing import List

from .typed_ir import (STORAGE, VK, Assign, Binary, BoolOp, Break, Breakpoint, Cast, Compare, Const, Continue, Expr,
                       FieldRef, ForEach, ForRange, Function, Guard, If, IfExp, Intrinsic, Len, Let, Load, Local,
                       LoopIndex, Not, NumWorkers, Print, Return, RowAt, ScalarField, Store, T, Tick, TickStmt, Unary,
                       ViewT, While, has_sites, stmt_exprs, walk_exprs, walk_stmts)

_SFX = {T.BOOL: "b", T.I32: "i32", T.U32: "u32", T.I64: "i64", T.U64: "u64", T.F32: "f32"}
_OPS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "and": "&", "or": "|", "xor": "^"}
_CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_UNSIGNED = {T.I32: "uint32_t", T.I64: "uint64_t"}
_MAX = {T.I32: "INT32_MAX", T.U32: "UINT32_MAX", T.I64: "INT64_MAX", T.U64: "UINT64_MAX"}
CHECK = "if (E.seq != POPSIM_PY_NO_ERROR) goto popsim_fail;"
POLL = "if (*stop) goto popsim_interrupted;"
POLL_EVERY = 1 << 14  # for-loop iterations between polls


def ctype(ty) -> str:
    return "popsim_span" if isinstance(ty, ViewT) else ty.ctype


def local_name(name: str) -> str:
    return "v_" + name if name.isascii() else "v_u" + name.encode().hex()


def c_string(text: str) -> str:
    out = []
    for b in text.encode("utf-8", "surrogatepass"):
        c = chr(b)
        if 32 <= b < 127 and c not in '\\"?':
            out.append(c)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def c_const(value, ty: T) -> str:
    if ty is T.BOOL:
        return "true" if value else "false"
    if ty is T.F32:
        v = float(value)
        if v != v:
            return "NAN"
        if v in (float("inf"), float("-inf")):
            return "INFINITY" if v > 0 else "(-INFINITY)"
        return f"({v.hex()}f)"
    v = int(value)
    if ty is T.I32:
        return "INT32_MIN" if v == -2 ** 31 else f"((int32_t){v})"
    if ty is T.I64:
        return "INT64_MIN" if v == -2 ** 63 else f"INT64_C({v})"
    return f"UINT32_C({v})" if ty is T.U32 else f"UINT64_C({v})"


def convert(code: str, src, dst) -> str:
    """C for converting ``code`` of type src to dst (popsim's conversion rules)."""
    if src == dst:
        return code
    if dst is T.BOOL:
        return f"(({code}) != 0)"
    if src is T.F32:
        return f"popsim_py_f2{_SFX[dst]}({code})"
    return f"(({dst.ctype})({code}))"


class CEmitter:
    def __init__(self, fn: Function, prefix: str):
        self.fn = fn
        self.prefix = prefix
        self.lines: List[str] = []
        self.extra: List[str] = []      # print temporaries
        self.uses_fail = False
        self.has_loops = False
        self.exits: List[List[str]] = []  # per enclosing loop: [] for C's break, or [label, used]
        self.labels = 0                   # chunked loops emitted (their exit labels are numbered)
        self.rows = {}                    # C of a row read hoisted out of a loop -> its local

    def sfx(self, field: int) -> str:
        return STORAGE[self.fn.fields[field].dtype].suffix

    # -- expressions -----------------------------------------------------------------------------
    def site_args(self, site) -> str:
        return f"&E, {site.field}, {site.line}, {site.seq}"

    def access(self, helper: str, e) -> str:
        """popsim_py_<helper> with a site to report an index error at; popsim_py_u<helper>
        where the index is proven in range (no site)."""
        args = f"{self.expr(e.view)}, (int64_t)({self.expr(e.index)})"
        if e.site is None:
            return f"popsim_py_u{helper}({args})"
        self.uses_fail = True
        return f"popsim_py_{helper}({args}, {self.site_args(e.site)})"

    def expr(self, e: Expr) -> str:
        if isinstance(e, Const):
            return c_const(e.value, e.ty)
        if isinstance(e, Local):
            return e.name if e.temp else local_name(e.name)
        if isinstance(e, NumWorkers):
            return "((int32_t)ctx->num_workers)"
        if isinstance(e, FieldRef):
            return f"s{e.field}"
        if isinstance(e, ScalarField):
            return f"popsim_py_get_{self.sfx(e.field)}(s{e.field})"
        if isinstance(e, Load):
            kind = "lds" if e.view.ty.kind is VK.SCALARS else "ld"
            return self.access(f"{kind}_{self.sfx(e.view.ty.field)}", e)
        if isinstance(e, RowAt):
            code = self.access("row", e)
            return self.rows.get(code, code)
        if isinstance(e, Len):
            return f"((int32_t)({self.expr(e.view)}).size)"
        if isinstance(e, Unary):
            op = "-" if e.op == "neg" else "~"
            return f"(({e.ty.ctype})({op}({self.expr(e.operand)})))"
        if isinstance(e, Not):
            return f"(!({self.expr(e.operand)}))"
        if isinstance(e, Binary):
            return self.binary(e)
        if isinstance(e, Compare):
            return f"(({self.expr(e.left)}) {_CMP[e.op]} ({self.expr(e.right)}))"
        if isinstance(e, BoolOp):
            op = "&&" if e.op == "and" else "||"
            return f"(({self.expr(e.left)}) {op} ({self.expr(e.right)}))"
        if isinstance(e, IfExp):
            return f"(({self.expr(e.test)}) ? ({self.expr(e.body)}) : ({self.expr(e.orelse)}))"
        if isinstance(e, Cast):
            return convert(self.expr(e.operand), e.operand.ty, e.ty)
        if isinstance(e, Intrinsic):
            return self.intrinsic(e)
        if isinstance(e, Let):
            return f"({self.expr(e.target)} = ({self.expr(e.value)}))"
        if isinstance(e, Tick):
            return f"(cyc += {e.cycles}u, ({self.expr(e.value)}))"
        if isinstance(e, LoopIndex):
            j = f"j_{e.counter}" if e.base is None else f"(j_{e.counter} + (int64_t){self.expr(e.base)})"
            return f"({j} + INT64_C({e.offset}))" if e.offset else j
        raise TypeError(f"cannot emit {type(e).__name__}")  # pragma: no cover

    def binary(self, e: Binary) -> str:
        a, b, ty = self.expr(e.left), self.expr(e.right), e.ty
        if e.op in ("floordiv", "mod"):
            return f"popsim_py_{e.op}_{_SFX[ty]}({a}, {b})"
        if e.op == "pow":
            return f"popsim_py_pow({a}, {b})" if ty is T.F32 else f"popsim_py_pow_{_SFX[ty]}({a}, {b})"
        if e.op in ("lshift", "rshift"):
            return f"popsim_py_sh{'l' if e.op == 'lshift' else 'r'}_{_SFX[ty]}({a}, {b})"
        if ty is T.F32:
            return f"popsim_py_f{e.op}({a}, {b})"
        return f"(({ty.ctype})(({a}) {_OPS[e.op]} ({b})))"

    def intrinsic(self, e: Intrinsic) -> str:
        args = ", ".join(self.expr(a) for a in e.args)
        name = e.name
        if name in ("min", "max"):
            return f"popsim_py_{name}_{_SFX[e.ty]}({args})"
        if name == "iabs":
            return f"popsim_py_abs_{_SFX[e.ty]}({args})"
        if name == "fabs":
            return f"popsim_py_fabs({args})"
        if name in ("rint", "floor", "ceil", "trunc"):
            return f"{name}f({args})"
        if name in ("isnan", "isinf", "isfinite"):
            return f"({name}({args}) != 0)"
        return f"popsim_py_{name}({args})"

    # -- statements ------------------------------------------------------------------------------
    def emit(self, text: str, depth: int):
        self.lines.append("  " * depth + text)

    def check(self, s, depth: int):
        if has_sites(s):
            self.uses_fail = True
            self.emit(CHECK, depth)

    def block(self, stmts, depth: int):
        for s in stmts:
            self.stmt(s, depth)

    def stmt(self, s, depth: int):
        emit = self.emit
        if isinstance(s, TickStmt):
            emit(f"cyc += {s.cycles}u;", depth)
        elif isinstance(s, Assign):
            emit(f"{self.expr(s.target)} = {self.expr(s.value)};", depth)
            self.check(s, depth)
        elif isinstance(s, Store):
            self.store(s, depth)
        elif isinstance(s, If):
            self.test_into_cnd(s, s.test, depth)
            emit(f"if ({'cnd' if has_sites(s.test) else self.expr(s.test)}) {{", depth)
            self.block(s.body, depth + 1)
            if s.orelse:
                emit("} else {", depth)
                self.block(s.orelse, depth + 1)
            emit("}", depth)
        elif isinstance(s, While):
            emit("for (;;) {", depth)
            self.poll(depth + 1)
            if s.tick:
                emit(f"cyc += {s.tick}u;", depth + 1)
            if not (isinstance(s.test, Const) and s.test.value):
                self.test_into_cnd(s, s.test, depth + 1)
                emit(f"if (!({'cnd' if has_sites(s.test) else self.expr(s.test)})) break;", depth + 1)
            self.exits.append([])
            self.block(s.body, depth + 1)
            self.exits.pop()
            emit("}", depth)
        elif isinstance(s, ForRange):
            self.for_range(s, depth)
        elif isinstance(s, ForEach):
            self.for_each(s, depth)
        elif isinstance(s, Break):
            exit_ = self.exits[-1]
            if exit_:  # the plain loop of a chunked for loop: leave the chunk loop too
                exit_[1] = "used"
                emit(f"goto {exit_[0]};", depth)
            else:
                emit("break;", depth)
        elif isinstance(s, Continue):
            emit("continue;", depth)
        elif isinstance(s, Return):
            if s.value is None or isinstance(s.value, Const):
                ok = 1 if s.value is None or s.value.value else 0
                emit(f"ctx->cycles += cyc; return {ok};", depth)
            else:
                emit(f"cnd = {self.expr(s.value)};", depth)
                self.check(s, depth)
                emit("ctx->cycles += cyc; return cnd ? 1 : 0;", depth)
        elif isinstance(s, Print):
            self.print_stmt(s, depth)
        elif isinstance(s, Breakpoint):
            emit("/* breakpoint(): stops only in interpreted mode */", depth)
        else:  # pragma: no cover
            raise TypeError(f"cannot emit {type(s).__name__}")

    def poll(self, depth: int):
        """At the top of a loop body: stop if the run was interrupted."""
        self.has_loops = True
        self.emit(POLL, depth)

    def counted_loop(self, k: str, count: str, depth: int, body, hoisted: int = 0) -> None:
        """``for (k = 0; k < count; k++) body``, polling the interrupt flag once per chunk
        of POLL_EVERY iterations. ``body(depth)`` emits the loop body; its break leaves
        both loops (through a label x_k_N), its continue goes to the next k. ``hoisted``
        cycles per iteration are counted per chunk."""
        emit = self.emit
        emit(f"for (uint64_t {k} = 0; {k} < {count};) {{", depth)
        self.poll(depth + 1)
        emit(f"const uint64_t e_{k} = {count} - {k} > {POLL_EVERY}u ? {k} + {POLL_EVERY}u : {count};", depth + 1)
        if hoisted:
            emit(f"cyc += {hoisted}u * (e_{k} - {k});", depth + 1)
        emit(f"for (; {k} < e_{k}; {k}++) {{", depth + 1)
        self.labels += 1
        exit_ = [f"x_{k}_{self.labels}", ""]
        self.exits.append(exit_)
        body(depth + 2)
        self.exits.pop()
        emit("}", depth + 1)
        emit("}", depth)
        if exit_[1]:
            emit(f"{exit_[0]}:;", depth)

    def test_into_cnd(self, s, test, depth):
        if has_sites(test):
            self.emit(f"cnd = {self.expr(test)};", depth)
            self.uses_fail = True
            self.emit(CHECK, depth)

    def store(self, s: Store, depth: int):
        sfx = self.sfx(s.field)
        if s.index is None:
            value = self.expr(s.value)
            if has_sites(s):
                temp = self.temp(s.value.ty)
                self.emit(f"{temp} = {value};", depth)
                self.check(s, depth)
                value = temp
            self.emit(f"popsim_py_put_{sfx}(s{s.field}, {value});", depth)
            return
        kind = "sts" if s.view.ty.kind is VK.SCALARS else "st"
        if s.site is None:
            value = self.expr(s.value)
            if has_sites(s):
                temp = self.temp(s.value.ty)
                self.emit(f"{temp} = {value};", depth)
                self.check(s, depth)
                value = temp
            self.emit(f"popsim_py_u{kind}_{sfx}({self.expr(s.view)}, (int64_t)({self.expr(s.index)}), {value});",
                      depth)
            return
        self.uses_fail = True
        self.emit(f"if (!popsim_py_{kind}_{sfx}({self.expr(s.view)}, (int64_t)({self.expr(s.index)}), "
                  f"{self.expr(s.value)}, {self.site_args(s.site)})) goto popsim_fail;", depth)

    def temp(self, ty) -> str:
        name = f"p{len(self.extra)}"
        self.extra.append(f"{ctype(ty)} {name};")
        return name

    def for_range(self, s: ForRange, depth: int):
        k = s.counter
        rt = s.start.ty
        emit = self.emit
        emit("{", depth)
        emit(f"{rt.ctype} a_{k} = {self.expr(s.start)}, b_{k} = {self.expr(s.stop)}, "
             f"d_{k} = {self.expr(s.step)};", depth + 1)
        self.check(s, depth + 1)
        if rt.is_signed:
            emit(f"uint64_t n_{k} = popsim_py_count_i64((int64_t)a_{k}, (int64_t)b_{k}, (int64_t)d_{k});", depth + 1)
            wide = f"((uint64_t)(int64_t)a_{k} + {k} * (uint64_t)(int64_t)d_{k})"
        else:
            emit(f"uint64_t n_{k} = popsim_py_count_u64((uint64_t)a_{k}, (uint64_t)b_{k}, (uint64_t)d_{k});",
                 depth + 1)
            wide = f"((uint64_t)a_{k} + {k} * (uint64_t)d_{k})"
        value = f"(({rt.ctype}){wide})"
        saved = dict(self.rows)
        if s.fast is not None:
            self.hoist_rows(s.fast, k, depth + 1)

        def loop(body, hoisted, d):
            def emit_body(d2):
                emit(f"{self.expr(s.var)} = {convert(value, rt, s.var.ty)};", d2)
                if body is not s.body and _uses_loop_index(body, k):
                    emit(f"const int64_t j_{k} = (int64_t){wide};", d2)
                self.block(body, d2)
            self.counted_loop(k, f"n_{k}", d, emit_body, hoisted)

        if s.fast is None:
            loop(s.body, 0, depth + 1)
        elif not s.guards:
            loop(s.fast, s.hoisted, depth + 1)
        else:
            emit(f"if ({self.guard_test(s)}) {{", depth + 1)
            loop(s.fast, s.hoisted, depth + 2)
            emit("} else {", depth + 1)
            loop(s.body, 0, depth + 2)
            emit("}", depth + 1)
        emit("}", depth)
        self.rows = saved

    def hoist_rows(self, fast, k: str, depth: int) -> None:
        """Read once, before the loop, the rows its fast body takes at an enclosing loop's
        index (``self.data[r][i]`` in a loop over i). A row descriptor never changes while a
        vertex runs, but C reloads it after every store (stores may alias it under
        -fno-strict-aliasing), which keeps the loop from vectorising. Such an index is in
        range for the whole of the enclosing loop's iteration (its guards proved it)."""
        inner = {k} | {x.counter for x in walk_stmts(fast) if isinstance(x, (ForRange, ForEach))}
        for x in (x for st in walk_stmts(fast) for e in stmt_exprs(st) for x in walk_exprs(e)):
            if (isinstance(x, RowAt) and x.site is None and isinstance(x.view, FieldRef)
                    and isinstance(x.index, LoopIndex) and x.index.counter not in inner):
                code = self.access("row", x)
                if code not in self.rows:
                    name = f"h_{k}_{len(self.rows)}"
                    self.emit(f"const popsim_span {name} = {code};", depth)
                    self.rows[code] = name

    def guard_test(self, s: ForRange) -> str:
        """C that is true when every guard of ``s`` holds for the whole range."""
        k, rt = s.counter, s.start.ty
        if rt.is_signed:
            ends = [f"(int64_t)a_{k}",
                    f"(int64_t)({rt.ctype})((uint64_t)(int64_t)a_{k} + (n_{k} - 1u) * (uint64_t)(int64_t)d_{k})"]
            fits = "popsim_py_fits_i"
        else:
            ends = [f"(uint64_t)a_{k}", f"(uint64_t)({rt.ctype})((uint64_t)a_{k} + (n_{k} - 1u) * (uint64_t)d_{k})"]
            fits = "popsim_py_fits_u"
        lo, hi = f"(d_{k} > 0 ? {ends[0]} : {ends[1]})", f"(d_{k} > 0 ? {ends[1]} : {ends[0]})"
        tests = []
        for g in s.guards:
            # with a base b: the loop's values shifted by b (both below 2**32 in magnitude,
            # so the 64-bit sums are exact), checked as the loop's own
            cast = "int64_t" if rt.is_signed else "uint64_t"
            shift = "" if g.base is None else f" + ({cast}){self.expr(g.base)}"
            tests.append(f"{fits}({lo}{shift}, {hi}{shift}, INT64_C({g.low}), INT64_C({g.high}), {_MAX[rt]}, "
                         f"{self.guard_size(g)})")
        return " && ".join(tests)

    def guard_size(self, g: Guard) -> str:
        """The size of a guard's view, read without a check (0 for a row out of range)."""
        v = g.view
        if isinstance(v, RowAt):
            return f"popsim_py_row_size({self.expr(v.view)}, (int64_t)({self.expr(v.index)}))"
        return f"({self.expr(v)}).size"

    def for_each(self, s: ForEach, depth: int):
        k = s.counter
        emit = self.emit
        vt = s.view.ty
        emit("{", depth)
        emit(f"popsim_span w_{k} = {self.expr(s.view)};", depth + 1)
        self.check(s, depth + 1)
        def body(d):
            if vt.kind is VK.ROWS:
                emit(f"{self.expr(s.var)} = ((const popsim_span *)w_{k}.data)[{k}];", d)
            else:  # k < w.size: no check
                kind = "ulds" if vt.kind is VK.SCALARS else "uld"
                elem_ty = STORAGE[self.fn.fields[vt.field].dtype].value
                load = f"popsim_py_{kind}_{self.sfx(vt.field)}(w_{k}, (int64_t){k})"
                emit(f"{self.expr(s.var)} = {convert(load, elem_ty, s.var.ty)};", d)
            if s.index is not None:
                emit(f"{self.expr(s.index)} = {convert(f'((int32_t){k})', T.I32, s.index.ty)};", d)
            self.block(s.body if s.fast is None else s.fast, d)
        self.counted_loop(k, f"w_{k}.size", depth + 1, body, s.hoisted if s.fast is not None else 0)
        emit("}", depth)

    def print_stmt(self, s: Print, depth: int):
        values = {}
        for arg in s.items:
            for item in arg:
                if item.value is not None:
                    if has_sites(item.value):
                        temp = self.temp(item.value.ty)
                        self.emit(f"{temp} = {self.expr(item.value)};", depth)
                        values[id(item)] = temp
                    else:
                        values[id(item)] = self.expr(item.value)
        self.check(s, depth)
        for j, arg in enumerate(s.items):
            if j and s.sep:
                self.emit(f"popsim_py_print_str({c_string(s.sep)}, {len(s.sep.encode())}u);", depth)
            for item in arg:
                if item.value is None:
                    if item.text:
                        n = len(item.text.encode("utf-8", "surrogatepass"))
                        self.emit(f"popsim_py_print_str({c_string(item.text)}, {n}u);", depth)
                    continue
                self.emit(self.print_value(values[id(item)], item.value.ty, item.spec) + ";", depth)
        self.emit(f"popsim_py_print_end({c_string(s.end)}, {len(s.end.encode('utf-8', 'surrogatepass'))}u);", depth)

    @staticmethod
    def print_value(code: str, ty: T, spec: str) -> str:
        if not spec:
            if ty is T.F32:
                return f"popsim_py_print_f32({code})"
            if ty is T.BOOL:
                return f"popsim_py_print_bool({code})"
            if ty is T.U64 or ty is T.U32:
                return f"popsim_py_print_u64((uint64_t)({code}))"
            return f"popsim_py_print_i64((int64_t)({code}))"
        conv = spec[-1]
        if conv == "d":
            unsigned = ty in (T.U32, T.U64)
            fmt = c_string("%" + spec[:-1]) + (' PRIu64' if unsigned else ' PRId64')
            return (f"popsim_py_print_fmt_{'u' if unsigned else 'i'}({fmt}, "
                    f"({'uint64_t' if unsigned else 'int64_t'})({code}))")
        fmt = c_string("%" + spec)
        if ty is T.F32:
            return f"popsim_py_print_fmt_f({fmt}, {code})"
        return f"popsim_py_print_fmt_d({fmt}, (double)({code}))"

    # -- the whole function ----------------------------------------------------------------------
    def function(self) -> str:
        fn = self.fn
        self.block(fn.body, 1)
        body = self.lines
        # No file path here: the library's cache key then survives moving the project.
        about = f"vertex type {fn.name!r}: {fn.qualname}, line {fn.line}".replace("*/", "* /")
        head = [f"/* {about} */",
                f"static int {self.prefix}_run(const popsim_field *F, uint32_t worker, popsim_exec *ctx) {{",
                "  uint64_t cyc = 0;",
                "  popsim_py_err E = {POPSIM_PY_NO_ERROR, -1, 0, 0, 0};",
                "  bool cnd = false;",
                "  (void)F; (void)worker; (void)E; (void)cnd;"]
        for i in range(len(fn.fields)):
            head.append(f"  popsim_span s{i} = F[{i}];")
        for name, ty in fn.locals.items():
            init = "{0, 0}" if isinstance(ty, ViewT) else "0"
            head.append(f"  {ctype(ty)} {local_name(name)} = {init};")
        for name, ty in fn.temps.items():
            init = "{0, 0}" if isinstance(ty, ViewT) else "0"
            head.append(f"  {ctype(ty)} {name} = {init};")
        head.extend("  " + x for x in self.extra)
        if self.has_loops:
            head.append("  const volatile int32_t *stop = "
                        "ctx->interrupt ? ctx->interrupt : &popsim_py_not_interrupted;")
        if fn.worker_name is not None:
            head.append(f"  {local_name(fn.worker_name)} = "
                        f"{convert('((int32_t)worker)', T.I32, fn.locals[fn.worker_name])};")
        tail = ["  ctx->cycles += cyc;", "  return 1;"]
        if self.has_loops:
            tail += ["popsim_interrupted:",
                     "  ctx->cycles += cyc;",
                     "  ctx->error = POPSIM_INTERRUPTED;",
                     "  return -1;"]
        if self.uses_fail:
            tail += ["popsim_fail:",
                     "  ctx->cycles += cyc;",
                     "  ctx->error = POPSIM_INDEX_ERROR;",
                     "  ctx->error_field = E.field;",
                     "  ctx->error_line = E.line;",
                     "  ctx->error_index = E.index;",
                     "  ctx->error_size = E.size;",
                     "  return -1;"]
        n = len(fn.fields)
        p = self.prefix
        abi = [
            "}",
            f"uint64_t {p}_size(void) {{ return {n}u * sizeof(popsim_field); }}",
            f"void {p}_init(void *obj) {{ (void)obj; }}",
            f"void {p}_bind(void *obj, const popsim_field *fields) {{",
            f"  if ({n}u) memcpy(obj, fields, {n}u * sizeof(popsim_field));",
            "}",
            f"int {p}_compute(void *obj, uint32_t worker, popsim_exec *ctx) {{",
            f"  return {p}_run((const popsim_field *)obj, worker, ctx);",
            "}",
        ]
        return "\n".join(head + body + tail + abi) + "\n"


def _uses_loop_index(stmts, counter: str) -> bool:
    """Whether a LoopIndex of loop ``counter`` occurs in ``stmts``."""
    return any(isinstance(x, LoopIndex) and x.counter == counter
               for s in walk_stmts(stmts) for e in stmt_exprs(s) for x in walk_exprs(e))


def emit_function(fn: Function, prefix: str) -> str:
    """The C text of one vertex type: its compute function and ABI entry points."""
    return CEmitter(fn, prefix).function()


LIBRARY_HEADER = """/* Generated by popsim from Python vertex classes: do not edit. */
#include "popsim_python_runtime.h"
"""
