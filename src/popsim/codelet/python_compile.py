"""Python vertex classes -> vertex types: each class is translated once per process
(translate.py) and the classes of one call are compiled together into one shared
library, or taken from the prebuilt tier (prebuilt.py); a class compiled once is shared
by every graph that adds it. The classes themselves, their fields and markers, are
python_vertex.py's.
"""
from __future__ import annotations

import inspect
import threading
from typing import Dict, List, cast

from .. import errors
from ..errors import CodeletSyntaxError
from . import prebuilt
from .python_vertex import MultiVertex, fields_of, is_vertex_class, vertex_name
from .translate import compile_flags, compile_translations, translate_class
from .vertex_type import VertexType

__all__ = ["translation_of", "vertex_types_from_classes"]

_translations: Dict[type, object] = {}
_compiled: Dict[type, VertexType] = {}  # a class's vertex type once compiled, shared by every graph
_lock = threading.Lock()


def translation_of(cls):
    """The (cached) translation of one class: translate.Translation."""
    with _lock:
        t = _translations.get(cls)
    if t is None:
        fields, attrs = fields_of(cls)
        t = translate_class(cls, vertex_name(cls), fields, attrs, issubclass(cls, MultiVertex))
        with _lock:
            _translations[cls] = t
    return t


def vertex_types_from_classes(classes) -> List[VertexType]:
    """Translate Vertex classes to C and compile them into one shared library (those the
    prebuilt tier holds, codelet/prebuilt.py, are taken from it); one VertexType per class,
    in the order given."""
    classes = list(classes)
    for c in classes:
        if not is_vertex_class(c):
            what = c.__name__ if inspect.isclass(c) else type(c).__name__
            raise errors.TypeError(f"add_codelets: {what} is not a popsim.Vertex or popsim.MultiVertex subclass with a "
                            "compute method")
    unique = list(dict.fromkeys(classes))
    translations = [translation_of(c) for c in unique]
    seen: Dict[str, type] = {}
    for c, t in zip(unique, translations):
        if t.name in seen:
            raise CodeletSyntaxError(f"vertex classes {seen[t.name].__qualname__} and {c.__qualname__} are both "
                                     f"named '{t.name}': set vertex_name on one of them")
        seen[t.name] = c
    if not translations:
        return []
    with _lock:
        known = [_compiled.get(c) for c in unique]
    if all(vt is not None for vt in known):  # every class already compiled (in any graph): reuse
        return cast(List[VertexType], known)
    libraries = _prebuilt_libraries(translations)
    missing = [t for t, lib in zip(translations, libraries) if lib is None]
    if missing:  # compiled together into one library (the user cache's); a user's vertices say so
        users = any(not c.__module__.startswith("popsim.") for c, lib in zip(unique, libraries) if lib is None)
        library = compile_translations(missing, announce=users)
        libraries = [library if lib is None else lib for lib in libraries]
    out = []
    for c, t, library in zip(unique, translations, libraries):
        out.append(VertexType(
            name=t.name, fields=t.fields, multi=t.multi, library=library, symbol=t.symbol,
            state_size=16 * len(t.fields), source=f"{t.function.filename}:{t.function.line}",
            counts_cycles=True, python_class=c, language="python",
            extra={"c_source": t.c_code, "checked": True, "attrs": t.attrs}))
    with _lock:
        _compiled.update(zip(unique, out))
    return out


def _prebuilt_libraries(translations) -> list:
    """For each translation, the prebuilt library (codelet/prebuilt.py) that defines it,
    or None."""
    flags = compile_flags(True)
    return [prebuilt.python_library(t.symbol, t.c_code, flags) for t in translations]
