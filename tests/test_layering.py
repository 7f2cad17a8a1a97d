"""The architecture's layering: imports point down only (DESIGN.md section 1)."""
import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "popsim"

# Lower number = lower layer. A module may import from its own layer or below.
LAYERS = {
    "base": 0,      # types, errors, config, options, printing, view algebra, mapping bookkeeping
    "target": 1,    # targets and devices
    "codelet": 2,   # codelet front ends: know types and fields, never graphs or engines
    "model": 3,     # graph building: tensors, graphs, vertices, programs, streams
    "lower": 4,     # graph + programs -> executable description
    "runtime": 5,   # engine and reports
    "api": 6,       # the package's public face
}
MODULE_LAYER = {
    "version": "base", "types": "base", "errors": "base", "config": "base", "options": "base", "printing": "base",
    "views": "base", "mapping": "base", "linear_mapping": "base", "log": "base", "progress": "base",
    "poplar_names": "base", "arguments": "base", "code_fingerprint": "base", "contract": "base", "codec": "base",
    "cachedir": "base",
    "target": "target", "device": "target", "ipu_model": "target",
    "variables": "model", "tensor": "model", "concat": "model", "runs": "model", "streams": "model", "graph": "model",
    "program": "model", "program_tree": "model", "vertices": "model", "vertex_store": "model", "digest": "model",
    "codelet": "codelet", "lower": "lower", "compilation": "lower",
    "reference": "lower",  # reference: the pure-Python executor
    "report": "runtime", "engine": "runtime", "engine_guard": "runtime", "executable": "runtime",
    "executable_file": "runtime", "native": "runtime", "run_errors": "runtime",
    "__init__": "api",
}
# Modules that may import the native core: the contract (its codes and layouts) and the
# runtime (machines).
NATIVE_IMPORTERS = {"contract"}


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


def test_only_the_binding_knows_python():
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "native").rglob("*.[ch]pp")
                 if p.relative_to(ROOT / "native").parts[0] != "binding"
                 and re.search(r"#include\s*[<\"](pybind11|Python\.h)", p.read_text())]
    assert not offenders, f"only native/binding/ may include Python headers: {offenders}"


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
