"""The ORT <-> CUDA <-> cuDNN <-> TensorRT <-> driver matrix, read from data/ort_matrix.json, with its sources."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from importlib import resources
from typing import Any

__all__ = [
    "ArchSupport",
    "DriverRequirement",
    "Flavour",
    "LibraryFamily",
    "LibraryInfo",
    "MatrixDataError",
    "OrtBuildRequirements",
    "Platform",
    "SmArchs",
    "all_builds",
    "arch_support",
    "builds_for_cuda",
    "cuda_major_from_libraries",
    "cudnn_major_from_libraries",
    "driver_requirements",
    "known_sm_archs",
    "library_info",
    "max_cuda_for_driver",
    "min_driver_for_cuda",
    "minor_compat_floor",
    "newest_known_version",
    "requirements_for",
    "tensorrt_major_from_libraries",
]


class MatrixDataError(ValueError):
    """The packaged matrix file is malformed (a bug in ortgpu, not a user error)."""


class Flavour(Enum):
    """Which build of a release: what `pip install onnxruntime-gpu==X` gives, or the second (feed/archive) build."""

    DEFAULT = "default"
    ALT = "alt"


class LibraryFamily(Enum):
    """What a shared library belongs to."""

    CUDA = "cuda"  # CUDA toolkit runtime libraries (cudart, cuBLAS, cuFFT, cuRAND, NVRTC)
    CUDNN = "cudnn"
    TENSORRT = "tensorrt"
    DRIVER = "driver"  # installed by the NVIDIA driver (libcuda, NVML)
    MSVC = "msvc"  # Visual C++ runtime
    ZLIB = "zlib"  # zlibwapi.dll, needed by cuDNN 8 on Windows
    ORT = "ort"  # onnxruntime's own libraries


class Platform(Enum):
    """The operating-system family a library, message or build belongs to."""

    LINUX = "linux"
    WINDOWS = "windows"


class ArchSupport(Enum):
    """Whether a build has GPU code for a compute capability."""

    NATIVE = "native"  # SASS for this architecture: runs as compiled
    PTX_JIT = "ptx_jit"  # only PTX: the driver JIT-compiles it (slow first run, needs a new enough driver)
    NONE = "none"  # "no kernel image is available for execution on the device"


@dataclass(frozen=True)
class OrtBuildRequirements:
    """What one ORT release flavour needs from the machine (one row of the matrix)."""

    ort_version: str  # the row: "1.19" (every patch) or "1.18.0" (that patch only)
    cuda_major: int
    cuda_build: str | None  # toolkit the build was compiled with, e.g. "12.2"
    cudnn_major: int | None
    tensorrt_major: int | None
    min_driver_linux: str | None  # CUDA minor-version-compatibility floor of cuda_major
    min_driver_windows: str | None
    glibc_floor: str | None  # from the Linux wheel tag
    lazy_libraries: tuple[str, ...]  # Linux sonames loaded at run time, not in the CUDA provider's DT_NEEDED
    confirmed: bool
    sources: tuple[str, ...]
    notes: str
    flavour: Flavour = Flavour.DEFAULT
    channel: str = ""  # where this flavour is published
    cudnn_build: str | None = None
    tensorrt_version: str | None = None
    build_driver_linux: str | None = None  # driver of the exact build toolkit: no PTX-JIT caveats above it
    build_driver_windows: str | None = None
    python_requires: str | None = None
    needed_libraries_linux: tuple[str, ...] = ()  # CUDA-side DT_NEEDED of libonnxruntime_providers_cuda.so
    needed_libraries_windows: tuple[str, ...] = ()  # CUDA-side imports of onnxruntime_providers_cuda.dll
    lazy_libraries_windows: tuple[str, ...] = ()
    indirect_libraries_linux: tuple[str, ...] = ()  # loaded by a dependency itself (cuDNN sub-libraries)
    indirect_libraries_windows: tuple[str, ...] = ()
    tensorrt_libraries_linux: tuple[str, ...] = ()
    tensorrt_libraries_windows: tuple[str, ...] = ()
    extrapolated: bool = False  # True when the version is newer than every row and this row was assumed

    def describe_row(self, platform_parts: Sequence[str]) -> str:
        """The row as the doctor's matrix check states it: ORT, CUDA, cuDNN, TensorRT, then `platform_parts`."""
        parts = [f"ORT {self.ort_version}: CUDA {self.cuda_build or self.cuda_major}"]
        if self.cudnn_major:
            parts.append(f"cuDNN {self.cudnn_major}")
        if self.tensorrt_major:
            parts.append(f"TensorRT {self.tensorrt_major}")
        state = "confirmed" if self.confirmed else "unconfirmed row"
        return ", ".join([*parts, *platform_parts]) + f" ({state})"

    @property
    def all_libraries_linux(self) -> tuple[str, ...]:
        """Every Linux library the CUDA provider needs to work: linked, lazy and indirect."""
        return _unique(self.needed_libraries_linux + self.lazy_libraries + self.indirect_libraries_linux)

    @property
    def all_libraries_windows(self) -> tuple[str, ...]:
        return _unique(self.needed_libraries_windows + self.lazy_libraries_windows + self.indirect_libraries_windows)


