"""`run_compare`: two runs of a model (two EPs, two models, saved outputs, another Python's onnxruntime, a
package's C library) on the same data: outputs diff, layer-wise on demand, latency diff, library-needs diff."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ortgpu.accuracy.dataset import Dataset, load_dataset, split_stacked
from ortgpu.accuracy.engines import OrtEngine
from ortgpu.accuracy.graph import Skipped, intermediate_tensors, load_model
from ortgpu.accuracy.layerwise import LayerwiseReport, compare_layers
from ortgpu.accuracy.nonfinite import scan_outputs
from ortgpu.bench import BenchMode, BenchRequest, run_bench
from ortgpu.bench.stats import compute_stats
from ortgpu.capi import runner as capi_runner
from ortgpu.check.parity import (
    DEFAULT_TOLERANCES,
    OutputParity,
    ParityStatus,
    Precision,
    Tolerance,
    compare_output,
    worst_sample,
)
from ortgpu.compare.child import run_in_python
from ortgpu.compare.needs import NeedsDiff, PackageSource, needs_diff
from ortgpu.compare.result import CompareResult, LatencyDiff, SideKind, SideReport
from ortgpu.config import Config, load_config
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import BadInputError
from ortgpu.host.distributions import find_distributions
from ortgpu.model.inputs import InputSpec
from ortgpu.model.inspect import ModelInfo, inspect_model
from ortgpu.npz import load_npz
from ortgpu.output_paths import check_outputs
from ortgpu.progress import silent
from ortgpu.runtime.guard import import_onnxruntime
from ortgpu.session import open_session

__all__ = ["CompareError", "CompareRequest", "run_compare"]

Progress = Callable[[str, "float | None"], None]


class CompareError(BadInputError):
    """A comparison that cannot be made as asked (exit 2)."""


@dataclass(frozen=True)
class CompareRequest:
    """A and B: ``.onnx`` models or ``.npz`` saved outputs; ``b`` None compares ``a`` with itself under other
    settings. ``ep_a`` / ``ep_b``: the EP of each side. ``python``: run side B with that interpreter's onnxruntime
    (``python_env`` set for it; "" unsets a variable); side A then runs through the same runner with this
    interpreter. ``package``: run side B through that release archive's C library (``package_a`` for side A).
    ``atol`` / ``rtol``: tolerances of B against A. ``latency``: time both sides (same shapes) for
    ``duration_s`` each; B slower than A by more than ``max_regression`` fails. ``layerwise``: compare every
    intermediate tensor (two models run by this interpreter only). ``report``: an HTML report there.
    """

    a: Path
    b: Path | None = None
    ep_a: ExecutionProvider = ExecutionProvider.CPU
    ep_b: ExecutionProvider = ExecutionProvider.CPU
    python: str | None = None
    python_env: Mapping[str, str] = field(default_factory=dict)
    package: Path | None = None
    package_a: Path | None = None
    config: Path | None = None
    device_id: int | None = None
    inputs: InputSpec | None = None
    samples: int | None = None
    atol: Tolerance = field(default_factory=Tolerance)
    rtol: Tolerance = field(default_factory=Tolerance)
    layerwise: bool = False
    latency: bool = True
    duration_s: float = 1.0
    max_regression: float = 0.10
    report: Path | None = None


@dataclass
class _Side:
    name: str
    kind: SideKind
    path: Path
    ep: ExecutionProvider | None
    python: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    package: Path | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)
    ort_version: str | None = None
    runner: str = ""
    providers: tuple[str, ...] = ()
    latencies_ns: tuple[int, ...] = ()
    ort_dir: Path | None = None
    distribution: tuple[str, str] | None = None


def _is_outputs(path: Path) -> bool:
    return path.suffix == ".npz"


def _sides(request: CompareRequest) -> tuple[_Side, _Side]:
    a_path = Path(request.a)
    b_path = Path(request.b) if request.b is not None else a_path
    if request.python and (request.package or request.package_a):
        raise CompareError("--python and --package both given", "compare one environment at a time")
    a = _Side("A", SideKind.OUTPUTS if _is_outputs(a_path) else SideKind.MODEL, a_path, request.ep_a)
    b = _Side("B", SideKind.OUTPUTS if _is_outputs(b_path) else SideKind.MODEL, b_path, request.ep_b)
    for side, package in ((a, request.package_a), (b, request.package)):
        if side.kind is SideKind.OUTPUTS:
            side.ep = None
            if package is not None or (side is b and request.python):
                raise CompareError(
                    f"side {side.name} is saved outputs ({side.path.name}): nothing to run with --python/--package",
                    "give a model for the side that runs elsewhere",
                )
        elif package is not None:
            side.kind, side.package = SideKind.PACKAGE, Path(package)
    if request.python:
        if b.kind is not SideKind.MODEL or a.kind is not SideKind.MODEL:
            raise CompareError("--python needs a model on both sides", "e.g. ortgpu compare model.onnx --python PY")
        b.kind, b.python, b.env = SideKind.PYTHON, request.python, dict(request.python_env)
        a.kind, a.python = SideKind.PYTHON, sys.executable
    same = (
        a.path.resolve() == b.path.resolve()
        and a.kind is b.kind
        and a.ep is b.ep
        and a.package == b.package
        and request.python is None
    )
    if same:
        raise CompareError(
            f"A and B are the same run ({a.path.name} on {a.ep.value if a.ep else 'saved outputs'})",
            "compare two models, two EPs (--ep-a/--ep-b), or two environments (--python / --package)",
        )
    if request.layerwise and not (a.kind is SideKind.MODEL and b.kind is SideKind.MODEL):
        raise CompareError(
            "--layerwise compares two models run by this interpreter's onnxruntime",
            "drop --layerwise, or compare two .onnx files / two EPs without --python/--package",
        )
    for side in (a, b):
        if not side.path.is_file():
            raise CompareError(f"{side.name}: {side.path}: no such file", "check the path")
    return a, b


def _models_agree(a: ModelInfo, b: ModelInfo) -> None:
    if set(a.input_names) != set(b.input_names):
        raise CompareError(
            f"the models take different inputs: {', '.join(a.input_names)} vs {', '.join(b.input_names)}",
            "compare models that take the same inputs",
        )


def _saved_outputs(side: _Side, dataset: Dataset | None, ranks: Mapping[str, int | None]) -> list[dict[str, Any]]:
    hint = "give an .npz of outputs, e.g. written by ortgpu check --save-outputs"
    arrays = load_npz(side.path, what="outputs file", contents="outputs", error=CompareError, hint=hint)
    count = len(dataset.samples) if dataset is not None else 1
    if count == 1:
        return [arrays]
    split = split_stacked(arrays, ranks, side.path.name)
    if split is None or len(split) != count:
        raise CompareError(
            f"{side.path.name}: {count} samples were run, the file holds {'one' if split is None else len(split)}",
            "save one output per sample along a leading axis (check --save-outputs with a data set does)",
        )
    return split


def _run_side(
    side: _Side, request: CompareRequest, config: Config, feeds: list[dict[str, Any]], tell: Progress
) -> None:
    """Fill ``side.outputs`` (and what ran it) for every sample."""
    if side.kind is SideKind.MODEL:
        onnxruntime = import_onnxruntime("comparing two runs")

        assert side.ep is not None
        tell(f"{side.name}: {side.path.name} on {side.ep.value}", None)
        with open_session(side.path, side.ep, config, request.device_id) as session:
            side.outputs = [dict(zip(session.output_names, session.run(f), strict=True)) for f in feeds]
            side.providers = tuple(session.providers)
        side.ort_version = onnxruntime.__version__
        side.runner = f"onnxruntime {onnxruntime.__version__} in this process"
    elif side.kind is SideKind.PYTHON:
        assert side.ep is not None and side.python is not None
        tell(f"{side.name}: {side.path.name} with {side.python}", None)
        run = run_in_python(
            side.python,
            side.path,
            feeds,
            side.ep.ort_name,
            config.options_for(side.ep),
            env=side.env,
            iterations=10 if request.latency else 0,
            warmup=10,
            duration_s=request.duration_s if request.latency else 0.0,
        )
        side.outputs, side.latencies_ns = run.outputs, run.latencies_ns
        side.ort_version, side.providers, side.ort_dir = run.ort_version, run.providers, run.ort_dir
        # the distribution that owns the onnxruntime that ran (an unpacked build on PYTHONPATH may have none)
        side.distribution = next((d for d in run.distributions if d[1] == run.ort_version), None)
        side.runner = f"{run.interpreter} (Python {run.python}): onnxruntime {run.ort_version}"
    elif side.kind is SideKind.PACKAGE:
        assert side.ep is not None and side.package is not None
        tell(f"{side.name}: {side.path.name} through {side.package}", None)
        side.outputs = []
        for f in feeds:
            package_run = capi_runner.run_package_model(
                side.package, side.path, f, side.ep.value, config.options_for(side.ep), profile=False
            )
            side.outputs.append(dict(package_run.outputs))
        side.ort_version = package_run.ort_version
        side.providers = tuple(package_run.appended_providers)
        side.runner = f"C library {package_run.library} (onnxruntime {package_run.ort_version})"


def _base_precision(sides: Sequence[_Side], infos: Sequence[ModelInfo]) -> Precision:
    """The tolerance row: float16 when a model holds fp16 weights, TF32 when a side runs on a GPU EP."""
    import onnx

    for info in infos:
        model = onnx.load(str(info.path), load_external_data=False)
        if any(t.data_type == onnx.TensorProto.FLOAT16 for t in model.graph.initializer):
            return Precision.FP16
    if any(s.ep is not None and s.ep.is_gpu for s in sides):
        return Precision.TF32
    return Precision.FP32


def _diff_outputs(
    request: CompareRequest, a: _Side, b: _Side, base: Precision, labels: Sequence[str]
) -> tuple[tuple[OutputParity, ...], tuple[str, ...], tuple[str, ...]]:
    import numpy as np

    names_a, names_b = list(a.outputs[0]), list(b.outputs[0])
    common = [n for n in names_a if n in names_b]
    per_sample = []
    for got, want in zip(b.outputs, a.outputs, strict=True):
        row = []
        for name in common:
            is_float = isinstance(got[name], np.ndarray) and got[name].dtype.kind == "f"
            row.append(
                compare_output(
                    name,
                    got[name],
                    want[name],
                    base,
                    atol=request.atol.for_output(name, is_float),
                    rtol=request.rtol.for_output(name, is_float),
                )
            )
        per_sample.append(row)
    if len(per_sample) > 1:
        parity = tuple(
            worst_sample([(labels[i], sample[k]) for i, sample in enumerate(per_sample)]) for k in range(len(common))
        )
    else:
        parity = tuple(per_sample[0])
    only_a = tuple(n for n in names_a if n not in names_b)
    only_b = tuple(n for n in names_b if n not in names_a)
    return parity, only_a, only_b


def _latency(
    request: CompareRequest, a: _Side, b: _Side, config_path: Path | None, dataset: Dataset, tell: Progress
) -> LatencyDiff | None:
    """p50 of both sides with the same shapes: the bench engine for this interpreter and packages, the child's own
    loop (the same runner on both sides) with --python."""
    if not request.latency:
        return None
    if SideKind.OUTPUTS in (a.kind, b.kind):
        return LatencyDiff("not measured", None, None, None, note="saved outputs have no latency")
    first = dataset.samples[0].inputs
    if a.kind is SideKind.PYTHON:
        batch = first.batch or 1
        both = [compute_stats(s.latencies_ns, batch, 0.0) if s.latencies_ns else None for s in (a, b)]
        return LatencyDiff(
            f"the same runner script in each interpreter: {len(a.latencies_ns)} and {len(b.latencies_ns)} timed "
            f"session.run calls ({request.duration_s:g} s each) after 10 warm-up runs, numpy in and out",
            first.batch,
            both[0].p50_ms if both[0] else None,
            both[1].p50_ms if both[1] else None,
            both[0].p95_ms if both[0] else None,
            both[1].p95_ms if both[1] else None,
            request.max_regression,
        )

    shapes = {n: tuple(v.shape) for n, v in first.feeds.items()}
    numbers = []
    for side in (a, b):
        tell(f"timing {side.name}", None)
        assert side.ep is not None
        result = run_bench(
            BenchRequest(
                model=side.path,
                ep=side.ep,
                modes=(BenchMode.RUN,),
                shapes=shapes,
                duration_s=request.duration_s,
                config=config_path,
                device_id=request.device_id or 0,
                package=side.package,
            )
        )
        cases = result.measured_cases
        stats = cases[0].stats if cases else None
        numbers.append((stats.p50_ms, stats.p95_ms) if stats else (None, None))
    return LatencyDiff(
        f"ortgpu's bench engine, mode run (numpy in and out), {request.duration_s:g} s per side",
        first.batch,
        numbers[0][0],
        numbers[1][0],
        numbers[0][1],
        numbers[1][1],
        request.max_regression,
    )


def _this_ort() -> PackageSource | None:
    onnxruntime = import_onnxruntime("comparing two runs")

    report = find_distributions()
    loaded = report.loaded_distribution
    return PackageSource(
        Path(onnxruntime.__file__).parent, (loaded.name, loaded.version) if loaded is not None else None
    )


def _needs(request: CompareRequest, a: _Side, b: _Side) -> NeedsDiff | None:
    if a.kind is SideKind.PYTHON and a.ort_dir is not None and b.ort_dir is not None:
        return needs_diff(PackageSource(a.ort_dir, a.distribution), PackageSource(b.ort_dir, b.distribution))
    if b.kind is SideKind.PACKAGE and b.package is not None:
        source_a = PackageSource(a.package) if a.package is not None else _this_ort()
        if source_a is not None:
            return needs_diff(source_a, PackageSource(b.package))
    return None


def _layerwise(
    request: CompareRequest, a: _Side, b: _Side, config: Config, feeds: dict[str, Any], tell: Progress
) -> LayerwiseReport:
    assert a.ep is not None and b.ep is not None
    model_a, model_b = load_model(a.path), load_model(b.path)
    slots, skipped = intermediate_tensors(model_a, {n: tuple(v.shape) for n, v in feeds.items()})
    base = Precision.FP16 if a.path != b.path else (Precision.TF32 if a.ep.is_gpu or b.ep.is_gpu else Precision.FP32)
    rule = DEFAULT_TOLERANCES[base]
    with (
        OrtEngine(model_a, feeds, a.ep, config, request.device_id) as engine_a,
        OrtEngine(model_b, feeds, b.ep, config, request.device_id) as engine_b,
    ):
        engine_a.label = f"A ({a.path.name} on {a.ep.value})"
        engine_b.label = f"B ({b.path.name} on {b.ep.value})"
        if a.path != b.path:
            produced = {o for n in model_b.graph.node for o in n.output}
            missing = [s for s in slots if s.name not in produced]
            slots = [s for s in slots if s.name in produced]

            skipped = [*skipped, *(Skipped(s.name, "B has no tensor of that name") for s in missing)]
        report, _ = compare_layers(slots, skipped, engine_b, engine_a, rule.rtol, rule.atol_scale, progress=tell)
    return report


def run_compare(request: CompareRequest, progress: Progress | None = None) -> CompareResult:
    """Compare two runs; never prints. Bad input is exit 2 (CompareError and the input/model errors) before
    anything runs; an environment that cannot run a side is exit 3. A comparison that ran returns a result whose
    ``failures`` name outputs beyond tolerance, missing outputs and a latency regression."""

    tell = progress or silent
    if not (request.max_regression >= 0 and request.duration_s > 0):
        raise CompareError("--max-regression must be >= 0 and --duration > 0", "e.g. --max-regression 10%")
    a, b = _sides(request)
    config = load_config(request.config)
    if request.report is not None:
        npz = request.inputs.npz if request.inputs is not None else None
        inputs = (a.path, b.path, npz, config.source, request.package, request.package_a)
        check_outputs({"--report": request.report}, inputs, error=CompareError)
    infos = [inspect_model(s.path) for s in (a, b) if s.kind is not SideKind.OUTPUTS]
    if len(infos) == 2:
        _models_agree(infos[0], infos[1])
    dataset = None
    feeds: list[dict[str, Any]] = []
    if infos:
        tell("making inputs", 0.05)
        dataset = load_dataset(
            infos[0], request.inputs if request.inputs is not None else config.inputs, request.samples
        )
        feeds = [dict(s.inputs.feeds) for s in dataset.samples]
    ranks = {o.name: o.rank for o in infos[0].outputs} if infos else {}
    for side in (a, b):
        if side.kind is SideKind.OUTPUTS:
            side.outputs = _saved_outputs(side, dataset, ranks)
            side.runner = "saved outputs"
        else:
            _run_side(side, request, config, feeds, tell)
    labels = dataset.labels if dataset is not None else ("saved",)
    base = _base_precision((a, b), infos)
    tell("comparing outputs", 0.7)
    parity, only_a, only_b = _diff_outputs(request, a, b, base, labels)
    layerwise = _layerwise(request, a, b, config, feeds[0], tell) if request.layerwise else None
    latency = _latency(request, a, b, request.config, dataset, tell) if dataset is not None else None
    tell("reading what each build needs", 0.95)
    needs = _needs(request, a, b)
    failures = [p.failure_line() for p in parity if p.status is ParityStatus.FAIL]
    failures += [f"output {n!r} only in A" for n in only_a] + [f"output {n!r} only in B" for n in only_b]
    if latency is not None and latency.regressed and latency.delta is not None:
        failures.append(
            f"latency: B's p50 {latency.b_p50_ms:.3f} ms is {latency.delta:+.1%} against A's "
            f"{latency.a_p50_ms:.3f} ms, beyond the allowed {request.max_regression:.0%}"
        )
    reports = [_report(s, labels) for s in (a, b)]
    verdict = _verdict(failures, parity, latency, len(labels))
    result = CompareResult(
        a=reports[0],
        b=reports[1],
        dataset=dataset.source if dataset is not None else "saved outputs",
        samples=tuple(labels),
        outputs=parity,
        only_in_a=only_a,
        only_in_b=only_b,
        layerwise=layerwise,
        latency=latency,
        needs=needs,
        failures=tuple(failures),
        passed=not failures,
        verdict=verdict,
        notes=tuple(dataset.notes) if dataset is not None else (),
        report_to=request.report,
    )
    tell("done", 1.0)
    return result


def _report(side: _Side, labels: Sequence[str]) -> SideReport:
    several = len(side.outputs) > 1
    found = tuple(
        item
        for index, values in enumerate(side.outputs)
        for item in scan_outputs(values, labels[index] if several else None)
    )
    return SideReport(side.name, side.kind, side.path, side.ep, side.ort_version, side.runner, side.providers, found)


def _verdict(failures: Sequence[str], parity: Sequence[OutputParity], latency: LatencyDiff | None, samples: int) -> str:
    if failures:
        more = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
        return f"DIFFERENT: {failures[0]}{more}"
    parts = [f"{len(parity)} output(s) of B match A within tolerance on {samples} sample(s)"]
    if latency is not None and latency.delta is not None:
        parts.append(f"B's p50 {latency.delta:+.1%} against A")
    return "SAME: " + "; ".join(parts)
