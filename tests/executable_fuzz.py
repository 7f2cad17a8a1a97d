"""Fuzzing executables: a real compiled executable, tampered with in many ways (array
values, shapes and dtypes, header values and types, zip structure), each loaded, built,
run and reported on like a user would. Every case must end in a PopsimError or run:
anything else (a crash, another exception) fails. Run as a script, in its own process,
so that a crash is a failure rather than the end of the test session:

    python tests/executable_fuzz.py SAMPLE PATH SEED CASES

SAMPLE: ``one`` (executable_sample.build: every part of an executable) or ``replicated``
(build_replicated: 2 replicas of 2 IPUs). PATH: ``file`` (Executable.deserialize) or
``cache`` (an executable-cache entry of the graph, rewritten with a matching digest, as
anyone who can write the cache directory can: only the executable's own checks stand
between it and the core). Prints one line per case and "DONE" with the outcomes at the
end; a crash leaves the last case printed.
"""
import io
import json
import random
import signal
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import popsim
from popsim.cachedir import store_verified
from popsim.report.html import render_html
from executable_sample import build, build_replicated, drive, drive_replicated

# Values that probe the edges of whatever a number means.
EDGES = [-(2 ** 63), -(2 ** 31), -2, -1, 0, 1, 2, 3, 7, 8, 255, 2 ** 16, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 40,
         2 ** 62, 2 ** 63 - 1]


class TimedOut(Exception):
    """A tampered program may loop forever, as a real one can: Ctrl-C (here, an alarm) stops it."""


def _alarm(signum, frame):
    raise TimedOut()


def read_members(data: bytes):
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {n: z.read(n) for n in z.namelist()}


def write_members(members, compress=()) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for name, blob in members.items():
            z.writestr(zipfile.ZipInfo(name), blob,
                       compress_type=zipfile.ZIP_DEFLATED if name in compress else zipfile.ZIP_STORED)
    return out.getvalue()


def npy_bytes(a: np.ndarray) -> bytes:
    f = io.BytesIO()
    np.lib.format.write_array(f, a, allow_pickle=False)
    return f.getvalue()


# The tables the core runs: tampered with more often than report metadata.
CORE = ("programs.instrs", "programs.entries", "programs.cases", "programs.switch_begin", "programs.switch_default",
        "copy_runs", "table_begin", "table_overlaps", "init_image", "init_sizes", "vertex_values", "vertices.vertices",
        "vertices.fields", "vertices.spans", "vertices.groups", "vertices.compute_sets", "vertices.exchange_costs")


