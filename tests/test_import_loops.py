"""No two modules of popsim import each other, directly or round a loop, counting the
imports inside functions too (a loop hidden in a function is a loop all the same: each
side needs the other, and neither can be read or tested first). What both sides of a loop
need moves down a floor instead (or what needs both, up one), as program_parts.py did for
program.py and program_tree.py, report/saved.py for the report's modules, and
cpp.cpp_entry and translate.symbol_for for the codelet compilers and their prebuilt tier.
Imports under ``if TYPE_CHECKING:`` are annotations only and do not count; nor does the
package itself (``import popsim`` for the public names)."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "popsim"

# Loops not yet broken, each the set of modules on it (none now). The test fails when one
# is broken, so that the entry goes too, and when a new one appears.
KNOWN_LOOPS: list = []


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_blocks(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            yield from ast.walk(node)


def imports_of(path: pathlib.Path, modules: set) -> set:
    """The popsim modules ``path`` imports (anywhere in it, but not for annotations only)."""
    me = module_name(path)
    package = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]
    package = [p for p in package if p]
    tree = ast.parse(path.read_text())
    skip = {id(n) for n in _type_checking_blocks(tree)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:   # relative: from the module's package, up level - 1
                base = package[:len(package) - (node.level - 1)] if node.level > 1 else package
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.startswith("popsim"):
                target = node.module[len("popsim"):].lstrip(".")
            else:
                continue
            # "from X import name": name is a module of X's package, or a name X defines
            subs = [f"{target}.{a.name}" if target else a.name for a in node.names]
            subs = [s for s in subs if s in modules]
            found.update(subs if subs else [target])
        elif isinstance(node, ast.Import):
            found.update(a.name[len("popsim."):] for a in node.names if a.name.startswith("popsim."))
    return {m for m in found if m in modules and m and m != me}


def import_loops():
    """The loops among popsim's modules."""
    paths = {module_name(p): p for p in SRC.rglob("*.py")}
    modules = set(paths) - {""}
    return loops_of({m: sorted(imports_of(paths[m], modules)) for m in sorted(modules)})


def loops_of(edges: dict) -> list:
    """The strongly connected groups of more than one node of ``edges`` (node -> the nodes
    it points to): Tarjan's algorithm, without recursion."""
    index, low, on_stack, stack, loops, counter = {}, {}, set(), [], [], 0
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(edges[w])))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    group.add(w)
                    if w == v:
                        break
                if len(group) > 1:
                    loops.append(group)
    return loops


def test_no_module_imports_another_round_a_loop():
    loops = import_loops()
    new = [sorted(loop) for loop in loops if loop not in KNOWN_LOOPS]
    assert not new, f"modules that import each other round a loop: {new}; move what both need down a floor"
    gone = [sorted(loop) for loop in KNOWN_LOOPS if loop not in loops]
    assert not gone, f"these loops are broken now: take them out of KNOWN_LOOPS: {gone}"


def test_the_loop_finder_finds_loops():
    assert loops_of({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"], "e": []}) == [{"a", "b", "c"}]
    assert loops_of({"a": ["b"], "b": [], "c": ["d"], "d": ["c"]}) == [{"c", "d"}]
    # program.py and program_tree.py imported each other until program_parts.py took the
    # walks a floor down; graph.py and program.py did until Function moved to program.py.
    program = imports_of(SRC / "program.py", {"program_tree", "program_parts", "graph", "vertices"})
    assert program == {"program_parts", "vertices"}
    assert "program" in imports_of(SRC / "graph.py", {"program"})
    modules = {"codelet.cpp", "codelet.prebuilt"}   # (a function-level import counts)
    assert "codelet.prebuilt" in imports_of(SRC / "codelet" / "cpp.py", modules)
    assert "codelet.cpp" not in imports_of(SRC / "codelet" / "prebuilt.py", modules)
