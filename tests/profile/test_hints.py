"""Hints quote the numbers they are about, and only appear when the numbers support them."""

from __future__ import annotations

from ortgpu.ep import ExecutionProvider
from ortgpu.profile.hints import HintInputs, make_hints
from ortgpu.profile.result import (
    CpuNodeTime,
    FusionReport,
    GpuTiming,
    HintKind,
    MemcpyReport,
    OpRow,
    RunTimes,
)

CUDA = "CUDAExecutionProvider"
NO_COPIES = MemcpyReport(0, 0.0, 0.0, 0.0, (), ())
STEADY = RunTimes(10, 1000.0, 1000.0, 990.0, 900.0, 0.9)
FUSED = FusionReport(True, "", 10, 8, {}, {}, {"Relu": 2}, {"com.microsoft:FusedConv": 1})


def _op(op: str, share: float | None, provider: str = CUDA, nodes: int = 1) -> OpRow:
    return OpRow(op, provider, nodes, nodes, share or 0.0, share or 0.0, 1.0, share)


def _inputs(**changes: object) -> HintInputs:
    base: dict[str, object] = {
        "ep": ExecutionProvider.CUDA,
        "ops": [_op("Conv", 0.3), _op("Relu", 0.35), _op("Add", 0.35)],
        "memcpy": NO_COPIES,
        "cpu_nodes": (),
        "cpu_share": 0.0,
        "run_times": STEADY,
        "fusion": FUSED,
        "gpu_timing": GpuTiming.SYNC,
        "graph_optimization_level": "all",
        "provider_options": {},
    }
    base.update(changes)
    return HintInputs(**base)  # type: ignore[arg-type]


def test_no_hint_when_nothing_stands_out() -> None:
    assert make_hints(_inputs(ops=[_op("Conv", 0.3), _op("Relu", 0.35), _op("Add", 0.35)])) == ()


def test_conv_dominant_on_gpu_suggests_nhwc_and_fp16() -> None:
    hints = make_hints(_inputs(ops=[_op("Conv", 0.92, nodes=53), _op("Relu", 0.08)]))
    assert [h.kind for h in hints] == [HintKind.DOMINANT_OP]
    assert hints[0].message.startswith("Conv is 92% of the node time (53 node(s))")
    assert "prefer_nhwc" in hints[0].message and "ortgpu tune" in hints[0].message


def test_conv_with_nhwc_already_on_only_suggests_fp16() -> None:
    hints = make_hints(_inputs(ops=[_op("Conv", 0.9)], provider_options={"prefer_nhwc": "1"}))
    assert "already on" in hints[0].message


def test_an_op_split_over_providers_is_summed() -> None:
    ops = [_op("MatMul", 0.3), _op("MatMul", 0.2, provider="CPUExecutionProvider"), _op("Add", 0.45)]
    hints = make_hints(_inputs(ops=ops))
    assert hints[0].message.startswith("MatMul is 50% of the node time (2 node(s))")
    assert "tensor cores" in hints[0].message


def test_memcpy_hint_names_the_node_that_fell_back_and_why() -> None:
    copies = MemcpyReport(
        2, 2.0, 300.0, 0.3, (), ("Det (det), which fell back to CPU because the CUDA EP has no kernel",)
    )
    hints = make_hints(_inputs(memcpy=copies))
    assert hints[0].kind is HintKind.MEMCPY
    assert hints[0].message.startswith("Memcpy is 30% of the node time (2 copies, 300.0 µs per run)")
    assert "Det (det), which fell back to CPU because the CUDA EP has no kernel" in hints[0].message


def test_small_memcpy_share_gets_no_hint() -> None:
    copies = MemcpyReport(2, 2.0, 10.0, 0.01, (), ("Det (det)",))
    assert all(h.kind is not HintKind.MEMCPY for h in make_hints(_inputs(memcpy=copies)))


def test_cpu_nodes_in_a_gpu_run_are_named_with_their_reason() -> None:
    nodes = (CpuNodeTime("shape_of", "Shape", 40.0, 0.2, "cpu-preferred"),)
    hints = make_hints(_inputs(cpu_nodes=nodes, cpu_share=0.2))
    assert hints[0].kind is HintKind.CPU_IN_GPU_RUN
    assert "Shape (shape_of, 20%)" in hints[0].message and "on purpose" in hints[0].message


def test_async_low_coverage_says_what_node_times_mean() -> None:
    times = RunTimes(10, 1000.0, 1000.0, 990.0, 100.0, 0.1)
    hints = make_hints(_inputs(run_times=times, gpu_timing=GpuTiming.ASYNC))
    assert [h.kind for h in hints] == [HintKind.TIMING]
    assert "10% of a run" in hints[0].message


def test_sync_low_coverage_points_at_copies_and_cuda_graphs() -> None:
    times = RunTimes(10, 1000.0, 1000.0, 990.0, 300.0, 0.3)
    hints = make_hints(_inputs(run_times=times))
    assert [h.kind for h in hints] == [HintKind.OUTSIDE_NODES]
    assert "70% of a run is outside the nodes" in hints[0].message
    assert "cudagraph modes of `ortgpu bench`" in hints[0].message


def test_no_fusion_hint_only_below_level_all() -> None:
    unchanged = FusionReport(True, "", 10, 10, {}, {}, {}, {})
    assert make_hints(_inputs(fusion=unchanged)) == ()
    hints = make_hints(_inputs(fusion=unchanged, graph_optimization_level="disable"))
    assert [h.kind for h in hints] == [HintKind.NO_FUSION] and "'disable'" in hints[0].message
