"""Every read of an untrusted file or stream is bounded, and special files are refused (issue 17, item 6).

``explain - < /dev/zero``, ``--config /dev/zero`` and ``--baseline /dev/zero`` used to read until killed; a
1.2 GB model was read whole before any size check. Big files here are sparse: nothing is really written, and
a test that read them would show in its time (each must end in well under a second).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ortgpu.limits import CONFIG_LIMIT, MODEL_LIMIT, check_input_file, read_input_bytes

DEV_ZERO = Path("/dev/zero")
needs_dev_zero = pytest.mark.skipif(not DEV_ZERO.exists(), reason="needs /dev/zero")
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")

CHECK = ["check", "--ep", "cpu", "--warm-runs", "1"]
BENCH = ["bench", "--ep", "cpu", "--iterations", "3", "--warmup", "1"]


def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


def _timed(run: Callable[[], object]) -> tuple[object, float]:
    start = time.perf_counter()
    value = run()
    return value, time.perf_counter() - start


@needs_dev_zero
def test_explain_reads_stdin_no_further_than_it_takes(cli: Callable[..., object]) -> None:
    with open(DEV_ZERO, "rb") as zero:
        stdin = type("Stdin", (), {"buffer": zero, "read": zero.read})()
        outcome, seconds = _timed(lambda: cli("explain", "-", stdin=stdin))
    line = outcome.assert_one_line_error(2)
    assert "standard input is over" in line and "1,000,000 characters" in line
    assert seconds < 2


@needs_dev_zero
@pytest.mark.parametrize(
    ("flag", "argv"),
    [
        ("--config", lambda m: [*CHECK, str(m), "--config", str(DEV_ZERO)]),
        ("--baseline", lambda m: [*BENCH, str(m), "--baseline", str(DEV_ZERO)]),
        ("--inputs", lambda m: [*CHECK, str(m), "--inputs", str(DEV_ZERO)]),
        ("--reference", lambda m: [*CHECK, str(m), "--reference", str(DEV_ZERO)]),
        ("MODEL", lambda m: [*CHECK, str(DEV_ZERO)]),
    ],
)
def test_a_device_is_refused_as_an_input_without_reading_it(
    cli: Callable[..., object], tiny: Path, flag: str, argv: Callable[[Path], list[str]]
) -> None:
    outcome, seconds = _timed(lambda: cli(*argv(tiny)))
    line = outcome.assert_one_line_error(2)
    assert "is a device, not a regular file" in line, line
    assert "not found" not in line
    assert seconds < 2


@needs_fifo
@pytest.mark.parametrize("flag", ["--config", "--baseline", "--inputs", "MODEL", "--package"])
def test_a_fifo_is_refused_without_blocking(tiny: Path, tmp_path: Path, flag: str) -> None:
    """Opening a FIFO that nobody writes blocks forever: run in a child with a time limit."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    argv = {
        "MODEL": [*CHECK, str(fifo)],
        "--package": ["doctor", "--package", str(fifo)],
        "--baseline": [*BENCH, str(tiny), flag, str(fifo)],
    }.get(flag, [*CHECK, str(tiny), flag, str(fifo)])
    code = f"import sys; from ortgpu.cli.main import main; sys.exit(main({argv!r}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "is a FIFO (named pipe), not a regular file" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_directory_is_refused_as_a_file_input(cli: Callable[..., object], tiny: Path, tmp_path: Path) -> None:
    for argv in ([*CHECK, str(tiny), "--config", str(tmp_path)], [*BENCH, str(tiny), "--baseline", str(tmp_path)]):
        line = cli(*argv).assert_one_line_error(2)
        assert "is a directory" in line


