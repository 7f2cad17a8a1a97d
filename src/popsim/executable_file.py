"""The executable file format: a zip of numpy arrays, a JSON header and the codelet
libraries the executable runs, written and read by popsim.Executable.

The header and the arrays are what popsim/codec.py makes of the Lowered dataclasses
(driven by their fields). Members are stored uncompressed and each carries the zip
format's CRC-32. Reading checks everything before trusting it: member sizes against
the file's size (no decompression bombs), every .npy header against its data, every
header value against its field's annotation, and the whole against itself
(lower/consistency.py); the core checks its tables again when an engine is built.
Every failure is a PopsimError.

Executables are native code: the libraries inside run when an engine loads them.
Load only files you trust, as with pickle.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import stat
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np

from .cachedir import is_verified, store_verified, write_atomic
from .codec import CodecError, decode, encode
from .errors import PopsimError
from .lower import Lowered
from .lower.compute_sets import VertexTables
from .lower.consistency import check_lowered
from .version import __version__
from .zip_stream import read_zip_stream

__all__ = ["FORMAT_VERSION", "write_executable", "read_executable"]

# 8: gathers by tile group (groups.first_gather, end_gather; compute_sets.gathers_by_group);
# 7: copy tables as strided runs (copy_runs); 6: layout's not-always-live bytes; 5: field layouts
# say which fields are scalars; 4: replicas and per-IPU step costs
FORMAT_VERSION = 8
MAGIC = "popsim-executable"
_HEADER = "header.json"
_LIBRARY = "library/"
_SAFE_NAME = re.compile(r"[A-Za-z0-9_.+-]{1,200}")
_NPY_KINDS = "biuf"
#: The most bytes read from a stream that cannot seek (the zip's own records bound it first).
MAX_FILE_BYTES = 1 << 40


# -- writing ------------------------------------------------------------------------------------
def _library_hooks(libraries: List[str]):
    """Codec hooks that store VertexTables.codelets as (library index, symbol) pairs."""
    def enc(codelets, path, arrays):
        for lib, _ in codelets:
            if lib not in libraries:
                libraries.append(lib)
        return [[libraries.index(lib), symbol] for lib, symbol in codelets]
    return {(VertexTables, "codelets"): (enc, None)}


def write_executable(target, lowered: Lowered, options: Dict[str, str]) -> None:
    """Write ``lowered`` to ``target``: a file path or a binary file object."""
    libraries: List[str] = []
    body, arrays = encode(lowered, _library_hooks(libraries))
    header = {"magic": MAGIC, "format": FORMAT_VERSION, "popsim": __version__, "options": dict(options),
              "libraries": [Path(lib).name for lib in libraries], "lowered": body}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
        for name, a in arrays.items():
            # a member of 2 GiB or more needs zip64 sizes, and zipfile must be told before it
            # writes the member's header (a whole ResNet-50's tables pass that size)
            big = a.nbytes + 4096 >= zipfile.ZIP64_LIMIT
            with z.open(name + ".npy", "w", force_zip64=big) as f:
                np.lib.format.write_array(f, a, allow_pickle=False)
        for k, lib in enumerate(libraries):
            z.write(lib, f"{_LIBRARY}{k}")
        z.writestr(_HEADER, json.dumps(header))
    data = buffer.getvalue()
    if hasattr(target, "write"):
        target.write(data)
        return
    path = Path(target)
    if path.is_dir():
        raise PopsimError(f"cannot serialize to {path}: it is a directory; give a file path such as "
                          f"{path / 'program.popsimexe'}")
    write_atomic(path, data)


# -- reading ------------------------------------------------------------------------------------
def _regular(source) -> bool:
    """Whether ``source`` (a path or a binary file object) can be read as a file of known
    size: a regular file, or an in-memory or other seekable file object that is not a
    device, pipe or socket."""
    if not hasattr(source, "read"):
        return stat.S_ISREG(os.stat(source).st_mode)
    try:
        return stat.S_ISREG(os.fstat(source.fileno()).st_mode)
    except (AttributeError, OSError, io.UnsupportedOperation):
        return hasattr(source, "seekable") and source.seekable() and hasattr(source, "readinto")


def _size_of(source) -> int:
    if hasattr(source, "seek"):
        here = source.tell()
        end = source.seek(0, io.SEEK_END)
        source.seek(here)
        return end - here
    return os.path.getsize(source)


def _members(z: zipfile.ZipFile, file_size: int) -> Dict[str, zipfile.ZipInfo]:
    """The members, refused unless stored whole and uncompressed (what write_executable
    makes): their declared sizes then cannot exceed the file's, so nothing expands."""
    infos = z.infolist()
    total = 0
    for info in infos:
        if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size:
            raise PopsimError(f"member {info.filename!r} is compressed; popsim writes executables uncompressed")
        total += info.file_size
    if total > file_size:
        raise PopsimError(f"its members claim {total:,} bytes, more than the file's {file_size:,}")
    return {info.filename: info for info in infos}


