"""A baseline whose numbers could hide a regression is refused (issue 17, item 10).

``p50 = 0`` makes every relative change infinite or undefined, a negative or NaN latency compares as anything,
and a spread (``mad_ms``) of "inf" calls every regression noise.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

BENCH = ["bench", "--ep", "cpu", "--iterations", "10", "--warmup", "1"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    from ortgpu.cli.main import main
    from ortgpu.model.zoo import build_tiny_model

    folder = tmp_path_factory.mktemp("baseline")
    model = build_tiny_model(folder / "tiny.onnx")
    path = folder / "base.json"
    assert main([*BENCH, str(model), "--save", str(path), "--json"]) == 0
    return model, json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("p50_ms", 0),
        ("p50_ms", -1.5),
        ("p95_ms", "nan"),
        ("p99_ms", "inf"),
        ("mad_ms", "inf"),
        ("mad_ms", -0.1),
        ("p50_ms", True),
    ],
)
def test_a_baseline_with_impossible_numbers_is_refused(
    cli: Callable[..., object], saved: tuple[Path, dict], tmp_path: Path, field: str, value: object
) -> None:
    model, doc = saved
    doc = json.loads(json.dumps(doc))
    doc["result"]["cases"][0]["stats"][field] = value
    baseline = tmp_path / "edited.json"
    baseline.write_text(json.dumps(doc), encoding="utf-8")
    line = cli(*BENCH, str(model), "--baseline", str(baseline)).assert_one_line_error(2)
    assert field in line and "re-create" in line


def test_an_untouched_baseline_still_compares(
    cli: Callable[..., object], saved: tuple[Path, dict], tmp_path: Path
) -> None:
    model, doc = saved
    baseline = tmp_path / "same.json"
    baseline.write_text(json.dumps(doc), encoding="utf-8")
    outcome = cli(*BENCH, str(model), "--baseline", str(baseline), "--max-regression", "1000%")
    assert outcome.rc == 0, outcome.err
    assert "against" in outcome.out
