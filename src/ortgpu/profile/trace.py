"""ORT's chrome-trace profile: split into runs (warm-up apart) and summed per node, op type and provider."""

from __future__ import annotations

import bisect
import json
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ortgpu.errors import CheckFailedError
from ortgpu.placement import MEMCPY_OP_TYPES
from ortgpu.profile.result import KernelRow, NodeRow, OpRow, RunTimes, TimelineEntry

__all__ = [
    "CONTROL_FLOW_OPS",
    "KernelEvent",
    "NodeEvent",
    "Trace",
    "TraceError",
    "kernel_rows",
    "node_rows",
    "op_rows",
    "parse_trace",
    "provider_share",
    "read_trace",
    "run_times",
    "timeline",
]

# Their kernel time is the time of the subgraph they run, whose nodes ORT records on their own.
CONTROL_FLOW_OPS = frozenset({"If", "Loop", "Scan"})
MEMCPY = "Memcpy"


class TraceError(CheckFailedError):
    """ORT's profile file could not be read or holds no profiled run (exit 1: the run happened, the proof did not)."""


@dataclass(frozen=True)
class NodeEvent:
    name: str  # the node's name as ORT ran it (after optimisation), or OpType_index for unnamed nodes
    op_type: str
    provider: str
    ts: float  # microseconds since the profiler started
    dur: float
    run: int  # index among the profiled runs

    @property
    def is_control_flow(self) -> bool:
        return self.op_type in CONTROL_FLOW_OPS


@dataclass(frozen=True)
class KernelEvent:
    kernel: str
    node: str
    op_type: str
    dur: float
    run: int


@dataclass(frozen=True)
class Trace:
    """The profiled runs of one trace (warm-up runs dropped) and what ran inside them."""

    runs: tuple[tuple[float, float], ...]  # (start, duration) of each profiled run
    warmup_seen: int  # warm-up runs found in the trace and left out
    nodes: tuple[NodeEvent, ...]
    kernels: tuple[KernelEvent, ...]