@dataclass(frozen=True)
class SmArchs:
    """GPU architectures compiled into a build's CUDA provider: SASS ("sm_90a") and PTX ("compute_90")."""

    sass: tuple[str, ...]
    ptx: tuple[str, ...]
    confirmed: bool
    source: str


@dataclass(frozen=True)
class DriverRequirement:
    """NVIDIA's minimum driver for one CUDA toolkit release (CUDA release notes, table 3)."""

    cuda: str  # "12.8" or "12.8.1" for an update
    linux: str | None
    windows: str | None
    confirmed: bool


@dataclass(frozen=True)
class LibraryInfo:
    """What a library file name says about itself."""

    name: str
    family: LibraryFamily
    component: str  # "cuBLASLt", "cuDNN", "CUDA runtime", ...
    major: int | None  # major of the family: CUDA major for CUDA libraries, cuDNN major, TensorRT major
    platform: Platform

    def describe(self) -> str:
        """E.g. "cuBLASLt from CUDA 12", "cuDNN 9", "TensorRT 10", "the NVIDIA driver"."""
        if self.family is LibraryFamily.CUDA:
            return f"{self.component} from CUDA {self.major}" if self.major else f"{self.component} (any CUDA major)"
        if self.family in (LibraryFamily.CUDNN, LibraryFamily.TENSORRT):
            base = "cuDNN" if self.family is LibraryFamily.CUDNN else "TensorRT"
            part = "" if self.component == base else f" ({self.component})"
            return f"{base} {self.major}{part}" if self.major else f"{base}{part}"
        return self.component


# ---------------------------------------------------------------- library names

