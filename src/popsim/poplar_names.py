"""Poplar's camelCase names on popsim's objects.

popsim spells Poplar's methods in snake_case (``addVariable`` is ``add_variable``). A port
that keeps a Poplar spelling should be told what to write instead, not get a bare
AttributeError. Classes that derive from :class:`SnakeCaseNames` get, for each of their
public names, class attributes under Poplar's spellings of it (``addVariable``,
``addHostToDeviceFIFO``, ``getNumTiles`` ...) whose lookup raises an
:class:`~popsim.errors.UnknownAttributeError` naming the snake_case spelling.

Why descriptors rather than ``__getattr__``: on CPython 3.11 a class with ``__getattr__``
loses the interpreter's specialised attribute lookups for *every* attribute of its
instances, which made tensor view operations about a third slower. Other misspellings get
Python's own "Did you mean: ...?" suggestion.
"""
from __future__ import annotations

from typing import Dict, Optional, Set

from .errors import UnknownAttributeError

__all__ = ["SnakeCaseNames", "snake_case_of", "poplar_spellings"]

# Words Poplar writes in capitals inside camelCase names (addHostToDeviceFIFO, tilesPerIPU).
_ACRONYMS = {"fifo": "FIFO", "ipu": "IPU", "ipus": "IPUs", "id": "ID"}

_PUBLIC_NAMES: Dict[type, Dict[str, str]] = {}  # class -> {name without underscores, lower case: name}


def _static(cls: type, name: str):
    """The class attribute ``name`` of ``cls`` as stored (descriptors not invoked), or None."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return None


def _is_spelling(cls: type, name: str) -> bool:
    return isinstance(_static(cls, name), _PoplarSpelling)


def _public_names(cls: type) -> Dict[str, str]:
    names = _PUBLIC_NAMES.get(cls)
    if names is None:
        names = {n.replace("_", "").lower(): n for n in dir(cls)
                 if not n.startswith("_") and not _is_spelling(cls, n)}
        _PUBLIC_NAMES[cls] = names
    return names


def snake_case_of(cls: type, name: str) -> Optional[str]:
    """The public attribute of ``cls`` that Poplar's ``name`` stands for (``addHostToDeviceFIFO``
    -> ``add_host_to_device_fifo``, ``getNumVertices`` -> ``num_vertices``), or None."""
    names = _public_names(cls)
    key = name.replace("_", "").lower()
    found = names.get(key)
    if found is None and key.startswith("get"):  # Poplar's getters are often popsim properties
        found = names.get(key[3:])
    return found if found != name else None


def poplar_spellings(snake: str) -> Set[str]:
    """The camelCase spellings a Poplar program may use for popsim's ``snake`` (without
    ``snake`` itself): ``add_host_to_device_fifo`` -> addHostToDeviceFifo,
    addHostToDeviceFIFO; a name that is not a getter also as ``get...`` (getNumTiles)."""
    words = [w for w in snake.split("_") if w]
    if not words:
        return set()
    forms = set()
    for acronyms in (False, True):
        w = [_ACRONYMS.get(x, x) if acronyms else x for x in words]
        tail = "".join(x[:1].upper() + x[1:] for x in w[1:])
        forms.add(w[0] + tail)
        if words[0] != "get":
            forms.add("get" + w[0][:1].upper() + w[0][1:] + tail)
    forms.discard(snake)
    return forms


class _PoplarSpelling:
    """A class attribute under a Poplar spelling: looking it up raises an
    UnknownAttributeError that names popsim's spelling."""

    __slots__ = ("name", "snake", "callable")

    def __init__(self, name: str, snake: str, is_callable: bool):
        self.name = name
        self.snake = snake
        self.callable = is_callable

    def __get__(self, obj, owner=None):
        cls = owner if owner is not None else type(obj)
        what = "" if self.callable else " (an attribute: no parentheses)"
        raise UnknownAttributeError(f"{cls.__name__} has no attribute '{self.name}': popsim spells Poplar's methods "
                                    f"in snake_case; use {cls.__name__.lower()}.{self.snake}{what}")


class SnakeCaseNames:
    """Base class: every public name of a subclass is also present under Poplar's
    spellings of it, as an attribute whose lookup explains the snake_case name."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fields = {n for klass in cls.__mro__ for n in getattr(klass, "__annotations__", {})}  # dataclass fields
        for snake in sorted({n for n in dir(cls) if not n.startswith("_")} | fields):
            if snake.startswith("_"):
                continue
            value = _static(cls, snake)
            if isinstance(value, _PoplarSpelling):
                continue
            for form in poplar_spellings(snake):
                if _static(cls, form) is None:
                    setattr(cls, form, _PoplarSpelling(form, snake, callable(value)))

    def __dir__(self):
        cls = type(self)
        return [n for n in super().__dir__() if not _is_spelling(cls, n)]
