"""ResNet-50 from the onnx package, estimated by popsim.popart on the modelled IPU: for each
batch size, whether it fits one Mk2 IPU (1,472 tiles of 624 kB), the fullest tile, the
modelled cycles of one inference step and the images per second on one IPU and on R
replicas (one IPU each, counted: R times one IPU's figure; docs/onnx.md says what that
leaves out). ``--train`` estimates training steps (an L1 loss of the output, SGD) instead.

    python examples/onnx_resnet50.py                     # batch 1 (building takes minutes)
    python examples/onnx_resnet50.py --batches 1,2,4,8,16 --replicas 16 [--train]

The model is the onnx package's light ResNet-50 (onnx/backend/test/data/light/, opset 9,
constant weights): the full topology and shapes of ResNet-50 v1, so memory and cycles are
those of the real network. docs/onnx.md ("The estimate's caveats") says what the figures
leave out and how they compare with Graphcore's published ones.
"""
import argparse
import os
import sys
import time

from popsim.popart.estimate import DEFAULT_TILES, estimate


def resnet50_path() -> str:
    import onnx
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", "light_resnet50.onnx")


def batches(text: str) -> list:
    """'1,2,4' or '1-16' (every batch from 1 to 16) or a mix: '1-4,8,16'."""
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi or lo)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--batches: {part!r} is not a batch size or a range like 1-16") from None
        if first < 1 or last < first:
            raise argparse.ArgumentTypeError(f"--batches: {part!r} must be positive, low to high")
        out += range(first, last + 1)
    return out


def header(replicas: int) -> str:
    return (f"{'batch':>5}  {'fits':<4}  {'fullest tile':>22}  {'cycles/step':>13}  {'img/s, 1 IPU':>12}  "
            f"{f'img/s, {replicas} IPUs':>14}  {'build':>7}")


def row(e, seconds: float) -> str:
    t, b = e.fullest[0]
    tile = f"{b / 1024:,.0f} kB ({100.0 * b / e.bytes_per_tile:.0f}%) #{t}"
    if e.cycles_per_step is None:
        cycles = one = many = "-"
    else:
        cycles = f"{e.cycles_per_step:,.0f}"
        one, many = f"{e.samples_per_second / e.replicas:,.1f}", f"{e.samples_per_second:,.1f}"
    return (f"{e.batch:>5}  {'yes' if e.fits else 'NO':<4}  {tile:>22}  {cycles:>13}  {one:>12}  {many:>14}  "
            f"{seconds:>6.0f}s")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=batches, default=[1], help="batch sizes: '1,2,4' or '1-16' (default 1)")
    parser.add_argument("--replicas", type=int, default=4, help="replicas for the replicated column (default 4: "
                        "an IPU-M2000)")
    parser.add_argument("--tiles-per-ipu", type=int, default=DEFAULT_TILES)
    parser.add_argument("--train", action="store_true", help="training steps (an L1 loss, SGD) instead of inference")
    parser.add_argument("--model", default=None, help="another .onnx model (default: the onnx package's ResNet-50)")
    parser.add_argument("--report", default=None, help="write the HTML report of the last batch here")
    args = parser.parse_args(argv)
    model = args.model or resnet50_path()
    kind = "training" if args.train else "inference"
    print(f"{os.path.basename(model)} on {args.tiles_per_ipu:,}-tile IPUs (modelled), one {kind} step per batch")
    print(header(args.replicas))
    for i, batch in enumerate(args.batches):
        start = time.perf_counter()
        last = i == len(args.batches) - 1
        e = estimate(model, batch, replicas=args.replicas, tiles_per_ipu=args.tiles_per_ipu, train=args.train,
                     report_path=args.report if last else None, progress=sys.stderr.isatty())
        print(row(e, time.perf_counter() - start), flush=True)
    if args.report:
        print(f"report of batch {args.batches[-1]}: {args.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
