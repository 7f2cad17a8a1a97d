"""PrintTensor's text format (Poplar SDK 3): floats with 7 decimals, integers plain,
one space between elements, one line per innermost row for rank >= 2, nested
levels indented by two spaces."""
from __future__ import annotations

from typing import List

import numpy as np


def _elements(row: np.ndarray) -> str:
    if row.dtype.kind == "f":
        return " ".join(f"{x:.7f}" for x in row.astype(np.float64).tolist())
    if row.dtype.kind == "b":
        return " ".join("1" if x else "0" for x in row.tolist())
    return " ".join(str(x) for x in row.tolist())


def _lines(values: np.ndarray, depth: int, out: List[str]) -> None:
    indent = "  " * depth
    if values.ndim == 1:
        out.append(f"{indent}[{_elements(values)}]")
        return
    out.append(f"{indent}[")
    for sub in values:
        _lines(sub, depth + 1, out)
    out.append(f"{indent}]")


def format_tensor(title: str, values: np.ndarray) -> str:
    """The text PrintTensor writes for ``values`` (including the final newline)."""
    if values.ndim == 0:
        return f"{title}: {_elements(values.reshape(1))}\n"
    if values.ndim == 1:
        return f"{title}: [{_elements(values)}]\n"
    lines: List[str] = []
    _lines(values, 0, lines)
    lines[0] = f"{title}: {lines[0]}"
    return "\n".join(lines) + "\n"
