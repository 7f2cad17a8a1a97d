"""Reading a zip file from a stream that cannot seek (a pipe, a socket, a device), bounded
by the sizes the format itself states: member by member, each local header's stated size
and no more, then the central directory entry by entry, then the end records. A stream
that is not a zip (``/dev/zero``, a text file) fails at its first four bytes instead of
being read for ever. The bytes read are returned for zipfile to parse as usual.

Members must state their sizes in their local headers (no data descriptors), as
popsim's executable writer stores them.
"""
from __future__ import annotations

import struct

from .errors import PopsimError

_LOCAL = struct.Struct("<4s5H3L2H")       # signature ... crc, compressed, uncompressed, name, extra
_CENTRAL = struct.Struct("<4s6H3L5H2L")   # signature ... name, extra, comment lengths ...
_ZIP64_END = struct.Struct("<4sQ")        # signature, size of the rest of the record
_ZIP64_LOCATOR_BYTES = 20
_END = struct.Struct("<4s4H2LH")          # signature ... comment length
_ZIP64_EXTRA = 0x0001
_DATA_DESCRIPTOR = 0x0008


def read_zip_stream(stream, limit: int) -> bytes:
    """The zip file at the start of ``stream``, read to its end record; PopsimError if it
    is not one, needs a data descriptor, or would take more than ``limit`` bytes."""
    out = bytearray()

    def read(n: int) -> bytes:
        if len(out) + n > limit:
            raise PopsimError(f"it is longer than the largest executable this popsim reads ({limit:,} bytes)")
        data = stream.read(n)
        if len(data) != n:
            raise PopsimError("it ends inside a zip record (truncated)")
        out.extend(data)
        return data

    signature = read(4)
    while signature == b"PK\x03\x04":
        fields = _LOCAL.unpack(signature + read(_LOCAL.size - 4))
        flags, size, name_length, extra_length = fields[2], fields[7], fields[9], fields[10]
        if flags & _DATA_DESCRIPTOR:
            raise PopsimError("a zip member does not state its size in its header (data descriptor)")
        read(name_length)
        size = _zip64_size(read(extra_length), size)
        read(size)
        signature = read(4)
    while signature == b"PK\x01\x02":
        fields = _CENTRAL.unpack(signature + read(_CENTRAL.size - 4))
        read(fields[10] + fields[11] + fields[12])
        signature = read(4)
    if signature == b"PK\x06\x06":
        (_, rest), = [_ZIP64_END.unpack(signature + read(_ZIP64_END.size - 4))]
        read(rest)
        read(_ZIP64_LOCATOR_BYTES)
        signature = read(4)
    if signature != b"PK\x05\x06":
        raise PopsimError("it is not a zip file (no zip record where one must be)")
    fields = _END.unpack(signature + read(_END.size - 4))
    read(fields[-1])
    return bytes(out)


def _zip64_size(extra: bytes, size: int) -> int:
    """A member's compressed size: from its zip64 extra field when the header says so."""
    if size != 0xFFFFFFFF:
        return size
    at = 0
    while at + 4 <= len(extra):
        kind, length = struct.unpack_from("<2H", extra, at)
        if kind == _ZIP64_EXTRA and length >= 16:
            return struct.unpack_from("<2Q", extra, at + 4)[1]  # uncompressed, then compressed
        at += 4 + length
    raise PopsimError("a zip member's size is in a zip64 field it does not have")
