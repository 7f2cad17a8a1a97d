"""Build step: compile PopLibs' codelets into popsim's prebuilt tier (src/popsim/codelet/
prebuilt.py), so that the first run after ``pip install`` compiles none of them.

CMakeLists.txt runs it after the native modules are built, with the build tree's Python:

    python tools/prebuild_codelets.py --source ROOT --out DIR NATIVE_MODULE...

It lays popsim out as the wheel does (src/popsim, poplibs/* as popsim.popops..., popart/ as
popsim.popart, the native modules given) in a staging directory beside DIR, imports it from there with empty caches,
and writes DIR/index.json plus the libraries it names:

- PopLibs' C++ codelet files, each compiled as ``graph.add_codelets(file, flags)`` does,
  plain and checked (CHECKED);
- the Python vertices PopLibs can make for FLOAT and HALF (every instantiation of every
  vertex template over those types (TYPES) and its non-type arguments, the element-wise
  ones for every op), and
  those that README's main job (examples/cnn_training.py), examples/mnist_regression.py
  and tutorials/tut2_operations.py instantiate: their graphs are built (vertices
  interpreted, nothing compiled one by one) and every PopLibs vertex they register is kept.
  Generated vertices (popops.map's fused expressions...) cannot all be enumerated: others compile on first use.

The Python vertices are compiled a group at a time (one compiler run per group, the groups
in parallel). A workload that fails is reported and skipped: the tier is a cache, and
what it lacks compiles on first use.
"""
import argparse
import concurrent.futures
import importlib
import os
import re
import shutil
import sys
import time
from pathlib import Path

PACKAGES = ("poputil", "popops", "poprand", "poplin", "popnn", "gcl")
#: Python vertices per library, about: a serialized executable embeds each library it uses.
GROUP = 80


def cpp_modules(root: Path):
    """The PopLibs modules that name a C++ codelet file (``CPP_CODELETS = ...`` at module
    level), as popsim imports them: found in the source, so a new file is never missed."""
    return tuple(sorted(f"popsim.{py.parent.name}.{py.stem}" for py in (root / "poplibs").glob("*/*.py")
                        if re.search(r"^CPP_CODELETS\s*=", py.read_text(encoding="utf-8"), re.MULTILINE)))


def stage(root: Path, stage_dir: Path, natives) -> None:
    """popsim as the wheel lays it out, made of links into the source tree."""
    if stage_dir.exists():
        shutil.rmtree(stage_dir)
    pkg = stage_dir / "popsim"
    pkg.mkdir(parents=True)
    for entry in (root / "src" / "popsim").iterdir():
        if entry.name not in ("__pycache__", "_prebuilt") and not entry.name.endswith(".so"):
            (pkg / entry.name).symlink_to(entry)
    for name in PACKAGES:
        (pkg / name).symlink_to(root / "poplibs" / name)
    (pkg / "popart").symlink_to(root / "popart")  # the ONNX layer, installed as popsim.popart
    for native in natives:
        shutil.copy2(native, pkg / Path(native).name)


# -- C++ codelet files ------------------------------------------------------------------------------
#: Each C++ file is built plain and checked (POPSIM_CHECKED_CODELETS: bounds-checked
#: fields, as the test suite and a user debugging a codelet run it).
CHECKED = (False, True)


def _compile_cpp(module_name: str, checked: bool):
    from popsim.codelet import cpp
    module = importlib.import_module(module_name)
    cpp.vertex_types_from_file(module.CPP_CODELETS, module.CPP_FLAGS, checked=checked)
    return module_name


# -- Python vertices ----------------------------------------------------------------------------------
def _templates_in(value):
    from popsim.codelet.templates import VertexTemplate
    if isinstance(value, VertexTemplate):
        yield value
    elif isinstance(value, dict):  # tables of templates (popops' element-wise ones, by layout)
        for v in value.values():
            yield from _templates_in(v)


#: The element types whose template instances are prebuilt: the float types models train
#: in, and the int and bool types the test suite and models' index arithmetic use. Every
#: other type compiles on first use, as do generated vertices.
TYPES = ("FLOAT", "HALF", "INT", "UNSIGNED_INT", "BOOL")


def template_instances() -> None:
    """Every instantiation over the prebuilt types (TYPES) of every PopLibs vertex template
    (via vertex_types_from_classes): over the declared domains, and for the element-wise
    templates (op and dtype undeclared), over every op of popops.expr's op types."""
    import pkgutil
    import popsim
    from popsim.codelet.python_compile import vertex_types_from_classes
    from popsim.popops import elementwise_vertices
    from popsim.popops.op_types import BinaryOpType, UnaryOpType
    ops = {t.name: list(BinaryOpType if binary else UnaryOpType)
           for (binary, _, _), t in elementwise_vertices.TEMPLATES.items()}
    ops.update({t.name: list(BinaryOpType) for t in elementwise_vertices.SCALAR_TEMPLATES.values()})
    types = [getattr(popsim, name) for name in TYPES]
    templates = {}
    for name in PACKAGES:
        package = importlib.import_module(f"popsim.{name}")
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"popsim.{name}.{info.name}")
            for value in vars(module).values():
                templates.update({t.name: t for t in _templates_in(value)})
    for template in templates.values():
        if template.name in ops:
            arguments = [(op, dtype) for op in ops[template.name] for dtype in types]
        else:
            arguments = template._domain_names().values()
        for args in arguments:
            if any(isinstance(a, popsim.types.Type) and a not in types for a in args):
                continue
            try:
                vertex_types_from_classes([template.instantiate(tuple(args))])
            except popsim.PopsimError:
                pass  # a combination the template refuses (a cast to its own type, an op without FLOAT...)


