"""Console conventions (issue 9): pipes are not wrapped, COLUMNS and NO_COLOR are respected, a closed pipe ends
quietly, a write error on stdout is one line and exit 3 (issue 17, item 9)."""

from __future__ import annotations

import errno
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ortgpu.cli.main import main

CHECK = ["check", "--ep", "cpu", "--warm-runs", "1"]
COLOUR = re.compile(r"\x1b\[[0-9;]*3[0-9]m|\x1b\[[0-9;]*38;")  # a foreground colour escape
ORTGPU = [sys.executable, "-c", "import sys; from ortgpu.cli.main import run; sys.argv[0] = 'ortgpu'; run()"]


@pytest.fixture
def deep(tmp_path: Path) -> Path:
    """A folder path of about 150 characters, so any line naming a file in it is longer than 80 columns."""
    folder = tmp_path.joinpath(*(["long-folder-name-for-the-test"] * 5))
    folder.mkdir(parents=True)
    return folder


def test_output_to_a_pipe_or_file_is_not_wrapped(
    cli: Callable[..., object], tiny: Path, deep: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    saved = deep / "outputs.npz"
    outcome = cli(*CHECK, str(tiny), "--save-outputs", str(saved))
    assert outcome.rc == 0, outcome.err
    assert f"outputs saved to {saved}\n" in outcome.out  # the path whole, on one line
    assert any(len(line) > 80 for line in outcome.out.splitlines())
    assert re.search(r"sha256 [0-9a-f]{12}\)", outcome.out)


def test_columns_is_respected(cli: Callable[..., object], tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    outcome = cli(*CHECK, str(tiny))
    assert outcome.rc == 0, outcome.err
    assert max(len(line) for line in outcome.out.splitlines()) <= 60


def test_no_color_is_respected_on_a_terminal(
    cli: Callable[..., object], tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")  # write as to a colour terminal
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = cli(*CHECK, str(tiny))
    assert COLOUR.search(coloured.out), "the terminal mode should colour the verdict"
    monkeypatch.setenv("NO_COLOR", "1")
    plain = cli(*CHECK, str(tiny))
    assert plain.rc == 0 and not COLOUR.search(plain.out)


def test_a_pipe_gets_no_escape_codes(cli: Callable[..., object], tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FORCE_COLOR", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    assert "\x1b" not in cli(*CHECK, str(tiny)).out


def test_doctor_into_head_ends_quietly() -> None:
    """`ortgpu doctor | head -1`: no traceback, no "Exception ignored", the doctor's own exit code."""
    whole = subprocess.run([*ORTGPU, "doctor"], capture_output=True, text=True, timeout=120)
    reader = subprocess.Popen([*ORTGPU, "doctor"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert reader.stdout is not None and reader.stderr is not None
    first = reader.stdout.readline()
    reader.stdout.close()  # what `head -1` does after its line
    err = reader.stderr.read().decode()
    code = reader.wait(timeout=120)
    assert first.strip()
    assert err == "", err
    assert code == whole.returncode and code in (0, 3)


class _Refusing(io.TextIOBase):
    """A stdout whose every write fails with ``error``."""

    def __init__(self, error: OSError) -> None:
        self.error = error

    def write(self, text: str) -> int:
        raise self.error

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False


@pytest.mark.parametrize("as_json", [False, True])
def test_a_closed_pipe_in_process_is_quiet_and_keeps_the_exit_code(
    as_json: bool, tiny: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdout", _Refusing(BrokenPipeError(errno.EPIPE, "Broken pipe")))
    code = main([*CHECK, str(tiny), *(["--json"] if as_json else [])])
    assert code == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("as_json", [False, True])
def test_a_full_disk_on_stdout_is_one_line_and_exit_3(
    as_json: bool, tiny: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdout", _Refusing(OSError(errno.ENOSPC, "No space left on device")))
    code = main([*CHECK, str(tiny), *(["--json"] if as_json else [])])
    err = capsys.readouterr().err
    assert code == 3
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ortgpu: error: cannot write the output to standard output")
    assert "No space left on device" in lines[0] and "Traceback" not in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("as_json", [False, True])
def test_stdout_to_dev_full_is_one_line_and_exit_3(as_json: bool) -> None:
    argv = [*ORTGPU, "explain", "CUDA driver version is insufficient for CUDA runtime version"]
    with open("/dev/full", "w") as full:
        done = subprocess.run(argv + (["--json"] if as_json else []), stdout=full, stderr=subprocess.PIPE, timeout=60)
    err = done.stderr.decode()
    assert done.returncode == 3, err
    assert len(err.strip().splitlines()) == 1 and "No space left on device" in err
    assert "Exception ignored" not in err and "Traceback" not in err


def test_usage_errors_with_json_print_an_error_envelope(cli: Callable[..., object]) -> None:
    outcome = cli("check", "--json", "--no-such-flag", "m.onnx")
    assert outcome.rc == 2
    doc = json.loads(outcome.out)
    assert doc["schema"] == "ortgpu.error/v1" and "no-such-flag" in doc["error"]["message"]


def test_interrupted_is_said_once(cli: Callable[..., object], tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C during a bench: what finished is shown, "interrupted" is not doubled (item 10)."""
    from ortgpu.bench.modes import RunMode

    original = RunMode._prepare
    calls = {"n": 0}

    def prepare_with_interrupt(self: RunMode):
        step = original(self)
        if self.feeds["x"].shape[0] != 2:
            return step

        def interrupted_step():
            calls["n"] += 1
            if calls["n"] >= 3:  # the batch-2 case is cut short
                raise KeyboardInterrupt
            return step()

        return interrupted_step

    monkeypatch.setattr(RunMode, "_prepare", prepare_with_interrupt)
    outcome = cli("bench", str(tiny), "--ep", "cpu", "--iterations", "5", "--warmup", "1", "--batch", "1,2")
    assert outcome.rc == 130, outcome.err
    assert "interrupted: interrupted" not in outcome.out + outcome.err
    assert "interrupted: only the cases that finished are reported" in outcome.out
