"""`check` rebuilds the session with the open dims fixed when nodes left the EP, and says what that changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ortgpu.check import CheckRequest, run_check
from ortgpu.config import Config
from ortgpu.ep import ExecutionProvider
from ortgpu.model.inputs import InputSpec
from ortgpu.placement import PlacedNode, PlacementSource, build_report, parse_verbose_log
from ortgpu.session import verified as verified_module


def _shape_nodes_off_the_ep(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stand in for the CUDA EP keeping shape nodes on the CPU (here everything lands on the CPU EP): the real
    placement is read, and every node but the model's one Add is reported as on a host EP. Whether the shape nodes
    exist at all is ORT's real doing: with the batch fixed it folds them away."""

    def fake(log_text: str, requested: str, logid: str | None = None) -> Any:
        real = parse_verbose_log(log_text, requested, logid)
        host = [PlacedNode(f"shape{i}", "Shape", "HostExecutionProvider") for i in range(real.compute_count - 1)]
        return build_report([PlacedNode("add", "Add", requested), *host], requested, PlacementSource.LOG)

    monkeypatch.setattr(verified_module, "parse_verbose_log", fake)


def test_check_says_fixing_the_batch_moves_the_shape_nodes(
    shape_subgraph_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _shape_nodes_off_the_ep(monkeypatch)
    result = run_check(CheckRequest(shape_subgraph_model, ep=ExecutionProvider.CPU, inputs=InputSpec(batch=4)))
    assert result.placement.off_requested_count == 5
    probe = result.fixed_dims
    assert probe is not None
    assert probe.settings == {"free_dims": {"batch": 4}}
    assert (probe.off_before, probe.off_after, probe.moved) == (5, 0, 5)
    text = probe.message("CUDAExecutionProvider")
    assert "moves 5 of 5 CPU node(s) onto CUDAExecutionProvider: every node then runs there" in text
    assert "free_dims = { batch = 4 }" in text


def test_no_probe_when_every_node_is_on_the_ep_or_the_config_already_fixes_the_dims(
    shape_subgraph_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = run_check(CheckRequest(shape_subgraph_model, ep=ExecutionProvider.CPU, inputs=InputSpec(batch=4)))
    assert plain.fixed_dims is None  # all on the requested EP: nothing to move
    _shape_nodes_off_the_ep(monkeypatch)
    config = Config().with_session(free_dims={"batch": 4})
    fixed = run_check(
        CheckRequest(shape_subgraph_model, ep=ExecutionProvider.CPU, config=config, inputs=InputSpec(batch=4))
    )
    assert fixed.placement.off_requested_count == 0 and fixed.fixed_dims is None


def test_the_check_table_shows_the_advice(shape_subgraph_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from ortgpu.cli.main import cli

    _shape_nodes_off_the_ep(monkeypatch)
    out = CliRunner().invoke(cli, ["check", str(shape_subgraph_model), "--ep", "cpu", "--dim", "batch=2"])
    assert "fixing the open dims moves 5 of 5" in " ".join(out.output.split()), out.output
    assert "[session] free_dims = { batch = 2 }" in " ".join(out.output.split())
