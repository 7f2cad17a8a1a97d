"""C++ types in codelet files: reading a type from tokens, and classifying a vertex class's
data member (Input<Vector<float>>, unsigned n, ...) into the FieldSpec popsim binds.
Types it cannot resolve itself raise Unresolved: the compiler classifies those fields
(codelet_glue.hpp's field_info)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional

from .. import types as T
from .cpp_tokens import angle_close, is_ident, render_tokens, split_commas
from .fields import Direction, FieldKind, FieldSpec

DIRECTIONS = {"Input": Direction.INPUT, "Output": Direction.OUTPUT, "InOut": Direction.INOUT}
# Poplar's element types by their C++ spelling, and the <cstdint> names for them (not QUARTER:
# popsim's C++ codelet headers have no quarter type; its vertices are Python ones).
_SCALARS = {**{t.cpp: t for t in T.ALL_TYPES if not t.opaque},
            "int8_t": T.SIGNED_CHAR, "uint8_t": T.UNSIGNED_CHAR, "int16_t": T.SHORT, "uint16_t": T.UNSIGNED_SHORT,
            "int32_t": T.INT, "uint32_t": T.UNSIGNED_INT, "int64_t": T.LONGLONG, "uint64_t": T.UNSIGNED_LONGLONG}
_CANONICAL = {"int8_t": "signed char", "uint8_t": "unsigned char", "int16_t": "short", "uint16_t": "unsigned short",
              "int32_t": "int", "uint32_t": "unsigned int", "int64_t": "long long", "uint64_t": "unsigned long long"}
BUILTIN_WORDS = {"unsigned", "signed", "short", "long", "int", "char", "float", "double", "bool", "void"}
DTYPE_ORDER = (T.BOOL, T.CHAR, T.SIGNED_CHAR, T.UNSIGNED_CHAR, T.SHORT, T.UNSIGNED_SHORT, T.INT, T.UNSIGNED_INT,
                T.LONGLONG, T.UNSIGNED_LONGLONG, T.HALF, T.FLOAT)   # codelet_glue.hpp's dtype_code
VECTOR_LAYOUTS = ("NONE", "SPAN", "ONE_PTR", "SHORT_SPAN", "SCALED_PTR32", "SCALED_PTR64", "SCALED_PTR128",
                   "COMPACT_PTR", "COMPACT_DELTAN", "DELTAN", "DELTANELEMENTS")
LIST_LAYOUTS = ("NONE", "DELTAN", "DELTANELEMENTS", "COMPACT_DELTAN", "ONE_PTR", "SCALED_PTR32", "SCALED_PTR64")
KIND_CODES = {FieldKind.SCALAR_EDGE: 0, FieldKind.VECTOR_EDGE: 1, FieldKind.EDGE_VECTOR: 2,
               FieldKind.VECTOR_LIST: 3, FieldKind.STATE: 4, FieldKind.STATE_VECTOR: 5}
DIR_CODES = {Direction.NONE: 0, Direction.INPUT: 1, Direction.OUTPUT: 2, Direction.INOUT: 3}
FIELD_HELP = ("a field must be an Input/Output/InOut edge of a Poplar element type (Input<float>), of a "
               "Vector (Input<Vector<half>>) or VectorList of one, a Vector of edges (Vector<Input<Vector<float>>>), "
               "or a plain state member of an element type or Vector of one (unsigned n; Vector<int> v;)")


class Unresolved(ValueError):
    """A type name popsim cannot resolve itself (an alias template, decltype...): the
    compiler classifies the field instead."""


@dataclass
class CppType:
    name: str
    args: Optional[list] = None  # of CppType or str (expressions)

    def render(self) -> str:
        if self.args is None:
            return self.name
        return f"{self.name}<{','.join(a.render() if isinstance(a, CppType) else a for a in self.args)}>"


def _builtin(words: List[str]) -> str:
    core = [w for w in words if w not in ("signed", "unsigned", "int")]
    uns = "unsigned" in words
    longs = core.count("long")
    if "char" in core:
        return "unsigned char" if uns else ("signed char" if "signed" in words else "char")
    if "short" in core:
        return "unsigned short" if uns else "short"
    if longs == 2:
        return "unsigned long long" if uns else "long long"
    if longs == 1:
        return "long double" if "double" in core else ("unsigned long" if uns else "long")
    if core:
        return " ".join(core)
    return "unsigned int" if uns else "int"


def _short_name(name: str) -> str:
    for prefix in ("::", "poplar::", "std::"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    return _CANONICAL.get(name, name)


def parse_type(toks: List[str]) -> CppType:
    """A type from tokens (cv-qualifiers dropped); ValueError if it is not one."""
    toks = [t for t in toks if t not in ("const", "volatile", "typename", "struct", "class")]
    if not toks:
        raise ValueError("empty type")
    if toks[0] in BUILTIN_WORDS:
        if not all(t in BUILTIN_WORDS for t in toks):
            raise ValueError("not a type")
        return CppType(_builtin(toks))
    i, parts, args = (1 if toks[0] == "::" else 0), [], None
    while True:
        if i >= len(toks) or not is_ident(toks[i]):
            raise Unresolved("not a type popsim can read")
        parts.append(toks[i])
        i += 1
        if i < len(toks) and toks[i] == "<":
            j = angle_close(toks, i)
            args = [parse_arg(a) for a in split_commas(toks[i + 1:j])]
            i = j + 1
        if i < len(toks) and toks[i] == "::" and args is None:
            i += 1
            continue
        break
    if i != len(toks):
        raise Unresolved("not a type popsim can read")
    return CppType(_short_name("::".join(parts)), args)


def parse_arg(toks: List[str]):
    try:
        return parse_type(toks)
    except ValueError:
        return render_tokens(toks)


def _scalar(ty, what: str) -> T.Type:
    if isinstance(ty, CppType) and ty.args is None and ty.name in _SCALARS:
        return _SCALARS[ty.name]
    shown = ty.render() if isinstance(ty, CppType) else ty
    if (isinstance(ty, CppType) and not set(ty.name.split()) <= BUILTIN_WORDS
            and ty.name not in ("Vector", "VectorList")):
        raise Unresolved(shown)
    hint = " (the IPU has no double: use float)" if shown in ("double", "long double") else ""
    raise ValueError(f"{what} '{shown}' is not a Poplar element type{hint}; use one of float, half, int, unsigned int, "
                     "short, unsigned short, char, signed char, unsigned char, bool, long long, unsigned long long "
                     "or a <cstdint> name")


def _layout(ty: CppType, default: str) -> str:
    if ty.args is None or len(ty.args) < 2:
        return default
    arg = ty.args[1]
    text = arg.name if isinstance(arg, CppType) else arg
    return re.split(r"::", text)[-1]


def classify(name: str, ty: CppType) -> FieldSpec:
    """The FieldSpec of a data member of type ``ty``; ValueError if popsim cannot bind it."""
    def edge(t: CppType, inner_allowed=True):
        inner = t.args[0] if t.args else None
        if not isinstance(inner, CppType):
            raise ValueError(f"'{t.render()}' needs an element type")
        if inner.name == "Vector" and inner.args:
            return FieldKind.VECTOR_EDGE, _scalar(inner.args[0], "element type"), _layout(inner, "SPAN")
        if inner.name == "VectorList" and inner.args and inner_allowed:
            return FieldKind.VECTOR_LIST, _scalar(inner.args[0], "element type"), _layout(inner, "DELTANELEMENTS")
        return FieldKind.SCALAR_EDGE, _scalar(inner, "element type"), ""

    if ty.name in DIRECTIONS:
        kind, dtype, layout = edge(ty)
        return FieldSpec(name, kind, DIRECTIONS[ty.name], dtype, None, layout)
    if ty.name == "Vector" and ty.args:
        inner = ty.args[0]
        if isinstance(inner, CppType) and inner.name in DIRECTIONS:
            kind, dtype, _ = edge(inner, inner_allowed=False)
            return FieldSpec(name, FieldKind.EDGE_VECTOR, DIRECTIONS[inner.name], dtype, kind, _layout(ty, "SPAN"))
        return FieldSpec(name, FieldKind.STATE_VECTOR, Direction.NONE, _scalar(inner, "element type"), None,
                         _layout(ty, "SPAN"))
    return FieldSpec(name, FieldKind.STATE, Direction.NONE, _scalar(ty, "type"), None, "")
