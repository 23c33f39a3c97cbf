"""What an ORT package (wheel, release archive or folder) is and needs, read statically from its files alone.

Platform-neutral: a Windows package analysed on Linux gives the same answer. Checking those needs against a
machine is the doctor's (:mod:`ortgpu.doctor.package`).
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

from ortgpu.binfmt.binary import BinaryFormatError, ElfInfo, PeInfo, read_binary
from ortgpu.package.archive import OpenedPackage, PackageError, PackageKind, is_ort_library
from ortgpu.package.libraries import (
    ROLE_ORDER,
    Component,
    LibraryRole,
    Need,
    NeedKind,
    PackageAnalysis,
    PackageFlavour,
    PackageLibrary,
    PackagePlatform,
    Requirement,
    RequirementKind,
    classify_library,
    host_platform,
    library_role,
    stack_major,
)
from ortgpu.package.requirements import (
    _row_label,
    cuda_requirement,
    cudnn_requirement,
    glibc_requirement,
    major_from,
    matrix_row,
    python_requirement,
    vc_requirement,
    with_lazy_needs,
)
from ortgpu.progress import Progress, silent

__all__ = [
    "Component",
    "LibraryRole",
    "Need",
    "NeedKind",
    "PackageAnalysis",
    "PackageFlavour",
    "PackageLibrary",
    "PackagePlatform",
    "Requirement",
    "RequirementKind",
    "analyse_package",
    "analyse_with_binaries",
    "classify_library",
    "host_platform",
]


# --- public entry points ------------------------------------------------------------------------------------------


def analyse_package(
    opened: OpenedPackage, progress: Progress | None = None, *, metadata: tuple[str, str] | None = None
) -> PackageAnalysis:
    """The static, platform-neutral analysis of an opened package (reusable by any host check).

    `metadata` (distribution name, version) stands in for a wheel's METADATA when the package carries none:
    an installed onnxruntime folder, whose dist-info lies beside it.
    """
    analysis, _ = analyse_with_binaries(opened, progress or silent, metadata)
    return analysis


# --- library classification ---------------------------------------------------------------------------------------


# --- static analysis ----------------------------------------------------------------------------------------------


def analyse_with_binaries(
    opened: OpenedPackage, report: Progress, metadata: tuple[str, str] | None = None
) -> tuple[PackageAnalysis, dict[str, ElfInfo | PeInfo]]:
    meta = _read_metadata(opened)
    if metadata and not meta.version:
        meta = dataclasses.replace(meta, name=meta.name or metadata[0], version=metadata[1])
    notes: list[str] = []
    bundled = {posixpath.basename(m).lower() for m in (*opened.members, *opened.links)}
    binaries: dict[str, ElfInfo | PeInfo] = {}
    library_members = sorted(m for m in opened.files if is_ort_library(m))
    for index, member in enumerate(library_members):
        report(f"reading {posixpath.basename(member)}", index / max(len(library_members), 1))
        try:
            binaries[member] = read_binary(opened.files[member])
        except BinaryFormatError as exc:
            raise PackageError(
                f"{opened.source}: {member} is not a readable ELF or PE library ({type(exc).__name__})",
                "re-download the package; it may be truncated or damaged",
            ) from None
    libraries = [_library(member, info, bundled) for member, info in binaries.items()]
    libraries.sort(key=lambda lib: (ROLE_ORDER.index(lib.role), lib.member))
    platform, platform_evidence, platform_note = _platform(opened, meta.tags, libraries)
    if platform_note:
        notes.append(platform_note)
    providers = tuple(sorted({lib.provider for lib in libraries if lib.provider and lib.provider != "shared"}))
    flavour = _flavour(opened, meta.name, libraries)

    version, version_evidence, version_note = _version(opened, meta, libraries)
    if version_note:
        notes.append(version_note)
    gpu_libs = [lib for lib in libraries if lib.role in (LibraryRole.CUDA, LibraryRole.TENSORRT)]
    cuda_major, cuda_evidence = major_from(gpu_libs, Component.CUDA_RUNTIME, Component.CUBLAS)
    row = matrix_row(version, cuda_major) if flavour is PackageFlavour.GPU else None
    if row is not None:
        libraries = [with_lazy_needs(lib, row, platform, bundled) for lib in libraries]
    requirements: list[Requirement] = []
    if cuda_major is not None or flavour is PackageFlavour.GPU:
        requirements.append(cuda_requirement(cuda_major, cuda_evidence, meta.build_info, notes))
    cudnn_major, cudnn_req = cudnn_requirement(libraries, row, version, flavour)
    if cudnn_req:
        requirements.append(cudnn_req)
    tensorrt_major, trt_evidence = major_from(
        [lib for lib in libraries if lib.role is LibraryRole.TENSORRT], Component.TENSORRT
    )
    if trt_evidence:
        value = str(tensorrt_major) if tensorrt_major is not None else "unknown"
        requirements.append(
            Requirement(RequirementKind.TENSORRT, value, f"{trt_evidence}; TensorRT EP only", optional=True)
        )
    if row is not None:
        driver = row.min_driver_windows if platform.is_windows else row.min_driver_linux
        if driver:
            requirements.append(
                Requirement(
                    RequirementKind.DRIVER,
                    f">= {driver}",
                    f"version matrix, {_row_label(row)}",
                    from_matrix=True,
                )
            )
    glibc_floor, glibc_req = glibc_requirement(libraries, meta.tags, platform)
    if glibc_req:
        requirements.append(glibc_req)
    vc_runtime, vc_req = vc_requirement(libraries)
    if vc_req:
        requirements.append(vc_req)
    python_req = python_requirement(meta.tags)
    if python_req:
        requirements.append(python_req)
    analysis = PackageAnalysis(
        source=opened.source,
        kind=opened.kind,
        distribution=meta.name or meta.build_info.get("package_name"),
        version=version,
        version_evidence=version_evidence,
        git_commit=meta.git_commit,
        platform=platform,
        platform_evidence=platform_evidence,
        wheel_tags=meta.tags,
        flavour=flavour,
        providers=providers,
        libraries=tuple(libraries),
        requirements=tuple(requirements),
        cuda_major=cuda_major,
        cudnn_major=cudnn_major,
        tensorrt_major=tensorrt_major,
        glibc_floor=glibc_floor,
        vc_runtime=vc_runtime,
        pip_extras=meta.extras,
        notes=tuple(notes),
    )
    return analysis, binaries


@dataclass(frozen=True)
class _Metadata:
    name: str | None
    version: str | None
    tags: tuple[str, ...]
    extras: tuple[str, ...]
    build_info: dict[str, str]
    version_number: str | None
    git_commit: str | None


def _first_text(opened: OpenedPackage, basename: str) -> tuple[str | None, str | None]:
    hits = opened.find(basename)
    return (hits[0], opened.read_text(hits[0])) if hits else (None, None)


def _read_metadata(opened: OpenedPackage) -> _Metadata:
    from email.parser import HeaderParser

    name = version = None
    extras: tuple[str, ...] = ()
    _, metadata = _first_text(opened, "METADATA")
    if metadata:
        headers = HeaderParser().parsestr(metadata)
        name, version = headers.get("Name"), headers.get("Version")
        extras = tuple(e.strip() for e in headers.get_all("Provides-Extra") or [])
    tags: list[str] = []
    _, wheel = _first_text(opened, "WHEEL")
    if wheel:
        tags = [v.strip() for k, _, v in (line.partition(":") for line in wheel.splitlines()) if k.strip() == "Tag"]
    if not tags and opened.kind is PackageKind.WHEEL:
        tags = _tags_from_filename(opened.source.name)
    build_info: dict[str, str] = {}
    _, info = _first_text(opened, "build_and_package_info.py")
    if info:  # parsed as text: code from a package is never run
        build_info = dict(re.findall(r"^(\w+)\s*=\s*['\"]([^'\"]*)['\"]", info, re.MULTILINE))
    _, number = _first_text(opened, "VERSION_NUMBER")
    _, commit = _first_text(opened, "GIT_COMMIT_ID")
    return _Metadata(
        name=name,
        version=version,
        tags=tuple(tags),
        extras=extras,
        build_info=build_info,
        version_number=number.strip() or None if number else None,
        git_commit=commit.strip() or None if commit else None,
    )


def _tags_from_filename(filename: str) -> list[str]:
    parts = filename[: -len(".whl")].split("-") if filename.lower().endswith(".whl") else []
    if len(parts) < 5:
        return []
    python, abi, platforms = parts[-3], parts[-2], parts[-1]
    return [f"{py}-{abi}-{plat}" for py in python.split(".") for plat in platforms.split(".")]


def _library(member: str, info: ElfInfo | PeInfo, bundled: set[str]) -> PackageLibrary:
    name = posixpath.basename(member)
    role, provider = library_role(name)

    def need(dep: str, kind: NeedKind) -> Need:
        component = classify_library(dep)
        return Need(dep, component, kind, stack_major(dep, component), dep.lower() in bundled)

    if isinstance(info, ElfInfo):
        return PackageLibrary(
            member=member,
            role=role,
            provider=provider,
            format="elf",
            machine=info.machine,
            needs=tuple(need(n, NeedKind.LOAD_TIME) for n in info.needed),
            soname=info.soname,
            rpath=info.rpath,
            runpath=info.runpath,
            glibc_floor=info.glibc_floor,
        )
    needs = [need(n, NeedKind.LOAD_TIME) for n in info.imports]
    needs += [need(n, NeedKind.DELAY_LOAD) for n in info.delay_imports if n not in info.imports]
    return PackageLibrary(
        member=member,
        role=role,
        provider=provider,
        format="pe",
        machine=info.machine,
        needs=tuple(needs),
        linker_version=_linker_version(info.path),
        file_version=info.file_version,
    )


def _linker_version(path: Path) -> str | None:
    """The MSVC toolset that linked a PE file, from its optional header ("14.40")."""
    import pefile

    try:
        pe = pefile.PE(str(path), fast_load=True)
    except (pefile.PEFormatError, OSError):
        return None
    try:
        header = pe.OPTIONAL_HEADER
        return f"{header.MajorLinkerVersion}.{header.MinorLinkerVersion:02d}" if header.MajorLinkerVersion else None
    finally:
        pe.close()


_TAG_PLATFORMS = (
    (re.compile(r"^(manylinux|musllinux|linux).*_x86_64$"), PackagePlatform.LINUX_X86_64),
    (re.compile(r"^(manylinux|musllinux|linux).*_aarch64$"), PackagePlatform.LINUX_AARCH64),
    (re.compile(r"^win_amd64$"), PackagePlatform.WIN_X64),
    (re.compile(r"^win_arm64$"), PackagePlatform.WIN_ARM64),
)
_BINARY_PLATFORMS = {
    ("elf", "x86_64"): PackagePlatform.LINUX_X86_64,
    ("elf", "aarch64"): PackagePlatform.LINUX_AARCH64,
    ("pe", "x64"): PackagePlatform.WIN_X64,
    ("pe", "arm64"): PackagePlatform.WIN_ARM64,
    ("pe", "arm64ec"): PackagePlatform.WIN_ARM64,
}


def _platform(
    opened: OpenedPackage, tags: tuple[str, ...], libraries: list[PackageLibrary]
) -> tuple[PackagePlatform, str, str | None]:
    binary_platforms = {_BINARY_PLATFORMS.get((lib.format, lib.machine)) for lib in libraries}
    from_binaries = next((p for p in binary_platforms if p is not None), None)
    machines = ", ".join(sorted({f"{lib.format.upper()} {lib.machine}" for lib in libraries}))
    tag_platform = None
    tag_text = None
    for tag in tags:
        plat = tag.rsplit("-", 1)[-1]
        for pattern, candidate in _TAG_PLATFORMS:
            if pattern.match(plat):
                tag_platform, tag_text = candidate, plat
                break
        if tag_platform:
            break
    platform = tag_platform or from_binaries
    if platform is None:
        where = f"tags {', '.join(tags)}; " if tags else ""
        raise PackageError(
            f"{opened.source}: unsupported package platform ({where}libraries: {machines})",
            "ortgpu reads linux x86_64/aarch64 and win x64/arm64 packages",
        )
    evidence = f"wheel tag {tag_text}; {machines}" if tag_text else machines
    note = None
    if (tag_platform and from_binaries and tag_platform is not from_binaries) or len(binary_platforms - {None}) > 1:
        note = f"the libraries do not all match the package platform {platform.value}: {machines}"
    return platform, evidence, note


def _flavour(opened: OpenedPackage, name: str | None, libraries: list[PackageLibrary]) -> PackageFlavour:
    roles = {lib.role for lib in libraries}
    if roles & {LibraryRole.CUDA, LibraryRole.TENSORRT}:
        return PackageFlavour.GPU
    basenames = {posixpath.basename(m).lower() for m in opened.members}
    if "directml.dll" in basenames or (name and "directml" in name.lower()):
        return PackageFlavour.DIRECTML
    if LibraryRole.OTHER_PROVIDER in roles:
        return PackageFlavour.OTHER
    return PackageFlavour.CPU


def _version(
    opened: OpenedPackage, meta: _Metadata, libraries: list[PackageLibrary]
) -> tuple[str | None, tuple[str, ...], str | None]:
    candidates: list[tuple[str, str]] = []
    if meta.version:
        candidates.append(("METADATA", meta.version))
    if meta.version_number:
        candidates.append(("VERSION_NUMBER", meta.version_number))
    if meta.build_info.get("__version__"):
        candidates.append(("build_and_package_info.py", meta.build_info["__version__"]))
    for lib in libraries:
        match = re.match(r"^libonnxruntime\.so\.(\d+\.\d+\.\d+)$", lib.name)
        if lib.role is LibraryRole.CORE and match:
            candidates.append((lib.name, match.group(1)))
            break
    if not candidates:
        return None, (), "no version found (no wheel METADATA, VERSION_NUMBER or versioned libonnxruntime.so)"
    evidence = tuple(f"{where}: {value}" for where, value in candidates)
    values = {value for _, value in candidates}
    note = f"the version sources disagree: {'; '.join(evidence)}" if len(values) > 1 else None
    return candidates[0][1], evidence, note
