"""Checks of the NVIDIA driver, each GPU against the build's kernels, CUDA_VISIBLE_DEVICES and the version matrix."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ortgpu.binfmt.fatbin import arch_support
from ortgpu.doctor.checks.facts import OrtBuild, ProviderLibrary, pip
from ortgpu.doctor.verdict import Check, Status
from ortgpu.gpu_arch import ArchSupport
from ortgpu.host.distributions import DistributionsReport
from ortgpu.host.nvml import DriverInfo, GpuInfo, VisibleDevices
from ortgpu.host.platform_probe import PlatformInfo
from ortgpu.knowledge import matrix
from ortgpu.knowledge.matrix import max_cuda_for_driver
from ortgpu.loader.linux import LibraryResolution
from ortgpu.versions import version_tuple

__all__ = [
    "driver_check",
    "driver_cuda_check",
    "gpu_check",
    "libcuda_check",
    "matrix_check",
    "visible_check",
]


def driver_check(
    driver: DriverInfo,
    libcuda: LibraryResolution | None,
    pci: Sequence[str],
    kernel: str | None,
    plat: PlatformInfo,
    requirements: Any,
) -> Check:
    title = "NVIDIA driver"
    libcuda_text = "libcuda.so.1 not found" if libcuda is None or not libcuda.ok else f"libcuda.so.1 at {libcuda.path}"
    details = {"nvml_library": driver.library, "pci_nvidia": list(pci), "kernel_module": kernel}
    if driver.present:
        evidence = f"driver {driver.version}, supports CUDA <= {driver.cuda_driver_version}, {len(driver.gpus)} GPU(s)"
        evidence += f"; {libcuda_text}"
        if driver.error:
            evidence += f"; {driver.error}"
        return Check("driver.present", title, Status.OK, evidence, details=details)
    if driver.binding_missing:
        return Check(
            "driver.present",
            title,
            Status.FAIL,
            f"cannot ask NVML: {driver.error}; {libcuda_text}",
            cause="the nvidia-ml-py package is missing, so no GPU can be listed or tried",
            fix=f"{pip()} install nvidia-ml-py",
            details=details,
        )
    minimum = requirements.min_driver_linux if requirements is not None else None
    evidence = f"NVML unavailable ({driver.error}); {libcuda_text}"
    evidence += f"; kernel module: {kernel}" if kernel else "; no /proc/driver/nvidia"
    evidence += f"; NVIDIA PCI devices: {', '.join(pci)}" if pci else "; no NVIDIA device on the PCI bus"
    install = f"install the NVIDIA driver{f' >= {minimum}' if minimum else ''}"
    if libcuda is not None and libcuda.ok:
        cause = (
            f"no NVIDIA driver reachable through NVML ({driver.error}), although libcuda.so.1 is at {libcuda.path}: "
            "the driver install is incomplete, or ORTGPU_NVML_LIBRARY points to the wrong file"
        )
        fix = (
            "reinstall the NVIDIA driver's user-space libraries (libnvidia-ml.so.1 must sit beside libcuda.so.1), "
            "or unset ORTGPU_NVML_LIBRARY"
        )
    elif plat.wsl:
        cause = "no NVIDIA driver: WSL gets it from the Windows host (/usr/lib/wsl/lib)"
        fix = "install the NVIDIA Windows driver on the host, then `wsl --shutdown` and restart WSL"
    elif kernel:
        version = re.search(r"\b\d{3,}\.\d+(?:\.\d+)?\b", kernel)
        module = f"the NVIDIA kernel module {version.group()}" if version else "the NVIDIA kernel module"
        cause = (
            f"no NVIDIA driver user-space library: {module} is loaded but libnvidia-ml.so.1 and libcuda.so.1 "
            "are not found"
            if libcuda is None or not libcuda.ok
            else f"no NVIDIA driver user-space library: {module} is loaded but libnvidia-ml.so.1 is not found"
        )
        fix = (
            "in a container run it with `--gpus all` (NVIDIA Container Toolkit); otherwise install the driver's "
            "user-space libraries matching the kernel module, or add their folder to LD_LIBRARY_PATH"
        )
    elif pci:
        cause = f"no NVIDIA driver: an NVIDIA GPU is on the PCI bus ({pci[0]}) but no driver is loaded"
        fix = f"{install} (e.g. `sudo ubuntu-drivers install`) and reboot"
    else:
        cause = "no NVIDIA driver, and no NVIDIA GPU on this machine's PCI bus"
        fix = (
            f"run on a machine with an NVIDIA GPU and {install.removeprefix('install ')} installed; "
            "here only the CPU EP can run (`pip install onnxruntime`)"
        )
    return Check("driver.present", title, Status.FAIL, evidence, cause=cause, fix=fix, details=details)


def libcuda_check(libcuda: LibraryResolution, plat: PlatformInfo) -> Check:
    title = "CUDA driver library (libcuda.so.1)"
    if libcuda.ok:
        evidence = f"{libcuda.path} ({libcuda.source.value if libcuda.source else '?'}) -> {libcuda.real_name}"
        return Check("driver.libcuda", title, Status.OK, evidence)
    if plat.wsl:
        fix = "export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH"
    else:
        fix = (
            "find the driver's folder (`find / -name 'libcuda.so.1*' 2>/dev/null`), then "
            "export LD_LIBRARY_PATH=<that folder>:$LD_LIBRARY_PATH, "
            "or list it in /etc/ld.so.conf.d/ and run `sudo ldconfig`"
        )
    return Check(
        "driver.libcuda",
        title,
        Status.FAIL,
        f"libcuda.so.1 {libcuda.status.value}; searched LD_LIBRARY_PATH, ld.so.cache and the default dirs",
        cause="NVML works but the CUDA driver library libcuda.so.1 is not on the loader's path",
        fix=fix,
    )


def driver_cuda_check(driver: DriverInfo, requirements: Any, cuda_lib: ProviderLibrary | None) -> Check:
    title = "Driver vs the CUDA this ORT build needs"
    supported = driver.cuda_driver_version or (max_cuda_for_driver(driver.version) if driver.version else None)
    build = requirements.cuda_build if requirements is not None else None
    major = (requirements.cuda_major if requirements is not None else None) or (
        cuda_lib.cuda_major if cuda_lib else None
    )
    if major is None or supported is None:
        return Check("driver.cuda", title, Status.SKIP, "no CUDA build of ORT to compare with, or driver CUDA unknown")
    evidence = f"driver {driver.version} supports CUDA <= {supported}; ORT needs CUDA {build or f'{major}.x'}"
    minimum = requirements.min_driver_linux if requirements is not None else None
    if minimum:
        evidence += f" (driver >= {minimum})"
    have = version_tuple(supported)
    if have[:1] < (major,):
        return Check(
            "driver.cuda",
            title,
            Status.FAIL,
            evidence,
            cause=f"the driver supports CUDA {supported}, older than the CUDA {major} this ORT build needs "
            '("CUDA driver version is insufficient for CUDA runtime version")',
            fix=f"upgrade the NVIDIA driver{f' to >= {minimum}' if minimum else ''}, or install an onnxruntime-gpu "
            f"built for CUDA {have[0] if have else '?'}",
        )
    if minimum and driver.version and version_tuple(driver.version) < version_tuple(minimum):
        return Check(
            "driver.cuda",
            title,
            Status.WARN,
            evidence,
            cause="the driver is below the build's toolkit minimum; CUDA minor-version compatibility covers most "
            "work but PTX JIT can fail (CUDA error 222)",
            fix=f"upgrade the NVIDIA driver to >= {minimum}",
        )
    if build and have < version_tuple(build):
        return Check(
            "driver.cuda",
            title,
            Status.WARN,
            evidence,
            cause=f"driver CUDA {supported} < build CUDA {build}: runs through minor-version compatibility; "
            "PTX JIT may fail",
            fix=f"upgrade the NVIDIA driver{f' to >= {minimum}' if minimum else ''}",
        )
    return Check("driver.cuda", title, Status.OK, evidence)


def gpu_check(gpu: GpuInfo, archs: Any, cuda_lib: ProviderLibrary | None, known: Any = None) -> Check:
    """Does the CUDA provider carry kernels for this GPU? The fatbin in the binary first, the matrix second.

    `archs` is what the provider library's fatbin headers list (exact, but blind to "a" arch-specific
    suffixes); `known` is the matrix's list for this build (ortgpu.knowledge.matrix.SmArchs), which knows them.
    """

    check_id = f"gpu.arch:{gpu.index}"
    gib = gpu.memory_total_bytes / 2**30
    major, minor = gpu.compute_capability
    evidence = f"GPU {gpu.index}: {gpu.name}, {gib:.1f} GiB, compute capability {major}.{minor} ({gpu.sm}), {gpu.uuid}"
    if gpu.pci_bus_id:
        evidence += f", PCI {gpu.pci_bus_id}"
    title = f"GPU {gpu.index} and the build's kernels"
    details: dict[str, Any] = {"uuid": gpu.uuid, "sm": gpu.sm}
    if cuda_lib is None:
        return Check(
            check_id, title, Status.INFO, evidence + "; no CUDA provider library to compare with", details=details
        )
    verified = True
    if archs is not None:
        listed = ", ".join(f"sm_{a}" for a in archs.sass) + (
            "; PTX " + ", ".join(f"compute_{a}" for a in archs.ptx) if archs.ptx else ""
        )
        support = arch_support(archs, gpu.compute_capability)
        evidence += f"; {cuda_lib.path.name} carries {listed} (read from its fatbin)"
        if support is ArchSupport.COMPATIBLE and known is not None:
            # same major, other minor: only the matrix knows whether those kernels are arch-specific (sm_XYa)
            by_matrix = matrix.arch_support(known, gpu.compute_capability)
            if by_matrix is not ArchSupport.NATIVE:
                support = by_matrix
                evidence += f"; the matrix lists {', '.join(known.sass)}: arch-specific kernels do not run here"
    elif known is not None:
        listed = ", ".join(known.sass + known.ptx)
        support = matrix.arch_support(known, gpu.compute_capability)
        verified = bool(known.confirmed)
        state = "confirmed" if known.confirmed else "unconfirmed"
        evidence += f"; no fatbin readable in {cuda_lib.path.name}; the matrix lists {listed} ({state})"
    else:
        return Check(
            check_id,
            title,
            Status.INFO,
            evidence + f"; unverified: no fatbin readable in {cuda_lib.path.name} and no arch list in the matrix",
            details=details,
        )
    details["kernels"] = listed
    details["support"] = support.value
    if support is ArchSupport.NATIVE:
        return Check(check_id, title, Status.OK, evidence + f": native {gpu.sm} kernels", details=details)
    if support is ArchSupport.COMPATIBLE:
        return Check(
            check_id,
            title,
            Status.OK,
            evidence + f": binary-compatible kernels of the same major for {gpu.sm}",
            details=details,
        )
    if support is ArchSupport.PTX_JIT:
        return Check(
            check_id,
            title,
            Status.WARN,
            evidence,
            cause=f"no {gpu.sm} kernels: the driver JIT-compiles PTX on first use (slow first session, "
            "can fail with CUDA error 222 on an older driver)",
            fix=f"use an ORT build with {gpu.sm} kernels, or export CUDA_CACHE_MAXSIZE=4294967296 so the JIT cache "
            "keeps the compiled kernels between runs",
            details=details,
        )
    return Check(
        check_id,
        title,
        Status.FAIL if verified else Status.WARN,
        evidence,
        cause=f'the build has no kernels for {gpu.sm} ("no kernel image is available for execution on the device")'
        + ("" if verified else "; unverified: from an unconfirmed matrix row"),
        fix=f"install an onnxruntime-gpu release whose CUDA build includes {gpu.sm}, or build ORT from source with "
        f"CMAKE_CUDA_ARCHITECTURES={major}{minor}",
        details=details,
    )


def visible_check(visible: VisibleDevices, driver: DriverInfo) -> Check:
    title = "CUDA_VISIBLE_DEVICES and device_id"
    mapping = "; ".join(
        f"device_id {d.device_id} -> GPU {d.gpu.index} ({d.gpu.name}, {d.gpu.uuid[:12]}…)" for d in visible.devices
    )
    setting = "unset" if visible.variable is None else f"CUDA_VISIBLE_DEVICES={visible.variable!r}"
    evidence = f"{setting}: {mapping or 'no device visible'}"
    if visible.note:
        evidence += f"; {visible.note}"
    details = {"mapping": {d.device_id: d.gpu.index for d in visible.devices}, "dropped": list(visible.dropped)}
    if not driver.gpus:
        return Check(
            "gpu.visible",
            title,
            Status.FAIL,
            "the driver reports no GPU",
            cause="NVML works but lists no GPU",
            fix="check `nvidia-smi`; in a container pass the GPU (`--gpus all`)",
        )
    if not visible.devices:
        return Check(
            "gpu.visible",
            title,
            Status.FAIL,
            evidence,
            cause=f"{setting} hides every GPU from CUDA",
            fix=f"unset CUDA_VISIBLE_DEVICES, or set it to GPU indices 0..{len(driver.gpus) - 1} or UUIDs",
            details=details,
        )
    if visible.dropped:
        return Check(
            "gpu.visible",
            title,
            Status.WARN,
            evidence + f"; ignored from {visible.dropped[0]!r} on",
            cause=f"CUDA stops at the first entry it cannot match ({visible.dropped[0]!r}) and ignores the rest",
            fix=f"list only existing GPU indices 0..{len(driver.gpus) - 1} (or GPU- UUIDs), without repeats",
            details=details,
        )
    status = Status.INFO if visible.exact else Status.WARN
    if status is Status.WARN:
        return Check(
            "gpu.visible",
            title,
            status,
            evidence,
            cause="CUDA's device order may differ from nvidia-smi's",
            fix="export CUDA_DEVICE_ORDER=PCI_BUS_ID",
            details=details,
        )
    return Check("gpu.visible", title, status, evidence, details=details)


def matrix_check(
    requirements: Any, ort: OrtBuild, dists: DistributionsReport, cuda_lib: ProviderLibrary | None
) -> Check:
    title = "ORT / CUDA / cuDNN / driver matrix"
    if cuda_lib is None:
        return Check("matrix", title, Status.SKIP, "no CUDA build of ORT installed: nothing to look up")
    if requirements is None:
        return Check(
            "matrix",
            title,
            Status.INFO,
            f"ORT {ort.version or '?'} (CUDA {cuda_lib.cuda_major}) is not in ortgpu's matrix: lazily opened "
            "libraries (cuDNN, cuFFT) are unverified; DT_NEEDED above is exact",
        )
    parts: list[str] = []
    if requirements.min_driver_linux:
        parts.append(f"driver >= {requirements.min_driver_linux}")
    if requirements.lazy_libraries:
        parts.append("opens lazily " + ", ".join(requirements.lazy_libraries))
    evidence = requirements.describe_row(parts)
    details = {"sources": list(requirements.sources), "notes": requirements.notes}
    if cuda_lib.cuda_major and requirements.cuda_major and cuda_lib.cuda_major != requirements.cuda_major:
        evidence += f"; but {cuda_lib.path.name} links CUDA {cuda_lib.cuda_major}: the binary wins"
    return Check("matrix", title, Status.INFO, evidence, details=details)
