"""Poplar's camelCase names on popsim's objects.

popsim spells Poplar's methods in snake_case (``addVariable`` is ``add_variable``). A port
that keeps a Poplar spelling should be told what to write instead, not get a bare
AttributeError: classes that mix in :class:`SnakeCaseNames` answer an unknown attribute
with an :class:`~popsim.errors.UnknownAttributeError` naming the snake_case spelling
(or the closest known name).
"""
from __future__ import annotations

from typing import Dict, Optional

from .errors import UnknownAttributeError, did_you_mean

__all__ = ["SnakeCaseNames", "unknown_attribute", "snake_case_of"]

_PUBLIC_NAMES: Dict[type, Dict[str, str]] = {}  # class -> {name without underscores, lower case: name}


def _public_names(cls: type) -> Dict[str, str]:
    names = _PUBLIC_NAMES.get(cls)
    if names is None:
        names = {n.replace("_", "").lower(): n for n in dir(cls) if not n.startswith("_")}
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


def unknown_attribute(obj, name: str) -> UnknownAttributeError:
    """The error for ``obj.name`` when ``obj`` has no such attribute."""
    cls = type(obj)
    owner = cls.__name__
    if name.startswith("_"):  # protocol probes (numpy, copy, pickle) land here: keep them cheap
        return UnknownAttributeError(f"{owner} has no attribute '{name}'")
    snake = snake_case_of(cls, name)
    if snake is not None and name != name.lower():
        # A Poplar getter is often a popsim property or field: say that it takes no call.
        what = "" if callable(getattr(cls, snake, None)) else " (an attribute: no parentheses)"
        return UnknownAttributeError(f"{owner} has no attribute '{name}': popsim spells Poplar's methods in "
                                     f"snake_case; use {owner.lower()}.{snake}{what}")
    return UnknownAttributeError(f"{owner} has no attribute '{name}': "
                                 f"{did_you_mean(name, sorted(set(_public_names(cls).values())))}")


class SnakeCaseNames:
    """Mixin: an unknown attribute (e.g. Poplar's ``graph.addVariable``) raises an
    UnknownAttributeError that names popsim's spelling. Costs nothing on found attributes."""

    __slots__ = ()

    def __getattr__(self, name: str):
        raise unknown_attribute(self, name)
