"""mypy over popsim as it installs: src/popsim with PopLibs (poplibs/*) and popart/ inside it.

The wheel assembles the package from three folders (pyproject.toml's wheel.packages), and
PopLibs import each other and popsim that way (``from .. import popops``); mypy needs the
one tree, so this makes it in build/mypy out of symbolic links, by that same mapping, runs
mypy with pyproject.toml's [tool.mypy] (which checks build/mypy/popsim) and prints the
paths of the files themselves.

    python tools/typecheck.py [mypy's options]

(CI and .pre-commit-config.yaml run it; once the tree is made, plain ``mypy`` works too.)
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "mypy"


def wheel_packages() -> dict:
    """pyproject.toml's wheel.packages: {"popsim": "src/popsim", "popsim/popops": "poplibs/popops", ...}."""
    text = (ROOT / "pyproject.toml").read_text()
    line = re.search(r"^wheel\.packages\s*=\s*\{(.*)\}\s*$", text, re.M)
    if line is None:
        sys.exit("tools/typecheck.py: no wheel.packages line in pyproject.toml")
    return dict(re.findall(r'"([^"]+)"\s*=\s*"([^"]+)"', line.group(1)))


def make_tree() -> None:
    """build/mypy/popsim: a link to each entry of src/popsim, and one to each folder that
    installs inside it (poplibs/popops as popsim/popops, ...)."""
    shutil.rmtree(TREE, ignore_errors=True)
    packages = wheel_packages()
    top = TREE / "popsim"
    top.mkdir(parents=True)
    for entry in sorted((ROOT / packages.pop("popsim")).iterdir()):
        if entry.name != "__pycache__":
            (top / entry.name).symlink_to(entry)
    for dest, src in sorted(packages.items()):
        link = TREE / dest
        if link.exists() or link.is_symlink():
            sys.exit(f"tools/typecheck.py: {dest} is both in src/popsim and installed from {src}")
        link.symlink_to(ROOT / src, target_is_directory=True)


def real_path(match: "re.Match") -> str:
    return os.path.relpath(os.path.realpath(match.group(0)), ROOT)


def main(argv) -> int:
    make_tree()
    run = subprocess.run([sys.executable, "-m", "mypy", *argv], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    link = re.compile(r"build/mypy/popsim/[^\s:]*")
    sys.stdout.write(link.sub(real_path, run.stdout))
    return run.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
