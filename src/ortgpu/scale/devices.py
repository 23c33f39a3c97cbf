"""`--devices 0,1` / `all` / `cpu:N`: which worker processes to start, and the physical GPU each one is pinned to.

A GPU worker is pinned with ``CUDA_VISIBLE_DEVICES=<the GPU's UUID>`` and runs on its ``device_id`` 0: it sees
exactly one GPU, the one the user named, whatever order CUDA would enumerate the others in. The ids the user
gives are the CUDA device ids of *this* process (so they count in this process's ``CUDA_VISIBLE_DEVICES``); NVML
says which physical GPU (index, UUID, PCI bus) each one is.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from dataclasses import dataclass

from ortgpu.env.nvml import DriverInfo, GpuInfo, map_visible_devices
from ortgpu.errors import BadInputError, EnvironmentUnfitError

__all__ = [
    "MAX_WORKERS",
    "DeviceKind",
    "DeviceSlot",
    "DeviceSpec",
    "DevicesError",
    "DevicesUnavailableError",
    "parse_devices",
    "plan_slots",
]

MAX_WORKERS = 256


class DevicesError(BadInputError):
    """A --devices value that cannot be used (exit 2)."""


class DevicesUnavailableError(EnvironmentUnfitError):
    """This machine does not have the devices asked for (exit 3)."""


class DeviceKind(enum.Enum):
    """What a worker runs on."""

    GPU = "gpu"
    CPU = "cpu"


@dataclass(frozen=True)
class DeviceSpec:
    """The parsed --devices value: GPU ids (``ids``), every visible GPU (``all_gpus``) or ``cpu_workers`` CPU
    worker processes."""

    ids: tuple[int, ...] = ()
    all_gpus: bool = False
    cpu_workers: int = 0

    @property
    def kind(self) -> DeviceKind:
        return DeviceKind.CPU if self.cpu_workers else DeviceKind.GPU

    @property
    def text(self) -> str:
        if self.cpu_workers:
            return f"cpu:{self.cpu_workers}"
        return "all" if self.all_gpus else ",".join(str(i) for i in self.ids)


@dataclass(frozen=True)
class DeviceSlot:
    """One worker process: where it runs and the environment it is started with.

    ``requested``: the device id the user named (None for a CPU worker). ``device_id``: what the worker passes
    to the CUDA EP. ``cuda_visible_devices``: set in the worker before ONNX Runtime loads (None: left as
    inherited). ``gpu``: the physical GPU, as NVML reports it (None for CPU workers).
    """

    index: int
    kind: DeviceKind
    requested: int | None
    device_id: int
    cuda_visible_devices: str | None
    gpu: GpuInfo | None = None

    @property
    def label(self) -> str:
        return f"gpu{self.requested}" if self.kind is DeviceKind.GPU else f"cpu{self.index}"

    def environment(self) -> dict[str, str]:
        """The variables the worker process sets before anything imports onnxruntime."""
        return {"CUDA_VISIBLE_DEVICES": self.cuda_visible_devices} if self.cuda_visible_devices is not None else {}


def parse_devices(text: str, flag: str = "--devices") -> DeviceSpec:
    """ "0,1" -> GPU ids; "all" -> every visible GPU; "cpu:4" -> four CPU worker processes."""
    raw = str(text).strip().lower()
    hint = f"e.g. {flag} 0,1 (CUDA device ids), {flag} all, or {flag} cpu:2 (CPU worker processes)"
    if raw == "all":
        return DeviceSpec(all_gpus=True)
    if raw.startswith("cpu"):
        count = raw[3:].lstrip(":").strip() or "1"
        if not count.isdigit() or not 1 <= int(count) <= MAX_WORKERS:
            raise DevicesError(f"{flag} {text!r}: {count!r} is not a worker count from 1 to {MAX_WORKERS}", hint)
        return DeviceSpec(cpu_workers=int(count))
    ids: list[int] = []
    for part in raw.split(","):
        part = part.strip()
        if not part.isdigit():
            raise DevicesError(f"{flag} {text!r}: {part!r} is not a CUDA device id", hint)
        if int(part) in ids:
            raise DevicesError(f"{flag} {text!r}: device {part} is named twice", "name each GPU once")
        ids.append(int(part))
    if len(ids) > MAX_WORKERS:
        raise DevicesError(f"{flag} {text!r}: more than {MAX_WORKERS} devices", hint)
    return DeviceSpec(ids=tuple(ids))


def plan_slots(
    spec: DeviceSpec,
    *,
    gpu_ep: bool,
    driver: DriverInfo | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[DeviceSlot, ...]:
    """One slot per worker process. ``gpu_ep``: the run is on a GPU EP (the devices must then be GPUs).

    ``driver`` defaults to NVML's answer on this machine; ``environ`` to os.environ (this process's
    CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER say what the ids mean). Raises DevicesError (exit 2) for GPU ids
    with the CPU EP or CPU workers with a GPU EP, DevicesUnavailableError (exit 3) when a named GPU is not here.
    """
    environ = os.environ if environ is None else environ
    if spec.kind is DeviceKind.CPU:
        if gpu_ep:
            raise DevicesError(
                f"--devices {spec.text} starts CPU workers, but the run is on a GPU execution provider",
                "give GPU ids (--devices 0,1 or all), or --ep cpu",
            )
        return tuple(DeviceSlot(i, DeviceKind.CPU, None, 0, None) for i in range(spec.cpu_workers))
    if not gpu_ep:
        raise DevicesError(
            f"--devices {spec.text} names GPUs, but the run is on the CPU execution provider",
            f"use --devices cpu:{max(len(spec.ids), 1)} for that many CPU worker processes, or --ep cuda on a GPU",
        )
    if driver is None:
        from ortgpu.env.nvml import query_driver

        driver = query_driver(environ=environ)
    if not driver.present or not driver.gpus:
        reason = driver.error or "NVML lists no GPU"
        raise DevicesUnavailableError(
            f"--devices {spec.text}: no NVIDIA GPU to run on ({reason})", "run `ortgpu doctor` to see why"
        )
    visible = map_visible_devices(driver.gpus, environ.get("CUDA_VISIBLE_DEVICES"), environ.get("CUDA_DEVICE_ORDER"))
    if not visible.devices:
        why = visible.note or f"CUDA_VISIBLE_DEVICES={visible.variable!r} leaves no GPU visible"
        raise DevicesUnavailableError(
            f"--devices {spec.text}: {why}", "set CUDA_VISIBLE_DEVICES to GPU indices or UUIDs, or unset it"
        )
    by_id = {d.device_id: d.gpu for d in visible.devices}
    ids = tuple(sorted(by_id)) if spec.all_gpus else spec.ids
    missing = [i for i in ids if i not in by_id]
    if missing:
        shown = ", ".join(f"{i} ({g.name}, {g.uuid})" for i, g in sorted(by_id.items()))
        where = f" under CUDA_VISIBLE_DEVICES={visible.variable}" if visible.variable is not None else ""
        raise DevicesUnavailableError(
            f"--devices {spec.text}: no CUDA device {missing[0]} here{where}; visible: {shown}",
            "name visible device ids, or --devices all",
        )
    return tuple(DeviceSlot(n, DeviceKind.GPU, i, 0, by_id[i].uuid, by_id[i]) for n, i in enumerate(ids))
