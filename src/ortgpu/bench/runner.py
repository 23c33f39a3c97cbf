"""`run_bench`: validate the request, measure through one backend, and turn the cases into a BenchResult.

The backends (:mod:`ortgpu.bench.backend`) time the cases; this module adds what every backend shares: the input
shapes, CPU speed-ups, hints, the baseline comparison and the saved archive. Rendering (tables, JSON, the HTML
report) is the caller's: :func:`ortgpu.report.html.write_report` renders ``result.report_to``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ortgpu.bench.archive import (
    check_same_model,
    compare_to_baseline,
    confirm_regressions,
    load_result,
    save_result,
)
from ortgpu.bench.backend import BenchBackend, Measured
from ortgpu.bench.hints import bench_hints
from ortgpu.bench.modes import BenchMode
from ortgpu.bench.package import PackageBackend
from ortgpu.bench.plan import DEFAULT_DURATION_S, BenchInputError, BenchRequest, Shapes, resolve_shapes
from ortgpu.bench.result import (
    BaselineComparison,
    BaselineVerdict,
    BenchCase,
    BenchResult,
    BenchSettings,
    CaseKey,
    ModelSummary,
)
from ortgpu.bench.wheel import WheelBackend
from ortgpu.config import Config, load_config
from ortgpu.ep import ExecutionProvider
from ortgpu.model.inputs import InputSpec, merge_input_spec
from ortgpu.model.inspect import ModelInfo, inspect_model
from ortgpu.output_paths import check_outputs
from ortgpu.progress import Progress, silent

__all__ = [
    "DEFAULT_DURATION_S",
    "BenchInputError",
    "BenchRequest",
    "Measured",
    "backend_for",
    "run_bench",
    "with_speedups",
]


def with_speedups(cases: list[BenchCase]) -> list[BenchCase]:
    cpu = {
        (c.batch, c.concurrency, c.sessions): c
        for c in cases
        if c.measured and not c.ep.is_gpu and c.mode is BenchMode.RUN
    }
    out = []
    for case in cases:
        ref = cpu.get((case.batch, case.concurrency, case.sessions))
        if case.measured and case.ep.is_gpu and ref is not None and case.latency.p50_ms > 0:
            case = dataclasses.replace(case, speedup_vs_cpu=ref.latency.p50_ms / case.latency.p50_ms)
        out.append(case)
    return out


def backend_for(request: BenchRequest) -> BenchBackend:
    """The backend that times the cases: a package's C library when the request names one, else the wheel."""
    return PackageBackend(request.package) if request.package is not None else WheelBackend()


def _describe(info: Any) -> str:
    dims = ", ".join("?" if d is None else str(d) for d in info.shape) if info.rank is not None else "?"
    return f"{info.name} {info.dtype} [{dims}]"


def _remeasure(
    backend: BenchBackend,
    request: BenchRequest,
    config: Config,
    model: ModelInfo,
    by_batch: Mapping[int, Shapes],
    comparison: BaselineComparison,
    tell: Progress,
) -> dict[CaseKey, BenchCase]:
    """Measure each regressed case once more, the same way (its own request, no save, report or baseline)."""
    again: dict[CaseKey, BenchCase] = {}
    for compared in comparison.cases:
        if compared.verdict is not BaselineVerdict.REGRESSED:
            continue
        key = compared.key
        one = dataclasses.replace(
            request,
            ep=ExecutionProvider(key.ep),
            ep_reason="re-measure",
            modes=(BenchMode(key.mode),),
            all_modes=False,
            batches=(key.batch,),
            concurrency=(key.concurrency,),
            sessions=key.sessions,
            compare_cpu=False,
            save=None,
            report=None,
            baseline=None,
        )
        tell(f"re-measuring {key.label}: it looked regressed", None)
        measured = backend.measure(one, config, model, {key.batch: by_batch[key.batch]}, silent)
        found = [c for c in measured.cases if c.key == key and c.measured]
        if found:
            again[key] = found[0]
    return again


