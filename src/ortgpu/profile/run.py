"""`run_profile`: profile a model on one EP (or two configs side by side) and say where its time goes."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.atomic import atomic_write_bytes
from ortgpu.config import Config, GraphOptimizationLevel
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import BadInputError
from ortgpu.model.inputs import InputSpec
from ortgpu.model.inspect import load_model
from ortgpu.output_paths import OutputPathError, check_outputs
from ortgpu.placement import MEMCPY_OP_TYPES, PlacementReport, parse_verbose_log
from ortgpu.profile import fusion as fusion_mod
from ortgpu.profile import trace as trace_mod
from ortgpu.profile.execute import Executed, ExecuteSpec, execute, execute_in_child
from ortgpu.profile.hints import REASONS, HintInputs, make_hints
from ortgpu.profile.report import write_report
from ortgpu.profile.result import (
    CompareRow,
    CpuNodeTime,
    FusionReport,
    GpuTiming,
    MemcpyReport,
    NodeRow,
    ProfileResult,
    ProfileRun,
)
from ortgpu.runtime.guard import import_onnxruntime
from ortgpu.session import best_available_ep

if TYPE_CHECKING:  # pragma: no cover
    import onnx

__all__ = ["OutputPathError", "ProfileRequest", "compare_runs", "run_profile"]

Progress = Callable[[str, float | None], None]
_CHILD_TIMEOUT_S = 1800.0
_CPU = "CPUExecutionProvider"


@dataclass(frozen=True)
class ProfileRequest:
    """What to profile. ``inputs`` None uses ``config.inputs``; ``ep`` None picks the best available EP.

    ``trace`` is where ORT's chrome-trace file is kept (None: a new temporary folder, named in the result);
    ``compare`` profiles a second config on the same inputs and puts the op tables side by side, its trace next
    to the first (``compare_trace``). ``gpu_timing`` SYNC profiles a GPU EP in a child process with
    ``CUDA_LAUNCH_BLOCKING=1`` so node times include GPU work; ASYNC profiles as the model is deployed.
    """

    model: Path
    ep: ExecutionProvider | None = None
    ep_options: Mapping[str, str] = field(default_factory=dict)
    device_id: int | None = None
    config: Config = field(default_factory=Config)
    inputs: InputSpec | None = None
    runs: int = 10
    warmup: int = 3
    trace: Path | None = None
    compare: Config | None = None
    compare_trace: Path | None = None
    report: Path | None = None
    top: int = 20
    gpu_timing: GpuTiming = GpuTiming.SYNC
    isolate: bool = False  # run the profiled session in a child process even on the CPU EP


def _silent(message: str, fraction: float | None = None) -> None:
    """The progress callback used when the caller gives none."""


def _check_suffix(path: Path | None, suffix: str, what: str) -> None:
    if path is not None and path.suffix.lower() != suffix:
        raise OutputPathError(f"{what} {path}: the file name must end in {suffix}", f"e.g. {path.stem}{suffix}")


def run_profile(request: ProfileRequest, progress: Progress | None = None) -> ProfileResult:
    """Profile ``request.model``: warm-up runs, then ``runs`` profiled runs with ORT's profiler on; never prints.

    Bad input (corrupt model, missing external data, bad output paths, inputs that do not fit) raises
    BadInputError subclasses (exit 2) before anything runs; an EP that cannot be active raises
    ProviderUnavailableError (exit 3).
    """

    report = progress or _silent
    start = time.perf_counter()
    if request.runs < 1:
        raise BadInputError(f"runs {request.runs} is below 1", "profile at least one run")
    if request.warmup < 0:
        raise BadInputError(f"warm-up runs {request.warmup} is negative", "use 0 or more")
    report("reading the model", 0.0)
    info, original = load_model(request.model)
    _check_suffix(request.trace, ".json", "trace file")
    _check_suffix(request.compare_trace, ".json", "compare trace file")
    _check_suffix(request.report, ".html", "report")
    check_outputs(
        {"trace file": request.trace, "compare trace file": request.compare_trace, "report": request.report},
        (info.path, *_inputs_of(request)),
    )
    ep, ep_reason = (request.ep, None) if request.ep is not None else best_available_ep()
    spec_inputs = request.inputs if request.inputs is not None else request.config.inputs
    configs = [("defaults" if request.config.source is None else request.config.source.name, request.config)]
    if request.compare is not None:
        other = request.compare.source.name if request.compare.source is not None else "compared config"
        configs.append((other if other != configs[0][0] else f"{other} (2)", request.compare))
    for _, config in configs:  # a [model] file that changed or came from another model: refused before any run
        config.model_file_for(info.path, info.sha256)
    targets = [request.trace, request.compare_trace]
    runs = []
    for index, (label, config) in enumerate(configs):
        share = 1.0 / len(configs)
        report(f"profiling {label} on {ep.value}", index * share)
        runs.append(
            _profile_one(request, info, original, ep, ep_reason, label, config, spec_inputs, targets[index], report)
        )
    ort = import_onnxruntime("profiling a model")
    result = ProfileResult(
        model=info.path,
        model_sha256=info.sha256,
        model_node_count=info.node_count,
        ort_version=ort.__version__,
        runs=tuple(runs),
        comparison=compare_runs(runs[0], runs[1]) if len(runs) > 1 else (),
        elapsed_s=time.perf_counter() - start,
    )
    if request.report is not None:
        report("writing the report", 0.95)
        result = replace(result, report=request.report)
        write_report(result, request.report)
    report("done", 1.0)
    return result


def _inputs_of(request: ProfileRequest) -> list[Path]:
    paths = [c.source for c in (request.config, request.compare) if c is not None and c.source is not None]
    spec = request.inputs if request.inputs is not None else request.config.inputs
    if spec.npz is not None:
        paths.append(Path(spec.npz))
    return paths


def _profile_one(
    request: ProfileRequest,
    info: Any,
    original: onnx.ModelProto,
    ep: ExecutionProvider,
    ep_reason: str | None,
    label: str,
    config: Config,
    spec_inputs: InputSpec,
    target: Path | None,
    report: Progress,
) -> ProfileRun:
    run_file = config.model_file_for(info.path, info.sha256)  # a tuned config's [model] file runs instead
    if run_file != info.path:
        original = fusion_mod.read_graph(run_file)
    work = Path(tempfile.mkdtemp(prefix="ortgpu-profile-"))
    try:
        spec = ExecuteSpec(
            model=info.path,
            ep=ep,
            config=config,
            ep_options=dict(request.ep_options),
            device_id=request.device_id,
            inputs=spec_inputs,
            warmup=request.warmup,
            runs=request.runs,
            work_dir=work,
            # TensorRT compiles subgraphs into engines, which ORT cannot save as a model
            dump_optimized=ep is not ExecutionProvider.TENSORRT,
        )
        sync = ep.is_gpu and request.gpu_timing is GpuTiming.SYNC
        if sync:
            executed = execute_in_child(spec, {"CUDA_LAUNCH_BLOCKING": "1"}, _CHILD_TIMEOUT_S)
        elif request.isolate:
            executed = execute_in_child(spec, {}, _CHILD_TIMEOUT_S)
        else:
            executed = execute(spec)
        report(f"reading the profile of {label}", None)
        events = trace_mod.read_trace(executed.trace_file)
        kept = _keep_trace(executed.trace_file, target)
        optimized = fusion_mod.read_graph(executed.optimized_model) if executed.optimized_model else None
        placement = parse_verbose_log(
            executed.build_log.read_text(encoding="utf-8", errors="replace"),
            executed.active_ep.ort_name,
        )
        run = _analyse(
            request, ep, ep_reason, label, config, executed, events, kept, original, optimized, placement, spec
        )
        if run_file != info.path:
            note = f"ran the config's [model] file {run_file.name} (a converted copy of {info.path.name})"
            run = replace(run, notes=(note, *run.notes))
        return run
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _keep_trace(source: Path, target: Path | None) -> Path:
    """Move ORT's trace out of the work folder: to ``target`` (atomically), or to a new temporary folder."""

    if target is None:
        folder = Path(tempfile.mkdtemp(prefix="ortgpu-trace-"))
        return Path(shutil.move(str(source), folder / source.name))
    return atomic_write_bytes(target, source.read_bytes())


