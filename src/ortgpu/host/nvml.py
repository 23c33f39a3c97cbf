"""The NVIDIA driver and GPUs as NVML reports them, and how CUDA_VISIBLE_DEVICES renumbers them.

`ORTGPU_NVML_LIBRARY` names the libnvidia-ml file to use instead of the loader's
`libnvidia-ml.so.1` (a driver in an unusual place; or a path that does not exist, to see what
ortgpu says on a machine without a driver).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "NVML_LIBRARY_ENV",
    "DriverInfo",
    "GpuInfo",
    "VisibleDevice",
    "VisibleDevices",
    "device_memory_used_bytes",
    "kernel_module_version",
    "map_visible_devices",
    "nvidia_pci_devices",
    "query_driver",
]

NVML_LIBRARY_ENV = "ORTGPU_NVML_LIBRARY"


@dataclass(frozen=True)
class GpuInfo:
    index: int  # NVML index (PCI bus order)
    name: str
    uuid: str
    memory_total_bytes: int
    compute_capability: tuple[int, int]
    pci_bus_id: str | None

    @property
    def sm(self) -> str:
        return f"sm_{self.compute_capability[0]}{self.compute_capability[1]}"


@dataclass(frozen=True)
class DriverInfo:
    present: bool  # NVML loaded and initialised
    version: str | None  # "580.95.05"
    cuda_driver_version: str | None  # highest CUDA the driver supports: "13.0"
    gpus: tuple[GpuInfo, ...]
    error: str | None  # why NVML could not answer
    library: str | None = None  # the libnvidia-ml that was asked for
    binding_missing: bool = False  # the nvidia-ml-py package is absent: says nothing about the driver


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _load_default_nvml(environ: Mapping[str, str]) -> Any:
    """Import pynvml, pointing it at ORTGPU_NVML_LIBRARY when that is set."""
    import pynvml

    path = environ.get(NVML_LIBRARY_ENV)
    if path:
        try:
            library = ctypes.CDLL(path)
        except OSError as exc:
            raise _NvmlUnavailable(f"cannot load {path} ({NVML_LIBRARY_ENV}): {exc}") from None
        pynvml.nvmlLib = library  # pynvml loads its library only when this is still None
    return pynvml


class _NvmlUnavailable(Exception):
    pass


def query_driver(nvml: Any = None, environ: Mapping[str, str] | None = None) -> DriverInfo:
    """Ask NVML for the driver and every GPU; never raises (a missing driver is a result, not an error).

    `nvml` is anything shaped like the pynvml module (tests pass a fake); by default pynvml itself.
    """
    environ = os.environ if environ is None else environ
    library = environ.get(NVML_LIBRARY_ENV) or "libnvidia-ml.so.1"
    if nvml is None:
        try:
            nvml = _load_default_nvml(environ)
        except ImportError:
            return DriverInfo(False, None, None, (), "nvidia-ml-py is not installed", library, binding_missing=True)
        except _NvmlUnavailable as exc:
            return DriverInfo(False, None, None, (), str(exc), library)
    error_type = nvml.NVMLError
    try:
        nvml.nvmlInit()
    except (error_type, OSError) as exc:
        return DriverInfo(False, None, None, (), f"NVML: {_text(exc) or type(exc).__name__}", library)
    try:
        version = _text(nvml.nvmlSystemGetDriverVersion())
        cuda = _cuda_version(nvml, error_type)
        gpus = tuple(_gpu(nvml, i) for i in range(nvml.nvmlDeviceGetCount()))
    except error_type as exc:
        return DriverInfo(True, None, None, (), f"NVML query failed: {_text(exc)}", library)
    finally:
        with contextlib.suppress(error_type):  # a failed shutdown changes nothing for the report
            nvml.nvmlShutdown()
    return DriverInfo(True, version, cuda, gpus, None, library)


def _cuda_version(nvml: Any, error_type: type[BaseException]) -> str | None:
    getter = getattr(nvml, "nvmlSystemGetCudaDriverVersion_v2", None) or nvml.nvmlSystemGetCudaDriverVersion
    try:
        value = int(getter())
    except error_type:
        return None
    return f"{value // 1000}.{value % 1000 // 10}"


def _gpu(nvml: Any, index: int) -> GpuInfo:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
    try:
        bus = _text(nvml.nvmlDeviceGetPciInfo(handle).busId)
    except nvml.NVMLError:
        bus = None
    return GpuInfo(
        index=index,
        name=_text(nvml.nvmlDeviceGetName(handle)),
        uuid=_text(nvml.nvmlDeviceGetUUID(handle)),
        memory_total_bytes=int(nvml.nvmlDeviceGetMemoryInfo(handle).total),
        compute_capability=(int(major), int(minor)),
        pci_bus_id=bus,
    )


_memory_lock = threading.Lock()
_memory_nvml: list[Any] = []  # the initialised pynvml module, once; empty until first use


def device_memory_used_bytes(index: int) -> int | None:
    """Memory in use on GPU `index` (NVML numbering), or None when NVML is unavailable.

    NVML is initialised on first call and kept, so sampling in a loop stays cheap.
    """
    with _memory_lock:
        if not _memory_nvml:
            try:
                nvml = _load_default_nvml(os.environ)
            except (ImportError, _NvmlUnavailable):
                return None
            try:
                nvml.nvmlInit()
            except (nvml.NVMLError, OSError):
                return None
            _memory_nvml.append(nvml)
        nvml = _memory_nvml[0]
    try:
        return int(nvml.nvmlDeviceGetMemoryInfo(nvml.nvmlDeviceGetHandleByIndex(index)).used)
    except nvml.NVMLError:
        return None


def kernel_module_version(proc_file: Path = Path("/proc/driver/nvidia/version")) -> str | None:
    """First line of /proc/driver/nvidia/version: the kernel driver, seen even when its user-space libraries are not."""
    try:
        first = proc_file.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return " ".join(first[0].split()) if first else None


def nvidia_pci_devices(sys_pci: Path = Path("/sys/bus/pci/devices")) -> tuple[str, ...]:
    """PCI addresses of NVIDIA display/3D controllers (vendor 0x10de), seen without any driver."""
    found = []
    try:
        entries = sorted(sys_pci.iterdir())
    except OSError:
        return ()
    for device in entries:
        try:
            vendor = (device / "vendor").read_text().strip().lower()
            klass = (device / "class").read_text().strip().lower()
        except OSError:
            continue
        if vendor == "0x10de" and klass.startswith("0x03"):  # 0x03xxxx: display controllers
            found.append(device.name)
    return tuple(found)


@dataclass(frozen=True)
class VisibleDevice:
    device_id: int  # what a program passes as the CUDA EP's device_id
    gpu: GpuInfo


@dataclass(frozen=True)
class VisibleDevices:
    variable: str | None  # CUDA_VISIBLE_DEVICES as set (None: unset)
    devices: tuple[VisibleDevice, ...]
    dropped: tuple[str, ...]  # entries CUDA ignores: the first invalid one and everything after it
    exact: bool  # False when CUDA's enumeration order may differ from NVML's (see `note`)
    note: str | None


def map_visible_devices(
    gpus: Sequence[GpuInfo], variable: str | None, device_order: str | None = None
) -> VisibleDevices:
    """Which physical GPU each CUDA device_id means under CUDA_VISIBLE_DEVICES.

    Entries are indices or UUID prefixes ("GPU-8a1f..."); CUDA stops at the first entry it cannot
    match. Indices count in CUDA's order, which is NVML's (PCI bus) order only when
    CUDA_DEVICE_ORDER=PCI_BUS_ID, or when every GPU is the same model.
    """
    ordered = sorted(gpus, key=lambda g: g.index)
    same_model = len({g.name for g in ordered}) <= 1
    exact = same_model or (device_order or "").upper() == "PCI_BUS_ID"
    note = None
    if not exact:
        note = (
            "GPUs of different models and CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA numbers the fastest first, "
            "so indices may not match nvidia-smi; set CUDA_DEVICE_ORDER=PCI_BUS_ID"
        )
    if variable is None:
        return VisibleDevices(None, tuple(VisibleDevice(i, g) for i, g in enumerate(ordered)), (), exact, note)
    entries = [e.strip() for e in variable.split(",")] if variable.strip() else []
    chosen: list[GpuInfo] = []
    dropped: list[str] = []
    for position, entry in enumerate(entries):
        if entry.upper().startswith("MIG-"):
            note = "MIG instances are listed in CUDA_VISIBLE_DEVICES: ortgpu does not map them to device ids"
            exact = False
            break
        gpu = _match_entry(entry, ordered)
        if gpu is None or gpu in chosen:
            dropped = entries[position:]
            break
        chosen.append(gpu)
    return VisibleDevices(
        variable, tuple(VisibleDevice(i, g) for i, g in enumerate(chosen)), tuple(dropped), exact, note
    )


def _match_entry(entry: str, gpus: Sequence[GpuInfo]) -> GpuInfo | None:
    if entry.isdigit():
        index = int(entry)
        return gpus[index] if index < len(gpus) else None
    if entry.upper().startswith("GPU-") and len(entry) > 4:
        matches = [g for g in gpus if g.uuid.lower().startswith(entry.lower())]
        return matches[0] if len(matches) == 1 else None
    return None
