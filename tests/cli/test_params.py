"""Flag values: the parsers behind each flag, and the shared click types that refuse a bad value before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

from ortgpu.bench.modes import BenchMode
from ortgpu.bench.plan import BenchInputError
from ortgpu.cli.main import main
from ortgpu.cli.params import (
    parse_dim,
    parse_int_list,
    parse_modes,
    parse_percent,
    parse_range,
    parse_seconds,
    parse_shape,
    parse_warmup,
)
from ortgpu.model.inputs import InputError
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


@pytest.mark.parametrize(
    ("parse", "text", "expected"),
    [
        (lambda t: parse_int_list(t, "--batch"), "1,8,32", (1, 8, 32)),
        (lambda t: parse_int_list(t, "--batch"), " 4 , 4,2", (4, 2)),
        (parse_seconds, "5", 5.0),
        (parse_seconds, "250ms", 0.25),
        (parse_seconds, "1.5s", 1.5),
        (parse_percent, "10%", 0.10),
        (parse_percent, "2.5", 0.025),
        (parse_warmup, "auto", None),
        (parse_warmup, "20", 20),
        (parse_modes, "all", (tuple(BenchMode), True)),
        (parse_modes, "iobinding,run", ((BenchMode.IOBINDING, BenchMode.RUN), False)),
    ],
)
def test_flag_values(parse, text: str, expected: object) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(
    ("parse", "text"),
    [
        (lambda t: parse_int_list(t, "--batch"), "1,,8"),
        (lambda t: parse_int_list(t, "--concurrency"), "-4"),
        (lambda t: parse_int_list(t, "--batch"), "1.5"),
        (parse_seconds, "soon"),
        (parse_seconds, "-2"),
        (parse_seconds, "inf"),
        (parse_percent, "ten"),
        (parse_warmup, "-1"),
        (parse_modes, "fast"),
        (parse_modes, ","),
    ],
)
def test_nonsense_flag_values(parse, text: str) -> None:
    with pytest.raises(BenchInputError):
        parse(text)


def test_parse_shape_forms() -> None:
    assert parse_shape("image=1x3x224x224") == ("image", (1, 3, 224, 224))
    assert parse_shape("image = 1,3,224,224") == ("image", (1, 3, 224, 224))
    assert parse_shape("input:0=[2x5]") == ("input:0", (2, 5))
    assert parse_shape("sr=") == ("sr", ())
    assert parse_shape("sr=scalar") == ("sr", ())
    assert parse_shape("x=0x4") == ("x", (0, 4))


@pytest.mark.parametrize("text", ["image", "=1x3", "image=1xax3", "image=1x-3", "image=1x3.5"])
def test_parse_shape_rejects(text: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_shape(text)
    assert "--shape" in exc.value.message and exc.value.hint


def test_parse_dim_and_range() -> None:
    assert parse_dim("batch=8") == ("batch", 8)
    assert parse_dim("seq*2=16") == ("seq*2", 16)
    assert parse_range("x=-1,1") == ("x", (-1.0, 1.0))
    assert parse_range("ids=0,30521") == ("ids", (0.0, 30521.0))
    for bad in ("batch", "batch=eight", "batch=-1"):
        with pytest.raises(InputError):
            parse_dim(bad)
    for bad in ("x=1", "x=a,b", "x=2,1", "x=0,inf", "x=1,2,3"):
        with pytest.raises(InputError) as exc:
            parse_range(bad)
        assert "--range" in exc.value.message and exc.value.hint