_LIBRARY_RULES: tuple[tuple[re.Pattern[str], LibraryFamily, str, Platform, Any], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), family, component, Platform(platform), major)
    for pattern, family, component, platform, major in (
        # Linux sonames. The major mapping of cuFFT/NVRTC follows the toolkits: cuFFT 10 = CUDA 11, 11 = 12, 12 = 13.
        (r"^libcudart\.so\.(\d+)", LibraryFamily.CUDA, "CUDA runtime", "linux", "cuda"),
        (r"^libcublasLt\.so\.(\d+)", LibraryFamily.CUDA, "cuBLASLt", "linux", "cuda"),
        (r"^libcublas\.so\.(\d+)", LibraryFamily.CUDA, "cuBLAS", "linux", "cuda"),
        (r"^libcufft\.so\.(\d+)", LibraryFamily.CUDA, "cuFFT", "linux", "cufft"),
        (r"^libcurand\.so\.(\d+)", LibraryFamily.CUDA, "cuRAND", "linux", None),  # .so.10 in CUDA 11, 12 and 13
        (r"^libnvrtc(?:-builtins)?\.so\.(\d+)", LibraryFamily.CUDA, "NVRTC", "linux", "cuda"),
        (r"^libnvrtc(?:-builtins)?\.so$", LibraryFamily.CUDA, "NVRTC", "linux", None),  # the unversioned dev name
        (r"^libcupti\.so(?:\.(\d+))?", LibraryFamily.CUDA, "CUPTI (CUDA profiling tools)", "linux", "cuda"),
        (r"^libcudnn\.so\.(\d+)", LibraryFamily.CUDNN, "cuDNN", "linux", "same"),
        (r"^libcudnn_(\w+?)\.so\.(\d+)", LibraryFamily.CUDNN, "cuDNN sub-library", "linux", "last"),
        (r"^libnvinfer\.so\.(\d+)", LibraryFamily.TENSORRT, "TensorRT", "linux", "same"),
        (r"^libnvinfer_plugin\.so\.(\d+)", LibraryFamily.TENSORRT, "TensorRT plugins", "linux", "same"),
        (r"^libnvonnxparser\.so\.(\d+)", LibraryFamily.TENSORRT, "TensorRT ONNX parser", "linux", "same"),
        (r"^libcuda\.so(?:\.\d+)?$", LibraryFamily.DRIVER, "the NVIDIA driver (libcuda)", "linux", None),
        (r"^libnvidia-ml\.so(?:\.\d+)?$", LibraryFamily.DRIVER, "the NVIDIA driver (NVML)", "linux", None),
        (r"^libonnxruntime", LibraryFamily.ORT, "ONNX Runtime", "linux", None),
        # Windows DLLs. cudart64_110.dll is CUDA 11 (the number is major*10 + minor for CUDA <= 11).
        (r"^cudart64_(\d+)\.dll$", LibraryFamily.CUDA, "CUDA runtime", "windows", "dll"),
        (r"^(?:cublas)?Lt64_(\d+)\.dll$", LibraryFamily.CUDA, "cuBLASLt", "windows", "dll"),
        (r"^cublas64_(\d+)\.dll$", LibraryFamily.CUDA, "cuBLAS", "windows", "dll"),
        (r"^cufft64_(\d+)\.dll$", LibraryFamily.CUDA, "cuFFT", "windows", "cufft"),
        (r"^cupti64_[\d.]+\.dll$", LibraryFamily.CUDA, "CUPTI (CUDA profiling tools)", "windows", None),
        (r"^curand64_(\d+)\.dll$", LibraryFamily.CUDA, "cuRAND", "windows", None),
        (r"^nvrtc64_(\d+)(?:_\d+)?\.dll$", LibraryFamily.CUDA, "NVRTC", "windows", "nvrtc"),
        (r"^cudnn64_(\d+)\.dll$", LibraryFamily.CUDNN, "cuDNN", "windows", "same"),
        (r"^cudnn_(\w+?)64_(\d+)\.dll$", LibraryFamily.CUDNN, "cuDNN sub-library", "windows", "last"),
        (r"^nvinfer_(\d+)\.dll$", LibraryFamily.TENSORRT, "TensorRT", "windows", "same"),
        (r"^nvinfer_plugin_(\d+)\.dll$", LibraryFamily.TENSORRT, "TensorRT plugins", "windows", "same"),
        (r"^nvonnxparser_(\d+)\.dll$", LibraryFamily.TENSORRT, "TensorRT ONNX parser", "windows", "same"),
        # TensorRT 8 on Windows had unversioned DLL names (TRT 10 added the _10 suffix); read from the 1.16.3 wheel.
        (r"^nvinfer\.dll$", LibraryFamily.TENSORRT, "TensorRT", "windows", 8),
        (r"^nvinfer_plugin\.dll$", LibraryFamily.TENSORRT, "TensorRT plugins", "windows", 8),
        (r"^nvonnxparser\.dll$", LibraryFamily.TENSORRT, "TensorRT ONNX parser", "windows", 8),
        (r"^nvcuda\.dll$", LibraryFamily.DRIVER, "the NVIDIA driver (nvcuda.dll)", "windows", None),
        (r"^nvml\.dll$", LibraryFamily.DRIVER, "the NVIDIA driver (NVML)", "windows", None),
        (r"^(?:msvcp140\w*|vcruntime140\w*)\.dll$", LibraryFamily.MSVC, "the Visual C++ runtime", "windows", None),
        (r"^zlibwapi\.dll$", LibraryFamily.ZLIB, "zlib (zlibwapi.dll, needed by cuDNN 8)", "windows", None),
        (r"^onnxruntime", LibraryFamily.ORT, "ONNX Runtime", "windows", None),
    )
)


