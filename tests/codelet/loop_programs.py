"""Random vertex programs full of loops, and their differential run (compiled against
interpreted), for the tests of loop versioning (test_loop_versioning.py).

Programs have counted loops of every range form (range(len(v)), offsets, negative
steps, int32 / uint32 / int64 loop variables near the wrap-around points), loops over
fields and rows, while loops, nesting, break / continue / return under conditions,
loop variables assigned in their body, and indices in and out of range (the loop
variable plus or minus a constant, constants, other locals). The choices come from a
``Choices`` object, so the same generator serves hypothesis (DrawChoices: shrinkable)
and long seeded runs (RandomChoices).
"""
import importlib.util
import random
import sys

import numpy as np

import popsim
from popsim.codelet.abi import INDEX_ERROR, run_compiled
from popsim.codelet.interpret import run_interpreted

from vertex_harness import assert_same, clone

FIELDS = ("a: Input[Vector[float]]", "b: Input[Vector[int]]", "io: InOut[Vector[int]]", "out: Output[Vector[float]]",
          "rows: Input[VectorList[float]]", "ins: Vector[Input[float]]", "lo: int", "hi: int",
          "ulo: popsim.UNSIGNED_INT", "uhi: popsim.UNSIGNED_INT", "n: popsim.LONGLONG",
          "vo: Output[Vector[popsim.LONGLONG]]", "fo: Output[float]")
LOOP_VARS = ("i0", "i1", "i2", "u0", "u1", "l0", "l1")   # stored in vo at the end
# (lo, hi) and (ulo, uhi) pairs: short ranges, some at the wrap-around points, some empty
INT_RANGES = ((0, 5), (-3, 4), (2 ** 31 - 4, 2 ** 31 - 1), (-2 ** 31, -2 ** 31 + 3), (5, 0), (2, 9))
UINT_RANGES = ((0, 5), (2 ** 32 - 4, 2 ** 32 - 1), (3, 1), (1, 8))


class RandomChoices:
    def __init__(self, seed):
        self.r = random.Random(seed)

    def pick(self, options):
        return options[self.r.randrange(len(options))]

    def int(self, lo, hi):
        return self.r.randint(lo, hi)

    def chance(self, p):
        return self.r.random() < p


class DrawChoices:
    """Choices drawn from hypothesis (``data.draw``)."""

    def __init__(self, draw):
        from hypothesis import strategies as st
        self.draw, self.st = draw, st

    def pick(self, options):
        return self.draw(self.st.sampled_from(options))

    def int(self, lo, hi):
        return self.draw(self.st.integers(lo, hi))

    def chance(self, p):
        return self.draw(self.st.integers(0, 999)) < p * 1000