def _timing(ep: ExecutionProvider, executed: Executed, request: ProfileRequest) -> tuple[GpuTiming | None, str]:
    if not ep.is_gpu or not executed.active_ep.is_gpu:
        return None, "CPU EP: a node's time is its kernel's time on the host"
    if executed.cuda_launch_blocking:
        return GpuTiming.SYNC, (
            "CUDA_LAUNCH_BLOCKING=1: every launch waits for its kernel, so a node's time includes its GPU work "
            "(plus one launch latency each); runs are slower than deployed"
        )
    return GpuTiming.ASYNC, (
        "asynchronous launches, as deployed: a node's time is the host's time in it (launching kernels, any "
        "synchronisation); the GPU works behind, so shares follow launch cost, not GPU time"
    )


def _analyse(
    request: ProfileRequest,
    ep: ExecutionProvider,
    ep_reason: str | None,
    label: str,
    config: Config,
    executed: Executed,
    events: list[Any],
    kept: Path,
    original: onnx.ModelProto,
    optimized: onnx.ModelProto | None,
    placement: PlacementReport | None,
    spec: ExecuteSpec,
) -> ProfileRun:
    trace = trace_mod.parse_trace(events, request.warmup)
    notes = list(executed.input_notes)
    if len(trace.runs) < request.runs:
        notes.append(
            f"ORT recorded {len(trace.runs)} of the {request.runs} profiled runs (its profiler stops at a fixed "
            "number of events): the tables cover those"
        )
    if not trace.nodes:
        raise trace_mod.TraceError(
            f"ORT's profile holds no node of the {len(trace.runs)} profiled run(s)", "re-run; report it if it persists"
        )
    rows = trace_mod.node_rows(trace)
    ops = trace_mod.op_rows(trace)
    times = trace_mod.run_times(trace)
    grand = times.node_us_per_run
    active = executed.active_ep
    reasons = {n.name: n.reason.value for n in placement.off_requested if n.reason} if placement else {}
    cpu_rows = [r for r in rows if active.is_gpu and r.provider == _CPU and not r.contains_subgraph]
    cpu_nodes = tuple(
        CpuNodeTime(r.name, r.op_type, r.per_run_us, r.per_run_us / grand if grand else 0.0, reasons.get(r.name))
        for r in cpu_rows
    )
    memcpy = _memcpy(rows, len(trace.runs), grand, optimized, placement, reasons)
    fusion = (
        fusion_mod.fusion_report(original, optimized, None)
        if spec.dump_optimized
        else FusionReport(False, "TensorRT compiles subgraphs into engines: ORT cannot save the graph it runs")
    )
    if spec.dump_optimized and optimized is None:
        fusion = FusionReport(False, "ORT did not write its optimised model")
    gpu_timing, timing_note = _timing(ep, executed, request)
    kernels = trace_mod.kernel_rows(trace, request.top)
    kernels_note = None
    if active.is_gpu and not kernels:
        kernels_note = (
            "ORT recorded no CUDA kernel events: it records kernel names and device times only in builds with CUDA "
            "profiling enabled"
        )
    level = str(config.session.get("graph_optimization_level", GraphOptimizationLevel.ALL.value))
    hints = make_hints(
        HintInputs(
            ep=active,
            ops=ops,
            memcpy=memcpy,
            cpu_nodes=cpu_nodes,
            cpu_share=sum(c.share for c in cpu_nodes),
            run_times=times,
            fusion=fusion,
            gpu_timing=gpu_timing,
            graph_optimization_level=level,
            provider_options=executed.provider_options,
        )
    )
    return ProfileRun(
        label=label,
        config_path=config.source,
        ep=active,
        ep_reason=ep_reason if executed.fallback_reason is None else f"fell back to CPU: {executed.fallback_reason}",
        providers=executed.providers,
        provider_options=executed.provider_options,
        session_options=dict(config.session),
        gpu_timing=gpu_timing,
        timing_note=timing_note,
        warmup_runs=trace.warmup_seen,
        runs_profiled=len(trace.runs),
        run_times=times,
        ops=tuple(ops),
        nodes=tuple(rows[: max(request.top, 0)]),
        node_count=len({r.name for r in rows}),
        provider_share=trace_mod.provider_share(trace),
        memcpy=memcpy,
        cpu_in_gpu=cpu_nodes,
        cpu_in_gpu_share=sum(c.share for c in cpu_nodes),
        kernels=tuple(kernels),
        kernels_note=kernels_note,
        fusion=fusion,
        placement=placement,
        hints=hints,
        timeline=tuple(trace_mod.timeline(trace)),
        trace=kept,
        creation_s=executed.creation_s,
        input_shapes=executed.input_shapes,
        notes=tuple(notes),
    )


