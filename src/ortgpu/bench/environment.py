"""The environment a benchmark ran in: versions, hardware and settings, recorded with every saved result."""

from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ortgpu import __version__
from ortgpu.capi.package_run import CApiLibrary
from ortgpu.host import nvml
from ortgpu.host.nvml import map_visible_devices
from ortgpu.runtime.guard import import_onnxruntime

__all__ = ["Environment", "GpuSummary", "collect_environment", "collect_package_environment", "nvml_index_for"]

# Libraries whose exact files decide GPU speed; read from the process's memory map once ORT has loaded them.
_LIBRARY_PATTERN = re.compile(r"lib(cudart|cublasLt|cublas|cudnn|nvinfer|onnxruntime_providers_\w+)[^/]*\.so[.\d]*$")


@dataclass(frozen=True)
class GpuSummary:
    """The GPU the bench ran on, as NVML reports it."""

    nvml_index: int
    name: str
    uuid: str
    memory_total_bytes: int
    compute_capability: tuple[int, int]
    pci_bus_id: str | None = None


@dataclass(frozen=True)
class Environment:
    """Versions, hardware and settings behind a result: what a later comparison needs to interpret it."""

    ortgpu_version: str
    date_utc: str
    python: str
    os: str
    machine: str
    cpu: str
    cpu_count: int
    ort_version: str
    ort_distributions: tuple[str, ...]
    ort_build_info: str
    ort_cuda_version: str | None  # the CUDA version ORT was built with (GPU wheels only)
    ort_cudnn_version: str | None
    available_providers: tuple[str, ...]
    ep: str
    active_providers: tuple[str, ...]
    provider_options: dict[str, dict[str, str]]
    session_options: dict[str, str]
    device_id: int
    cuda_visible_devices: str | None
    driver_version: str | None
    cuda_driver_version: str | None
    gpu: GpuSummary | None
    loaded_libraries: tuple[str, ...] = ()
    cuda_runtime_version: str | None = None  # asked of the loaded libcudart
    cudnn_version: str | None = None  # asked of the loaded libcudnn
    nvml_error: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


def nvml_index_for(device_id: int, gpus: tuple[Any, ...]) -> int | None:
    """The NVML index of CUDA device ``device_id`` (NVML ignores CUDA_VISIBLE_DEVICES; CUDA renumbers by it)."""

    visible = map_visible_devices(gpus, os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("CUDA_DEVICE_ORDER"))
    match = next((d for d in visible.devices if d.device_id == device_id), None)
    return match.gpu.index if match is not None else None


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ort_distributions() -> tuple[str, ...]:
    from importlib import metadata

    found = []
    for dist in metadata.distributions():
        name = (dist.metadata.get_all("Name") or [""])[0].lower()
        if name.startswith("onnxruntime"):
            found.append(f"{name}=={dist.version}")
    return tuple(sorted(set(found)))


def _loaded_paths() -> dict[str, str]:
    """File name -> path of the CUDA / cuDNN / TensorRT / ORT provider libraries mapped into this process."""
    maps = Path("/proc/self/maps")
    found: dict[str, str] = {}
    try:
        text = maps.read_text(encoding="utf-8", errors="replace") if maps.exists() else ""
    except OSError:
        return found
    for line in text.splitlines():
        path = line.split()[-1] if line.split() else ""
        if path.startswith("/") and _LIBRARY_PATTERN.search(path):
            found.setdefault(os.path.basename(os.path.realpath(path)), path)
    return found


