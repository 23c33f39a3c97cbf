"""`ortgpu profile` in-process: tables, JSON envelope, files written, exit 2 on hostile input, light --help."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ortgpu.cli.main import main


def test_profile_prints_the_tables_and_keeps_the_trace(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["profile", "heavy.onnx", "--ep", "cpu", "--dim", "batch=16", "--runs", "3", "--warmup", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "3 profiled run(s) after 1 warm-up run(s) (left out)" in out
    assert "Op types" in out and "MatMul" in out and "Heaviest nodes" in out and "mm0" in out
    assert "dominant-op: MatMul is" in out
    assert "trace (defaults): heavy-profile.json" in out
    assert isinstance(json.loads((workdir / "heavy-profile.json").read_text()), list)


def test_json_is_the_versioned_envelope(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["profile", "fuse.onnx", "--ep", "cpu", "--dim", "batch=2", "--runs", "2", "--json", "--trace", "t.json"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "ortgpu.profile/v1"
    run = doc["result"]["runs"][0]
    assert run["runs_profiled"] == 2 and run["warmup_runs"] == 3 and run["ep"] == "cpu"
    assert run["fusion"]["available"] is True and run["trace"] == "t.json"
    assert {r["op_type"] for r in run["ops"]} >= {"Gemm", "Flatten"}


def test_compare_and_report(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workdir / "plain.toml").write_text('[session]\ngraph_optimization_level = "disable"\n')
    args = ["profile", "fuse.onnx", "--ep", "cpu", "--dim", "batch=2", "--runs", "2", "--compare", "plain.toml"]
    assert main([*args, "--report", "r.html"]) == 0
    out = capsys.readouterr().out
    assert "defaults vs plain.toml" in out and "no-fusion" in out
    assert "trace (plain.toml): fuse-profile-plain.json" in out and "report: r.html" in out
    assert (workdir / "fuse-profile-plain.json").is_file() and (workdir / "r.html").is_file()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["profile", "nothing.onnx"], "model not found"),
        (["profile", "bad.onnx"], "not a valid ONNX model"),
        (["profile", "heavy.onnx", "--runs", "0"], "--runs"),
        (["profile", "heavy.onnx", "--trace", "heavy.onnx"], "must end in .json"),
        (["profile", "heavy.onnx", "--compare", "missing.toml"], "missing.toml"),
        (["profile", "heavy.onnx", "--shape", "nope=1x2"], "nope"),
    ],
)
def test_bad_input_is_exit_2_in_one_line_and_writes_nothing(
    workdir: Path, capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    (workdir / "bad.onnx").write_bytes(b"\x00\x01not onnx at all" * 7)
    before = {p.name for p in workdir.iterdir()}
    assert main([*args, "--ep", "cpu"]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
    assert {p.name for p in workdir.iterdir()} == before


def test_hostile_node_names_are_shown_literally(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnx

    monkeypatch.setenv("COLUMNS", "200")  # the name stays on one line
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="[bold red]boom[/]\x1b[2J")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "m.onnx")
    assert main(["profile", str(tmp_path / "m.onnx"), "--ep", "cpu", "--trace", str(tmp_path / "t.json")]) == 0
    out = capsys.readouterr().out
    assert "[bold red]boom[/]" in out and "\x1b" not in out


def test_help_does_not_load_heavy_libraries() -> None:
    code = "from ortgpu.cli.main import main\nmain(['profile', '--help'])\nimport sys\nprint(sorted(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(out.splitlines()[-1].strip("[]").replace("'", "").split(", "))
    assert not {"onnxruntime", "onnx", "numpy"} & loaded


def test_compare_a_tuned_config_runs_both_on_its_inputs(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The documented use: `profile MODEL --compare tuned/ortgpu.toml`. tune pins the batch (free dims, [inputs]);
    the defaults side ran at batch 1 and the tuned side was refused by ORT ("Got: 1 Expected: 4")."""
    (workdir / "tuned.toml").write_text('[session]\nfree_dims = { batch = 4 }\n[inputs]\nshapes = { x = "4x256" }\n')
    args = ["profile", "heavy.onnx", "--ep", "cpu", "--runs", "2", "--compare", "tuned.toml", "--json"]
    assert main(args) == 0, capsys.readouterr().err
    runs = json.loads(capsys.readouterr().out)["result"]["runs"]
    assert [r["input_shapes"]["x"] for r in runs] == [[4, 256], [4, 256]]