def run_bench(request: BenchRequest, progress: Progress | None = None) -> BenchResult:
    """Benchmark ``request.model``; see BenchRequest. Ctrl-C stops it early: the result then holds what finished
    and is marked interrupted. Writes ``request.save`` when given (atomically); ``request.report`` is checked and
    recorded as ``result.report_to`` for the caller to render (the CLI writes it with the HTML report renderer).

    Raises BenchInputError / ModelError / InputError / BaselineError (exit 2) for bad settings or files before
    anything runs, ModeRefusedError / ProviderUnavailableError (exit 3) when this machine cannot do it. With
    ``request.package``: the library-location errors (exit 2) and ProviderLoadError (exit 3, ORT's own text).
    """
    tell = progress or silent
    started = time.perf_counter()
    if not request.modes:  # no --mode: the config's [run] mode (what tune found), else run
        request = dataclasses.replace(request, modes=(BenchMode(load_config(request.config).run["mode"]),))
    request.validate()
    backend = backend_for(request)
    backend.validate(request)
    check_outputs(
        {"--save": request.save, "--report": request.report},
        (request.model, request.config, request.baseline, request.npz, request.package),
        error=BenchInputError,
    )
    baseline_path = request.baseline
    baseline = load_result(baseline_path) if baseline_path is not None else None
    config = load_config(request.config)
    tell("inspecting the model", None)
    model = inspect_model(request.model)
    if baseline is not None and baseline_path is not None:
        check_same_model(baseline, model.sha256, baseline_path)
    spec = merge_input_spec(
        config.inputs,
        shapes=request.shapes,
        dims=request.dims,
        ranges=request.ranges,
        npz=request.npz,
        seed=request.seed,
    )
    shape_sets = resolve_shapes(model, spec, tuple(dict.fromkeys(request.batches)))
    by_batch = {s.batch: s for s in shape_sets}
    measured = backend.measure(request, config, model, by_batch, tell)
    ep, cases = measured.ep, with_speedups(list(measured.cases))
    result = BenchResult(
        model=ModelSummary(
            Path(request.model),
            model.sha256,
            model.size_bytes,
            model.node_count,
            tuple(_describe(i) for i in model.inputs),
            tuple(_describe(o) for o in model.outputs),
        ),
        ep=ep,
        ep_reason=measured.ep_reason,
        settings=BenchSettings(
            modes=tuple(dict.fromkeys(request.modes)),
            batches=tuple(by_batch),
            concurrency=tuple(dict.fromkeys(request.concurrency)),
            sessions=request.sessions,
            warmup=request.warmup,
            iterations=request.iterations,
            duration_s=None if request.iterations is not None else (request.duration_s or DEFAULT_DURATION_S),
            compare_cpu=request.compare_cpu and ep is not ExecutionProvider.CPU,
            device_id=request.device_id,
            config=request.config,
        ),
        cases=tuple(cases),
        hints=bench_hints(
            cases,
            model,
            ep,
            measured.auto_ep,
            measured.ep_reason,
            measured.interrupted,
            config.session_int("intra_op_num_threads", 0),
        ),
        environment=measured.environment,
        input_notes=shape_sets[0].notes,
        interrupted=measured.interrupted,
        elapsed_s=time.perf_counter() - started,
        package=measured.package,
    )
    if baseline is not None and baseline_path is not None and result.measured_cases:
        comparison = compare_to_baseline(result, baseline, Path(baseline_path), request.max_regression)
        if comparison.regressed and not result.interrupted:  # a case that flips on a re-measure is not a regression
            again = _remeasure(backend, request, config, model, by_batch, comparison, tell)
            comparison = confirm_regressions(comparison, again, baseline)
        result = dataclasses.replace(result, comparison=comparison)
    if request.against_defaults:
        result = dataclasses.replace(result, defaults=_defaults_of(request, spec, progress))
    if request.save is not None:
        result = dataclasses.replace(result, saved_to=Path(request.save))
    if request.report is not None:
        result = dataclasses.replace(result, report_to=Path(request.report))
    if request.save is not None:
        save_result(result, request.save)
    return result


def _defaults_of(request: BenchRequest, spec: InputSpec, progress: Progress | None) -> BenchResult:
    """The same model, inputs (the config's [inputs] too: tune writes the tuned shapes there), batches and
    measurement with ORT's defaults: no config, numpy in/out (what users get)."""
    plain = dataclasses.replace(
        request,
        config=None,
        shapes=dict(spec.shapes),
        dims=dict(spec.dims),
        ranges=dict(spec.ranges),
        npz=spec.npz,
        seed=spec.seed,
        modes=(BenchMode.RUN,),
        all_modes=False,
        provider_options={},
        compare_cpu=False,
        save=None,
        report=None,
        baseline=None,
        against_defaults=False,
    )
    tell = progress or silent
    return run_bench(plain, lambda message, fraction=None: tell(f"ORT defaults: {message}", fraction))
