"""The executable file (popsim/executable_file.py): what is saved comes back, field for
field; file objects work as Poplar's streams do; and no malformed file gets past a
PopsimError (tests/test_executable_fuzz.py tampers with real ones in thousands of ways)."""
import dataclasses
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import popsim
from popsim.lower import Lowered
from popsim.lower.compute_sets import VertexTables
from popsim.lower.layout import MemoryLayout

sys.path.insert(0, str(Path(__file__).resolve().parent))
from executable_sample import build, drive

pytestmark = pytest.mark.compiler
NOT_SAVED = {(VertexTables, "vertex_types"), (MemoryLayout, "index")}


def _compare(a, b, path: str, seen: set) -> None:
    """Every saved field of ``a`` equals ``b``'s, walked generically over dataclasses.fields."""
    if dataclasses.is_dataclass(a):
        assert type(a) is type(b), path
        for f in dataclasses.fields(a):
            seen.add((type(a), f.name))
            if (type(a), f.name) in NOT_SAVED:
                assert not f.metadata.get("saved", True), f"{path}.{f.name} should be marked NOT_SAVED"
                continue
            if (type(a), f.name) == (VertexTables, "codelets"):  # libraries are re-extracted elsewhere
                assert [s for _, s in getattr(a, f.name)] == [s for _, s in getattr(b, f.name)]
                assert [Path(p).read_bytes() for p, _ in getattr(a, f.name)] == \
                    [Path(p).read_bytes() for p, _ in getattr(b, f.name)]
                continue
            _compare(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}", seen)
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype, path
        np.testing.assert_array_equal(a, b, err_msg=path)
    elif isinstance(a, dict):
        assert list(a) == list(b), path
        for k in a:
            _compare(a[k], b[k], f"{path}.{k}", seen)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _compare(x, y, f"{path}.{i}", seen)
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def _all_fields(cls, out: set) -> set:
    import typing
    for f in dataclasses.fields(cls):
        out.add((cls, f.name))
        for t in [typing.get_type_hints(cls)[f.name], *typing.get_args(typing.get_type_hints(cls)[f.name])]:
            for inner in [t, *typing.get_args(t)]:
                if dataclasses.is_dataclass(inner) and (inner, None) not in out:
                    out.add((inner, None))
                    _all_fields(inner, out)
    return out


def test_every_field_of_lowered_round_trips(device, tmp_path):
    g, progs = build(device)
    exe = popsim.compile_graph(g, progs)
    exe.serialize(tmp_path / "p.popsimexe")
    back = popsim.Executable.deserialize(tmp_path / "p.popsimexe")
    seen: set = set()
    _compare(exe.lowered, back.lowered, "lowered", seen)
    every = {k for k in _all_fields(Lowered, set()) if k[1] is not None}
    assert every <= seen, f"fields never compared: {every - seen}"
    assert back.options == exe.options
    assert drive(popsim.Engine(back), device)["y"].tolist() == drive(popsim.Engine(exe), device)["y"].tolist()


def test_serialize_to_and_from_file_objects(device, tmp_path):
    g, progs = build(device)
    exe = popsim.compile_graph(g, progs)
    buffer = io.BytesIO()
    exe.serialize(buffer)                        # Poplar: exe.serialize(std::ostream&)
    buffer.seek(0)
    from_buffer = popsim.Executable.deserialize(buffer)
    with open(tmp_path / "f.popsimexe", "wb") as f:
        exe.serialize(f)
    with open(tmp_path / "f.popsimexe", "rb") as f:
        from_file = popsim.Executable.deserialize(f)
    expected = drive(popsim.Engine(exe), device)
    for loaded in (from_buffer, from_file):
        got = drive(popsim.Engine(loaded), device)
        np.testing.assert_array_equal(got["x"], expected["x"])
        assert got["cycles"] == expected["cycles"]
    with pytest.raises(popsim.PopsimError, match="needs a file path or a binary file object, found int"):
        exe.serialize(3)


def test_members_past_the_zip_size_limit_are_written_with_zip64(device, tmp_path, monkeypatch):
    """A whole ResNet-50's tables pass zip's 2 GiB member limit; zipfile refuses such a
    member unless told before writing it. The limit is lowered here to make every array
    "large" without writing gigabytes."""
    g, progs = build(device)
    exe = popsim.compile_graph(g, progs)
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 64)
    exe.serialize(tmp_path / "big.popsimexe")
    with zipfile.ZipFile(tmp_path / "big.popsimexe") as z:
        assert any(info.file_size > 64 for info in z.infolist())
    back = popsim.Executable.deserialize(tmp_path / "big.popsimexe")
    monkeypatch.undo()
    assert drive(popsim.Engine(back), device)["y"].tolist() == drive(popsim.Engine(exe), device)["y"].tolist()


