"""Resolve a shared library's needs the way the Linux dynamic loader (ld.so) does, without loading anything.

Search order for a soname requested by an object (ld.so(8)): the object's DT_RPATH (only when it
has no DT_RUNPATH), LD_LIBRARY_PATH, the object's DT_RUNPATH, /etc/ld.so.cache, then the default
directories. The nvidia-* pip packages are not on that path: they are used only when something
loads them first (``onnxruntime.preload_dlls()``, ``import torch``) or LD_LIBRARY_PATH names them,
so they are reported apart.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from ortgpu.binfmt.binary import BinaryFormatError, ElfInfo, read_elf

__all__ = [
    "Candidate",
    "LibStatus",
    "LibraryResolution",
    "LoaderEnv",
    "Source",
    "is_system_library",
    "nvidia_pip_dirs",
    "parse_ld_so_cache",
    "parse_ldconfig_output",
    "resolve",
    "resolve_needs",
    "soname_major",
]


class Source(Enum):
    """Where a library was found: the loader's own search steps, then the pip packages it does not search."""

    PATH = "path"  # the name has a slash: no search
    RPATH = "DT_RPATH"
    LD_LIBRARY_PATH = "LD_LIBRARY_PATH"
    RUNPATH = "DT_RUNPATH"
    LD_SO_CACHE = "ld.so.cache"
    DEFAULT_DIR = "default dir"
    NVIDIA_PIP = "pip package"  # site-packages/nvidia/*/lib, tensorrt_libs: only after preload_dlls()/torch


class LibStatus(Enum):
    FOUND = "found"
    PIP_ONLY = "pip-only"  # only in nvidia-* pip packages, which the loader does not search by itself
    WRONG_MAJOR = "wrong-major"  # another major version is there (libcublasLt.so.11 while .so.12 is needed)
    MISSING = "missing"


@dataclass(frozen=True)
class Candidate:
    path: Path
    source: Source
    directory: str  # the search entry as written, before $ORIGIN expansion ("$ORIGIN/../lib")


@dataclass(frozen=True)
class LibraryResolution:
    soname: str
    requested_by: str  # file name of the object that needs it
    lazy: bool  # opened with dlopen at run time (from the version matrix), not in DT_NEEDED
    status: LibStatus
    path: Path | None  # the file the loader maps (or the pip copy for PIP_ONLY)
    source: Source | None
    real_name: str | None  # the file behind the symlink: "libcudnn.so.9.14.0"
    also_at: tuple[Candidate, ...] = ()  # other copies, in the order the loader would reach them, then pip copies
    other_versions: tuple[Path, ...] = ()  # same library, other version (wrong major, or a missing symlink)
    skipped: tuple[str, ...] = ()  # files the loader passes over (wrong ELF class or machine)
    system: bool = False  # part of the C/C++ runtime (libc, libstdc++...): present on every Linux

    @property
    def ok(self) -> bool:
        return self.status is LibStatus.FOUND


@dataclass(frozen=True)
class LoaderEnv:
    """Everything the search depends on, so tests can build any machine they need."""

    machine: str  # ELF machine of the process: "x86_64", "aarch64"
    ld_library_path: tuple[str, ...]
    cache: Mapping[str, tuple[Path, ...]]  # soname -> paths, from ld.so.cache
    default_dirs: tuple[Path, ...]
    pip_dirs: tuple[Path, ...] = ()  # nvidia-* / tensorrt_libs pip library folders
    cwd: Path = field(default_factory=Path.cwd)  # an empty LD_LIBRARY_PATH entry means the working directory

    @classmethod
    def from_system(
        cls,
        environ: Mapping[str, str] | None = None,
        cache_text: str | None = None,
        sys_path: Sequence[str] | None = None,
        machine: str | None = None,
        root: Path = Path("/"),
    ) -> LoaderEnv:
        """This process's loader setup; `cache_text` is `ldconfig -p` output (read from the system when None)."""
        import platform

        environ = os.environ if environ is None else environ
        machine = machine or platform.machine()
        cache = _system_cache(machine, root) if cache_text is None else parse_ldconfig_output(cache_text, machine)
        raw = environ.get("LD_LIBRARY_PATH")
        return cls(
            machine=machine,
            ld_library_path=tuple(re.split(r"[:;]", raw)) if raw else (),
            cache=cache,
            default_dirs=_default_dirs(machine, root),
            pip_dirs=nvidia_pip_dirs(sys.path if sys_path is None else sys_path),
        )


