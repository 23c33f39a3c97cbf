"""Checks of the host: operating system and architecture, Python, the C library."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ortgpu.binfmt.binary import BinaryFormatError, read_elf
from ortgpu.doctor.checks.facts import ProviderLibrary
from ortgpu.doctor.verdict import Check, Status
from ortgpu.host.distributions import DistributionsReport
from ortgpu.host.platform_probe import PlatformInfo
from ortgpu.versions import version_tuple

__all__ = ["glibc_check", "platform_check", "python_check"]


def platform_check(plat: PlatformInfo) -> Check:
    where = f"{plat.os} {plat.arch}" + (f" ({plat.distro})" if plat.distro else "") + f", kernel {plat.kernel}"
    if plat.wsl:
        where += ", WSL"
    if plat.os != "Linux":
        return Check(
            "platform.os",
            "Operating system",
            Status.FAIL,
            where,
            cause=f"this-machine diagnosis covers Linux; this is {plat.os}",
            fix="run `ortgpu doctor --package <onnxruntime-gpu wheel or zip>` to analyse a package statically",
        )
    if plat.arch not in ("x86_64", "aarch64"):
        return Check(
            "platform.os",
            "Operating system",
            Status.FAIL,
            where,
            cause=f"no onnxruntime-gpu build exists for {plat.arch}",
            fix="use an x86_64 (or aarch64) Linux machine with an NVIDIA GPU",
        )
    return Check("platform.os", "Operating system", Status.OK, where)


def python_check(plat: PlatformInfo) -> Check:
    evidence = f"{plat.python_implementation} {plat.python_version}, {plat.python_bits}-bit ({plat.python_executable})"
    if plat.python_bits != 64:
        return Check(
            "python",
            "Python interpreter",
            Status.FAIL,
            evidence,
            cause="onnxruntime-gpu wheels exist only for 64-bit Python",
            fix="install a 64-bit Python (python.org, your distribution, or `uv python install 3.12`)",
        )
    return Check("python", "Python interpreter", Status.OK, evidence)


def _glibc_floor(
    providers: Sequence[ProviderLibrary], requirements: Any, dists: DistributionsReport
) -> tuple[str, str]:
    """The glibc the installed ORT needs, and where that number comes from."""

    floors: list[tuple[tuple[int, ...], str, str]] = []
    if dists.module_dir is not None:
        for binary in sorted((dists.module_dir / "capi").glob("onnxruntime_pybind11_state*.so")):
            try:
                floor = read_elf(binary).glibc_floor
            except BinaryFormatError:
                continue
            if floor:
                floors.append((version_tuple(floor), floor, binary.name))
    floors += [(version_tuple(p.glibc_floor), p.glibc_floor, p.path.name) for p in providers if p.glibc_floor]
    if floors:
        _, floor, source = max(floors)
        return floor, f"highest GLIBC_ symbol version in {source}"
    if requirements is not None and requirements.glibc_floor:
        return requirements.glibc_floor, f"version matrix for ORT {requirements.ort_version}"
    return "2.28", "onnxruntime(-gpu) >= 1.17 Linux wheels (manylinux_2_28)"


def glibc_check(
    plat: PlatformInfo, providers: Sequence[ProviderLibrary], requirements: Any, dists: DistributionsReport
) -> Check:
    if plat.os != "Linux":
        return Check("platform.glibc", "C library", Status.SKIP, f"not Linux ({plat.os})")
    floor, source = _glibc_floor(providers, requirements, dists)
    if plat.libc != "glibc" or not plat.glibc_version:
        return Check(
            "platform.glibc",
            "C library",
            Status.FAIL,
            f"{plat.libc or 'unknown C library'}; ORT needs glibc >= {floor} ({source})",
            cause="ONNX Runtime wheels are manylinux builds that need glibc; this system's C library is not glibc",
            fix="use a glibc-based system or image (Debian/Ubuntu, e.g. python:3.12-slim) instead of Alpine/musl",
        )
    evidence = f"glibc {plat.glibc_version}; needs >= {floor} ({source})"
    if version_tuple(plat.glibc_version) < version_tuple(floor):
        return Check(
            "platform.glibc",
            "C library",
            Status.FAIL,
            evidence,
            cause=f"glibc {plat.glibc_version} is older than the {floor} this ORT build needs",
            fix=(
                "move to a system with a newer glibc (Ubuntu 20.04+ has 2.31, RHEL 8 has 2.28), or for glibc "
                "2.17 install onnxruntime-gpu==1.16.3, the last manylinux2014 build"
            ),
            details={"floor": floor, "source": source},
        )
    return Check("platform.glibc", "C library", Status.OK, evidence, details={"floor": floor, "source": source})
