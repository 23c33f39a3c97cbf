"""The regression gate decides with statistics: noise is not a regression, a real slowdown is, a case that flips
on a re-measure is not counted, and baselines from before the samples were kept still work."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from ortgpu.bench.archive import compare_to_baseline, confirm_regressions, load_result, save_result
from ortgpu.bench.result import BaselineVerdict
from ortgpu.bench.stats import MIN_SAMPLES, kept_latencies, shift_test


def _draw(median: float, seed: int, n: int = 300, cv: float = 0.2) -> np.ndarray:
    shape = 1 / cv**2
    return np.random.default_rng(seed).gamma(shape, median / shape, n)


def test_noise_is_not_significant_and_a_real_slowdown_is() -> None:
    base = _draw(10.0, 1)
    same = shift_test(base, _draw(10.0, 2), 0.10)
    assert same is not None and same.p_slower > 0.01 and same.confidence < 0.05
    slower = shift_test(base, _draw(10.0, 3) * 1.25, 0.10)
    assert slower is not None and slower.p_slower < 1e-6 and slower.confidence > 0.95
    assert slower.ci_low < slower.shift < slower.ci_high


def test_too_few_latencies_give_no_test() -> None:
    assert shift_test([1.0] * (MIN_SAMPLES - 1), [1.0] * 100, 0.1) is None
    assert kept_latencies((), ()) == ((), "none")
    assert kept_latencies((), tuple(range(1, 102)))[1] == "quantiles"


def _with_latencies(result, factor_by_batch: dict[int, float], seed: int):
    """The result's cases with kept latencies drawn around their p50 (times a factor)."""
    cases = []
    for i, case in enumerate(result.cases):
        draws = _draw(case.stats.p50_ms * factor_by_batch.get(case.batch, 1.0), seed + i, cv=0.1)
        cases.append(dataclasses.replace(case, timeline_ms=tuple(float(v) for v in draws)))
    return dataclasses.replace(result, cases=tuple(cases))


def test_gate_on_kept_latencies(tmp_path: Path, make_result) -> None:
    rows = [("cpu", "run", 1, 4.0, 0.01), ("cpu", "run", 8, 20.0, 0.01)]
    base = _with_latencies(make_result(rows), {}, seed=10)
    now = _with_latencies(make_result(rows), {1: 1.0, 8: 1.25}, seed=20)
    comparison = compare_to_baseline(now, base, tmp_path / "b.json", 0.10)
    by_batch = {c.key.batch: c for c in comparison.cases}
    assert by_batch[1].verdict is BaselineVerdict.SAME and by_batch[1].method == "samples"
    slow = by_batch[8]
    assert slow.verdict is BaselineVerdict.REGRESSED and slow.confidence is not None and slow.confidence > 0.9
    assert slow.p_value is not None and slow.p_value < 0.01 and slow.shift_ci is not None
    assert "Mann-Whitney" in slow.reasons[0]


def test_a_case_that_flips_on_a_re_measure_is_not_counted(tmp_path: Path, make_result) -> None:
    rows = [("cpu", "run", 1, 4.0, 0.01)]
    base = _with_latencies(make_result(rows), {}, seed=10)
    busy = _with_latencies(make_result(rows), {1: 1.4}, seed=20)  # a busy moment
    calm = _with_latencies(make_result(rows), {}, seed=30)
    first = compare_to_baseline(busy, base, tmp_path / "b.json", 0.10)
    assert first.regressed
    final = confirm_regressions(first, {c.key: c for c in calm.cases}, base)
    assert not final.regressed
    assert final.cases[0].verdict is BaselineVerdict.SAME and "flipped" in final.cases[0].reasons[-1]
    assert len(final.cases[0].remeasured) == 1
    still_slow = _with_latencies(make_result(rows), {1: 1.4}, seed=40)
    confirmed = confirm_regressions(first, {c.key: c for c in still_slow.cases}, base)
    assert confirmed.regressed and "confirmed by a re-measure" in confirmed.cases[0].reasons[-1]


def test_a_baseline_saved_before_latencies_were_kept_still_works(tmp_path: Path, make_result) -> None:
    rows = [("cpu", "run", 1, 4.0, 0.4)]
    path = save_result(make_result(rows), tmp_path / "old.json")
    doc = json.loads(path.read_text())
    for case in doc["result"]["cases"]:  # an old file: no samples, no percentiles
        case.pop("timeline_ms", None)
        case["stats"].pop("quantiles_ms", None)
    path.write_text(json.dumps(doc))
    old = load_result(path)
    now = make_result([("cpu", "run", 1, 5.0, 0.4)])  # +25%, well over the old file's spread
    compared = compare_to_baseline(now, old, path, 0.10).cases[0]
    assert compared.verdict is BaselineVerdict.REGRESSED and compared.method == "none" and compared.confidence is None
    assert any("threshold and spread only" in r for r in compared.reasons)


