"""[model] file: sessions opened for a model run the tuned copy the config pins, checked by sha256."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest

import ortgpu
from ortgpu.config import ConfigError, load_config
from ortgpu.model.zoo import build_demo_model, build_tiny_model


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def pinned(tmp_path: Path, shape_subgraph_model: Path) -> tuple[Path, Path, Path]:
    source = build_tiny_model(tmp_path / "source.onnx")
    tuned = shutil.copy(shape_subgraph_model, tmp_path / "source.tuned.onnx")
    config = tmp_path / "ortgpu.toml"
    config.write_text(
        f'[model]\nfile = "source.tuned.onnx"\nsha256 = "{_sha(Path(tuned))}"\nsource_sha256 = "{_sha(source)}"\n'
    )
    return source, Path(tuned), config


def test_load_runs_the_pinned_file_for_its_source_model(pinned: tuple[Path, Path, Path]) -> None:
    source, tuned, config = pinned
    x = np.zeros((2, 4), np.float32)
    with ortgpu.load(source, config=config, ep="cpu") as session:
        got = session.run({"x": x})[0]
    with ortgpu.load(tuned, ep="cpu") as direct:
        want = direct.run({"x": x})[0]
    np.testing.assert_array_equal(got, want)
    with ortgpu.load(tuned, config=config, ep="cpu") as itself:  # the tuned file itself is accepted too
        np.testing.assert_array_equal(itself.run({"x": x})[0], want)


def test_another_model_or_a_changed_file_is_refused(pinned: tuple[Path, Path, Path], tmp_path: Path) -> None:
    source, tuned, config = pinned
    with pytest.raises(ConfigError, match="derived from another model"):
        ortgpu.load(build_demo_model(tmp_path / "other.onnx"), config=config, ep="cpu")
    tuned.write_bytes(tuned.read_bytes() + b"\0")
    with pytest.raises(ConfigError, match="changed since its sha256 was written"):
        ortgpu.load(source, config=config, ep="cpu")


def test_model_and_run_sections_are_validated(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[run]\nmode = "graph"\n')
    with pytest.raises(ConfigError, match="not one of run, iobinding, cudagraph"):
        load_config(bad)
    bad.write_text('[model]\nsha256 = "ab"\n')
    with pytest.raises(ConfigError, match=r"\[model\] without file"):
        load_config(bad)
    bad.write_text('[model]\nfile = "m.onnx"\nprecision = "int8"\n')
    with pytest.raises(ConfigError, match="not one of fp32, fp16"):
        load_config(bad)
