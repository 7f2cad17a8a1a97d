"""Vertex templates: one Python vertex definition instantiated per element type (and per
op, per flag...), each instantiation registered under the C++ template name PopLibs
gives it (``popops::ScaledAdd<float,true>``), as ``poputil::templateVertex`` spells it.

A template is a factory function that returns a Vertex class for its arguments,
decorated with :func:`vertex_template`::

    @vertex_template("popops::ScaledAdd", dtype=[FLOAT, HALF], constrained=[True, False])
    def ScaledAdd(dtype, constrained):
        class ScaledAdd(Vertex):
            data: InOut[Vector[dtype]]
            deltas: Input[Vector[dtype]]
            scale: float
            def compute(self):
                for i in range(len(self.data)):
                    self.data[i] += self.scale * self.deltas[i]
        return ScaledAdd

    ScaledAdd[FLOAT, True]            # the class of one instantiation (made once, memoized)
    graph.add_codelets(ScaledAdd)     # every instantiation, on demand:
    graph.add_vertex(cs, "popops::ScaledAdd<float,true>", ...)

Each instantiation is an ordinary Vertex class whose ``vertex_name`` is the templated
name; it is translated and compiled once (compiled libraries are cached by content).
"""
from __future__ import annotations

import enum
import inspect
import threading
from typing import TYPE_CHECKING, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Type

import numpy as np

from .. import errors, types as _types
from ..errors import CodeletSyntaxError, PopsimError, UnknownVertexTypeError, did_you_mean

if TYPE_CHECKING:  # only for annotations
    from .python_vertex import Vertex

__all__ = ["VertexTemplate", "vertex_template", "template_vertex", "template_argument"]


def template_argument(value) -> str:
    """One template argument as it appears in a vertex name: an element type by its C++
    spelling (``FLOAT`` -> ``float``, ``UNSIGNED_INT`` -> ``unsigned int``; Python
    ``float``/``int``/``bool`` and numpy dtypes count as types), a bool as ``true`` /
    ``false``, an int in decimal, a string as written, anything with a ``cpp`` attribute
    (a string: its C++ spelling) by that, and other enum members as ``Enum::NAME``. PopLibs
    spells its op types fully qualified (``popops::expr::BinaryOpType::ADD``): give such
    an enum a ``cpp`` property returning that."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    cpp = getattr(value, "cpp", None)
    if isinstance(cpp, str):
        return cpp
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}::{value.name}"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, str):
        return value
    try:
        return _types.as_type(value).cpp
    except TypeError:
        raise PopsimError(f"{value!r} cannot be a vertex template argument: use an element type (popsim.FLOAT...), a "
                          "bool, an int, a string or an enum member") from None


def template_vertex(name: str, *args) -> str:
    """The name of a vertex template instantiation, as poputil::templateVertex builds it:
    ``template_vertex("popops::ScaledAdd", FLOAT, True) == "popops::ScaledAdd<float,true>"``
    (arguments joined by commas, no spaces; see :func:`template_argument`)."""
    if not args:
        return name
    return f"{name}<{','.join(template_argument(a) for a in args)}>"


def _normalise(value, domain: Optional[Tuple]):
    """A template argument in the form the memo and the domain use: element types as
    popsim Types (``float``, ``np.float32`` and ``"float"`` all mean FLOAT where the
    parameter takes types)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    takes_types = domain is not None and domain and all(isinstance(d, _types.Type) for d in domain)
    if isinstance(value, _types.Type) or (isinstance(value, type) and value in (float, int, bool)) or \
            isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)) or \
            (takes_types and isinstance(value, str)):
        try:
            return _types.as_type(value)
        except TypeError:
            return value
    if isinstance(value, np.integer):
        return int(value)
    return value