_MULTIARCH = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu", "ppc64le": "powerpc64le-linux-gnu"}
# ldconfig -p tags the ABI of each entry; only entries of our ABI are used by the loader.
_CACHE_TAG = {"x86_64": "x86-64", "aarch64": "AArch64", "ppc64le": "64bit"}
# ld.so.cache flags (glibc elf/cache.h): FLAG_ELF_LIBC6 | FLAG_<ARCH>_LIB64
_CACHE_FLAGS = {"x86_64": 0x0303, "aarch64": 0x0A03, "ppc64le": 0x0503}
_ELF_MACHINE = {"x86_64": 62, "aarch64": 183, "ppc64le": 21}
_SYSTEM = re.compile(
    r"^(ld-linux.*|libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|libutil|libresolv|libz)\.so(\.\d+)*$"
)


def is_system_library(soname: str) -> bool:
    """The C/C++ runtime every Linux has: not worth a row of its own in a report."""
    return bool(_SYSTEM.match(soname))


def soname_major(soname: str) -> tuple[str, str | None]:
    """("libcublasLt.so", "12") from "libcublasLt.so.12"; ("libcudart.so", "11") from "libcudart.so.11.0"."""
    stem, sep, version = soname.partition(".so")
    if not sep:
        return soname, None
    parts = version.lstrip(".").split(".")
    return stem + ".so", parts[0] if parts and parts[0].isdigit() else None


def _default_dirs(machine: str, root: Path) -> tuple[Path, ...]:
    triplet = _MULTIARCH.get(machine)
    names = []
    if triplet:
        names += [f"lib/{triplet}", f"usr/lib/{triplet}"]
    if machine.endswith("64"):
        names += ["lib64", "usr/lib64"]
    names += ["lib", "usr/lib"]
    return tuple(root / n for n in names)


def nvidia_pip_dirs(sys_path: Iterable[str]) -> tuple[Path, ...]:
    """Library folders of the nvidia-* pip packages (nvidia/<pkg>/lib, nvidia/cu13/lib) and of tensorrt_libs."""
    out: list[Path] = []
    for entry in sys_path:
        base = Path(entry or ".")
        nvidia = base / "nvidia"
        if nvidia.is_dir():
            out += sorted(p for p in nvidia.glob("*/lib") if p.is_dir())
        trt = base / "tensorrt_libs"
        if trt.is_dir():
            out.append(trt)
    return tuple(dict.fromkeys(out))  # each folder once, first place kept