def library_info(name: str) -> LibraryInfo | None:
    """Classify a library file name (a soname, a DLL name or a path); None when it is not one we know."""
    base = re.split(r"[\\/]", name.strip().strip("\"'"))[-1]
    for pattern, family, component, platform, rule in _LIBRARY_RULES:
        m = pattern.match(base)
        if not m:
            continue
        numbers = [int(g) for g in m.groups() if g is not None and g.isdigit()]
        major = _major_from_rule(rule, numbers)
        if component == "cuDNN sub-library":
            component = f"cuDNN sub-library {m.group(1)}"
        return LibraryInfo(name=base, family=family, component=component, major=major, platform=platform)
    return None


def _major_from_rule(rule: Any, numbers: list[int]) -> int | None:
    if rule is None:
        return None
    if isinstance(rule, int):
        return rule
    if not numbers:
        return None
    n = numbers[-1]
    if rule in ("same", "last", "cuda"):
        return n
    if rule == "cufft":  # cuFFT 10 ships with CUDA 11, 11 with CUDA 12, 12 with CUDA 13
        return n + 1
    if rule == "dll":  # cudart64_110 -> 11, cublas64_12 -> 12, cublas64_91 -> 9 (CUDA <= 9 put major.minor in the name)
        return n // 10 if n >= 20 else n
    if rule == "nvrtc":  # nvrtc64_112_0 -> 11, nvrtc64_120_0 -> 12, nvrtc64_130_0 -> 13
        return n // 10 if n >= 100 else n
    raise AssertionError(f"unknown major rule {rule!r}")


# Which library decides the CUDA major when a list mixes them: the runtime first, then cuBLAS(Lt).
_CUDA_MAJOR_PREFERENCE = ("CUDA runtime", "cuBLASLt", "cuBLAS", "cuFFT", "NVRTC")


def cuda_major_from_libraries(names: Iterable[str]) -> int | None:
    """The CUDA major a list of needed libraries implies ("libcublasLt.so.12" -> 12, "cublas64_11.dll" -> 11)."""
    found: dict[str, int] = {}
    for name in names:
        info = library_info(name)
        if info and info.family is LibraryFamily.CUDA and info.major is not None:
            found.setdefault(info.component, info.major)
    for component in _CUDA_MAJOR_PREFERENCE:
        if component in found:
            return found[component]
    return None


def cudnn_major_from_libraries(names: Iterable[str]) -> int | None:
    """The cuDNN major ("libcudnn.so.9", "cudnn64_8.dll", "cudnn_ops64_9.dll" -> 9)."""
    return _family_major(names, LibraryFamily.CUDNN)


def tensorrt_major_from_libraries(names: Iterable[str]) -> int | None:
    """The TensorRT major ("libnvinfer.so.10", "nvinfer_10.dll" -> 10; TensorRT 8's "nvinfer.dll" -> 8)."""
    return _family_major(names, LibraryFamily.TENSORRT)


def _family_major(names: Iterable[str], family: LibraryFamily) -> int | None:
    majors = [info.major for info in map(library_info, names) if info and info.family is family and info.major]
    return max(majors) if majors else None


# ---------------------------------------------------------------- the data


@functools.cache
def _data() -> dict[str, Any]:
    text = resources.files("ortgpu").joinpath("data/ort_matrix.json").read_text(encoding="utf-8")
    doc = json.loads(text)
    if not isinstance(doc, dict) or doc.get("schema") != 1 or not isinstance(doc.get("builds"), list):
        raise MatrixDataError("data/ort_matrix.json: expected schema 1 with a 'builds' list")
    return doc


@functools.cache
def _builds() -> tuple[OrtBuildRequirements, ...]:
    return tuple(_build_from_row(row) for row in _data()["builds"])


