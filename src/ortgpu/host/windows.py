"""The Windows machine as the doctor reads it: the WindowsHost interface and the real host behind it.

Every Windows input goes through `WindowsHost` (files, registry, environment, loader folders, a real
LoadLibraryExW child), so the same diagnosis runs on a real Windows machine (`RealWindowsHost`, backed
by ortgpu.host.winapi) and on a simulated one in the tests. Paths are Windows path strings (ntpath
rules: case-insensitive, backslashes); `local()` maps one to a file this process can read, `display()`
maps back. The facts read through it are in :mod:`ortgpu.host.windows_facts`.
"""

from __future__ import annotations

import ntpath
import os
import re
import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import Any

from ortgpu.binfmt.binary import BinaryFormatError, PeInfo, read_pe
from ortgpu.host import winapi
from ortgpu.host.load_attempt import LibraryLoad, LoadAttempt, LoadOutcome

__all__ = [
    "KNOWN_DLLS_KEY",
    "LOADED_PREFIXES",
    "VC_RUNTIMES_KEY",
    "RealWindowsHost",
    "RegistryView",
    "WindowsHost",
    "expand_variables",
    "load_attempt_from_child",
    "same_dir",
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
