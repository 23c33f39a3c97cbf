"""Flag values read by the shared click types: check and bench refuse a bad value the same way, before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

from ortgpu.cli.main import main
from ortgpu.model.zoo import build_tiny_model


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("params") / "tiny.onnx")


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ortgpu: error:"), err
    return err[0]


@pytest.mark.parametrize("command", ["check", "bench"])
@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--seed", "x", "--seed 'x' is not a whole number"),
        ("--device", "-1", "--device -1 is below 0"),
        ("--shape", "x", "--shape 'x': expected NAME=VALUE"),
        ("--dim", "batch=two", "--dim: value 'two' is not a whole number"),
        ("--range", "x=1", "--range 'x=1': expected NAME=LOW,HIGH"),
        ("--ep-option", "novalue", "--ep-option 'novalue': expected KEY=VALUE"),
        ("--ep", "gpu", "unknown execution provider 'gpu'"),
    ],
)
def test_the_shared_options_refuse_a_bad_value_in_one_line_for_every_command(
    command: str, flag: str, value: str, said: str, model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, str(model), flag, value]) == 2
    assert said in _one_line(capsys)


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--batch", "1,0", "--batch '1,0': '0' is not a whole number of 1 or more"),
        ("--concurrency", "two", "--concurrency 'two': 'two' is not a whole number of 1 or more"),
        ("--duration", "-1s", "--duration '-1s': not a positive time"),
        ("--max-regression", "ten", "--max-regression 'ten': not a percentage"),
        ("--warmup", "some", "--warmup 'some': not a run count or 'auto'"),
        ("--mode", "fast", "--mode 'fast': unknown mode 'fast'"),
    ],
)
def test_bench_values_are_read_by_their_types(
    flag: str, value: str, said: str, model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", str(model), flag, value]) == 2
    assert said in _one_line(capsys)
