"""LatencyStats: percentiles, throughput and the stability verdict."""

from __future__ import annotations

import pytest

from ortgpu.bench.stats import CV_WARN, MIN_RUNS, TAIL_WARN, compute_stats


def test_percentiles_and_throughput_from_known_samples() -> None:
    samples_ns = [i * 1_000_000 for i in range(1, 101)]  # 1..100 ms
    stats = compute_stats(samples_ns, batch=8, wall_s=10.0)
    assert stats.count == 100
    assert stats.min_ms == 1.0 and stats.max_ms == 100.0
    assert stats.p50_ms == pytest.approx(50.5)
    assert stats.p90_ms == pytest.approx(90.1)
    assert stats.p99_ms == pytest.approx(99.01)
    assert stats.mean_ms == pytest.approx(50.5)
    assert stats.runs_per_s == pytest.approx(10.0)
    assert stats.throughput == pytest.approx(80.0)  # batch x runs / s
    assert len(stats.quantiles_ms) == 101 and stats.quantiles_ms[50] == pytest.approx(stats.p50_ms)


def test_tight_samples_are_stable() -> None:
    stats = compute_stats([1_000_000 + (i % 5) * 1000 for i in range(200)], batch=1, wall_s=0.2)
    assert stats.stable and stats.problems == ()
    assert stats.cv < CV_WARN


def test_wide_spread_and_slow_tail_are_flagged() -> None:
    samples = [1_000_000] * 95 + [20_000_000] * 5
    stats = compute_stats(samples, batch=1, wall_s=1.0)
    assert not stats.stable
    assert stats.tail_ratio > TAIL_WARN
    assert any("coefficient of variation" in p for p in stats.problems)
    assert any("p99" in p for p in stats.problems)


def test_too_few_runs_are_flagged() -> None:
    stats = compute_stats([1_000_000] * (MIN_RUNS - 1), batch=1, wall_s=0.01)
    assert not stats.stable
    assert "timed runs" in stats.problems[0]


@pytest.mark.parametrize(("samples", "batch"), [([], 1), ([1000], 0)])
def test_rejects_nonsense(samples: list[int], batch: int) -> None:
    with pytest.raises(ValueError):
        compute_stats(samples, batch=batch, wall_s=1.0)


def test_rare_stalls_are_told_apart_from_a_wide_spread() -> None:
    import numpy as np

    stalled = compute_stats([1_000_000] * 995 + [50_000_000] * 5, batch=1, wall_s=1.25)
    assert stalled.stalls == 5 and stalled.mad_ms == 0.0
    assert stalled.p99_ms == 1.0 and stalled.cv > CV_WARN
    assert [p.split(":")[0] for p in stalled.problems] == ["rare stalls"]
    wide = compute_stats((np.random.default_rng(1).uniform(0.5, 1.5, 1000) * 1e6).astype(int), batch=1, wall_s=1.0)
    assert wide.mad_ms == pytest.approx(0.37, abs=0.05)
    assert any(p.startswith("latency varies a lot") for p in wide.problems)