def _build_from_row(row: dict[str, Any]) -> OrtBuildRequirements:
    try:
        return OrtBuildRequirements(
            ort_version=str(row["ort"]),
            cuda_major=int(row["cuda_major"]),
            cuda_build=row.get("cuda_build"),
            cudnn_major=row.get("cudnn_major"),
            tensorrt_major=row.get("tensorrt_major"),
            min_driver_linux=row.get("min_driver_linux"),
            min_driver_windows=row.get("min_driver_windows"),
            glibc_floor=row.get("glibc_floor"),
            lazy_libraries=tuple(row.get("lazy_libraries_linux", ())),
            confirmed=bool(row["confirmed"]),
            sources=tuple(row["sources"]),
            notes=str(row.get("notes", "")),
            flavour=Flavour(row["flavour"]),
            channel=str(row.get("channel", "")),
            cudnn_build=row.get("cudnn_build"),
            tensorrt_version=row.get("tensorrt_version"),
            build_driver_linux=row.get("build_driver_linux"),
            build_driver_windows=row.get("build_driver_windows"),
            python_requires=row.get("python_requires"),
            needed_libraries_linux=tuple(row.get("needed_libraries_linux", ())),
            needed_libraries_windows=tuple(row.get("needed_libraries_windows", ())),
            lazy_libraries_windows=tuple(row.get("lazy_libraries_windows", ())),
            indirect_libraries_linux=tuple(row.get("indirect_libraries_linux", ())),
            indirect_libraries_windows=tuple(row.get("indirect_libraries_windows", ())),
            tensorrt_libraries_linux=tuple(row.get("tensorrt_libraries_linux", ())),
            tensorrt_libraries_windows=tuple(row.get("tensorrt_libraries_windows", ())),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise MatrixDataError(f"data/ort_matrix.json: bad build row {row.get('ort')!r}: {exc}") from exc


def all_builds() -> tuple[OrtBuildRequirements, ...]:
    """Every row of the matrix, oldest first."""
    return _builds()


_VERSION_RE = re.compile(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?")


def _parse_version(text: str) -> tuple[int, int, int | None] | None:
    m = _VERSION_RE.match(text)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3)) if m.group(3) is not None else None


def _row_key(build: OrtBuildRequirements) -> tuple[int, int, int | None]:
    parsed = _parse_version(build.ort_version)
    if parsed is None:
        raise MatrixDataError(f"data/ort_matrix.json: bad ORT version {build.ort_version!r}")
    return parsed


def newest_known_version() -> str:
    """The newest ORT minor the matrix has a row for, e.g. "1.32"."""
    major, minor = max(_row_key(b)[:2] for b in _builds())
    return f"{major}.{minor}"


def requirements_for(ort_version: str, cuda_major: int | None = None) -> OrtBuildRequirements | None:
    """The row for an ORT version ("1.19.2", "1.24.0.dev2026..."): the default flavour, or the one for cuda_major.

    A patch-specific row ("1.18.0") wins over the minor's row ("1.18"). A version newer than every row gets the
    newest row's data, marked extrapolated and unconfirmed; an unknown older version or flavour gives None.
    """
    parsed = _parse_version(ort_version)
    if parsed is None:
        return None
    major, minor, patch = parsed
    rows = [b for b in _builds() if _row_key(b)[:2] == (major, minor)]
    exact = [b for b in rows if _row_key(b)[2] is not None and _row_key(b)[2] == patch]
    candidates = exact or [b for b in rows if _row_key(b)[2] is None]
    extrapolated = False
    if not candidates:
        newest = max(_row_key(b)[:2] for b in _builds())
        if (major, minor) <= newest:
            return None
        candidates = [b for b in _builds() if _row_key(b)[:2] == newest and _row_key(b)[2] is None]
        extrapolated = True
    if cuda_major is None:
        chosen = next((b for b in candidates if b.flavour is Flavour.DEFAULT), None)
    else:
        chosen = next((b for b in candidates if b.cuda_major == cuda_major), None)
    if chosen is None or not extrapolated:
        return chosen
    return _extrapolate(chosen, ort_version)


def _extrapolate(row: OrtBuildRequirements, ort_version: str) -> OrtBuildRequirements:
    note = (
        f"ORT {ort_version} is newer than this matrix (last row {row.ort_version}); assumed to need what "
        f"{row.ort_version} needs. {row.notes}"
    ).strip()
    return dataclasses.replace(row, confirmed=False, extrapolated=True, notes=note)


def builds_for_cuda(cuda_major: int) -> tuple[OrtBuildRequirements, ...]:
    """Every release flavour built for a CUDA major, oldest first."""
    return tuple(b for b in _builds() if b.cuda_major == cuda_major)


# ---------------------------------------------------------------- GPU architectures

_ARCH_RE = re.compile(r"^(?:sm|compute)_(\d+)(\d)([af]?)$")


