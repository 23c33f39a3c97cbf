"""Saved bench results: write them atomically, read them back, and compare a run with a baseline case by case."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from ortgpu.atomic import atomic_write_text
from ortgpu.bench.result import (
    BaselineComparison,
    BaselineVerdict,
    BenchCase,
    BenchResult,
    CaseComparison,
    CaseKey,
    from_jsonable,
)
from ortgpu.bench.stats import ALPHA, MIN_CPU_CHUNKS, kept_latencies, shift_test
from ortgpu.errors import BadInputError
from ortgpu.results import envelope, read_envelope

__all__ = [
    "COMMAND",
    "BaselineError",
    "check_same_model",
    "compare_to_baseline",
    "confirm_regressions",
    "environment_changes",
    "load_result",
    "save_result",
]

COMMAND = "bench"


class BaselineError(BadInputError):
    """A baseline file that cannot be compared: not ours, damaged, or from another model (exit 2)."""


def save_result(result: BenchResult, path: Path) -> Path:
    """Write ``result`` as a versioned JSON envelope; atomic, so an old file survives a failed write."""

    return atomic_write_text(path, json.dumps(envelope(COMMAND, result), indent=1) + "\n")


def load_result(path: Path) -> BenchResult:
    """Read a file written by ``ortgpu bench --save`` back into a BenchResult; BaselineError when it is not one."""

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
    """One case against the baseline's.

    With latencies on both sides (the samples a run keeps, or an old file's percentiles) a case regresses when its
    median is more than ``threshold`` slower AND a one-sided Mann-Whitney U test says it really is slower
    (p < ALPHA); without them, when p50 grew by more than ``threshold`` and by more than the baseline's own spread.
    On the CPU EP, when both runs kept their CPU time per run, that must regress too (the same test): a model that
    got slower costs more CPU per run, a busy machine mostly stretches the wall time. p95 is reported, not gated.
    """

    if case.stats is None or base.stats is None:
        raise ValueError(f"{case.key.label}: only measured cases can be compared")
    new, old = case.stats, base.stats
    noise = old.mad_ms  # robust: a few stalls in the baseline must not hide a real regression
    old_ms, old_method = kept_latencies(base.timeline_ms, old.quantiles_ms)
    new_ms, _ = kept_latencies(case.timeline_ms, new.quantiles_ms)
    test = shift_test(old_ms, new_ms, threshold) if old_ms and new_ms else None
    cpu = None
    if case.ep.value == "cpu":
        cpu = shift_test(base.cpu_ms_per_run, case.cpu_ms_per_run, threshold, min_samples=MIN_CPU_CHUNKS)
    reasons: list[str] = []
    p50_rel = (new.p50_ms - old.p50_ms) / old.p50_ms if old.p50_ms > 0 else 0.0
    p95_rel = (new.p95_ms - old.p95_ms) / old.p95_ms if old.p95_ms > 0 else 0.0
    if test is not None:
        regressed = test.shift > threshold and test.p_slower < ALPHA
        improved = -test.shift > threshold and test.p_faster < ALPHA
        where = f"median {test.shift:+.1%} (95% interval {test.ci_low:+.1%} to {test.ci_high:+.1%})"
        if regressed:
            reasons.append(
                f"{where}: over {threshold:.0%} and slower by a Mann-Whitney U test (p={test.p_slower:.1g}); "
                f"{test.confidence:.0%} of bootstrap resamples are over {threshold:.0%}"
            )
        elif test.shift > threshold:
            reasons.append(f"{where}: over {threshold:.0%} but not significant (p={test.p_slower:.2g}): not counted")
        if old_method == "quantiles":
            reasons.append("the baseline keeps percentiles, not samples: the test runs on its 101 percentiles")
    else:
        regressed = p50_rel > threshold and new.p50_ms - old.p50_ms > noise
        improved = -p50_rel > threshold and old.p50_ms - new.p50_ms > noise
        if regressed:
            reasons.append(
                f"p50 {old.p50_ms:.3f} -> {new.p50_ms:.3f} ms (+{p50_rel:.1%}, over {threshold:.0%} and over the "
                f"baseline's spread {noise:.3f} ms)"
            )
        elif p50_rel > threshold:
            reasons.append(f"p50 +{p50_rel:.1%} is within the baseline's own spread ({noise:.3f} ms): not counted")
        reasons.append("the baseline carries no latencies to test against: decided on the threshold and spread only")
    share = _cpu_share(case, base)
    if cpu is not None:
        cpu_regressed = cpu.shift > threshold and cpu.p_slower < ALPHA
        cpu_improved = -cpu.shift > threshold and cpu.p_faster < ALPHA
        if regressed and not cpu_regressed:
            got = (
                f" (this process got {share[1]:.2f} CPU-seconds per second, the baseline {share[0]:.2f})"
                if share
                else ""
            )
            reasons.append(
                f"but the CPU time per run is {cpu.shift:+.1%} (p={cpu.p_slower:.2g}){got}: the machine was busy, "
                "the model is not slower: not counted"
            )
        elif regressed:
            reasons.append(
                f"CPU time per run {cpu.shift:+.1%} (95% interval {cpu.ci_low:+.1%} to {cpu.ci_high:+.1%}, "
                f"p={cpu.p_slower:.1g}): the runs cost more, whatever else the machine did"
            )
        elif cpu.shift > threshold:
            reasons.append(
                f"CPU time per run {cpu.shift:+.1%}, but the wall clock does not show it over {threshold:.0%}: "
                "not counted (a busy machine inflates CPU time too: caches, memory bandwidth)"
            )
        # a regression must show in both: the latency users see, and the CPU each run cost (load only stretches
        # the first; contention for caches and memory bandwidth can nudge the second)
        regressed, improved = regressed and cpu_regressed, improved and cpu_improved
    if p95_rel > threshold and not regressed:
        reasons.append(f"p95 {old.p95_ms:.3f} -> {new.p95_ms:.3f} ms (+{p95_rel:.1%}): the tail grew (not gated)")
    verdict = BaselineVerdict.REGRESSED if regressed else BaselineVerdict.IMPROVED if improved else BaselineVerdict.SAME
    decisive = test or cpu
    return CaseComparison(
        key=case.key,
        baseline_p50_ms=old.p50_ms,
        p50_ms=new.p50_ms,
        p50_delta=p50_rel,
        baseline_p95_ms=old.p95_ms,
        p95_ms=new.p95_ms,
        p95_delta=p95_rel,
        noise_ms=noise,
        verdict=verdict,
        reasons=tuple(reasons),
        method="cpu time" if cpu is not None else "none" if test is None else old_method,
        shift=None if test is None else test.shift,
        shift_ci=None if test is None else (test.ci_low, test.ci_high),
        p_value=None if decisive is None else decisive.p_slower,
        confidence=None if decisive is None else decisive.confidence,
        cpu_share=share,
        cpu_shift=None if cpu is None else cpu.shift,
        cpu_p_value=None if cpu is None else cpu.p_slower,
    )


def _cpu_share(case: BenchCase, base: BenchCase) -> tuple[float, float] | None:
    """Baseline and run CPU seconds per wall second, for CPU-EP cases where both are known (a GPU case's latency
    is not the host's CPU time)."""
    if case.ep.value != "cpu" or not case.cpu_per_wall or not base.cpu_per_wall:
        return None
    return base.cpu_per_wall, case.cpu_per_wall


def confirm_regressions(
    comparison: BaselineComparison, remeasured: Mapping[CaseKey, BenchCase], baseline: BenchResult
) -> BaselineComparison:
    """A case that regressed on the first measurement and was measured again: it stays regressed only when the
    re-measure regresses too; otherwise it flipped (a busy moment) and is not counted."""
    base = {c.key: c for c in baseline.cases if c.measured}
    cases = []
    for compared in comparison.cases:
        again = remeasured.get(compared.key)
        if again is None or compared.verdict is not BaselineVerdict.REGRESSED or not again.measured:
            cases.append(compared)
            continue
        second = _compare_case(again, base[compared.key], comparison.max_regression)
        measured = second.cpu_shift if second.cpu_shift is not None else second.shift
        shifts = (*compared.remeasured, measured if measured is not None else second.p50_delta)
        if second.verdict is BaselineVerdict.REGRESSED:
            note = f"confirmed by a re-measure ({shifts[-1]:+.1%})"
            cases.append(dataclasses.replace(compared, remeasured=shifts, reasons=(*compared.reasons, note)))
        else:
            note = (
                f"flipped: regressed on the first measurement, not on a re-measure ({shifts[-1]:+.1%}): "
                "not counted (a busy moment, not the model)"
            )
            cases.append(
                dataclasses.replace(
                    compared, verdict=BaselineVerdict.SAME, remeasured=shifts, reasons=(*compared.reasons, note)
                )
            )
    return dataclasses.replace(comparison, cases=tuple(cases))


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
    and sessions (see _compare_case for when a case regresses). Cases present on one side only are listed, not
    compared. A regressed case should then be measured again and passed through confirm_regressions.
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
