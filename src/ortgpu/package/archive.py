"""Opens an ORT package (wheel, .zip, .tgz or extracted folder) safely, extracting only the files analysis needs."""

from __future__ import annotations

import os
import posixpath
import re
import stat
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import IO, Any

from ortgpu.errors import BadInputError
from ortgpu.limits import PACKAGE_TEXT_LIMIT, check_input_file, read_input_bytes
from ortgpu.progress import Progress, silent
from ortgpu.untrusted import ByteLimit, human_bytes, name_problem, printable

__all__ = [
    "EXTRACT_LIMIT",
    "MAX_RATIO",
    "OpenedPackage",
    "PackageError",
    "PackageKind",
    "UnsafeArchiveError",
    "is_ort_library",
    "open_package",
]


class PackageError(BadInputError):
    """The path is not an ONNX Runtime package we can read (missing, corrupt, empty, no ORT library)."""


class UnsafeArchiveError(PackageError):
    """The archive has members that would land outside the extraction folder; nothing was extracted."""


class PackageKind(Enum):
    WHEEL = "wheel"
    ZIP = "zip"
    TARBALL = "tarball"
    FOLDER = "folder"


# ORT's own libraries: the core, the provider plugins and the Python binding (which embeds the core in wheels).
_ORT_LIBRARY = re.compile(
    r"^(?:(?:lib)?onnxruntime(?:_providers_[a-z0-9_]+)?(?:\.so(?:\.\d+)*|\.dll)"
    r"|onnxruntime_pybind11_state[^/]*\.(?:so|pyd))$",
    re.IGNORECASE,
)
_TEXT_FILES = {"VERSION_NUMBER", "GIT_COMMIT_ID"}
_DIST_INFO_FILES = {"METADATA", "WHEEL"}
_BUILD_INFO = "build_and_package_info.py"  # read as text, never executed
_COPY_CHUNK = 1 << 20
_MAX_FOLDER_FILES = 200_000  # a folder bigger than this is not a release folder (e.g. a whole disk)

# Decompression bombs. What analysis needs of a real release is ORT's own libraries (the largest, the CUDA provider,
# is a few hundred MB) plus a few text files; compressed libraries expand 2-5x. Both bounds are checked on the sizes
# the archive declares, before one byte is extracted, and the copy itself is counted against the limit.
EXTRACT_LIMIT = ByteLimit("ORTGPU_MAX_EXTRACT", 2 << 30, "files extracted from one package")
MAX_RATIO = 100  # expansion of one zip member, or of a whole tar stream, beyond which it is a bomb
_RATIO_FLOOR = 1 << 20  # members (zip) or archives (tar) that expand to less than this are not judged by ratio


def is_ort_library(name: str) -> bool:
    """True for ORT's own shared libraries: core, providers, Python binding (by file name)."""
    return bool(_ORT_LIBRARY.fullmatch(posixpath.basename(name)))


def _wanted(name: str, also: Callable[[str], bool] | None = None) -> bool:
    if also is not None and also(name):
        return True
    base = posixpath.basename(name)
    parent = posixpath.basename(posixpath.dirname(name))
    if is_ort_library(base) or base in _TEXT_FILES:
        return True
    if base in _DIST_INFO_FILES and parent.endswith(".dist-info"):
        return True
    return base == _BUILD_INFO and parent == "capi"


@dataclass(frozen=True)
class OpenedPackage:
    """A package opened for analysis. ``files`` map member names to readable local paths (only wanted members)."""

    source: Path
    kind: PackageKind
    members: tuple[str, ...]  # every regular file in the package, as a relative posix path
    files: Mapping[str, Path]  # member name -> local file, for the members analysis needs
    links: Mapping[str, str] = field(default_factory=dict)  # symlink member -> target member (inside the package)

    def read_text(self, member: str) -> str:
        """A small text member (VERSION_NUMBER, METADATA ...), read no further than PACKAGE_TEXT_LIMIT."""

        data = read_input_bytes(
            self.files[member],
            PACKAGE_TEXT_LIMIT,
            "check the package",
            error=PackageError,
            shown=f"{member} in {self.source}",
        )
        return data.decode("utf-8", errors="replace")

    def find(self, basename: str) -> tuple[str, ...]:
        """Wanted members with this file name, shallowest first."""
        hits = [m for m in self.files if posixpath.basename(m) == basename]
        return tuple(sorted(hits, key=lambda m: (m.count("/"), m)))