def _runtime_versions(paths: dict[str, str]) -> tuple[str | None, str | None]:
    """(CUDA runtime, cuDNN) versions asked of the libraries already loaded (never loads a new one)."""
    import ctypes

    cudart = next((p for n, p in paths.items() if n.startswith("libcudart.so")), None)
    cudnn = next((p for n, p in paths.items() if re.match(r"libcudnn\.so", n)), None)
    cuda_version = cudnn_version = None
    try:
        if cudart:
            value = ctypes.c_int()
            if ctypes.CDLL(cudart).cudaRuntimeGetVersion(ctypes.byref(value)) == 0:
                cuda_version = f"{value.value // 1000}.{value.value % 1000 // 10}"
        if cudnn:
            function = ctypes.CDLL(cudnn).cudnnGetVersion
            function.restype = ctypes.c_size_t
            number = int(function())  # cuDNN 9: major * 10000 + minor * 100 + patch
            major, rest = (number // 10000, number % 10000) if number >= 10000 else (number // 1000, number % 1000)
            cudnn_version = f"{major}.{rest // 100}.{rest % 100}"
    except (OSError, AttributeError):
        pass  # a library without the symbol: the file names in loaded_libraries still tell the major
    return cuda_version, cudnn_version


def _machine(ep: str, device_id: int) -> dict[str, Any]:
    """The Environment fields that do not depend on which ONNX Runtime ran: versions, host, GPU, driver."""

    driver = nvml.query_driver()
    gpus = tuple(driver.gpus)
    index = nvml_index_for(device_id, gpus)
    gpu = next((g for g in gpus if g.index == index), None) if ep != "cpu" else None
    notes = []
    if ep != "cpu" and gpu is None and driver.present:
        notes.append(
            f"CUDA device {device_id} has no NVML match (CUDA_VISIBLE_DEVICES="
            f"{os.environ.get('CUDA_VISIBLE_DEVICES')!r})"
        )
    return dict(
        ortgpu_version=__version__,
        date_utc=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        python=platform.python_version(),
        os=platform.platform(),
        machine=platform.machine(),
        cpu=_cpu_name(),
        cpu_count=os.cpu_count() or 0,
        ep=ep,
        device_id=device_id,
        cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
        driver_version=driver.version,
        cuda_driver_version=driver.cuda_driver_version,
        gpu=GpuSummary(
            gpu.index,
            gpu.name,
            gpu.uuid,
            gpu.memory_total_bytes,
            (gpu.compute_capability[0], gpu.compute_capability[1]),
            gpu.pci_bus_id,
        )
        if gpu is not None
        else None,
        nvml_error=driver.error,
        notes=tuple(notes),
    )


def _settings(config_session: dict[str, Any] | None) -> dict[str, str]:
    return {k: str(v) for k, v in sorted((config_session or {}).items())}


def collect_environment(
    ep: str, device_id: int, session: Any | None = None, config_session: dict[str, Any] | None = None
) -> Environment:
    """Record this process's environment. ``session`` (an onnxruntime.InferenceSession) adds the active providers
    and their options as ORT reports them; ``config_session`` is the [session] settings the sessions were built with.
    """
    ort = import_onnxruntime()

    try:
        from onnxruntime.capi import build_and_package_info as build
    except ImportError:
        build = None
    active: tuple[str, ...] = ()
    provider_options: dict[str, dict[str, str]] = {}
    if session is not None:
        active = tuple(session.get_providers())
        provider_options = {k: {kk: str(vv) for kk, vv in v.items()} for k, v in session.get_provider_options().items()}
    loaded = _loaded_paths()
    runtime = _runtime_versions(loaded)
    return Environment(
        **_machine(ep, device_id),
        ort_version=ort.__version__,
        ort_distributions=_ort_distributions(),
        ort_build_info=ort.get_build_info() if hasattr(ort, "get_build_info") else "",
        ort_cuda_version=getattr(build, "cuda_version", None) or None,
        ort_cudnn_version=getattr(build, "cudnn_version", None) or None,
        available_providers=tuple(ort.get_available_providers()),
        active_providers=active,
        provider_options=provider_options,
        session_options=_settings(config_session),
        loaded_libraries=tuple(sorted(loaded)),
        cuda_runtime_version=runtime[0],
        cudnn_version=runtime[1],
    )


def collect_package_environment(
    ep: str,
    device_id: int,
    package: CApiLibrary,
    active_providers: tuple[str, ...],
    provider_options: dict[str, dict[str, str]],
    config_session: dict[str, Any] | None = None,
) -> Environment:
    """The environment of a bench timed through a package's C library (``--package``), in child processes.

    ONNX Runtime's version and build are the library's own answers; the libraries it loaded and the CUDA runtime
    it used lived in the child processes, so they are not recorded (None / empty), and the wheel is not imported.
    """
    machine = _machine(ep, device_id)
    how = "C API, in child processes"
    note = (
        f"timed through the C library {package.library} ({how}); the CUDA/cuDNN libraries it loaded "
        "are not read back from the child processes"
    )
    machine["notes"] = (note, *machine["notes"])
    return Environment(
        **machine,
        ort_version=package.ort_version,
        ort_distributions=(f"{package.library} ({how})",),
        ort_build_info=package.build_info or "",
        ort_cuda_version=None,  # a release archive records no CUDA version the library can be asked for
        ort_cudnn_version=None,
        available_providers=package.compiled_providers,
        active_providers=active_providers,
        provider_options={k: dict(v) for k, v in provider_options.items()},
        session_options=_settings(config_session),
    )
