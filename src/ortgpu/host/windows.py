"""The Windows machine as the doctor reads it: the WindowsHost interface, the real host, and the facts read through it.

Every Windows input goes through `WindowsHost` (files, registry, environment, loader folders, a real
LoadLibraryExW child), so the same diagnosis runs on a real Windows machine (`RealWindowsHost`, backed
by ortgpu.host.winapi) and on a simulated one in the tests. Paths are Windows path strings (ntpath
rules: case-insensitive, backslashes); `local()` maps one to a file this process can read, `display()`
maps back. The facts: PATH entries, the Python flavour, CUDA/cuDNN/pip DLL folders, the VC++ registry
entry, the driver's nvcuda.dll and driver model.
"""

from __future__ import annotations

import contextlib
import json
import ntpath
import os
import re
import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from ortgpu.binfmt.binary import BinaryFormatError, PeInfo, read_pe
from ortgpu.host import winapi
from ortgpu.host.load_attempt import LibraryLoad, LoadAttempt, LoadOutcome
from ortgpu.versions import version_tuple

__all__ = [
    "KNOWN_DLLS_KEY",
    "LOADED_PREFIXES",
    "VC_RUNTIMES_KEY",
    "CudaFacts",
    "CudaToolkit",
    "DllFolder",
    "FolderKind",
    "HostFacts",
    "PathEntry",
    "PythonFlavour",
    "RealWindowsHost",
    "RegistryView",
    "VcRegistry",
    "WindowsDriver",
    "WindowsHost",
    "cuda_facts",
    "driver_from_nvcuda_version",
    "expand_variables",
    "host_facts",
    "load_attempt_from_child",
    "same_dir",
    "vc_registry",
    "windows_driver",
    "windows_error_code",
]

KNOWN_DLLS_KEY = r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\KnownDLLs"
SESSION_MANAGER_KEY = r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager"
MACHINE_ENV_KEY = SESSION_MANAGER_KEY + r"\Environment"
USER_ENV_KEY = r"HKCU\Environment"
VC_RUNTIMES_KEY = r"HKLM\SOFTWARE\Microsoft\VisualStudio\14.0\VC\Runtimes"
GRAPHICS_DRIVERS_KEY = r"HKLM\SYSTEM\CurrentControlSet\Control\GraphicsDrivers"
# Modules worth naming from the child's loaded-module list: CUDA, cuDNN, driver, TensorRT, VC++, ORT, zlib.
LOADED_PREFIXES = (
    "cudart",
    "cublas",
    "cudnn",
    "cufft",
    "curand",
    "nvrtc",
    "nvjitlink",
    "nvcuda",
    "nvml",
    "nvinfer",
    "nvonnxparser",
    "zlibwapi",
    "msvcp140",
    "vcruntime140",
    "onnxruntime",
)


class RegistryView(Enum):
    """Which registry view a read uses: a 64-bit process sees WOW6432Node only through the 32-bit view."""

    NATIVE = "native"
    BITS64 = "64"
    BITS32 = "32"


