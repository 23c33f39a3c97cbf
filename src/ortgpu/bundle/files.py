"""The files of a bundle on disk: where a library came from, companions opened at run time, copying and checks."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ortgpu.binfmt.binary import BinaryFormatError, read_elf
from ortgpu.bundle.model import (
    BundleFile,
    FileKind,
    Target,
)
from ortgpu.bundle.names import (
    CUDNN_SUB_LINUX,
    CUDNN_SUB_WINDOWS,
)
from ortgpu.doctor.package import diagnose_package
from ortgpu.doctor.verdict import Status
from ortgpu.errors import OrtgpuError
from ortgpu.package.analysis import (
    PackageLibrary,
)
from ortgpu.untrusted import name_problem
from ortgpu.versions import version_tuple


def shallowest(libs: Sequence[PackageLibrary]) -> PackageLibrary:
    return min(libs, key=lambda lib: (lib.member.count("/"), lib.member))


def origin_of(result: Any) -> str:
    where = f"{result.path}" if result.path else ""
    source = result.source.value if result.source else "?"
    return f"{where} (found via {source})"


def runtime_companions(name: str, path: Path) -> list[Path]:
    """Files a library opens at run time from its own folder: cuDNN 9's sub-libraries, NVRTC's builtins."""
    folder = path.parent
    lower = name.lower()
    patterns: list[str] = []
    match = re.match(r"^libcudnn\.so\.(\d+)$", name)
    if match:
        patterns.append(CUDNN_SUB_LINUX.format(major=match.group(1)))
    match = re.match(r"^cudnn64_(\d+)\.dll$", lower)
    if match:
        patterns.append(CUDNN_SUB_WINDOWS.format(major=match.group(1)))
    if lower.startswith("libnvrtc.so."):
        patterns.append("libnvrtc-builtins.so*")
    if lower.startswith("nvrtc64_"):
        patterns.append("nvrtc-builtins64_*.dll")
    out: dict[str, Path] = {}
    for pattern in patterns:
        for hit in sorted(folder.glob(pattern)):
            if not hit.is_file():
                continue
            key = _soname_or_name(hit)
            if name_problem(key) is not None:  # a file of this machine with a SONAME no loader would ask for
                continue
            out.setdefault(key, hit.parent / key if (hit.parent / key).is_file() else hit)
    return list(out.values())


def _soname_or_name(path: Path) -> str:
    """The name the loader asks for: an ELF file's SONAME (libcudnn_ops.so.9 for libcudnn_ops.so.9.14.0)."""
    if path.suffix.lower() == ".dll":
        return path.name

    try:
        return read_elf(path).soname or path.name
    except BinaryFormatError:
        return path.name


def name_index(folders: Sequence[Path]) -> dict[str, Path]:
    index: dict[str, Path] = {}
    for folder in folders:
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_file():
                index.setdefault(entry.name.lower(), entry)
    return index


def windows_dll_dirs() -> list[Path]:
    """Where a Windows process finds the CUDA DLLs: PATH, CUDA_PATH, the nvidia-* pip packages."""
    dirs = [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    cuda = os.environ.get("CUDA_PATH")
    if cuda:
        dirs += [Path(cuda) / "bin", Path(cuda) / "bin" / "x64"]
    for entry in sys.path:
        nvidia = Path(entry or ".") / "nvidia"
        if nvidia.is_dir():
            dirs += sorted(p for p in nvidia.glob("*/bin") if p.is_dir())
            dirs += sorted(p for p in nvidia.glob("*/bin/x86_64") if p.is_dir())
    return dirs


def common_root(members: Sequence[str]) -> str:
    """The single top folder of a release archive ("onnxruntime-linux-x64-gpu-1.31.1/"), or ""."""
    tops = {m.split("/", 1)[0] for m in members if "/" in m}
    if len(tops) == 1 and all("/" in m for m in members):
        top = next(iter(tops))
        if not top.lower().startswith(("include", "lib")):
            return top + "/"
    return ""


def copy_new(source: Path, destination: Path) -> None:
    """Copy the bytes of ``source`` to ``destination``, which must not exist (never replaced, never a link)."""
    with open(source, "rb") as src, open(destination, "xb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)


def describe_file(path: Path, target: str, kind: FileKind, why: str, origin: str) -> BundleFile:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return BundleFile(target, path.stat().st_size, digest.hexdigest(), kind, why, origin)


def glibc_floor(folder: Path) -> str | None:
    floors = []
    for path in folder.iterdir():
        if path.is_symlink() or not path.is_file():
            continue
        try:
            floor = read_elf(path).glibc_floor
        except BinaryFormatError:
            continue
        if floor:
            floors.append(floor)
    return max(floors, key=version_tuple) if floors else None


def environment_lines(target: Target) -> dict[str, str]:
    if target.is_windows:
        return {"PATH": "<BUNDLE>\\lib;%PATH%"}
    return {"LD_LIBRARY_PATH": "<BUNDLE>/lib:$LD_LIBRARY_PATH"}


def verify_bundle(folder: Path, target: Target) -> str | None:
    """What the package analysis says of the bundle on this machine; None when it is for another platform.

    The NVIDIA driver (and libcuda, which comes with it) is the target system's: left out of the verdict here.
    """

    try:
        report = diagnose_package(folder)
    except OrtgpuError as exc:  # the bundle is written; say why it could not be checked
        return f"not verified: {exc.one_line()}"
    if report.ready is None:
        return f"analysed statically: {report.verdict}"
    failed = [
        c
        for c in report.checks
        if c.status is Status.FAIL and c.id != "host.driver" and c.details.get("component") != "CUDA driver"
    ]
    if failed:
        return "incomplete: " + "; ".join(str(c.details.get("problem") or c.evidence) for c in failed)
    return f"complete: every library the package analysis asks for is in the bundle ({report.analysis.label})"
