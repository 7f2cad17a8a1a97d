"""Which classes of a codelet file are vertex types, and their registered names: plain
vertex classes by their qualified name, class templates through their explicit
instantiations ("ns::X<float>", element types spelled as Poplar spells them), with
template parameters and aliases substituted so that each field's type can be read."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from .cpp_parse import Parser, ClassDecl
from .cpp_types import CppType, parse_arg
from .cpp_tokens import is_ident
from .fields import FieldSpec


@dataclass
class VertexClass:
    name: str                      # as registered: "ns::X<float>"
    cls: ClassDecl                    # the class (or specialisation) that defines it
    env: Dict[str, List[str]]      # template parameter -> argument tokens
    alias_ns: Tuple[str, ...]      # where the glue can name it ...
    cpp_type: str                  # ... and how
    symbol: str = ""
    specs: List[Optional[FieldSpec]] = field(default_factory=list)  # None: the compiler will tell
    run_constructor: bool = True


def expand(toks: List[str], scopes: List[Dict[str, List[str]]], depth: int = 0) -> List[str]:
    """Substitute template parameters and aliases (innermost scope first)."""
    out = []
    for n, tok in enumerate(toks):
        if is_ident(tok) and (n == 0 or toks[n - 1] not in ("::", ".", "->")) and depth < 16:
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
    templates: Dict[str, List[ClassDecl]] = {}
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
        assert primary.tparams is not None  # a primary template (found above by its tparams)
        inst_scopes = ns_scopes(p, inst.ns)
        args = [expand(a, inst_scopes) for a in inst.args]
        written = [parse_arg(a) for a in args]
        names = [_qualified_enumerator(p, inst.ns, a) or (a.render() if isinstance(a, CppType) else a)
                 for a in written]
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


def _qualified_enumerator(p: Parser, ns: Tuple[str, ...], arg) -> Optional[str]:
    """An enumerator of a scoped enum written as a template argument, qualified as popc
    names it in the vertex name (``expr::BinaryOpType::ADD`` written in namespace popops
    is ``popops::expr::BinaryOpType::ADD``, as poputil::templateVertex spells PopLibs' op
    types); None when ``arg`` is not one."""
    if not isinstance(arg, CppType) or arg.args is not None or "::" not in arg.name:
        return None
    *path, enumerator = arg.name.split("::")
    if not path or not path[0]:
        return None
    scope = named(ns)
    candidates = [e for e in p.enums if e.name == path[-1] and enumerator in e.enumerators]
    for k in range(len(scope), -1, -1):  # the innermost enclosing namespace first, as C++ looks it up
        for e in candidates:
            if named(e.ns) == scope[:k] + tuple(path[:-1]):
                return "::".join([*named(e.ns), e.name, enumerator])
    suffix = [e for e in candidates if named(e.ns)[len(named(e.ns)) - len(path) + 1:] == tuple(path[:-1])]
    if len(suffix) == 1:  # reached through a using-directive
        return "::".join([*named(suffix[0].ns), suffix[0].name, enumerator])
    return None


def _specialisation(candidates: List[ClassDecl], primary: ClassDecl, args: List[List[str]]):
    canon = [parse_arg(a) for a in args]
    keys = [c.render() if isinstance(c, CppType) else c for c in canon]
    assert primary.tparams is not None  # a primary template
    best, best_score = (primary, {n: a for (n, _), a in zip(primary.tparams, args)}), -1
    for cls in candidates:
        if cls.spec_args is None or cls.ns != primary.ns or len(cls.spec_args) != len(args):
            continue
        params = {n for n, _ in (cls.tparams or [])}
        env: Dict[str, List[str]] = {}
        score = 0
        for spec, arg, key in zip(cls.spec_args, args, keys):
            if len(spec) == 1 and spec[0] in params:
                if env.setdefault(spec[0], arg) != arg:
                    break
                continue
            parsed = parse_arg(spec)
            if (parsed.render() if isinstance(parsed, CppType) else parsed) != key:
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