class VertexTemplate:
    """A vertex class template: ``T[args]`` (or ``T(*args)``) is the Vertex class of one
    instantiation, named ``name<args>``. Made with :func:`vertex_template`."""

    def __init__(self, name: str, factory: Callable, domains: Dict[str, Optional[Sequence]]):
        self.name = name
        self.factory = factory
        self.parameters: Tuple[str, ...] = tuple(domains)
        self.domains: Dict[str, Optional[Tuple]] = {
            p: (None if d is None else tuple(_normalise(v, None) for v in d)) for p, d in domains.items()}
        self._instances: Dict[tuple, Type[Vertex]] = {}
        self._by_name: Optional[Dict[str, tuple]] = None
        self._lock = threading.RLock()
        self.__doc__ = factory.__doc__
        self.__wrapped__ = factory

    def __repr__(self) -> str:
        return f"<vertex template {self.name}<{', '.join(self.parameters)}>: instantiate it as {self.name_hint()}>"

    def name_hint(self) -> str:
        return f"{getattr(self.factory, '__name__', 'T')}[{', '.join(self.parameters)}]"

    # -- instantiation -------------------------------------------------------------------------
    def __getitem__(self, args) -> type:
        return self(*(args if isinstance(args, tuple) else (args,)))

    def __call__(self, *args, **kwargs) -> type:
        return self.instantiate(self._arguments(args, kwargs))

    def _arguments(self, args, kwargs) -> tuple:
        params = self.parameters
        if len(args) > len(params):
            raise PopsimError(f"vertex template {self.name} takes {len(params)} argument(s) "
                              f"({', '.join(params)}), found {len(args)}")
        values = dict(zip(params, args))
        for key, value in kwargs.items():
            if key not in params:
                raise PopsimError(f"vertex template {self.name} has no parameter '{key}': "
                                  f"{did_you_mean(key, params)}")
            if key in values:
                raise PopsimError(f"vertex template {self.name}: parameter '{key}' given twice")
            values[key] = value
        missing = [p for p in params if p not in values]
        if missing:
            raise PopsimError(f"vertex template {self.name}: missing argument(s) for {', '.join(missing)}")
        out = []
        for p in params:
            domain = self.domains[p]
            value = _normalise(values[p], domain)
            if domain is not None and not any(value is d or (type(value) is type(d) and value == d) for d in domain):
                allowed = ", ".join(template_argument(d) for d in domain)
                raise PopsimError(f"vertex template {self.name}: {p}={template_argument(value)} is not one of the "
                                  f"values it is declared for ({allowed}); add it to the {p}=[...] list of "
                                  "@vertex_template")
            out.append(value)
        return tuple(out)

    def instantiate(self, args: tuple) -> Type[Vertex]:
        """The Vertex class for normalised ``args`` (made once; later calls return it)."""
        with self._lock:
            cls = self._instances.get(args)
            if cls is None:
                cls = self._make(args)
                self._instances[args] = cls
            return cls

    def _make(self, args: tuple) -> Type[Vertex]:
        from .python_vertex import is_vertex_class
        name = template_vertex(self.name, *args)
        cls = self.factory(*args)
        if not is_vertex_class(cls):
            raise CodeletSyntaxError(f"vertex template {self.name}: the factory {self.factory.__qualname__} must "
                                     "return a popsim.Vertex or MultiVertex subclass with a compute method, "
                                     f"returned {cls!r}")
        own = cls.__dict__.get("vertex_name")
        if own and own != name:
            raise CodeletSyntaxError(f"vertex template {self.name}: the class for {name} sets vertex_name = {own!r}; "
                                     "leave vertex_name unset in a template (the template names its instantiations)")
        if own is None or own == "":
            if cls in self._instances.values():
                raise CodeletSyntaxError(f"vertex template {self.name}: the factory returned the same class for "
                                         "different arguments; define the class inside the factory")
            cls.vertex_name = name
        return cls

    # -- names -----------------------------------------------------------------------------------
    @property
    def instances(self) -> Dict[str, type]:
        """The instantiations made so far, by vertex name."""
        with self._lock:
            return {cls.vertex_name: cls for cls in self._instances.values()}

    def vertex_name(self, *args, **kwargs) -> str:
        """The name ``T(*args)`` is registered under (nothing is instantiated)."""
        return template_vertex(self.name, *self._arguments(args, kwargs))

    def _domain_names(self) -> Dict[str, tuple]:
        if self._by_name is None:
            names: Dict[str, tuple] = {}
            domains = [d for d in (self.domains[p] for p in self.parameters) if d is not None]
            if len(domains) == len(self.parameters):  # every parameter declares its domain
                for args in _product(domains):
                    names[template_vertex(self.name, *args)] = args
            self._by_name = names
        return self._by_name

    def names(self) -> List[str]:
        """Every name add_vertex can instantiate on demand: the declared domains' product
        (empty when a parameter has no declared values), plus those made explicitly."""
        return list(dict.fromkeys([*self._domain_names(), *self.instances]))

    def find(self, vertex_name: str) -> Optional[type]:
        """The instantiation registered as ``vertex_name``, made on demand, or None."""
        args = self._domain_names().get(vertex_name)
        if args is not None:
            return self.instantiate(args)
        return self.instances.get(vertex_name)

    def can_make(self, vertex_name: str) -> bool:
        return vertex_name in self._domain_names() or vertex_name in self.instances


