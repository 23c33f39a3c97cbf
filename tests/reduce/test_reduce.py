"""`ortgpu debug reduce`: a deep failing model cut to the node that fails, with the steps and the inputs."""

from __future__ import annotations

import json
from pathlib import Path

import crafted
import numpy as np
import onnx
import onnxruntime as ort
import pytest

from ortgpu.cli.main import main
from ortgpu.config import ExecutionProvider
from ortgpu.model.inputs import InputSpec
from ortgpu.reduce import ConditionKind, ReduceError, ReduceRequest, run_reduce


def test_nan_deep_in_a_chain_is_cut_to_the_one_node_that_makes_it(tmp_path: Path) -> None:
    model = crafted.nan_deep_chain(tmp_path / "deep.onnx", depth=40, nan_at=27)
    out, inputs = tmp_path / "reduced.onnx", tmp_path / "reduced.npz"
    result = run_reduce(ReduceRequest(model=model, output=out, save_inputs=inputs))
    assert result.reproduced and result.nodes_before == 43 and result.nodes_after == 1
    assert result.kept_nodes == ("Sqrt (n27_sqrt)",) and result.inputs == ("t27_low",) and result.outputs == ("t27",)
    assert result.steps[0].phase == "whole" and result.steps[0].fails and result.steps[-1].phase == "result"
    assert len(result.steps) <= 16  # bisection: about 2 log2(43) candidates, not one per node
    reduced = onnx.load(str(out))
    with np.load(inputs) as data:
        feeds = {name: data[name] for name in data.files}
    (value,) = ort.InferenceSession(reduced.SerializeToString()).run(None, feeds)
    assert np.isnan(value).all() and np.isfinite(feeds["t27_low"]).all()  # the NaN is made here, not fed in


def test_inf_from_exp_and_the_finite_side_branch_is_left_out(tmp_path: Path) -> None:
    result = run_reduce(ReduceRequest(model=crafted.inf_model(tmp_path / "inf.onnx"), output=tmp_path / "r.onnx"))
    assert result.reproduced and result.kept_nodes == ("Exp (exp)",)
    deep = run_reduce(ReduceRequest(model=crafted.nan_deep_chain(tmp_path / "d.onnx"), output=tmp_path / "d.r.onnx"))
    assert all("side_branch" not in node for node in deep.kept_nodes)


def test_an_op_the_ep_refuses_is_cut_to_that_op(tmp_path: Path) -> None:
    model = crafted.refused_op_model(tmp_path / "refused.onnx")
    result = run_reduce(
        ReduceRequest(
            model=model,
            output=tmp_path / "r.onnx",
            condition=ConditionKind.REFUSE,
            inputs=InputSpec(dims={"batch": 2}),
        )
    )
    assert result.reproduced and result.kept_nodes == ("Mystery (mystery)",)
    assert "is not a registered function/op" in result.failure and "/tmp" not in result.failure


def test_a_model_that_does_not_fail_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = crafted.small_cnn(tmp_path / "cnn.onnx")
    result = run_reduce(ReduceRequest(model=model, output=tmp_path / "r.onnx"))
    assert not result.reproduced and result.verdict.startswith("NOT REPRODUCED") and not (tmp_path / "r.onnx").exists()
    assert main(["debug", "reduce", str(model), "-o", str(tmp_path / "r.onnx")]) == 1


def test_bad_requests_and_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = crafted.nan_deep_chain(tmp_path / "deep.onnx")
    with pytest.raises(ReduceError, match="nothing to compare"):
        run_reduce(ReduceRequest(model=model, output=tmp_path / "r.onnx", condition=ConditionKind.CHECK))
    with pytest.raises(ReduceError, match=r"ending in \.onnx"):
        run_reduce(ReduceRequest(model=model, output=tmp_path / "r.txt"))
    assert main(["debug", "reduce", str(model), "-o", str(tmp_path / "r.onnx"), "--condition", "bogus"]) == 2
    assert main(["debug", "reduce", str(model), "-o", str(tmp_path / "r.onnx")]) == 0
    assert "REDUCED: 17 -> 1 node(s)" in capsys.readouterr().out.replace("\n", " ")
    assert main(["debug", "reduce", str(model), "-o", str(tmp_path / "r.onnx"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "ortgpu.debug-reduce/v1" and doc["result"]["nodes_after"] == 1


@pytest.mark.gpu
def test_nan_on_cuda_is_cut_the_same_way(tmp_path: Path) -> None:
    model = crafted.nan_deep_chain(tmp_path / "deep.onnx")
    result = run_reduce(ReduceRequest(model=model, output=tmp_path / "r.onnx", ep=ExecutionProvider.CUDA))
    assert result.reproduced and result.kept_nodes == ("Sqrt (n9_sqrt)",)


def test_outputs_are_checked_before_any_work(tmp_path: Path) -> None:
    model = crafted.nan_deep_chain(tmp_path / "deep.onnx")
    with pytest.raises(ReduceError, match="is the input"):
        run_reduce(ReduceRequest(model=model, output=model))
    (tmp_path / "folder.onnx").mkdir()
    with pytest.raises(ReduceError, match="is a directory"):
        run_reduce(ReduceRequest(model=model, output=tmp_path / "folder.onnx"))
    with pytest.raises(ReduceError, match=r"must end in \.npz"):
        run_reduce(ReduceRequest(model=model, output=tmp_path / "r.onnx", save_inputs=tmp_path / "r.onnx"))
    assert not (tmp_path / "r.onnx").exists()
