"""Hints grounded in the profile's numbers: each one quotes the share it is about and names the next step."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ortgpu.ep import ExecutionProvider
from ortgpu.profile.result import (
    CpuNodeTime,
    FusionReport,
    GpuTiming,
    Hint,
    HintKind,
    MemcpyReport,
    OpRow,
    RunTimes,
)

__all__ = ["DOMINANT_SHARE", "REASONS", "HintInputs", "make_hints"]

DOMINANT_SHARE = 0.4  # one op type at or above this share of the node time gets its own hint
COPY_SHARE = 0.05
CPU_SHARE = 0.05
LOW_COVERAGE = 0.5  # nodes cover less than this share of a run's wall time

REASONS = {
    "no-kernel": "the CUDA EP has no kernel for it",
    "cpu-preferred": "ORT keeps it on the CPU on purpose (it computes shapes)",
    "unknown": "ORT logged no reason",
}
_CONV = frozenset({"Conv", "ConvTranspose", "FusedConv", "NhwcConv"})
_MATMUL = frozenset(
    {"MatMul", "Gemm", "FusedMatMul", "Attention", "MultiHeadAttention", "GroupQueryAttention", "FusedGemm"}
)


@dataclass(frozen=True)
class HintInputs:
    ep: ExecutionProvider
    ops: Sequence[OpRow]
    memcpy: MemcpyReport
    cpu_nodes: Sequence[CpuNodeTime]
    cpu_share: float
    run_times: RunTimes
    fusion: FusionReport
    gpu_timing: GpuTiming | None
    graph_optimization_level: str
    provider_options: dict[str, str]


def _us(value: float) -> str:
    return f"{value / 1000:.3f} ms" if value >= 1000 else f"{value:.1f} µs"


def _dominant(inputs: HintInputs) -> Hint | None:
    by_op: dict[str, float] = {}
    nodes: dict[str, int] = {}
    for row in inputs.ops:
        if row.share is None:
            continue
        by_op[row.op_type] = by_op.get(row.op_type, 0.0) + row.share
        nodes[row.op_type] = nodes.get(row.op_type, 0) + row.nodes
    if not by_op:
        return None
    op, share = max(by_op.items(), key=lambda kv: kv[1])
    if share < DOMINANT_SHARE:
        return None
    head = f"{op} is {share:.0%} of the node time ({nodes[op]} node(s))"
    if inputs.ep.is_gpu and op in _CONV:
        nhwc = inputs.provider_options.get("prefer_nhwc") == "1"
        step = (
            "try fp16 (`ortgpu fp16` / `ortgpu tune`); prefer_nhwc is already on"
            if nhwc
            else "try prefer_nhwc and fp16 (`ortgpu tune`)"
        )
    elif inputs.ep.is_gpu and op in _MATMUL:
        step = "fp16 puts it on tensor cores (`ortgpu fp16` / `ortgpu tune`)"
    elif not inputs.ep.is_gpu and op in _CONV | _MATMUL:
        step = "on the CPU EP this is arithmetic-bound: more intra-op threads, or a GPU EP"
    else:
        step = "see its nodes in the per-node table"
    return Hint(HintKind.DOMINANT_OP, f"{head}: {step}")


def _memcpy(inputs: HintInputs) -> Hint | None:
    copies = inputs.memcpy
    if not copies.nodes or copies.share < COPY_SHARE:
        return None
    served = ", ".join(copies.serves[:3]) + (f" and {len(copies.serves) - 3} more" if len(copies.serves) > 3 else "")
    because = f": they feed {served}" if served else ""
    return Hint(
        HintKind.MEMCPY,
        f"Memcpy is {copies.share:.0%} of the node time ({copies.calls_per_run:g} copies, {_us(copies.per_run_us)} "
        f"per run){because}; with every node on the GPU none is needed (`ortgpu inspect` names the nodes without a "
        "CUDA kernel)",
    )


def _cpu(inputs: HintInputs) -> Hint | None:
    if not inputs.ep.is_gpu or not inputs.cpu_nodes or inputs.cpu_share < CPU_SHARE:
        return None
    top = inputs.cpu_nodes[0]
    why = REASONS.get(top.reason or "", "not in ORT's placement log")
    return Hint(
        HintKind.CPU_IN_GPU_RUN,
        f"{len(inputs.cpu_nodes)} node(s) on the CPU EP take {inputs.cpu_share:.0%} of the node time of this GPU run; "
        f"the largest, {top.op_type} ({top.name}, {top.share:.0%}), fell back to CPU because {why}",
    )


def _coverage(inputs: HintInputs) -> Hint | None:
    times = inputs.run_times
    if not times.runs or times.node_coverage >= LOW_COVERAGE:
        return None
    outside = 1 - times.node_coverage
    if inputs.gpu_timing is GpuTiming.ASYNC:
        return Hint(
            HintKind.TIMING,
            f"the nodes account for {times.node_coverage:.0%} of a run: with asynchronous launches a node's time is "
            "the host launching it, the GPU works behind; profile with synchronous launches for per-node GPU time",
        )
    if inputs.ep.is_gpu:
        return Hint(
            HintKind.OUTSIDE_NODES,
            f"{outside:.0%} of a run is outside the nodes: input and output copies and ORT's own work; try IO "
            "binding and CUDA graphs (the iobinding and cudagraph modes of `ortgpu bench`)",
        )
    return Hint(
        HintKind.OUTSIDE_NODES,
        f"{outside:.0%} of a run is outside the nodes (ORT's own "
        "work around them): the model is small enough for per-run overhead to matter; batch requests together",
    )


def _fusion(inputs: HintInputs) -> Hint | None:
    fusion = inputs.fusion
    if not fusion.available or fusion.removed or fusion.created or inputs.graph_optimization_level == "all":
        return None
    return Hint(
        HintKind.NO_FUSION,
        f"graph_optimization_level is {inputs.graph_optimization_level!r} and ORT fused nothing in "
        f'{fusion.original_nodes} nodes; "all" (the default) enables its fusions',
    )


def make_hints(inputs: HintInputs) -> tuple[Hint, ...]:
    """Every hint the numbers support, most important first."""
    found = (_memcpy(inputs), _cpu(inputs), _dominant(inputs), _coverage(inputs), _fusion(inputs))
    return tuple(h for h in found if h is not None)