class _Gen:
    def __init__(self, ch):
        self.ch = ch
        self.stmts = 0

    def const(self):
        return self.ch.pick(("0", "1", "2", "3", "5"))

    def index(self, scope, size_of=None):
        """An index: mostly a loop variable plus or minus a constant."""
        ch = self.ch
        ints = [v for v, kind in scope if kind in ("i", "u", "l", "j")]
        k = ch.int(0, 9)
        if ints and k < 7:
            v = ch.pick(ints)
            form = ch.int(0, 8)
            if form <= 5:
                return v
            c = ch.pick(("1", "2", "3", "1", "2147483647"))
            return (f"{v} + {c}", f"{v} - {c}", f"{c} + {v}")[form - 6]
        if k == 7 and size_of:
            return f"len({size_of}) - {ch.pick(('1', '0', '2'))}"
        if k == 8:
            return "t % 7"
        return self.const()

    def float_read(self, scope):
        ch = self.ch
        rows = [v for v, kind in scope if kind == "row"]
        k = ch.int(0, 5)
        if k == 0 and rows:
            r = ch.pick(rows)
            return f"{r}[{self.index(scope, r)}]"
        if k == 1:
            return f"self.rows[{self.index(scope, 'self.rows')}][{self.index(scope)}]"
        if k == 2:
            return f"self.ins[{self.index(scope, 'self.ins')}]"
        return f"self.a[{self.index(scope, 'self.a')}]"

    def int_read(self, scope):
        view = self.ch.pick(("self.b", "self.io"))
        return f"{view}[{self.index(scope, view)}]"

    def cond(self, scope):
        ch = self.ch
        k = ch.int(0, 4)
        ints = [v for v, kind in scope if kind in ("i", "u", "l", "j")]
        if k == 0:
            return f"t > {ch.int(-2, 6)}"
        if k == 1:
            return f"s > {ch.pick(('0.5', '2.0', '-1.0'))}"
        if k == 2 and ints:
            return f"{ch.pick(ints)} == {ch.int(0, 4)}"
        if k == 3:
            return f"{self.float_read(scope)} > 0.5"
        return f"c % {ch.int(2, 4)} == 0"

    def loop_var(self, kind, depth):
        depth = min(depth, 2 if kind == "i" else 1)
        if self.ch.chance(0.1):              # sometimes a variable of another type: no versioning
            kind = self.ch.pick(("i", "u", "l"))
        return f"{kind}{depth}"

    def for_loop(self, scope, depth, in_loop):
        """(header, new scope entries) of a for loop."""
        ch = self.ch
        k = ch.int(0, 11)
        views = ("self.a", "self.b", "self.io", "self.out", "self.rows", "self.ins")
        if k <= 3:
            v = self.loop_var("i", depth)
            view = ch.pick(views + tuple(r for r, kind in scope if kind == "row"))
            stop = f"len({view})" + ("" if k <= 1 else f" {ch.pick(('+', '-'))} {ch.int(1, 2)}")
            start = "" if k != 3 else f"{ch.int(0, 2)}, "
            return f"for {v} in range({start}{stop}):", [(v, "i")]
        if k == 4:
            v = self.loop_var("i", depth)
            return f"for {v} in range(len({ch.pick(views)}) - 1, -1, -{ch.int(1, 2)}):", [(v, "i")]
        if k == 5:
            v = self.loop_var("i", depth)
            step = ch.pick(("", ", 2", ", -1", ", 3"))
            args = "self.hi, self.lo" if step == ", -1" else "self.lo, self.hi"
            return f"for {v} in range({args}{step}):", [(v, "i")]
        if k == 6:
            v = self.loop_var("u", depth)
            return f"for {v} in range(self.ulo, self.uhi{ch.pick(('', ', 2'))}):", [(v, "u")]
        if k == 7:
            v = self.loop_var("l", depth)
            args = ch.pick(("self.n", "self.n - 1, -1, -1", "self.n, self.n + 2", "2, self.n"))
            return f"for {v} in range({args}):", [(v, "l")]
        if k == 8:
            x = f"xf{depth}"
            return f"for {x} in self.{ch.pick(('a', 'ins'))}:", [(x, "f")]
        if k == 9:
            j, x = f"j{depth}", f"xi{depth}"
            return f"for {j}, {x} in enumerate(self.{ch.pick(('b', 'io'))}):", [(j, "j"), (x, "x")]
        if k == 10:
            r = f"row{depth}"
            return f"for {r} in self.rows:", [(r, "row")]
        v = self.loop_var("i", depth)
        return f"for {v} in range({ch.int(0, 3)}, {ch.int(0, 9)}):", [(v, "i")]

    def block(self, scope, depth, in_loop, count):
        out = []
        for _ in range(count):
            out += self.stmt(scope, depth, in_loop)
        return out or ["pass"]

    def stmt(self, scope, depth, in_loop):
        ch = self.ch
        self.stmts += 1
        k = ch.int(0, 15)
        if self.stmts > 40:
            k = ch.int(0, 5)                 # enough: only simple statements from here
        if k == 0:
            elems = [v for v, kind in scope if kind == "f"]
            return [f"s += {ch.pick(elems) if elems and ch.chance(0.3) else self.float_read(scope)}"]
        if k == 1:
            elems = [v for v, kind in scope if kind == "x"]
            return [f"t += {ch.pick(elems) if elems and ch.chance(0.3) else self.int_read(scope)}"]
        if k == 2:
            return [f"self.out[{self.index(scope, 'self.out')}] = s + {self.float_read(scope)}"]
        if k == 3:
            op = ch.pick(("+= 1", "= t", "-= c"))
            return [f"self.io[{self.index(scope, 'self.io')}] {op}"]
        if k == 4:
            return ["c += 1"]
        if k == 5:
            if in_loop and ch.chance(0.5):
                return [f"if {self.cond(scope)}:", f"    {ch.pick(('break', 'continue'))}"]
            return [f"s = s * 0.5 + {ch.int(0, 3)}.0"]
        if k == 6 and depth < 3:
            body = self.block(scope, depth, in_loop, ch.int(1, 2))
            lines = [f"if {self.cond(scope)}:"] + ["    " + x for x in body]
            if ch.chance(0.5):
                lines += ["else:"] + ["    " + x for x in self.block(scope, depth, in_loop, ch.int(1, 2))]
            return lines
        if k == 7 and depth < 3:
            w = f"w{depth}"
            body = self.block(scope, depth + 1, True, ch.int(1, 3))
            return [f"{w} = 0", f"while {w} < {ch.int(0, 4)}:", f"    {w} += 1"] + ["    " + x for x in body]
        if k == 8 and ch.chance(0.3):
            return [f"if {self.cond(scope)}:", f"    return {ch.pick(('True', 'False', 'None'))}"]
        if k == 9 and in_loop:
            ints = [v for v, kind in scope if kind in ("i", "u", "l")]
            if ints:
                return [f"{ch.pick(ints)} += 1"]        # the loop variable changes: checks stay
        if depth < 3:
            header, new = self.for_loop(scope, depth, in_loop)
            body = self.block(scope + new, depth + 1, True, ch.int(1, 3))
            return [header] + ["    " + x for x in body]
        return ["c += 2"]


