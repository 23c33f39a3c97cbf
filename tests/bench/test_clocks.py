"""The auto warm-up waits for the GPU's SM clock (near its maximum or stable) as well as for the latency."""

from __future__ import annotations

import time

from ortgpu.bench import wheel as wheel_module
from ortgpu.bench.clocks import ClockWatch
from ortgpu.bench.hints import bench_hints
from ortgpu.bench.modes import BenchMode
from ortgpu.bench.result import BenchCase, CaseStatus, WarmupReport
from ortgpu.bench.stats import compute_stats
from ortgpu.ep import ExecutionProvider


class FakeNvml:
    """pynvml's shape: the SM clock follows ``clocks`` one reading at a time, then stays at the last value."""

    NVML_CLOCK_SM = 1

    def __init__(self, clocks: list[int], max_mhz: int = 1980) -> None:
        self.clocks = list(clocks)
        self.max_mhz = max_mhz
        self.reads = 0

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return f"gpu{index}"

    def nvmlDeviceGetMaxClockInfo(self, handle: str, kind: int) -> int:
        return self.max_mhz

    def nvmlDeviceGetClockInfo(self, handle: str, kind: int) -> int:
        value = self.clocks[min(self.reads, len(self.clocks) - 1)]
        self.reads += 1
        return value


def _step() -> None:
    time.sleep(0.0002)  # a steady latency: settles in three windows


def test_the_warm_up_goes_on_until_the_clock_reached_its_maximum() -> None:
    ramp = [345, 345, 345, 600, 900, 1300, 1700, 1980]
    watch = ClockWatch(0, FakeNvml([345, *ramp]))
    report, _ = wheel_module._warm_up(_step, None, 5.0, watch)
    assert report.settled
    assert watch.readings[-1] == 1980 and len(watch.readings) >= 7  # latency alone would have stopped at 3
    clocks = watch.result()
    assert clocks.ready and clocks.before_warmup_mhz == 345 and clocks.after_warmup_mhz == 1980
    assert clocks.why == "near max (1980 of 1980 MHz)"


def test_a_clock_that_holds_below_its_maximum_counts_once_stable() -> None:
    watch = ClockWatch(0, FakeNvml([345, 1200, 1500, 1500, 1510, 1505]))
    report, _ = wheel_module._warm_up(_step, None, 5.0, watch)
    assert report.settled
    assert watch.result().why.startswith("stable at 15")


def test_a_clock_still_moving_at_the_time_limit_leaves_the_warm_up_unsettled_and_says_so() -> None:
    climbing = list(range(345, 1980, 5))
    watch = ClockWatch(0, FakeNvml(climbing))
    report, _ = wheel_module._warm_up(_step, None, 0.3, watch)
    assert not report.settled
    clocks = watch.result()
    assert not clocks.ready and clocks.why.startswith("still moving")
    case = BenchCase(
        ExecutionProvider.CUDA, BenchMode.RUN, 1, 1, 1, CaseStatus.OK,
        stats=compute_stats([1000] * 50, 1, 0.01),
        warmup=WarmupReport(report.runs, report.seconds, False, "auto", clocks),
    )  # fmt: skip
    hints = bench_hints([case], _model_info(), ExecutionProvider.CUDA, False, "asked", False)
    assert any("or the GPU clock (still moving" in h.message for h in hints)


def test_a_counted_warm_up_records_the_clock_without_waiting() -> None:
    watch = ClockWatch(0, FakeNvml([345, 400]))
    report, _ = wheel_module._warm_up(_step, 3, 5.0, watch)
    assert report.runs == 3 and report.settled
    assert watch.result().after_warmup_mhz == 400


def test_without_nvml_nothing_waits_and_the_result_says_the_clock_was_not_read() -> None:
    watch = ClockWatch(0, nvml=None)
    watch.nvml, watch.handle = None, None
    report, _ = wheel_module._warm_up(_step, None, 5.0, watch)
    assert report.settled
    assert watch.result().why == "not read (NVML unavailable)"


def _model_info():
    from ortgpu.model.inspect import ModelInfo

    return ModelInfo(
        path=__import__("pathlib").Path("m.onnx"), sha256="0", size_bytes=1, ir_version=8, opsets={}, producer="",
        inputs=(), outputs=(), node_count=0, op_types={}, external_data=(),
    )  # fmt: skip
