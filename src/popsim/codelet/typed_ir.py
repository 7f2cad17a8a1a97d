"""The typed intermediate form of a Python vertex's ``compute``.

typecheck.py builds it from the Python AST; op_costs.py adds cycle-counting ticks;
emit_c.py turns it into C and interpret.py into Python. Both back ends walk the same
tree, so compiled and interpreted runs perform the same operations on the same types
and count the same cycles.

Value types (:class:`T`) are C's: every value has one static type for its whole life.
Views (:class:`ViewT`) are references to a field's memory (a vector, the rows of a list
field, one row); they are never copied.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import List, Optional, Tuple, Union

import numpy as np

from .. import types as _types


class T(enum.Enum):
    """A scalar value type. The order is C's conversion rank: the common type of two
    operands is the later one (bool first promotes to int32)."""

    BOOL = ("bool", "bool", np.bool_, 1)
    I32 = ("int32", "int32_t", np.int32, 32)
    U32 = ("uint32", "uint32_t", np.uint32, 32)
    I64 = ("int64", "int64_t", np.int64, 64)
    U64 = ("uint64", "uint64_t", np.uint64, 64)
    F32 = ("float32", "float", np.float32, 32)

    def __init__(self, label, ctype, np_type, bits):
        self.label = label
        self.ctype = ctype
        self.np = np_type
        self.bits = bits

    @property
    def rank(self) -> int:
        return list(T).index(self)

    @property
    def is_int(self) -> bool:
        return self in (T.I32, T.U32, T.I64, T.U64)

    @property
    def is_signed(self) -> bool:
        return self in (T.I32, T.I64)

    @property
    def is_float(self) -> bool:
        return self is T.F32

    @property
    def short(self) -> str:
        return self.name.lower()

    def describe(self) -> str:
        return {T.BOOL: "bool", T.I32: "int (32-bit)", T.U32: "unsigned int (32-bit)", T.I64: "int (64-bit)",
                T.U64: "unsigned int (64-bit)", T.F32: "float (32-bit)"}[self]


def join(a: T, b: T) -> T:
    """The wider of two types (a local assigned both gets this type)."""
    return a if a.rank >= b.rank else b


def arith_type(a: T, b: T) -> T:
    """C's usual arithmetic conversions on our types: bool promotes to int32, then the
    higher rank wins."""
    a = T.I32 if a is T.BOOL else a
    b = T.I32 if b is T.BOOL else b
    return join(a, b)


@dataclass(frozen=True)
class Storage:
    """How a field's elements are stored and what type a load produces."""

    ctype: str       # C element type in memory
    suffix: str      # helper name suffix: popsim_py_ld_<suffix>
    value: T         # the type a load yields (narrow ints promote, half computes as float)
    np: object       # numpy dtype of the memory


STORAGE = {
    _types.FLOAT: Storage("float", "f32", T.F32, np.float32),
    _types.HALF: Storage("uint16_t", "f16", T.F32, np.float16),
    _types.INT: Storage("int32_t", "i32", T.I32, np.int32),
    _types.UNSIGNED_INT: Storage("uint32_t", "u32", T.U32, np.uint32),
    _types.SHORT: Storage("int16_t", "i16", T.I32, np.int16),
    _types.UNSIGNED_SHORT: Storage("uint16_t", "u16", T.I32, np.uint16),
    _types.CHAR: Storage("int8_t", "i8", T.I32, np.int8),
    _types.SIGNED_CHAR: Storage("int8_t", "i8", T.I32, np.int8),
    _types.UNSIGNED_CHAR: Storage("uint8_t", "u8", T.I32, np.uint8),
    _types.LONGLONG: Storage("int64_t", "i64", T.I64, np.int64),
    _types.UNSIGNED_LONGLONG: Storage("uint64_t", "u64", T.U64, np.uint64),
    _types.BOOL: Storage("uint8_t", "b8", T.BOOL, np.bool_),
    # QUARTER and its metadata: vertex code sees the bytes (popops' quarter casts decode them)
    _types.QUARTER: Storage("uint8_t", "u8", T.I32, np.uint8),
    _types.QUARTER_METADATA: Storage("uint8_t", "u8", T.I32, np.uint8),
}


class VK(enum.Enum):
    """What a view refers to."""

    VECTOR = "vector"    # a vector edge or state vector: elements are values
    ROWS = "rows"        # a VectorList / vector of vector edges: elements are rows
    ROW = "row"          # one row of ROWS: elements are values
    SCALARS = "scalars"  # a vector of scalar edges: elements are values, one per sub-edge


