"""The architecture's layering: imports point down only (docs/architecture.md)."""
import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "popsim"

# The layer map: this file is its one copy; docs/architecture.md shows it as a table made
# from it (layer_map_table; test_the_architecture_doc_shows_the_layer_map keeps the two
# the same: after changing the map, run ``python tests/test_layering.py`` to rewrite it).
# Lower number = lower layer. A module may import from its own layer or below.
LAYERS = {
    "base": 0,
    "target": 1,
    "codelet": 2,
    "model": 3,
    "lower": 4,
    "runtime": 5,
    "api": 6,
}
LAYER_ROLES = {
    "base": "types, errors, config, options, printing, view algebra, mapping bookkeeping, the native contract, "
            "serialization, caches",
    "target": "targets, devices and the MPI processes that share their replicas",
    "codelet": "codelet front ends: know types and fields, never graphs or engines",
    "model": "graph building: tensors, graphs, vertices, programs, streams",
    "lower": "graph + programs -> executable description; the reference executor",
    "runtime": "engine, executables, the hand-over to the native core, links between processes, reports",
    "api": "the package's public face",
}
MODULE_LAYER = {
    "version": "base", "types": "base", "errors": "base", "config": "base", "options": "base", "printing": "base",
    "views": "base", "mapping": "base", "linear_mapping": "base", "log": "base", "progress": "base",
    "poplar_names": "base", "arguments": "base", "code_fingerprint": "base", "contract": "base", "codec": "base",
    "cachedir": "base", "zip_stream": "base", "heap": "base",
    "target": "target", "device": "target", "ipu_model": "target", "topology": "target",
    "dist": "target",  # which MPI process holds which replicas
    "variables": "model", "tensor": "model", "id_slices": "model", "concat": "model", "runs": "model",
    "streams": "model", "graph": "model", "program": "model", "program_parts": "model", "program_tree": "model",
    "quarter": "model", "graph_description": "model", "vertices": "model", "vertex_store": "model",
    "_vertex_build": "model",  # native/accel/vertex_build.cpp: add_vertex's common call in C
    "_first_fit": "lower",  # native/accel/first_fit.cpp: variable liveness's block placement in C
    "codelet": "codelet", "lower": "lower", "compilation": "lower",
    "reference": "lower",  # reference: the pure-Python executor
    "report": "runtime", "engine": "runtime", "engine_guard": "runtime", "executable": "runtime",
    "executable_file": "runtime", "native": "runtime", "run_errors": "runtime", "digest": "runtime",
    "peers": "runtime",  # an engine's link to the processes holding its other replicas
    "__init__": "api",
}
# Modules that may import the native core: the contract (its codes and layouts) and the
# runtime (machines).
NATIVE_IMPORTERS = {"contract"}

ARCHITECTURE_DOC = ROOT / "docs" / "architecture.md"
MAP_BEGIN = "<!-- layer map: generated from tests/test_layering.py (MODULE_LAYER); do not edit -->"
MAP_END = "<!-- end of the layer map -->"


def layer_map_table() -> str:
    """The layer map as the markdown table docs/architecture.md shows, highest layer first
    (a package is shown with a trailing slash: ``codelet/``)."""
    rows = ["| layer | role | modules of `popsim` |", "|---|---|---|"]
    for layer, level in sorted(LAYERS.items(), key=lambda kv: -kv[1]):
        names = [f"`{m}/`" if (SRC / m).is_dir() else f"`{m}`" for m, owner in MODULE_LAYER.items()
                 if owner == layer]
        rows.append(f"| {level} {layer} | {LAYER_ROLES[layer]} | {', '.join(names)} |")
    return "\n".join(rows) + "\n"


def write_layer_map(doc: pathlib.Path = ARCHITECTURE_DOC) -> None:
    """Rewrite the generated table between the markers of ``doc``."""
    text = doc.read_text()
    head, _, rest = text.partition(MAP_BEGIN + "\n")
    _, _, tail = rest.partition(MAP_END)
    doc.write_text(head + MAP_BEGIN + "\n" + layer_map_table() + MAP_END + tail)


def layer_of(module: str) -> int:
    head = module.split(".")[0]
    assert head in MODULE_LAYER, f"module popsim.{module} has no layer: add it to MODULE_LAYER"
    return LAYERS[MODULE_LAYER[head]]