def test_quantiles_of_an_older_file_are_tested_on(tmp_path: Path, make_result) -> None:
    base = make_result([("cpu", "run", 1, 4.0, 0.4)])  # percentiles kept, no samples
    now = make_result([("cpu", "run", 1, 5.0, 0.4)], seed=3)
    compared = compare_to_baseline(now, base, tmp_path / "b.json", 0.10).cases[0]
    assert compared.method == "quantiles" and compared.verdict is BaselineVerdict.REGRESSED
    assert any("101 percentiles" in r for r in compared.reasons)


@pytest.mark.parametrize("factor", [1.0, 1.02])
def test_the_gate_result_round_trips_through_a_saved_file(tmp_path: Path, make_result, factor: float) -> None:
    rows = [("cpu", "run", 1, 4.0, 0.01)]
    base = _with_latencies(make_result(rows), {}, seed=1)
    now = _with_latencies(make_result(rows), {1: factor}, seed=2)
    result = dataclasses.replace(now, comparison=compare_to_baseline(now, base, tmp_path / "b.json", 0.10))
    assert load_result(save_result(result, tmp_path / "r.json")) == result


def _with_cpu(result, wall_factor: float, cpu_factor: float, seed: int, share: float):
    cases = []
    for i, case in enumerate(result.cases):
        wall = _draw(case.stats.p50_ms * wall_factor, seed + i, cv=0.1)
        cpu = _draw(case.stats.p50_ms * cpu_factor, seed + 100 + i, n=40, cv=0.03)
        cases.append(
            dataclasses.replace(
                case, timeline_ms=tuple(map(float, wall)), cpu_ms_per_run=tuple(map(float, cpu)), cpu_per_wall=share
            )
        )
    return dataclasses.replace(result, cases=tuple(cases))


def test_on_the_cpu_ep_a_busy_machine_is_not_a_regression(tmp_path: Path, make_result) -> None:
    rows = [("cpu", "run", 1, 4.0, 0.01)]
    base = _with_cpu(make_result(rows), 1.0, 1.0, seed=1, share=0.95)
    busy = _with_cpu(make_result(rows), 1.4, 1.01, seed=2, share=0.6)  # wall +40%, the same CPU per run
    compared = compare_to_baseline(busy, base, tmp_path / "b.json", 0.10).cases[0]
    assert compared.verdict is BaselineVerdict.SAME and compared.method == "cpu time"
    assert compared.shift is not None and compared.shift > 0.3  # the wall clock alone would have failed it
    assert any("the machine was busy" in r for r in compared.reasons)
    assert compared.cpu_share == (0.95, 0.6)


def test_on_the_cpu_ep_runs_that_cost_more_cpu_are_a_regression(tmp_path: Path, make_result) -> None:
    rows = [("cpu", "run", 1, 4.0, 0.01)]
    base = _with_cpu(make_result(rows), 1.0, 1.0, seed=1, share=0.95)
    slower = _with_cpu(make_result(rows), 1.15, 1.15, seed=3, share=0.95)
    compared = compare_to_baseline(slower, base, tmp_path / "b.json", 0.10).cases[0]
    assert compared.verdict is BaselineVerdict.REGRESSED
    assert compared.cpu_shift is not None and 0.1 < compared.cpu_shift < 0.2 and compared.cpu_p_value < 0.01
    assert any("CPU time per run" in r for r in compared.reasons)


def test_a_bench_run_keeps_its_cpu_time_per_run(tiny_model: Path) -> None:
    from ortgpu.bench.runner import BenchRequest, run_bench
    from ortgpu.ep import ExecutionProvider

    case = run_bench(BenchRequest(model=tiny_model, ep=ExecutionProvider.CPU, duration_s=0.5)).cases[0]
    assert len(case.cpu_ms_per_run) >= 8 and all(v > 0 for v in case.cpu_ms_per_run)
    assert case.cpu_per_wall is not None and case.cpu_per_wall > 0


def test_on_the_cpu_ep_cpu_time_alone_does_not_fail_a_run(tmp_path: Path, make_result) -> None:
    rows = [("cpu", "run", 1, 4.0, 0.01)]
    base = _with_cpu(make_result(rows), 1.0, 1.0, seed=1, share=0.95)
    nudged = _with_cpu(make_result(rows), 1.05, 1.15, seed=4, share=0.9)  # cache contention: CPU +15%, wall +5%
    compared = compare_to_baseline(nudged, base, tmp_path / "b.json", 0.10).cases[0]
    assert compared.verdict is BaselineVerdict.SAME
    assert any("the wall clock does not show it" in r for r in compared.reasons)
