"""The Python vertices the codelet tests run: one per feature of the supported subset
(tests/codelet/test_translate.py, test_interpret.py, test_checked_indexing.py,
test_python_vertex.py ...).

All of them are compiled into ONE shared library (vertex_types_from_classes with the whole
list, VERTICES), so a cold run compiles once.
"""
import math

import numpy as np

import popsim
from popsim import InOut, Input, MultiVertex, Output, Vector, VectorList, Vertex

SCALE = 3                # module-level constants are captured at translation time
OFFSET = 0.25


class Sum(Vertex):
    in_: Input[Vector[float]]
    out: Output[float]

    def compute(self):
        s = 0                    # widened to float by s += x (its widest assignment)
        for x in self.in_:
            s += x
        self.out = s


class Dot(Vertex):
    a: Input[Vector[float]]
    b: Input[Vector[float]]
    out: Output[Vector[float]]

    def compute(self):
        acc = 0.0
        for i in range(len(self.a)):
            acc += self.a[i] * self.b[i]
        self.out[0] = acc
        return True


class ClipScale(Vertex):
    in_: Input[Vector[float]]
    out: Output[Vector[float]]
    k: float
    lo: float
    hi: float

    def compute(self):
        for i in range(len(self.in_)):
            v = self.in_[i] * self.k
            if v < self.lo:
                v = self.lo
            elif v > self.hi:
                v = self.hi
            else:
                v = v + 0.5 if v >= 0 else v - 0.5
            self.out[i] = v


class IntDivMod(Vertex):
    a: Input[Vector[int]]
    b: Input[Vector[int]]
    q: Output[Vector[int]]
    r: Output[Vector[int]]

    def compute(self):
        for i in range(len(self.a)):
            self.q[i] = self.a[i] // self.b[i]
            self.r[i] = self.a[i] % self.b[i]


class LongDivMod(Vertex):
    a: Input[Vector[popsim.LONGLONG]]
    b: Input[Vector[popsim.LONGLONG]]
    q: Output[Vector[popsim.LONGLONG]]
    r: Output[Vector[popsim.LONGLONG]]

    def compute(self):
        for i in range(len(self.a)):
            self.q[i] = self.a[i] // self.b[i]
            self.r[i] = self.a[i] % self.b[i]


class FloatDivMod(Vertex):
    a: Input[Vector[float]]
    b: Input[Vector[float]]
    q: Output[Vector[float]]
    r: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.a)):
            self.q[i] = self.a[i] // self.b[i]
            self.r[i] = self.a[i] % self.b[i]


class HalfAxpy(Vertex):
    x: Input[Vector[popsim.HALF]]
    y: InOut[Vector[popsim.HALF]]
    a: float

    def compute(self):
        for i in range(len(self.y)):
            self.y[i] = self.a * self.x[i] + self.y[i]


class HalfToFloat(Vertex):
    h: Input[Vector[popsim.HALF]]
    f: Output[Vector[np.float32]]

    def compute(self):
        for i, v in enumerate(self.h):
            self.f[i] = v


class FloatToHalf(Vertex):
    f: Input[Vector[float]]
    h: Output[Vector[popsim.HALF]]

    def compute(self):
        for i in range(len(self.f)):
            self.h[i] = self.f[i]


class RowSums(Vertex):
    rows: Input[VectorList[float]]
    out: Output[Vector[float]]

    def compute(self):
        i = 0
        for row in self.rows:
            s = 0.0
            for j in range(len(row)):
                s += row[j]
            self.out[i] = s
            i += 1


class EdgeMax(Vertex):
    ins: Vector[Input[Vector[float]]]
    outs: Vector[Output[float]]

    def compute(self):
        for i in range(len(self.ins)):
            m = -math.inf
            for j in range(len(self.ins[i])):
                m = max(m, self.ins[i][j])
            self.outs[i] = m


class ScalarEdges(Vertex):
    ins: Vector[Input[float]]
    total: Output[float]
    doubled: Vector[Output[float]]

    def compute(self):
        t = 0.0
        for x in self.ins:
            t += x
        for i in range(len(self.ins)):
            self.doubled[i] = self.ins[i] * 2
        self.total = t


class MultiScale(MultiVertex):
    data: InOut[Vector[float]]
    k: float

    def compute(self, worker_id):
        n = len(self.data)
        for i in range(worker_id, n, self.num_workers()):
            self.data[i] = self.data[i] * self.k