def test_serialize_to_a_directory_is_refused_and_leaves_nothing(device, tmp_path):
    g, progs = build(device)
    exe = popsim.compile_graph(g, progs)
    target = tmp_path / "dir"
    target.mkdir()
    before = set(tmp_path.iterdir())
    with pytest.raises(popsim.PopsimError, match="is a directory; give a file path"):
        exe.serialize(target)
    assert set(tmp_path.iterdir()) == before and list(target.iterdir()) == []
    with pytest.raises(popsim.PopsimError, match="cannot write the executable"):
        exe.serialize(tmp_path / "missing" / "x.popsimexe")
    assert set(tmp_path.iterdir()) == before


def _saved(device) -> bytes:
    g, progs = build(device)
    buffer = io.BytesIO()
    popsim.compile_graph(g, progs).serialize(buffer)
    return buffer.getvalue()


def _rezip(data: bytes, change) -> io.BytesIO:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        members = {n: z.read(n) for n in z.namelist()}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, blob, kind in change(members):
            z.writestr(zipfile.ZipInfo(name), blob, compress_type=kind)
    out.seek(0)
    return out


def test_no_member_may_expand(device):
    """A compressed member could expand far beyond the file (a 4 MB file to 4 GiB):
    popsim writes them stored, and refuses anything else before reading it."""
    data = _saved(device)

    def bomb(members):
        for name, blob in members.items():
            yield name, blob, zipfile.ZIP_STORED
        yield "zeros.npy", b"\0" * (8 << 20), zipfile.ZIP_DEFLATED
    with pytest.raises(popsim.PopsimError, match="member 'zeros.npy' is compressed"):
        popsim.Executable.deserialize(_rezip(data, bomb))


def test_an_array_header_claiming_more_than_it_holds_is_refused(device):
    data = _saved(device)

    def huge(members):
        for name, blob in members.items():
            if name == "copy_runs.npy":
                head = b"{'descr': '<i8', 'fortran_order': False, 'shape': (4000000000000, 9), }"
                head += b" " * (63 - (len(head) + 10) % 64) + b"\n"
                blob = b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head + blob[-48:]
            yield name, blob, zipfile.ZIP_STORED
    with pytest.raises(popsim.PopsimError, match=r"array 'copy_runs.npy' declares shape \(4000000000000, 9\)"):
        popsim.Executable.deserialize(_rezip(data, huge))


def test_header_values_are_checked_against_their_fields(device):
    data = _saved(device)

    def edit(path, value):
        def change(members):
            for name, blob in members.items():
                if name == "header.json":
                    header = json.loads(blob)
                    node = header
                    for key in path[:-1]:
                        node = node[key]
                    node[path[-1]] = value
                    blob = json.dumps(header).encode()
                yield name, blob, zipfile.ZIP_STORED
        return _rezip(data, change)
    cases = [
        (("lowered", "layout", "arena_bytes"), "big", "layout.arena_bytes: expected an integer"),
        (("lowered", "streams", 0, "dtype"), "QUAD", "streams.0.dtype: expected an element type name"),
        (("lowered", "host_reads", "y", "table"), 10 ** 6, "host_reads.y: copy table 1000000 does not exist"),
        (("lowered", "programs", "callbacks", 0, "shape"), [10 ** 12], "callbacks.0: its copy table does not cover"),
        (("libraries", 0), "../../evil.so", "library name '../../evil.so' is not a plain file name"),
        (("lowered", "graph_counts"), {}, "graph_counts: unexpected keys"),
        (("options",), {"a": 1}, "its options are not a dict of strings"),
    ]
    for path, value, message in cases:
        with pytest.raises(popsim.PopsimError, match=message):
            popsim.Executable.deserialize(edit(path, value))


