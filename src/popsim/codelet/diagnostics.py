"""Reading a host compiler's output for CodeletCompileError: which error to show first.

A failed compile often prints screens of warnings (and, under -Werror, warnings turned
into errors) before the error that matters. The message popsim raises opens with that
error — file, line, the compiler's words and the source line — and ends with the
compiler's full output, unchanged, in its own order.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Optional

# "file:line[:col]: severity: message" as GCC and Clang print it.
_LOCATED = re.compile(r"^(?P<file>[^:\n]+?):(?P<line>\d+):(?:\d+:)? (?P<rest>.*)$")
_SEVERITY = re.compile(r"^(?P<severity>fatal error|error|warning|note): (?P<message>.*)$")
_PROMOTED = re.compile(r"\[-Werror(=[\w+-]+)?\]\s*$")


@dataclass
class Diagnostic:
    file: str
    line: int
    message: str
    index: int            # line number in the output

    @property
    def promoted(self) -> bool:
        """A warning turned into an error by -Werror."""
        return bool(_PROMOTED.search(self.message))


def errors(output: str) -> List[Diagnostic]:
    """Every located error (and fatal error) in ``output``, in order."""
    out = []
    for n, text in enumerate(output.splitlines()):
        m = _LOCATED.match(text)
        if not m:
            continue
        s = _SEVERITY.match(m.group("rest"))
        if s and s.group("severity") in ("error", "fatal error"):
            out.append(Diagnostic(m.group("file").strip(), int(m.group("line")), s.group("message"), n))
    return out


def first_error(output: str) -> Optional[Diagnostic]:
    """The error to show first: the first real error, else the first warning -Werror
    made an error; None when the output has no located error (e.g. a link error)."""
    found = errors(output)
    hard = [d for d in found if not d.promoted]
    return hard[0] if hard else found[0] if found else None


def context_location(output: str, diag: Diagnostic, wanted: Callable[[str], bool]) -> Optional[Diagnostic]:
    """For an error inside a header: the nearest preceding location in a file ``wanted``
    accepts, from the error's own context lines ("required from here", "In file included
    from"), never from an earlier diagnostic."""
    lines = output.splitlines()
    for text in reversed(lines[:diag.index]):
        text = text.strip()
        for prefix in ("In file included from ", "from "):
            if text.startswith(prefix):
                text = text[len(prefix):].rstrip(",:")
        m = _LOCATED.match(text)
        if m is None:
            continue
        if _SEVERITY.match(m.group("rest")) and not m.group("rest").startswith("note: "):
            return None  # an earlier diagnostic: the context has ended
        if wanted(m.group("file").strip()):
            return Diagnostic(m.group("file").strip(), int(m.group("line")), diag.message, diag.index)
    return None


def source_line(path: str, line: int) -> str:
    """Line ``line`` of ``path``, stripped; "" if it cannot be read."""
    try:
        return Path(path).read_text(errors="replace").splitlines()[line - 1].strip()
    except (OSError, IndexError, ValueError):
        return ""


def link_error(output: str) -> Optional[str]:
    """The first linker complaint (an undefined reference...), or None."""
    m = re.search(r"undefined reference to [`'](.+?)'", output)
    if m:
        return f"undefined reference to '{m.group(1)}' (declared but never defined?)"
    m = re.search(r"^.*\b(?:ld|collect2)\b.*\berror\b.*$", output, re.M)
    return m.group(0).strip() if m else None


def compile_error_message(title: str, head: str, output: str, code: str = "") -> str:
    """``title: head``, the offending source line, then the full compiler output."""
    text = f"{title}: {head}"
    if code:
        text += f"\n    {code}"
    return f"{text}\n\ncompiler output:\n{output.strip()}"