def _memcpy(
    rows: list[NodeRow],
    runs: int,
    grand: float,
    optimized: onnx.ModelProto | None,
    placement: PlacementReport | None,
    reasons: Mapping[str, str],
) -> MemcpyReport:
    copies = [r for r in rows if r.op_type in MEMCPY_OP_TYPES]
    per_run = sum(r.per_run_us for r in copies)
    links = fusion_mod.memcpy_neighbours(optimized) if optimized is not None and copies else {}
    served: dict[str, str] = {}
    for row in copies:
        if row.name in links:
            name, op = links[row.name]
            served.setdefault(name, op)
    if not served and copies and placement is not None:  # no link in the saved graph: the nodes off the EP
        served = {n.name: n.op_type for n in placement.off_requested}
    serves = tuple(
        f"{op} ({name})" + (f", which fell back to CPU because {REASONS[reasons[name]]}" if name in reasons else "")
        for name, op in served.items()
    )
    return MemcpyReport(
        nodes=len({r.name for r in copies}),
        calls_per_run=round(sum(r.calls for r in copies) / max(runs, 1), 2),
        per_run_us=per_run,
        share=per_run / grand if grand else 0.0,
        by_node=tuple(copies),
        serves=serves,
    )


def compare_runs(base: ProfileRun, other: ProfileRun) -> tuple[CompareRow, ...]:
    """Op types of two profiled runs side by side (time per run and share), heaviest first."""

    def per_op(run: ProfileRun) -> dict[str, tuple[float, float | None]]:
        out: dict[str, tuple[float, float | None]] = {}
        for row in run.ops:
            time_, share = out.get(row.op_type, (0.0, None))
            if row.share is not None:
                share = (share or 0.0) + row.share
            out[row.op_type] = (time_ + row.per_run_us, share)
        return out

    a, b = per_op(base), per_op(other)
    rows = []
    for op in dict.fromkeys([*a, *b]):
        rows.append(
            CompareRow(
                op,
                a[op][0] if op in a else None,
                a[op][1] if op in a else None,
                b[op][0] if op in b else None,
                b[op][1] if op in b else None,
            )
        )
    return tuple(sorted(rows, key=lambda r: -max(r.base_per_run_us or 0.0, r.other_per_run_us or 0.0)))