@dataclass(frozen=True)
class ViewT:
    """A reference to (part of) field ``field``."""

    field: int
    kind: VK

    @property
    def has_values(self) -> bool:
        return self.kind is not VK.ROWS


Type = Union[T, ViewT]


@dataclass(frozen=True)
class Loc:
    line: int
    col: int
    end_line: int
    end_col: int

    @classmethod
    def of(cls, node) -> "Loc":
        """Where a Python AST node is."""
        return cls(node.lineno, node.col_offset, getattr(node, "end_lineno", None) or node.lineno,
                   getattr(node, "end_col_offset", None) or node.col_offset + 1)


@dataclass(frozen=True)
class Site:
    """An indexed access that can fail: the field, the source line, and its position in
    Python's evaluation order within the statement (the first failing site wins)."""

    id: int
    field: int
    line: int
    seq: int


# -- expressions -----------------------------------------------------------------------------
@dataclass
class Expr:
    ty: Type
    loc: Optional[Loc]


@dataclass
class Const(Expr):
    value: Union[int, float, bool] = 0


@dataclass
class Local(Expr):
    name: str = ""
    temp: bool = False


@dataclass
class NumWorkers(Expr):
    pass


@dataclass
class FieldRef(Expr):
    """A vector or list field as a whole (ty is a ViewT)."""
    field: int = 0


@dataclass
class ScalarField(Expr):
    """The value of a scalar edge or state scalar."""
    field: int = 0


@dataclass
class Load(Expr):
    """Element ``index`` of a view whose elements are values. ``site`` None: the index
    is proven in range (the loop variable of range(len(view))), no check."""
    view: Expr = None
    index: Expr = None
    site: Optional[Site] = None


@dataclass
class RowAt(Expr):
    """Row ``index`` of a ROWS view (ty is the ROW view); ``site`` as Load's."""
    view: Expr = None
    index: Expr = None
    site: Optional[Site] = None


@dataclass
class Len(Expr):
    view: Expr = None


@dataclass
class Unary(Expr):
    op: str = ""          # "neg" | "invert"
    operand: Expr = None


@dataclass
class Not(Expr):
    operand: Expr = None


@dataclass
class Binary(Expr):
    """Arithmetic with both operands already of type ``ty`` (shifts: the right operand
    is int64)."""
    op: str = ""          # add sub mul div floordiv mod pow and or xor lshift rshift
    left: Expr = None
    right: Expr = None


@dataclass
class Compare(Expr):
    op: str = ""          # lt le gt ge eq ne; operands of one type
    left: Expr = None
    right: Expr = None


@dataclass
class BoolOp(Expr):
    op: str = ""          # "and" | "or"; bool operands, short-circuit
    left: Expr = None
    right: Expr = None


@dataclass
class IfExp(Expr):
    test: Expr = None
    body: Expr = None
    orelse: Expr = None


@dataclass
class Cast(Expr):
    operand: Expr = None


@dataclass
class Intrinsic(Expr):
    """A helper function (math, min/max, comparisons across signedness...)."""
    name: str = ""
    args: List[Expr] = field(default_factory=list)


@dataclass
class Let(Expr):
    """Evaluate ``value``, keep it in temp ``target``, yield it."""
    target: Local = None
    value: Expr = None


@dataclass
class Tick(Expr):
    """Count ``cycles``, then evaluate ``value`` (costs of code that may not run)."""
    cycles: int = 0
    value: Expr = None


@dataclass
class LoopIndex(Expr):
    """Only in the fast body of a versioned loop (C only, see loop_versioning.py): the
    variable of the loop with hidden counter ``counter``, plus ``base`` (a local the loop
    does not assign, or None) and ``offset``, as an int64. Exact there: the loop's guards
    proved that no wrap-around happens."""
    counter: str = ""
    offset: int = 0
    base: Optional["Local"] = None


# -- statements ------------------------------------------------------------------------------
@dataclass
class Stmt:
    loc: Loc


@dataclass
class Assign(Stmt):
    target: Local = None
    value: Expr = None


@dataclass
class Store(Stmt):
    """view[index] = value (value already of the field's value type); index None: a
    scalar field."""
    view: Optional[Expr] = None
    index: Optional[Expr] = None
    value: Expr = None
    site: Optional[Site] = None
    field: int = 0


@dataclass
class If(Stmt):
    test: Expr = None
    body: List[Stmt] = field(default_factory=list)
    orelse: List[Stmt] = field(default_factory=list)


@dataclass
class While(Stmt):
    test: Expr = None
    body: List[Stmt] = field(default_factory=list)
    tick: int = 0          # cycles per evaluation of the test


