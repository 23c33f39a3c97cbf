"""This machine's OS, CPU architecture, C library and Python interpreter, read without importing anything heavy."""

from __future__ import annotations

import ctypes
import os
import platform
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PlatformInfo", "glibc_version", "probe_platform"]

_CONFSTR = getattr(os, "confstr", None)  # absent on Windows


@dataclass(frozen=True)
class PlatformInfo:
    os: str  # platform.system(): "Linux", "Windows", "Darwin"
    kernel: str  # platform.release()
    distro: str | None  # PRETTY_NAME from /etc/os-release
    arch: str  # platform.machine(): "x86_64", "aarch64"
    libc: str | None  # "glibc", "musl" or None when unknown
    glibc_version: str | None  # "2.36"
    wsl: bool  # Windows Subsystem for Linux: the driver libraries live in /usr/lib/wsl/lib there
    python_version: str  # "3.11.7"
    python_implementation: str  # "CPython"
    python_bits: int  # 64 or 32
    python_executable: str


def glibc_version(confstr: Callable[[str], str | None] | None = _CONFSTR) -> str | None:
    """The running glibc's version ("2.36"), or None on musl and other C libraries."""
    if confstr is not None:
        try:
            value = confstr("CS_GNU_LIBC_VERSION")
        except (ValueError, OSError):
            value = None
        if value and value.startswith("glibc "):
            return value.split()[1]
    try:
        process = ctypes.CDLL(None)
        getter = process.gnu_get_libc_version
    except (OSError, AttributeError):  # not glibc (musl has no gnu_get_libc_version)
        return None
    getter.restype = ctypes.c_char_p
    raw = getter()
    return raw.decode("ascii", "replace") if raw else None


def _os_release(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "PRETTY_NAME":
            return value.strip().strip('"').strip("'") or None
    return None


def _is_wsl(proc_version: Path) -> bool:
    try:
        return "microsoft" in proc_version.read_text(encoding="utf-8", errors="replace").lower()
    except OSError:
        return False


def _libc_name(system: str, glibc: str | None) -> str | None:
    if system != "Linux":
        return None
    if glibc:
        return "glibc"
    libc, _ = platform.libc_ver()
    if libc:
        return libc
    return "musl" if any(Path("/lib").glob("ld-musl-*")) else None


def probe_platform(
    *,
    system: str | None = None,
    machine: str | None = None,
    confstr: Callable[[str], str | None] | None = _CONFSTR,
    os_release: Path = Path("/etc/os-release"),
    proc_version: Path = Path("/proc/version"),
) -> PlatformInfo:
    """Describe this machine; every input can be replaced so tests can simulate another one."""
    system = system or platform.system()
    glibc = glibc_version(confstr) if system == "Linux" else None
    return PlatformInfo(
        os=system,
        kernel=platform.release(),
        distro=_os_release(os_release) if system == "Linux" else None,
        arch=machine or platform.machine(),
        libc=_libc_name(system, glibc),
        glibc_version=glibc,
        wsl=system == "Linux" and _is_wsl(proc_version),
        python_version=platform.python_version(),
        python_implementation=platform.python_implementation(),
        python_bits=struct.calcsize("P") * 8,
        python_executable=sys.executable,
    )
