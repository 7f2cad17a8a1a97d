"""Reading Poplar C++ codelet source: tokens, types, vertex classes and their fields.

Works on the preprocessed text (see cpp.py), so macros count as the compiler sees them.
Finds classes deriving from Vertex / MultiVertex / SupervisorVertex (and explicit
instantiations of class templates that do), and classifies each data member into a
FieldSpec. Types it cannot resolve itself are left to the compiler (cpp.py's glue).
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from .. import types as T
from .fields import Direction, FieldKind, FieldSpec

VERTEX_BASES = {"Vertex": False, "MultiVertex": True, "SupervisorVertex": False}
_DIRECTIONS = {"Input": Direction.INPUT, "Output": Direction.OUTPUT, "InOut": Direction.INOUT}
_SCALARS = {
    "float": T.FLOAT, "half": T.HALF, "bool": T.BOOL, "char": T.CHAR, "signed char": T.SIGNED_CHAR,
    "unsigned char": T.UNSIGNED_CHAR, "short": T.SHORT, "unsigned short": T.UNSIGNED_SHORT, "int": T.INT,
    "unsigned int": T.UNSIGNED_INT, "long long": T.LONGLONG, "unsigned long long": T.UNSIGNED_LONGLONG,
    "int8_t": T.SIGNED_CHAR, "uint8_t": T.UNSIGNED_CHAR, "int16_t": T.SHORT, "uint16_t": T.UNSIGNED_SHORT,
    "int32_t": T.INT, "uint32_t": T.UNSIGNED_INT, "int64_t": T.LONGLONG, "uint64_t": T.UNSIGNED_LONGLONG,
}
_CANONICAL = {"int8_t": "signed char", "uint8_t": "unsigned char", "int16_t": "short", "uint16_t": "unsigned short",
              "int32_t": "int", "uint32_t": "unsigned int", "int64_t": "long long", "uint64_t": "unsigned long long"}
_BUILTIN_WORDS = {"unsigned", "signed", "short", "long", "int", "char", "float", "double", "bool", "void"}
DTYPE_ORDER = (T.BOOL, T.CHAR, T.SIGNED_CHAR, T.UNSIGNED_CHAR, T.SHORT, T.UNSIGNED_SHORT, T.INT, T.UNSIGNED_INT,
                T.LONGLONG, T.UNSIGNED_LONGLONG, T.HALF, T.FLOAT)   # codelet_glue.hpp's dtype_code
VECTOR_LAYOUTS = ("NONE", "SPAN", "ONE_PTR", "SHORT_SPAN", "SCALED_PTR32", "SCALED_PTR64", "SCALED_PTR128",
                   "COMPACT_PTR", "COMPACT_DELTAN", "DELTAN", "DELTANELEMENTS")
LIST_LAYOUTS = ("NONE", "DELTAN", "DELTANELEMENTS", "COMPACT_DELTAN", "ONE_PTR", "SCALED_PTR32", "SCALED_PTR64")
KIND_CODES = {FieldKind.SCALAR_EDGE: 0, FieldKind.VECTOR_EDGE: 1, FieldKind.EDGE_VECTOR: 2,
               FieldKind.VECTOR_LIST: 3, FieldKind.STATE: 4, FieldKind.STATE_VECTOR: 5}
DIR_CODES = {Direction.NONE: 0, Direction.INPUT: 1, Direction.OUTPUT: 2, Direction.INOUT: 3}
_SKIP_MEMBER = {"using", "typedef", "static", "friend", "template", "enum", "class", "struct", "union",
                "static_assert", "virtual", "explicit", "inline", "operator", "~", "typename", "constexpr"}
_NOT_CALLS = {"decltype", "sizeof", "alignof", "alignas", "__attribute__", "__declspec", "typeof", "__typeof__"}
FIELD_HELP = ("a field must be an Input/Output/InOut edge of a Poplar element type (Input<float>), of a "
               "Vector (Input<Vector<half>>) or VectorList of one, a Vector of edges (Vector<Input<Vector<float>>>), "
               "or a plain state member of an element type or Vector of one (unsigned n; Vector<int> v;)")


class Unresolved(ValueError):
    """A type name popsim cannot resolve itself (an alias template, decltype...): the
    compiler classifies the field instead."""


class SourceError(Exception):
    """A construct popsim cannot read, at (file, line)."""

    def __init__(self, message: str, where: Tuple[str, int]):
        super().__init__(message)
        self.where = where


# ---- source

@dataclass
class Source:
    rows: List[Tuple[str, int, str]]     # (file, line, text) for lines of the user's own files
    files: List[str]                      # those files, for the cache digest


# ---- tokens ------------------------------------------------------------------------

_TOKEN = re.compile(r'''(?P<s>(?:u8|[uUL])?R"(?P<d>[^()\\\s]{0,16})\(.*?\)(?P=d)"
                     |(?:u8|[uUL])?"(?:\\.|[^"\\\n])*"|(?:u8|[uUL])?'(?:\\.|[^'\\\n])*')
                     |(?P<n>\.?\d(?:[\w.]|'(?=\w)|[eEpP][+-])*)
                     |(?P<i>[A-Za-z_$]\w*)
                     |(?P<p>::|->|\.\.\.|\S)''', re.X | re.S)


def _is_ident(tok: str) -> bool:
    return bool(tok) and (tok[0].isalpha() or tok[0] == "_")


# ---- types -------------------------------------------------------------------------

@dataclass
class _Ty:
    name: str
    args: Optional[list] = None  # of _Ty or str (expressions)

    def render(self) -> str:
        if self.args is None:
            return self.name
        return f"{self.name}<{','.join(a.render() if isinstance(a, _Ty) else a for a in self.args)}>"


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


def _angle_close(toks: List[str], i: int) -> int:
    depth = 0
    pairs = {"(": ")", "[": "]", "{": "}"}
    while i < len(toks):
        t = toks[i]
        if t in pairs:
            i = _group_close(toks, i)
        elif t == "<":
            depth += 1
        elif t == ">":
            depth -= 1
            if depth == 0:
                return i
        elif t == ";":
            break
        i += 1
    raise ValueError("unbalanced < >")


def _group_close(toks: List[str], i: int) -> int:
    stack = []
    pairs = {"(": ")", "[": "]", "{": "}"}
    while i < len(toks):
        t = toks[i]
        if t in pairs:
            stack.append(pairs[t])
        elif t in (")", "]", "}"):
            if not stack or stack.pop() != t:
                raise ValueError(f"unbalanced '{t}'")
            if not stack:
                return i
        i += 1
    raise ValueError("unbalanced brackets")


def _split_commas(toks: List[str]) -> List[List[str]]:
    parts, cur, depth, i = [], [], 0, 0
    while i < len(toks):
        t = toks[i]
        if t in ("(", "[", "{"):
            j = _group_close(toks, i)
            cur.extend(toks[i:j + 1])
            i = j + 1
            continue
        if t == "<":
            depth += 1
        elif t == ">" and depth:
            depth -= 1
        if t == "," and depth == 0:
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
        i += 1
    if cur or parts:
        parts.append(cur)
    return parts


def _top_level(toks: List[str]) -> List[str]:
    """The tokens outside any ( ) or < > group."""
    out, depth = [], 0
    for t in toks:
        if t in ("(", "<", "["):
            depth += 1
        elif t in (")", ">", "]") and depth:
            depth -= 1
        elif depth == 0:
            out.append(t)
    return out


def parse_type(toks: List[str]) -> _Ty:
    """A type from tokens (cv-qualifiers dropped); ValueError if it is not one."""
    toks = [t for t in toks if t not in ("const", "volatile", "typename", "struct", "class")]
    if not toks:
        raise ValueError("empty type")
    if toks[0] in _BUILTIN_WORDS:
        if not all(t in _BUILTIN_WORDS for t in toks):
            raise ValueError("not a type")
        return _Ty(_builtin(toks))
    i, parts, args = (1 if toks[0] == "::" else 0), [], None
    while True:
        if i >= len(toks) or not _is_ident(toks[i]):
            raise Unresolved("not a type popsim can read")
        parts.append(toks[i])
        i += 1
        if i < len(toks) and toks[i] == "<":
            j = _angle_close(toks, i)
            args = [_parse_arg(a) for a in _split_commas(toks[i + 1:j])]
            i = j + 1
        if i < len(toks) and toks[i] == "::" and args is None:
            i += 1
            continue
        break
    if i != len(toks):
        raise Unresolved("not a type popsim can read")
    return _Ty(_short_name("::".join(parts)), args)


def _parse_arg(toks: List[str]):
    try:
        return parse_type(toks)
    except ValueError:
        return render_tokens(toks)


def render_tokens(toks: List[str]) -> str:
    out = ""
    for t in toks:
        if out and (_is_ident(out[-1]) or out[-1].isdigit()) and (_is_ident(t) or t[0].isdigit()):
            out += " "
        out += t
    return out


def _scalar(ty, what: str) -> T.Type:
    if isinstance(ty, _Ty) and ty.args is None and ty.name in _SCALARS:
        return _SCALARS[ty.name]
    shown = ty.render() if isinstance(ty, _Ty) else ty
    if isinstance(ty, _Ty) and not set(ty.name.split()) <= _BUILTIN_WORDS and ty.name not in ("Vector", "VectorList"):
        raise Unresolved(shown)
    hint = " (the IPU has no double: use float)" if shown in ("double", "long double") else ""
    raise ValueError(f"{what} '{shown}' is not a Poplar element type{hint}; use one of float, half, int, unsigned int, "
                     "short, unsigned short, char, signed char, unsigned char, bool, long long, unsigned long long "
                     "or a <cstdint> name")


def _layout(ty: _Ty, default: str) -> str:
    if ty.args is None or len(ty.args) < 2:
        return default
    arg = ty.args[1]
    text = arg.name if isinstance(arg, _Ty) else arg
    return re.split(r"::", text)[-1]


def classify(name: str, ty: _Ty) -> FieldSpec:
    """The FieldSpec of a data member of type ``ty``; ValueError if popsim cannot bind it."""
    def edge(t: _Ty, inner_allowed=True):
        inner = t.args[0] if t.args else None
        if not isinstance(inner, _Ty):
            raise ValueError(f"'{t.render()}' needs an element type")
        if inner.name == "Vector" and inner.args:
            return FieldKind.VECTOR_EDGE, _scalar(inner.args[0], "element type"), _layout(inner, "SPAN")
        if inner.name == "VectorList" and inner.args and inner_allowed:
            return FieldKind.VECTOR_LIST, _scalar(inner.args[0], "element type"), _layout(inner, "DELTANELEMENTS")
        return FieldKind.SCALAR_EDGE, _scalar(inner, "element type"), ""

    if ty.name in _DIRECTIONS:
        kind, dtype, layout = edge(ty)
        return FieldSpec(name, kind, _DIRECTIONS[ty.name], dtype, None, layout)
    if ty.name == "Vector" and ty.args:
        inner = ty.args[0]
        if isinstance(inner, _Ty) and inner.name in _DIRECTIONS:
            kind, dtype, _ = edge(inner, inner_allowed=False)
            return FieldSpec(name, FieldKind.EDGE_VECTOR, _DIRECTIONS[inner.name], dtype, kind, _layout(ty, "SPAN"))
        return FieldSpec(name, FieldKind.STATE_VECTOR, Direction.NONE, _scalar(inner, "element type"), None,
                         _layout(ty, "SPAN"))
    return FieldSpec(name, FieldKind.STATE, Direction.NONE, _scalar(ty, "type"), None, "")


# ---- parsing -----------------------------------------------------------------------

@dataclass
class _Member:
    name: str
    type_toks: List[str]
    pos: int
    access: str
    problem: str = ""
    where: Tuple[str, int] = ("", 0)


@dataclass
class _Class:
    name: str
    ns: Tuple[str, ...]
    pos: int
    base: Optional[str]
    tparams: Optional[List[Tuple[str, List[str]]]] = None   # (name, default tokens)
    spec_args: Optional[List[List[str]]] = None
    members: List[_Member] = field(default_factory=list)
    aliases: Dict[str, List[str]] = field(default_factory=dict)
    compute_access: Optional[str] = None
    ctor_declared_only: bool = False
    where: Tuple[str, int] = ("", 0)


@dataclass
class _Inst:
    qual: List[str]
    args: List[List[str]]
    ns: Tuple[str, ...]
    pos: int


@dataclass
class VertexClass:
    name: str                      # as registered: "ns::X<float>"
    cls: _Class                    # the class (or specialisation) that defines it
    env: Dict[str, List[str]]      # template parameter -> argument tokens
    alias_ns: Tuple[str, ...]      # where the glue can name it ...
    cpp_type: str                  # ... and how
    symbol: str = ""
    specs: List[Optional[FieldSpec]] = field(default_factory=list)  # None: the compiler will tell
    run_constructor: bool = True


class Parser:
    def __init__(self, src: Source):
        text = "\n".join(r[2] for r in src.rows)
        starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.rows = src.rows
        self.t, self.line = [], []
        for m in _TOKEN.finditer(text):
            self.t.append(m.group(0))
            self.line.append(bisect.bisect_right(starts, m.start()) - 1)
        self.t.append("")  # sentinel
        self.classes: List[_Class] = []
        self.insts: List[_Inst] = []
        self.ns_aliases: Dict[Tuple[str, ...], Dict[str, List[str]]] = {}
        self.ctor_defined = set()
        for i in range(1, len(self.t) - 3):
            if self.t[i] == "::" and self.t[i + 2] == "(" and _is_ident(self.t[i + 1]):
                prev = self.t[i - 1]
                if prev == self.t[i + 1] or prev == ">":
                    self.ctor_defined.add(self.t[i + 1])

    def where(self, pos: int) -> Tuple[str, int]:
        """(file, line) of token ``pos``."""
        if not self.line:
            return "", 0
        fname, line, _ = self.rows[self.line[min(pos, len(self.line) - 1)]]
        return fname, line

    def fail(self, message: str, pos: int):
        raise SourceError(message, self.where(pos))

    def close(self, i: int) -> int:
        try:
            return _group_close(self.t, i)
        except ValueError as e:
            self.fail(str(e), i)

    def angle(self, i: int) -> int:
        try:
            return _angle_close(self.t, i)
        except ValueError as e:
            self.fail(str(e), i)

    def skip_attrs(self, i: int) -> int:
        while True:
            if self.t[i] == "[" and self.t[i + 1] == "[":
                i = self.close(i) + 1
            elif self.t[i] in ("alignas", "__attribute__", "__declspec") and self.t[i + 1] == "(":
                i = self.close(i + 1) + 1
            else:
                return i

    # A declaration from i: returns (end index after it, looks like a function).
    def decl_end(self, i: int, end: int) -> Tuple[int, bool]:
        typeish = self.t[i] in ("class", "struct", "union", "enum")
        seen_eq = func = ctor_init = False
        depth = 0
        while i < end:
            t = self.t[i]
            if t == "operator":
                func = True
            elif t in ("(", "["):
                if t == "(" and not seen_eq and depth == 0 and self.t[i - 1] not in _NOT_CALLS:
                    func = True
                i = self.close(i) + 1
                continue
            elif t == "{":
                c = self.close(i)
                if seen_eq or not (func or typeish) or (ctor_init and self.t[i - 1] not in (")", "}")):
                    i = c + 1
                    continue
                if typeish:
                    i = c + 1
                    continue
                return (c + 2 if self.t[c + 1] == ";" else c + 1), True
            elif t == ";":
                return i + 1, func
            elif t == "=" and not func:
                seen_eq = True
            elif t == "<" and not seen_eq:
                depth += 1
            elif t == ">" and not seen_eq and depth:
                depth -= 1
            elif t == ":" and func and not seen_eq:
                ctor_init = True
            i += 1
        return end, func

    def parse(self):
        self.scope(0, len(self.t) - 1, ())

    def scope(self, i: int, end: int, ns: Tuple[str, ...]):
        while i < end:
            i = self.skip_attrs(i)
            t = self.t[i]
            if i >= end:
                break
            if t == ";":
                i += 1
            elif t == "inline" and self.t[i + 1] == "namespace":
                i += 1
            elif t == "namespace":
                j, names = i + 1, []
                while _is_ident(self.t[j]) or self.t[j] in ("::", "inline"):
                    if _is_ident(self.t[j]) and self.t[j] != "inline":
                        names.append(self.t[j])
                    j += 1
                if self.t[j] != "{":
                    i = self.decl_end(i, end)[0]
                    continue
                c = self.close(j)
                self.scope(j + 1, c, ns + (tuple(names) or ("",)))
                i = c + 1
            elif t == "extern" and self.t[i + 1][:1] == '"' and self.t[i + 2] == "{":
                c = self.close(i + 2)
                self.scope(i + 3, c, ns)
                i = c + 1
            elif t == "template":
                i = self.template(i, end, ns)
            elif t in ("class", "struct"):
                i = self.class_decl(i, end, ns, None)
            elif t in ("using", "typedef"):
                j = self.decl_end(i, end)[0]
                self.alias(i, j, self.ns_aliases.setdefault(ns, {}))
                i = j
            else:
                j, func = self.decl_end(i, end)
                if not func:  # namespace-scope constants (layout names such as ONE_PTR)
                    self.alias(i, j, self.ns_aliases.setdefault(ns, {}), constant=True)
                i = j

    def alias(self, i: int, j: int, into: Dict[str, List[str]], constant=False):
        toks = self.t[i:j]
        if toks and toks[-1] == ";":
            toks = toks[:-1]
        if constant:
            if "=" in toks and toks.index("=") > 0 and _is_ident(toks[toks.index("=") - 1]):
                k = toks.index("=")
                into[toks[k - 1]] = toks[k + 1:]
        elif toks[:1] == ["using"] and len(toks) > 3 and _is_ident(toks[1]) and toks[2] == "=":
            into[toks[1]] = toks[3:]
        elif toks[:1] == ["typedef"] and len(toks) > 2 and _is_ident(toks[-1]):
            into[toks[-1]] = toks[1:-1]

    def template(self, i: int, end: int, ns) -> int:
        if self.t[i + 1] == "<":
            j = self.angle(i + 1)
            params = []
            for p in _split_commas(self.t[i + 2:j]):
                default = []
                if "=" in p:
                    default, p = p[p.index("=") + 1:], p[:p.index("=")]
                names = [x for x in p if _is_ident(x)]
                if names:
                    params.append((names[-1], default))
            k = self.skip_attrs(j + 1)
            if self.t[k] in ("class", "struct"):
                return self.class_decl(k, end, ns, params)
            return self.decl_end(k, end)[0]
        if self.t[i + 1] in ("class", "struct"):
            j = self.decl_end(i, end)[0]
            toks = self.t[i + 2:j - 1]
            if "<" in toks:
                k = toks.index("<")
                close = _angle_close(toks, k)
                self.insts.append(_Inst(toks[:k], _split_commas(toks[k + 1:close]), ns, i))
            return j
        return self.decl_end(i, end)[0]

    def class_decl(self, i: int, end: int, ns, tparams) -> int:
        start = i
        key = self.t[i]
        i = self.skip_attrs(i + 1)
        if not _is_ident(self.t[i]):
            return self.decl_end(start, end)[0]
        name, pos = self.t[i], i
        i += 1
        while self.t[i] == "::" and _is_ident(self.t[i + 1]):
            name, i = self.t[i + 1], i + 2
        spec = None
        if self.t[i] == "<":
            j = self.angle(i)
            spec, i = _split_commas(self.t[i + 1:j]), j + 1
        if self.t[i] == "final":
            i += 1
        if self.t[i] not in (":", "{"):
            return self.decl_end(start, end)[0]
        j = i
        while self.t[j] != "{" and j < end:
            j = self.angle(j) + 1 if self.t[j] == "<" else (self.close(j) + 1 if self.t[j] == "(" else j + 1)
        base = self._vertex_base(self.t[i + 1:j]) if self.t[i] == ":" else None
        c = self.close(j)
        cls = _Class(name, ns, pos, base, tparams, spec, where=self.where(pos))
        if base is not None or tparams is not None or spec is not None:
            self.classes.append(cls)
        if base is not None:
            self.members(j + 1, c, cls, "public" if key == "struct" else "private")
        i = c + 1
        return i + 1 if self.t[i] == ";" else self.decl_end(i, end)[0]

    @staticmethod
    def _vertex_base(toks: List[str]) -> Optional[str]:
        for part in _split_commas(toks):
            part = [t for t in part if t not in ("public", "protected", "private", "virtual")]
            if part[:1] == ["::"]:
                part = part[1:]
            if part[:2] == ["poplar", "::"]:
                part = part[2:]
            if len(part) == 1 and part[0] in VERTEX_BASES:
                return part[0]
            if part[:2] == ["SupervisorVertexIf", "<"]:
                return "SupervisorVertex"
        return None

    def members(self, i: int, end: int, cls: _Class, access: str):
        while i < end:
            i = self.skip_attrs(i)
            t = self.t[i]
            if i >= end:
                break
            if t in ("public", "private", "protected") and self.t[i + 1] == ":":
                access, i = t, i + 2
                continue
            if t == ";":
                i += 1
                continue
            j, func = self.decl_end(i, end)
            toks = self.t[i:j]
            if t in ("using", "typedef"):
                self.alias(i, j, cls.aliases)
            elif func:
                k = toks.index("(") if "(" in toks else 0
                fname = toks[k - 1] if k else ""
                if fname == "compute":
                    cls.compute_access = access
                elif fname == cls.name and toks[0] != "~":
                    c = _group_close(toks, k)
                    if toks[k + 1:c] in ([], ["void"]) and toks[c + 1:c + 2] == [";"]:
                        cls.ctor_declared_only = True
            elif t not in _SKIP_MEMBER and "static" not in toks:
                self.data_members(i, toks[:-1] if toks[-1] == ";" else toks, cls, access)
            i = j

    def data_members(self, i: int, toks: List[str], cls: _Class, access: str):
        base_type: List[str] = []
        start = 0
        for n, piece in enumerate(_split_commas(toks)):
            cut = next((k for k, x in enumerate(piece) if x in ("=", "{")), len(piece))
            decl, problem = piece[:cut], ""
            if "[" in decl:
                problem, decl = "arrays cannot be fields (use a Vector)", decl[:decl.index("[")]
            if ":" in decl:
                problem, decl = "bit-fields cannot be fields", decl[:decl.index(":")]
            names = [k for k, x in enumerate(decl) if _is_ident(x)]
            if not names:
                self.fail(f"cannot read the member declaration '{render_tokens(toks)}' of class {cls.name}", i + start)
            k = names[-1]
            if any(x in ("*", "&", "&&") for x in _top_level(decl[:k])):
                problem = problem or "pointers and references cannot be fields"
            if n == 0:
                base_type = [x for x in decl[:k] if x not in ("*", "&", "&&", "mutable")]
            pos = i + start + k
            cls.members.append(_Member(decl[k], base_type, pos, access, problem, self.where(pos)))
            start += len(piece) + 1


# ---- from classes to vertices ------------------------------------------------------

def expand(toks: List[str], scopes: List[Dict[str, List[str]]], depth: int = 0) -> List[str]:
    """Substitute template parameters and aliases (innermost scope first)."""
    out = []
    for n, tok in enumerate(toks):
        if _is_ident(tok) and (n == 0 or toks[n - 1] not in ("::", ".", "->")) and depth < 16:
            rep = next((s[tok] for s in scopes if tok in s), None)
            if rep is not None:
                out.extend(expand(rep, scopes, depth + 1))
                continue
        out.append(tok)
    return out


def ns_scopes(p: Parser, ns: Tuple[str, ...]) -> List[Dict[str, List[str]]]:
    return [p.ns_aliases.get(ns[:k], {}) for k in range(len(ns), -1, -1)]


def vertex_classes(p: Parser) -> List[VertexClass]:
    out: List[Tuple[int, VertexClass]] = []
    for cls in p.classes:
        if cls.base and cls.tparams is None and cls.spec_args is None:
            out.append((cls.pos, VertexClass(_qualified(cls.ns, cls.name), cls, {}, cls.ns, cls.name)))
    templates: Dict[str, List[_Class]] = {}
    for cls in p.classes:
        templates.setdefault(cls.name, []).append(cls)
    seen = {v.name for _, v in out}
    for inst in p.insts:
        qual = [x for x in inst.qual if x != "::"]
        rooted = inst.qual[:1] == ["::"]
        here = named(inst.ns)
        primary = None
        for k in ([0] if rooted else range(len(here), -1, -1)):
            target = here[:k] + tuple(qual[:-1])
            primary = next((c for c in templates.get(qual[-1], []) if c.tparams is not None and c.spec_args is None
                            and named(c.ns) == target), None)
            if primary:
                break
        if primary is None:  # e.g. reached through a using-directive: accept a unique match
            found = [c for c in templates.get(qual[-1], []) if c.tparams is not None and c.spec_args is None
                     and named(c.ns)[len(named(c.ns)) - len(qual) + 1:] == tuple(qual[:-1])
                     and len(named(c.ns)) >= len(qual) - 1]
            primary = found[0] if len(found) == 1 else None
        if primary is None:
            continue
        inst_scopes = ns_scopes(p, inst.ns)
        args = [expand(a, inst_scopes) for a in inst.args]
        written = [_parse_arg(a) for a in args]
        names = [a.render() if isinstance(a, _Ty) else a for a in written]
        full = list(args)
        for _, default in primary.tparams[len(full):]:
            full.append(expand(default, [dict(zip([n for n, _ in primary.tparams], full))] + ns_scopes(p, primary.ns)))
        cls, env = _specialisation(templates[qual[-1]], primary, full)
        if not cls.base:
            continue
        vname = _qualified(primary.ns, primary.name) + f"<{','.join(names)}>"
        if vname in seen:
            continue
        seen.add(vname)
        cpp = " ".join(inst.qual) + " < " + " , ".join(" ".join(a) for a in inst.args) + " >"
        out.append((inst.pos, VertexClass(vname, cls, env, inst.ns, cpp)))
    return [v for _, v in sorted(out, key=lambda pv: pv[0])]


def _specialisation(candidates: List[_Class], primary: _Class, args: List[List[str]]):
    canon = [_parse_arg(a) for a in args]
    keys = [c.render() if isinstance(c, _Ty) else c for c in canon]
    best, best_score = (primary, {n: a for (n, _), a in zip(primary.tparams, args)}), -1
    for cls in candidates:
        if cls.spec_args is None or cls.ns != primary.ns or len(cls.spec_args) != len(args):
            continue
        params = {n for n, _ in (cls.tparams or [])}
        env, score = {}, 0
        for spec, arg, key in zip(cls.spec_args, args, keys):
            if len(spec) == 1 and spec[0] in params:
                if env.setdefault(spec[0], arg) != arg:
                    break
                continue
            parsed = _parse_arg(spec)
            if (parsed.render() if isinstance(parsed, _Ty) else parsed) != key:
                break
            score += 1
        else:
            if score > best_score:
                best, best_score = (cls, env), score
    return best


def named(ns: Tuple[str, ...]) -> Tuple[str, ...]:
    return tuple(x for x in ns if x)  # anonymous namespaces are transparent to names


def _qualified(ns: Tuple[str, ...], name: str) -> str:
    return "::".join([x for x in ns if x] + [name])


