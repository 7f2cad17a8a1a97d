"""How runs fail across processes, run as a script:

    mpiexec -n N python tests/mpi/failure_program.py MODE OUT_DIR [REPLICAS]

Process k writes OUT_DIR/process{k}.txt: one line per run, ``<run> ok <y>`` or ``<run>
<ExceptionType>: <message>`` (or ``build ...`` if building failed), then ``done``. MODE
says what goes wrong:

- callback: the last replica's stream callback raises in run 0 (run 1 is clean);
- vertex: a vertex fails on the last replica in run 0;
- abort: AbortOnCondition holds on the last replica only;
- diverge: the last replica takes the other branch of an If;
- indivisible: the graph is replicated REPLICAS times (not a multiple of N);
- uncaught: the last process raises outside any run and does not catch it.
"""
import sys
from pathlib import Path


import popsim
from popsim import BOOL, FLOAT, INT, InOut, Input, Vector, Vertex, popops
from popsim.program import AbortOnCondition, Copy, CrossReplicaCopy, Execute, If, Sequence

TILES = 2
N = 4


class Check(Vertex):
    """Fails when its input is negative."""
    x: Input[Vector[float]]
    y: InOut[Vector[float]]

    def compute(self):
        for i in range(len(self.x)):
            if self.x[i] < 0.0:
                return False
            self.y[i] = self.y[i] + self.x[i]
        return True


def build(replicas: int, mode: str):
    model = popsim.IPUModel()
    model.num_ipus, model.tiles_per_ipu = replicas, TILES
    device = model.create_device()
    g = popsim.Graph(device, replication_factor=replicas)
    popops.add_codelets(g)
    g.add_codelets([Check])
    x, y = g.add_variable(FLOAT, (N,), "x"), g.add_variable(FLOAT, (N,), "y")
    flag = g.add_variable(BOOL, (), "flag")
    for t in (x, y, flag):
        g.set_tile_mapping(t, 0)
    g.create_host_read("y", y)
    xs = g.add_host_to_device_fifo("xs", FLOAT, N)
    prog = Sequence(Copy(xs, x))
    rid = g.add_replication_index_constant()
    g.set_tile_mapping(rid, 0)
    last = popops.eq(g, popops.cast(g, rid, INT, prog), replicas - 1, prog)
    if mode == "vertex":
        cs = g.add_compute_set("check")
        g.set_tile_mapping(g.add_vertex(cs, "Check", {"x": x, "y": y}), 0)
        prog.add(Execute(cs))
    elif mode == "abort":
        prog.add(AbortOnCondition(last, "the last replica says stop"))
    elif mode == "diverge":
        then = Sequence()
        popops.add_in_place(g, y, 1.0, then)
        prog.add(If(last, then))
    popops.add_in_place(g, y, x, prog)
    prog.add(CrossReplicaCopy(y, y, {k: (k + 1) % replicas for k in range(replicas)}))
    return device, g, prog


def main(mode: str, out_dir: str, replicas: int) -> None:
    me = popsim.dist.instance_index()
    log = open(Path(out_dir) / f"process{me}.txt", "w", buffering=1)
    if mode == "uncaught" and me == popsim.dist.num_instances() - 1:
        raise RuntimeError("process gives up before it runs")
    try:
        device, g, prog = build(replicas, mode)
    except popsim.PopsimError as e:
        print(f"build {type(e).__name__}: {e}", file=log)
        print("done", file=log)
        return
    mine = range(popsim.dist.replica_index_offset(), popsim.dist.replica_index_offset() +
                 popsim.dist.num_local_replicas())
    with popsim.Engine(g, prog, {"popsim.numThreads": "1"}) as engine:
        engine.load(device)
        for run in range(2):
            def feed(buf, r, run=run):
                if mode == "callback" and run == 0 and r == replicas - 1:
                    raise ValueError(f"no data for replica {r}")
                buf[:] = -1.0 if (mode == "vertex" and run == 0 and r == replicas - 1) else float(r + 1)
            for r in mine:
                engine.connect_stream_to_callback("xs", r, lambda buf, r=r: feed(buf, r))
            try:
                engine.run(0)
                print(f"{run} ok {engine.read_tensor('y').reshape(-1).tolist()}", file=log)
            except Exception as e:  # noqa: BLE001 - what each process sees
                print(f"{run} {type(e).__name__}: {e}".replace("\n", " "), file=log)
    print("done", file=log)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 4)
