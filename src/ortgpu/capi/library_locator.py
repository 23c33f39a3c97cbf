"""From a PATH the user gives (library file, folder, release archive, wheel) to the libonnxruntime to load.

Archives are opened with ``ortgpu.package.archive`` (every member checked before anything is extracted, only ORT's
own files extracted, into a temp folder removed at the end). The chosen file must be for this machine's OS and
CPU: a Windows DLL on Linux or an aarch64 library on x86_64 is refused with the reason, before any load; and it
must export ``OrtGetApiBase`` (read from its symbol or export table): loading a library runs its constructors, so
a file that is not ONNX Runtime is refused before it is loaded. What a real-looking library does once loaded is
its own code: ortgpu runs it in a child process, but cannot make it safe.
"""

from __future__ import annotations

import os
import platform
import posixpath
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from ortgpu.binfmt.binary import BinaryFormatError, ElfInfo, read_binary
from ortgpu.errors import BadInputError
from ortgpu.package.archive import OpenedPackage, PackageKind, open_package

__all__ = [
    "AmbiguousLibraryError",
    "LibraryNotFoundError",
    "LibraryPlatformError",
    "LocatedLibrary",
    "NotOrtLibraryFileError",
    "SourceKind",
    "exports_symbol",
    "host_platform",
    "is_core_library",
    "library_platform",
    "locate_library",
]


class LibraryNotFoundError(BadInputError):
    """The path holds no ONNX Runtime C library (libonnxruntime.so* / onnxruntime.dll)."""


class AmbiguousLibraryError(BadInputError):
    """The path holds several different ONNX Runtime libraries for this machine."""


class LibraryPlatformError(BadInputError):
    """The library is built for another OS or CPU than this machine's."""


class NotOrtLibraryFileError(BadInputError):
    """A shared library that does not export OrtGetApiBase: not ONNX Runtime, refused before it is loaded."""


class SourceKind(Enum):
    FILE = "file"  # the library file itself
    FOLDER = "folder"  # an extracted release, a wheel folder, an npm package folder, any folder holding it
    ARCHIVE = "archive"  # .tgz / .zip release archive or a .whl


@dataclass(frozen=True)
class LocatedLibrary:
    """The C library chosen from what the user gave."""

    path: Path  # the file to load (inside a temp folder while an archive is open)
    source: Path  # what the user gave
    kind: SourceKind
    member: str  # its path inside the folder/archive ("lib/libonnxruntime.so.1.31.1"); the file name for FILE
    platform: str  # "linux-x64", "win-x64", ...
    version: str | None  # from the file name or VERSION_NUMBER; the library's own answer comes when it is loaded


# libonnxruntime.so, .so.1, .so.1.31.1; onnxruntime.dll; libonnxruntime.dylib / libonnxruntime.1.14.0.dylib.
_CORE = re.compile(r"^(?:libonnxruntime\.so(?:\.\d+)*|onnxruntime\.dll|libonnxruntime(?:\.\d+)*\.dylib)$", re.I)
_NAME_VERSION = re.compile(r"(\d+\.\d+\.\d+)")
_ELF_ARCH = {"x86_64": "x64", "aarch64": "arm64", "x86": "x86", "ppc64le": "ppc64le"}
_PE_ARCH = {"x64": "x64", "arm64": "arm64", "x86": "x86", "arm64ec": "arm64"}


def is_core_library(name: str) -> bool:
    """True for ORT's core C library file names (not the provider plugins, not the Python binding)."""
    return bool(_CORE.match(posixpath.basename(name.replace("\\", "/"))))


def host_platform() -> str:
    """This machine as a platform label: "linux-x64", "win-x64", "linux-arm64", "macos-arm64"."""
    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64", "i686": "x86", "x86": "x86"}.get(
        machine, machine
    )
    if sys.platform.startswith("win"):
        system = "win"
    elif sys.platform == "darwin":
        system = "macos"
    else:
        system = "linux"
    return f"{system}-{arch}"


