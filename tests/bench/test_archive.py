"""Saved results: atomic save, exact load, baseline comparison that gates CI only on real regressions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ortgpu.bench.archive import BaselineError, compare_to_baseline, load_result, save_result
from ortgpu.bench.result import BaselineVerdict
from ortgpu.errors import ExitCode


def test_save_and_load_round_trip(tmp_path: Path, make_result) -> None:
    result = make_result([("cuda", "run", 1, 1.0, 0.01), ("cpu", "iobinding", 8, 5.0, 0.2)])
    path = save_result(result, tmp_path / "run.json")
    doc = json.loads(path.read_text())
    assert doc["schema"] == "ortgpu.bench/v1"
    assert doc["result"]["model"]["sha256"] == "a" * 64
    assert load_result(path) == result
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temp file left behind


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not a JSON file"),
        ('{"hello": 1}', "not an ortgpu bench file"),
        ('{"schema": "ortgpu.check/v1", "result": {}}', "not an ortgpu bench file"),
        ('{"schema": "ortgpu.bench/v1", "result": {"model": 3}}', "damaged"),
    ],
)
def test_foreign_or_damaged_files_are_bad_input(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(content)
    with pytest.raises(BaselineError, match=message) as info:
        load_result(path)
    assert info.value.exit_code is ExitCode.BAD_INPUT


def test_missing_baseline_file(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match="not found"):
        load_result(tmp_path / "nope.json")


def test_regression_beyond_threshold_and_spread(tmp_path: Path, make_result) -> None:
    base = make_result([("cuda", "run", 1, 1.0, 0.01), ("cuda", "run", 8, 4.0, 0.01)])
    now = make_result([("cuda", "run", 1, 1.25, 0.01), ("cuda", "run", 8, 4.02, 0.01)])
    comparison = compare_to_baseline(now, base, tmp_path / "base.json", 0.10)
    verdicts = {c.key.batch: c.verdict for c in comparison.cases}
    assert verdicts == {1: BaselineVerdict.REGRESSED, 8: BaselineVerdict.SAME}
    assert comparison.regressed
    regressed = next(c for c in comparison.cases if c.key.batch == 1)
    assert regressed.p50_delta == pytest.approx(0.25, abs=0.02)
    assert "median +25" in regressed.reasons[0] and "Mann-Whitney" in regressed.reasons[0]


def test_a_noisy_baseline_does_not_fail_on_its_own_noise(tmp_path: Path, make_result) -> None:
    base = make_result([("cpu", "run", 1, 1.0, 0.9)], seed=1, timeline=True)  # std ~0.5 ms around 1 ms
    now = make_result([("cpu", "run", 1, 1.0, 0.9)], seed=2, timeline=True)  # the same, drawn again
    comparison = compare_to_baseline(now, base, tmp_path / "base.json", 0.10)
    assert comparison.cases[0].verdict is BaselineVerdict.SAME
    assert not comparison.regressed


def test_improvement_and_unmatched_cases(tmp_path: Path, make_result) -> None:
    base = make_result([("cuda", "run", 1, 2.0, 0.01), ("cuda", "run", 32, 9.0, 0.01)])
    now = make_result([("cuda", "run", 1, 1.0, 0.01), ("cuda", "iobinding", 1, 0.9, 0.01)])
    comparison = compare_to_baseline(now, base, tmp_path / "base.json", 0.10)
    assert [c.verdict for c in comparison.cases] == [BaselineVerdict.IMPROVED]
    assert comparison.only_in_run == ("cuda/iobinding batch 1",)
    assert comparison.only_in_baseline == ("cuda/run batch 32",)


def test_baseline_from_another_model_or_without_a_match_is_refused(tmp_path: Path, make_result) -> None:
    now = make_result([("cuda", "run", 1, 1.0, 0.01)])
    with pytest.raises(BaselineError, match="another model"):
        compare_to_baseline(now, make_result([("cuda", "run", 1, 1.0, 0.01)], sha="b" * 64), tmp_path / "b.json", 0.1)
    with pytest.raises(BaselineError, match="no case of this run matches"):
        compare_to_baseline(now, make_result([("cpu", "run", 1, 1.0, 0.01)]), tmp_path / "b.json", 0.1)


def test_environment_changes_are_listed(tmp_path: Path, make_result) -> None:
    base = make_result([("cuda", "run", 1, 1.0, 0.01)], ort_version="1.31.1")
    now = make_result([("cuda", "run", 1, 1.0, 0.01)])
    comparison = compare_to_baseline(now, base, tmp_path / "b.json", 0.1)
    assert comparison.environment_changes == ("ONNX Runtime: 1.31.1 -> 1.32.0",)
