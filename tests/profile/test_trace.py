"""Reading ORT's chrome trace: warm-up runs left out, If/Loop not double counted, Memcpy apart, kernels attached."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ortgpu.errors import ExitCode
from ortgpu.profile import trace as t

CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"


def _run(ts: float, dur: float) -> dict[str, Any]:
    return {"cat": "Session", "name": "model_run", "ts": ts, "dur": dur, "ph": "X", "args": {}}


def _node(name: str, op: str, provider: str, ts: float, dur: float) -> dict[str, Any]:
    return {
        "cat": "Node",
        "name": f"{name}_kernel_time",
        "ts": ts,
        "dur": dur,
        "ph": "X",
        "args": {"op_name": op, "provider": provider},
    }


def _kernel(name: str, ts: float, dur: float) -> dict[str, Any]:
    return {"cat": "Kernel", "name": name, "ts": ts, "dur": dur, "ph": "X", "args": {"op_name": "x"}}


def _gpu_trace() -> list[dict[str, Any]]:
    """Three runs of conv -> det (on CPU, with its two copies) -> an If whose branch holds one Relu."""
    events: list[dict[str, Any]] = [{"cat": "Session", "name": "session_initialization", "ts": 0, "dur": 50}]
    for i, start in enumerate((100.0, 1000.0, 2000.0)):
        slow = 1000.0 if i == 0 else 1.0  # the warm-up run is slow: it must not reach the tables
        events += [
            _node("conv", "Conv", CUDA, start + 1, 50 * slow),
            _kernel("implicit_gemm_kernel", start + 2, 40),
            _kernel("bias_relu_kernel", start + 3, 5),
            _node("to_host", "MemcpyToHost", CUDA, start + 60, 20),
            _node("det", "Det", CPU, start + 90, 10),
            _node("from_host", "MemcpyFromHost", CUDA, start + 110, 20),
            _node("relu", "Relu", CUDA, start + 140, 10),  # inside the If's branch, recorded first
            _node("branch", "If", CUDA, start + 135, 15),
            _run(start, 200),
        ]
    return events


def test_warmup_runs_are_left_out_and_runs_are_counted() -> None:
    trace = t.parse_trace(_gpu_trace(), warmup=1)
    assert len(trace.runs) == 2 and trace.warmup_seen == 1
    assert {n.run for n in trace.nodes} == {0, 1}
    conv = next(r for r in t.node_rows(trace) if r.name == "conv")
    assert conv.calls == 2 and conv.total_us == 100 and conv.per_run_us == 50


def test_control_flow_time_is_not_counted_twice() -> None:
    trace = t.parse_trace(_gpu_trace(), warmup=1)
    # conv 50 + copies 40 + det 10 + relu 10: the If's 15 is the Relu again plus its own overhead
    assert t.node_time_per_run(trace) == 110
    rows = {(r.op_type, r.provider): r for r in t.op_rows(trace)}
    assert rows[("If", CUDA)].share is None and rows[("If", CUDA)].contains_subgraph
    assert rows[("Conv", CUDA)].share == pytest.approx(50 / 110)
    assert sum(r.share for r in rows.values() if r.share is not None) == pytest.approx(1.0)
    assert list(rows)[-1] == ("If", CUDA)  # listed last, after every op that counts


def test_provider_share_counts_memcpy_apart() -> None:
    shares = t.provider_share(t.parse_trace(_gpu_trace(), warmup=1))
    assert shares == pytest.approx({CUDA: 60 / 110, "Memcpy": 40 / 110, CPU: 10 / 110})
    assert list(shares) == [CUDA, "Memcpy", CPU]


def test_kernel_events_belong_to_the_node_before_them() -> None:
    trace = t.parse_trace(_gpu_trace(), warmup=1)
    rows = t.kernel_rows(trace, top=10)
    assert [(r.kernel, r.node, r.op_type, r.calls, r.per_run_us) for r in rows] == [
        ("implicit_gemm_kernel", "conv", "Conv", 2, 40.0),
        ("bias_relu_kernel", "conv", "Conv", 2, 5.0),
    ]


def test_run_times_and_coverage_use_the_profiled_runs() -> None:
    times = t.run_times(t.parse_trace(_gpu_trace(), warmup=1))
    assert (times.runs, times.mean_us, times.median_us, times.min_us) == (2, 200, 200, 200)
    assert times.node_us_per_run == 110 and times.node_coverage == pytest.approx(110 / 200)


def test_timeline_is_the_median_run_from_its_start() -> None:
    entries = t.timeline(t.parse_trace(_gpu_trace(), warmup=1))
    assert entries[0].name == "conv" and entries[0].start_us == 1 and entries[0].dur_us == 50
    assert len(entries) == 6


def test_events_outside_any_run_and_foreign_events_are_ignored() -> None:
    events = [
        _node("loose", "Relu", CPU, 5, 3),  # before any run (session initialisation)
        {"cat": "Node", "name": "x_fence_before", "ts": 101, "dur": 1, "args": {"op_name": "Relu"}},
        {"cat": "Node", "name": "y_kernel_time", "ts": 102, "dur": 1, "args": "not a dict"},
        _node("inside", "Relu", CPU, 103, 4),
        _run(100, 10),
        "not an event",
    ]
    trace = t.parse_trace([e for e in events if isinstance(e, dict)], warmup=0)
    assert [n.name for n in trace.nodes] == ["inside"]


def test_more_warmup_than_runs_leaves_nothing(tmp_path: Path) -> None:
    trace = t.parse_trace(_gpu_trace(), warmup=5)
    assert trace.runs == () and trace.nodes == () and trace.warmup_seen == 3
    assert t.run_times(trace).runs == 0


def test_read_trace_accepts_both_layouts_and_refuses_garbage(tmp_path: Path) -> None:
    plain, wrapped, broken = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    plain.write_text(json.dumps(_gpu_trace()))
    wrapped.write_text(json.dumps({"traceEvents": _gpu_trace()}))
    broken.write_text('[{"cat": "Node"')
    assert len(t.read_trace(plain)) == len(t.read_trace(wrapped)) == len(_gpu_trace())
    with pytest.raises(t.TraceError) as exc:
        t.read_trace(broken)
    assert exc.value.exit_code == ExitCode.CHECK_FAILED and "\n" not in exc.value.one_line()
