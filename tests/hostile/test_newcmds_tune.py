"""`ortgpu tune` fed what an attacker (or an unlucky user) would: bad flags, output folders that are not ours,
corrupt or forged journals, interruption. Each case: the documented exit code, one line on stderr with a hint, no
traceback, a JSON error envelope with --json, nothing written outside --out, no existing file lost."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ortgpu.cli.main import main

pytest.importorskip("optuna")

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and FIFOs")


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    from ortgpu.model.zoo import build_tiny_model

    return build_tiny_model(tmp_path / "tiny.onnx")


@pytest.fixture
def no_trials(monkeypatch: pytest.MonkeyPatch) -> None:
    """A trial child starting is an error: every refusal here must come before any trial runs."""
    import ortgpu.tune.run

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a trial ran before the bad input was refused")

    monkeypatch.setattr(ortgpu.tune.run, "run_child", refuse)


def tune(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["tune", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("ortgpu: error: ") and "(hint: " in lines[0], lines[0]
    assert "Traceback" not in err and "internal error" not in err
    return lines[0]


def envelope(out: str, code: int) -> dict[str, object]:
    doc = json.loads(out)
    assert doc["schema"].startswith("ortgpu.error/") and doc["error"]["exit_code"] == code
    return doc["error"]


# ------------------------------------------------------------------------------------------------ flags


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--seed", "-1"], "--seed"),
        (["--seed", str(2**40)], "--seed"),
        (["--device", "-1"], "--device"),
        (["--measure", "1e308"], "--measure"),
        (["--measure", "-1"], "--measure"),
    ],
)
def test_out_of_range_flags_are_refused_before_any_trial(
    flags: list[str], said: str, tiny: Path, tmp_path: Path, no_trials: None, capsys
) -> None:
    code, out, err = tune(capsys, str(tiny), "--ep", "cpu", "--out", str(tmp_path / "t"), *flags, "--json")
    assert code == 2, err
    assert said in one_line(err)
    envelope(out, 2)
    assert not (tmp_path / "t").exists()


@linux
def test_an_out_folder_that_cannot_be_created_is_bad_input(tiny: Path, no_trials: None, capsys) -> None:
    code, out, err = tune(capsys, str(tiny), "--ep", "cpu", "--out", "/proc/self/ortgpu-tune", "--json")
    assert code == 2
    assert "/proc/self/ortgpu-tune" in one_line(err)
    envelope(out, 2)


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True, reason="root writes anywhere")
def test_a_read_only_out_folder_is_refused_before_any_work(tiny: Path, tmp_path: Path, no_trials: None, capsys):
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o555)
    try:
        code, _, err = tune(capsys, str(tiny), "--ep", "cpu", "--out", str(out))
    finally:
        out.chmod(0o755)
    assert code == 2 and "ro" in one_line(err)


# ------------------------------------------------------------------------------------------------ --out contents


def test_a_new_tune_never_overwrites_files_in_a_folder_it_did_not_make(
    tiny: Path, tmp_path: Path, no_trials: None, capsys
) -> None:
    out = tmp_path / "mine"
    (out / "work").mkdir(parents=True)
    (out / "models").mkdir()
    theirs = {
        out / "work" / "inputs-b1.npz": b"my inputs",
        out / "work" / "reference-b1.npz": b"my reference",
        out / "models" / "tiny.fused.onnx": b"my model",
    }
    for path, data in theirs.items():
        path.write_bytes(data)
    code, _, err = tune(capsys, str(tiny), "--ep", "cpu", "--out", str(out))
    assert code == 2
    line = one_line(err)
    assert "not empty" in line and "--resume" in line
    assert {p: p.read_bytes() for p in theirs} == theirs
    assert not (out / "tune-journal.log").exists()


@linux
def test_a_fifo_named_ortgpu_toml_in_out_is_refused_not_opened(tiny: Path, tmp_path: Path, no_trials: None, capsys):
    out = tmp_path / "t"
    out.mkdir()
    os.mkfifo(out / "ortgpu.toml")  # opening it for reading would block for ever
    code, _, err = tune(capsys, str(tiny), "--ep", "cpu", "--out", str(out))
    assert code == 2 and "ortgpu.toml" in one_line(err)
    assert not (out / "ortgpu.toml").is_file()


def test_a_failed_start_leaves_no_folder_behind_so_the_fixed_command_runs(
    tmp_path: Path, no_trials: None, capsys
) -> None:
    """A model with an open non-batch dim fails at the inputs; --out must not be left half made (a re-run with
    --dim would then be refused as 'not empty')."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "seq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "sequence", 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "seq.onnx"))
    code, _, err = tune(capsys, str(tmp_path / "seq.onnx"), "--ep", "cpu", "--out", str(tmp_path / "t"))
    assert code == 2 and "--dim sequence=" in one_line(err)
    assert not (tmp_path / "t").exists()