_LDCONFIG_LINE = re.compile(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(.+?)\s*$")


def parse_ldconfig_output(text: str, machine: str) -> dict[str, tuple[Path, ...]]:
    """Parse `ldconfig -p`: keep the entries of this machine's ABI, in cache order."""
    tag = _CACHE_TAG.get(machine)
    cache: dict[str, list[Path]] = {}
    for line in text.splitlines():
        match = _LDCONFIG_LINE.match(line)
        if not match:
            continue
        name, flags, path = match.groups()
        if tag and tag not in flags:
            continue
        cache.setdefault(name, []).append(Path(path))
    return {k: tuple(v) for k, v in cache.items()}


_NEW_CACHE_MAGIC = b"glibc-ld.so.cache1.1"


def parse_ld_so_cache(data: bytes, machine: str) -> dict[str, tuple[Path, ...]]:
    """Parse the binary /etc/ld.so.cache (glibc "new" format, alone or after the old one)."""
    start = data.find(_NEW_CACHE_MAGIC)
    if start < 0:
        return {}
    header = struct.Struct("<20sII")
    _, nlibs, _ = header.unpack_from(data, start)
    entry = struct.Struct("<iIIIQ")
    base = start + 48  # magic+version, nlibs, len_strings, flags, padding, extension offset, unused[3]
    wanted = _CACHE_FLAGS.get(machine)
    cache: dict[str, list[Path]] = {}
    for i in range(nlibs):
        offset = base + i * entry.size
        if offset + entry.size > len(data):
            break
        flags, key, value, _, _ = entry.unpack_from(data, offset)
        if wanted is not None and flags != wanted:
            continue
        name, path = _cstring(data, start + key), _cstring(data, start + value)
        if name and path:
            cache.setdefault(name, []).append(Path(path))
    return {k: tuple(v) for k, v in cache.items()}


def _cstring(data: bytes, offset: int) -> str | None:
    if not 0 <= offset < len(data):
        return None
    end = data.find(b"\0", offset)
    return data[offset : end if end >= 0 else len(data)].decode("utf-8", "replace")


def _system_cache(machine: str, root: Path) -> dict[str, tuple[Path, ...]]:
    ldconfig = shutil.which("ldconfig") or next(
        (p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if os.access(p, os.X_OK)), None
    )
    if ldconfig and root == Path("/"):
        try:
            out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired):
            out = None
        if out is not None and out.returncode == 0 and out.stdout:
            return parse_ldconfig_output(out.stdout, machine)
    try:
        return parse_ld_so_cache((root / "etc/ld.so.cache").read_bytes(), machine)
    except OSError:
        return {}


def _expand(entry: str, origin: Path, machine: str) -> Path:
    """Expand the dynamic string tokens ld.so knows: $ORIGIN, $LIB, $PLATFORM (also as ${...})."""
    lib = "lib64" if machine.endswith("64") else "lib"
    for token, value in (("ORIGIN", str(origin)), ("LIB", lib), ("PLATFORM", machine)):
        entry = entry.replace("${" + token + "}", value).replace("$" + token, value)
    return Path(entry)


