"""``ortgpu.load()`` answers bad arguments with ortgpu's own errors, never TypeError, KeyError, AttributeError,
ValueError or MemoryError from deep inside (issue 17, item 10)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ortgpu
from ortgpu.errors import ExitCode, OrtgpuError
from ortgpu.model.inputs import InputSpec

BAD_CALLS = {
    "model is an int": lambda m: ortgpu.load(123),
    "model is None": lambda m: ortgpu.load(None),
    "model is bytes": lambda m: ortgpu.load(b"model.onnx"),
    "config is an int": lambda m: ortgpu.load(m, config=123),
    "config is a dict": lambda m: ortgpu.load(m, config={"session": {}}),
    "ep is an int": lambda m: ortgpu.load(m, ep=5),
    "device_id is text": lambda m: ortgpu.load(m, ep="cpu", device_id="one"),
    "device_id is huge": lambda m: ortgpu.load(m, ep="cpu", device_id=2**70),
    "provider_options is text": lambda m: ortgpu.load(m, ep="cpu", provider_options="x"),
    "provider_options is a list": lambda m: ortgpu.load(m, ep="cpu", provider_options=[1, 2]),
    "provider_options has an int key": lambda m: ortgpu.load(m, ep="cuda", provider_options={1: 2}, fallback="cpu"),
    "inputs is text": lambda m: ortgpu.load(m, ep="cpu", inputs="x"),
    "inputs is a dict": lambda m: ortgpu.load(m, ep="cpu", inputs={"x": (1, 4)}),
    "inputs of 14.6 TiB": lambda m: ortgpu.load(m, ep="cpu", inputs=InputSpec(shapes={"x": (10**12, 4)})),
    "inputs with a negative dim": lambda m: ortgpu.load(m, ep="cpu", inputs=InputSpec(shapes={"x": (-1, 4)})),
    "inputs with a text shape": lambda m: ortgpu.load(m, ep="cpu", inputs=InputSpec(shapes={"x": "1x4"})),
    "inputs with a text dim": lambda m: ortgpu.load(m, ep="cpu", inputs=InputSpec(dims={"batch": "a"})),
    "inputs with a one-value range": lambda m: ortgpu.load(m, ep="cpu", inputs=InputSpec(ranges={"x": (1,)})),
    "inputs with an infinite range": lambda m: ortgpu.load(
        m, ep="cpu", inputs=InputSpec(ranges={"x": (float("-inf"), float("inf"))})
    ),
    "inputs with a text seed": lambda m: ortgpu.load(m, ep="cpu", inputs=InputSpec(seed="a")),
    "collect_placement is text": lambda m: ortgpu.load(m, ep="cpu", collect_placement="no"),
    "warmup_runs is a float": lambda m: ortgpu.load(m, ep="cpu", warmup_runs=1.5),
}


@pytest.mark.parametrize("name", list(BAD_CALLS))
def test_bad_arguments_raise_ortgpu_errors(name: str, tiny: Path) -> None:
    with pytest.raises(OrtgpuError) as caught:
        BAD_CALLS[name](tiny)
    error = caught.value
    assert error.exit_code in (ExitCode.BAD_INPUT, ExitCode.ENVIRONMENT)
    assert "\n" not in error.one_line() and error.hint


def test_feeds_that_are_not_a_mapping_raise_an_input_error(tiny: Path) -> None:
    with ortgpu.load(tiny, ep="cpu", warmup_runs=0) as session:
        with pytest.raises(OrtgpuError, match="mapping"):
            session.run([np.zeros((1, 4), np.float32)])
        with pytest.raises(OrtgpuError):
            session.run({"x": "not an array"})
        assert session.run({"x": np.zeros((1, 4), np.float32)})[0].shape == (1, 4)


def test_good_arguments_still_load(tiny: Path) -> None:
    spec = InputSpec(shapes={"x": (2, 4)}, ranges={"x": (-1.0, 1.0)}, seed=3)
    with ortgpu.load(tiny, ep="cpu", inputs=spec, warmup_runs=1, collect_placement=False, device_id=0) as session:
        assert session.warmup_shapes == {"x": (2, 4)}


def test_running_out_of_memory_is_an_environment_error(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ortgpu.session import verified

    def no_memory(*args: object, **kwargs: object) -> None:
        raise MemoryError

    monkeypatch.setattr(verified.VerifiedSession, "warm_up", no_memory)
    with pytest.raises(OrtgpuError) as caught:
        ortgpu.load(tiny, ep="cpu")
    assert caught.value.exit_code is ExitCode.ENVIRONMENT and "memory" in caught.value.message
