"""Bench hints: what the measured cases say about the bottleneck (launch-bound, copy-bound, threads) and what to try."""

from __future__ import annotations

from collections.abc import Sequence

from ortgpu.bench.modes import BenchMode
from ortgpu.bench.result import BenchCase, CaseStatus, Hint, HintKind
from ortgpu.ep import ExecutionProvider
from ortgpu.model.inspect import ModelInfo

__all__ = ["bench_hints"]

_LAUNCH_BOUND_US_PER_NODE = 20.0  # a GPU kernel launch costs ~5-10 µs: below this per node, launches dominate
_PCIE_BYTES_PER_S = 10e9  # pageable host<->device copies, for the copy-bound estimate


def bench_hints(
    cases: Sequence[BenchCase],
    model: ModelInfo,
    ep: ExecutionProvider,
    auto_ep: bool,
    ep_reason: str,
    interrupted: bool,
    intra_op_threads: int = 1,
) -> tuple[Hint, ...]:
    import os

    hints: list[Hint] = []
    measured = [c for c in cases if c.measured and c.stats is not None]
    by_key = {(c.ep, c.mode, c.batch, c.concurrency, c.sessions): c for c in measured}
    if auto_ep and not ep.is_gpu:
        hints.append(
            Hint(
                HintKind.CPU_ONLY,
                f"no GPU execution provider here ({ep_reason}): these are CPU numbers; run `ortgpu doctor` to see why",
            )
        )
    for case in cases:
        if case.status is CaseStatus.FAILED:
            hints.append(Hint(HintKind.FAILED, f"{case.key.label} failed: {case.reason}", case.key.label))
    unstable = [c for c in measured if not c.latency.stable]
    if unstable:
        worst = max(unstable, key=lambda c: c.latency.cv)
        names = ", ".join(c.key.label for c in unstable[:4]) + (
            f" and {len(unstable) - 4} more" if len(unstable) > 4 else ""
        )
        hints.append(
            Hint(
                HintKind.UNSTABLE,
                f"{len(unstable)} of {len(measured)} case(s) are not stable ({names}); "
                f"worst {worst.key.label}: "
                + "; ".join(worst.latency.problems)
                + ". Close other work, pin the clocks, measure longer (--duration)",
                worst.key.label,
            )
        )
    cores = os.cpu_count() or 1
    cpu_unstable = [c for c in unstable if not c.ep.is_gpu]
    if cpu_unstable and (intra_op_threads == 0 or intra_op_threads >= cores):
        # ORT's intra-op pool on every core competes with the timing thread: workers get descheduled for a tick
        hints.append(
            Hint(
                HintKind.UNSTABLE,
                f"the CPU EP's thread pool uses every core ({cores}), so its workers compete with the calling "
                f"thread and stall for milliseconds: set [session] intra_op_num_threads = {max(1, cores - 1)} "
                "in an ortgpu.toml (--config) and compare",
                cpu_unstable[0].key.label,
            )
        )
    unsettled = [c for c in measured if c.warmup is not None and not c.warmup.settled]
    if unsettled:
        hints.append(
            Hint(
                HintKind.WARMUP_UNSETTLED,
                f"latency{_clock_note(unsettled)} was still moving at the end of warm-up in "
                f"{len(unsettled)} case(s) ({', '.join(c.key.label for c in unsettled[:4])}); give "
                "--warmup N with a larger N",
                unsettled[0].key.label,
            )
        )
    found: dict[str, list[tuple[str, str]]] = {}  # hint text key -> [(where, detail)], one hint per key below

    def note(kind: str, case: BenchCase, detail: str) -> None:
        where = f"batch {case.batch}" + (f" x{case.concurrency}" if case.concurrency > 1 else "")
        found.setdefault(kind, []).append((where, detail))

    for case in measured:
        if not case.ep.is_gpu:
            continue
        stats = case.latency
        rest = (case.batch, case.concurrency, case.sessions)
        graph = by_key.get((case.ep, BenchMode.CUDAGRAPH, *rest))
        bound = by_key.get((case.ep, BenchMode.IOBINDING, *rest))
        if case.mode is BenchMode.IOBINDING and graph is not None and graph.latency.p50_ms < 0.9 * stats.p50_ms:
            saved = 1 - graph.latency.p50_ms / stats.p50_ms
            note("launch", case, f"{saved:.0%} ({stats.p50_ms:.3f} -> {graph.latency.p50_ms:.3f} ms)")
        elif case.mode is BenchMode.RUN and graph is None and model.node_count:
            per_node_us = stats.p50_ms * 1e3 / model.node_count
            if per_node_us < _LAUNCH_BOUND_US_PER_NODE:
                note("launch?", case, f"{per_node_us:.1f} µs per node")
        if case.mode is BenchMode.RUN and bound is not None and stats.p50_ms > 1.1 * bound.latency.p50_ms:
            share = 1 - bound.latency.p50_ms / stats.p50_ms
            note("copy", case, f"{share:.0%} ({stats.p50_ms:.3f} vs {bound.latency.p50_ms:.3f} ms)")
        elif case.mode is BenchMode.RUN and bound is None:
            copy_ms = _io_bytes(case, model) / _PCIE_BYTES_PER_S * 1e3
            if copy_ms > 0.2 * stats.p50_ms:
                note("copy?", case, f"~{copy_ms:.3f} of {stats.p50_ms:.3f}")
        if case.speedup_vs_cpu is not None and case.speedup_vs_cpu < 1.0:
            note("slower", case, f"{case.mode.value} takes {1 / case.speedup_vs_cpu:.1f}x the CPU time")
    texts = {
        "launch": (
            HintKind.LAUNCH_BOUND,
            "CUDA graph replay cut p50 against IO binding by {}: kernel launches dominate; use --mode cudagraph "
            "where input shapes are fixed",
        ),
        "launch?": (
            HintKind.LAUNCH_BOUND,
            "likely: {} (" + str(model.node_count) + " nodes), near the cost of a kernel launch; try --mode cudagraph",
        ),
        "copy": (
            HintKind.COPY_BOUND,
            "host<->device copies take {} of a numpy run (against IO binding); keep the data on the device "
            "(--mode iobinding)",
        ),
        "copy?": (
            HintKind.COPY_BOUND,
            "likely: copying the inputs takes {} ms per run at ~10 GB/s; try --mode iobinding",
        ),
        "slower": (
            HintKind.GPU_SLOWER_THAN_CPU,
            "{}: the model is too small for the GPU; batch more requests together, or serve it on the CPU",
        ),
    }
    for key, items in found.items():
        kind, template = texts[key]
        details = ", ".join(f"{detail} at {where}" for where, detail in items)
        hints.append(Hint(kind, template.format(details), None))
    if interrupted:
        hints.append(Hint(HintKind.INTERRUPTED, "only the cases that finished are reported"))
    return tuple(hints)


def _clock_note(cases: Sequence[BenchCase]) -> str:
    moving = [c.warmup.clocks for c in cases if c.warmup and c.warmup.clocks and not c.warmup.clocks.ready]
    return f" or the GPU clock ({moving[0].why})" if moving else ""


def _io_bytes(case: BenchCase, model: ModelInfo) -> int:
    import numpy as np

    total = 0
    for info in model.inputs:
        shape = case.shapes.get(info.name)
        if shape is not None and info.dtype != "object":
            total += int(np.prod(shape, dtype=np.int64)) * np.dtype(info.dtype).itemsize
    return total
