"""Output paths checked before any work: a regular file or a new name in a writable folder, never an input.

Every command that writes a file (``bench --save/--report``, ``check --save-outputs``, the demo report, ``bundle
--out``'s parent folder) calls :func:`check_outputs` (or :func:`check_writable_folder`) first, so a bad output path
costs no run. :func:`ortgpu.atomic.atomic_write` applies the same file rules again at the moment it writes.

The rules: an existing target must be a regular file (a directory, character or block device, FIFO or socket is
refused, never replaced); a symbolic link is written through to the regular file it names (the link stays; a
dangling link, or one naming anything else, is refused); an output may not be the same file as any input (by
inode, so a hard link or another spelling counts) nor the same path as another output; the folder must exist and
take a new file (tried, not guessed from permission bits: root, read-only mounts and /proc all answer truly).
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from ortgpu.errors import BadInputError

__all__ = ["OutputPathError", "check_outputs", "check_writable_folder", "write_target"]


class OutputPathError(BadInputError):
    """An output path that cannot be written safely: a special file, an input, a folder that takes no file (exit 2)."""


_KINDS = (
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISFIFO, "FIFO (named pipe)"),
    (stat.S_ISSOCK, "socket"),
)


def _said(label: str | None, path: Path) -> str:
    return f"{label} {path}" if label else str(path)


def write_target(
    path: str | os.PathLike[str], label: str | None = None, error: type[BadInputError] = OutputPathError
) -> Path:
    """The file a write to ``path`` replaces: ``path`` itself, or the regular file a symbolic link there names.

    Raises ``error`` for an existing directory or special file, a dangling link or a link to a non-regular file.
    """
    given = Path(path)
    target = given
    if given.is_symlink():
        target = Path(os.path.realpath(given))
        if not target.exists():
            raise error(
                f"{_said(label, given)} is a symbolic link to {target}, which does not exist",
                "give the path of a regular file, or create the file the link names",
            )
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return target
    except OSError as exc:  # ENOTDIR, EACCES, ELOOP, ENAMETOOLONG
        raise error(f"cannot write {_said(label, given)}: {exc.strerror}", "give another path") from None
    if stat.S_ISDIR(mode):
        raise error(f"{_said(label, given)} is a directory", "give a file name inside it")
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "special file")
        via = f" (through a link to {target})" if target != given else ""
        raise error(
            f"{_said(label, given)} is a {kind}{via}, not a regular file: ortgpu never replaces one",
            "give the path of a regular file",
        )
    return target


def check_writable_folder(
    folder: str | os.PathLike[str], label: str | None = None, error: type[BadInputError] = OutputPathError
) -> None:
    """Raise ``error`` unless ``folder`` exists and a new file can be created in it (tried; nothing is left)."""
    where = Path(folder) if str(folder) else Path(".")
    prefix = f"{label}: " if label else ""
    if not where.is_dir():
        raise error(f"{prefix}folder {where} does not exist", "create it first")
    try:
        with tempfile.TemporaryFile(dir=where):  # O_TMPFILE where it exists: never visible in the folder
            pass
    except OSError as exc:
        raise error(
            f"{prefix}cannot create a file in {where} ({exc.strerror})", "give a folder you can write to"
        ) from None


def check_outputs(
    outputs: Mapping[str, str | os.PathLike[str] | None],
    inputs: Iterable[str | os.PathLike[str] | None] = (),
    error: type[BadInputError] = OutputPathError,
) -> dict[str, Path]:
    """Check every output (label -> path; None: not asked for) before any work; returns label -> file written.

    Raises ``error`` (exit 2) for an output that is a special file or directory, one of the ``inputs`` (same
    file), the same path as another output, or in a folder that is missing or takes no new file.
    """
    existing_inputs = [Path(p) for p in inputs if p is not None and Path(p).exists()]
    written: dict[str, Path] = {}
    seen: dict[str, str] = {}
    for label, raw in outputs.items():
        if raw is None:
            continue
        given = Path(raw)
        target = write_target(given, label, error)
        folder = target.parent if str(target.parent) else Path(".")
        if not folder.is_dir():
            raise error(f"{label} {given}: folder {folder} does not exist", "create it first")
        if target.exists():
            for source in existing_inputs:
                if _same_file(target, source):
                    raise error(
                        f"{label} {given} is the input {source}: writing it would destroy the input",
                        "give another output path",
                    )
        key = os.path.normcase(os.path.abspath(target))
        if key in seen:
            raise error(f"{label} and {seen[key]} both write {given}", "give each output its own path")
        seen[key] = label
        check_writable_folder(folder, label, error)
        written[label] = target
    return written


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
