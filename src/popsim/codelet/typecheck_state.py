"""The state of one type check of a vertex's ``compute`` (typecheck.py runs the passes
over it): the function and its fields, every local's name and type, the mode (inferring
types, or building the final typed IR), and the counters the IR records (index-check
sites, temporaries, loop counters). The typing rules (typecheck_stmt.py,
typecheck_expr.py, typecheck_calls.py) each hold this state and reach each other
through it: ``c.stmts``, ``c.exprs``, ``c.calls``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional, Set, Tuple, Union

from .typed_ir import VK, Expr, Function, Local, Site, T, ViewT, join

if TYPE_CHECKING:  # only for annotations: these modules import this one
    from .typecheck_calls import Calls
    from .typecheck_expr import Expressions
    from .typecheck_stmt import Statements


class Unknown(Exception):
    """A local whose type inference has not reached yet (first passes only)."""


class CheckState:
    """What the passes share while checking one ``compute``."""

    # the rule sets: typecheck.py attaches them before the passes run
    stmts: Statements
    exprs: Expressions
    calls: Calls

    def __init__(self, src, node, func, cls, vertex_name: str, fields, attrs, multi: bool):
        self.src = src                  # translate.Source: file, qualname, errors
        self.node = node                # compute's ast.FunctionDef
        self.func = func                # the Python function object (for globals / closure)
        self.cls = cls
        self.vertex_name = vertex_name
        self.fields = fields
        self.attrs = attrs
        self.multi = multi
        self.self_name = "self"         # compute's parameters (the signature pass)
        self.worker_name: Optional[str] = None
        self.field_by_attr = {a: i for i, a in enumerate(attrs)}
        for i, f in enumerate(fields):
            self.field_by_attr.setdefault(f.name, i)
        self.local_names: Set[str] = set()
        self.types: Dict[str, Union[T, ViewT]] = {}  # local -> type (widened during inference)
        self.fixed: Dict[str, T] = {}          # locals whose annotation fixes their type
        self.decided: Dict[str, int] = {}      # local -> line that decided its type
        self.defined: Optional[set] = None     # definitely assigned locals (final walk only)
        self.final = False                     # building the typed IR (else inferring types)
        self.changed = False                   # a type widened in this inference walk
        self.sites: List[Site] = []
        self.seq = 0
        self.temps: Dict[str, object] = {}
        self.counters: List[str] = []
        self.proven: List[Tuple[str, object]] = []  # (loop variable, view key) pairs known to be in range
        self.loops = 0
        self.function: Optional[Function] = None   # the result

    def reset_walk(self) -> None:
        """Before a walk over the body: what each walk records afresh."""
        self.sites, self.seq, self.temps, self.counters = [], 0, {}, []

    def err(self, node, msg: str, fix: Optional[str] = None):
        return self.src.error(node, msg, fix)

    def new_temp(self, ty, loc) -> Local:
        name = f"t{len(self.temps)}"
        self.temps[name] = ty
        return Local(ty, loc, name, True)

    def new_site(self, field: int, node) -> Site:
        self.seq += 1
        if not self.final:
            return Site(0, field, node.lineno, self.seq)
        s = Site(len(self.sites), field, node.lineno, self.seq)
        self.sites.append(s)
        return s

    def describe(self, e: Expr) -> str:
        if isinstance(e.ty, ViewT):
            name = self.fields[e.ty.field].name
            return {VK.VECTOR: f"vector field '{name}'", VK.ROWS: f"list field '{name}'",
                    VK.ROW: f"a row of field '{name}'", VK.SCALARS: f"list field '{name}'"}[e.ty.kind]
        return f"a {e.ty.describe()} value"

    def is_local(self, name: str) -> bool:
        return name in self.local_names

    def local_type(self, name: str, node):
        ty = self.types.get(name)
        if self.final:
            assert self.defined is not None  # the final walk tracks them
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
                raise self.err(node, f"local '{name}' holds {self.what(cur)} (line {self.decided[name]}) and here "
                               f"{self.what(ty)}: a local keeps one type for its whole life",
                               "use a different name for each")
            return
        if name in self.fixed:
            return
        wider = join(cur, ty)
        if wider is not cur:
            self.types[name] = wider
            self.decided[name] = node.lineno
            self.changed = True

    def what(self, ty) -> str:
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

    def new_counter(self) -> str:
        name = f"k{len(self.counters)}"
        self.counters.append(name)
        return name


class Rules:
    """One set of typing rules over the shared CheckState ``c``; the other sets are
    ``self.stmts``, ``self.exprs`` and ``self.calls``."""

    def __init__(self, state: CheckState):
        self.c = state

    @property
    def stmts(self) -> Statements:
        return self.c.stmts

    @property
    def exprs(self) -> Expressions:
        return self.c.exprs

    @property
    def calls(self) -> Calls:
        return self.c.calls
