"""What an ORT package (wheel, release archive or folder) is and needs, read statically from its files alone.

Platform-neutral: a Windows package analysed on Linux gives the same answer. Checking those needs against a
machine is the doctor's (:mod:`ortgpu.doctor.package`).
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from ortgpu.binfmt.binary import BinaryFormatError, ElfInfo, PeInfo, read_binary
from ortgpu.knowledge import matrix
from ortgpu.knowledge.matrix import OrtBuildRequirements
from ortgpu.package.archive import OpenedPackage, PackageError, PackageKind, is_ort_library
from ortgpu.progress import Progress, silent
from ortgpu.versions import version_tuple

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


class PackagePlatform(Enum):
    LINUX_X86_64 = "linux x86_64"
    LINUX_AARCH64 = "linux aarch64"
    WIN_X64 = "win x64"
    WIN_ARM64 = "win arm64"

    @property
    def is_windows(self) -> bool:
        return self in (PackagePlatform.WIN_X64, PackagePlatform.WIN_ARM64)


class PackageFlavour(Enum):
    GPU = "gpu"  # has the CUDA (and usually TensorRT) provider
    CPU = "cpu"
    DIRECTML = "directml"
    OTHER = "other"  # another accelerator build (OpenVINO, ROCm, QNN...): see `providers`


class LibraryRole(Enum):
    CORE = "core"  # libonnxruntime.so / onnxruntime.dll
    PYTHON_BINDING = "python binding"  # onnxruntime_pybind11_state: the core is linked into it in older wheels
    PROVIDERS_SHARED = "providers shared"
    CUDA = "cuda provider"
    TENSORRT = "tensorrt provider"
    OTHER_PROVIDER = "other provider"


class Component(Enum):
    """What a needed library is, whatever its platform-specific name."""

    ORT = "ONNX Runtime"
    CUDA_DRIVER = "CUDA driver"
    CUDA_RUNTIME = "CUDA runtime"
    CUBLAS = "cuBLAS"
    CUFFT = "cuFFT"
    CURAND = "cuRAND"
    NVRTC = "NVRTC"
    CUDNN = "cuDNN"
    TENSORRT = "TensorRT"
    VC_RUNTIME = "VC++ runtime"
    C_RUNTIME = "C/C++ runtime"
    OS = "operating system"
    PYTHON = "Python"
    OTHER = "other"


class NeedKind(Enum):
    LOAD_TIME = "load-time"  # ELF DT_NEEDED / PE import table: the library does not load without it
    DELAY_LOAD = "delay-load"  # PE delay-load import: resolved on first call
    LAZY = "lazy"  # opened by ORT at run time (dlopen/LoadLibrary), known from the version matrix
    INDIRECT = "indirect"  # opened at run time by another needed library (cuDNN's sub-libraries), from the matrix


class RequirementKind(Enum):
    CUDA = "CUDA"
    CUDNN = "cuDNN"
    TENSORRT = "TensorRT"
    DRIVER = "NVIDIA driver"
    GLIBC = "glibc"
    VC_RUNTIME = "VC++ runtime"
    PYTHON = "Python"


@dataclass(frozen=True)
class Need:
    """One library a package library needs, described so any host (Linux or simulated Windows) can resolve it."""

    name: str  # as the binary names it: "libcublasLt.so.12", "cudnn64_9.dll"
    component: Component
    kind: NeedKind
    major: int | None  # the major of its stack this name pins (CUDA for cuBLAS/cudart, cuDNN, TensorRT)
    in_package: bool  # the package ships a file of that name


@dataclass(frozen=True)
class PackageLibrary:
    member: str  # path inside the package
    role: LibraryRole
    provider: str | None  # "cuda", "tensorrt", "shared", "openvino"...
    format: str  # "elf" or "pe"
    machine: str  # "x86_64", "aarch64", "x64", "arm64"
    needs: tuple[Need, ...]
    soname: str | None = None
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    glibc_floor: str | None = None
    linker_version: str | None = None  # PE: MSVC toolset that linked it ("14.40")
    file_version: str | None = None

    @property
    def name(self) -> str:
        return posixpath.basename(self.member)


@dataclass(frozen=True)
class Requirement:
    kind: RequirementKind
    value: str  # "13", "9", ">= 2.28", ">= 14.40", "cp311"; "unknown" when nothing says
    evidence: str
    from_matrix: bool = False  # taken from the version matrix, not read from the binaries
    optional: bool = False  # needed only by an optional provider (TensorRT)


@dataclass(frozen=True)
class PackageAnalysis:
    """What the package is and needs, read from its files alone."""

    source: Path
    kind: PackageKind
    distribution: str | None  # "onnxruntime-gpu"
    version: str | None
    version_evidence: tuple[str, ...]  # "METADATA: 1.31.1", "VERSION_NUMBER: 1.16.3"
    git_commit: str | None
    platform: PackagePlatform
    platform_evidence: str
    wheel_tags: tuple[str, ...]
    flavour: PackageFlavour
    providers: tuple[str, ...]
    libraries: tuple[PackageLibrary, ...]
    requirements: tuple[Requirement, ...]
    cuda_major: int | None
    cudnn_major: int | None
    tensorrt_major: int | None
    glibc_floor: str | None
    vc_runtime: str | None  # minimum VC++ runtime version ("14.40"), "any" when the version cannot be derived
    pip_extras: tuple[str, ...]  # "cuda", "cudnn": extras that pull the nvidia-* libraries (ORT >= 1.21)
    notes: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.distribution or 'onnxruntime'} {self.version or '(version unknown)'}"

    def requirement(self, kind: RequirementKind) -> Requirement | None:
        return next((r for r in self.requirements if r.kind is kind), None)

    def library(self, role: LibraryRole) -> PackageLibrary | None:
        return next((lib for lib in self.libraries if lib.role is role), None)


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


def host_platform(system: str | None = None, machine: str | None = None) -> PackagePlatform | None:
    """This machine as a package platform, or None when no ORT package platform matches it (e.g. macOS)."""
    import platform

    system = (system or platform.system()).lower()
    arch = (machine or platform.machine()).lower()
    if system == "linux":
        return {"x86_64": PackagePlatform.LINUX_X86_64, "aarch64": PackagePlatform.LINUX_AARCH64}.get(arch)
    if system == "windows":
        return {
            "amd64": PackagePlatform.WIN_X64,
            "x86_64": PackagePlatform.WIN_X64,
            "arm64": PackagePlatform.WIN_ARM64,
        }.get(arch)
    return None


# --- library classification ---------------------------------------------------------------------------------------

_COMPONENT_PATTERNS: tuple[tuple[Component, re.Pattern[str]], ...] = tuple(
    (component, re.compile(pattern, re.IGNORECASE))
    for component, pattern in (
        (Component.CUDA_DRIVER, r"^(libcuda\.so(\.\d+)*|nvcuda\.dll)$"),
        (Component.CUDA_RUNTIME, r"^(libcudart\.so|cudart64_)"),
        (Component.CUBLAS, r"^(libcublas(lt)?\.so|cublas(lt)?64_)"),
        (Component.CUFFT, r"^(libcufft\.so|cufft64_)"),
        (Component.CURAND, r"^(libcurand\.so|curand64_)"),
        (Component.NVRTC, r"^(libnvrtc[.-]|nvrtc64_|nvrtc-builtins)"),
        (Component.CUDNN, r"^(libcudnn|cudnn)"),
        (Component.TENSORRT, r"^(libnvinfer|libnvonnxparser|libnvparsers|nvinfer|nvonnxparser|nvparsers)"),
        (Component.VC_RUNTIME, r"^(msvcp140|vcruntime140|concrt140|vcomp140)(_\w+)?\.dll$"),
        (
            Component.C_RUNTIME,
            r"^((ld-linux.*|libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|libutil|libresolv|libatomic)"
            r"\.so(\.\d+)*|ucrtbase\.dll|api-ms-win-crt-.*\.dll)$",
        ),
        (Component.PYTHON, r"^(python3\d*\.dll|libpython3)"),
        (
            Component.OS,
            r"^(libz\.so(\.\d+)*|kernel32|advapi32|user32|gdi32|shell32|shlwapi|ole32|oleaut32|ws2_32|dbghelp|"
            r"setupapi|bcrypt|crypt32|version|psapi|ntdll|dxgi|d3d12|d3d11|dxcore|api-ms-win-.*|ext-ms-win-.*)",
        ),
    )
)


def classify_library(name: str) -> Component:
    """What a needed library is, from its name (Linux soname or Windows DLL name)."""
    if is_ort_library(name):
        return Component.ORT
    for component, pattern in _COMPONENT_PATTERNS:
        if pattern.match(name):
            return component
    return Component.OTHER


_STACKS = (Component.CUDA_RUNTIME, Component.CUBLAS, Component.CUFFT, Component.CURAND, Component.NVRTC)


def _stack_major(name: str, component: Component) -> int | None:
    """The major of the stack the name pins, from the matrix's naming rules (libcufft.so.11 is CUDA 12)."""

    if component in _STACKS:
        return matrix.cuda_major_from_libraries([name])
    if component is Component.CUDNN:
        return matrix.cudnn_major_from_libraries([name])
    if component is Component.TENSORRT:
        return matrix.tensorrt_major_from_libraries([name])
    return None