def popsim_imports(path: pathlib.Path):
    rel = path.relative_to(SRC).with_suffix("")
    package = list(rel.parts[:-1])
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)] if node.level > 1 else package
                target = ".".join(base + ([node.module] if node.module else []))
                names = [target] if node.module else [".".join(base + [a.name]) for a in node.names]
                yield from (n for n in names if n)
            elif node.module and node.module.startswith("popsim"):
                yield node.module[len("popsim."):] if node.module != "popsim" else "__init__"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("popsim."):
                    yield a.name[len("popsim."):]


def test_imports_point_down():
    bad = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).with_suffix("")
        me = ".".join(rel.parts) if rel.parts[-1] != "__init__" or len(rel.parts) == 1 else ".".join(rel.parts[:-1])
        mine = layer_of(me if me else "__init__")
        for imported in popsim_imports(path):
            if imported.startswith("_core"):
                if MODULE_LAYER[me.split(".")[0]] != "runtime" and me not in NATIVE_IMPORTERS:
                    bad.append(f"{path.relative_to(ROOT)} imports the native core; only the runtime and the "
                               "contract may")
                continue
            if layer_of(imported) > mine:
                bad.append(f"{path.relative_to(ROOT)} (layer {mine}) imports popsim.{imported} "
                           f"(layer {layer_of(imported)})")
    assert not bad, "\n".join(bad)


# Native directories whose sources may include Python headers: the binding of the core
# (pybind11) and the CPython C-API accelerators of graph building, which never touch the core.
PYTHON_AWARE_NATIVE = {"binding", "accel"}


def test_only_the_binding_knows_python():
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "native").rglob("*.[ch]pp")
                 if p.relative_to(ROOT / "native").parts[0] not in PYTHON_AWARE_NATIVE
                 and re.search(r"#include\s*[<\"](pybind11|Python\.h)", p.read_text())]
    assert not offenders, f"only native/binding/ and native/accel/ may include Python headers: {offenders}"


def test_the_accelerators_stay_apart_from_the_core_and_pybind11():
    """native/accel/ modules are plain CPython C API (pybind11's per-call cost is what they
    save) and know nothing of the core, which links into _core only."""
    sources = sorted((ROOT / "native" / "accel").rglob("*.[ch]pp"))
    assert sources, "native/accel/ has no sources: update this test"
    for p in sources:
        text = p.read_text()
        assert not re.search(r'#include\s*[<"](pybind11|core/)', text), p.relative_to(ROOT)


def test_tutorials_use_only_the_public_api():
    offenders = []
    for path in (ROOT / "tutorials").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            mods = []
            if isinstance(node, ast.ImportFrom) and node.module:
                mods = [node.module]
            elif isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            offenders += [f"{path.name}: {m}" for m in mods
                          if m.startswith("popsim") and m not in ("popsim", "popsim.program")]
    assert not offenders, offenders


POPLIBS = ROOT / "poplibs"
# What a PopLibs library may import of popsim: its public face, and the libraries (each
# other, and their own modules through relative imports).
POPLIBS_MAY_IMPORT = {"popsim", "popsim.program"}
POPLIBS_LIBRARIES = {"poputil", "popops", "poprand", "poplin", "popnn", "gcl"}


def test_poplibs_use_only_the_public_api():
    """poplibs/ is built on popsim as a user would build on it: `import popsim`,
    `popsim.program` and the PopLibs libraries, never popsim's internals."""
    libraries = sorted(p.name for p in POPLIBS.iterdir() if (p / "__init__.py").is_file())
    assert set(libraries) == POPLIBS_LIBRARIES, "a library was added or removed: update POPLIBS_LIBRARIES"
    allowed = POPLIBS_MAY_IMPORT | {f"popsim.{lib}" for lib in POPLIBS_LIBRARIES}
    offenders = _popsim_imports_outside(POPLIBS, allowed)
    assert not offenders, f"poplibs/ may import only {sorted(allowed)}: {offenders}"


def _popsim_imports_outside(folder, allowed):
    """'file: module' for each absolute import of popsim (or _core) under ``folder`` that is
    not one of ``allowed`` or inside one of them (popsim itself excepted)."""
    offenders = []
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            mods = []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                mods = [node.module]
            elif isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            offenders += [f"{path.relative_to(ROOT)}: {m}" for m in mods if m.split(".")[0] in ("popsim", "_core")
                          and not any(m == a or m.startswith(a + ".") and a != "popsim" for a in allowed)]
    return offenders


def test_the_package_installs_every_library():
    """pyproject.toml maps each library of poplibs/ into popsim, for wheels and editable
    installs alike."""
    text = (ROOT / "pyproject.toml").read_text()
    for lib in POPLIBS_LIBRARIES:
        assert f'"popsim/{lib}" = "poplibs/{lib}"' in text, lib


