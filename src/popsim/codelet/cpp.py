"""Poplar C++ codelet files -> vertex types.

A codelet file is compiled unmodified with the host C++ compiler against the headers
popsim ships (include/: <poplar/Vertex.hpp>, <poplar/HalfFloat.hpp>, <print.h>...), with
``__POPC__`` and ``__POPSIM__`` defined and ``__IPU__`` not. popsim reads the file (after
the preprocessor, so macros and ``#ifdef`` blocks count as the compiler sees them) to
find the vertex classes and their fields, then compiles a glue translation unit that
``#include``s the file and defines the ABI of popsim_codelet.h for each vertex type (its
executable spec is popsim/codelet/abi.py, which the C++ codelet tests run vertices through).

What counts as a vertex type: a class or struct deriving directly from ``Vertex``,
``MultiVertex`` or ``SupervisorVertex`` (also ``SupervisorVertexIf<...>``), with or without
``poplar::``, in any namespace; a class template only through its explicit
instantiations (``template class X<float>;`` registers "X<float>", in a namespace
"ns::X<float>"; element types in the name are spelled as Poplar spells them: "unsigned
int", "half"...). Fields are the class's non-static data members in declaration order.
Members may be private: the glue reaches them through pointers to members taken in an
explicit instantiation, where C++ does not check access.

The glue checks with static_assert that the compiler sees each field as popsim read it,
so a misread can only fail to compile, never bind the wrong thing.
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple, cast

from .. import config
from ..cachedir import is_verified
from ..errors import CodeletCompileError, CodeletSyntaxError
from . import compiler, diagnostics
from ..types import as_type
from .fields import Direction, FieldKind, FieldSpec
from .vertex_type import VertexType
from .cpp_parse import VERTEX_BASES, Parser, Source, SourceError
from .cpp_tokens import render_tokens
from .cpp_types import (DIR_CODES, DTYPE_ORDER, FIELD_HELP, KIND_CODES, LIST_LAYOUTS, VECTOR_LAYOUTS, Unresolved,
                        classify, parse_type)
from .cpp_vertices import VertexClass, expand, named, ns_scopes, vertex_classes

_DEFINES = ["-D__POPC__", "-D__POPSIM__=1"]


# ---- preprocessing -----------------------------------------------------------------

_MARKER = re.compile(r'^# (\d+) "((?:[^"\\]|\\.)*)"((?: \d+)*)\s*$')


def _preprocess(real: Path, shown: Path, flags: List[str]) -> Source:
    include = str(compiler.INCLUDE_DIR)
    text = _run_compiler(real, shown, flags, "-E")
    rows, files, keep, fname, line = [], [], False, "", 0
    for raw in text.split("\n"):
        m = _MARKER.match(raw)
        if m:
            line, fname = int(m.group(1)), m.group(2).replace('\\"', '"').replace("\\\\", "\\")
            keep = ("3" not in m.group(3).split() and not fname.startswith("<")
                    and not os.path.realpath(fname).startswith(include + os.sep))
            if keep and fname not in files:
                files.append(fname)
            continue
        if keep:
            rows.append((fname, line, "" if raw.lstrip().startswith("#") else raw))
        line += 1
    return Source(rows, files)


def _cstr(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _open_ns(ns: Tuple[str, ...]) -> Tuple[str, str]:
    return "".join(f"namespace {n} {{ " for n in ns), "}" * len(ns)


def _glue(path: Path, digest: str, vertices: List[VertexClass]) -> str:
    """The translation unit that includes the codelet file and defines each vertex
    type's ABI functions (popsim_codelet.h) from codelet_glue.hpp's templates."""
    out = [f"// popsim glue for {path.name} (dependencies {digest})",
           f"#include {_cstr(str(path))}", "#include <popsim/codelet_glue.hpp>", ""]
    for idx, vx in enumerate(vertices):
        sym, specs, members, (cfile, cline) = vx.symbol, vx.specs, vx.cls.members, vx.cls.where
        g = f"popsim_glue_{idx}"
        alias = f"popsim_vertex_{idx}"
        open_, close_ = _open_ns(vx.alias_ns)
        scope = "::".join(["", *named(vx.alias_ns), alias])
        out += [f"// {vx.name}", f"#line {cline} {_cstr(cfile)}", f"{open_}using {alias} = {vx.cpp_type};{close_}"]
        private = [(n, m) for n, m in enumerate(members) if m.access != "public"]
        want_compute = vx.cls.compute_access not in (None, "public")
        for n, m in private:
            out.append(f"namespace popsim {{ namespace glue {{ struct t{idx}_{n} "
                       f"{{ friend constexpr auto stolen(t{idx}_{n}); }}; }} }}")
            out.append(f"template struct popsim::glue::steal<popsim::glue::t{idx}_{n}, &{scope}::{m.name}>;")
        if want_compute:
            out.append(f"namespace popsim {{ namespace glue {{ struct t{idx}_c "
                       f"{{ friend constexpr auto stolen(t{idx}_c); }}; }} }}")
            out.append(f"template struct popsim::glue::steal<popsim::glue::t{idx}_c, &{scope}::compute>;")
        out.append(f"namespace {g} {{\nusing V = {scope};")
        out.append('static_assert(alignof(V) <= alignof(std::max_align_t), "popsim: vertex state is allocated with '
                   'max_align_t alignment");')
        for n, (spec, m) in enumerate(zip(specs, members)):
            mfile, mline = m.where
            ptr = f"stolen(popsim::glue::t{idx}_{n}{{}})" if m.access != "public" else f"&V::{m.name}"
            if spec is None:
                why = (f"popsim: vertex type '{vx.name}': member '{m.name}' of type '{render_tokens(m.type_toks)}' "
                       f"cannot be a field: {FIELD_HELP}")
                check = f"popsim::glue::supported<decltype(f{n})>()"
            else:
                elem = KIND_CODES[spec.element_kind] if spec.element_kind else -1
                why = (f"popsim: field {vx.name}::{m.name} was read as {spec.describe()}, but the compiler sees "
                       "a different type")
                check = (f"popsim::glue::matches<decltype(f{n})>({KIND_CODES[spec.kind]}, {DIR_CODES[spec.direction]}, "
                         f"{DTYPE_ORDER.index(spec.dtype)}, {elem})")
            # one line, so that a failure is reported at the member's line
            out += [f"#line {mline} {_cstr(mfile)}",
                    f"constexpr auto f{n} = {ptr}; static_assert({check}, {_cstr(why)});"]
        call = (f"popsim::glue::call_member(v, w, stolen(popsim::glue::t{idx}_c{{}}))" if want_compute
                else "popsim::glue::call(v, w)")
        binds = " ".join(f"popsim::glue::bind(v.*{g}::f{n}, fields[{n}]);" for n in range(len(specs)))
        ctor_flag = "true" if vx.run_constructor else "false"
        line = f"#line {cline} {_cstr(cfile)}"  # glue errors point at the class
        describe = " ".join(f"popsim::glue::describe({g}::f{n}, out + {5 * n});" for n in range(len(specs)))
        pointers = "".join(f", {g}::f{n}" for n in range(len(specs)))
        locate = (f"[](const {g}::V &v, const void *p) {{ (void)v; (void)p; "
                  f"return popsim::glue::field_at(v, p{pointers}); }}")
        out += ["}", line,
                f"POPSIM_EXPORT std::uint64_t {sym}_size(void) {{ return sizeof({g}::V); }}", line,
                f"POPSIM_EXPORT void {sym}_describe(std::int32_t *out) {{ (void)out; {describe} }}", line,
                f"POPSIM_EXPORT void {sym}_init(void *obj) {{ popsim::glue::construct<{g}::V>(obj, "
                f"std::integral_constant<bool, {ctor_flag}>{{}}); }}", line,
                f"POPSIM_EXPORT void {sym}_bind(void *obj, const popsim_field *fields) {{ "
                f"{g}::V &v = *static_cast<{g}::V *>(obj); (void)v; (void)fields; {binds} }}", line,
                f"POPSIM_EXPORT int {sym}_compute(void *obj, std::uint32_t worker, popsim_exec *ctx) {{ "
                f"return popsim::glue::compute_entry<{g}::V>(obj, worker, ctx, {_cstr(vx.name)}, "
                f"[]({g}::V &v, unsigned w) {{ return {call}; }}, {locate}); }}", ""]
    return "\n".join(out)


# ---- errors ------------------------------------------------------------------------

def _explain(output: str, real: Path, shown: Path, symbols: Optional[Dict[str, str]] = None) -> str:
    """The compiler's first error (diagnostics.first_error), placed in the user's file
    where possible, with the source line, then the full compiler output."""
    include = str(compiler.INCLUDE_DIR)

    def user_file(f: str) -> bool:
        return (os.path.isfile(f) and not os.path.realpath(f).startswith(include + os.sep)
                and not f.startswith(("/usr/include", "/usr/lib", "/usr/local/include")))

    title = f"the codelet file {shown} did not compile"
    diag = diagnostics.first_error(output)
    if diag is None:
        head = diagnostics.link_error(output) or "see the compiler output"
        caller = re.search(r"in function [`'](popsim_vt\d+_\w+?)_(?:size|init|bind|compute)'", output)
        if head.startswith("undefined reference") and caller and symbols and caller.group(1) in symbols:
            head += f", used by vertex type '{symbols[caller.group(1)]}'"
        return diagnostics.compile_error_message(title, head, output)
    # An error inside a header: the user's line is in its "required from" context.
    loc = diag if user_file(diag.file) else diagnostics.context_location(output, diag, user_file)
    if loc is None:
        return diagnostics.compile_error_message(title, diag.message, output)
    where = shown if os.path.realpath(loc.file) == str(real) else loc.file
    return diagnostics.compile_error_message(title, f"{where}:{loc.line}: {diag.message}", output,
                                             diagnostics.source_line(loc.file, loc.line))


def _run_compiler(real: Path, shown: Path, flags: List[str], mode: str) -> str:
    """Preprocess (-E) or check (-fsyntax-only) the file as the library build will see it."""
    cmd = [compiler.compiler_command("c++"), "-std=c++17", mode, *_DEFINES, *flags, f"-I{compiler.INCLUDE_DIR}",
           f"-I{real.parent}", str(real)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise CodeletCompileError(_explain(result.stderr, real, shown)) from None
    return result.stdout


def _syntax_error(message: str, where: Tuple[str, int], path: Path) -> CodeletSyntaxError:
    fname, line = where
    shown = str(path) if fname and os.path.realpath(fname) == os.path.realpath(path) else fname
    try:
        text = Path(fname).read_text(errors="replace").splitlines()[line - 1]
    except (OSError, IndexError):
        text = ""
    return CodeletSyntaxError(f"{shown}:{line}: {message}", (shown, line, None, text))


def _described(handle, vx: VertexClass) -> List[FieldSpec]:
    """The fields, those popsim left to the compiler filled in from the library's own
    description of them."""
    specs = vx.specs
    if None not in specs:
        return cast(List[FieldSpec], specs)
    fn = getattr(handle, vx.symbol + "_describe")
    fn.restype, fn.argtypes = None, [ctypes.POINTER(ctypes.c_int32)]
    codes = (ctypes.c_int32 * (5 * len(specs)))()
    fn(codes)
    kinds = {v: k for k, v in KIND_CODES.items()}
    dirs = {v: k for k, v in DIR_CODES.items()}
    out = []
    for n, (spec, m) in enumerate(zip(specs, vx.cls.members)):
        if spec is None:
            kind, direction, dtype, elem, layout = codes[5 * n:5 * n + 5]
            layout_name = (LIST_LAYOUTS[layout - 100] if layout >= 100 else
                           VECTOR_LAYOUTS[layout] if layout >= 0 else "")
            spec = FieldSpec(m.name, kinds[kind], dirs[direction], DTYPE_ORDER[dtype], kinds.get(elem), layout_name)
        out.append(spec)
    return out


def _fields(parser: Parser, vx: VertexClass) -> List[Optional[FieldSpec]]:
    scopes = [vx.env, vx.cls.aliases] + ns_scopes(parser, vx.cls.ns)
    specs: List[Optional[FieldSpec]] = []
    for m in vx.cls.members:
        if m.problem:
            raise SourceError(f"vertex type '{vx.name}': member '{m.name}': {m.problem}; {FIELD_HELP}", m.where)
        try:
            specs.append(classify(m.name, parse_type(expand(m.type_toks, scopes))))
        except Unresolved:
            specs.append(None)  # the compiler classifies it (codelet_glue.hpp field_info)
        except ValueError as e:
            raise SourceError(f"vertex type '{vx.name}': member '{m.name}' of type '{render_tokens(m.type_toks)}' "
                               f"cannot be a field: {e}; {FIELD_HELP}", m.where) from None
    return specs


# ---- the entry point ---------------------------------------------------------------

_memo: Dict[str, Tuple[List[Tuple[str, str]], List[VertexType]]] = {}


def _dependencies(files: List[str]) -> List[Tuple[str, str]]:
    """Each file the codelet file reads, with a digest of its content: a file replaced by
    another of the same size and time (cp -p, tar, rsync -a) is a change."""
    out = []
    for f in files:
        try:
            out.append((os.path.realpath(f), hashlib.sha256(Path(f).read_bytes()).hexdigest()))
        except OSError:
            out.append((f, ""))
    return out


def _record_path(real: Path, key: str) -> Path:
    return compiler.cache_dir() / f"{real.stem}-{key}.json"


def _cached(real: Path, key: str) -> Optional[List[VertexType]]:
    """The vertex types of an unchanged file (same dependencies, library present),
    from this process or from the cache directory: no compiler runs."""
    hit = _memo.get(key)
    if hit is None:
        try:
            record = json.loads(_record_path(real, key).read_text())
            hit = ([tuple(d) for d in record["dependencies"]], [_type_from_json(t) for t in record["types"]])
        except (OSError, ValueError, KeyError, TypeError):
            return None
    deps, types = hit
    if _dependencies([d[0] for d in deps]) != deps or \
            not all(is_verified(lib, "codelet library") and compiler.loadable(lib)
                    for lib in (Path(cast(Path, t.library)) for t in types)):  # compiled: each has a library
        return None
    _memo[key] = hit
    return types


def _remember(real: Path, key: str, files: List[str], types: List[VertexType]) -> None:
    deps = _dependencies(files)
    _memo[key] = (deps, types)
    record = {"dependencies": deps, "types": [_type_to_json(t) for t in types]}
    try:
        path = _record_path(real, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record))
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache only costs a re-parse next time


def _type_to_json(t: VertexType) -> dict:
    return {"name": t.name, "multi": t.multi, "library": str(t.library), "symbol": t.symbol,
            "state_size": t.state_size, "source": t.source, "extra": t.extra,
            "fields": [[f.name, f.kind.name, f.direction.name, f.dtype.name,
                        f.element_kind.name if f.element_kind else None, f.layout] for f in t.fields]}


def _type_from_json(d: dict) -> VertexType:
    fields = tuple(FieldSpec(name, FieldKind[kind], Direction[direction], as_type(dtype),
                             FieldKind[element] if element else None, layout)
                   for name, kind, direction, dtype, element, layout in d["fields"])
    return VertexType(name=d["name"], fields=fields, multi=d["multi"], library=Path(d["library"]), symbol=d["symbol"],
                      state_size=d["state_size"], source=d["source"], language="c++", extra=d["extra"])


def file_flags(compile_flags: str, checked: Optional[bool]) -> List[str]:
    """The flags a codelet file is compiled with (vertex_types_from_file's arguments)."""
    flags = shlex.split(compile_flags or "")
    if config.checked_codelets() if checked is None else checked:
        # A debugging build: -O1 (last, so it wins) compiles PopLibs' big template files three
        # times faster than their -O3, and the bounds checks set its speed anyway. Without
        # value-changing flags (-ffast-math) the optimisation level changes no result.
        flags += ["-DPOPSIM_CHECKED_CODELETS=1", "-O1"]
    return flags


def file_key(real: Path, path: Path, flags: List[str]) -> str:
    """The user cache's key of a codelet file's record (its vertex types, dependencies)."""
    return compiler.cache_key("c++", "codelet file", str(real), str(path), " ".join(flags)).hexdigest()[:32]


def record_of(path, compile_flags: str = "", checked: Optional[bool] = None) -> dict:
    """The cache record of a codelet file vertex_types_from_file compiled: its
    dependencies (path, sha256) and vertex types as first made (JSON)."""
    path = Path(path)
    real = path.resolve()
    vertex_types_from_file(path, compile_flags, checked)
    return json.loads(_record_path(real, file_key(real, path, file_flags(compile_flags, checked))).read_text())


def _prebuilt(real: Path, path: Path, flags: List[str]) -> Optional[List[VertexType]]:
    """The vertex types of a codelet file popsim's build compiled (codelet/prebuilt.py)
    when ``real`` is that file byte for byte: no compiler runs."""
    from . import prebuilt
    records = prebuilt.cpp_types(real, flags)
    if records is None:
        return None
    types = []
    for record in records:
        rel, _, line = record["source"].rpartition(":")
        shown = str(path) if rel == real.name else os.path.normpath(real.parent / rel)
        types.append(_type_from_json({**record, "source": f"{shown}:{line}"}))
    return types


def vertex_types_from_file(path, compile_flags: str = "", checked: Optional[bool] = None) -> List[VertexType]:
    """Compile a Poplar C++ codelet file and return one VertexType per vertex class (per
    explicit instantiation of a vertex class template), in the file's order.

    :param path: the .cpp file; its directory is on the include path.
    :param compile_flags: extra compiler flags, as popc would take them ("-DN=4 -O3").
    :param checked: compile with bounds-checked field access (include/poplar/Vertex.hpp); None:
        as POPSIM_CHECKED_CODELETS says. The checked build is a separate cached library.
    :raises CodeletCompileError: the compiler rejected the file (message: file, line,
        source line, then the compiler's output).
    :raises CodeletSyntaxError: a vertex field popsim cannot bind (names class, member, line).
    """
    path = Path(path)
    if not path.is_file():
        raise CodeletCompileError(f"codelet file {path} not found")
    real = path.resolve()
    flags = file_flags(compile_flags, checked)
    key = file_key(real, path, flags)
    cached = _cached(real, key) or _prebuilt(real, path, flags)
    if cached is not None:
        return cached
    src = _preprocess(real, path, flags)
    try:
        parser = Parser(src)
        parser.parse()
        vertices = vertex_classes(parser)
        for n, vx in enumerate(vertices):
            vx.specs = _fields(parser, vx)
            vx.symbol = f"popsim_vt{n}_" + re.sub(r"[^A-Za-z0-9]+", "_", vx.name).strip("_")[:48]
            vx.run_constructor = not (vx.cls.ctor_declared_only and vx.cls.name not in parser.ctor_defined)
    except SourceError as e:
        _run_compiler(real, path, flags, "-fsyntax-only")  # a broken file: let the compiler say so first
        raise _syntax_error(str(e), e.where, path) from None

    digest = hashlib.sha256()  # the compile cache must see changes to the file's own headers too
    for f in src.files:
        try:
            digest.update(Path(f).read_bytes())
        except OSError:
            pass
    link = ["-Wl,-z,defs"] if sys.platform.startswith("linux") else []  # undefined symbols fail now
    try:
        lib = compiler.compile_library({f"{real.stem}_glue.cpp": _glue(real, digest.hexdigest()[:16], vertices)},
                                       "c++", name=real.stem, flags=[*_DEFINES, "-fvisibility=hidden", *link, *flags],
                                       include_dirs=[real.parent])
    except CodeletCompileError as e:
        output = getattr(e, "compiler_output", str(e))
        raise CodeletCompileError(_explain(output, real, path, {vx.symbol: vx.name for vx in vertices})) from None
    try:
        handle = ctypes.CDLL(str(lib))
    except OSError as e:
        raise CodeletCompileError(f"the codelet file {path} compiled but its library does not load: {e}") from None
    result = []
    for vx in vertices:
        size = getattr(handle, vx.symbol + "_size")
        size.restype, size.argtypes = ctypes.c_uint64, []
        cfile, cline = vx.cls.where
        shown = str(path) if os.path.realpath(cfile) == str(real) else cfile
        base = cast(str, vx.cls.base)  # a vertex class: it derives from one of VERTEX_BASES
        result.append(VertexType(
            name=vx.name, fields=tuple(_described(handle, vx)), multi=VERTEX_BASES[base], library=lib,
            symbol=vx.symbol, state_size=int(size()), source=f"{shown}:{cline}", language="c++",
            extra={"cpp_class": vx.cpp_type, "base": base}))
    _remember(real, key, [str(real), *src.files], result)
    return result


def cpp_entry(path, compile_flags: str, out: Path, checked: Optional[bool] = None) -> Tuple[str, dict]:
    """(file name, index entry) of C++ codelet file ``path`` as ``graph.add_codelets(path,
    compile_flags)`` compiles it (into the user cache, with the tier off), its library
    copied into ``out``; dependencies and source locations relative to the file. The
    prebuilt tier's entry for the file (tools/prebuild_codelets.py writes the tier with
    it and prebuilt.write_index); here, not in prebuilt.py, which only reads the tier."""
    import shutil
    from .prebuilt import cpp_key
    path = Path(path)
    real = path.resolve()
    flags = file_flags(compile_flags, checked)
    record = record_of(path, compile_flags, checked)
    deps = [(os.path.relpath(f, real.parent), digest) for f, digest in record["dependencies"]]
    (library,) = {t["library"] for t in record["types"]}
    name = f"cpp-{real.stem}{'-checked' if checked else ''}.so"
    shutil.copyfile(library, out / name)
    types = []
    for t in record["types"]:
        shown, _, line = t["source"].rpartition(":")
        rel = real.name if shown == str(path) else os.path.relpath(shown, real.parent)
        types.append({**t, "library": name, "source": f"{rel}:{line}"})
    return real.name, {"flags": flags, "dependencies": [list(d) for d in deps], "key": cpp_key(flags, deps),
                       "library": name, "types": types}
