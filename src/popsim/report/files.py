"""autoReport: writing the report to files as Poplar's autoReport options ask.

``autoReport.all``, or ``autoReport.outputGraphProfile`` / ``outputExecutionProfile``,
write ``profile.json`` (and ``report.html``) into ``autoReport.directory``: once when the
engine is built, and after each of the first ``autoReport.executionProfileProgramRunCount``
runs (so that the files hold what those runs cost). The engine decides when; this module
only writes.
"""
from __future__ import annotations

import os
from typing import Dict, List, Optional

from ..errors import InvalidOptionError
from .build import ExecutionProfile, StaticParts, build_report, static_parts
from .report import part_json_text, report_json_text

__all__ = ["AutoReportFiles", "auto_report_wanted", "write_report_files"]


def auto_report_wanted(options) -> bool:
    """Whether the engine ``options`` ask for report files."""
    return any(options[k] == "true" for k in ("autoReport.all", "autoReport.outputGraphProfile",
                                              "autoReport.outputExecutionProfile"))


class AutoReportFiles:
    """One engine's report files, written again and again (when it is built, after its
    first runs). What no run changes (target, graph, memory) is built and serialised
    once, at the first write, and reused: the files hold the same bytes as if each
    report were built and saved afresh. The reports it builds never leave it."""

    def __init__(self, exe, options: Dict[str, str], directory: str):
        self._exe = exe
        self._options = dict(options)
        self._directory = directory
        self._static: Optional[StaticParts] = None
        self._known: Dict[str, str] = {}

    def write(self, profile: Optional[ExecutionProfile]) -> List[str]:
        """Write the report of the runs ``profile`` counted (None: nothing has run);
        returns the paths written (write_report_files says what goes wrong how)."""
        if self._static is None:
            self._static = static_parts(self._exe)
            self._known = {"memory": part_json_text(self._static.memory)}
        report = build_report(self._exe, self._options, profile, self._static)
        return write_report_files(report, self._directory, report_json_text(report, self._known))


def write_report_files(report, directory: str, text: Optional[str] = None) -> List[str]:
    """Write ``report`` as ``profile.json`` (and ``report.html``) into ``directory``;
    returns the paths written. ``text``: ``report.to_json_text()`` when the caller has it.
    A directory that cannot be written is an InvalidOptionError naming the option
    (autoReport.directory is where it comes from)."""
    try:
        return _write_files(report, directory, text)
    except OSError as e:
        where = f" ({e.filename})" if e.filename and str(e.filename) != directory else ""
        raise InvalidOptionError(f"option 'autoReport.directory' is {directory!r}, where the report cannot be "
                                 f"written: {e.strerror or e}{where}; set it to a directory you can write to") from None


def _write_files(report, directory: str, text: Optional[str]) -> List[str]:
    os.makedirs(directory, exist_ok=True)
    json_path = os.path.join(directory, "profile.json")
    if text is None:
        text = report.to_json_text()  # serialised once: the page embeds the same text
    _write_text(json_path, text)
    written = [json_path]
    try:
        from .html import render_html
    except ImportError:  # the HTML page is optional; the JSON is the report
        return written
    html_path = os.path.join(directory, "report.html")
    _write_text(html_path, render_html(report, text))
    written.append(html_path)
    return written


def _write_text(path: str, text: str) -> None:
    """Write ``text`` to ``path`` as a new file. The old file (from the previous write) is
    removed first rather than truncated: on ext4, rewriting a truncated file makes its
    close start writing the data back to disk at once (the replace-via-truncate safeguard),
    which costs more than the rest of writing a report."""
    try:
        os.unlink(path)
    except OSError:  # none yet; or a directory we may not change, where writing over the file may still work
        pass
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
