"""The platform probe: OS, architecture, glibc, Python; every input replaceable."""

from __future__ import annotations

import os
import platform
import struct
import sys

import pytest

from ortgpu.host.platform_probe import glibc_version, probe_platform
from ortgpu.versions import version_tuple


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2.28", (2, 28)),
        ("2.17", (2, 17)),
        ("580.95.05", (580, 95, 5)),
        ("13.0", (13, 0)),
        ("1.31.1rc1", (1, 31, 1)),
        ("", ()),
        (None, ()),
        ("abc", ()),
    ],
)
def test_version_tuple(text, expected) -> None:
    assert version_tuple(text) == expected


def test_glibc_from_confstr() -> None:
    assert glibc_version(lambda name: "glibc 2.17") == "2.17"


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="needs glibc")
def test_glibc_falls_back_to_gnu_get_libc_version() -> None:
    # confstr unavailable: the ctypes route must give the same answer as the real confstr
    assert glibc_version(None) == os.confstr("CS_GNU_LIBC_VERSION").split()[1]
    assert glibc_version(lambda name: None) == os.confstr("CS_GNU_LIBC_VERSION").split()[1]


def test_this_machine() -> None:
    info = probe_platform()
    assert info.os == platform.system()
    assert info.arch == platform.machine()
    assert info.python_bits == struct.calcsize("P") * 8
    assert info.python_version == platform.python_version()
    assert info.python_executable == sys.executable
    if info.os == "Linux" and platform.libc_ver()[0] == "glibc":
        assert info.libc == "glibc"
        assert info.glibc_version == os.confstr("CS_GNU_LIBC_VERSION").split()[1]


def test_distro_and_wsl_from_files(tmp_path) -> None:
    os_release = tmp_path / "os-release"
    os_release.write_text('NAME="Ubuntu"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\n')
    proc_version = tmp_path / "version"
    proc_version.write_text("Linux version 5.15.153.1-microsoft-standard-WSL2 (gcc) #1 SMP\n")
    info = probe_platform(system="Linux", os_release=os_release, proc_version=proc_version)
    assert info.distro == "Ubuntu 22.04.4 LTS"
    assert info.wsl is True
    proc_version.write_text("Linux version 6.8.0-45-generic (buildd@lcy02)\n")
    assert probe_platform(system="Linux", os_release=os_release, proc_version=proc_version).wsl is False


def test_other_os_has_no_glibc_or_distro(tmp_path) -> None:
    info = probe_platform(system="Windows", machine="AMD64", confstr=lambda name: "glibc 2.36")
    assert (info.os, info.arch, info.glibc_version, info.libc, info.distro, info.wsl) == (
        "Windows",
        "AMD64",
        None,
        None,
        None,
        False,
    )
