"""Several GPUs and several machines: device lists, one worker process per device, and the Ray connection."""

from __future__ import annotations

from ortgpu.scale.devices import DeviceKind, DevicesError, DeviceSlot, DeviceSpec, parse_devices, plan_slots

__all__ = ["DeviceKind", "DeviceSlot", "DeviceSpec", "DevicesError", "parse_devices", "plan_slots"]