# A zip member's local header: signature, version, flags, method, time, date, crc, sizes,
# name and extra-field lengths; its data follows the name and the extra field.
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")
_NPY_HEADER_MAX = 1 << 16  # .npy headers popsim writes are a few hundred bytes


# The header numpy writes (format 1.0), read without evaluating Python literals.
_NPY_PLAIN_HEADER = re.compile(r"\{'descr': '([<>|][biuf][0-9]+)', 'fortran_order': (False|True), "
                               r"'shape': \(((?:[0-9]+, )*[0-9]*,?)\), \} *\n")


def _npy_header(f, size: int, name: str):
    """(shape, fortran order, dtype, header bytes) of the .npy member of ``size`` bytes
    that ``f`` is at, which is left at the array's data. The plain header numpy writes
    is matched exactly; any other goes through numpy's own (slower) parser."""
    head = f.read(min(size, 12))
    major = head[6] if len(head) > 6 and head[:6] == b"\x93NUMPY" else 0
    fixed = 10 if major == 1 else 12
    if len(head) < fixed:
        raise PopsimError(f"array {name!r} has a bad header (it is not a .npy array)")
    length = int.from_bytes(head[8:fixed], "little")
    if length > _NPY_HEADER_MAX or fixed + length > size:
        raise PopsimError(f"array {name!r} has a bad header (of {length:,} bytes)")
    head = (head + f.read(max(0, fixed + length - len(head))))[:fixed + length]
    match = _NPY_PLAIN_HEADER.fullmatch(head[fixed:].decode("latin-1")) if major == 1 else None
    if match:
        return tuple(int(d) for d in match[3].replace(",", " ").split()), match[2] == "True", np.dtype(match[1]), head
    try:
        stream = io.BytesIO(head)
        np.lib.format.read_magic(stream)
        reader = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
        return (*reader(stream), head)
    except (ValueError, SyntaxError, TypeError, EOFError) as e:
        raise PopsimError(f"array {name!r} has a bad header ({e})") from None


def _npy(f, info: zipfile.ZipInfo, file_end: int, check_crc: bool) -> np.ndarray:
    """The array in member ``info`` (a .npy file) of the zip ``f`` (a seekable binary
    file), read straight into its own memory. Its header is checked against its data
    before anything is allocated; ``check_crc``: its CRC-32 too (a verified cache entry
    needs no second check)."""
    name = info.filename
    f.seek(info.header_offset)
    local = f.read(_LOCAL_HEADER.size)
    if len(local) != _LOCAL_HEADER.size or local[:4] != b"PK\x03\x04":
        raise PopsimError(f"member {name!r} has no local header where the directory says")
    *_, name_length, extra_length = _LOCAL_HEADER.unpack(local)
    start = info.header_offset + _LOCAL_HEADER.size + name_length + extra_length
    if start + info.file_size > file_end:
        raise PopsimError(f"member {name!r} reaches past the end of the file")
    f.seek(start)
    shape, fortran, dtype, head = _npy_header(f, info.file_size, name)
    if dtype.hasobject or dtype.kind not in _NPY_KINDS or fortran:
        raise PopsimError(f"array {name!r} holds {dtype} data; popsim executables hold plain numbers")
    count = 1
    for d in shape:
        count *= d
    offset = len(head)
    if count * dtype.itemsize != info.file_size - offset:
        raise PopsimError(f"array {name!r} declares shape {shape} ({count * dtype.itemsize:,} bytes) but holds "
                          f"{info.file_size - offset:,} bytes")
    array = np.empty(shape, dtype)  # no bigger than the member, so no bigger than the file
    data = array.reshape(-1).data.cast("B") if array.size else memoryview(b"")
    done = 0
    while done < len(data):
        n = f.readinto(data[done:])
        if not n:
            raise PopsimError(f"array {name!r} is cut short")
        done += n
    if check_crc and zlib.crc32(data, zlib.crc32(head)) != info.CRC:
        raise PopsimError(f"member {name!r} does not match its CRC-32 (the file is corrupted)")
    array.flags.writeable = False  # an executable read is immutable: the core borrows its tables, uncopied
    return array


