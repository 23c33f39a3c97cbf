"""Atomic file writes: a temp file in the same folder, then rename, so nothing half-written is left."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_write", "atomic_write_bytes", "atomic_write_text"]


def atomic_write(path: str | os.PathLike[str], writer: Callable[[BinaryIO], None]) -> Path:
    """Call ``writer`` with a binary file object; the result replaces ``path`` only when it succeeds."""
    from ortgpu.errors import BadInputError

    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise BadInputError(f"cannot write {target}: folder {folder} does not exist", "create it first")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name[:200]}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise _write_error(target, exc) from None
    try:
        # mkstemp creates 0600; give the file the mode a plain open() would (0666 less the umask)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as handle:
            writer(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise _write_error(target, exc) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _write_error(target: Path, exc: OSError) -> Exception:
    """An OSError while writing ``target`` as one line: exit 3 for a full disk or I/O error, else exit 2."""
    import errno

    from ortgpu.errors import BadInputError, EnvironmentUnfitError

    reason = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
        return EnvironmentUnfitError(f"cannot write {target}: {reason}", "free space on that disk and run it again")
    if exc.errno == errno.ENAMETOOLONG:
        return BadInputError(f"cannot write {target}: the name is too long", "file names are limited to 255 bytes")
    try:
        is_dir = exc.errno == errno.EISDIR or target.is_dir()
    except OSError:
        is_dir = False
    if is_dir:
        return BadInputError(f"cannot write {target}: it is a directory", "give a file name inside it")
    return BadInputError(f"cannot write {target}: {reason}", "write to a folder you can create files in")


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    return atomic_write(path, lambda handle: handle.write(data))


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))
