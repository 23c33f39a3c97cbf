"""The output folder of `ortgpu infer`: outputs written once (atomic, never replaced), hashes, and the manifest.

An output is an ``.npz`` whose bytes depend only on the arrays (fixed member dates, fixed order), so the same
results give the same file and the same sha256 on every run and machine. It is written to a temporary file in
the folder and linked to its name only if that name is free: a file already there is never replaced; it is
kept when it is a complete output of the expected arrays (written by a worker that died before it reported),
and the item fails when it is not. The manifest (``manifest.json``) is rewritten atomically as items finish.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.atomic import atomic_write_text
from ortgpu.infer.dataset import InferInputError, ItemError
from ortgpu.output_paths import OutputPathError, write_target
from ortgpu.untrusted import ByteLimit

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "MANIFEST_LIMIT",
    "MANIFEST_NAME",
    "Written",
    "load_manifest",
    "npz_bytes",
    "remove_stale_temporaries",
    "sha256_file",
    "write_manifest",
    "write_once",
]

MANIFEST_NAME = "manifest.json"
MANIFEST_SCHEMA = "ortgpu.infer.manifest/v1"
MANIFEST_LIMIT = ByteLimit("ORTGPU_MAX_MANIFEST", 1 << 30, "infer manifest read back on a re-run")
_TEMP_SUFFIX = ".tmp"
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def sha256_file(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """An uncompressed .npz of ``arrays`` (in the given order) whose bytes depend only on the arrays."""
    import numpy as np

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
            info.external_attr = 0o644 << 16
            with archive.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


@dataclass(frozen=True)
class Written:
    """What is at an output's name after :func:`write_once`: its sha256, and whether it was already there."""

    sha256: str
    existed: bool
    differs: bool = False  # it was there, complete, with other bytes than this run computed


def write_once(path: Path, data: bytes, expected: Mapping[str, tuple[int, ...]]) -> Written:
    """Write ``data`` to ``path`` unless something is there already; never replaces a file.

    ``expected`` maps each output name to its shape: a file already at ``path`` is kept only when it holds
    exactly those arrays (a complete output of an earlier attempt), else ItemError. A special file, directory
    or dangling link at ``path`` is an ItemError too (the rules of :mod:`ortgpu.output_paths`).
    """
    try:
        target = write_target(path)
    except OutputPathError as exc:
        raise ItemError(exc.message) from None
    ours = hashlib.sha256(data).hexdigest()
    if target.exists():
        return _existing(target, ours, expected)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=_TEMP_SUFFIX, dir=target.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, target)  # fails if the name is taken: the first complete write wins
        except FileExistsError:
            return _existing(target, ours, expected)
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            if target.exists():  # a file system without hard links: check, then rename (a small race, said)
                return _existing(target, ours, expected)
            os.rename(tmp, target)
    except OSError as exc:
        raise ItemError(f"cannot write {path.name}: {exc.strerror or exc}") from None
    finally:
        Path(tmp).unlink(missing_ok=True)
    return Written(ours, existed=False)


def _existing(target: Path, ours: str, expected: Mapping[str, tuple[int, ...]]) -> Written:
    from ortgpu.npz import load_npz

    theirs = sha256_file(target)
    if theirs == ours:
        return Written(ours, existed=True)
    try:
        arrays = load_npz(target, what="output", contents="outputs", error=InferInputError, hint="delete it")
    except InferInputError as exc:
        raise ItemError(f"{target.name} is already in the output folder and is not a complete output ({exc})") from None
    shapes = {name: tuple(a.shape) for name, a in arrays.items()}
    if shapes != dict(expected):
        raise ItemError(
            f"{target.name} is already in the output folder with other arrays ({_shapes(shapes)}; this model "
            f"gives {_shapes(expected)}): delete it to compute it again"
        )
    return Written(theirs, existed=True, differs=True)


def _shapes(shapes: Mapping[str, Sequence[int]]) -> str:
    return ", ".join(f"{k} {'x'.join(str(d) for d in v)}" for k, v in shapes.items())


def remove_stale_temporaries(folder: Path, names: Sequence[str]) -> int:
    """Remove the temporary files a killed worker left for these output names; how many."""
    wanted = {f".{n}." for n in names}
    removed = 0
    for entry in folder.iterdir():
        name = entry.name
        if name.startswith(".") and name.endswith(_TEMP_SUFFIX) and entry.is_file() and not entry.is_symlink():
            stem = name[: name.rfind(".", 0, len(name) - len(_TEMP_SUFFIX)) + 1]
            if stem in wanted:
                entry.unlink(missing_ok=True)
                removed += 1
    return removed


def write_manifest(folder: Path, document: Mapping[str, Any]) -> None:
    atomic_write_text(folder / MANIFEST_NAME, json.dumps({"schema": MANIFEST_SCHEMA, **document}, indent=1))


def load_manifest(folder: Path) -> dict[str, Any] | None:
    """The manifest in ``folder`` (None when there is none); InferInputError when it is not one of ours."""
    path = folder / MANIFEST_NAME
    if not path.exists():
        return None
    hint = f"give an empty --out folder, or one written by ortgpu infer (remove a damaged {MANIFEST_NAME})"
    try:
        size = path.stat().st_size
        if size > MANIFEST_LIMIT.value():
            raise InferInputError(f"{path}: larger than ortgpu reads back", MANIFEST_LIMIT.hint())
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InferInputError(f"{path}: not a manifest ({exc})", hint) from None
    if not isinstance(doc, dict) or doc.get("schema") != MANIFEST_SCHEMA:
        raise InferInputError(f"{path}: not an ortgpu infer manifest", hint)
    if not isinstance(doc.get("identity"), dict) or not isinstance(doc.get("items"), dict):
        raise InferInputError(f"{path}: damaged (no identity or items)", hint)
    return doc