def library_platform(path: Path) -> str:
    """The platform label a shared library is built for, read from its headers (ELF, PE or Mach-O)."""

    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise LibraryNotFoundError(f"{path}: cannot read ({exc.strerror})", "check the path and permissions") from None
    if magic in (b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe", b"\xfe\xed\xfa\xcf"):
        return "macos"
    info = read_binary(path)
    if isinstance(info, ElfInfo):
        return f"linux-{_ELF_ARCH.get(info.machine, info.machine)}"
    return f"win-{_PE_ARCH.get(info.machine, info.machine)}"


def _describe(label: str) -> str:
    system, _, arch = label.partition("-")
    names = {"linux": "Linux", "win": "Windows", "macos": "macOS"}
    return f"{names.get(system, system)} {arch}".strip()


@contextmanager
def locate_library(path: str | os.PathLike[str]) -> Iterator[LocatedLibrary]:
    """Find the libonnxruntime for this machine in ``path`` and keep it readable for the ``with`` block.

    ``path``: the library file, any folder holding it (searched recursively: lib/, onnxruntime/capi/,
    bin/napi-v3/linux/x64/ ...), or a .tgz/.zip/.whl (checked for unsafe members, then extracted to a temp folder).
    """
    source = Path(path)
    if source.is_file() and _is_binary(source):
        yield _from_file(source)
        return
    with open_package(source) as opened:
        kind = SourceKind.FOLDER if opened.kind is PackageKind.FOLDER else SourceKind.ARCHIVE
        yield _choose(source, kind, opened)


def _is_binary(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError:
        return False
    return magic == b"\x7fELF" or magic[:2] == b"MZ" or magic in (b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe")


def _from_file(source: Path) -> LocatedLibrary:
    if not is_core_library(source.name):
        hint = "give libonnxruntime.so* (Linux) or onnxruntime.dll (Windows), or the folder/archive holding it"
        if "providers" in source.name:
            hint = "give the core library libonnxruntime.so* / onnxruntime.dll; it loads the provider libraries itself"
        raise LibraryNotFoundError(f"{source.name} is not ONNX Runtime's C library", hint)
    label = library_platform(source)
    _require_host(source, source.name, label)
    _require_ort_api(source, source.name)
    return LocatedLibrary(
        path=source.absolute(),
        source=source,
        kind=SourceKind.FILE,
        member=source.name,
        platform=label,
        version=_version_from_name(source.name),
    )


def _require_host(source: Path, member: str, label: str) -> None:
    host = host_platform()
    if label != host:
        raise LibraryPlatformError(
            f"{member} in {source} is a {_describe(label)} library; this machine is {_describe(host)}",
            f"use the ONNX Runtime package built for {host}",
        )


def _choose(source: Path, kind: SourceKind, opened: OpenedPackage) -> LocatedLibrary:
    cores = sorted((m for m in opened.files if is_core_library(m)), key=lambda m: (m.count("/"), len(m), m))
    dylibs = [m for m in opened.members if is_core_library(m) and m.lower().endswith(".dylib")]
    if not cores:
        if dylibs:
            raise LibraryPlatformError(
                f"{source} holds only a macOS ONNX Runtime library ({dylibs[0]}); this machine is "
                f"{_describe(host_platform())}",
                f"use the ONNX Runtime package built for {host_platform()}",
            )
        bindings = [m for m in opened.members if "onnxruntime_pybind11_state" in posixpath.basename(m)]
        hint = "give an ONNX Runtime C/C++ release archive (onnxruntime-<os>-<arch>[-gpu]-X.Y.Z.tgz/.zip) or its folder"
        if bindings:
            hint = (
                "this package has only the Python binding, which embeds ORT (wheels ship the C library from 1.19 on "
                "Windows and from 1.31 on Linux); " + hint
            )
        raise LibraryNotFoundError(f"{source}: no libonnxruntime.so* or onnxruntime.dll in it", hint)
    labels = {member: library_platform(opened.files[member]) for member in cores}
    host = host_platform()
    fitting = [m for m in cores if labels[m] == host]
    if not fitting:
        found = ", ".join(f"{m} ({_describe(labels[m])})" for m in cores)
        raise LibraryPlatformError(
            f"{source} has no ONNX Runtime library for this machine ({_describe(host)}): it holds {found}",
            f"use the ONNX Runtime package built for {host}",
        )
    # libonnxruntime.so -> .so.1 -> .so.1.31.1 are links (not in `files`); distinct files here are distinct copies
    distinct = {_digest(opened.files[m]): m for m in reversed(fitting)} if len(fitting) > 1 else {"": fitting[0]}
    if len(distinct) > 1:
        raise AmbiguousLibraryError(
            f"{source} holds {len(distinct)} different ONNX Runtime libraries for this machine: "
            + ", ".join(sorted(distinct.values())),
            "give the folder or file of the one you mean",
        )
    member = fitting[0]
    _require_ort_api(opened.files[member], member)
    return LocatedLibrary(
        path=opened.files[member].absolute(),
        source=source,
        kind=kind,
        member=member,
        platform=host,
        version=_version_from_name(member) or _version_file(opened, member),
    )


ORT_ENTRY_POINT = "OrtGetApiBase"  # the one symbol every ONNX Runtime C library exports, since C API 1


def _require_ort_api(path: Path, member: str) -> None:
    """Refuse, without loading it, a library that does not export OrtGetApiBase (loading would run its code)."""
    if not exports_symbol(path, ORT_ENTRY_POINT):
        raise NotOrtLibraryFileError(
            f"{member} does not export {ORT_ENTRY_POINT}: it is not an ONNX Runtime C library, and it was not "
            "loaded (loading a library runs its code)",
            "give the libonnxruntime.so* / onnxruntime.dll of an ONNX Runtime release",
        )


def exports_symbol(path: Path, name: str) -> bool:
    """Whether the ELF or PE file at ``path`` exports (defines) ``name``, read statically from its tables."""

    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise LibraryNotFoundError(f"{path}: cannot read ({exc.strerror})", "check the path and permissions") from None
    try:
        if magic == b"\x7fELF":
            return _elf_exports(path, name)
        if magic[:2] == b"MZ":
            return _pe_exports(path, name)
    except (ValueError, OSError, KeyError, AttributeError, TypeError) as exc:
        raise BinaryFormatError(f"{path}: cannot read its symbol table ({exc})", "re-download the package") from None
    return False


def _elf_exports(path: Path, name: str) -> bool:
    from elftools.common.exceptions import ELFError
    from elftools.elf.dynamic import DynamicSegment
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    try:
        with open(path, "rb") as handle:
            elf = ELFFile(handle)
            tables: list[SymbolTableSection | DynamicSegment] = [
                s for s in elf.iter_sections() if isinstance(s, SymbolTableSection) and s.name == ".dynsym"
            ]
            if not tables:  # no section headers (stripped hard): the loader's own view, through PT_DYNAMIC
                tables = [s for s in elf.iter_segments() if isinstance(s, DynamicSegment)]
            for table in tables:
                for symbol in table.iter_symbols():
                    if symbol.name == name and symbol["st_shndx"] != "SHN_UNDEF":
                        return True
    except ELFError as exc:
        raise ValueError(str(exc)) from None
    return False


def _pe_exports(path: Path, name: str) -> bool:
    import pefile

    try:
        pe = pefile.PE(str(path), fast_load=True)
    except pefile.PEFormatError as exc:
        raise ValueError(str(exc)) from None
    try:
        pe.parse_data_directories(directories=[pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_EXPORT"]])
        exports = getattr(pe, "DIRECTORY_ENTRY_EXPORT", None)
        wanted = name.encode("ascii")
        return exports is not None and any(symbol.name == wanted for symbol in exports.symbols)
    finally:
        pe.close()


def _digest(path: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return str(path)
    return digest.hexdigest()


def _version_from_name(name: str) -> str | None:
    match = _NAME_VERSION.search(posixpath.basename(name))
    return match.group(1) if match else None


def _version_file(opened: OpenedPackage, member: str) -> str | None:
    """VERSION_NUMBER at the release root (the folder above lib/)."""
    root = posixpath.dirname(posixpath.dirname(member))
    candidate = posixpath.join(root, "VERSION_NUMBER") if root else "VERSION_NUMBER"
    if candidate not in opened.files:
        return None
    text = opened.read_text(candidate).strip()
    return text or None