class FirstAbove(Vertex):
    in_: Input[Vector[float]]
    limit: float
    out: Output[int]
    skipped: Output[int]

    def compute(self):
        i = 0
        found = -1
        skipped = 0
        while i < len(self.in_):
            x = self.in_[i]
            i += 1
            if x != x:                  # NaN: skip it
                skipped += 1
                continue
            if x > self.limit:
                found = i - 1
                break
        self.out = found
        self.skipped = skipped


class IntOps(Vertex):
    a: Input[int]
    b: Input[int]
    out: Output[Vector[int]]

    def compute(self):
        a = self.a
        b = self.b
        self.out[0] = a + b
        self.out[1] = a - b
        self.out[2] = a * b
        self.out[3] = a // b
        self.out[4] = a % b
        self.out[5] = -a
        self.out[6] = a ** 3
        self.out[7] = a & b
        self.out[8] = a | b
        self.out[9] = a ^ b
        self.out[10] = ~a
        self.out[11] = a << 3
        self.out[12] = a >> 2
        self.out[13] = abs(a)
        self.out[14] = min(a, b)
        self.out[15] = max(a, b, 7)
        self.out[16] = a if a > b else b
        self.out[17] = b ** -1
        self.out[18] = +a
        c = a
        c += b
        c -= 1
        c *= 2
        c //= 3
        c %= 1000
        self.out[19] = c


class FloatOps(Vertex):
    x: Input[float]
    y: Input[float]
    i: Input[int]
    out: Output[Vector[float]]
    iout: Output[Vector[int]]

    def compute(self):
        x, y, i = self.x, self.y, self.i
        self.out[0] = x + y
        self.out[1] = x - y
        self.out[2] = x * y
        self.out[3] = x / y
        self.out[4] = x // y
        self.out[5] = x % y
        self.out[6] = x ** 2
        self.out[7] = -x
        self.out[8] = abs(x)
        self.out[9] = i / 4
        self.out[10] = min(x, y)
        self.out[11] = max(x, y, 0.5)
        self.out[12] = float(i)
        self.out[13] = x * 2 + i
        self.out[14] = x / 3 * 3
        self.iout[0] = int(x)
        self.iout[1] = round(x)
        self.iout[2] = math.floor(x)
        self.iout[3] = math.ceil(x)
        self.iout[4] = int(x > y)
        self.iout[5] = math.trunc(y)


class Logic(Vertex):
    a: Input[int]
    x: Input[float]
    out: Output[Vector[bool]]

    def compute(self):
        a, x = self.a, self.x
        self.out[0] = a < 10
        self.out[1] = 0 <= a < 10
        self.out[2] = -5 < a <= x < 100
        self.out[3] = a > 0 and x > 0
        self.out[4] = a > 0 or x > 0
        self.out[5] = not a
        self.out[6] = bool(x)
        self.out[7] = math.isnan(x)
        self.out[8] = math.isinf(x)
        self.out[9] = x == a
        self.out[10] = x != 0.5
        self.out[11] = (a > 0) & (x > 0)
        self.out[12] = (a > 0) ^ (x > 0)
        self.out[13] = not (a > 3 or x < 1.0) and a != 7


class MathFns(Vertex):
    in_: Input[Vector[float]]
    out: Output[VectorList[float]]

    def compute(self):
        for i in range(len(self.in_)):
            x = self.in_[i]
            self.out[0][i] = math.exp(x)
            self.out[1][i] = math.log(x)
            self.out[2][i] = math.sqrt(x)
            self.out[3][i] = math.tanh(x)
            self.out[4][i] = math.sin(x)
            self.out[5][i] = math.cos(x)
            self.out[6][i] = math.pow(x, 1.5)
            self.out[7][i] = math.fabs(x)
            self.out[8][i] = x ** 0.5
            self.out[9][i] = math.atan2(x, 2.0)
            self.out[10][i] = math.pi * x + math.e
            self.out[11][i] = math.log10(x) + math.log2(x) + math.exp2(x)


