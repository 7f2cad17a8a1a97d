"""The vertex types a graph knows, and ``add_codelets``' dispatch to the front ends."""
from __future__ import annotations

import inspect
from pathlib import Path
from types import ModuleType
from typing import Dict, List

from .. import errors
from ..errors import PopsimError, UnknownVertexTypeError, did_you_mean
from .templates import VertexTemplate, unknown_instantiation
from .vertex_type import VertexType

CPP_SUFFIXES = (".cpp", ".cc", ".cxx", ".C")
# What popc and Poplar's tools write: compiled IPU code, which the host cannot run.
POPC_OUTPUTS = (".gp", ".o", ".elf", ".a")


class CodeletRegistry:
    """Vertex types by name, for one graph (shared with its virtual graphs), and the
    vertex templates whose instantiations are registered on first use."""

    def __init__(self):
        self.types: Dict[str, VertexType] = {}
        self.templates: Dict[str, VertexTemplate] = {}
        self._sources: Dict[object, List[VertexType]] = {}  # add_codelets is idempotent per source

    def add(self, src, compile_flags: str = "") -> List[VertexType]:
        if not isinstance(compile_flags, str):
            raise errors.TypeError(f"add_codelets: compile_flags must be a string such as '-O3', found "
                                   f"{type(compile_flags).__name__}")
        key = _source_key(src, compile_flags)
        if key in self._sources:
            return self._sources[key]
        for template in _templates_in(src):
            self.add_template(template)
        found = _load(src, compile_flags)
        for vt in found:
            known = self.types.get(vt.name)
            if known is not None and known.source != vt.source:
                raise PopsimError(f"vertex type '{vt.name}' from {vt.source} is already registered from "
                                  f"{known.source}; vertex type names must be unique in a graph")
            self.types[vt.name] = vt
        self._sources[key] = found
        return found

    def add_template(self, template: VertexTemplate) -> None:
        known = self.templates.get(template.name)
        if known is not None and known is not template:
            raise PopsimError(f"vertex template {template.name} is already registered (from "
                              f"{known.factory.__module__}.{known.factory.__qualname__}); template names must be "
                              "unique in a graph")
        self.templates[template.name] = template

    def get(self, name: str) -> VertexType:
        vt = self.types.get(name)
        if vt is not None:
            return vt
        cls = self._instantiation(name)
        if cls is not None:
            return self.add(cls)[0]
        error = unknown_instantiation(name, self.templates) if isinstance(name, str) else None
        if error is not None:
            raise error
        raise UnknownVertexTypeError(
            f"unknown vertex type '{name}': {did_you_mean(name, self.known_names())}; register it with "
            "graph.add_codelets(...) (a Vertex class, a module of them, a vertex template, or a Poplar .cpp codelet "
            "file)")

    def _instantiation(self, name):
        """The class of a registered template's instantiation called ``name``, or None."""
        if not isinstance(name, str) or "<" not in name:
            return None
        template = self.templates.get(name.split("<", 1)[0])
        return template.find(name) if template is not None else None

    def known_names(self) -> List[str]:
        """Registered names and those registered templates can make."""
        return [*self.types, *(n for t in self.templates.values() for n in t.names())]

    def __contains__(self, name: str) -> bool:
        if name in self.types:
            return True
        if not isinstance(name, str) or "<" not in name:
            return False
        template = self.templates.get(name.split("<", 1)[0])
        return template is not None and template.can_make(name)


def _source_key(src, flags: str):
    if isinstance(src, (str, Path)):
        from .. import config
        return ("file", str(Path(src).resolve()), flags, config.checked_codelets())
    if isinstance(src, (list, tuple)):
        return ("list", tuple(_source_key(s, flags) for s in src))
    return ("object", id(src))


def _templates_in(src) -> List[VertexTemplate]:
    if isinstance(src, VertexTemplate):
        return [src]
    if isinstance(src, ModuleType):
        return [obj for obj in vars(src).values() if isinstance(obj, VertexTemplate)]
    if isinstance(src, (list, tuple)):
        return [t for s in src for t in _templates_in(s)]
    return []


def _load(src, flags: str) -> List[VertexType]:
    from . import cpp, python_compile, python_vertex
    if isinstance(src, VertexTemplate):
        return []  # instantiations register on first use (CodeletRegistry.get)
    if isinstance(src, (str, Path)):
        path = Path(src)
        if path.suffix in CPP_SUFFIXES:
            return cpp.vertex_types_from_file(path, flags)
        if path.suffix in POPC_OUTPUTS:
            raise PopsimError(f"add_codelets: {str(src)!r} is compiled IPU code (popc output), which popsim cannot "
                              f"load: pass the C++ codelet source instead, e.g. "
                              f"graph.add_codelets('{path.with_suffix('.cpp').name}') (popsim compiles it for the "
                              "host itself)")
        raise PopsimError(f"add_codelets: {str(src)!r} is not a C++ codelet file (expected one of "
                          f"{', '.join(CPP_SUFFIXES)}); pass Vertex classes, vertex templates or a module for Python "
                          "vertices")
    if isinstance(src, ModuleType):
        classes = [obj for obj in vars(src).values()
                   if inspect.isclass(obj) and python_vertex.is_vertex_class(obj) and obj.__module__ == src.__name__]
        return python_compile.vertex_types_from_classes(classes)
    if isinstance(src, (list, tuple)):
        if all(isinstance(s, (str, Path, VertexTemplate)) for s in src):
            return [vt for s in src for vt in _load(s, flags)]
        return python_compile.vertex_types_from_classes([s for s in src if not isinstance(s, VertexTemplate)])
    if inspect.isclass(src):
        return python_compile.vertex_types_from_classes([src])
    raise PopsimError(f"add_codelets takes a Vertex class, a vertex template, a list of them, a module, or a path to "
                      f"a .cpp codelet file; found {type(src).__name__}")
