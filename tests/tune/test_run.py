"""`run_tune` on the CPU EP with tiny models: ranked trials, an ortgpu.toml that load/check/bench read, resume."""

from __future__ import annotations

from pathlib import Path

import pytest

import ortgpu
from ortgpu.config import load_config
from ortgpu.ep import ExecutionProvider
from ortgpu.tune import Objective, TrialStatus, TuneInputError, TuneRequest, parse_budget, run_tune
from ortgpu.tune.output import config_text

pytest.importorskip("optuna")


def _request(model: Path, out: Path, **fields: object) -> TuneRequest:
    values = dict(ep=ExecutionProvider.CPU, budget_s=120, max_trials=3, measure_s=0.15, max_warmup_s=0.15)
    values.update(fields)
    return TuneRequest(model, out, **values)  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_cpu_tune_writes_a_config_that_load_check_and_bench_read(tiny_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "tuned"
    result = run_tune(_request(tiny_model, out))
    assert [t.number for t in result.trials if t.is_defaults] == [0]
    assert result.defaults is not None and result.best is not None and result.speedup is not None
    assert all(t.reason for t in result.trials if t.status is not TrialStatus.OK)
    assert result.trials[0] is result.best
    config = load_config(result.config_path)
    assert config.run["mode"] == result.best.params["io"]
    assert dict(config.session)["intra_op_num_threads"] == result.best.params["intra_op_num_threads"]
    with ortgpu.load(tiny_model, config=result.config_path, ep="cpu") as session:
        assert session.run({"x": __import__("numpy").zeros((1, 4), "float32")})[0].shape == (1, 4)
    # resume: the trials go on from where they stopped; another objective is refused
    more = run_tune(_request(tiny_model, out, resume=True, max_trials=1))
    assert more.resumed_trials == len(result.trials) and len(more.trials) == len(result.trials) + 1
    with pytest.raises(TuneInputError, match="was for"):
        run_tune(_request(tiny_model, out, resume=True, objective=Objective.P99))
    with pytest.raises(TuneInputError, match="already holds a tune"):
        run_tune(_request(tiny_model, out))


@pytest.mark.slow
def test_fusion_and_memory_budget_reasons_show_in_the_table(demo_model: Path, tmp_path: Path) -> None:
    result = run_tune(_request(demo_model, tmp_path / "t", max_trials=3, memory_budget=1))
    assert result.best is None and result.config_path is None
    rejected = [t for t in result.trials if t.status is TrialStatus.REJECTED]
    assert rejected and all("over --memory-budget" in t.reason for t in rejected)
    assert any("ORT transformer optimizer" in note for note in result.notes)  # the demo model is attention-shaped


def test_bad_requests_are_refused_before_anything_runs(tiny_model: Path, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(TuneInputError, match="not a folder"):
        run_tune(_request(tiny_model, tmp_path / "file"))
    with pytest.raises(TuneInputError, match=r"no tune-journal\.log"):
        run_tune(_request(tiny_model, tmp_path / "empty", resume=True))
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "ortgpu.toml").write_text("[session]\n")
    with pytest.raises(TuneInputError, match="was not written by ortgpu tune"):
        run_tune(_request(tiny_model, tmp_path / "theirs"))
    assert (tmp_path / "theirs" / "ortgpu.toml").read_text() == "[session]\n"
    with pytest.raises(TuneInputError):
        run_tune(_request(tiny_model, tmp_path / "x", budget_s=0))


@pytest.mark.parametrize(("text", "seconds"), [("10m", 600), ("90s", 90), ("1h30m", 5400), ("45", 45)])
def test_budgets_parse(text: str, seconds: float) -> None:
    assert parse_budget(text) == seconds


@pytest.mark.parametrize("text", ["", "ten", "-5m", "0", "5x"])
def test_bad_budgets_are_refused(text: str) -> None:
    with pytest.raises(TuneInputError):
        parse_budget(text)


def test_a_gpu_config_is_written_in_the_keys_the_config_reader_knows(tmp_path: Path) -> None:
    params = {
        "precision": "fp16", "fusion": "transformer", "io": "cudagraph", "fix_dims": True,
        "graph_optimization_level": "all", "prefer_nhwc": True, "fuse_conv_bias": True,
        "cudnn_conv_algo_search": "HEURISTIC", "arena_extend_strategy": "kSameAsRequested",
    }  # fmt: skip
    (tmp_path / "m.fp16.onnx").write_bytes(b"model")
    text = config_text(
        params,
        ExecutionProvider.CUDA,
        {"input_ids": (32, 128)},
        {"free_dims": {"batch": 32}, "free_dim_denotations": {}},
        {"file": "m.fp16.onnx", "sha256": "ab" * 32, "source_sha256": "cd" * 32, "precision": "fp16"},
        "model m.onnx",
    )
    path = tmp_path / "ortgpu.toml"
    path.write_text(text)
    config = load_config(path)
    assert config.run["mode"] == "cudagraph"
    assert config.session["free_dims"] == {"batch": 32}
    assert config.options_for(ExecutionProvider.CUDA) == {
        "prefer_nhwc": "1", "fuse_conv_bias": "1", "cudnn_conv_algo_search": "HEURISTIC",
        "arena_extend_strategy": "kSameAsRequested",
    }  # fmt: skip
    assert config.model["precision"] == "fp16" and config.model["file"] == tmp_path / "m.fp16.onnx"
    assert config.inputs.shapes == {"input_ids": (32, 128)}


def test_progress_follows_the_trial_count_when_trials_bound_the_run(
    tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --trials 4 and the default 10-minute budget the bar stayed at 0% to the end."""
    import ortgpu.tune.run
    from ortgpu.tune.trial import Outcome

    monkeypatch.setattr(ortgpu.tune.run, "run_child", lambda *a, **k: Outcome("done", result={"value": 1.0}))
    seen: list[tuple[str, float | None]] = []
    run_tune(_request(tiny_model, tmp_path / "t", max_trials=4, budget_s=600), lambda m, f=None: seen.append((m, f)))
    ended = [round(f or 0, 2) for m, f in seen if m.startswith("trial") and m.endswith(" ms")]
    assert ended == [0.25, 0.5, 0.75, 1.0]