def test_a_big_config_is_refused_before_reading_and_the_limit_can_be_raised(
    cli: Callable[..., object], tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _sparse(tmp_path / "big.toml", 2 << 20)  # 2 MiB of NUL bytes, over the 1 MiB default
    line = cli(*CHECK, str(tiny), "--config", str(config)).assert_one_line_error(2)
    assert "above the limit of 1.0 MiB" in line and CONFIG_LIMIT.variable in line
    monkeypatch.setenv(CONFIG_LIMIT.variable, "4MiB")  # raised: now it is read, and is not TOML
    line = cli(*CHECK, str(tiny), "--config", str(config)).assert_one_line_error(2)
    assert "not valid TOML" in line


def test_a_big_baseline_is_refused_before_reading(cli: Callable[..., object], tiny: Path, tmp_path: Path) -> None:
    baseline = _sparse(tmp_path / "base.json", 100 << 20)
    outcome, seconds = _timed(lambda: cli(*BENCH, str(tiny), "--baseline", str(baseline)))
    line = outcome.assert_one_line_error(2)
    assert "above the limit of 64.0 MiB" in line and "ORTGPU_MAX_BASELINE" in line
    assert seconds < 5  # the bench itself runs first; reading 100 MiB would not be the cost here


def test_a_model_over_the_limit_is_refused_before_it_is_read(
    cli: Callable[..., object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 1.2 GB model with the limit set at 1 GiB: refused from its size alone, in milliseconds."""
    model = _sparse(tmp_path / "big.onnx", 1_200_000_000)
    monkeypatch.setenv(MODEL_LIMIT.variable, "1GiB")
    outcome, seconds = _timed(lambda: cli(*CHECK, str(model)))
    line = outcome.assert_one_line_error(2)
    assert "1.1 GiB, above the limit of 1.0 GiB" in line and MODEL_LIMIT.variable in line
    assert seconds < 1


def test_a_model_past_protobufs_2_gib_is_refused_with_the_reason(cli: Callable[..., object], tmp_path: Path) -> None:
    model = _sparse(tmp_path / "huge.onnx", 3 << 30)
    outcome, seconds = _timed(lambda: cli(*CHECK, str(model)))
    line = outcome.assert_one_line_error(2)
    assert "protobuf's limit" in line and "external data" in line
    assert seconds < 1


def test_the_limit_variable_cannot_raise_a_model_past_protobufs_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODEL_LIMIT.variable, "100GiB")
    assert MODEL_LIMIT.value() == 2**31 - 1


def test_a_bad_limit_variable_is_one_line(
    cli: Callable[..., object], tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tiny.parent / "ok.toml"
    config.write_text("[session]\nintra_op_num_threads = 1\n", encoding="utf-8")
    monkeypatch.setenv(CONFIG_LIMIT.variable, "lots")
    line = cli(*CHECK, str(tiny), "--config", str(config)).assert_one_line_error(2)
    assert CONFIG_LIMIT.variable in line


def test_read_input_bytes_stops_at_the_limit_even_if_the_file_grows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The size is checked from stat, and the read itself never goes past limit + 1 bytes."""
    path = tmp_path / "growing.toml"
    path.write_bytes(b"a = 1\n")
    monkeypatch.setenv(CONFIG_LIMIT.variable, "10")
    real_stat = os.stat

    def stale_stat(p: object, *args: object, **kwargs: object) -> os.stat_result:
        info = real_stat(p, *args, **kwargs)
        return os.stat_result((info.st_mode, *info[1:6], 1, *info[7:10]))  # claims 1 byte

    path.write_bytes(b"a = 1\n" * 100)
    monkeypatch.setattr(os, "stat", stale_stat)
    from ortgpu.limits import InputTooLargeError

    with pytest.raises(InputTooLargeError, match="over 10 B"):
        read_input_bytes(path, CONFIG_LIMIT, "hint")


def test_check_input_file_names_what_is_wrong(tmp_path: Path) -> None:
    from ortgpu.limits import UnreadableInputError

    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    cases = {
        tmp_path / "missing": "not found",
        tmp_path: "is a directory",
        loop: "symbolic link loop",
        tmp_path / ("x" * 300): "too long",
    }
    for path, said in cases.items():
        with pytest.raises(UnreadableInputError, match=said):
            check_input_file(path, "thing", "hint")


def test_json_envelope_for_a_refused_input(cli: Callable[..., object], tiny: Path, tmp_path: Path) -> None:
    config = _sparse(tmp_path / "big.toml", 2 << 20)
    outcome = cli(*CHECK, str(tiny), "--config", str(config), "--json")
    outcome.assert_one_line_error(2)
    doc = json.loads(outcome.out)
    assert doc["error"]["type"] == "InputTooLargeError" and doc["error"]["exit_code"] == 2
    assert CONFIG_LIMIT.variable in doc["error"]["hint"]
