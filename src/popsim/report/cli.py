"""``popsim-report``: read a saved report on the command line.

    popsim-report PATH                  the text summary (PATH: profile.json or its directory, or
                                        an archive.popsimexe: autoReport.outputArchive's executable)
    popsim-report PATH --steps          ... with every execution step
    popsim-report PATH --html OUT       write the report as one HTML page
    popsim-report PATH --compare OTHER  what changed from PATH to OTHER

Exit status 0 on success, 2 when a report cannot be read or a file cannot be written
(the reason on stderr).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

from ..errors import PopsimError
from .saved import open_report


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="popsim-report",
        description="Show a popsim profile saved by autoReport (or report.to_json): its text summary, an HTML page "
                    "with plots, or its differences from another report.")
    p.add_argument("path", metavar="PATH", help="a profile.json file, or the directory holding one, or an "
                                                "archive.popsimexe (the report of its graph and memory, no runs)")
    p.add_argument("--html", metavar="OUT", help="write the report as a self-contained HTML page to OUT")
    p.add_argument("--compare", metavar="OTHER", help="print what changed from PATH (A) to the report OTHER (B)")
    p.add_argument("--steps", action="store_true",
                   help="show every execution step (in the summary; with --compare, every matched step)")
    return p


def _fail(message: str) -> int:
    print(f"popsim-report: error: {message}", file=sys.stderr)
    return 2


def _where(path: str) -> str:
    return os.path.join(path, "profile.json") if os.path.isdir(path) else path


def main(argv: Optional[List[str]] = None) -> int:
    """Run ``popsim-report`` with ``argv`` (default: the command line); returns the exit status."""
    args = _parser().parse_args(argv)
    reports = []
    for path in [args.path] + ([args.compare] if args.compare else []):
        try:
            reports.append(open_report(path))
        except PopsimError as e:
            text = str(e)
            return _fail(text if path in text else f"{_where(path)}: {text}")
    try:
        return _show(args, reports[0], reports[1] if args.compare else None)
    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as e:
        # a file that has the report's fields but not their types
        which = " or ".join(_where(p) for p in [args.path] + ([args.compare] if args.compare else []))
        return _fail(f"{which}: the report is malformed ({type(e).__name__}: {e}); re-create it")


def _show(args, report, other) -> int:
    if args.html:
        from .html import write_html
        try:
            write_html(report, args.html)
        except OSError as e:
            return _fail(f"cannot write {args.html!r}: {e.strerror or e}")
        print(f"Wrote {args.html}")
    if other is not None:
        from .compare import compare
        sys.stdout.write(compare(report, other, labels=(_where(args.path), _where(args.compare)),
                                 max_steps=None if args.steps else 50))
    if not args.html and other is None:
        sys.stdout.write(report.summary({"showExecutionSteps": "true" if args.steps else "false"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