def _matches_machine(path: Path, machine: str) -> bool:
    """ld.so skips files of another ELF class or machine and keeps searching."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(20)
    except OSError:
        return False
    if head[:4] != b"\x7fELF" or len(head) < 20:
        return False
    want = _ELF_MACHINE.get(machine)
    if want is None:
        return True
    elf_class = 2 if machine.endswith("64") else 1
    order = "<" if head[5] == 1 else ">"
    return head[4] == elf_class and struct.unpack_from(order + "H", head, 18)[0] == want


def _search_dirs(requester: ElfInfo | None, env: LoaderEnv) -> list[tuple[Source, str, Path]]:
    dirs: list[tuple[Source, str, Path]] = []
    origin = requester.path.parent if requester else env.cwd
    if requester and requester.rpath and not requester.runpath:
        dirs += [(Source.RPATH, d, _expand(d, origin, env.machine)) for d in requester.rpath]
    dirs += [
        (Source.LD_LIBRARY_PATH, d, _expand(d, origin, env.machine) if d else env.cwd) for d in env.ld_library_path
    ]
    if requester:
        dirs += [(Source.RUNPATH, d, _expand(d, origin, env.machine)) for d in requester.runpath]
    return dirs


def resolve(soname: str, requester: ElfInfo | None, env: LoaderEnv, *, lazy: bool = False) -> LibraryResolution:
    """Find `soname` as ld.so would when `requester` asks for it; report every other copy and version too."""
    found: list[Candidate] = []
    skipped: list[str] = []

    def consider(path: Path, source: Source, entry: str) -> None:
        if not path.is_file():
            return
        if not _matches_machine(path, env.machine):
            skipped.append(str(path))
            return
        if all(c.path.resolve() != path.resolve() for c in found):
            found.append(Candidate(path, source, entry))

    if "/" in soname:
        consider(Path(soname), Source.PATH, soname)
    else:
        for source, entry, directory in _search_dirs(requester, env):
            consider(directory / soname, source, entry)
        for path in env.cache.get(soname, ()):
            consider(path, Source.LD_SO_CACHE, str(path.parent))
        for directory in env.default_dirs:
            consider(directory / soname, Source.DEFAULT_DIR, str(directory))
    loader_hits = list(found)
    for directory in env.pip_dirs:
        consider(directory / soname, Source.NVIDIA_PIP, str(directory))
    pip_hits = found[len(loader_hits) :]

    requested_by = requester.path.name if requester else "(process)"
    if loader_hits:
        status, chosen = LibStatus.FOUND, loader_hits[0]
    elif pip_hits:
        status, chosen = LibStatus.PIP_ONLY, pip_hits[0]
    else:
        status, chosen = LibStatus.MISSING, None
    others: tuple[Path, ...] = ()
    if chosen is None:
        others = _other_versions(soname, requester, env)
        _, major = soname_major(soname)
        if major is not None and any(soname_major(p.name)[1] not in (None, major) for p in others):
            status = LibStatus.WRONG_MAJOR
    return LibraryResolution(
        soname=soname,
        requested_by=requested_by,
        lazy=lazy,
        status=status,
        path=chosen.path if chosen else None,
        source=chosen.source if chosen else None,
        real_name=chosen.path.resolve().name if chosen else None,
        also_at=tuple(c for c in found if c is not chosen),
        other_versions=others,
        skipped=tuple(skipped),
        system=is_system_library(soname),
    )


def _other_versions(soname: str, requester: ElfInfo | None, env: LoaderEnv) -> tuple[Path, ...]:
    """Files of the same library with another version suffix, wherever the loader or pip would look."""
    stem, _ = soname_major(soname)
    prefix = stem + "."
    hits: list[Path] = []
    for name, paths in env.cache.items():
        if name.startswith(prefix) and name != soname:
            hits += [p for p in paths if p.is_file()]
    dirs = [d for _, _, d in _search_dirs(requester, env)] + list(env.default_dirs) + list(env.pip_dirs)
    for directory in dirs:
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        hits += [directory / n for n in names if n.startswith(prefix) and n != soname]
    return tuple(sorted(dict.fromkeys(hits), key=str))


def resolve_needs(
    library: Path | ElfInfo,
    env: LoaderEnv,
    *,
    lazy: Sequence[str] = (),
    recursive: bool = True,
) -> tuple[LibraryResolution, ...]:
    """Resolve a library's DT_NEEDED (and the `lazy` sonames it dlopens), then, when `recursive`,
    the needs of every non-system library found, each from the object that asks for it.

    cuDNN's sub-libraries (libcudnn_*.so.N) are opened by libcudnn.so.N itself, so they are
    resolved from that library's RPATH/RUNPATH when it was found.
    """
    root = library if isinstance(library, ElfInfo) else read_elf(library)
    results: dict[str, LibraryResolution] = {}
    queue: list[tuple[str, ElfInfo, bool]] = [(n, root, False) for n in root.needed]
    queue += [(n, root, True) for n in lazy if n not in root.needed]
    infos: dict[Path, ElfInfo] = {}
    while queue:
        soname, requester, is_lazy = queue.pop(0)
        if soname in results:
            continue
        if is_lazy and soname.startswith("libcudnn_"):
            parent = results.get("libcudnn.so." + (soname_major(soname)[1] or ""))
            if parent is None and any(n.startswith("libcudnn.so.") for n, _, _ in queue):
                queue.append((soname, requester, is_lazy))  # resolve after libcudnn.so.N
                continue
            if parent is not None and parent.path is not None and parent.path in infos:
                requester = infos[parent.path]
        result = resolve(soname, requester, env, lazy=is_lazy)
        results[soname] = result
        if result.path is None or result.system:
            continue
        try:
            info = infos.get(result.path) or read_elf(result.path)
        except BinaryFormatError:
            continue
        infos[result.path] = info
        if recursive:
            queue += [(n, info, False) for n in info.needed if n not in results]
    return tuple(results.values())