def _member_data_range(data: bytes, name: str):
    """(first byte, end) of member ``name``'s data in the zip ``data``."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        info = z.getinfo(name)
    start = info.header_offset + 30 + int.from_bytes(data[info.header_offset + 26:info.header_offset + 28], "little") \
        + int.from_bytes(data[info.header_offset + 28:info.header_offset + 30], "little")
    return start, start + info.file_size


def test_arrays_are_read_exactly_from_paths_and_from_any_file_object(device, tmp_path):
    """Members are read straight into their arrays, from a path, a file, a BytesIO at an
    offset, and an object that has only read and seek (no readinto)."""
    g, progs = build(device)
    exe = popsim.compile_graph(g, progs)
    data = _saved(device)
    path = tmp_path / "x.popsimexe"
    path.write_bytes(data)

    class ReadSeekOnly:
        def __init__(self, blob):
            self._f = io.BytesIO(blob)

        def read(self, n=-1):
            return self._f.read(n)

        def seek(self, offset, whence=0):
            return self._f.seek(offset, whence)

        def tell(self):
            return self._f.tell()

        def seekable(self):
            return True
    prefixed = io.BytesIO(b"junk before the executable" + data)
    prefixed.seek(len(b"junk before the executable"))
    with open(path, "rb") as f:
        loaded = [popsim.Executable.deserialize(path), popsim.Executable.deserialize(f),
                  popsim.Executable.deserialize(prefixed), popsim.Executable.deserialize(ReadSeekOnly(data))]
    for other in loaded:
        seen = set()
        _compare(exe.lowered, other.lowered, "lowered", seen)


def test_a_changed_byte_in_an_array_fails_its_crc(device):
    data = bytearray(_saved(device))
    start, end = _member_data_range(bytes(data), "copy_runs.npy")
    data[end - 3] ^= 0x40  # inside the array's data: the .npy header still agrees
    with pytest.raises(popsim.PopsimError, match="member 'copy_runs.npy' does not match its CRC-32"):
        popsim.Executable.deserialize(io.BytesIO(bytes(data)))


def test_a_member_without_its_local_header_is_refused(device):
    data = bytearray(_saved(device))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as z:
        offset = z.getinfo("copy_runs.npy").header_offset
    data[offset:offset + 4] = b"XXXX"
    with pytest.raises(popsim.PopsimError, match="cannot read executable .*'copy_runs.npy'"):
        popsim.Executable.deserialize(io.BytesIO(bytes(data)))


def test_a_truncated_file_is_refused(device, tmp_path):
    data = _saved(device)
    for keep in (len(data) // 3, len(data) // 2, len(data) - 30):
        path = tmp_path / f"cut{keep}.popsimexe"
        path.write_bytes(data[:keep])
        with pytest.raises(popsim.PopsimError, match="cannot read executable"):
            popsim.Executable.deserialize(path)


@pytest.mark.parametrize("header", ["version 2.0", "version 3.0", "spaced", "short", "not npy", "huge length"])
def test_array_headers_numpy_can_read_are_read_others_refused(device, header):
    """popsim reads the header numpy writes itself (format 1.0) without evaluating it;
    the other .npy versions go through numpy's parser; a bad header is refused."""
    data = _saved(device)
    original = popsim.Executable.deserialize(io.BytesIO(data)).lowered.copy_runs

    def rewrite(members):
        for name, blob in members.items():
            if name == "copy_runs.npy":
                a = np.lib.format.read_array(io.BytesIO(blob))
                out = io.BytesIO()
                if header.startswith("version"):
                    np.lib.format.write_array(out, a, version=(int(header[8]), 0))
                    blob = out.getvalue()
                elif header == "spaced":  # a legal header numpy would not write: its own parser reads it
                    text = f"{{'shape': {a.shape},  'fortran_order': False, 'descr': '<i8'}}".encode()
                    text += b" " * (63 - (len(text) + 10) % 64) + b"\n"
                    blob = b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + a.tobytes()
                elif header == "short":
                    blob = blob[:9]
                elif header == "not npy":
                    blob = b"PK" + blob[2:]
                else:
                    blob = blob[:8] + b"\xff\xff" + blob[10:]
            yield name, blob, zipfile.ZIP_STORED
    if header in ("short", "not npy", "huge length"):
        with pytest.raises(popsim.PopsimError, match="array 'copy_runs.npy' has a bad header"):
            popsim.Executable.deserialize(_rezip(data, rewrite))
    else:
        np.testing.assert_array_equal(popsim.Executable.deserialize(_rezip(data, rewrite)).lowered.copy_runs, original)


def test_pipes_and_devices_are_read_only_as_far_as_the_zip_records_say(device, tmp_path):
    """An executable arrives through a pipe as from a file; /dev/zero, as a path or a
    pipe, and an empty stream fail at once with a PopsimError instead of being read for
    ever."""
    import os
    import threading
    g, progs = build(device)
    exe = popsim.compile_graph(g, progs)
    data = _saved(device)

    def piped(blob):
        read_end, write_end = os.pipe()

        def feed():
            with os.fdopen(write_end, "wb") as w:
                try:
                    w.write(blob)
                except BrokenPipeError:
                    pass
        threading.Thread(target=feed, daemon=True).start()
        return os.fdopen(read_end, "rb")
    with piped(data) as f:
        _compare(exe.lowered, popsim.Executable.deserialize(f).lowered, "lowered", set())
    with pytest.raises(popsim.PopsimError, match="not a zip file"):
        popsim.Executable.deserialize("/dev/zero")
    zeros = subprocess.Popen(["head", "-c", str(1 << 30), "/dev/zero"], stdout=subprocess.PIPE)
    try:
        with pytest.raises(popsim.PopsimError, match=r"<file descriptor \d+>: it is not a zip file"):
            popsim.Executable.deserialize(zeros.stdout)
    finally:
        zeros.kill()
        zeros.wait()
    with piped(b"") as f, pytest.raises(popsim.PopsimError, match="truncated"):
        popsim.Executable.deserialize(f)
    with piped(data[:len(data) // 2]) as f, pytest.raises(popsim.PopsimError, match="truncated"):
        popsim.Executable.deserialize(f)