def _extract_libraries(z, members, names: Any) -> List[str]:
    """Each embedded library as a verified file in the codelet cache (named by its
    content digest, so an existing copy is reused only if its content matches). ``names``:
    the header's library names as read (JSON, checked here)."""
    from .codelet.compiler import cache_dir
    store = cache_dir()
    paths = []
    for k, name in enumerate(names):
        if not isinstance(name, str) or not _SAFE_NAME.fullmatch(name) or name.startswith("."):
            raise PopsimError(f"library name {name!r} is not a plain file name")
        member = f"{_LIBRARY}{k}"
        if member not in members:
            raise PopsimError(f"library {k} ({name}) is missing")
        data = z.read(member)
        digest = hashlib.sha256(data).hexdigest()
        target = store / f"exe-{digest[:32]}-{name}"
        if not is_verified(target, "executable library", digest):
            store_verified(target, data)
        paths.append(str(target))
    return paths


def read_executable(source, verified: bool = False, with_values: bool = True) -> Tuple[Lowered, Dict[str, str]]:
    """(lowered, options) of the executable in ``source`` (a path or a binary file
    object); PopsimError when it is not a well-formed popsim executable. ``verified``:
    the file's content was just checked against a digest (a cache entry), so its
    members' CRC-32s are not checked again: the sha256 covers every byte they do. The
    record's consistency is checked all the same: a digest says the file is what was
    stored, not who stored it (whoever can write a cache directory can rewrite its digest
    files too), so a cache entry is trusted no more than a file from elsewhere.
    ``with_values``: the file must hold its initial values (an executable-cache entry does
    not: its reader packs them from the graph)."""
    where = getattr(source, "name", None) or source
    if isinstance(where, int):
        where = f"<file descriptor {where}>"
    try:
        if not _regular(source):  # a pipe or a device: read only what the zip's records say it holds
            with contextlib.ExitStack() as opened:
                stream = source if hasattr(source, "read") else opened.enter_context(open(source, "rb"))
                source = io.BytesIO(read_zip_stream(stream, MAX_FILE_BYTES))
        size = _size_of(source)
        with contextlib.ExitStack() as stack:
            f = source if hasattr(source, "read") else stack.enter_context(open(source, "rb"))
            z = stack.enter_context(zipfile.ZipFile(f))
            members = _members(z, size)
            if _HEADER not in members:
                raise PopsimError("it has no header")
            header = json.loads(z.read(_HEADER))
            if not isinstance(header, dict) or header.get("magic") != MAGIC:
                raise PopsimError("it is not a popsim executable")
            if header.get("format") != FORMAT_VERSION:
                raise PopsimError(f"it has format version {header.get('format')}, this popsim (version "
                                  f"{__version__}) reads version {FORMAT_VERSION}: compile it again")
            file_end = f.seek(0, io.SEEK_END)
            arrays = {n[:-4]: _npy(f, info, file_end, not verified) for n, info in members.items()
                      if n.endswith(".npy")}
            libraries = _extract_libraries(z, members, header.get("libraries"))
        options = header.get("options")
        if not isinstance(options, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in options.items()):
            raise PopsimError("its options are not a dict of strings")

        def codelets(value, path, _arrays):
            if not isinstance(value, list) or not all(
                    isinstance(c, list) and len(c) == 2 and isinstance(c[0], int) and 0 <= c[0] < len(libraries)
                    and isinstance(c[1], str) for c in value):
                raise CodecError(f"{path}: expected [library index, symbol] pairs, found {str(value)[:60]}")
            return [(libraries[k], symbol) for k, symbol in value]
        lowered = decode(Lowered, header.get("lowered"), arrays, {(VertexTables, "codelets"): (None, codelets)})
        if with_values and lowered.init_image is None:
            raise PopsimError("it was saved without its initial values (an executable-cache entry, which runs "
                              "only with the graph it was compiled from); save a compiled executable with "
                              "exe.serialize to run it on its own")
        check_lowered(lowered)
        return lowered, options
    except PopsimError as e:
        raise PopsimError(f"cannot read executable {where}: {e}") from None
    except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, KeyError, TypeError, IndexError,
            AttributeError, EOFError, RecursionError, MemoryError, NotImplementedError, OverflowError) as e:
        raise PopsimError(f"cannot read executable {where}: {type(e).__name__}: {e}; it is not a popsim "
                          "executable or it is corrupted (compile it again)") from None
