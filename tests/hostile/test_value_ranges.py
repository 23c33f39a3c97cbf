"""Value ranges that would feed inf or NaN are refused, not passed on silently (issue 17, item 10)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

CHECK = ["check", "--ep", "cpu", "--warm-runs", "1"]


def _model(tmp_path: Path, elem: str) -> Path:
    import onnx
    from onnx import TensorProto, helper

    kind = getattr(TensorProto, elem)
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", kind, [1, 4])],
        [helper.make_tensor_value_info("y", kind, [1, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / f"{elem.lower()}.onnx"
    onnx.save(model, path)
    return path


@pytest.mark.parametrize(
    ("elem", "text"),
    [
        ("FLOAT", "x=-1e308,1e308"),
        ("FLOAT", "x=-1e39,0"),
        ("DOUBLE", "x=-1e308,1e308"),
        ("FLOAT16", "x=-70000,70000"),
        ("FLOAT16", "x=-40000,40000"),  # each end fits float16, the width does not
    ],
)
def test_a_range_the_type_cannot_hold_is_refused(
    cli: Callable[..., object], tmp_path: Path, elem: str, text: str
) -> None:
    outcome = cli(*CHECK, str(_model(tmp_path, elem)), "--range", text, "--json")
    line = outcome.assert_one_line_error(2)
    assert "inf and NaN" in line


def test_the_same_range_in_a_config_is_refused(cli: Callable[..., object], tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[inputs]\nranges = {x = [-1e308, 1e308]}\n", encoding="utf-8")
    line = cli(*CHECK, str(_model(tmp_path, "FLOAT")), "--config", str(config)).assert_one_line_error(2)
    assert "inf and NaN" in line


def test_a_wide_range_that_fits_still_runs_and_feeds_finite_values(cli: Callable[..., object], tmp_path: Path) -> None:
    import numpy as np

    saved = tmp_path / "out.npz"
    outcome = cli(*CHECK, str(_model(tmp_path, "FLOAT")), "--range", "x=-1e37,1e37", "--save-outputs", str(saved))
    assert outcome.rc == 0, outcome.err
    with np.load(saved) as data:  # an Identity model: the outputs are the generated inputs
        assert np.isfinite(data["y"]).all() and np.abs(data["y"]).max() > 1e30
