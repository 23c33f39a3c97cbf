"""The facts the Windows diagnosis reads through a WindowsHost: PATH, Python, CUDA/cuDNN/pip folders, VC++, driver.

PATH entries and stale ones, the Python flavour (python.org, Store, conda), CUDA toolkits, cuDNN and pip DLL
folders, the VC++ runtime's registry entry, the driver's nvcuda.dll version and driver model.
"""

from __future__ import annotations

import contextlib
import json
import ntpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ortgpu.host.windows import (
    GRAPHICS_DRIVERS_KEY,
    MACHINE_ENV_KEY,
    USER_ENV_KEY,
    VC_RUNTIMES_KEY,
    RegistryView,
    WindowsHost,
    expand_variables,
    same_dir,
)
from ortgpu.versions import version_tuple

__all__ = [
    "CudaFacts",
    "CudaToolkit",
    "DllFolder",
    "FolderKind",
    "HostFacts",
    "PathEntry",
    "PythonFlavour",
    "VcRegistry",
    "WindowsDriver",
    "cuda_facts",
    "driver_from_nvcuda_version",
    "host_facts",
    "vc_registry",
    "windows_driver",
]


# --- facts read through a host --------------------------------------------------------------------------------------


class PythonFlavour(Enum):
    STANDARD = "python.org or venv"
    STORE = "Microsoft Store"  # a packaged app: its DLL search never includes PATH or the current folder
    CONDA = "conda"  # ships its own VC++ runtime next to python.exe
    EMBEDDABLE = "embeddable"


@dataclass(frozen=True)
class PathEntry:
    index: int  # position in PATH, from 0
    raw: str  # as written in the process environment
    directory: str  # quotes stripped, %VAR% expanded: what the search uses
    exists: bool
    quoted: bool
    had_variables: bool  # %VAR% left unexpanded in the process PATH
    duplicate_of: int | None  # index of an earlier entry naming the same folder


@dataclass(frozen=True)
class HostFacts:
    windows_version: str
    process_machine: str  # what this Python (and so every DLL it loads) is built for
    native_machine: str  # the CPU: "arm64" with an "x64" process means x64 emulation on Windows on ARM
    python_executable: str
    python_version: str
    python_flavour: PythonFlavour
    app_dir: str  # python.exe's folder: first folder of the standard search
    cwd: str
    system_dir: str
    windows_dir: str
    dll_directory: str | None  # SetDllDirectory: inserted after the application folder
    safe_dll_search_mode: bool
    path: tuple[PathEntry, ...]
    known_dlls: tuple[str, ...]
    stale_path: tuple[str, ...]  # folders the registry PATH has and this process's PATH lacks (started earlier)

    @property
    def system16_dir(self) -> str:
        return ntpath.join(self.windows_dir, "System")


def _python_flavour(host: WindowsHost, executable: str) -> PythonFlavour:
    lowered = executable.lower()
    if "\\windowsapps\\" in lowered or "\\packages\\pythonsoftwarefoundation." in lowered:
        return PythonFlavour.STORE
    if host.is_dir(ntpath.join(host.base_prefix(), "conda-meta")):
        return PythonFlavour.CONDA
    folder = ntpath.dirname(executable)
    if any(re.match(r"^python3\d*\._pth$", name, re.IGNORECASE) for name in host.listdir(folder)):
        return PythonFlavour.EMBEDDABLE
    return PythonFlavour.STANDARD


def _path_entries(host: WindowsHost, raw_path: str) -> tuple[PathEntry, ...]:
    environ = host.environ()
    out: list[PathEntry] = []
    for index, raw in enumerate(raw_path.split(";")):
        if not raw.strip():
            continue
        expanded = expand_variables(raw, environ)
        directory = expanded.strip().strip('"')
        duplicate = next((e.index for e in out if same_dir(e.directory, directory)), None)
        out.append(
            PathEntry(
                index=index,
                raw=raw,
                directory=directory,
                exists=host.is_dir(directory),
                quoted='"' in raw,
                had_variables=expanded != raw,
                duplicate_of=duplicate,
            )
        )
    return tuple(out)


def _env_value(environ: Mapping[str, str], name: str) -> str | None:
    lowered = name.lower()
    return next((v for k, v in environ.items() if k.lower() == lowered), None)