class EveryUnaryMath(Vertex):
    """Each math function vertex code calls with one argument (pyruntime.UNARY_MATH), in
    that order: a test checks the list against the runtime's."""
    in_: Input[Vector[float]]
    out: Output[VectorList[float]]

    def compute(self):
        for i in range(len(self.in_)):
            x = self.in_[i]
            self.out[0][i] = math.exp(x)
            self.out[1][i] = math.exp2(x)
            self.out[2][i] = math.expm1(x)
            self.out[3][i] = math.log(x)
            self.out[4][i] = math.log2(x)
            self.out[5][i] = math.log10(x)
            self.out[6][i] = math.log1p(x)
            self.out[7][i] = math.sqrt(x)
            self.out[8][i] = math.sin(x)
            self.out[9][i] = math.cos(x)
            self.out[10][i] = math.tan(x)
            self.out[11][i] = math.asin(x)
            self.out[12][i] = math.acos(x)
            self.out[13][i] = math.atan(x)
            self.out[14][i] = math.sinh(x)
            self.out[15][i] = math.cosh(x)
            self.out[16][i] = math.tanh(x)
            self.out[17][i] = math.erf(x)
            self.out[18][i] = math.erfc(x)


class Casts(Vertex):
    f: Input[Vector[float]]
    i32: Output[Vector[int]]
    u32: Output[Vector[popsim.UNSIGNED_INT]]
    i64: Output[Vector[popsim.LONGLONG]]
    b: Output[Vector[bool]]
    back: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.f)):
            x = self.f[i]
            self.i32[i] = int(x)              # truncates; saturates; NaN -> 0
            self.u32[i] = x                   # implicit conversion at the store
            self.i64[i] = np.int64(x)
            self.b[i] = bool(x)
            self.back[i] = float(int(x))


class WideInts(Vertex):
    big: Input[Vector[popsim.LONGLONG]]
    f: Output[Vector[float]]
    u: InOut[Vector[popsim.UNSIGNED_LONGLONG]]

    def compute(self):
        for i in range(len(self.big)):
            self.f[i] = self.big[i]           # int64 -> float32, rounded to nearest
            self.u[i] = self.u[i] * 3 + 1     # wraps modulo 2**64


class Narrow(Vertex):
    s: InOut[Vector[popsim.SHORT]]
    u8: InOut[Vector[popsim.UNSIGNED_CHAR]]
    flags: InOut[Vector[bool]]

    def compute(self):
        for i in range(len(self.s)):
            self.s[i] = self.s[i] * 300
        for i in range(len(self.u8)):
            self.u8[i] = self.u8[i] + 200
        for i in range(len(self.flags)):
            self.flags[i] = not self.flags[i]


class Unsigned(Vertex):
    n: popsim.UNSIGNED_INT
    out: Output[Vector[bool]]
    wrap: Output[popsim.UNSIGNED_INT]
    as_int: Output[int]

    def compute(self):
        self.out[0] = -1 < self.n           # exact comparison, unlike C
        self.out[1] = self.n > 4000000000
        self.out[2] = self.n == 4294967295
        self.wrap = self.n - 1              # unsigned arithmetic wraps
        self.as_int = int(self.n) - 1


class Misc(Vertex):
    in_: Input[Vector[float]]
    out: Output[Vector[float]]
    BIAS = 1.5

    def compute(self):
        a = b = 0.0
        a, b = 1.0, 2.0
        a, b = b, a                          # swap: a = 2, b = 1
        total: int = 0
        for i, x in enumerate(self.in_):
            self.out[i] = x * SCALE + OFFSET + self.BIAS + a - b
            total += 1.9                     # annotated int: converted (truncated) at each assignment
        return total == len(self.in_)


class Accumulate(Vertex):
    acc: InOut[Vector[float]]
    total: InOut[float]
    rows: InOut[VectorList[int]]

    def compute(self):
        for i in range(len(self.acc)):
            self.acc[i] += i * 0.5
            self.total += self.acc[i]
        for r in range(len(self.rows)):
            for j in range(len(self.rows[r])):
                self.rows[r][j] *= 2
        for row in self.rows:
            if len(row) > 0:
                row[0] -= 1


class Ranges(Vertex):
    out: Output[Vector[int]]
    start: int
    stop: int
    step: int

    def compute(self):
        n = 0
        for i in range(self.start, self.stop, self.step):
            if n < len(self.out):
                self.out[n] = i
            n += 1
            i = 1000                          # does not change the iteration
        k = -1
        for k in range(3):  # its last value is used after the loop
            pass
        for j in range(10, 0, -3):
            n += j * 100
        self.out[len(self.out) - 1] = n * 10 + k


