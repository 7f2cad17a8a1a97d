"""The line budget: no source file over 600 lines (docs/architecture.md: a file that grows
past it is split by concept). Test data files (tests/**/data) are exempt."""
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUDGET = 600

# (folder, glob patterns) of the files the budget covers.
_SOURCES = (
    ("src/popsim", ("*.py", "*.cpp", "*.hpp", "*.h", "*.js", "*.css")),
    ("poplibs", ("*.py", "*.cpp", "*.hpp", "*.h")),
    ("popart", ("*.py",)),
    ("native", ("*",)),
    ("tests", ("*.py",)),
    ("bench", ("*.py",)),
    ("tutorials", ("*.py", "*.cpp", "*.hpp", "*.h")),
    ("tools", ("*.py",)),
)


def _is_test_data(path: pathlib.Path) -> bool:
    rel = path.relative_to(ROOT).parts
    return rel[0] == "tests" and "data" in rel[1:-1]


def source_files():
    """Every file the budget covers, relative to the repository root, sorted."""
    found = set()
    for folder, patterns in _SOURCES:
        for pattern in patterns:
            for path in (ROOT / folder).rglob(pattern):
                if path.is_file() and "__pycache__" not in path.parts and not _is_test_data(path):
                    found.add(path)
    return sorted(found)


def line_count(path: pathlib.Path) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def test_the_budget_covers_the_source_tree():
    names = {p.relative_to(ROOT).as_posix() for p in source_files()}
    for expected in ("src/popsim/graph.py", "native/binding/machine.cpp", "tests/conftest.py", "bench/run_all.py",
                     "tutorials/tut1_variables.py", "src/popsim/report/html_page.js",
                     "poplibs/poputil/errors.py"):
        assert expected in names, f"{expected} is not covered by the line budget"
    assert not any("/data/" in n and n.startswith("tests/") for n in names), "test data must be exempt"


def test_no_source_file_over_the_line_budget():
    over = [(line_count(p), p.relative_to(ROOT).as_posix()) for p in source_files()]
    over = sorted(((n, name) for n, name in over if n > BUDGET), reverse=True)
    assert not over, (f"{len(over)} file(s) over the budget of {BUDGET} lines (split each by concept):\n"
                      + "\n".join(f"  {name}: {n} lines" for n, name in over))
