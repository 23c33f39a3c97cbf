"""The Win32 calls behind the real Windows host: registry, loader folders, CPU architecture, a LoadLibraryExW child.

This is the only module that touches winreg or kernel32. It imports cleanly on any OS (nothing
Windows-only is imported at its top); every function raises WinApiUnavailable when called
elsewhere. Everything that judges what these calls return lives in the platform-neutral modules
(windows_host, windows_loader, doctor_checks.windows), so tests simulate a Windows host on Linux.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ortgpu.host.load_attempt import CHILD_CUDA_SESSION, CHILD_IMPORT_ORT, CHILD_REPORTER, ChildRun, run_child

__all__ = [
    "CHILD_MARK",
    "LOAD_WITH_ALTERED_SEARCH_PATH",
    "MACHINES",
    "ChildRun",
    "WinApiUnavailable",
    "dll_directory",
    "expand_environment_strings",
    "machines",
    "registry_subkeys",
    "registry_value",
    "registry_values",
    "run_load_child",
    "system_directory",
    "windows_directory",
    "windows_version",
]

LOAD_WITH_ALTERED_SEARCH_PATH = 0x8  # what ORT's WindowsEnv::LoadDynamicLibrary passes
MACHINES = {0x8664: "x64", 0xAA64: "arm64", 0x14C: "x86", 0xA641: "arm64ec"}  # IMAGE_FILE_MACHINE_*
CHILD_MARK = "ORTGPU_WIN_STAGE "


class WinApiUnavailable(OSError):
    """A Win32 call was asked for on another operating system."""


def _require_windows() -> None:
    if sys.platform != "win32":
        raise WinApiUnavailable(f"Win32 API calls need Windows; this is {sys.platform}")


def _kernel32() -> Any:
    import ctypes
    from ctypes import wintypes

    k32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    k32.GetSystemDirectoryW.argtypes = [wintypes.LPWSTR, wintypes.UINT]
    k32.GetWindowsDirectoryW.argtypes = [wintypes.LPWSTR, wintypes.UINT]
    k32.GetDllDirectoryW.argtypes = [wintypes.DWORD, wintypes.LPWSTR]
    k32.GetCurrentProcess.restype = wintypes.HANDLE
    return k32


def _winreg() -> Any:
    """The winreg module, typed as Any: typeshed declares its names only under ``sys.platform == "win32"``, so a
    type check run on Linux would see none of them."""
    import winreg

    return winreg


def _hive(key: str) -> tuple[Any, str]:
    winreg = _winreg()

    hive, _, sub = key.partition("\\")
    roots = {
        "HKLM": winreg.HKEY_LOCAL_MACHINE,
        "HKEY_LOCAL_MACHINE": winreg.HKEY_LOCAL_MACHINE,
        "HKCU": winreg.HKEY_CURRENT_USER,
        "HKEY_CURRENT_USER": winreg.HKEY_CURRENT_USER,
    }
    if hive.upper() not in roots:
        raise ValueError(f"unknown registry hive in {key!r}")
    return roots[hive.upper()], sub


def _access(view: str) -> int:
    winreg = _winreg()

    # "64"/"32" pick the registry view explicitly (KEY_WOW64_*); "native" is the process's own view.
    return winreg.KEY_READ | {"native": 0, "64": winreg.KEY_WOW64_64KEY, "32": winreg.KEY_WOW64_32KEY}[view]


def registry_value(key: str, name: str, view: str = "native") -> str | int | None:
    """One value ("HKLM\\SOFTWARE\\...", "Version"); None when the key or value does not exist.

    REG_EXPAND_SZ strings come back unexpanded (the caller expands them against the right environment).
    """
    _require_windows()
    winreg = _winreg()

    root, sub = _hive(key)
    try:
        with winreg.OpenKey(root, sub, 0, _access(view)) as handle:
            value, _kind = winreg.QueryValueEx(handle, name)
    except OSError:
        return None
    return value if isinstance(value, (str, int)) else None


def registry_values(key: str, view: str = "native") -> dict[str, str | int]:
    """Every string or integer value of a key (e.g. KnownDLLs); empty when the key does not exist."""
    _require_windows()
    winreg = _winreg()

    root, sub = _hive(key)
    out: dict[str, str | int] = {}
    try:
        with winreg.OpenKey(root, sub, 0, _access(view)) as handle:
            index = 0
            while True:
                try:
                    name, value, _kind = winreg.EnumValue(handle, index)
                except OSError:
                    break
                if isinstance(value, (str, int)):
                    out[name] = value
                index += 1
    except OSError:
        return {}
    return out


def registry_subkeys(key: str, view: str = "native") -> tuple[str, ...]:
    _require_windows()
    winreg = _winreg()

    root, sub = _hive(key)
    names: list[str] = []
    try:
        with winreg.OpenKey(root, sub, 0, _access(view)) as handle:
            index = 0
            while True:
                try:
                    names.append(winreg.EnumKey(handle, index))
                except OSError:
                    break
                index += 1
    except OSError:
        return ()
    return tuple(names)


def expand_environment_strings(text: str) -> str:
    _require_windows()
    winreg = _winreg()

    return str(winreg.ExpandEnvironmentStrings(text))


def _directory(getter: Any) -> str:
    import ctypes

    buffer = ctypes.create_unicode_buffer(32768)
    length = getter(buffer, 32768)
    if not length:
        raise OSError(ctypes.get_last_error(), "cannot read a Windows directory")  # type: ignore[attr-defined]
    return buffer.value


def system_directory() -> str:
    """GetSystemDirectoryW: normally C:\\Windows\\System32 (what the loader searches, not %SystemRoot% text)."""
    _require_windows()
    return _directory(_kernel32().GetSystemDirectoryW)


def windows_directory() -> str:
    _require_windows()
    return _directory(_kernel32().GetWindowsDirectoryW)


def dll_directory() -> str | None:
    """The folder set with SetDllDirectory in this process, or None (it moves in the search order)."""
    _require_windows()
    import ctypes

    buffer = ctypes.create_unicode_buffer(32768)
    length = _kernel32().GetDllDirectoryW(32768, buffer)
    return buffer.value if length else None


def machines() -> tuple[str, str]:
    """(process machine, native machine): ("x64", "arm64") is x64 Python emulated on Windows on ARM."""
    _require_windows()
    import ctypes
    from ctypes import wintypes

    k32 = _kernel32()
    process = wintypes.USHORT(0)
    native = wintypes.USHORT(0)
    is_wow64_2 = getattr(k32, "IsWow64Process2", None)  # Windows 10 1511+
    if is_wow64_2 is not None:
        pointer = ctypes.POINTER(wintypes.USHORT)
        is_wow64_2.argtypes = [wintypes.HANDLE, pointer, pointer]
        is_wow64_2.restype = wintypes.BOOL
    if is_wow64_2 is not None and is_wow64_2(k32.GetCurrentProcess(), ctypes.byref(process), ctypes.byref(native)):
        native_name = MACHINES.get(native.value, hex(native.value))
        # IMAGE_FILE_MACHINE_UNKNOWN (0) for the process means "not WOW64": it runs natively.
        process_name = MACHINES.get(process.value, hex(process.value)) if process.value else native_name
        return process_name, native_name
    import struct

    # Older Windows: no ARM64 emulation exists, so the process is x86 (WOW64) or native x64/x86.
    bits = struct.calcsize("P") * 8
    info = (ctypes.c_byte * 64)()
    k32.GetNativeSystemInfo(info)
    architecture = int.from_bytes(bytes(info[0:2]), "little")  # wProcessorArchitecture
    native_name = {9: "x64", 12: "arm64", 0: "x86"}.get(architecture, str(architecture))
    return ("x64" if bits == 64 else "x86"), native_name


def windows_version() -> str:
    _require_windows()
    version = sys.getwindowsversion()  # type: ignore[attr-defined]
    return f"{version.major}.{version.minor}.{version.build}"


# --- the child process that really loads the provider DLLs ------------------------------------------------------

# Runs in a fresh python.exe: a failed LoadLibrary leaves nothing behind, a successful one would pollute
# the doctor's own loaded-module list. It reports JSON records on stdout, one per stage.
_CHILD = (
    r"""