# ------------------------------------------------------------------------------------------------ --resume journals


def _resume(capsys, tiny: Path, out: Path) -> tuple[int, str, str]:
    return tune(capsys, str(tiny), "--ep", "cpu", "--out", str(out), "--resume", "--trials", "1", "--json")


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(bytes(range(256)) * 8, id="binary"),
        pytest.param(b'{"op_code": 0, "worker_id": "w", "study_name": "ortgpu-tune", "directions": [1]}\n{', id="cut"),
        pytest.param(b'{"op_code": 0, "a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n", id="deep"),
        pytest.param(b'{"op_code": 5, "trial_id": 3, "state": 1}\n', id="no-worker"),
        pytest.param(b'["not", "an", "object"]\n', id="list"),
    ],
)
def test_a_corrupt_journal_is_bad_input(content: bytes, tiny: Path, tmp_path: Path, no_trials: None, capsys) -> None:
    out = tmp_path / "t"
    out.mkdir()
    (out / "tune-journal.log").write_bytes(content)
    code, stdout, err = _resume(capsys, tiny, out)
    assert code == 2, err
    assert "tune-journal.log" in one_line(err)
    envelope(stdout, 2)
    assert (out / "tune-journal.log").read_bytes() == content  # evidence kept as it was


def test_a_journal_of_no_tune_says_so_in_words(tiny: Path, tmp_path: Path, no_trials: None, capsys) -> None:
    out = tmp_path / "t"
    out.mkdir()
    (out / "tune-journal.log").write_bytes(b"")
    code, _, err = _resume(capsys, tiny, out)
    line = one_line(err)
    assert code == 2 and "None" not in line and "holds no ortgpu tune" in line


@linux
def test_a_journal_that_is_a_device_is_named_as_one(tiny: Path, tmp_path: Path, no_trials: None, capsys) -> None:
    out = tmp_path / "t"
    out.mkdir()
    (out / "tune-journal.log").symlink_to("/dev/zero")
    code, _, err = _resume(capsys, tiny, out)
    assert code == 2 and "not a regular file" in one_line(err)


def _forged_journal(tiny: Path, out: Path, attrs: dict[str, object]) -> None:
    """A journal whose study claims to be this tune (the sha256 is public) with one finished trial whose user
    attributes are ``attrs``: what an attacker who can write --out controls."""
    import optuna

    from ortgpu.model.inspect import inspect_model

    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(out / "tune-journal.log")))
    study = optuna.create_study(study_name="ortgpu-tune", storage=storage)
    identity = {
        "model_sha256": inspect_model(tiny).sha256,
        "ep": "cpu",
        "objective": "p50",
        "batches": [1],
        "shapes": {"1": {"x": [1, 4]}},
    }
    for key, value in identity.items():
        study.set_user_attr(key, value)
    trial = study.ask()
    for key, value in attrs.items():
        trial.set_user_attr(key, value)
    study.tell(trial, 0.001)


_GOOD = {"graph_optimization_level": "all", "execution_mode": "sequential", "intra_op_num_threads": 0}


