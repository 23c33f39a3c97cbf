"""GPU clocks around a bench case: the warm-up waits until the SM clock is near its maximum or has stopped moving.

An idle GPU sits at a low clock (the lent H200: 345 MHz, max 1980 MHz) and takes a while under load to reach its
clocks; a warm-up that stops when the latency looks flat for 0.15 s can stop before that. NVML is read once per
warm-up window (tens of microseconds), never inside the timed runs.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Any

from ortgpu.bench.environment import nvml_index_for
from ortgpu.host import nvml

__all__ = ["CLOCK_FLOOR", "CLOCK_NEAR_MAX", "CLOCK_STABLE", "ClockWatch", "GpuClocks"]

CLOCK_NEAR_MAX = 0.90  # ready at or above this share of the maximum SM clock ...
CLOCK_STABLE = 0.03  # ... or when the last three readings agree within 3% (a power- or launch-bound GPU holds lower)
CLOCK_FLOOR = 0.50  # ... above half the maximum: a clock flat at its idle value (345 of 1980 MHz) has not ramped yet
_READINGS = 3


@dataclass(frozen=True)
class GpuClocks:
    """The SM clock (MHz) as NVML read it around one case. ``ready``: near its maximum or stable when the warm-up
    ended (``why`` says which, or why not); ``readings`` were taken once per warm-up window."""

    max_mhz: int | None
    before_warmup_mhz: int | None
    after_warmup_mhz: int | None
    after_measurement_mhz: int | None
    ready: bool
    why: str
    readings: tuple[int, ...] = ()


_lock = threading.Lock()
_nvml: list[Any] = []  # the initialised pynvml module, once


def _default_nvml() -> Any | None:
    with _lock:
        if not _nvml:
            try:
                import pynvml

                pynvml.nvmlInit()
            except Exception:  # no binding, no driver, no library: clocks are then "not read", said in the result
                return None
            _nvml.append(pynvml)
        return _nvml[0]


class ClockWatch:
    """Reads the SM clock of one GPU (NVML numbering). ``nvml``: anything shaped like pynvml (tests pass a fake)."""

    def __init__(self, index: int, nvml: Any = None) -> None:
        self.nvml = nvml if nvml is not None else _default_nvml()
        self.handle = None
        self.max_mhz: int | None = None
        self.readings: list[int] = []
        self.before: int | None = None
        self.after_warmup: int | None = None
        if self.nvml is None:
            return
        with contextlib.suppress(Exception):
            self.handle = self.nvml.nvmlDeviceGetHandleByIndex(index)
            self.max_mhz = int(self.nvml.nvmlDeviceGetMaxClockInfo(self.handle, self.nvml.NVML_CLOCK_SM)) or None

    @classmethod
    def for_device(cls, device_id: int) -> ClockWatch | None:
        """The watch of CUDA device ``device_id`` (after CUDA_VISIBLE_DEVICES), or None when NVML cannot say."""

        index = nvml_index_for(device_id, nvml.query_driver().gpus)
        if index is None:
            return None
        watch = cls(index)
        return watch if watch.handle is not None else None

    def read(self) -> int | None:
        if self.handle is None or self.nvml is None:  # no handle without NVML: the second test is for the types
            return None
        try:
            return int(self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM))
        except Exception:  # NVML errors are not fatal to a bench: the clock is then unknown
            return None

    def start(self) -> None:
        self.before = self.read()
        self.readings = []

    def sample(self) -> bool:
        """Take one reading (once per warm-up window); True when the clock counts as ready."""
        value = self.read()
        if value is not None:
            self.readings.append(value)
        return self.status()[0]

    def status(self) -> tuple[bool, str]:
        if self.handle is None:
            return True, "not read (NVML unavailable)"
        if not self.readings:
            return False, "no reading yet"
        last = self.readings[-1]
        if self.max_mhz and last >= CLOCK_NEAR_MAX * self.max_mhz:
            return True, f"near max ({last} of {self.max_mhz} MHz)"
        recent = self.readings[-_READINGS:]
        floor = CLOCK_FLOOR * self.max_mhz if self.max_mhz else 0
        if len(recent) == _READINGS and max(recent) - min(recent) <= CLOCK_STABLE * max(recent) and last > floor:
            return True, f"stable at {last} MHz (max {self.max_mhz})"
        return False, f"still moving: {', '.join(map(str, recent))} MHz (max {self.max_mhz})"

    def warmed(self) -> None:
        self.after_warmup = self.readings[-1] if self.readings else self.read()

    def result(self) -> GpuClocks:
        """Called after the measurement: reads the clock once more and freezes what was seen."""
        ready, why = self.status() if self.readings else (False, "not sampled during the warm-up")
        if self.handle is None:
            ready, why = False, "not read (NVML unavailable)"
        return GpuClocks(
            max_mhz=self.max_mhz,
            before_warmup_mhz=self.before,
            after_warmup_mhz=self.after_warmup,
            after_measurement_mhz=self.read(),
            ready=ready,
            why=why,
            readings=tuple(self.readings[-20:]),
        )