def _stale_path(host: WindowsHost, entries: Sequence[PathEntry]) -> tuple[str, ...]:
    """Registry PATH folders (machine, then user) this process does not have: set after it started."""
    environ = host.environ()
    out: list[str] = []
    for key in (MACHINE_ENV_KEY, USER_ENV_KEY):
        value = host.registry_value(key, "Path")
        if not isinstance(value, str):
            continue
        for raw in value.split(";"):
            folder = expand_variables(raw, environ).strip().strip('"')
            if folder and not any(same_dir(folder, e.directory) for e in entries) and folder not in out:
                out.append(folder)
    return tuple(out)


def host_facts(host: WindowsHost) -> HostFacts:
    environ = host.environ()
    process, native = host.machines()
    executable = host.executable()
    entries = _path_entries(host, _env_value(environ, "PATH") or "")
    return HostFacts(
        windows_version=host.windows_version(),
        process_machine=process,
        native_machine=native,
        python_executable=executable,
        python_version=host.python_version(),
        python_flavour=_python_flavour(host, executable),
        app_dir=ntpath.dirname(executable),
        cwd=host.cwd(),
        system_dir=host.system_dir(),
        windows_dir=host.windows_dir(),
        dll_directory=host.dll_directory(),
        safe_dll_search_mode=host.safe_dll_search_mode(),
        path=entries,
        known_dlls=tuple(sorted(host.known_dlls())),
        stale_path=_stale_path(host, entries),
    )


class FolderKind(Enum):
    """Where a folder of CUDA-side DLLs comes from: installers put them in places the loader finds only via PATH."""

    CUDA_TOOLKIT = "CUDA toolkit"
    CUDNN = "cuDNN"
    NVIDIA_PIP = "nvidia-* pip package"
    TORCH = "torch\\lib"  # reached only when torch is imported first (its DLLs are then already loaded)
    CONDA = "conda Library\\bin"
    TENSORRT = "TensorRT"


@dataclass(frozen=True)
class DllFolder:
    path: str
    kind: FolderKind
    label: str  # "CUDA 12.4 (CUDA_PATH_V12_4)", "cuDNN 9.7 for CUDA 12.8"
    on_path: bool
    cuda: str | None  # the CUDA version the folder is for ("12.4"), when known


@dataclass(frozen=True)
class CudaToolkit:
    variable: str  # "CUDA_PATH" or "CUDA_PATH_V12_4"
    root: str
    exists: bool
    version: str | None  # from version.json, else from the folder name
    bin_dirs: tuple[str, ...]  # folders holding cudart64_*.dll (CUDA 13: bin\x64)
    bin_on_path: bool

    @property
    def major(self) -> int | None:
        parts = version_tuple(self.version)
        return parts[0] if parts else None


@dataclass(frozen=True)
class CudaFacts:
    cuda_path: str | None  # CUDA_PATH as set
    toolkits: tuple[CudaToolkit, ...]  # CUDA_PATH first, then every CUDA_PATH_Vx_y
    folders: tuple[DllFolder, ...]  # every folder of CUDA-side DLLs found, on PATH or not
    ort_cuda_unavailable: str | None  # ORT_CUDA_UNAVAILABLE: when set, ORT never creates the CUDA EP


def _on_path(folder: str, entries: Sequence[PathEntry]) -> bool:
    return any(same_dir(folder, e.directory) for e in entries)


def _toolkit_version(host: WindowsHost, root: str, variable: str, exists: bool) -> str | None:
    """version.json of the toolkit when it is there, else the vX.Y folder name, else CUDA_PATH_VX_Y."""
    text = host.read_text(ntpath.join(root, "version.json")) if exists else None
    if text:
        try:
            version = json.loads(text).get("cuda", {}).get("version")
        except (ValueError, AttributeError):
            version = None
        if isinstance(version, str):
            return version
    match = re.search(r"v(\d+)\.(\d+)$", root.rstrip("\\/")) or re.search(r"_V(\d+)_(\d+)$", variable, re.I)
    return f"{match.group(1)}.{match.group(2)}" if match else None


def _has(host: WindowsHost, folder: str, pattern: str) -> bool:
    return any(re.match(pattern, name, re.IGNORECASE) for name in host.listdir(folder))