@pytest.mark.parametrize(
    "attrs",
    [
        pytest.param({"status": "excellent", "params": _GOOD, "value": 0.001}, id="unknown-status"),
        pytest.param({"status": "ok", "params": _GOOD, "value": "fast"}, id="value-not-a-number"),
        pytest.param({"status": "ok", "params": _GOOD, "value": float("nan")}, id="value-nan"),
        pytest.param({"status": "ok", "params": {**_GOOD, "intra_op_num_threads": 2**63}, "value": 0.001}, id="huge"),
        pytest.param({"status": "ok", "params": {**_GOOD, "evil": "x"}, "value": 0.001}, id="unknown-lever"),
        pytest.param({"status": "ok", "params": "all", "value": 0.001}, id="params-not-a-table"),
    ],
)
def test_a_forged_journal_is_refused_and_writes_no_config(
    attrs: dict[str, object], tiny: Path, tmp_path: Path, no_trials: None, capsys
) -> None:
    out = tmp_path / "t"
    out.mkdir()
    _forged_journal(tiny, out, attrs)
    code, stdout, err = _resume(capsys, tiny, out)
    assert code == 2, err
    assert "tune-journal.log" in one_line(err)
    envelope(stdout, 2)
    assert not (out / "ortgpu.toml").exists()


# ------------------------------------------------------------------------------------------------ interruption

# The real CLI with the trial processes replaced by a stand-in: the first trial answers at once, every later one
# records its pid and hangs, so the signal lands while a trial process is running.
_INTERRUPTED_CLI = """
import json, sys
from pathlib import Path

import ortgpu.tune.run as tune_run

folder = Path(sys.argv.pop(1))
child = (
    "import json, os, sys, time\\n"
    "from pathlib import Path\\n"
    "folder = Path(sys.argv[1])\\n"
    "sys.stdin.readline()\\n"
    "first = not (folder / 'first').exists()\\n"
    "(folder / 'first').touch()\\n"
    "if first:\\n"
    "    print(json.dumps({'event': 'done', 'value': 0.5}), flush=True)\\n"
    "    sys.exit(0)\\n"
    "(folder / 'hung.pid').write_text(str(os.getpid()))\\n"
    "time.sleep(60)\\n"
)
real = tune_run.run_child
tune_run.run_child = lambda spec, limits, on_stage, command: real(
    spec, limits, on_stage, (sys.executable, "-c", child, str(folder))
)
from ortgpu.cli.main import run

run()
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("signum", ["SIGTERM", "SIGINT"])
def test_an_interrupted_tune_kills_its_trial_keeps_what_finished_and_says_so(
    signum: str, tiny: Path, tmp_path: Path
) -> None:
    import signal
    import subprocess
    import time

    script = tmp_path / "cli.py"
    script.write_text(_INTERRUPTED_CLI)
    out = tmp_path / "t"
    args = [sys.executable, str(script), str(tmp_path), "tune", str(tiny), "--ep", "cpu", "--out", str(out)]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "hung.pid").exists():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "no second trial started"
            time.sleep(0.02)
        hung = int((tmp_path / "hung.pid").read_text())
        process.send_signal(getattr(signal, signum))
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == (143 if signum == "SIGTERM" else 130), stderr
    assert not Path(f"/proc/{hung}").exists() or "zombie" in Path(f"/proc/{hung}/status").read_text().lower()
    assert "Traceback" not in stderr and "Trial" not in stderr, stderr  # Optuna's log lines stay quiet
    assert "interrupted" in stdout and "--resume" in stdout  # the partial result says so, and how to go on
    assert "trial 0" in stdout.lower() or "best: trial 0" in stdout
    config = (out / "ortgpu.toml").read_text()  # the best finished trial is written, whole
    assert config.startswith("# written by ortgpu tune") and "[session]" in config
    assert not [p for p in out.rglob("*.tmp")]  # no half-written file


@pytest.mark.parametrize(
    "args",
    [
        ["tune", "m.onnx", "--objective", "nope"],
        ["inspect", "m.onnx", "--top", "-1"],
        ["profile", "m.onnx", "--runs", "0"],
    ],
    ids=["tune", "inspect", "profile"],
)
def test_a_usage_error_with_json_is_an_error_envelope(args: list[str], capsys) -> None:
    capsys.readouterr()
    assert main([*args, "--json"]) == 2
    envelope(capsys.readouterr().out, 2)
