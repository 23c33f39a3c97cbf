"""`inspect`, `profile` and `tune` given bad or hostile models and configs: the documented exit code, one line on
stderr with a hint, no traceback, a JSON error envelope with --json; hostile names shown literally and briefly."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ortgpu.cli.main import main

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses FIFOs and /dev")


def save(path: Path, input_name: str = "x", shape: list[object] | None = None, node_name: str = "relu") -> Path:
    """One Relu from ``input_name`` (float32 ``shape``) to ``y``."""
    shape = shape if shape is not None else ["batch", 4]
    graph = helper.make_graph(
        [helper.make_node("Relu", [input_name], ["y"], name=node_name)],
        "g",
        [helper.make_tensor_value_info(input_name, TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return path


def external(folder: Path, location: str | None = None, truncate: bool = False) -> Path:
    """x[batch, 8] @ w[8, 8] with w in ``model.data`` (or at ``location``)."""
    folder.mkdir(parents=True, exist_ok=True)
    weight = numpy_helper.from_array(np.ones((8, 8), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = folder / "model.onnx"
    onnx.save(model, str(path), save_as_external_data=True, location="model.data", size_threshold=0)
    if truncate:
        data = (folder / "model.data").read_bytes()
        (folder / "model.data").write_bytes(data[:10])
    if location is not None:
        proto = onnx.load(str(path), load_external_data=False)
        for entry in proto.graph.initializer[0].external_data:
            if entry.key == "location":
                entry.value = location
        path.write_bytes(proto.SerializeToString())
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("ortgpu: error: ") and "(hint: " in lines[0], lines[0]
    assert "Traceback" not in err and "internal error" not in err and "\x1b" not in err
    return lines[0]


COMMANDS = {
    "inspect": lambda model, tmp: ["inspect", str(model), "--no-kernels"],
    "profile": lambda model, tmp: ["profile", str(model), "--ep", "cpu", "--runs", "1", "--trace", str(tmp / "t.json")],
    "tune": lambda model, tmp: ["tune", str(model), "--ep", "cpu", "--trials", "1", "--out", str(tmp / "tuned")],
}


@pytest.fixture
def no_trials(monkeypatch: pytest.MonkeyPatch) -> None:
    import ortgpu.tune.run

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a trial ran")

    monkeypatch.setattr(ortgpu.tune.run, "run_child", refuse)


def _bad_models(tmp: Path) -> dict[str, Path]:
    (tmp / "empty.onnx").write_bytes(b"")
    (tmp / "random.onnx").write_bytes(os.urandom(2048))
    (tmp / "text.onnx").write_text("not a model\n")
    (tmp / "folder.onnx").mkdir()
    (tmp / "cut.onnx").write_bytes(save(tmp / "whole.onnx").read_bytes()[:30])
    models = {
        "missing": tmp / "missing.onnx",
        "empty": tmp / "empty.onnx",
        "random": tmp / "random.onnx",
        "text": tmp / "text.onnx",
        "folder": tmp / "folder.onnx",
        "cut": tmp / "cut.onnx",
        "data-truncated": external(tmp / "trunc", truncate=True),
        "data-outside": external(tmp / "out", location="../secret.data"),
        "data-absolute": external(tmp / "abs", location="/etc/hostname"),
    }
    if sys.platform.startswith("linux"):
        os.mkfifo(tmp / "fifo.onnx")
        models["fifo"] = tmp / "fifo.onnx"
        models["dev-zero"] = Path("/dev/zero")
    return models


BAD = ["missing", "empty", "random", "text", "folder", "cut", "data-truncated", "data-outside", "data-absolute"]
if sys.platform.startswith("linux"):
    BAD += ["fifo", "dev-zero"]


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("case", BAD)
def test_a_bad_model_is_one_line_exit_2_and_a_json_envelope(
    command: str, case: str, tmp_path: Path, no_trials: None, capsys
) -> None:
    model = _bad_models(tmp_path)[case]
    before = sorted(p.name for p in tmp_path.iterdir())
    code, out, err = run(capsys, *COMMANDS[command](model, tmp_path), "--json")
    assert code == 2, err
    one_line(err)
    assert json.loads(out)["error"]["exit_code"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no trace, no tune folder


NAMES = {
    "markup-close": "[/]",
    "markup-link": "[link=https://example.invalid]click[/link]",
    "escape-sequences": "\x1b[31mred\x1b]0;title\x07\x1b[2J",
    "bidi": "abc\u202eevil",
}


@pytest.mark.parametrize("name", list(NAMES))
@pytest.mark.parametrize("command", ["inspect", "profile"])
def test_hostile_names_are_shown_literally(name: str, command: str, tmp_path: Path, capsys) -> None:
    text = NAMES[name]
    model = save(tmp_path / "m.onnx", input_name=text, node_name=text)
    code, out, err = run(capsys, *COMMANDS[command](model, tmp_path))
    assert code == 0, err
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    if name.startswith("markup"):
        assert text in out  # shown as written, not styled or turned into a link
    else:
        assert "\\x1b" in out or "\\u202e" in out


@pytest.mark.parametrize("command", ["inspect", "profile"])
def test_a_30_kb_name_is_shortened_in_the_table_and_whole_in_the_json(command: str, tmp_path: Path, capsys) -> None:
    """A 100 KB input name took `inspect` 92 s to fold into its table, and `profile` printed 444 KB."""
    name = "n" * 30_000
    model = save(tmp_path / "m.onnx", input_name=name, node_name=name)
    started = time.perf_counter()
    code, out, err = run(capsys, *COMMANDS[command](model, tmp_path))
    assert code == 0, err
    assert len(out) < 10_000 and "more" in out  # "…[29,830 more characters]…", folded where the cell ends
    assert time.perf_counter() - started < 10
    code, out, _ = run(capsys, *COMMANDS[command](model, tmp_path), "--json")
    assert code == 0 and name in out


def test_tune_writes_a_config_it_can_read_for_any_input_name(tmp_path: Path, capsys, monkeypatch) -> None:
    """JSON escapes are not TOML escapes: an emoji (outside the BMP) or DEL in an input name made tune write an
    ortgpu.toml nobody could read, after the whole search."""
    pytest.importorskip("optuna")
    import ortgpu.tune.run
    from ortgpu.config import load_config
    from ortgpu.tune.trial import Outcome

    monkeypatch.setattr(ortgpu.tune.run, "run_child", lambda *a, **k: Outcome("done", result={"value": 1.0}))
    name = 'in\U0001f600put\x7f"[/]\\\n'
    model = save(tmp_path / "m.onnx", input_name=name)
    code, _, err = run(capsys, "tune", str(model), "--ep", "cpu", "--trials", "1", "--out", str(tmp_path / "t"))
    assert code == 0, err
    assert load_config(tmp_path / "t" / "ortgpu.toml").inputs.shapes == {name: (1, 4)}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize(
    "dim",
    [
        pytest.param("\u00b2", id="superscript-two"),
        pytest.param("9" * 5000, id="5000-digits"),
    ],
)
def test_odd_dims_never_reach_an_internal_error(
    command: str, dim: str, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Such a dim is a symbol (``--dim`` can set it), not a number: the commands run, or refuse in one line."""
    import ortgpu.tune.run
    from ortgpu.tune.trial import Outcome

    monkeypatch.setattr(ortgpu.tune.run, "run_child", lambda *a, **k: Outcome("done", result={"value": 1.0}))
    model = save(tmp_path / "m.onnx", shape=[dim, 4])
    code, _, err = run(capsys, *COMMANDS[command](model, tmp_path))
    assert code in (0, 2), err
    assert "internal error" not in err