@contextmanager
def open_package(
    path: str | os.PathLike[str], progress: Progress | None = None, *, also: Callable[[str], bool] | None = None
) -> Iterator[OpenedPackage]:
    """Open a wheel, .zip, .tgz/.tar.* or a folder; archives are checked in full before one byte is extracted.

    ``files`` holds what analysis needs (ORT's libraries, VERSION_NUMBER, wheel metadata) and the members ``also``
    accepts (``bundle`` asks for headers and licences): this is the one reader of package archives. Member names
    are checked (no absolute path, '..', control character or over-long part), links must stay inside, special
    files are refused, and declared sizes are checked against EXTRACT_LIMIT and MAX_RATIO before extracting.
    Extracted files live in a private temp folder that is removed when the context ends, whatever happens.
    """
    report = progress or silent
    source = Path(path)
    if not source.exists():
        raise PackageError(f"{source}: no such file or folder", "give an onnxruntime wheel, .zip/.tgz or folder")
    if source.is_dir():
        yield _open_folder(source, also)
        return

    # a FIFO would block the read of its first bytes, a device never end: refused before they are opened
    check_input_file(source, "package", "give an onnxruntime wheel, .zip/.tgz or folder", error=PackageError)
    kind = _archive_kind(source)
    with tempfile.TemporaryDirectory(prefix="ortgpu-package-") as tmp:
        root = Path(tmp)
        if kind is PackageKind.TARBALL:
            opened = _open_tar(source, root, report, also)
        else:
            opened = _open_zip(source, kind, root, report, also)
        yield opened


def _archive_kind(source: Path) -> PackageKind:
    name = source.name.lower()
    try:
        with open(source, "rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise PackageError(f"{source}: cannot read ({exc.strerror})", "check the path and permissions") from None
    if name.endswith(".whl"):
        return PackageKind.WHEEL
    if name.endswith(".zip"):
        return PackageKind.ZIP
    if name.endswith((".tgz", ".tar.gz", ".tar", ".tar.bz2", ".tar.xz", ".tbz2", ".txz")):
        return PackageKind.TARBALL
    if magic.startswith(b"PK"):
        return PackageKind.ZIP
    if magic[:2] == b"\x1f\x8b":
        return PackageKind.TARBALL
    raise PackageError(
        f"{source}: not an ONNX Runtime package (expected .whl, .zip, .tgz or a folder)",
        "give an onnxruntime wheel, a release archive or an extracted release folder",
    )


# --- member name safety ---------------------------------------------------------------------------------------------


def _safe_member_name(source: Path, raw: str) -> str:
    """Normalise a member name; refuse absolute paths, drive letters and any '..' part."""
    name = raw.replace("\\", "/")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise UnsafeArchiveError(
            f"{source}: member {raw!r} has an absolute path; nothing was extracted",
            "the archive is unsafe: get the package from its official source",
        )
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchiveError(
            f"{source}: member {printable(raw)} points outside the archive ('..'); nothing was extracted",
            "the archive is unsafe: get the package from its official source",
        )
    for part in parts:
        problem = name_problem(part)
        if problem is not None:  # a control character or an over-long part: no release has one
            raise UnsafeArchiveError(
                f"{source}: member name {printable(raw)} is unusable ({problem}); nothing was extracted",
                "the archive is unsafe: get the package from its official source",
            )
    return "/".join(parts)


def _link_target(source: Path, member: str, target: str, relative_to_member: bool) -> str:
    """The member a link points at; refuse a link that leaves the archive."""
    clean = target.replace("\\", "/")
    base = posixpath.dirname(member) if relative_to_member else ""
    resolved = posixpath.normpath(posixpath.join(base, clean)) if not clean.startswith("/") else clean
    if clean.startswith("/") or re.match(r"^[A-Za-z]:", clean) or resolved == ".." or resolved.startswith("../"):
        raise UnsafeArchiveError(
            f"{source}: link {member!r} -> {target!r} points outside the archive; nothing was extracted",
            "the archive is unsafe: get the package from its official source",
        )
    return resolved


def _local_path(root: Path, member: str) -> Path:
    target = (root / member).resolve()
    # Names were already checked; this guards against anything the checks did not foresee.
    if not target.is_relative_to(root.resolve()):
        raise UnsafeArchiveError(f"member {member!r} would be written outside the temp folder", "the archive is unsafe")
    return target


# --- zip and wheel --------------------------------------------------------------------------------------------------


def _open_zip(
    source: Path, kind: PackageKind, root: Path, report: Progress, also: Callable[[str], bool] | None
) -> OpenedPackage:
    what = "wheel" if kind is PackageKind.WHEEL else "zip archive"
    try:
        archive = zipfile.ZipFile(source)
    except zipfile.BadZipFile:
        raise PackageError(
            f"{source}: not a valid {what} (truncated or not a zip file)", "re-download the package"
        ) from None
    except OSError as exc:
        raise PackageError(f"{source}: cannot read ({exc.strerror})", "check the path and permissions") from None
    with archive:
        members: list[str] = []
        links: dict[str, str] = {}
        wanted: list[tuple[str, zipfile.ZipInfo]] = []
        for info in archive.infolist():
            name = _safe_member_name(source, info.filename)
            mode = info.external_attr >> 16
            file_type = stat.S_IFMT(mode)
            if info.is_dir() or not name:
                continue
            if file_type == stat.S_IFLNK:
                target = _read_zip_member(source, archive, info).decode("utf-8", "replace")
                links[name] = _link_target(source, name, target, relative_to_member=True)
                continue
            if file_type not in (0, stat.S_IFREG):
                raise _special_file(source, info.filename)
            members.append(name)
            if _wanted(name, also):
                wanted.append((name, info))
        _require_ort_library(source, members, what)
        for name, info in wanted:
            if info.file_size > _RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
                raise _bomb(source, name, info.file_size, info.compress_size)
        budget = _check_budget(source, sum(info.file_size for _, info in wanted))
        files: dict[str, Path] = {}
        total = sum(info.file_size for _, info in wanted) or 1
        done = 0
        for name, info in wanted:
            report(f"extracting {posixpath.basename(name)}", done / total)
            local = _local_path(root, name)
            local.parent.mkdir(parents=True, exist_ok=True)
            try:
                # A private temp folder removed at the end: no atomic rename needed here.
                with archive.open(info) as src, open(local, "wb") as dst:
                    budget -= _bounded_copy(source, src, dst, budget)
            except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError) as exc:
                raise PackageError(
                    f"{source}: member {name} is corrupt ({exc}); the {what} is truncated or damaged",
                    "re-download the package",
                ) from None
            files[name] = local
            done += info.file_size
        report("extracted", 1.0)
    return OpenedPackage(source=source, kind=kind, members=tuple(members), files=files, links=links)


