"""Python vertex classes -> C: find ``compute``'s source (real file name and line
numbers), type-check it into the typed IR (typecheck.py), add cycle counting
(op_costs.py), give counted loops fast versions (loop_versioning.py), emit C
(emit_c.py), and compile all the classes of one call into one
cached shared library (compiler.py).

Anything outside the supported subset raises CodeletSyntaxError (also a SyntaxError)
here, at add_codelets time, with the file, line, the source line, a caret and, where
there is one, a fix.
"""
from __future__ import annotations

import ast
import hashlib
import inspect
import linecache
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Tuple, Union

from ..errors import CodeletSyntaxError
from . import compiler
from .emit_c import LIBRARY_HEADER, emit_function
from .inline import origin_of
from .loop_versioning import version_loops
from .op_costs import add_cycle_counting
from .typecheck import check_function
from .typed_ir import Function

# Math functions are called in libm, never folded at compile time: the interpreter calls
# the same libm, so both modes round identically.
_NO_BUILTIN_MATH = [f"-fno-builtin-{n}" for n in (
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
    "sinh", "cosh", "tanh", "erf", "erfc", "pow", "hypot")]


#: Vectorise counted loops whose arrays may overlap (a run-time overlap test picks the
#: vector or the scalar loop): -O2's default model vectorises only loops that need no
#: such test, which leaves out every element-wise loop between two fields (ReLU's, a
#: copy's). Vector code computes each element as the scalar loop does (no reassociation,
#: no contraction), so results are bit-identical. Loops of float arithmetic stay scalar:
#: its NaN rule (include/popsim_python_runtime.h) is not vector code.
_VECTORISE = ["-fvect-cost-model=cheap"]


def symbol_for(name: str, code: str) -> str:
    """A C identifier unique to this vertex type and its code."""
    safe = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")[:32] or "vertex"
    return f"pyv_{safe}_{hashlib.sha256(code.encode()).hexdigest()[:12]}"


def compile_flags(checked: bool = True) -> List[str]:
    flags = [f"-DPOPSIM_CHECKED={1 if checked else 0}", *_VECTORISE, *_NO_BUILTIN_MATH]
    if sys.platform.startswith("linux"):
        flags += ["-lm"]
    return flags


class Source:
    """Where ``compute`` lives, for error messages."""

    def __init__(self, filename: str, qualname: str):
        self.filename = filename
        self.qualname = qualname

    def error(self, node, msg: str, fix: Optional[str] = None) -> CodeletSyntaxError:
        line = getattr(node, "lineno", None) or 0
        col = getattr(node, "col_offset", 0) or 0
        end_line = getattr(node, "end_lineno", None) or line
        end_col = getattr(node, "end_col_offset", None)
        text = linecache.getline(self.filename, line) if line else ""
        text = text.rstrip("\n")
        origin = origin_of(node)  # code inlined from a helper is located at its call
        where = f", inlined from {origin}" if origin else ""
        parts = [f"{msg} (in {self.qualname}, {Path(self.filename).name}:{line}{where})"]
        if text.strip():
            indent = len(text) - len(text.lstrip())
            width = (end_col - col) if (end_line == line and end_col and end_col > col) else len(text.rstrip()) - col
            parts.append("    " + text.strip())
            parts.append("    " + " " * max(0, col - indent) + "^" * max(1, width))
        if fix:
            parts.append(f"fix: {fix}")
        e = CodeletSyntaxError("\n".join(parts), (self.filename, line, col + 1, text + "\n" if text else None))
        if sys.version_info >= (3, 10):
            e.end_lineno = end_line
            e.end_offset = (end_col + 1) if end_col is not None else None
        return e


@dataclass
class Translation:
    name: str
    fields: tuple
    attrs: tuple
    multi: bool
    function: Function
    symbol: str
    c_code: str


def _compute_of(cls):
    for klass in cls.__mro__:
        if "compute" in klass.__dict__:
            return klass, klass.__dict__["compute"]
    raise CodeletSyntaxError(f"{cls.__qualname__} has no compute method")  # pragma: no cover


def parse_compute(cls) -> Tuple[Union[ast.FunctionDef, ast.AsyncFunctionDef], object, str]:
    """The AST of ``cls.compute`` with the real line numbers and columns, the function
    object, and the file name."""
    owner, func = _compute_of(cls)
    if isinstance(func, (staticmethod, classmethod)) or not inspect.isfunction(func):
        raise CodeletSyntaxError(f"{owner.__qualname__}.compute must be a plain method def compute(self, ...)")
    try:
        filename = inspect.getsourcefile(func) or inspect.getfile(func)
        lines, first = inspect.getsourcelines(func)
    except (OSError, TypeError) as e:
        raise CodeletSyntaxError(
            f"cannot read the source of {owner.__qualname__}.compute ({e}): popsim translates vertex code from its "
            "source, so define Vertex classes in a .py file (not in an interactive session or exec)") from None
    text = "".join(lines)
    indented = bool(lines) and lines[0][:1] in (" ", "\t")
    # Parse in place (an indented method inside "if True:") so columns stay the file's own.
    tree = ast.parse("if True:\n" + text if indented else text, filename=filename)
    offset = first - (2 if indented else 1)
    node = None
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == func.__name__:
            node = n
            break
    if node is None:  # pragma: no cover - inspect found it, so ast does too
        raise CodeletSyntaxError(f"cannot find compute in the source of {owner.__qualname__}")
    ast.increment_lineno(node, offset)
    return node, func, filename


def translate_class(cls, name: str, fields, attrs, multi: bool) -> Translation:
    """Type-check and translate one class (raises CodeletSyntaxError)."""
    node, func, filename = parse_compute(cls)
    src = Source(filename, f"{cls.__qualname__}.compute")
    fn = check_function(src, node, func, cls, name, fields, attrs, multi)
    add_cycle_counting(fn)
    version_loops(fn)
    # "?" never appears raw in generated C (strings escape it), so the placeholder is safe.
    probe = emit_function(fn, "POPSIM?PREFIX")
    symbol = symbol_for(name, probe + repr([(f.name, f.kind.value, f.dtype.name) for f in fields]))
    code = probe.replace("POPSIM?PREFIX", symbol)
    return Translation(name, tuple(fields), tuple(attrs), multi, fn, symbol, code)


def library_source(translations: Sequence[Translation]) -> str:
    return LIBRARY_HEADER + "\n" + "\n".join(t.c_code for t in translations)


def compile_translations(translations: Sequence[Translation], checked: bool = True, announce: bool = False) -> Path:
    """One shared library holding every translation (cached by content). ``announce``:
    say so on stderr when the compiler runs (a user's vertices; compiler.compile_library)."""
    names = sorted(t.name for t in translations)
    label = "pyvertices_" + (names[0] if len(names) == 1 else f"{names[0]}_and_{len(names) - 1}")
    what = ""
    if announce:
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        what = f"Python vertex{'' if len(names) == 1 else 'es'} {shown}"
    return compiler.compile_library({"vertices.c": library_source(translations)}, "c", label,
                                    flags=compile_flags(checked), announce=what)
