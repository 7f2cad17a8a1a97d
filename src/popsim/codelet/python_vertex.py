"""Vertices written in Python: the ``Vertex`` / ``MultiVertex`` base classes, the field
markers used as annotations, and reading a class's fields (python_compile.py turns the
classes into vertex types).

    class SumVertex(Vertex):
        in_: Input[Vector[float]]      # field "in" (a trailing underscore is dropped)
        out: Output[float]
        def compute(self):
            s = 0.0
            for x in self.in_:
                s += x
            self.out = s

``compute`` is written in a numeric subset of Python (docs/python_vertices.md); it is
translated to C and compiled into a cached shared library exposing the codelet ABI
(include/popsim_codelet.h), and can also run interpreted (interpret.py) with identical
results and cycle counts.
"""
from __future__ import annotations

import inspect
import re
import sys
from types import FrameType
from typing import Dict, Optional, Tuple

from .. import errors, types as _types
from ..errors import CodeletSyntaxError
from ..target import HARDWARE_WORKER_CONTEXTS
from .fields import Direction, FieldKind, FieldSpec

__all__ = ["Vertex", "MultiVertex", "Input", "Output", "InOut", "Vector", "VectorList",
           "is_vertex_class", "fields_of", "vertex_name"]


def _defining_scope(cls) -> Dict[str, object]:
    """The names a class's string annotations use that live in the function (or class
    body) the class statement ran in: under ``from __future__ import annotations`` a class
    made by a factory annotates fields with the factory's parameters (``Input[Vector[dtype]]``),
    which the module's globals do not hold. Taken when the class is created, as Python
    itself would resolve them then."""
    annotations = cls.__dict__.get("__annotations__", {})
    wanted = set()
    for ann in annotations.values():
        if isinstance(ann, str):
            wanted.update(re.findall(r"[A-Za-z_]\w*", ann))
    if not wanted:
        return {}
    frame: Optional[FrameType] = sys._getframe(2)  # 0: here, 1: __init_subclass__, 2: where the class statement ran
    while frame is not None and frame.f_code.co_name == "__init_subclass__":
        frame = frame.f_back  # a subclass's own __init_subclass__ calling super()
    if frame is None or frame.f_locals is frame.f_globals:
        return {}
    local = frame.f_locals
    return {name: local[name] for name in wanted if name in local}


class Vertex:
    """Base class of single-worker Python vertices: define ``compute(self)``.

    Fields are class annotations (``x: Input[Vector[float]]``); ``compute`` returns
    True/None for success and False for failure (ApplicationRuntimeError).
    """

    #: The registered vertex type name; defaults to the class name.
    vertex_name: str = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        scope = _defining_scope(cls)
        if scope:
            cls._popsim_scope = scope

    def compute(self):  # pragma: no cover - always overridden
        raise NotImplementedError("a Vertex subclass must define compute(self)")

    def num_workers(self) -> int:
        """Worker contexts per tile on the target (usable in compute). The engine sets
        the target's count; a vertex called from plain Python sees the hardware's."""
        return int(self.__dict__.get("_p_num_workers", HARDWARE_WORKER_CONTEXTS))


class MultiVertex(Vertex):
    """Base class of vertices that run on every worker of their tile at once: define
    ``compute(self, worker_id)`` and split the work by ``worker_id`` (0 to
    ``self.num_workers() - 1``)."""

    def compute(self, worker_id):  # pragma: no cover - always overridden
        raise NotImplementedError("a MultiVertex subclass must define compute(self, worker_id)")


# -- field markers -----------------------------------------------------------------------------
class _Marker:
    """``Input[...]``, ``Vector[...]``... as written in an annotation."""

    __slots__ = ("kind", "arg")

    def __init__(self, kind: str, arg):
        self.kind = kind
        self.arg = arg

    def __repr__(self) -> str:
        return f"{self.kind}[{_spell(self.arg)}]"

    def __eq__(self, other):
        return isinstance(other, _Marker) and (self.kind, self.arg) == (other.kind, other.arg)

    def __hash__(self):
        return hash((self.kind, id(self.arg)))


def _spell(x) -> str:
    if isinstance(x, _Marker):
        return repr(x)
    if isinstance(x, type):
        return x.__name__
    return str(x)


class _MarkerFactory:
    def __init__(self, kind: str, doc: str):
        self.kind = kind
        self.__doc__ = doc

    def __getitem__(self, arg) -> _Marker:
        if isinstance(arg, tuple):
            raise errors.TypeError(f"{self.kind}[...] takes one argument, found {len(arg)}: write "
                            f"{self.kind}[float] or {self.kind}[Vector[float]]")
        return _Marker(self.kind, arg)

    def __repr__(self) -> str:
        return f"popsim.{self.kind}"


Input = _MarkerFactory("Input", "An input edge: Input[float] (one element) or Input[Vector[float]].")
Output = _MarkerFactory("Output", "An output edge: Output[float] or Output[Vector[float]].")
InOut = _MarkerFactory("InOut", "An edge read and written: InOut[float] or InOut[Vector[float]].")
Vector = _MarkerFactory("Vector", "A vector: Input[Vector[float]], Vector[Input[...]] (a list of edges), or a "
                        "state vector Vector[int].")
VectorList = _MarkerFactory("VectorList", "A jagged list of vectors: Input[VectorList[float]].")