def _bomb(source: Path, member: str, size: int, packed: int) -> UnsafeArchiveError:
    ratio = size / max(packed, 1)
    return UnsafeArchiveError(
        f"{source}: {member} expands {ratio:,.0f}x ({human_bytes(size)} from {human_bytes(packed)}), more than the "
        f"{MAX_RATIO}x any ORT release does: a decompression bomb; nothing was extracted",
        "the archive is unsafe: get the package from its official source",
    )


def _check_budget(source: Path, declared: int) -> int:
    """The bytes extraction may write; refuses at once when the members needed declare more than that."""
    limit = EXTRACT_LIMIT.value()
    if declared > limit:
        raise PackageError(
            f"{source}: the members needed declare {human_bytes(declared)}, more than ortgpu extracts from a "
            "package; nothing was extracted",
            EXTRACT_LIMIT.hint(),
        )
    return limit


def _bounded_copy(source: Path, src: IO[bytes], dst: IO[bytes], budget: int) -> int:
    """Copy ``src`` to ``dst``, stopping with an error once more than ``budget`` bytes came out; returns the bytes."""
    copied = 0
    while True:
        chunk = src.read(_COPY_CHUNK)
        if not chunk:
            return copied
        copied += len(chunk)
        if copied > budget:  # a member that holds more than it declared
            raise PackageError(
                f"{source}: extraction passed {human_bytes(budget)} (more than the archive declared); stopped",
                EXTRACT_LIMIT.hint(),
            )
        dst.write(chunk)


def _special_file(source: Path, member: str) -> UnsafeArchiveError:
    """Zip and tar alike refuse a device, FIFO or socket member before extracting anything."""
    return UnsafeArchiveError(
        f"{source}: member {member!r} is a device or special file; nothing was extracted",
        "the archive is unsafe: get the package from its official source",
    )


