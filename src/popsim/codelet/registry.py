"""The vertex types a graph knows, and ``add_codelets``' dispatch to the front ends."""
from __future__ import annotations

import inspect
from pathlib import Path
from types import ModuleType
from typing import Dict, List

from ..errors import UnknownVertexTypeError, did_you_mean
from .vertex_type import VertexType

CPP_SUFFIXES = (".cpp", ".cc", ".cxx", ".C")


class CodeletRegistry:
    """Vertex types by name, for one graph (shared with its virtual graphs)."""

    def __init__(self):
        self.types: Dict[str, VertexType] = {}
        self._sources: Dict[object, List[VertexType]] = {}  # add_codelets is idempotent per source

    def add(self, src, compile_flags: str = "") -> List[VertexType]:
        key = _source_key(src, compile_flags)
        if key in self._sources:
            return self._sources[key]
        found = _load(src, compile_flags)
        for vt in found:
            known = self.types.get(vt.name)
            if known is not None and known.source != vt.source:
                from ..errors import PopsimError
                raise PopsimError(f"vertex type '{vt.name}' from {vt.source} is already registered from "
                                  f"{known.source}; vertex type names must be unique in a graph")
            self.types[vt.name] = vt
        self._sources[key] = found
        return found

    def get(self, name: str) -> VertexType:
        try:
            return self.types[name]
        except KeyError:
            raise UnknownVertexTypeError(
                f"unknown vertex type '{name}': {did_you_mean(name, self.types)}; register it with "
                "graph.add_codelets(...) (a Vertex class, a module of them, or a Poplar .cpp codelet file)") from None

    def __contains__(self, name: str) -> bool:
        return name in self.types


def _source_key(src, flags: str):
    if isinstance(src, (str, Path)):
        return ("file", str(Path(src).resolve()), flags)
    if isinstance(src, (list, tuple)):
        return ("list", tuple(_source_key(s, flags) for s in src))
    return ("object", id(src))


def _load(src, flags: str) -> List[VertexType]:
    from . import cpp, python_vertex
    if isinstance(src, (str, Path)):
        path = Path(src)
        if path.suffix in CPP_SUFFIXES:
            return cpp.vertex_types_from_file(path, flags)
        raise TypeError(f"add_codelets: {str(src)!r} is not a C++ codelet file (expected one of "
                        f"{', '.join(CPP_SUFFIXES)}); pass Vertex classes or a module for Python vertices")
    if isinstance(src, ModuleType):
        classes = [obj for obj in vars(src).values()
                   if inspect.isclass(obj) and python_vertex.is_vertex_class(obj) and obj.__module__ == src.__name__]
        return python_vertex.vertex_types_from_classes(classes)
    if isinstance(src, (list, tuple)):
        if all(isinstance(s, (str, Path)) for s in src):
            return [vt for s in src for vt in _load(s, flags)]
        return python_vertex.vertex_types_from_classes(list(src))
    if inspect.isclass(src):
        return python_vertex.vertex_types_from_classes([src])
    raise TypeError(f"add_codelets takes a Vertex class, a list of them, a module, or a path to a .cpp codelet "
                    f"file; found {type(src).__name__}")
