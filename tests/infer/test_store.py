"""Outputs written once (never replaced), deterministic bytes, stale temporaries, the manifest read back."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ortgpu.infer.dataset import InferInputError, ItemError
from ortgpu.infer.store import load_manifest, npz_bytes, remove_stale_temporaries, write_manifest, write_once

ARRAYS = {"y": np.arange(8, dtype=np.float32).reshape(2, 4)}
SHAPES = {"y": (2, 4)}


def test_same_arrays_same_bytes() -> None:
    assert npz_bytes(ARRAYS) == npz_bytes({"y": ARRAYS["y"].copy()})
    assert npz_bytes(ARRAYS) != npz_bytes({"y": ARRAYS["y"] + 1})


def test_written_once_and_readable(tmp_path: Path) -> None:
    target = tmp_path / "a.npz"
    first = write_once(target, npz_bytes(ARRAYS), SHAPES)
    assert not first.existed
    with np.load(target) as data:
        assert np.array_equal(data["y"], ARRAYS["y"])
    again = write_once(target, npz_bytes(ARRAYS), SHAPES)
    assert again.existed and not again.differs and again.sha256 == first.sha256
    assert [p.name for p in tmp_path.iterdir()] == ["a.npz"]  # no temporary left


def test_a_complete_output_already_there_is_kept_never_replaced(tmp_path: Path) -> None:
    target = tmp_path / "a.npz"
    before = npz_bytes({"y": ARRAYS["y"] + 0.5})
    target.write_bytes(before)
    kept = write_once(target, npz_bytes(ARRAYS), SHAPES)
    assert kept.existed and kept.differs and target.read_bytes() == before


def test_something_else_there_is_a_bad_item_and_stays(tmp_path: Path) -> None:
    target = tmp_path / "a.npz"
    target.write_bytes(b"precious")
    with pytest.raises(ItemError, match="not a complete output"):
        write_once(target, npz_bytes(ARRAYS), SHAPES)
    assert target.read_bytes() == b"precious"
    other = tmp_path / "b.npz"
    other.write_bytes(npz_bytes({"z": np.zeros(3)}))
    with pytest.raises(ItemError, match="other arrays"):
        write_once(other, npz_bytes(ARRAYS), SHAPES)


def test_a_fifo_is_never_written(tmp_path: Path) -> None:
    fifo = tmp_path / "a.npz"
    os.mkfifo(fifo)
    with pytest.raises(ItemError, match="FIFO"):
        write_once(fifo, npz_bytes(ARRAYS), SHAPES)


def test_stale_temporaries_of_our_outputs_only(tmp_path: Path) -> None:
    (tmp_path / ".a.npz.k2j3h4.tmp").write_bytes(b"half")
    (tmp_path / ".other.npz.x.tmp").write_bytes(b"not ours")
    assert remove_stale_temporaries(tmp_path, ["a.npz"]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.npz.x.tmp"]


def test_manifest_round_trip_and_refusals(tmp_path: Path) -> None:
    assert load_manifest(tmp_path) is None
    write_manifest(tmp_path, {"identity": {"batch": 4}, "items": {"a": {"status": "done"}}})
    assert load_manifest(tmp_path)["items"] == {"a": {"status": "done"}}
    (tmp_path / "manifest.json").write_text('{"schema": "something else"}')
    with pytest.raises(InferInputError, match="not an ortgpu infer manifest"):
        load_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text("{")
    with pytest.raises(InferInputError, match="not a manifest"):
        load_manifest(tmp_path)