_DIRECTIONS = {"Input": Direction.INPUT, "Output": Direction.OUTPUT, "InOut": Direction.INOUT}
_FORMS = ("Input[float], Output[Vector[float]], InOut[VectorList[float]], Vector[Input[Vector[float]]], "
          "Vector[Output[float]], a plain element type (float, int, bool, popsim.HALF...) for state, or "
          "Vector[int] for a state vector")


def _element_type(x):
    if isinstance(x, _Marker):
        return None
    try:
        return _types.as_type(x)
    except TypeError:
        return None


def parse_annotation(attr: str, ann, cls) -> FieldSpec:
    """The FieldSpec of one annotated class attribute."""
    name = attr[:-1] if attr.endswith("_") and len(attr) > 1 else attr

    def bad(why: str):
        return CodeletSyntaxError(f"{cls.__qualname__}.{attr}: {why}; field types are written {_FORMS}")

    elem = _element_type(ann)
    if elem is not None:
        return FieldSpec(name, FieldKind.STATE, Direction.NONE, elem)
    if not isinstance(ann, _Marker):
        raise bad(f"{ann!r} is not a field type")
    if ann.kind in _DIRECTIONS:
        direction = _DIRECTIONS[ann.kind]
        inner = ann.arg
        elem = _element_type(inner)
        if elem is not None:
            return FieldSpec(name, FieldKind.SCALAR_EDGE, direction, elem)
        if isinstance(inner, _Marker) and inner.kind in ("Vector", "VectorList"):
            elem = _element_type(inner.arg)
            if elem is None:
                raise bad(f"{ann!r}: {inner.kind}[...] must hold an element type such as float, found "
                          f"{_spell(inner.arg)}")
            kind = FieldKind.VECTOR_EDGE if inner.kind == "Vector" else FieldKind.VECTOR_LIST
            return FieldSpec(name, kind, direction, elem)
        raise bad(f"{ann!r} is not a field type")
    if ann.kind == "Vector":
        inner = ann.arg
        elem = _element_type(inner)
        if elem is not None:
            return FieldSpec(name, FieldKind.STATE_VECTOR, Direction.NONE, elem)
        if isinstance(inner, _Marker) and inner.kind in _DIRECTIONS:
            sub = parse_annotation(attr, inner, cls)
            if sub.kind is FieldKind.SCALAR_EDGE or sub.kind is FieldKind.VECTOR_EDGE:
                return FieldSpec(name, FieldKind.EDGE_VECTOR, sub.direction, sub.dtype, element_kind=sub.kind)
        raise bad(f"{ann!r} is not a field type")
    raise bad(f"{ann!r}: VectorList must be inside an edge, as in Input[VectorList[float]]")


def fields_of(cls) -> Tuple[Tuple[FieldSpec, ...], Tuple[str, ...]]:
    """The fields of a vertex class in declaration order (base classes first) and their
    Python attribute names."""
    specs: Dict[str, Tuple[FieldSpec, str]] = {}
    for klass in reversed(cls.__mro__):
        if klass in (object, Vertex, MultiVertex):
            continue
        own = klass.__dict__.get("__annotations__", {})
        module = sys.modules.get(klass.__module__)
        namespace = dict(vars(module)) if module is not None else {}
        # As Python resolves names in a class body: the class's own names, then the
        # enclosing function's, then the module's.
        scope = {**klass.__dict__.get("_popsim_scope", {}), **vars(klass)}
        for attr, ann in own.items():
            if attr == "vertex_name":
                continue
            if isinstance(ann, str):
                try:
                    ann = eval(ann, namespace, scope)  # noqa: S307 - the user's own annotation
                except Exception as e:  # noqa: BLE001 - whatever the user's annotation raises is reported
                    raise CodeletSyntaxError(f"{cls.__qualname__}.{attr}: cannot evaluate the annotation "
                                             f"{ann!r} ({e}); the names it uses must be defined at module level, or "
                                             "in the function that defines the class before the class statement") \
                        from None
            if attr in klass.__dict__ and not callable(klass.__dict__[attr]):
                raise CodeletSyntaxError(
                    f"{cls.__qualname__}.{attr}: fields cannot have a default value; set state fields with "
                    "graph.set_initial_value(v['...'], value) and connect edges with graph.connect")
            spec = parse_annotation(attr, ann, cls)
            for ospec, oattr in specs.values():
                if ospec.name == spec.name and oattr != attr:
                    raise CodeletSyntaxError(f"{cls.__qualname__}: attributes '{oattr}' and '{attr}' both declare "
                                             f"field '{spec.name}' (a trailing underscore is dropped)")
            specs[attr] = (spec, attr)
    return tuple(s for s, _ in specs.values()), tuple(a for _, a in specs.values())


def is_vertex_class(obj) -> bool:
    """Whether ``obj`` is a user's Vertex / MultiVertex subclass with a compute method."""
    return (inspect.isclass(obj) and issubclass(obj, Vertex) and obj not in (Vertex, MultiVertex)
            and getattr(obj, "compute", None) not in (Vertex.compute, MultiVertex.compute))


def vertex_name(cls) -> str:
    name = cls.__dict__.get("vertex_name") or cls.__name__
    if not isinstance(name, str):
        raise CodeletSyntaxError(f"{cls.__qualname__}.vertex_name must be a string, found {name!r}")
    return name
