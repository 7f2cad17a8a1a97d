"""``python -m popsim.popart ops``: the ONNX ops popsim.popart runs, from its op table;
``python -m popsim.popart node-tests [OP ...]``: ONNX's node tests of those ops (all supported
ones by default) run, with the pass counts per op (popart/node_tests.py);
``python -m popsim.popart estimate MODEL.onnx --batch N``: whether the model fits the modelled
IPU at that batch, memory per tile, cycles per step, samples/s and its costliest ops
(popart/estimate.py); exit status 0 when it fits, 1 when it does not."""
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
    es = sub.add_parser("estimate", help="would the model fit at this batch, and how fast would it run")
    es.add_argument("model", help="an .onnx file")
    es.add_argument("--batch", type=int, required=True, help="the batch size (the inputs' first dimension)")
    es.add_argument("--ipus", type=int, default=1,
                    help="IPUs per replica: the model is sharded over them as PopART's virtualGraphMode Auto does")
    es.add_argument("--pipeline", action="store_true", help="pipeline the IPUs' shards (enablePipelining)")
    es.add_argument("--replicas", type=int, default=1, help="copies of the model, --ipus IPUs each")
    es.add_argument("--build-replicas", action="store_true",
                    help="build the replicas as a replicated graph and run them, rather than count one R times")
    es.add_argument("--train", action="store_true",
                    help="estimate a training step (an L1 loss of the first output, SGD)")
    es.add_argument("--tiles-per-ipu", type=int, default=1472, help="tiles of each IPU (default: a Mk2's 1472)")
    es.add_argument("--batches-per-step", type=int, default=1, help="batches a step runs on the device")
    es.add_argument("--report", default="estimate_report.html", help="where to write the HTML report ('' for none)")
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
    elif args.command == "estimate":
        from .errors import popart_exception
        from .estimate import estimate
        try:
            e = estimate(args.model, args.batch, ipus=args.ipus, replicas=args.replicas, train=args.train,
                         tiles_per_ipu=args.tiles_per_ipu, batches_per_step=args.batches_per_step,
                         report_path=args.report or None, build_replicas=args.build_replicas,
                         pipeline=args.pipeline)
        except popart_exception as err:
            parser.exit(2, f"{parser.prog} estimate: error: {err}\n")
        sys.stdout.write(e.text())
        return 0 if e.fits else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