import ctypes, json, os, sys
from ctypes import wintypes as wt
cfg = json.loads(sys.argv[1])
MARK, PREFIXES = cfg["mark"], tuple(p.lower() for p in cfg["prefixes"])
"""
    + CHILD_REPORTER
    + r"""
k32 = ctypes.WinDLL("kernel32", use_last_error=True)
k32.LoadLibraryExW.argtypes = [wt.LPCWSTR, wt.HANDLE, wt.DWORD]
k32.LoadLibraryExW.restype = wt.HMODULE
k32.GetModuleFileNameW.argtypes = [wt.HMODULE, wt.LPWSTR, wt.DWORD]
k32.GetModuleFileNameW.restype = wt.DWORD
k32.GetCurrentProcess.restype = wt.HANDLE
k32.FormatMessageW.argtypes = [wt.DWORD, wt.LPCVOID, wt.DWORD, wt.DWORD, wt.LPWSTR, wt.DWORD, wt.LPVOID]

def text(code):
    buf = ctypes.create_unicode_buffer(2048)
    n = k32.FormatMessageW(0x1000 | 0x200, None, code, 0, buf, 2048, None)
    return buf.value.strip() if n else ""

def modules():
    psapi = ctypes.WinDLL("psapi", use_last_error=True)
    psapi.EnumProcessModules.argtypes = [wt.HANDLE, ctypes.POINTER(wt.HMODULE), wt.DWORD, ctypes.POINTER(wt.DWORD)]
    handles = (wt.HMODULE * 4096)()
    needed = wt.DWORD(0)
    if not psapi.EnumProcessModules(k32.GetCurrentProcess(), handles, ctypes.sizeof(handles), ctypes.byref(needed)):
        return []
    out = []
    for i in range(min(needed.value // ctypes.sizeof(wt.HMODULE), 4096)):
        buf = ctypes.create_unicode_buffer(32768)
        if k32.GetModuleFileNameW(handles[i], buf, 32768):
            if os.path.basename(buf.value).lower().startswith(PREFIXES) and buf.value not in out:
                out.append(buf.value)
    return out
"""
    + CHILD_IMPORT_ORT
    + r"""
loads, ok = [], True
for path in cfg["libraries"]:
    handle = k32.LoadLibraryExW(path, None, cfg["flags"])
    if handle:
        loads.append({"path": path, "ok": True, "code": 0, "error": None})
    else:
        code = ctypes.get_last_error()
        loads.append({"path": path, "ok": False, "code": code, "error": text(code)})
        ok = False
        break
stage("loads", loads)
"""
    + CHILD_CUDA_SESSION
    + r"""
stage("mapped", modules())
"""
)


def run_load_child(
    libraries: Sequence[str],
    *,
    prefixes: Sequence[str],
    import_ort: bool,
    session: bool,
    module_parent: str | None,
    preload: bool,
    device_id: int,
    python: str,
    env: Mapping[str, str],
    timeout_s: float,
) -> ChildRun:
    """LoadLibraryExW(path, NULL, LOAD_WITH_ALTERED_SEARCH_PATH) each library in a fresh `python`, as ORT does."""
    _require_windows()
    config = {
        "mark": CHILD_MARK,
        "prefixes": list(prefixes),
        "libraries": list(libraries),
        "flags": LOAD_WITH_ALTERED_SEARCH_PATH,
        "import_ort": import_ort or session or preload,
        "session": session,
        "module_parent": module_parent,
        "preload": preload,
        "device_id": device_id,
    }
    return run_child(_CHILD, config, python=python, env=env, timeout_s=timeout_s)
