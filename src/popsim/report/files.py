"""autoReport: writing the report to files as Poplar's autoReport options ask.

``autoReport.all``, or ``autoReport.outputGraphProfile`` / ``outputExecutionProfile``,
write ``profile.json`` (and ``report.html``) into ``autoReport.directory``: once when the
engine is built, and after each of the first ``autoReport.executionProfileProgramRunCount``
runs (so that the files hold what those runs cost). The engine decides when; this module
only writes.
"""
from __future__ import annotations

import os
from typing import List

from ..errors import InvalidOptionError

__all__ = ["auto_report_wanted", "write_report_files"]


def auto_report_wanted(options) -> bool:
    """Whether the engine ``options`` ask for report files."""
    return any(options[k] == "true" for k in ("autoReport.all", "autoReport.outputGraphProfile",
                                              "autoReport.outputExecutionProfile"))


def write_report_files(report, directory: str) -> List[str]:
    """Write ``report`` as ``profile.json`` (and ``report.html``) into ``directory``;
    returns the paths written. A directory that cannot be written is an
    InvalidOptionError naming the option (autoReport.directory is where it comes from)."""
    try:
        return _write_files(report, directory)
    except OSError as e:
        where = f" ({e.filename})" if e.filename and str(e.filename) != directory else ""
        raise InvalidOptionError(f"option 'autoReport.directory' is {directory!r}, where the report cannot be "
                                 f"written: {e.strerror or e}{where}; set it to a directory you can write to") from None


def _write_files(report, directory: str) -> List[str]:
    os.makedirs(directory, exist_ok=True)
    json_path = os.path.join(directory, "profile.json")
    text = report.to_json_text()  # serialised once: the page embeds the same text
    with open(json_path, "w", encoding="utf-8") as f:
        f.write(text)
    written = [json_path]
    try:
        from .html import write_html
    except ImportError:  # the HTML page is optional; the JSON is the report
        return written
    html_path = os.path.join(directory, "report.html")
    write_html(report, html_path, text)
    written.append(html_path)
    return written