def tamper_array(rng, members, arena_bytes):
    names = [n for n in members if n.endswith(".npy")]
    core = [n for n in names if n[:-4] in CORE]
    name = rng.choice(core if rng.random() < 0.7 else names)
    a = np.lib.format.read_array(io.BytesIO(members[name]))
    how = rng.randrange(6)
    if how <= 2 and a.size:
        flat = a.reshape(-1).copy()
        i = rng.randrange(flat.size)
        old = flat[i].item()
        choices = EDGES + [old + 1, old - 1, old * 2 if isinstance(old, int) else old, arena_bytes - 1,
                           arena_bytes, arena_bytes + 1, arena_bytes - 4, arena_bytes // 2]
        value = rng.choice(choices)
        try:
            flat[i] = value
        except (OverflowError, ValueError):
            with np.errstate(all="ignore"):
                flat[i] = np.asarray(value, np.float64).astype(flat.dtype)  # wrapped into the dtype
        a = flat.reshape(a.shape)
        what = f"{name}[{i}] = {value}"
    elif how == 3:
        a = a.astype(np.float64) if a.dtype.kind != "f" else a.astype(np.int64)
        what = f"{name} as {a.dtype}"
    elif how == 4:
        a = a.reshape(-1)[:max(0, a.size - 1)]
        what = f"{name} flattened and shortened"
    else:
        a = np.concatenate([a, a]) if a.ndim else a
        what = f"{name} doubled"
    members[name] = npy_bytes(np.ascontiguousarray(a))
    return what


def _leaves(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _leaves(v, path + (i,))
    yield path, node


def tamper_header(rng, members):
    header = json.loads(members["header.json"])
    leaves = [p for p, _ in _leaves(header) if p]
    path = rng.choice(leaves)
    parent = header
    for key in path[:-1]:
        parent = parent[key]
    how = rng.randrange(5)
    if how == 0 and isinstance(parent, dict):
        del parent[path[-1]]
        what = f"deleted {'.'.join(map(str, path))}"
    else:
        value = rng.choice([None, "", "x/../../y", -1, 0, 1, 2 ** 40, 2.5, True, [], {}, [1, 2], "FLOAT", "ipu9"] +
                           [rng.choice(EDGES)])
        parent[path[-1]] = value
        what = f"{'.'.join(map(str, path))} = {value!r}"
    members["header.json"] = json.dumps(header).encode()
    return what


def tamper_zip(rng, data: bytes, members):
    how = rng.randrange(4)
    if how == 0:
        return data[:rng.randrange(len(data))], "truncated"
    if how == 1:
        name = rng.choice(list(members))
        return write_members(members, compress={name}), f"{name} compressed"
    if how == 2:  # a .npy whose header claims far more than it holds
        name = rng.choice([n for n in members if n.endswith(".npy")])
        head = b"{'descr': '<f8', 'fortran_order': False, 'shape': (4000000000000,), }"
        head += b" " * (63 - (len(head) + 10) % 64) + b"\n"
        members[name] = b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head + b"\0" * 64
        return write_members(members), f"{name} claims 32 TB"
    name = rng.choice(list(members))
    members[name] = bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
    return write_members(members), f"{name} replaced by noise"


class FileLoader:
    """Tampered files through Executable.deserialize."""

    def __init__(self, graph, programs, workdir: Path):
        data = io.BytesIO()
        popsim.compile_graph(graph, programs).serialize(data)
        self.original = data.getvalue()

    def engine(self, data: bytes):
        """(engine, how it was made)."""
        return popsim.Engine(popsim.Executable.deserialize(io.BytesIO(data))), "loaded"


class CacheLoader:
    """Tampered executable-cache entries of ``graph``, each stored with its sha256 (so that
    it is verified) and found by building an Engine of the graph."""

    def __init__(self, graph, programs, workdir: Path):
        self.graph, self.programs = graph, programs
        self.options = {"popsim.cacheDir": tempfile.mkdtemp(dir=workdir, prefix="cache-")}
        engine = popsim.Engine(graph, programs, self.options)
        key = engine.get_report().compilation.cache_key
        engine.close()
        self.entry = Path(self.options["popsim.cacheDir"]) / "executables" / f"{key}.popsimexe"
        self.original = self.entry.read_bytes()

    def engine(self, data: bytes):
        store_verified(self.entry, data)
        engine = popsim.Engine(self.graph, self.programs, self.options)
        # An entry refused when read is compiled again (and must then run as compiled).
        return engine, "loaded" if engine.get_report().compilation.from_cache else "compiled again"


def _one():
    device = popsim.IPUModel("ipu2").create_device()
    return (device, *build(device), drive)


# Each: () -> (device, graph, programs, how to drive an engine of them).
SAMPLES = {"one": _one, "replicated": lambda: (*build_replicated(), drive_replicated)}
LOADERS = {"file": FileLoader, "cache": CacheLoader}


def read_reports(engine) -> None:
    """Everything a report shows of the runs so far (a failed one included): per step,
    per tile, per vertex type, the trace and the memory tables, as text, JSON and HTML."""
    report = engine.get_report()
    report.summary({"showExecutionSteps": "true"})
    render_html(report, report.to_json_text())


def one_case(rng, original: bytes, device, loader, run):
    members = read_members(original)
    arena_bytes = json.loads(members["header.json"])["lowered"]["layout"]["arena_bytes"]
    kind = rng.randrange(10)
    if kind < 6:
        what = tamper_array(rng, members, arena_bytes)
        data = write_members(members)
    elif kind < 9:
        what = tamper_header(rng, members)
        data = write_members(members)
    else:
        data, what = tamper_zip(rng, original, members)
    print(what, flush=True)
    signal.alarm(3)
    try:
        engine, how = loader.engine(data)
        try:
            try:
                run(engine, device)
                outcome = "ran" if how == "loaded" else how
            except popsim.PopsimError as e:
                outcome = f"refused: {type(e).__name__} when run: {str(e)[:100]}"
            read_reports(engine)
        finally:
            engine.close()
        return outcome
    except popsim.PopsimError as e:
        return f"refused: {type(e).__name__}: {str(e)[:100]}"
    except TimedOut:
        return "stopped (endless loop)"
    finally:
        signal.alarm(0)


def main(sample: str, path: str, seed: int, cases: int) -> None:
    signal.signal(signal.SIGALRM, _alarm)
    device, graph, programs, run = SAMPLES[sample]()
    loader = LOADERS[path](graph, programs, Path.cwd())
    rng = random.Random(seed)
    outcomes = {}
    for case in range(cases):
        print(f"case {case}: ", end="", flush=True)
        outcome = one_case(rng, loader.original, device, loader, run)
        outcomes[outcome.split(":")[0]] = outcomes.get(outcome.split(":")[0], 0) + 1
        print(f"  -> {outcome}", flush=True)
    print("DONE", json.dumps(outcomes))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