def _toolkits(host: WindowsHost, entries: Sequence[PathEntry]) -> tuple[CudaToolkit, ...]:
    environ = host.environ()
    names = sorted(
        (k for k in environ if re.fullmatch(r"CUDA_PATH(_V\d+_\d+)?", k, re.IGNORECASE)),
        key=lambda k: (k.upper() != "CUDA_PATH", k.upper()),
    )
    out: list[CudaToolkit] = []
    for name in names:
        root = environ[name].strip().strip('"')
        exists = host.is_dir(root)
        bins = tuple(
            d for d in (ntpath.join(root, "bin", "x64"), ntpath.join(root, "bin")) if _has(host, d, r"^cudart64_")
        )
        out.append(
            CudaToolkit(
                variable=name.upper(),
                root=root,
                exists=exists,
                version=_toolkit_version(host, root, name, exists),
                bin_dirs=bins,
                bin_on_path=any(_on_path(b, entries) for b in bins),
            )
        )
    return tuple(out)


def _cudnn_folders(host: WindowsHost, entries: Sequence[PathEntry]) -> list[DllFolder]:
    """cuDNN's Windows installer layout: Program Files\\NVIDIA\\CUDNN\\v9.x\\bin\\<CUDA x.y>[\\x64]; v8: ...\\bin."""
    program_files = _env_value(host.environ(), "ProgramFiles") or "C:\\Program Files"
    root = ntpath.join(program_files, "NVIDIA", "CUDNN")
    out: list[DllFolder] = []
    for version in host.listdir(root):
        bin_dir = ntpath.join(root, version, "bin")
        candidates: list[tuple[str, str | None]] = [(bin_dir, None)]
        for cuda_name in host.listdir(bin_dir):
            sub = ntpath.join(bin_dir, cuda_name)
            candidates += [(sub, cuda_name), (ntpath.join(sub, "x64"), cuda_name)]
        for folder, cuda in candidates:
            if _has(host, folder, r"^cudnn64_\d+\.dll$"):
                label = f"cuDNN {version.lstrip('vV')}" + (f" for CUDA {cuda}" if cuda else "") + " (NVIDIA installer)"
                out.append(DllFolder(folder, FolderKind.CUDNN, label, _on_path(folder, entries), cuda))
    return out


def _pip_folders(host: WindowsHost, entries: Sequence[PathEntry], machine: str) -> list[DllFolder]:
    out: list[DllFolder] = []
    arch = "arm64" if machine == "arm64" else "x86_64"
    for site in host.sys_path():
        nvidia = ntpath.join(site, "nvidia")
        for package in host.listdir(nvidia):
            for folder in (ntpath.join(nvidia, package, "bin"), ntpath.join(nvidia, package, "bin", arch)):
                if _has(host, folder, r".*\.dll$"):
                    label = f"pip package nvidia\\{package}"
                    out.append(DllFolder(folder, FolderKind.NVIDIA_PIP, label, _on_path(folder, entries), None))
        torch = ntpath.join(site, "torch", "lib")
        if _has(host, torch, r"^(cudart|cudnn|cublas)"):
            out.append(DllFolder(torch, FolderKind.TORCH, "torch\\lib", _on_path(torch, entries), None))
        trt = ntpath.join(site, "tensorrt_libs")
        if _has(host, trt, r"^nvinfer"):
            out.append(DllFolder(trt, FolderKind.TENSORRT, "pip package tensorrt_libs", _on_path(trt, entries), None))
    return out


def cuda_facts(host: WindowsHost, facts: HostFacts) -> CudaFacts:
    entries = facts.path
    toolkits = _toolkits(host, entries)
    folders: list[DllFolder] = []
    seen: set[str] = set()
    for kit in toolkits:
        for folder in kit.bin_dirs:
            if folder.lower() not in seen:
                seen.add(folder.lower())
                names = ", ".join(k.variable for k in toolkits if any(same_dir(folder, b) for b in k.bin_dirs))
                label = f"CUDA {kit.version or '?'} toolkit ({names})"
                folders.append(DllFolder(folder, FolderKind.CUDA_TOOLKIT, label, kit.bin_on_path, kit.version))
    conda = ntpath.join(host.base_prefix(), "Library", "bin")
    if _has(host, conda, r"^(cudart|cudnn|cublas)"):
        folders.append(DllFolder(conda, FolderKind.CONDA, "conda Library\\bin", _on_path(conda, entries), None))
    folders += _cudnn_folders(host, entries) + _pip_folders(host, entries, facts.process_machine)
    environ = host.environ()
    return CudaFacts(
        cuda_path=_env_value(environ, "CUDA_PATH"),
        toolkits=toolkits,
        folders=tuple(f for i, f in enumerate(folders) if all(not same_dir(f.path, g.path) for g in folders[:i])),
        ort_cuda_unavailable=_env_value(environ, "ORT_CUDA_UNAVAILABLE"),
    )


