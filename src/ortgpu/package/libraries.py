"""What an ORT package is made of: platforms, flavours, library roles and components, needs and requirements.

The types the static analysis fills in (:mod:`ortgpu.package.analysis`) and how a needed library's file name is
classified (Linux soname or Windows DLL name).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from ortgpu.knowledge import matrix
from ortgpu.package.archive import PackageKind, is_ort_library


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


def stack_major(name: str, component: Component) -> int | None:
    """The major of the stack the name pins, from the matrix's naming rules (libcufft.so.11 is CUDA 12)."""

    if component in _STACKS:
        return matrix.cuda_major_from_libraries([name])
    if component is Component.CUDNN:
        return matrix.cudnn_major_from_libraries([name])
    if component is Component.TENSORRT:
        return matrix.tensorrt_major_from_libraries([name])
    return None


ROLE_ORDER = list(LibraryRole)


def library_role(name: str) -> tuple[LibraryRole, str | None]:
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
