"""``python -m popsim.popart ops``: the ONNX ops popsim.popart runs, from its op table."""
import argparse
import sys

from .op_table import supported_ops


def ops_table() -> str:
    """The supported ops as a markdown table (docs/onnx.md shows the same)."""
    rows = ["| ONNX op | opsets | lowered onto |", "|---|---|---|"]
    for d in supported_ops():
        since = max(d.since, 9)
        opsets = f"{since}–{d.until}" if d.until else f"{since}+"
        rows.append(f"| {d.op_type} | {opsets} | {d.summary} |")
    return "\n".join(rows) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m popsim.popart", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("ops", help="list the supported ONNX ops and opsets")
    args = parser.parse_args(argv)
    if args.command == "ops":
        sys.stdout.write(ops_table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