_ROLE_ORDER = list(LibraryRole)


def _role(name: str) -> tuple[LibraryRole, str | None]:
    lower = name.lower()
    if lower.startswith("onnxruntime_pybind11_state"):
        return LibraryRole.PYTHON_BINDING, None
    match = re.match(r"^(?:lib)?onnxruntime_providers_([a-z0-9_]+?)\.(?:so|dll)", lower)
    if match:
        provider = match.group(1)
        role = {
            "shared": LibraryRole.PROVIDERS_SHARED,
            "cuda": LibraryRole.CUDA,
            "tensorrt": LibraryRole.TENSORRT,
        }.get(provider, LibraryRole.OTHER_PROVIDER)
        return role, provider
    return LibraryRole.CORE, None


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
    libraries.sort(key=lambda lib: (_ROLE_ORDER.index(lib.role), lib.member))
    platform, platform_evidence, platform_note = _platform(opened, meta.tags, libraries)
    if platform_note:
        notes.append(platform_note)
    providers = tuple(sorted({lib.provider for lib in libraries if lib.provider and lib.provider != "shared"}))
    flavour = _flavour(opened, meta.name, libraries)

    version, version_evidence, version_note = _version(opened, meta, libraries)
    if version_note:
        notes.append(version_note)
    gpu_libs = [lib for lib in libraries if lib.role in (LibraryRole.CUDA, LibraryRole.TENSORRT)]
    cuda_major, cuda_evidence = _major_from(gpu_libs, Component.CUDA_RUNTIME, Component.CUBLAS)
    row = _matrix_row(version, cuda_major) if flavour is PackageFlavour.GPU else None
    if row is not None:
        libraries = [_with_lazy_needs(lib, row, platform, bundled) for lib in libraries]
    requirements: list[Requirement] = []
    if cuda_major is not None or flavour is PackageFlavour.GPU:
        requirements.append(_cuda_requirement(cuda_major, cuda_evidence, meta.build_info, notes))
    cudnn_major, cudnn_req = _cudnn_requirement(libraries, row, version, flavour)
    if cudnn_req:
        requirements.append(cudnn_req)
    tensorrt_major, trt_evidence = _major_from(
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
    glibc_floor, glibc_req = _glibc_requirement(libraries, meta.tags, platform)
    if glibc_req:
        requirements.append(glibc_req)
    vc_runtime, vc_req = _vc_requirement(libraries)
    if vc_req:
        requirements.append(vc_req)
    python_req = _python_requirement(meta.tags)
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
    role, provider = _role(name)

    def need(dep: str, kind: NeedKind) -> Need:
        component = classify_library(dep)
        return Need(dep, component, kind, _stack_major(dep, component), dep.lower() in bundled)

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


def _major_from(libraries: Iterable[PackageLibrary], *components: Component) -> tuple[int | None, str | None]:
    """The major the libraries' needs pin for these components, and the need that says so."""
    for lib in libraries:
        for need in lib.needs:
            if need.component in components and need.kind in (NeedKind.LOAD_TIME, NeedKind.DELAY_LOAD):
                how = "DT_NEEDED" if lib.format == "elf" else "import"
                if need.kind is NeedKind.DELAY_LOAD:
                    how = "delay-load import"
                return need.major, f"{need.name} ({how} of {lib.name})"
    return None, None


def _matrix_row(version: str | None, cuda_major: int | None) -> OrtBuildRequirements | None:
    if not version:
        return None

    return matrix.requirements_for(version, cuda_major)


def _row_label(row: OrtBuildRequirements) -> str:
    label = f"ORT {row.ort_version} (CUDA {row.cuda_major} build"
    if row.extrapolated:
        label += ", extrapolated: the package is newer than the matrix"
    elif not row.confirmed:
        label += ", unconfirmed row"
    return label + ")"


def _with_lazy_needs(
    lib: PackageLibrary, row: OrtBuildRequirements, platform: PackagePlatform, bundled: set[str]
) -> PackageLibrary:
    """Add what is opened at run time (not in the import table) to the CUDA provider's needs, from the matrix."""
    if lib.role is not LibraryRole.CUDA:
        return lib
    if platform.is_windows:
        lists = ((row.lazy_libraries_windows, NeedKind.LAZY), (row.indirect_libraries_windows, NeedKind.INDIRECT))
    else:
        lists = ((row.lazy_libraries, NeedKind.LAZY), (row.indirect_libraries_linux, NeedKind.INDIRECT))
    have = {n.name.lower() for n in lib.needs}
    added = []
    for names, kind in lists:
        for name in names:
            if name.lower() in have:
                continue
            have.add(name.lower())
            component = classify_library(name)
            added.append(Need(name, component, kind, _stack_major(name, component), name.lower() in bundled))
    return dataclasses.replace(lib, needs=lib.needs + tuple(added)) if added else lib


def _cuda_requirement(
    cuda_major: int | None, evidence: str | None, build_info: dict[str, str], notes: list[str]
) -> Requirement:
    declared = build_info.get("cuda_version")
    if declared and cuda_major is not None and not declared.startswith(f"{cuda_major}."):
        notes.append(f"build_and_package_info.py says cuda_version {declared}, the libraries need CUDA {cuda_major}")
    if cuda_major is None:
        return Requirement(RequirementKind.CUDA, "unknown", "no CUDA library named by the provider libraries")
    text = evidence or ""
    if declared:
        text += f"; build_and_package_info.py: cuda_version {declared}"
    return Requirement(RequirementKind.CUDA, str(cuda_major), text)


def _cudnn_requirement(
    libraries: list[PackageLibrary], row: OrtBuildRequirements | None, version: str | None, flavour: PackageFlavour
) -> tuple[int | None, Requirement | None]:
    cuda = [lib for lib in libraries if lib.role is LibraryRole.CUDA]
    trt = [lib for lib in libraries if lib.role is LibraryRole.TENSORRT]
    major, evidence = _major_from(cuda, Component.CUDNN)
    if evidence:
        return major, Requirement(RequirementKind.CUDNN, str(major) if major is not None else "unknown", evidence)
    if flavour is not PackageFlavour.GPU:
        return None, None
    trt_major, trt_evidence = _major_from(trt, Component.CUDNN)
    parts = []
    if trt_evidence:
        parts.append(trt_evidence)
    lazy = "the CUDA provider does not import cuDNN: ORT opens it at run time"
    if row is not None and row.cudnn_major is not None:
        parts.append(f"{lazy}; version matrix, {_row_label(row)}: cuDNN {row.cudnn_major}")
        if trt_major is not None and trt_major != row.cudnn_major:
            parts.append(f"the TensorRT provider asks for cuDNN {trt_major}")
        return row.cudnn_major, Requirement(
            RequirementKind.CUDNN, str(row.cudnn_major), "; ".join(parts), from_matrix=trt_major is None
        )
    if trt_major is not None:
        parts.append(lazy)
        return trt_major, Requirement(RequirementKind.CUDNN, str(trt_major), "; ".join(parts))
    why = f"no version-matrix row for ORT {version}" if version else "the package version is unknown"
    return None, Requirement(RequirementKind.CUDNN, "unknown", f"{lazy}; {why}", from_matrix=True)


_MANYLINUX = re.compile(r"^manylinux_(\d+)_(\d+)_")
_LEGACY_MANYLINUX = {"manylinux1": "2.5", "manylinux2010": "2.12", "manylinux2014": "2.17"}


def _glibc_requirement(
    libraries: list[PackageLibrary], tags: tuple[str, ...], platform: PackagePlatform
) -> tuple[str | None, Requirement | None]:
    if platform.is_windows:
        return None, None
    floors = [(lib.glibc_floor, lib.name) for lib in libraries if lib.glibc_floor]
    binary_floor, binary_lib = max(floors, key=lambda f: version_tuple(f[0])) if floors else (None, None)
    tag_floor, tag_text = None, None
    for tag in tags:
        plat = tag.rsplit("-", 1)[-1]
        match = _MANYLINUX.match(plat)
        floor = f"{match.group(1)}.{match.group(2)}" if match else _LEGACY_MANYLINUX.get(plat.split("_")[0])
        if floor and (tag_floor is None or version_tuple(floor) < version_tuple(tag_floor)):
            tag_floor, tag_text = floor, plat  # a wheel with several tags installs where the lowest one does
    candidates = [f for f in (binary_floor, tag_floor) if f]
    if not candidates:
        return None, None
    floor = max(candidates, key=version_tuple)
    parts = []
    if binary_floor:
        parts.append(f"GLIBC_{binary_floor} asked by {binary_lib} (highest over the package's libraries)")
    if tag_floor:
        parts.append(f"wheel tag {tag_text}")
    return floor, Requirement(RequirementKind.GLIBC, f">= {floor}", "; ".join(parts))


def _vc_requirement(libraries: list[PackageLibrary]) -> tuple[str | None, Requirement | None]:
    dlls = sorted(
        {n.name for lib in libraries for n in lib.needs if n.component is Component.VC_RUNTIME}, key=str.lower
    )
    if not dlls:
        return None, None
    linkers = [lib.linker_version for lib in libraries if lib.format == "pe" and lib.linker_version]
    if linkers:
        minimum = max(linkers, key=version_tuple)
        evidence = (
            f"{', '.join(dlls)} imported; linked with MSVC {minimum}: the VC++ 2015-2022 redistributable must be "
            "at least the toolset that built it"
        )
        return minimum, Requirement(RequirementKind.VC_RUNTIME, f">= {minimum}", evidence)
    return "any", Requirement(RequirementKind.VC_RUNTIME, "2015-2022", f"{', '.join(dlls)} imported")


def _python_requirement(tags: tuple[str, ...]) -> Requirement | None:
    pythons = sorted({t.split("-")[0] for t in tags if t.count("-") == 2})
    if not pythons:
        return None
    return Requirement(RequirementKind.PYTHON, ", ".join(pythons), f"wheel tags {', '.join(tags)}")