class Fails(Vertex):
    in_: Input[Vector[int]]

    def compute(self):
        for x in self.in_:
            if x < 0:
                return False
        return None


class MultiFails(MultiVertex):
    out: Output[Vector[int]]

    def compute(self, wid):
        self.out[wid] = wid
        return wid != 2


class Empty(Vertex):
    def compute(self):
        """Nothing to do."""
        pass


class OutOfRange(Vertex):
    in_: Input[Vector[float]]
    idx: Input[Vector[int]]
    out: InOut[Vector[float]]
    rows: Input[VectorList[float]]
    mode: int

    def compute(self):
        m = self.mode
        if m == 0:
            self.out[0] = self.in_[self.idx[0]]
        elif m == 1:
            self.out[self.idx[0]] = 1.0
        elif m == 2:
            self.out[0] = self.rows[self.idx[0]][0]
        elif m == 3:
            self.out[0] = self.in_[self.idx[0]] + self.in_[self.idx[1]] * self.rows[self.idx[1]][0]
        elif m == 4:
            self.out[0] = self.rows[0][self.idx[0]]
        elif m == 5:
            self.out[self.idx[0]] += 1.0
        elif m == 6:
            for row in self.rows:
                self.out[0] = row[self.idx[0]]
        elif m == 7:
            self.out[0] = 5.0
            self.out[self.idx[0]] = self.in_[self.idx[1]]


class Printer(Vertex):
    x: Input[Vector[float]]
    n: Input[Vector[int]]

    def compute(self):
        print("x:", self.x[0], "n =", self.n[0], sep=" ", end="|\n")
        print(f"[{self.x[0]:.3f}] {self.n[0]:5d} {self.x[1]:+.2e} {self.n[0] > 0} {self.n[0]:+.1f}")
        for v in self.x:
            print(v)
        print("unicode: é ✓ \\ \" ?? %d %s", True)
        print("nul:\0.", end="")
        print()


class WithBreakpoint(Vertex):
    out: Output[float]

    def compute(self):
        y = 2.5
        breakpoint()
        self.out = y


class Named(Vertex):
    vertex_name = "popops::Add<float>"
    a: Input[Vector[float]]
    b: Input[Vector[float]]
    out_: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.out_)):
            self.out_[i] = self.a[i] + self.b[i]


class CNames(Vertex):
    """Locals named like C keywords and with non-ASCII names must still compile."""
    out: Output[Vector[float]]

    def compute(self):
        char = 1
        unsigned = 2.0
        register = char + unsigned
        α = register * 2
        cyc = 1
        E = 2
        self.out[0] = α + cyc + E


class Views(Vertex):
    rows: Input[VectorList[float]]
    vec: Input[Vector[float]]
    offs: Vector[int]
    n: popsim.UNSIGNED_INT
    total: Output[float]
    longest: Output[Vector[float]]
    flags: Input[Vector[bool]]

    def compute(self):
        v = self.vec
        total = 0.0
        for i in range(len(self.rows)):
            row = self.rows[i]
            for x in row:
                total += x * v[i % len(v)]
        for o in self.offs:
            total += o
        for j in range(-2, self.n):          # int32 with uint32: iterates exactly, from -2
            total += j
        for f in self.flags:
            if f:
                total += 1000
        self.total[0] = total
        best = self.rows[0]
        for row in self.rows:
            if len(row) > len(best):
                best = row
        for j in range(len(best)):
            self.longest[j] = best[j]


class SumHalf(Sum):
    """The same compute with other field types: a template instantiation."""
    vertex_name = "Sum<half>"
    in_: Input[Vector[popsim.HALF]]


VERTICES = [Sum, Dot, ClipScale, IntDivMod, LongDivMod, FloatDivMod, HalfAxpy, HalfToFloat, FloatToHalf, RowSums,
            EdgeMax, ScalarEdges, MultiScale, FirstAbove, IntOps, FloatOps, Logic, MathFns, Casts, WideInts, Narrow,
            Unsigned, Misc, Accumulate, Ranges, Fails, MultiFails, Empty, OutOfRange, Printer, WithBreakpoint, Named,
            CNames, Views, SumHalf]
