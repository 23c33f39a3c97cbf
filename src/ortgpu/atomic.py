"""Atomic file writes: a temp file in the same folder, then rename, so nothing half-written is left.

A write never replaces a special file (device, FIFO, socket) or a directory, and goes through a symbolic link to
the regular file it names (the link stays): the rules of :mod:`ortgpu.output_paths`, applied again at the moment
of writing. A failure to write is a one-line error (exit 2), never a traceback.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from ortgpu.output_paths import OutputPathError, write_target

__all__ = ["atomic_write", "atomic_write_bytes", "atomic_write_text"]


def atomic_write(path: str | os.PathLike[str], writer: Callable[[BinaryIO], object]) -> Path:
    """Call ``writer`` with a binary file object; the result replaces ``path`` only when it succeeds.

    Returns ``path``. Raises OutputPathError (exit 2) for a target that is not a regular file or a new name, a
    missing folder, or a write the system refuses (permissions, a read-only or full disk).
    """
    given = Path(path)
    target = write_target(given)  # a link's regular file, or the path itself
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise OutputPathError(f"cannot write {given}: folder {folder} does not exist", "create it first")
    try:
        # the name cut to 200 characters: a temp name for a 255-byte target must still fit NAME_MAX
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name[:200]}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise OutputPathError(f"cannot write {given}: {exc.strerror}", "give a folder you can write to") from None
    try:
        # mkstemp creates 0600; give the file the mode a plain open() would (0666 less the umask)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as handle:
            writer(handle)
            handle.flush()
            os.fsync(handle.fileno())
        _refuse_if_special(target, given)  # what may have appeared there while we wrote
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        reason = exc.strerror or str(exc)
        raise OutputPathError(f"cannot write {given}: {reason}", "check the folder and its free space") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return given


def _refuse_if_special(target: Path, given: Path) -> None:
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        write_target(target)  # raises, naming what it is
        raise OutputPathError(f"{given} is not a regular file any more", "give the path of a regular file")


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    return atomic_write(path, lambda handle: handle.write(data))


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))