class WindowsHost(ABC):
    """Everything the Windows diagnosis reads from a machine. Implementations: RealWindowsHost, and simulated ones."""

    # --- the process -------------------------------------------------------------------------------------------
    @abstractmethod
    def environ(self) -> Mapping[str, str]: ...

    @abstractmethod
    def sys_path(self) -> tuple[str, ...]: ...

    @abstractmethod
    def executable(self) -> str:
        """The python.exe the process runs: its folder is the "application folder" of the DLL search.

        A venv's Scripts\\python.exe is a launcher that starts the base python.exe, so this is the base one.
        """

    @abstractmethod
    def launcher(self) -> str:
        """What to start for a child Python that imports the same packages (sys.executable)."""

    @abstractmethod
    def base_prefix(self) -> str: ...

    @abstractmethod
    def python_version(self) -> str: ...

    @abstractmethod
    def cwd(self) -> str: ...

    @abstractmethod
    def machines(self) -> tuple[str, str]:
        """(process machine, native machine): "x64", "arm64", "x86"."""

    @abstractmethod
    def windows_version(self) -> str: ...

    @abstractmethod
    def system_dir(self) -> str: ...

    @abstractmethod
    def windows_dir(self) -> str: ...

    @abstractmethod
    def dll_directory(self) -> str | None: ...

    # --- files --------------------------------------------------------------------------------------------------
    @abstractmethod
    def local(self, path: str) -> Path | None:
        """The readable local file or folder behind a Windows path (case-insensitive), or None when absent."""

    @abstractmethod
    def display(self, local: Path) -> str:
        """The Windows path of a local file or folder (the inverse of `local`)."""

    # --- registry -----------------------------------------------------------------------------------------------
    @abstractmethod
    def registry_value(self, key: str, name: str, view: RegistryView = RegistryView.NATIVE) -> str | int | None: ...

    @abstractmethod
    def registry_values(self, key: str, view: RegistryView = RegistryView.NATIVE) -> Mapping[str, str | int]: ...

    # --- the real loader and the driver -------------------------------------------------------------------------
    @abstractmethod
    def load(
        self,
        libraries: Sequence[str],
        *,
        session: bool,
        module_parent: str | None,
        preload: bool = False,
        device_id: int = 0,
        timeout_s: float = 120.0,
    ) -> LoadAttempt:
        """Import onnxruntime (from `module_parent`), then LoadLibraryExW each library as ORT does, in a child."""

    def nvml(self) -> Any:
        """A pynvml-like object to ask the driver (None: pynvml itself, which finds nvml.dll)."""
        return None

    # --- derived helpers (the same for every host) -------------------------------------------------------------
    def is_file(self, path: str) -> bool:
        local = self.local(path)
        return local is not None and local.is_file()

    def is_dir(self, path: str) -> bool:
        local = self.local(path)
        return local is not None and local.is_dir()

    def listdir(self, directory: str) -> tuple[str, ...]:
        local = self.local(directory)
        if local is None or not local.is_dir():
            return ()
        try:
            return tuple(sorted(os.listdir(local)))
        except OSError:
            return ()

    def find(self, directory: str, name: str) -> str | None:
        """The path of file `name` in `directory` (case-insensitive), or None."""
        local = self.local(ntpath.join(directory, name))
        return self.display(local) if local is not None and local.is_file() else None

    def read_text(self, path: str) -> str | None:
        local = self.local(path)
        try:
            return local.read_text(encoding="utf-8", errors="replace") if local and local.is_file() else None
        except OSError:
            return None

    def contains(self, path: str, needle: bytes) -> bool:
        """Does the file hold these bytes (a message compiled into a binary)? Read through a memory map."""
        import mmap

        local = self.local(path)
        if local is None or not local.is_file():
            return False
        try:
            with open(local, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return data.find(needle) >= 0
        except (OSError, ValueError):
            return False

    def pe(self, path: str) -> PeInfo | None:
        """The PE headers of a DLL (imports, machine, file version); None when it is not a readable PE file."""
        local = self.local(path)
        if local is None or not local.is_file():
            return None
        try:
            stat = local.stat()
        except OSError:
            return None
        return _read_pe_once(local, stat)

    def known_dlls(self) -> frozenset[str]:
        """KnownDLLs: loaded from the system's section object, never searched for (ntdll.dll always is)."""
        cache = self.__dict__.get("_known_dlls")
        if cache is None:
            values = self.registry_values(KNOWN_DLLS_KEY)
            cache = frozenset({str(v).lower() for v in values.values() if isinstance(v, str)} | {"ntdll.dll"})
            self.__dict__["_known_dlls"] = cache
        return cache

    def safe_dll_search_mode(self) -> bool:
        """SafeDllSearchMode (default on): the current folder comes after the Windows folders, before PATH."""
        value = self.registry_value(SESSION_MANAGER_KEY, "SafeDllSearchMode")
        return value != 0


_PE_CACHE: dict[tuple[int, int, int, int], PeInfo | None] = {}


def _read_pe_once(local: Path, stat: os.stat_result) -> PeInfo | None:
    """read_pe once per file (hard links and repeated imports included): pefile is slow to close a file."""
    key = (stat.st_dev, stat.st_ino, stat.st_mtime_ns, stat.st_size)
    if key not in _PE_CACHE:
        if len(_PE_CACHE) > 4096:
            _PE_CACHE.clear()
        try:
            _PE_CACHE[key] = read_pe(local)
        except BinaryFormatError:
            _PE_CACHE[key] = None
    return _PE_CACHE[key]


def same_dir(a: str, b: str) -> bool:
    """Two Windows folder paths name the same folder (case, trailing backslash and quotes ignored)."""

    def norm(path: str) -> str:
        return ntpath.normcase(ntpath.normpath(path.strip().strip('"'))).rstrip("\\")

    return norm(a) == norm(b)


def expand_variables(text: str, environ: Mapping[str, str]) -> str:
    """Expand %NAME% as Windows does (names are case-insensitive; unknown names stay as written)."""
    lowered = {k.lower(): v for k, v in environ.items()}

    def value(match: re.Match[str]) -> str:
        return lowered.get(match.group(1).lower(), match.group(0))

    return re.sub(r"%([^%;]+)%", value, text)


def windows_error_code(text: str | None) -> int | None:
    """The Windows error code in a load error recorded by `load_attempt_from_child` ("error 126: ...")."""
    match = re.match(r"^error (\d+)\b", text or "")
    return int(match.group(1)) if match else None


# --- the real host --------------------------------------------------------------------------------------------------


class RealWindowsHost(WindowsHost):
    """This Windows machine, read through winapi (registry, kernel32) and the standard library."""

    def environ(self) -> Mapping[str, str]:
        return os.environ

    def sys_path(self) -> tuple[str, ...]:
        return tuple(p for p in sys.path if p)

    def executable(self) -> str:
        return getattr(sys, "_base_executable", None) or sys.executable

    def launcher(self) -> str:
        return sys.executable

    def base_prefix(self) -> str:
        return sys.base_prefix

    def python_version(self) -> str:
        import platform

        return platform.python_version()

    def cwd(self) -> str:
        return os.getcwd()

    def machines(self) -> tuple[str, str]:
        return winapi.machines()

    def windows_version(self) -> str:
        return winapi.windows_version()

    def system_dir(self) -> str:
        return winapi.system_directory()

    def windows_dir(self) -> str:
        return winapi.windows_directory()

    def dll_directory(self) -> str | None:
        return winapi.dll_directory()

    def local(self, path: str) -> Path | None:
        local = Path(path)
        return local if local.exists() else None

    def display(self, local: Path) -> str:
        return str(local)

    def registry_value(self, key: str, name: str, view: RegistryView = RegistryView.NATIVE) -> str | int | None:
        return winapi.registry_value(key, name, view.value)

    def registry_values(self, key: str, view: RegistryView = RegistryView.NATIVE) -> Mapping[str, str | int]:
        return winapi.registry_values(key, view.value)

    def load(
        self,
        libraries: Sequence[str],
        *,
        session: bool,
        module_parent: str | None,
        preload: bool = False,
        device_id: int = 0,
        timeout_s: float = 120.0,
    ) -> LoadAttempt:
        child = winapi.run_load_child(
            libraries,
            prefixes=LOADED_PREFIXES,
            import_ort=module_parent is not None,
            session=session,
            module_parent=module_parent,
            preload=preload,
            device_id=device_id,
            python=self.launcher(),
            env=self.environ(),
            timeout_s=timeout_s,
        )
        return load_attempt_from_child(
            child.stages,
            session=session,
            preload=preload,
            returncode=child.returncode,
            stderr=child.stderr,
            duration_s=child.duration_s,
            timed_out=child.timed_out,
        )


def load_attempt_from_child(
    stages: Mapping[str, Any],
    *,
    session: bool,
    preload: bool,
    returncode: int | None,
    stderr: str,
    duration_s: float,
    timed_out: bool = False,
) -> LoadAttempt:
    """Turn the Windows child's stage records into the LoadAttempt every platform reports.

    A failed LoadLibraryExW is recorded as "error <code>: <FormatMessage text>"; a failed
    `import onnxruntime` as "import onnxruntime: <exception>".
    """
    ort = stages.get("ort") or {}
    loads: list[LibraryLoad] = []
    if ort.get("error"):
        loads.append(LibraryLoad(Path("onnxruntime_pybind11_state.pyd"), False, f"import onnxruntime: {ort['error']}"))
    for item in stages.get("loads") or ():
        error = None if item.get("ok") else f"error {item.get('code')}: {item.get('error') or ''}".rstrip(": ")
        loads.append(LibraryLoad(Path(item["path"]), bool(item.get("ok")), error))
    sess = stages.get("session") or {}
    providers = tuple(sess.get("providers") or ())
    session_error = sess.get("error")
    failed = next((load for load in loads if not load.ok), None)
    error = failed.error if failed else None
    if timed_out:
        outcome = LoadOutcome.TIMEOUT
    elif failed is not None:
        outcome = LoadOutcome.LIBRARY_FAILED  # the .pyd import first: nothing of ORT runs without it
    elif "loads" not in stages or "mapped" not in stages:
        outcome = LoadOutcome.CRASHED
        error = f"the child process ended with status {returncode} before reporting"
    elif session and (session_error or not providers or providers[0] != "CUDAExecutionProvider" or not sess.get("ran")):
        outcome = LoadOutcome.SESSION_FAILED
        used = ", ".join(providers) or "no provider"
        error = session_error or f"the session runs on {used} instead of CUDAExecutionProvider"
    else:
        outcome = LoadOutcome.LOADED
    return LoadAttempt(
        outcome=outcome,
        libraries=tuple(loads),
        error=error,
        session_requested=session,
        session_providers=providers,
        session_error=session_error,
        mapped=tuple(Path(p) for p in stages.get("mapped") or ()),
        preload=preload,
        ort_file=ort.get("file"),
        ort_version=ort.get("version"),
        returncode=returncode,
        stderr_tail=stderr[-4000:].strip(),
        duration_s=duration_s,
    )


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
        candidates = [(bin_dir, None)]
        for cuda in host.listdir(bin_dir):
            sub = ntpath.join(bin_dir, cuda)
            candidates += [(sub, cuda), (ntpath.join(sub, "x64"), cuda)]
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
