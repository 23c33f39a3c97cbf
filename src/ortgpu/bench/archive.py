"""Saved bench results: write them atomically, read them back, and compare a run with a baseline case by case."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from ortgpu.bench.result import (
    BaselineComparison,
    BenchCase,
    BenchResult,
    CaseComparison,
    Verdict,
    from_jsonable,
)
from ortgpu.errors import BadInputError

__all__ = [
    "COMMAND",
    "BaselineError",
    "check_same_model",
    "compare_to_baseline",
    "environment_changes",
    "load_result",
    "save_result",
]

COMMAND = "bench"


class BaselineError(BadInputError):
    """A baseline file that cannot be compared: not ours, damaged, or from another model (exit 2)."""


def save_result(result: BenchResult, path: Path) -> Path:
    """Write ``result`` as a versioned JSON envelope; atomic, so an old file survives a failed write."""
    from ortgpu.atomic import atomic_write_text
    from ortgpu.results import envelope

    return atomic_write_text(path, json.dumps(envelope(COMMAND, result), indent=1) + "\n")


def load_result(path: Path) -> BenchResult:
    """Read a file written by ``ortgpu bench --save`` back into a BenchResult; BaselineError when it is not one."""
    from ortgpu.results import read_envelope

    path = Path(path)
    try:
        doc = read_envelope(path, COMMAND)
    except BadInputError as exc:
        raise BaselineError(exc.message, exc.hint) from None
    try:
        result = from_jsonable(BenchResult, doc.get("result"))
    except ValueError as exc:
        raise BaselineError(
            f"{path}: damaged ortgpu bench file ({exc})", "re-create it with ortgpu bench --save"
        ) from None
    for case in result.measured_cases:
        _check_stats(path, case)
    return result


_LATENCIES = ("min_ms", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "max_ms", "mean_ms")
_SPREADS = ("mad_ms", "std_ms")


def _check_stats(path: Path, case: BenchCase) -> None:
    """Latencies a regression gate compares must be positive and finite, spreads finite and >= 0: a p50 of 0,
    a negative or NaN latency, or a spread of "inf" would let every regression pass as noise."""
    import math

    stats = case.stats
    if stats is None:
        return
    for name in _LATENCIES + _SPREADS:
        value = getattr(stats, name)
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if not number or value < 0 or (value == 0 and name in _LATENCIES):
            raise BaselineError(
                f"{path}: case {case.ep.value}/{case.mode.value} batch {case.batch} has {name} = {value!r}; "
                "latencies must be positive and finite, spreads finite and >= 0",
                "re-create the baseline with ortgpu bench --save (an edited or damaged file cannot gate regressions)",
            )


def environment_changes(old: BenchResult, new: BenchResult) -> tuple[str, ...]:
    """What differs between the environments of two runs, as 'what: old -> new' lines."""
    a, b = old.environment, new.environment
    pairs = [
        ("ONNX Runtime library", _library(old), _library(new)),
        ("ONNX Runtime", a.ort_version, b.ort_version),
        ("ORT CUDA build", a.ort_cuda_version, b.ort_cuda_version),
        ("ORT cuDNN build", a.ort_cudnn_version, b.ort_cudnn_version),
        ("GPU", a.gpu.name if a.gpu else None, b.gpu.name if b.gpu else None),
        ("driver", a.driver_version, b.driver_version),
        ("CPU", f"{a.cpu} ({a.cpu_count} cores)", f"{b.cpu} ({b.cpu_count} cores)"),
        ("session options", a.session_options, b.session_options),
        ("provider options", a.provider_options, b.provider_options),
        ("loaded libraries", a.loaded_libraries, b.loaded_libraries),
        ("CUDA runtime", a.cuda_runtime_version, b.cuda_runtime_version),
        ("cuDNN", a.cudnn_version, b.cudnn_version),
    ]
    return tuple(f"{what}: {x} -> {y}" for what, x, y in pairs if x != y)


def _library(result: BenchResult) -> str:
    package = result.package
    return "the onnxruntime wheel" if package is None else f"the C library {package.library}"


def _compare_case(case: BenchCase, base: BenchCase, threshold: float) -> CaseComparison:
    if case.stats is None or base.stats is None:
        raise ValueError(f"{case.key.label}: only measured cases can be compared")
    new, old = case.stats, base.stats
    noise = old.mad_ms  # robust: a few stalls in the baseline must not hide a real regression
    reasons: list[str] = []
    regressed = improved = False
    for label, before, after in (("p50", old.p50_ms, new.p50_ms), ("p95", old.p95_ms, new.p95_ms)):
        change = after - before
        rel = change / before if before > 0 else 0.0
        if rel > threshold and change > noise:
            regressed = True
            reasons.append(
                f"{label} {before:.3f} -> {after:.3f} ms (+{rel:.1%}, over {threshold:.0%} and over the "
                f"baseline's spread {noise:.3f} ms)"
            )
        elif rel > threshold:
            reasons.append(f"{label} +{rel:.1%} is within the baseline's own spread ({noise:.3f} ms): not counted")
        elif label == "p50" and -rel > threshold and -change > noise:
            improved = True
    if regressed:
        verdict = Verdict.REGRESSED
    elif improved:
        verdict = Verdict.IMPROVED
    else:
        verdict = Verdict.SAME
    return CaseComparison(
        key=case.key,
        baseline_p50_ms=old.p50_ms,
        p50_ms=new.p50_ms,
        p50_delta=(new.p50_ms - old.p50_ms) / old.p50_ms if old.p50_ms > 0 else 0.0,
        baseline_p95_ms=old.p95_ms,
        p95_ms=new.p95_ms,
        p95_delta=(new.p95_ms - old.p95_ms) / old.p95_ms if old.p95_ms > 0 else 0.0,
        noise_ms=noise,
        verdict=verdict,
        reasons=tuple(reasons),
    )


def check_same_model(baseline: BenchResult, sha256: str, path: Path) -> None:
    """Refuse a baseline measured on another model (exit 2): its numbers say nothing about this one."""
    if baseline.model.sha256 != sha256:
        raise BaselineError(
            f"{path}: baseline is from another model ({baseline.model.path.name}, sha256 "
            f"{baseline.model.sha256[:12]}…; this model is {sha256[:12]}…)",
            "compare runs of the same model file, or re-create the baseline with --save",
        )


def compare_to_baseline(
    result: BenchResult, baseline: BenchResult, baseline_path: Path, max_regression: float
) -> BaselineComparison:
    """Compare the measured cases of ``result`` with ``baseline``'s, matched on EP, mode, batch, concurrency
    and sessions. A case regresses when its p50 or p95 grew by more than ``max_regression`` (a fraction) AND
    by more than the baseline's own spread (its MAD-based standard deviation estimate, robust to stalls).
    Cases present on one side only are listed, not compared.
    """
    check_same_model(baseline, result.model.sha256, baseline_path)
    base = {c.key: c for c in baseline.cases if c.measured}
    now = {c.key: c for c in result.cases if c.measured}
    matched = [k for k in now if k in base]
    if not matched and now:
        raise BaselineError(
            f"{baseline_path}: no case of this run matches the baseline (baseline has "
            f"{', '.join(k.label for k in base) or 'no measured case'})",
            "run the same --ep / --mode / --batch / --concurrency as the baseline",
        )
    return BaselineComparison(
        baseline=Path(baseline_path),
        baseline_date=baseline.environment.date_utc,
        max_regression=max_regression,
        cases=tuple(_compare_case(now[k], base[k], max_regression) for k in matched),
        only_in_run=_labels(k for k in now if k not in base),
        only_in_baseline=_labels(k for k in base if k not in now),
        environment_changes=environment_changes(baseline, result),
    )


def _labels(keys: Iterable) -> tuple[str, ...]:
    return tuple(k.label for k in keys)
