"""autoReport: writing the report to files as Poplar's autoReport options ask.

``autoReport.all``, or ``autoReport.outputGraphProfile`` / ``outputExecutionProfile``,
write ``profile.json`` (and ``report.html``) into ``autoReport.directory``: once when the
engine is built, and after each of the first ``autoReport.executionProfileProgramRunCount``
runs (so that the files hold what those runs cost).
"""
from __future__ import annotations

import os
from typing import List

from ..errors import InvalidOptionError
from .build import build_report


def _wanted(options) -> bool:
    return any(options[k] == "true" for k in ("autoReport.all", "autoReport.outputGraphProfile",
                                              "autoReport.outputExecutionProfile"))


def _write(report, directory: str) -> List[str]:
    try:
        return _write_files(report, directory)
    except OSError as e:
        where = f" ({e.filename})" if e.filename and str(e.filename) != directory else ""
        raise InvalidOptionError(f"option 'autoReport.directory' is {directory!r}, where the report cannot be "
                                 f"written: {e.strerror or e}{where}; set it to a directory you can write to") from None


def _write_files(report, directory: str) -> List[str]:
    os.makedirs(directory, exist_ok=True)
    json_path = os.path.join(directory, "profile.json")
    report.to_json(json_path)
    written = [json_path]
    try:
        from .html import write_html
    except ImportError:  # the HTML page is optional; the JSON is the report
        return written
    html_path = os.path.join(directory, "report.html")
    write_html(report, html_path)
    written.append(html_path)
    return written


def write_auto_report_for(exe, options, machine=None) -> List[str]:
    """Write the report of an executable that has not run (e.g. out of memory)."""
    if not _wanted(options):
        return []
    return _write(build_report(exe, options.explicit), options["autoReport.directory"])


def write_auto_report(engine, after_run: bool) -> List[str]:
    options = engine.options
    if not _wanted(options):
        return []
    if after_run and sum(engine._program_runs) > int(options["autoReport.executionProfileProgramRunCount"]):
        return []
    report = build_report(engine.executable, options.explicit, engine._machine, engine._program_runs,
                          engine._program_names)
    return _write(report, options["autoReport.directory"])
