"""``python -m popsim.popart ops``: the ONNX ops popsim.popart runs, from its op table;
``python -m popsim.popart node-tests [OP ...]``: ONNX's node tests of those ops (all supported
ones by default) run, with the pass counts per op (popart/node_tests.py)."""
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
    nt = sub.add_parser("node-tests", help="run onnx's node tests of the supported ops; pass counts per op")
    nt.add_argument("ops", nargs="*", help="ONNX op types (default: every supported op)")
    nt.add_argument("-v", "--verbose", action="store_true", help="list each case that did not pass, and why")
    nt.add_argument("--float16", action="store_true", help="run the one-node float32 cases with FLOAT16 tensors")
    args = parser.parse_args(argv)
    if args.command == "ops":
        sys.stdout.write(ops_table())
    elif args.command == "node-tests":
        from .node_tests import all_counts, counts_table, run_op
        counts = [run_op(o, float16=args.float16) for o in args.ops] if args.ops else all_counts(float16=args.float16)
        if args.verbose:
            for c in counts:
                for o in c.outcomes:
                    if o.status != "pass":
                        print(f"{c.op_type}: {o.case}: {o.status}: {o.reason}", file=sys.stderr)
        sys.stdout.write(counts_table(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