def _product(domains: List[Tuple]) -> Iterator[tuple]:
    if not domains:
        yield ()
        return
    for head in domains[0]:
        for rest in _product(domains[1:]):
            yield (head, *rest)


def vertex_template(name: str, **domains: Sequence) -> Callable[[Callable], VertexTemplate]:
    """Make a vertex template of a factory function ``factory(*args) -> Vertex class``.

    :param name: the template's C++ name without arguments (``"popops::ScaledAdd"``);
        instantiations are named ``name<args>`` as poputil::templateVertex spells them.
    :param domains: for each factory parameter (by name), the values it may take, e.g.
        ``dtype=[FLOAT, HALF]``. With a domain for every parameter, ``graph.add_codelets(T)``
        lets ``graph.add_vertex(cs, "name<...>")`` make any instantiation on demand.
        Parameters without a domain take any value, but then only explicit instantiations
        (``graph.add_codelets(T[FLOAT, True])``) are known by name.

    Names used in the class's annotations may be the factory's parameters and locals,
    also under ``from __future__ import annotations``.
    """
    if not isinstance(name, str) or not name or "<" in name:
        raise PopsimError(f"vertex_template needs the template's name without arguments, e.g. "
                          f"'popops::ScaledAdd', found {name!r}")

    def decorate(factory: Callable) -> VertexTemplate:
        if not callable(factory):
            raise errors.TypeError(f"@vertex_template decorates a factory function, found {type(factory).__name__}")
        params = [p for p in inspect.signature(factory).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        others = [p.name for p in inspect.signature(factory).parameters.values() if p not in params]
        if others:
            raise PopsimError(f"vertex template {name}: the factory's parameters must be plain positional ones, found "
                              f"{', '.join(others)}")
        unknown = [d for d in domains if d not in [p.name for p in params]]
        if unknown:
            raise PopsimError(f"vertex template {name}: the factory has no parameter {unknown[0]!r} "
                              f"({did_you_mean(unknown[0], [p.name for p in params])})")
        for key, values in domains.items():
            if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
                raise PopsimError(f"vertex template {name}: {key}= must list the values the parameter takes, "
                                  f"e.g. {key}=[popsim.FLOAT, popsim.HALF]")
        return VertexTemplate(name, factory, {p.name: (tuple(domains[p.name]) if p.name in domains else None)
                                              for p in params})

    return decorate


def unknown_instantiation(name: str, templates: Dict[str, VertexTemplate]) -> Optional[UnknownVertexTypeError]:
    """The error for ``name`` when it names an instantiation a registered template cannot
    make, else None."""
    base = name.split("<", 1)[0]
    template = templates.get(base)
    if template is None:
        return None
    known = template.names()
    where = (f"it can make {', '.join(known[:8])}{', ...' if len(known) > 8 else ''}" if known else
             "declare the values of its parameters in @vertex_template(...) or register the instantiation with "
             f"graph.add_codelets({template.name_hint()})")
    return UnknownVertexTypeError(f"unknown vertex type '{name}': vertex template {base} has no such instantiation "
                                  f"({did_you_mean(name, known) if known else 'none declared'}); {where}")