def program(ch, name):
    """The source of one vertex class ``name``."""
    g = _Gen(ch)
    body = ["s = 0.0", "t = 0", "c = 0"] + [f"{v} = 0" for v in LOOP_VARS]
    body += g.block([], 0, False, ch.int(1, 4))
    body += [f"self.vo[{k}] = {v}" for k, v in enumerate(LOOP_VARS)]
    body += ["self.fo = s + t + c"]
    lines = [f"class {name}(Vertex):"] + [f"    {f}" for f in FIELDS] + ["    def compute(self):"]
    return "\n".join(lines + ["        " + x for x in body]) + "\n"


def load_classes(tmp_path, sources, module_name):
    """Write the classes into one module and import it; returns the classes in order."""
    names = [f"L{k}" for k in range(len(sources))]
    text = "import numpy as np\nimport popsim\nfrom popsim import *\n\n\n" + "\n\n".join(sources)
    path = tmp_path / f"{module_name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return [getattr(module, n) for n in names]


def values(ch):
    """Field values (FIELDS order): vectors of about one size (so that most loops stay
    in range, and some run one or two elements past the end), random contents."""
    base = ch.int(0, 8)
    same = ch.chance(0.5)                    # every vector (and the row count) of one size

    def size():
        return base if same else max(0, base + ch.pick((0, 0, 0, 1, 2, 3, -1)))

    def floats(n):
        return np.array([ch.pick((0.0, 0.25, 0.75, 1.5, -2.0, 3.0)) for _ in range(n)], np.float32)

    def ints(n):
        return np.array([ch.int(-3, 9) for _ in range(n)], np.int32)
    lo, hi = ch.pick(INT_RANGES)
    ulo, uhi = ch.pick(UINT_RANGES)
    return [floats(size()), ints(size()), ints(size()), np.zeros(size(), np.float32),
            [floats(size()) for _ in range(size())], [floats(1) for _ in range(size())],
            np.array([lo], np.int32), np.array([hi], np.int32), np.array([ulo], np.uint32),
            np.array([uhi], np.uint32), np.array([ch.pick((0, 3, 7))], np.int64), np.zeros(len(LOOP_VARS), np.int64),
            np.zeros(1, np.float32)]


def run_both_modes(vertex_type, field_values):
    """Run compiled and interpreted on copies; everything must agree: the return
    value, the cycle count, the index error (field, index, size, line) and the field
    contents, partial stores before an error included. Returns "ok", "false" or
    "error"."""
    cv, iv = clone(field_values), clone(field_values)
    ret, ctx = run_compiled(vertex_type, cv)
    try:
        ok, cycles = run_interpreted(vertex_type, iv)
    except popsim.IndexError as e:
        assert ret == -1 and ctx.error == INDEX_ERROR, f"compiled returned {ret} (error {ctx.error}): {e}"
        name = vertex_type.fields[ctx.error_field].name
        assert (f"index {ctx.error_index} is out of range for field '{name}' of size {ctx.error_size} ("
                in str(e)), f"compiled: {name}[{ctx.error_index}] of {ctx.error_size}; interpreted: {e}"
        assert f"at line {ctx.error_line} " in str(e), f"compiled line {ctx.error_line}; interpreted: {e}"
        outcome = "error"
    else:
        assert ret in (0, 1) and ok == (ret == 1), f"compiled returned {ret} (error {ctx.error}), interpreted {ok}"
        assert cycles == ctx.cycles, f"cycles: interpreted {cycles}, compiled {ctx.cycles}"
        outcome = "ok" if ok else "false"
    assert_same(cv, iv)
    return outcome