@dataclass
class Guard:
    """A loop version's precondition: ``view[x + base + offset]`` is in range (and the
    sum does not wrap around in the loop's type) for every value x the loop variable
    takes and every offset from ``low`` to ``high``; ``base`` is a local the loop does not
    assign, or None (0)."""
    view: Expr
    low: int
    high: int
    base: Optional["Local"] = None


@dataclass
class ForRange(Stmt):
    """A for loop over range(start, stop, step).

    ``body`` is the loop as written, with every check: the interpreter always runs it.
    loop_versioning.py may add ``fast``, the same body without the checks that
    ``guards`` make redundant (and without the per-iteration count ``hoisted``, which
    the C loop then adds once per chunk of iterations): the C code runs ``fast`` when
    every guard holds, ``body`` otherwise."""
    var: Local = None
    start: Expr = None
    stop: Expr = None
    step: Expr = None
    body: List[Stmt] = field(default_factory=list)
    counter: str = ""      # hidden iteration counter's name
    fast: Optional[List[Stmt]] = None
    guards: List[Guard] = field(default_factory=list)
    hoisted: int = 0       # cycles per iteration that ``fast`` leaves out


@dataclass
class ForEach(Stmt):
    """for var in view (var: an element value or a row); index: enumerate's counter.
    ``fast`` and ``hoisted`` as for ForRange (a ForEach needs no guards)."""
    var: Local = None
    view: Expr = None
    body: List[Stmt] = field(default_factory=list)
    index: Optional[Local] = None
    counter: str = ""
    fast: Optional[List[Stmt]] = None
    hoisted: int = 0


@dataclass
class Break(Stmt):
    pass


@dataclass
class Continue(Stmt):
    pass


@dataclass
class Return(Stmt):
    value: Optional[Expr] = None   # bool, or None for success


@dataclass
class PrintItem:
    text: Optional[str] = None      # literal text, or
    value: Optional[Expr] = None    # a value formatted like str() (spec: a format spec)
    spec: str = ""


@dataclass
class Print(Stmt):
    items: List[List[PrintItem]] = field(default_factory=list)  # one list per argument
    sep: str = " "
    end: str = "\n"


@dataclass
class Breakpoint(Stmt):
    pass


@dataclass
class TickStmt(Stmt):
    cycles: int = 0


@dataclass
class Function:
    """A typed ``compute``: its body, locals (name -> type, in first-assignment order),
    temps, sites, and where it came from."""

    name: str                      # vertex type name
    qualname: str                  # Class.compute, for messages
    filename: str
    line: int                      # line of ``def compute``
    self_name: str
    worker_name: Optional[str]     # MultiVertex: the worker-id parameter
    fields: Tuple                  # FieldSpec, declaration order
    attrs: Tuple[str, ...]         # Python attribute names of the fields ("in_")
    body: List[Stmt]
    locals: dict                   # name -> Type
    temps: dict                    # temp name -> Type
    sites: List[Site]
    counters: List[str] = field(default_factory=list)


def walk_exprs(e: Expr):
    """``e`` and every expression inside it, parents first."""
    yield e
    for name in ("view", "index", "operand", "left", "right", "test", "body", "orelse", "value", "target"):
        child = getattr(e, name, None)
        if isinstance(child, Expr):
            yield from walk_exprs(child)
    for a in getattr(e, "args", ()):
        yield from walk_exprs(a)


def stmt_exprs(s: Stmt):
    """The expressions a statement evaluates itself (not those of nested blocks)."""
    for name in ("value", "index", "view", "test", "start", "stop", "step"):
        e = getattr(s, name, None)
        if isinstance(e, Expr):
            yield e
    if isinstance(s, Print):
        for arg in s.items:
            for item in arg:
                if item.value is not None:
                    yield item.value


def has_sites(s_or_e) -> bool:
    """Whether evaluating it can record an index error."""
    exprs = [s_or_e] if isinstance(s_or_e, Expr) else list(stmt_exprs(s_or_e))
    return any(isinstance(x, (Load, RowAt)) and x.site is not None for e in exprs for x in walk_exprs(e))


def child_blocks(s: Stmt) -> List[List[Stmt]]:
    """The statement lists nested directly in ``s`` (a loop's fast body included)."""
    if isinstance(s, If):
        return [s.body, s.orelse]
    if isinstance(s, While):
        return [s.body]
    if isinstance(s, (ForRange, ForEach)):
        return [s.body] + ([s.fast] if s.fast is not None else [])
    return []


def walk_stmts(stmts: List[Stmt]):
    """Every statement in ``stmts``, nested ones included, parents first."""
    for s in stmts:
        yield s
        for block in child_blocks(s):
            yield from walk_stmts(block)