@pytest.mark.parametrize("command", ["profile", "tune"])
def test_a_huge_fixed_dim_is_bad_input(command: str, tmp_path: Path, no_trials: None, capsys) -> None:
    model = save(tmp_path / "m.onnx", shape=[2**62, 4])
    code, out, err = run(capsys, *COMMANDS[command](model, tmp_path), "--json")
    assert code in (2, 3), err
    one_line(err)
    assert json.loads(out)["error"]["exit_code"] == code


CONFIGS = {
    "bad-toml": "not = [toml\n",
    "unknown-section": "[bogus]\nx = 1\n",
    "unknown-key": "[session]\nthreads = 4\n",
    "threads-2**63": "[session]\nintra_op_num_threads = 9223372036854775807\n",
    "deep-nesting": "a = " + "[" * 10_000 + "]" * 10_000 + "\n",
}


@pytest.mark.parametrize("command", ["inspect", "profile", "profile --compare"])
@pytest.mark.parametrize("case", list(CONFIGS))
def test_a_bogus_config_is_one_line_exit_2(command: str, case: str, tmp_path: Path, capsys) -> None:
    config = tmp_path / "c.toml"
    config.write_text(CONFIGS[case])
    model = save(tmp_path / "m.onnx")
    flag = "--compare" if command.endswith("--compare") else "--config"
    base = COMMANDS[command.split()[0]](model, tmp_path)
    code, out, err = run(capsys, *base, flag, str(config), "--json")
    assert code == 2, err
    one_line(err)
    assert json.loads(out)["error"]["exit_code"] == 2
    assert not (tmp_path / "t.json").exists()


@linux
@pytest.mark.parametrize("command", ["inspect", "profile"])
def test_a_config_that_never_ends_is_refused(command: str, tmp_path: Path, capsys) -> None:
    model = save(tmp_path / "m.onnx")
    code, _, err = run(capsys, *COMMANDS[command](model, tmp_path), "--config", "/dev/zero")
    assert code == 2
    one_line(err)
