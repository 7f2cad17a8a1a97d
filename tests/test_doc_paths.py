"""Every repository path the docs and the code's comments cite exists: the repository
explains itself, with no citation of a file it does not ship (docs/architecture.md).

What counts as a cited path (the rule, applied to docs/*.md and the README.md files as
a whole, and to the comments and docstrings of the .py, .cpp, .hpp and .h files under
CODE_DIRS and tests/, test data apart):

- a token of path characters (letters, digits, ``_ - . *``, separated by ``/``) that
  ends in a source extension (SOURCE_EXTS) or, naming a folder, in ``/``; one glued to
  a URL, an absolute, home or ``./`` path, a ``<...>`` or ``{...}`` (an include, a
  placeholder) or a ``$VARIABLE`` is not one, nor is a module's dotted name
  (``popsim.codelet.cpp``);
- a data file (DATA_EXTS: run outputs such as profile.json, models such as model.onnx)
  counts only as a path from a top-level folder (``tests/popart/...``);
- a folder counts when it has two parts (``tests/lower/``) or one that names a folder of
  the repository (``lower/``); others are name scopes or arithmetic (``enc/``, ``x/``);
- a part that is one capital letter (``src/popsim/X.py``) is a placeholder, and a C/C++
  file with a capital letter in its name that the repository does not hold is
  Graphcore's (PopLibs' ``lib/poplin/ConvModel.cpp``, ``poplin/MatMul.hpp``): popsim
  cites the sources it reimplements, which it cannot ship; so is anything under a folder
  of UPSTREAM (``lib/``: PopLibs' source tree; ``onnx/``: the onnx package's files);
- a markdown link's target (``[text](cost_model.md#memory)``, not a URL or ``#anchor``).

A path with a ``/`` must exist relative to one of: the citing file's folder or a folder
above it, src/popsim/, src/ or poplibs/ (code cites ``lower/compute_sets.py``, the docs
``popops/op_types.py``); ``*`` globs. A bare name (``engine.py``) must be the name of a
file of the repository; NOT_OURS lists the few names the text gives to files that are not
(a reader's own ``train.py``, Graphcore's). A markdown link resolves from its file's folder.
"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
CODE_DIRS = ("src", "poplibs", "popart", "native", "tools", "bench", "examples", "tutorials")
CODE_SUFFIXES = (".py", ".cpp", ".hpp", ".h")
TOP_DIRS = CODE_DIRS + ("tests", "docs")
SOURCE_EXTS = ("py", "md", "cpp", "hpp", "h", "c", "toml", "txt", "js", "css", "cfg")
DATA_EXTS = ("json", "onnx", "html", "npy")
C_EXTS = ("cpp", "hpp", "h", "c")
# and hidden ones (.git, .pytest_cache...) and virtual environments (a reader's venv in the checkout)
SKIPPED_DIRS = {"build", "dist", "__pycache__"}
# Names the text gives to files that are not the repository's: a reader's own scripts in
# the examples, a file name in a message's format, Graphcore's (the Poplar demo that
# examples/mnist_regression.py ports, PopART's generated bindings, the Poplar tutorials'
# test), and the C library's and CPython's headers.
NOT_OURS = {"train.py", "oom.py", "cache_demo.py", "kernels.py", "script.py", "my_codelets.cpp", "file.cpp",
            "file.py", "regression-demo.cpp", "popart_opset11.gen.cpp", "tests/test_tut2.py", "malloc.h",
            "longintrepr.h"}
# First folders of paths in other projects' trees: PopLibs' sources, the onnx package.
UPSTREAM = {"lib", "onnx"}

_EXT = "|".join(SOURCE_EXTS + DATA_EXTS)
_PATH = re.compile(r"(?<![\w./\\~$<>{}:@*%-])"
                   r"((?:[\w*.-]+/)+(?:[\w*-]+(?:\.[\w*-]+)*\.(?:" + _EXT + r"))?"
                   r"|[\w*-]+(?:\.[\w*-]+)*\.(?:" + _EXT + r"))"
                   r"(?![\w/<>{}(*-])(?!\.\w)")
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
_PLACEHOLDER = re.compile(r"(?:^|_)[A-Z](?:[_.*]|$)")
# Python: strings (a docstring is one that starts a statement) and comments; C/C++: comments.
_PY_TOKEN = re.compile(r"""(?P<s>(?:[rRbBuUfF]{1,2})?(?:'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"|"""
                       r"""'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"))|(?P<c>#[^\n]*)""", re.S)
_C_TOKEN = re.compile(r"""(?P<s>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|(?P<c>//[^\n]*|/\*.*?\*/)""", re.S)


def _walk(top: pathlib.Path):
    for path in sorted(top.iterdir()):
        if path.name in SKIPPED_DIRS or path.name.startswith(".") or path.name.endswith(".egg-info"):
            continue
        if path.is_dir():
            if not (path / "pyvenv.cfg").exists():
                yield from _walk(path)
        else:
            yield path


REPO_FILES = list(_walk(ROOT))
REPO_NAMES = {p.name for p in REPO_FILES}
REPO_DIR_NAMES = {d.name for p in REPO_FILES for d in p.relative_to(ROOT).parents if d.name}


def _docstring(src: str, at: int) -> bool:
    """Whether the string starting at ``at`` starts a statement (a docstring), rather than
    being an argument, a value or the continuation of another string."""
    line_start = src.rfind("\n", 0, at) + 1
    if src[line_start:at].strip():
        return False
    before = src[:line_start].rstrip()
    return not before or before[-1] not in "([{,=+%\"'\\"


def _lines(text: str, first_line: int):
    for i, line in enumerate(text.split("\n")):
        yield first_line + i, line


def commented_text(path: pathlib.Path):
    """(line number, text) of each line of the file's comments and docstrings."""
    src = path.read_text(encoding="utf-8")
    token = _PY_TOKEN if path.suffix == ".py" else _C_TOKEN
    for m in token.finditer(src):
        if m.group("c") is None and (path.suffix != ".py" or not _docstring(src, m.start())):
            continue
        yield from _lines(m.group(), src.count("\n", 0, m.start()) + 1)


def doc_files():
    docs = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
    return docs + sorted(p for d in CODE_DIRS for p in (ROOT / d).rglob("README.md"))


def code_files():
    def scanned(rel):
        return rel[0] in CODE_DIRS or (rel[0] == "tests" and "data" not in rel[1:-1])
    return [p for p in REPO_FILES if p.suffix in CODE_SUFFIXES and scanned(p.relative_to(ROOT).parts)]


def cited_paths(token: str):
    """The token as a cited repository path, or None when the rule above says it is none."""
    parts = token.rstrip("/").split("/")
    name = parts[-1]
    ext = name.rsplit(".", 1)[-1] if not token.endswith("/") else ""
    if any(_PLACEHOLDER.search(p) for p in parts) or (len(parts) > 1 and parts[0] in UPSTREAM):
        return None
    if token.endswith("/"):
        return token if len(parts) > 1 or parts[0] in REPO_DIR_NAMES else None
    if ext in DATA_EXTS:
        return token if len(parts) > 1 and parts[0] in TOP_DIRS else None
    if ext in C_EXTS and name != name.lower() and name not in REPO_NAMES:
        return None
    if token in NOT_OURS or token.startswith("popsim."):
        return None
    return token


def exists(token: str, citer: pathlib.Path) -> bool:
    """Whether the cited path is a file or folder of the repository (the rule above)."""
    if "/" not in token:
        return any(p.match(token) for p in REPO_FILES) if "*" in token else token in REPO_NAMES
    bases = list(citer.parents) + [ROOT / "src" / "popsim", ROOT / "src", ROOT / "poplibs"]
    for base in bases:
        if ROOT not in base.parents and base != ROOT:
            continue
        if ("*" in token and any(base.glob(token.rstrip("/")))) or (base / token).exists():
            return True
    return False


def broken_citations():
    found = []
    for path, lines in ([(p, _lines(p.read_text(encoding="utf-8"), 1)) for p in doc_files()]
                        + [(p, commented_text(p)) for p in code_files()]):
        rel = path.relative_to(ROOT).as_posix()
        for n, line in lines:
            for m in _PATH.finditer(line):
                token = cited_paths(m.group(1))
                if token is not None and not exists(token, path):
                    found.append(f"{rel}:{n}: {token}")
            if path.suffix == ".md":
                for m in _LINK.finditer(line):
                    target = m.group(1).split("#")[0]
                    if target and "://" not in target and not target.startswith("mailto:") \
                            and not (path.parent / target).exists():
                        found.append(f"{rel}:{n}: {target} (link)")
    return found


def test_every_cited_repository_path_exists():
    broken = broken_citations()
    assert not broken, (f"{len(broken)} citation(s) of paths the repository does not hold (fix the path, or "
                        "bring the fact into docs/):\n" + "\n".join(f"  {b}" for b in broken))


def test_the_rule_sees_citations_and_skips_what_is_not_ours():
    def tokens(text):
        return [t for t in (cited_paths(m.group(1)) for m in _PATH.finditer(text)) if t]
    assert tokens("see lower/compute_sets.py, docs/cost_model.md and `DESIGN.md` (section 4)") == [
        "lower/compute_sets.py", "docs/cost_model.md", "DESIGN.md"]
    assert tokens("tests/lower/ and report/; conv_execute.py.") == ["tests/lower/", "report/", "conv_execute.py"]
    assert tokens("PopLibs' lib/poplin/ConvModel.cpp, lib/popnn/, poplin/MatMul.hpp, <malloc.h>, "
                  "https://x.org/a.py, ~/.cache/x.py, ./report/profile.json, report/profile.json, "
                  "src/popsim/X.py, tests/test_X*.py, <name>_estimates.py, enc/, x/2, train.py, "
                  "popsim.codelet.cpp") == []
    assert tokens("tests/popart/data/m.onnx") == ["tests/popart/data/m.onnx"]
    assert not exists("conv_execute.py", ROOT / "docs" / "x.md")
    assert exists("lower/compute_sets.py", ROOT / "docs" / "x.md")
    assert exists("core/peers.hpp", ROOT / "native" / "binding" / "machine.cpp")


def test_what_the_rule_takes_as_not_ours_is_not_in_the_repository():
    theirs = UPSTREAM & REPO_DIR_NAMES
    assert not theirs, f"the rule takes these folders of the repository as other projects': {theirs}"
    ours = sorted(n for n in NOT_OURS if n in REPO_NAMES or (ROOT / n).exists())
    assert not ours, f"NOT_OURS names repository files: {ours}"


def test_the_scan_reads_comments_and_docstrings_only():
    py = ROOT / "src" / "popsim" / "tensor.py"
    text = "\n".join(line for _, line in commented_text(py))
    assert "Tensor: a view of elements" in text and "(id_slices.py)" in text
    assert "tensors are created by a Graph" not in text  # an error message, not a docstring
    cpp = ROOT / "native" / "binding" / "machine.cpp"
    assert any("core/" in line for _, line in commented_text(cpp))