def read_trace(path: Path) -> list[Mapping[str, Any]]:
    """The event list of the JSON ``InferenceSession.end_profiling()`` wrote."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TraceError(
            f"cannot read ORT's profile {path}: {exc}", "re-run; the profile was not written whole"
        ) from None
    if isinstance(doc, dict):  # some writers wrap the list
        doc = doc.get("traceEvents", [])
    if not isinstance(doc, list):
        raise TraceError(f"ORT's profile {path} is not a list of trace events", "re-run the profile")
    return [e for e in doc if isinstance(e, dict)]


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def parse_trace(events: Iterable[Mapping[str, Any]], warmup: int) -> Trace:
    """Split ``events`` into runs by ORT's ``model_run`` events; the first ``warmup`` runs are left out.

    Node events are ``cat == "Node"`` named ``<node>_kernel_time`` with ``args.op_name`` / ``args.provider``; kernel
    events (``cat == "Kernel"``, CUDA profiling builds) follow the node event they ran for.
    """
    events = list(events)
    all_runs = sorted(
        (_number(e.get("ts")), _number(e.get("dur")))
        for e in events
        if e.get("cat") == "Session" and e.get("name") == "model_run"
    )
    profiled = tuple(all_runs[warmup:])
    starts = [start for start, _ in profiled]
    nodes: list[NodeEvent] = []
    kernels: list[KernelEvent] = []
    parent: NodeEvent | None = None
    for event in events:
        category = event.get("cat")
        if category == "Node":
            name = str(event.get("name", ""))
            given = event.get("args")
            args: Mapping[str, Any] = given if isinstance(given, dict) else {}
            if not name.endswith("_kernel_time") or not args.get("op_name"):
                parent = None
                continue
            ts, dur = _number(event.get("ts")), _number(event.get("dur"))
            index = bisect.bisect_right(starts, ts) - 1
            if index < 0 or ts > profiled[index][0] + profiled[index][1]:
                parent = None
                continue
            parent = NodeEvent(
                name.removesuffix("_kernel_time"),
                str(args["op_name"]),
                str(args.get("provider") or "unknown"),
                ts,
                dur,
                index,
            )
            nodes.append(parent)
        elif category == "Kernel" and parent is not None:
            kernels.append(
                KernelEvent(
                    str(event.get("name", "")), parent.name, parent.op_type, _number(event.get("dur")), parent.run
                )
            )
    return Trace(profiled, min(warmup, len(all_runs)), tuple(nodes), tuple(kernels))


def _runs(trace: Trace) -> int:
    return max(len(trace.runs), 1)


def node_time_per_run(trace: Trace) -> float:
    """Node time of a run: every node, but not If/Loop/Scan, whose time is their subgraph's nodes' again."""
    return sum(n.dur for n in trace.nodes if not n.is_control_flow) / _runs(trace)


def _share(total: float, grand: float, control_flow: bool) -> float | None:
    if control_flow:
        return None
    return total / grand if grand > 0 else 0.0


def node_rows(trace: Trace) -> list[NodeRow]:
    """Every node that ran, per provider, heaviest first."""
    runs = _runs(trace)
    grand = node_time_per_run(trace) * runs
    groups: dict[tuple[str, str, str], list[float]] = {}
    for n in trace.nodes:
        groups.setdefault((n.name, n.op_type, n.provider), []).append(n.dur)
    rows = []
    for (name, op, provider), durs in groups.items():
        total = sum(durs)
        flow = op in CONTROL_FLOW_OPS
        rows.append(
            NodeRow(
                name, op, provider, len(durs), total, total / runs, total / len(durs), _share(total, grand, flow), flow
            )
        )
    return sorted(rows, key=lambda r: (r.contains_subgraph, -r.total_us, r.name))


def op_rows(trace: Trace) -> list[OpRow]:
    """Per op type and provider, heaviest first (If/Loop/Scan last: their time is counted in their subgraph)."""
    runs = _runs(trace)
    grand = node_time_per_run(trace) * runs
    groups: dict[tuple[str, str], list[NodeEvent]] = {}
    for n in trace.nodes:
        groups.setdefault((n.op_type, n.provider), []).append(n)
    rows = []
    for (op, provider), items in groups.items():
        total = sum(n.dur for n in items)
        flow = op in CONTROL_FLOW_OPS
        rows.append(
            OpRow(
                op,
                provider,
                len({n.name for n in items}),
                len(items),
                total,
                total / runs,
                total / len(items),
                _share(total, grand, flow),
                flow,
            )
        )
    return sorted(rows, key=lambda r: (r.contains_subgraph, -r.total_us, r.op_type))


def provider_share(trace: Trace) -> dict[str, float]:
    """Share of node time per provider, the Memcpy nodes ORT inserted counted apart as "Memcpy"."""
    grand = node_time_per_run(trace) * _runs(trace)
    totals: dict[str, float] = {}
    for n in trace.nodes:
        if n.is_control_flow:
            continue
        key = MEMCPY if n.op_type in MEMCPY_OP_TYPES else n.provider
        totals[key] = totals.get(key, 0.0) + n.dur
    return {k: (v / grand if grand > 0 else 0.0) for k, v in sorted(totals.items(), key=lambda kv: -kv[1])}


def kernel_rows(trace: Trace, top: int) -> list[KernelRow]:
    runs = _runs(trace)
    groups: dict[tuple[str, str, str], list[float]] = {}
    for k in trace.kernels:
        groups.setdefault((k.kernel, k.node, k.op_type), []).append(k.dur)
    rows = [
        KernelRow(kernel, node, op, len(durs), sum(durs), sum(durs) / runs)
        for (kernel, node, op), durs in groups.items()
    ]
    return sorted(rows, key=lambda r: -r.total_us)[: max(top, 0)]


def run_times(trace: Trace) -> RunTimes:
    durations = [d for _, d in trace.runs]
    if not durations:
        return RunTimes(0, 0.0, 0.0, 0.0, 0.0)
    per_run = [0.0] * len(durations)
    for n in trace.nodes:
        if not n.is_control_flow:
            per_run[n.run] += n.dur
    ratios = [node / run for node, run in zip(per_run, durations, strict=True) if run > 0]
    return RunTimes(
        len(durations),
        statistics.fmean(durations),
        statistics.median(durations),
        min(durations),
        node_time_per_run(trace),
        statistics.median(ratios) if ratios else 0.0,
    )


def timeline(trace: Trace) -> list[TimelineEntry]:
    """The nodes of the median profiled run, offsets from that run's start."""
    if not trace.runs:
        return []
    order = sorted(range(len(trace.runs)), key=lambda i: trace.runs[i][1])
    chosen = order[len(order) // 2]
    start = trace.runs[chosen][0]
    return [TimelineEntry(n.name, n.op_type, n.provider, n.ts - start, n.dur) for n in trace.nodes if n.run == chosen]