@dataclass(frozen=True)
class VcRegistry:
    """What the VC++ 2015-2022 redistributable installer recorded (the installed version, not what loads)."""

    version: str | None  # "14.40.33810.00"
    key: str | None  # where it was read


def vc_registry(host: WindowsHost, machine: str) -> VcRegistry:
    """Both registry views (64-bit and WOW6432Node): the newer one, as the installer may write either."""
    key = f"{VC_RUNTIMES_KEY}\\{machine}"
    best: tuple[tuple[int, ...], str, str] | None = None
    for view, shown in (
        (RegistryView.BITS64, key),
        (RegistryView.BITS32, key.replace("SOFTWARE", "SOFTWARE\\WOW6432Node")),
    ):
        raw = host.registry_value(key, "Version", view)
        if not isinstance(raw, str):
            parts = [host.registry_value(key, n, view) for n in ("Major", "Minor", "Bld", "Rbld")]
            raw = ".".join(str(p) for p in parts) if all(isinstance(p, int) for p in parts) else None
        if isinstance(raw, str) and raw:
            version = raw.lstrip("vV")
            if best is None or version_tuple(version) > best[0]:
                best = (version_tuple(version), version, shown)
    return VcRegistry(best[1], best[2]) if best else VcRegistry(None, None)


@dataclass(frozen=True)
class WindowsDriver:
    nvcuda: str | None  # System32\nvcuda.dll: the CUDA driver API, installed by the display driver
    nvcuda_file_version: str | None  # "32.0.15.6094"
    version_from_file: str | None  # "560.94": the driver version that file version encodes
    driver_models: tuple[tuple[int, str], ...]  # (NVML index, "WDDM" / "TCC" / "MCDM")
    tdr_delay_s: float | None  # the WDDM watchdog (default 2 s when not set)


def driver_from_nvcuda_version(file_version: str | None) -> str | None:
    """nvcuda.dll 32.0.15.6094 -> driver 560.94: the last digit of the third part, then the fourth (NVIDIA's scheme)."""
    parts = version_tuple(file_version)
    if len(parts) < 4:
        return None
    number = (parts[2] % 10) * 10000 + parts[3]
    return f"{number // 100}.{number % 100:02d}"


_DRIVER_MODELS = {0: "WDDM", 1: "TCC", 2: "MCDM"}


def _driver_models(nvml: Any) -> tuple[tuple[int, str], ...]:
    if nvml is None:
        try:
            import pynvml
        except ImportError:
            return ()
        nvml = pynvml
    error = getattr(nvml, "NVMLError", OSError)
    getter = getattr(nvml, "nvmlDeviceGetDriverModel", None)
    if getter is None:
        return ()
    try:
        nvml.nvmlInit()
    except (error, OSError):
        return ()
    out: list[tuple[int, str]] = []
    # a model that cannot be read is left out (the GPU list comes from query_driver); shutdown changes nothing
    with contextlib.suppress(error):
        for index in range(nvml.nvmlDeviceGetCount()):
            current = getter(nvml.nvmlDeviceGetHandleByIndex(index))
            value = current[0] if isinstance(current, (tuple, list)) else current
            out.append((index, _DRIVER_MODELS.get(int(value), str(value))))
    with contextlib.suppress(error):
        nvml.nvmlShutdown()
    return tuple(out)


def windows_driver(host: WindowsHost, facts: HostFacts) -> WindowsDriver:
    nvcuda = host.find(facts.system_dir, "nvcuda.dll")
    pe = host.pe(nvcuda) if nvcuda else None
    version = pe.file_version if pe else None
    tdr = host.registry_value(GRAPHICS_DRIVERS_KEY, "TdrDelay")
    return WindowsDriver(
        nvcuda=nvcuda,
        nvcuda_file_version=version,
        version_from_file=driver_from_nvcuda_version(version),
        driver_models=_driver_models(host.nvml()),
        tdr_delay_s=float(tdr) if isinstance(tdr, int) else None,
    )
