"""Reading the declarations of a Poplar C++ codelet file: namespaces, classes deriving
from Vertex / MultiVertex / SupervisorVertex (and class templates, their
specialisations and explicit instantiations), their data members and aliases.

Works on the preprocessed text (see cpp.py), so macros count as the compiler sees them.
Which classes become vertex types, and under which names, is cpp_vertices.py.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Dict, List, NoReturn, Optional, Tuple

from .cpp_tokens import TOKEN, angle_close, group_close, is_ident, render_tokens, split_commas, top_level

VERTEX_BASES = {"Vertex": False, "MultiVertex": True, "SupervisorVertex": False}
_SKIP_MEMBER = {"using", "typedef", "static", "friend", "template", "enum", "class", "struct", "union",
                "static_assert", "virtual", "explicit", "inline", "operator", "~", "typename", "constexpr"}
_NOT_CALLS = {"decltype", "sizeof", "alignof", "alignas", "__attribute__", "__declspec", "typeof", "__typeof__"}


class SourceError(Exception):
    """A construct popsim cannot read, at (file, line)."""

    def __init__(self, message: str, where: Tuple[str, int]):
        super().__init__(message)
        self.where = where


@dataclass
class Source:
    rows: List[Tuple[str, int, str]]     # (file, line, text) for lines of the user's own files
    files: List[str]                      # those files, for the cache digest


@dataclass
class Member:
    name: str
    type_toks: List[str]
    pos: int
    access: str
    problem: str = ""
    where: Tuple[str, int] = ("", 0)


@dataclass
class ClassDecl:
    name: str
    ns: Tuple[str, ...]
    pos: int
    base: Optional[str]
    tparams: Optional[List[Tuple[str, List[str]]]] = None   # (name, default tokens)
    spec_args: Optional[List[List[str]]] = None
    members: List[Member] = field(default_factory=list)
    aliases: Dict[str, List[str]] = field(default_factory=dict)
    compute_access: Optional[str] = None
    ctor_declared_only: bool = False
    where: Tuple[str, int] = ("", 0)


@dataclass
class EnumDecl:
    """A scoped enumeration (enum class) at namespace scope: its enumerators name
    template arguments (popops::expr::BinaryOpType::ADD)."""
    name: str
    ns: Tuple[str, ...]
    enumerators: List[str]


@dataclass
class Instantiation:
    qual: List[str]
    args: List[List[str]]
    ns: Tuple[str, ...]
    pos: int


@dataclass

class Parser:
    def __init__(self, src: Source):
        text = "\n".join(r[2] for r in src.rows)
        starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.rows = src.rows
        self.t, self.line = [], []
        for m in TOKEN.finditer(text):
            self.t.append(m.group(0))
            self.line.append(bisect.bisect_right(starts, m.start()) - 1)
        self.t.append("")  # sentinel
        self.classes: List[ClassDecl] = []
        self.insts: List[Instantiation] = []
        self.enums: List[EnumDecl] = []
        self.ns_aliases: Dict[Tuple[str, ...], Dict[str, List[str]]] = {}
        self.ctor_defined = set()
        for i in range(1, len(self.t) - 3):
            if self.t[i] == "::" and self.t[i + 2] == "(" and is_ident(self.t[i + 1]):
                prev = self.t[i - 1]
                if prev == self.t[i + 1] or prev == ">":
                    self.ctor_defined.add(self.t[i + 1])

    def where(self, pos: int) -> Tuple[str, int]:
        """(file, line) of token ``pos``."""
        if not self.line:
            return "", 0
        fname, line, _ = self.rows[self.line[min(pos, len(self.line) - 1)]]
        return fname, line

    def fail(self, message: str, pos: int) -> NoReturn:
        raise SourceError(message, self.where(pos))

    def close(self, i: int) -> int:
        try:
            return group_close(self.t, i)
        except ValueError as e:
            self.fail(str(e), i)

    def angle(self, i: int) -> int:
        try:
            return angle_close(self.t, i)
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
                while is_ident(self.t[j]) or self.t[j] in ("::", "inline"):
                    if is_ident(self.t[j]) and self.t[j] != "inline":
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
            elif t == "enum" and self.t[i + 1] in ("class", "struct"):
                j = self.decl_end(i, end)[0]
                self.enum_decl(i, j, ns)
                i = j
            elif t in ("using", "typedef"):
                j = self.decl_end(i, end)[0]
                self.alias(i, j, self.ns_aliases.setdefault(ns, {}))
                i = j
            else:
                j, func = self.decl_end(i, end)
                if not func:  # namespace-scope constants (layout names such as ONE_PTR)
                    self.alias(i, j, self.ns_aliases.setdefault(ns, {}), constant=True)
                i = j

    def enum_decl(self, i: int, j: int, ns: Tuple[str, ...]):
        k = self.skip_attrs(i + 2)
        if not is_ident(self.t[k]):
            return
        name = self.t[k]
        while k < j and self.t[k] != "{":
            k += 1
        if k >= j:
            return  # an opaque declaration: the enumerators come with the definition
        body = self.t[k + 1:self.close(k)]
        enumerators = [part[0] for part in split_commas(body) if part and is_ident(part[0])]
        self.enums.append(EnumDecl(name, ns, enumerators))

    def alias(self, i: int, j: int, into: Dict[str, List[str]], constant=False):
        toks = self.t[i:j]
        if toks and toks[-1] == ";":
            toks = toks[:-1]
        if constant:
            if "=" in toks and toks.index("=") > 0 and is_ident(toks[toks.index("=") - 1]):
                k = toks.index("=")
                into[toks[k - 1]] = toks[k + 1:]
        elif toks[:1] == ["using"] and len(toks) > 3 and is_ident(toks[1]) and toks[2] == "=":
            into[toks[1]] = toks[3:]
        elif toks[:1] == ["typedef"] and len(toks) > 2 and is_ident(toks[-1]):
            into[toks[-1]] = toks[1:-1]

    def template(self, i: int, end: int, ns) -> int:
        if self.t[i + 1] == "<":
            j = self.angle(i + 1)
            params = []
            for p in split_commas(self.t[i + 2:j]):
                default = []
                if "=" in p:
                    default, p = p[p.index("=") + 1:], p[:p.index("=")]
                names = [x for x in p if is_ident(x)]
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
                close = angle_close(toks, k)
                self.insts.append(Instantiation(toks[:k], split_commas(toks[k + 1:close]), ns, i))
            return j
        return self.decl_end(i, end)[0]

    def class_decl(self, i: int, end: int, ns, tparams) -> int:
        start = i
        key = self.t[i]
        i = self.skip_attrs(i + 1)
        if not is_ident(self.t[i]):
            return self.decl_end(start, end)[0]
        name, pos = self.t[i], i
        i += 1
        while self.t[i] == "::" and is_ident(self.t[i + 1]):
            name, i = self.t[i + 1], i + 2
        spec = None
        if self.t[i] == "<":
            j = self.angle(i)
            spec, i = split_commas(self.t[i + 1:j]), j + 1
        if self.t[i] == "final":
            i += 1
        if self.t[i] not in (":", "{"):
            return self.decl_end(start, end)[0]
        j = i
        while self.t[j] != "{" and j < end:
            j = self.angle(j) + 1 if self.t[j] == "<" else (self.close(j) + 1 if self.t[j] == "(" else j + 1)
        base = self._vertex_base(self.t[i + 1:j]) if self.t[i] == ":" else None
        c = self.close(j)
        cls = ClassDecl(name, ns, pos, base, tparams, spec, where=self.where(pos))
        if base is not None or tparams is not None or spec is not None:
            self.classes.append(cls)
        if base is not None:
            self.members(j + 1, c, cls, "public" if key == "struct" else "private")
        i = c + 1
        return i + 1 if self.t[i] == ";" else self.decl_end(i, end)[0]

    @staticmethod
    def _vertex_base(toks: List[str]) -> Optional[str]:
        for part in split_commas(toks):
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

    def members(self, i: int, end: int, cls: ClassDecl, access: str):
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
                    c = group_close(toks, k)
                    if toks[k + 1:c] in ([], ["void"]) and toks[c + 1:c + 2] == [";"]:
                        cls.ctor_declared_only = True
            elif t not in _SKIP_MEMBER and "static" not in toks:
                self.data_members(i, toks[:-1] if toks[-1] == ";" else toks, cls, access)
            i = j

    def data_members(self, i: int, toks: List[str], cls: ClassDecl, access: str):
        base_type: List[str] = []
        start = 0
        for n, piece in enumerate(split_commas(toks)):
            cut = next((k for k, x in enumerate(piece) if x in ("=", "{")), len(piece))
            decl, problem = piece[:cut], ""
            if "[" in decl:
                problem, decl = "arrays cannot be fields (use a Vector)", decl[:decl.index("[")]
            if ":" in decl:
                problem, decl = "bit-fields cannot be fields", decl[:decl.index(":")]
            names = [k for k, x in enumerate(decl) if is_ident(x)]
            if not names:
                self.fail(f"cannot read the member declaration '{render_tokens(toks)}' of class {cls.name}", i + start)
            k = names[-1]
            if any(x in ("*", "&", "&&") for x in top_level(decl[:k])):
                problem = problem or "pointers and references cannot be fields"
            if n == 0:
                base_type = [x for x in decl[:k] if x not in ("*", "&", "&&", "mutable")]
            pos = i + start + k
            cls.members.append(Member(decl[k], base_type, pos, access, problem, self.where(pos)))
            start += len(piece) + 1
