"""A fast reader for the common input file of `ortgpu infer`: an uncompressed .npz (numpy.savez) of plain arrays.

numpy reads a member of a zip in 256 KiB pieces through Python's zipfile (three copies, most of them holding the
GIL); this reads each array's bytes straight into the array (one ``readinto``, the GIL released) and checks the
member's CRC-32 the way zipfile does. The arrays are the same bits numpy would load. Anything it does not handle
exactly (a compressed or encrypted member, Fortran order, an object array, a header it cannot parse, a CRC or size
that does not match, a member that is not .npy, a special file) returns None: the caller then reads the file with
:func:`ortgpu.npz.load_npz`, which reports what is wrong in its own words.
"""

from __future__ import annotations

import io
import os
import stat
import struct
import zipfile
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

from ortgpu.npz import NPZ_LIMIT

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["read_stored_npz"]

_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # zipfile's structFileHeader
_LOCAL_SIGNATURE = b"PK\x03\x04"
_MAX_HEADER = 1 << 16  # a .npy header longer than this is left to numpy
_PIECE = 1 << 20


def read_stored_npz(path: Path) -> dict[str, np.ndarray] | None:
    """Every array of ``path`` (names without ``.npy``), or None when the slow path must read it (see above)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None  # never opened: a FIFO would block the open
        with open(path, "rb", buffering=0) as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            with zipfile.ZipFile(handle) as archive:
                members = archive.infolist()
                names = [m.filename for m in members]
                if not members or len(set(names)) != len(names):
                    return None
                budget = NPZ_LIMIT.value()
                arrays: dict[str, np.ndarray] = {}
                for info in members:
                    array = _member(handle, info, budget)
                    if array is None:
                        return None
                    budget -= array.nbytes
                    arrays[info.filename[: -len(".npy")]] = array
                return arrays
    except (OSError, ValueError, EOFError, SyntaxError, zipfile.BadZipFile, struct.error, OverflowError):
        return None


def _member(raw: io.FileIO, info: zipfile.ZipInfo, budget: int) -> np.ndarray | None:
    import numpy as np

    fmt = np.lib.format
    if (
        not info.filename.endswith(".npy")
        or info.compress_type != zipfile.ZIP_STORED
        or info.flag_bits & 0x1  # encrypted
        or info.file_size != info.compress_size
    ):
        return None
    raw.seek(info.header_offset)
    local = raw.read(_LOCAL_HEADER.size)
    if len(local) != _LOCAL_HEADER.size:
        return None
    fields = _LOCAL_HEADER.unpack(local)
    if fields[0] != _LOCAL_SIGNATURE:
        return None
    name_length, extra_length = fields[10], fields[11]
    name = raw.read(name_length)
    if name.decode("utf-8" if info.flag_bits & 0x800 else "cp437", "replace") != info.filename:
        return None
    start = info.header_offset + _LOCAL_HEADER.size + name_length + extra_length
    raw.seek(start)
    head = raw.read(min(_MAX_HEADER, info.file_size))
    view = io.BytesIO(head)
    major, _ = fmt.read_magic(view)
    if major == 1:
        shape, fortran, dtype = fmt.read_array_header_1_0(view)
    elif major in (2, 3):
        shape, fortran, dtype = fmt.read_array_header_2_0(view)
    else:
        return None
    header_bytes = view.tell()
    if fortran or dtype.hasobject or any(int(d) < 0 for d in shape):
        return None
    count = 1
    for dim in shape:
        count *= int(dim)
    declared = count * dtype.itemsize
    if declared != info.file_size - header_bytes or declared > budget:
        return None  # trailing bytes, too few, or over the limit: numpy's path says which
    array = np.empty(shape, dtype=dtype)
    target = memoryview(array.reshape(-1).view(np.uint8).data) if declared else memoryview(b"")
    raw.seek(start + header_bytes)
    crc = zlib.crc32(head[:header_bytes])
    done = 0
    while done < declared:  # in pieces: each is checked while it is still in the cache
        got = raw.readinto(target[done : done + _PIECE])
        if not got:
            return None
        crc = zlib.crc32(target[done : done + got], crc)
        done += got
    if crc != info.CRC:
        return None
    return array
