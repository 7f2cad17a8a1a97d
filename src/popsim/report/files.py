"""autoReport: writing the report files Poplar's autoReport options ask for.

Which outputs are on (``auto_report_outputs``): each ``autoReport.output*`` option set to
true, and with ``autoReport.all`` every one not set to false, as in Poplar. What each
writes into ``autoReport.directory``:

- ``outputGraphProfile`` / ``outputExecutionProfile``: ``profile.json`` (and
  ``report.html``) when the engine is built; with the execution profile, again after each
  of the first ``executionProfileProgramRunCount`` runs of each program, at once
  (``streamAtEachRun``, the default) or once when the engine is closed or destroyed;
- ``outputDebugInfo``, ``outputLoweredVars``, ``outputSerializedGraph``, ``outputArchive``:
  ``debug.json``, ``vars.json``, ``serialized_graph.json``, ``archive.popsimexe``, once,
  when the engine is built (popsim/report/compiled_files.py).

The engine says when; this module writes.
"""
from __future__ import annotations

import os
from typing import Dict, FrozenSet, List, Optional

from ..errors import InvalidOptionError
from ..log import logger
from .build import ExecutionProfile, StaticParts, build_report, static_parts
from .compiled_files import COMPILED_FILES, write_compiled_file
from .report import part_json_text, report_json_text

__all__ = ["AutoReportFiles", "OUTPUTS", "auto_report_outputs", "auto_report_wanted", "write_report_files"]

#: Poplar's autoReport outputs (each the option ``autoReport.<name>``), all of which autoReport.all turns on.
OUTPUTS = ("outputGraphProfile", "outputExecutionProfile", "outputDebugInfo", "outputLoweredVars",
           "outputSerializedGraph", "outputArchive")
_PROFILE = frozenset(("outputGraphProfile", "outputExecutionProfile"))


def auto_report_outputs(options) -> FrozenSet[str]:
    """The outputs the engine ``options`` turn on: an ``autoReport.<output>`` set to true,
    or, with ``autoReport.all``, not set to false."""
    every = options["autoReport.all"] == "true"
    explicit = options.explicit
    on = set()
    for name in OUTPUTS:
        key = "autoReport." + name
        if explicit.get(key) == "true" or (every and key not in explicit):
            on.add(name)
    return frozenset(on)


def auto_report_wanted(options) -> bool:
    """Whether the engine ``options`` ask for the profile (``profile.json``)."""
    return bool(auto_report_outputs(options) & _PROFILE)


class AutoReportFiles:
    """One engine's report files. ``at_build`` writes what the options ask for when the
    engine is built; ``after_run`` the execution profile after each counted run (or keeps
    it for ``at_close`` when ``autoReport.streamAtEachRun`` is false). What no run changes
    (target, graph, memory) is built and serialised once, at the first write, and reused:
    the files hold the same bytes as if each report were built and saved afresh."""

    def __init__(self, exe, options, graph=None):
        self._exe = exe
        self._explicit: Dict[str, str] = dict(options.explicit)
        self._directory: str = options["autoReport.directory"]
        self._outputs = auto_report_outputs(options)
        self._run_count = int(options["autoReport.executionProfileProgramRunCount"])
        self._stream = options["autoReport.streamAtEachRun"] == "true"
        self._graph = graph  # the GraphDescription, when the engine was built from a graph
        self._static: Optional[StaticParts] = None
        self._known: Dict[str, str] = {}
        self._pending: Optional[ExecutionProfile] = None  # streamAtEachRun=false: written at close
        self.written: List[str] = []

    @property
    def outputs(self) -> FrozenSet[str]:
        return self._outputs

    def at_build(self, profile: Optional[ExecutionProfile]) -> None:
        """The files due when the engine is built: the profile (nothing has run) and the
        compile-time files."""
        if self._outputs & _PROFILE:
            self._write_profile(profile)
        for output, name in COMPILED_FILES.items():
            if output in self._outputs:
                self._compiled_file(output, name)
        self._graph = None  # only the files written here read it: the engine does not keep the graph alive

    def after_run(self, runs_of_program: int, profile) -> None:
        """After a run of a program that has now run ``runs_of_program`` times: the
        execution profile (``profile()`` makes it) when that is one of the first
        executionProfileProgramRunCount runs of the program."""
        if "outputExecutionProfile" not in self._outputs or runs_of_program > self._run_count:
            return
        if self._stream:
            self._write_profile(profile())
        else:
            self._pending = profile()

    def at_close(self) -> None:
        """When the engine is closed or destroyed: the execution profile kept back by
        ``autoReport.streamAtEachRun=false``."""
        pending, self._pending = self._pending, None
        if pending is not None:
            self._write_profile(pending)

    def _write_profile(self, profile: Optional[ExecutionProfile]) -> None:
        if self._static is None:
            self._static = static_parts(self._exe)
            self._known = {"memory": part_json_text(self._static.memory)}
        report = build_report(self._exe, self._explicit, profile, self._static)
        self._note(write_report_files(report, self._directory, report_json_text(report, self._known)))

    def _compiled_file(self, output: str, name: str) -> None:
        why_not = _cannot_write(output, self._exe, self._graph)
        if why_not:
            if "autoReport." + output in self._explicit:
                raise InvalidOptionError(f"option 'autoReport.{output}' asks for {name}, which cannot be written: "
                                         f"{why_not}; or set autoReport.{output}=false")
            logger.warning("autoReport.all: %s is not written: %s", name, why_not)
            return
        path = os.path.join(self._directory, name)
        try:
            os.makedirs(self._directory, exist_ok=True)
            write_compiled_file(output, path, self._exe, self._graph)
        except OSError as e:
            raise _directory_error(self._directory, e) from None
        self._note([path])

    def _note(self, paths: List[str]) -> None:
        for p in paths:
            if p not in self.written:
                self.written.append(p)


def _cannot_write(output: str, exe, graph) -> str:
    if output == "outputSerializedGraph" and graph is None:
        return ("the engine was built from an Executable, which holds no graph; build the engine from the graph "
                "(Engine(graph, programs, options))")
    if output == "outputArchive" and exe.interpreted:
        return ("the executable runs Python vertex classes (popsim.codeletMode=interpreted) and cannot be saved; "
                "compile it in compiled mode")
    return ""


def write_report_files(report, directory: str, text: Optional[str] = None) -> List[str]:
    """Write ``report`` as ``profile.json`` (and ``report.html``) into ``directory``;
    returns the paths written. ``text``: ``report.to_json_text()`` when the caller has it.
    A directory that cannot be written is an InvalidOptionError naming the option
    (autoReport.directory is where it comes from)."""
    try:
        return _write_files(report, directory, text)
    except OSError as e:
        raise _directory_error(directory, e) from None


def _directory_error(directory: str, e: OSError) -> InvalidOptionError:
    where = f" ({e.filename})" if e.filename and str(e.filename) != directory else ""
    return InvalidOptionError(f"option 'autoReport.directory' is {directory!r}, where the report cannot be "
                              f"written: {e.strerror or e}{where}; set it to a directory you can write to")


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