def workloads(root: Path):
    """(name, function) of each graph whose PopLibs vertices are prebuilt."""
    sys.path.insert(0, str(root / "examples"))

    def cnn():
        import cnn_training
        cnn_training.CnnOnIpu(cnn_training.CnnConfig(), 44, 12, cnn_training.initial_weights(cnn_training.CnnConfig()))

    def regression():
        import mnist_regression
        mnist_regression.RegressionOnIpu((8, 8), 32, 0.5, 44, 12, mnist_regression.initial_weights(64))

    def tutorial2():
        # Imported under its own name and its main() called, not run as __main__: runpy would
        # swap sys.modules["__main__"] while it runs, and the pool's feeder thread, pickling
        # _compile_group by its name in __main__ meanwhile, would not find it.
        import contextlib
        import io
        sys.path.insert(0, str(root / "tutorials"))
        import tut2_operations
        with contextlib.redirect_stdout(io.StringIO()):
            tut2_operations.main()

    return [("examples/cnn_training.py", cnn), ("examples/mnist_regression.py", regression),
            ("tutorials/tut2_operations.py", tutorial2)]


def _compile_group(label: str, codes):
    """One library of translations' C code, as translate.compile_translations builds it."""
    from popsim.codelet import compiler, translate
    from popsim.codelet.emit_c import LIBRARY_HEADER
    source = LIBRARY_HEADER + "\n" + "\n".join(codes)
    return str(compiler.compile_library({"vertices.c": source}, "c", label, flags=translate.compile_flags(True)))


def groups_of(translations, count: int):
    """``translations`` in ``count`` groups of about equal C size (name order kept)."""
    total = sum(len(t.c_code) for t in translations)
    groups, current, size = [], [], 0
    for t in translations:
        current.append(t)
        size += len(t.c_code)
        if size >= total / count and len(groups) < count - 1:
            groups.append(current)
            current, size = [], 0
    if current:
        groups.append(current)
    return groups


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, type=Path, help="the repository root")
    parser.add_argument("--out", required=True, type=Path, help="the prebuilt directory to write")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("natives", nargs="+", help="the built native modules (_core, _vertex_build, _first_fit)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    out, root = args.out.resolve(), args.source.resolve()
    work = out.with_name(out.name + ".work")
    stage(root, work / "stage", args.natives)
    for name in ("POPSIM_CACHE_DIR", "POPSIM_CHECKED_CODELETS", "POPSIM_ENGINE_OPTIONS", "POPLAR_ENGINE_OPTIONS"):
        os.environ.pop(name, None)
    os.environ["XDG_CACHE_HOME"] = str(work / "cache")
    os.environ["POPSIM_CODELET_MODE"] = "interpreted"  # the workloads' graphs run nothing compiled
    sys.path.insert(0, str(work / "stage"))
    from popsim.codelet import cpp as cpp_codelets, prebuilt, translate
    prebuilt.override = ""  # the tier being written is not read
    new = out.with_name(out.name + ".new")
    shutil.rmtree(new, ignore_errors=True)
    new.mkdir(parents=True)

    jobs = max(1, args.jobs)
    with concurrent.futures.ProcessPoolExecutor(jobs) as pool:
        cpp_done = [pool.submit(_compile_cpp, m, checked) for m in cpp_modules(root) for checked in CHECKED]
        collected = {}
        real_compile = translate.compile_translations

        def collect(translations, checked=True, announce=False):
            for t in translations:
                collected.setdefault(t.symbol, t)
            return Path(os.devnull)  # never loaded: the workloads' vertices run interpreted

        def submit(translations):  # compiled while the pool has room (the C++ files go first)
            group = sorted(translations, key=lambda t: t.name)
            return group, pool.submit(_compile_group, f"prebuilt_{len(compiling)}", [t.c_code for t in group])

        compiling = []
        translate.compile_translations = collect
        try:
            template_instances()
            for group in groups_of(sorted(collected.values(), key=lambda t: t.name), len(collected) // GROUP + jobs):
                compiling.append(submit(group))
            for future in cpp_done:  # the workloads register the C++ files: compiled once, by then
                future.result()
            cpp_seconds = time.perf_counter() - started
            for name, build in workloads(root):
                try:
                    build()
                except Exception as e:  # noqa: BLE001 - a workload lost is a cache entry lost, not a build failure
                    print(f"prebuild_codelets: skipped {name}: {type(e).__name__}: {e}", file=sys.stderr)
        finally:
            translate.compile_translations = real_compile
        collected_at = time.perf_counter()
        done = {t.symbol for group, _ in compiling for t in group}
        rest = sorted((t for t in collected.values() if t.symbol not in done), key=lambda t: t.name)
        for group in groups_of(rest, len(rest) // GROUP + 1):
            compiling.append(submit(group))
        python = {}
        for k, (group, future) in enumerate(compiling):
            shutil.copyfile(future.result(), new / f"py-{k}.so")
            python.update(prebuilt.python_entries(f"py-{k}.so", group))
    translations, groups = collected, compiling
    cpp = {}
    for module_name in cpp_modules(root):
        module = importlib.import_module(module_name)
        for checked in CHECKED:
            name, entry = cpp_codelets.cpp_entry(module.CPP_CODELETS, module.CPP_FLAGS, new, checked=checked)
            cpp.setdefault(name, []).append(entry)
    prebuilt.write_index(new, python, cpp)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(new, out)
    shutil.rmtree(work, ignore_errors=True)
    print(f"prebuild_codelets: {len(cpp)} C++ codelet files and {len(translations)} Python vertices "
          f"({len(groups)} libraries) in {time.perf_counter() - started:.0f} s (C++ files and templates "
          f"{cpp_seconds:.0f} s, workloads {collected_at - started - cpp_seconds:.0f} s, Python vertices "
          f"{time.perf_counter() - collected_at:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
