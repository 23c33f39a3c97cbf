"""Latency statistics for one benchmark case: percentiles, spread, throughput and a stability verdict."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ALPHA",
    "CV_WARN",
    "MIN_CPU_CHUNKS",
    "MIN_RUNS",
    "MIN_SAMPLES",
    "STALL_FACTOR",
    "TAIL_WARN",
    "LatencyStats",
    "ShiftTest",
    "compute_stats",
    "kept_latencies",
    "shift_test",
    "stability_problems",
]

# trtexec warns above a 1% coefficient of variation of GPU compute time; a host-timed loop on a shared machine
# is noisier, so 10% is where the percentiles stop being comparable run to run.
CV_WARN = 0.10
# A p99 more than 1.5x the median means stalls (other processes, clock changes, allocator growth) in the tail.
TAIL_WARN = 1.5
# Below this many timed runs the percentiles are too coarse to compare.
MIN_RUNS = 10
# A run this many times the median is a stall (a preemption, a page fault storm), not normal variation.
STALL_FACTOR = 5.0
_MAD_TO_STD = 1.4826  # for normally distributed data, MAD x 1.4826 estimates the standard deviation
# How many quantiles are kept (0..100 %) to draw the distribution without storing every sample.
_QUANTILE_POINTS = 101


@dataclass(frozen=True)
class LatencyStats:
    """Latency of one case in milliseconds, and its throughput.

    ``throughput`` is samples per second: batch x completed runs / wall time of the timed window (all threads
    together). ``cv`` is std / mean. ``mad_ms`` is the median absolute deviation scaled to estimate a standard
    deviation (x1.4826): a spread that a few stalls cannot inflate. ``stalls`` counts runs over STALL_FACTOR x p50.
    ``quantiles_ms`` holds the 0th..100th percentiles, for plots.
    ``stable`` is False when the spread is too wide to trust; ``problems`` says why.
    """

    count: int
    batch: int
    wall_s: float
    min_ms: float
    p50_ms: float
    p90_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float
    std_ms: float
    cv: float
    runs_per_s: float
    throughput: float
    stable: bool
    problems: tuple[str, ...]
    quantiles_ms: tuple[float, ...] = ()
    mad_ms: float = 0.0
    stalls: int = 0

    @property
    def tail_ratio(self) -> float:
        """p99 / p50: how far the slow tail reaches."""
        return self.p99_ms / self.p50_ms if self.p50_ms > 0 else float("inf")


def stability_problems(
    count: int, cv: float, tail_ratio: float, robust_cv: float = 0.0, stalls: int = 0
) -> tuple[str, ...]:
    """Why a measurement cannot be trusted; empty when it can.

    ``robust_cv`` is the MAD-based spread over the median; when it is small but ``cv`` is large, a few stalls
    carry the whole variance: the percentiles hold, the mean and the std do not.
    """
    problems: list[str] = []
    if count < MIN_RUNS:
        problems.append(f"only {count} timed runs (fewer than {MIN_RUNS}): percentiles are coarse")
    if robust_cv > CV_WARN:
        problems.append(
            f"latency varies a lot: coefficient of variation {cv:.0%}, robust spread {robust_cv:.0%} "
            f"of the median (over {CV_WARN:.0%})"
        )
    elif cv > CV_WARN:
        problems.append(
            f"rare stalls: {stalls} run(s) over {STALL_FACTOR:g}x p50 push the coefficient of "
            f"variation to {cv:.0%} (over {CV_WARN:.0%}); the mean and std carry them, the median does not"
        )
    if tail_ratio > TAIL_WARN:
        problems.append(f"slow tail: p99 is {tail_ratio:.1f}x p50 (over {TAIL_WARN}x)")
    return tuple(problems)


def compute_stats(samples_ns: Sequence[int] | Any, batch: int, wall_s: float) -> LatencyStats:
    """Stats from per-run latencies in nanoseconds (a sequence or numpy array) measured over ``wall_s`` seconds.

    Percentiles use linear interpolation between the closest ranks (numpy's default).
    """
    import numpy as np

    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    values = np.asarray(samples_ns, dtype=np.float64) / 1e6
    count = int(values.size)
    if count == 0:
        raise ValueError("no samples")
    quantiles = np.percentile(values, np.linspace(0.0, 100.0, _QUANTILE_POINTS))
    p50, p90, p95, p99 = (float(q) for q in np.percentile(values, (50, 90, 95, 99)))
    mean = float(values.mean())
    std = float(values.std(ddof=1)) if count > 1 else 0.0
    cv = std / mean if mean > 0 else 0.0
    mad = float(np.median(np.abs(values - p50))) * _MAD_TO_STD
    stalls = int((values > STALL_FACTOR * p50).sum())
    wall = float(wall_s) if wall_s > 0 else float(values.sum() / 1e3)
    runs_per_s = count / wall if wall > 0 else 0.0
    tail = p99 / p50 if p50 > 0 else float("inf")
    problems = stability_problems(count, cv, tail, mad / p50 if p50 > 0 else 0.0, stalls)
    return LatencyStats(
        count=count,
        batch=batch,
        wall_s=wall,
        min_ms=float(values.min()),
        p50_ms=p50,
        p90_ms=p90,
        p95_ms=p95,
        p99_ms=p99,
        max_ms=float(values.max()),
        mean_ms=mean,
        std_ms=std,
        cv=cv,
        runs_per_s=runs_per_s,
        throughput=runs_per_s * batch,
        stable=not problems,
        problems=problems,
        quantiles_ms=tuple(float(q) for q in quantiles),
        mad_ms=mad,
        stalls=stalls,
    )


# ------------------------------------------------------------------------------------------- against a baseline

ALPHA = 0.01  # one-sided Mann-Whitney U: how sure the new run is slower before a shift can count
MIN_SAMPLES = 20  # fewer kept latencies than this on either side: no test, threshold only
MIN_CPU_CHUNKS = 8  # CPU time per run is kept per slice of runs: at least this many slices a side to test it
BOOTSTRAP_RESAMPLES = 2000


@dataclass(frozen=True)
class ShiftTest:
    """How a run's latencies compare with a baseline's, from the latencies both kept.

    ``shift`` is median(new) / median(baseline) - 1 (0.15: 15% slower), ``ci_low`` / ``ci_high`` its 95% bootstrap
    interval. ``p_slower`` / ``p_faster`` are one-sided Mann-Whitney U p-values (small: the new run really is
    slower / faster). ``confidence`` is the bootstrap probability that the shift exceeds the threshold.
    ``method`` says which latencies were used: "samples" (the latencies kept in run order), "quantiles" (the
    101 percentiles of an older file) or "none" (too few on a side: no test).
    """

    method: str
    n_baseline: int
    n_new: int
    shift: float
    ci_low: float
    ci_high: float
    p_slower: float
    p_faster: float
    confidence: float


def kept_latencies(timeline_ms: Sequence[float], quantiles_ms: Sequence[float]) -> tuple[tuple[float, ...], str]:
    """The latencies a saved case carries for a test: its samples in run order, else its percentiles."""
    if len(timeline_ms) >= MIN_SAMPLES:
        return tuple(timeline_ms), "samples"
    if len(quantiles_ms) >= MIN_SAMPLES:
        return tuple(quantiles_ms), "quantiles"
    return (), "none"


def shift_test(
    baseline_ms: Sequence[float],
    new_ms: Sequence[float],
    threshold: float,
    *,
    seed: int = 0,
    min_samples: int = MIN_SAMPLES,
) -> ShiftTest | None:
    """Test whether ``new_ms`` is slower than ``baseline_ms`` (None when a side has fewer than ``min_samples``)."""
    import numpy as np
    from scipy.stats import mannwhitneyu

    old = np.asarray(baseline_ms, dtype=np.float64)
    new = np.asarray(new_ms, dtype=np.float64)
    old, new = old[np.isfinite(old) & (old > 0)], new[np.isfinite(new) & (new > 0)]
    if old.size < min_samples or new.size < min_samples:
        return None
    shift = float(np.median(new) / np.median(old) - 1.0)
    slower = mannwhitneyu(new, old, alternative="greater")
    faster = mannwhitneyu(new, old, alternative="less")
    rng = np.random.default_rng(seed)
    old_medians = np.median(old[rng.integers(0, old.size, (BOOTSTRAP_RESAMPLES, old.size))], axis=1)
    new_medians = np.median(new[rng.integers(0, new.size, (BOOTSTRAP_RESAMPLES, new.size))], axis=1)
    shifts = new_medians / old_medians - 1.0
    low, high = np.percentile(shifts, (2.5, 97.5))
    return ShiftTest(
        method="samples",
        n_baseline=int(old.size),
        n_new=int(new.size),
        shift=shift,
        ci_low=float(low),
        ci_high=float(high),
        p_slower=float(slower.pvalue),
        p_faster=float(faster.pvalue),
        confidence=float((shifts > threshold).mean()),
    )