def _read_zip_member(source: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    if info.file_size > 4096:  # a link target is a short path
        raise UnsafeArchiveError(f"{source}: link {info.filename!r} is malformed", "the archive is unsafe")
    try:
        return archive.read(info)
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        raise PackageError(f"{source}: member {info.filename} is corrupt ({exc})", "re-download the package") from None


# --- tar ------------------------------------------------------------------------------------------------------------


def _tar_entries(source: Path, archive: Any, bad: str) -> list[Any]:
    """Every member's header (the whole stream is read, so every member is checked before extracting); stops as
    soon as the sizes declared so far expand the file more than MAX_RATIO, before decompressing that data."""
    import tarfile

    ceiling = max(MAX_RATIO * source.stat().st_size, _RATIO_FLOOR)
    declared = 0
    entries = []
    try:
        while (entry := archive.next()) is not None:
            if entry.issparse():  # holes that extraction fills: 249 bytes may declare gigabytes
                raise UnsafeArchiveError(
                    f"{source}: member {printable(entry.name)} is a sparse file, which no ORT release holds; "
                    "nothing was extracted",
                    "the archive is unsafe: get the package from its official source",
                )
            declared += max(entry.size, 0)
            if declared > ceiling:
                raise _bomb(source, "the archive", declared, source.stat().st_size)
            entries.append(entry)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise PackageError(f"{bad}: {exc}", "re-download the package") from None
    return entries


def _open_tar(source: Path, root: Path, report: Progress, also: Callable[[str], bool] | None) -> OpenedPackage:
    import tarfile

    bad = f"{source}: not a valid tar archive (truncated or corrupt)"
    try:
        archive = tarfile.open(source, mode="r:*")  # noqa: SIM115 -- closed by the `with` below
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise PackageError(f"{bad}: {exc}", "re-download the package") from None
    with archive:
        entries = _tar_entries(source, archive, bad)
        members: list[str] = []
        links: dict[str, str] = {}
        wanted: list[tuple[str, tarfile.TarInfo]] = []
        for entry in entries:
            name = _safe_member_name(source, entry.name)
            if entry.isdir() or not name:
                continue
            if entry.issym():
                links[name] = _link_target(source, name, entry.linkname, relative_to_member=True)
                continue
            if entry.islnk():
                # Hard link names are relative to the archive root.
                links[name] = _link_target(source, name, entry.linkname, relative_to_member=False)
                continue
            if not entry.isreg():
                raise _special_file(source, entry.name)
            members.append(name)
            if _wanted(name, also):
                wanted.append((name, entry))
        _require_ort_library(source, members + list(links), "archive")
        budget = _check_budget(source, sum(entry.size for _, entry in wanted))
        files: dict[str, Path] = {}
        total = sum(entry.size for _, entry in wanted) or 1
        done = 0
        # In archive order, so a compressed stream is read forward once.
        for name, entry in sorted(wanted, key=lambda item: item[1].offset_data):
            report(f"extracting {posixpath.basename(name)}", done / total)
            local = _local_path(root, name)
            local.parent.mkdir(parents=True, exist_ok=True)
            try:
                src = archive.extractfile(entry)
                if src is None:
                    continue
                with src, open(local, "wb") as dst:
                    budget -= _bounded_copy(source, src, dst, budget)
            except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
                raise PackageError(f"{bad}: {exc}", "re-download the package") from None
            files[name] = local
            done += entry.size
        report("extracted", 1.0)
    return OpenedPackage(source=source, kind=PackageKind.TARBALL, members=tuple(members), files=files, links=links)


# --- folder ---------------------------------------------------------------------------------------------------------


def _open_folder(source: Path, also: Callable[[str], bool] | None = None) -> OpenedPackage:
    members: list[str] = []
    links: dict[str, str] = {}
    files: dict[str, Path] = {}
    root = source.resolve()
    for dirpath, dirnames, filenames in os.walk(source, followlinks=False):
        dirnames.sort()
        for filename in sorted(filenames):
            local = Path(dirpath) / filename
            name = local.relative_to(source).as_posix()
            if local.is_symlink():
                try:
                    resolved = local.resolve()
                    inside = resolved.is_relative_to(root) and resolved.is_file()
                except (OSError, RuntimeError):  # a link loop (RuntimeError before Python 3.13) or a name too long
                    continue
                if inside:
                    links[name] = resolved.relative_to(root).as_posix()
                continue  # links leaving the folder (or going nowhere) are not part of the package
            if not local.is_file():
                continue
            members.append(name)
            if _wanted(name, also):
                files[name] = local
            if len(members) > _MAX_FOLDER_FILES:
                raise PackageError(
                    f"{source}: more than {_MAX_FOLDER_FILES} files: not an ONNX Runtime release folder",
                    "give the extracted release folder itself (the one holding lib/ or onnxruntime/capi/)",
                )
    if not members and not links:
        raise PackageError(f"{source}: the folder is empty", "give an extracted onnxruntime release folder or wheel")
    _require_ort_library(source, members + list(links), "folder")
    return OpenedPackage(source=source, kind=PackageKind.FOLDER, members=tuple(members), files=files, links=links)


def _require_ort_library(source: Path, names: list[str], what: str) -> None:
    if not any(is_ort_library(name) for name in names):
        raise PackageError(
            f"{source}: no ONNX Runtime library in this {what} (no libonnxruntime*, onnxruntime*.dll, "
            "*_providers_* or onnxruntime_pybind11_state)",
            "give an onnxruntime(-gpu) wheel, a release archive (.tgz/.zip) or its extracted folder",
        )