def known_sm_archs(
    ort_version: str, cuda_major: int | None = None, platform: Platform = Platform.LINUX
) -> SmArchs | None:
    """The GPU architectures in the CUDA provider of a release flavour (read from the published wheels' fatbins)."""
    build = requirements_for(ort_version, cuda_major)
    if build is None:
        return None
    for row in _data()["builds"]:
        if row["ort"] == build.ort_version and row["flavour"] == build.flavour.value:
            archs = (row.get("sm_archs") or {}).get(platform.value)
            if not archs:
                return None
            return SmArchs(
                sass=tuple(archs["sass"]),
                ptx=tuple(archs["ptx"]),
                confirmed=bool(archs["confirmed"]) and not build.extrapolated,
                source=str(archs["source"]),
            )
    return None


def arch_support(archs: SmArchs, compute_capability: tuple[int, int]) -> ArchSupport:
    """Whether code in `archs` runs on a GPU of this compute capability (CUDA's binary compatibility rules).

    SASS sm_XY runs on the same major with minor >= Y; "a"-suffixed SASS (sm_90a) only on exactly X.Y; "f"
    (family) SASS on the same major with minor >= Y. PTX compute_XY is JIT-compiled for any GPU >= X.Y.
    """
    cc_major, cc_minor = compute_capability
    for arch in archs.sass:
        m = _ARCH_RE.match(arch)
        if not m:
            continue
        major, minor, suffix = int(m.group(1)), int(m.group(2)), m.group(3)
        if suffix == "a":
            if (major, minor) == (cc_major, cc_minor):
                return ArchSupport.NATIVE
        elif major == cc_major and cc_minor >= minor:
            return ArchSupport.NATIVE
    for arch in archs.ptx:
        m = _ARCH_RE.match(arch)
        if m and (int(m.group(1)), int(m.group(2))) <= (cc_major, cc_minor):
            return ArchSupport.PTX_JIT
    return ArchSupport.NONE


# ---------------------------------------------------------------- drivers


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = re.findall(r"\d+", text)
    if not parts:
        raise ValueError(f"not a version: {text!r}")
    return tuple(int(p) for p in parts)


@functools.cache
def driver_requirements() -> tuple[DriverRequirement, ...]:
    """NVIDIA's CUDA toolkit -> minimum driver table, oldest toolkit first."""
    return tuple(
        DriverRequirement(
            cuda=str(r["cuda"]), linux=r.get("linux"), windows=r.get("windows"), confirmed=bool(r["confirmed"])
        )
        for r in _data()["driver_table"]
    )


def max_cuda_for_driver(driver_version: str, platform: Platform = Platform.LINUX) -> str | None:
    """The newest CUDA toolkit ("major.minor") this driver supports, e.g. "580.95" -> "13.0".

    None when the driver is older than every toolkit in the table or the text is not a version. For a driver newer
    than the whole table the newest known toolkit is returned (the driver supports at least that). NVIDIA publishes
    no Windows minimum for CUDA 13; there the Linux value of the same driver branch is used as an approximation.
    """
    try:
        have = _version_tuple(driver_version)
    except ValueError:
        return None
    best: tuple[int, ...] | None = None
    for req in driver_requirements():
        needed = (req.windows or req.linux) if platform is Platform.WINDOWS else req.linux
        if needed is None:
            continue
        if _version_tuple(needed) <= have:
            cuda = _version_tuple(req.cuda)[:2]
            best = cuda if best is None or cuda > best else best
    if best is None:
        return None
    return f"{best[0]}.{best[1]}"


def min_driver_for_cuda(cuda_version: str, platform: Platform = Platform.LINUX) -> str | None:
    """The minimum driver of a toolkit release ("12.8" -> "570.26"): its GA row, or the exact update given."""
    want = _version_tuple(cuda_version)
    rows = [r for r in driver_requirements() if _version_tuple(r.cuda)[: len(want)] == want]
    for req in rows:
        value = req.windows if platform is Platform.WINDOWS else req.linux
        if value is not None:
            return value
    return None


def minor_compat_floor(cuda_major: int, platform: Platform = Platform.LINUX) -> str | None:
    """The lowest driver that runs any CUDA `cuda_major`.x build (minor-version compatibility), e.g. 12 -> 525.60.13."""
    for row in _data()["minor_version_floors"]:
        if int(row["cuda_major"]) == cuda_major:
            return row.get(platform.value)
    return None


def _unique(items: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))