POPART = ROOT / "popart"
# The ONNX layer (PopART's API) sits above PopLibs: it builds on popsim's public face and the
# libraries as a user would, and nothing below it knows of it.
POPART_MAY_IMPORT = POPLIBS_MAY_IMPORT | {f"popsim.{lib}" for lib in POPLIBS_LIBRARIES} | {"popsim.popart"}


def test_popart_uses_only_the_public_api_and_poplibs():
    offenders = _popsim_imports_outside(POPART, POPART_MAY_IMPORT)
    assert not offenders, f"popart/ may import only {sorted(POPART_MAY_IMPORT)}: {offenders}"


def test_nothing_below_popart_imports_it():
    """popsim and PopLibs never import the ONNX layer (it is above them)."""
    offenders = [str(p.relative_to(ROOT)) for folder in (SRC, POPLIBS) for p in folder.rglob("*.py")
                 if re.search(r"^\s*(from|import)\s+(popsim\.popart|popart)\b|from\s+\.+\s+import\s+popart\b|"
                              r"from\s+popsim\s+import\s+.*\bpopart\b", p.read_text(), re.MULTILINE)]
    assert not offenders, f"only popart/ and what is above it may import popsim.popart: {offenders}"


def test_the_package_installs_popart():
    assert '"popsim/popart" = "popart"' in (ROOT / "pyproject.toml").read_text()


def _module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    parts = rel.parts[:-1] if rel.parts[-1] == "__init__" and len(rel.parts) > 1 else rel.parts
    return ".".join(parts)


def _imports_of(module: str, graph) -> set:
    """Every popsim module ``module`` imports, directly or through others."""
    seen, todo = set(), [module]
    while todo:
        for imported in graph.get(todo.pop(), ()):
            while imported and imported not in graph:  # "report.build" when only "report" is a package
                imported = imported.rpartition(".")[0]
            if imported and imported not in seen:
                seen.add(imported)
                todo.append(imported)
    return seen


def test_the_compile_step_does_not_import_the_report_layer():
    """Compiling (popsim.executable and what it imports) never needs reports: its caller,
    the engine, writes the out-of-memory report."""
    graph = {_module_name(p): set(popsim_imports(p)) for p in SRC.rglob("*.py")}
    reached = _imports_of("executable", graph)
    assert "lower" in reached and "executable_file" in reached  # the walk does follow imports
    offenders = sorted(m for m in reached if m == "report" or m.startswith("report.") or m == "engine")
    assert not offenders, f"the compile step imports {offenders}"


def test_the_architecture_doc_shows_the_layer_map():
    """docs/architecture.md lists every module of MODULE_LAYER with its layer, as generated."""
    text = ARCHITECTURE_DOC.read_text()
    assert MAP_BEGIN in text and MAP_END in text, f"{ARCHITECTURE_DOC} lost the markers of its layer map"
    shown = text.split(MAP_BEGIN + "\n", 1)[1].split(MAP_END, 1)[0]
    assert shown == layer_map_table(), ("docs/architecture.md's layer map differs from MODULE_LAYER: run "
                                        "`python tests/test_layering.py` to regenerate it")
    for module, layer in MODULE_LAYER.items():  # the generated table names each module once, in its layer's row
        row = next(line for line in shown.splitlines() if line.startswith(f"| {LAYERS[layer]} {layer} |"))
        assert f"`{module}`" in row or f"`{module}/`" in row, module


if __name__ == "__main__":
    write_layer_map()
    print(f"wrote the layer map into {ARCHITECTURE_DOC}")


# The layers above graph building read a graph only through its public description
# (graph.description: popsim/graph_description.py) and the public accessors of compute
# sets: never through the model's private attributes.
CONSUMERS = ("lower", "reference", "report", "executable.py", "digest.py", "engine.py", "native.py")
PRIVATE_MODEL_STATE = re.compile(r"\._state\b|\bcs\._tiles\b|\._slots_of_graph\b")


def test_consumers_read_the_graph_through_its_description():
    offenders = []
    for name in CONSUMERS:
        path = SRC / name
        for f in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            for n, line in enumerate(f.read_text().splitlines(), 1):
                if PRIVATE_MODEL_STATE.search(line):
                    offenders.append(f"{f.relative_to(SRC)}:{n}: {line.strip()}")
    assert not offenders, "read the graph through graph.description, not private state:\n" + "\n".join(offenders)
