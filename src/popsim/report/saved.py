"""Reading back a report saved to files: a profile.json (``Report.to_json``, autoReport)
or an archive.popsimexe (``autoReport.outputArchive``). Above report.py and build.py,
which know nothing of files."""
from __future__ import annotations

import json
import os

from ..errors import PopsimError
from .report import Report

__all__ = ["open_report"]


def open_report(path) -> Report:
    """Read a report saved with ``report.to_json`` (or by ``autoReport``): a
    profile.json file, or the directory holding one; or an ``archive.popsimexe``
    (``autoReport.outputArchive``: the compiled executable), whose report holds the target,
    graph and memory and no runs, as Poplar's tools read ``archive.a`` without a profile.
    A directory with no profile.json but an archive.popsimexe gives the archive's."""
    if os.path.isdir(path):
        profile, archive = os.path.join(path, "profile.json"), os.path.join(path, "archive.popsimexe")
        path = archive if not os.path.exists(profile) and os.path.exists(archive) else profile
    if str(path).endswith(".popsimexe"):
        from ..executable import Executable
        from .build import build_report
        exe = Executable.deserialize(path)  # a malformed file: PopsimError; its libraries are not loaded
        return build_report(exe, exe.options)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise PopsimError(f"cannot open report {str(path)!r}: {e}") from None
    if not isinstance(data, dict):
        raise PopsimError(f"cannot open report {str(path)!r}: it is not a popsim report (a JSON object)")
    return Report.from_dict(data)
