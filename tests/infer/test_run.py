"""`run_infer` locally: bit-identical to one process, idempotent re-runs, faults (a killed worker, bad inputs)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest

from ortgpu.config import ExecutionProvider
from ortgpu.infer.dataset import InferInputError
from ortgpu.infer.local import PoolEvents
from ortgpu.infer.run import InferRequest, run_infer
from ortgpu.scale.devices import parse_devices

CPU = ExecutionProvider.CPU
BIAS = np.array([1, 2, 3, 4], np.float32)  # the tiny model adds it


def _request(model: Path, inputs: Path, out: Path, **kw) -> InferRequest:
    kw.setdefault("devices", parse_devices("cpu:1"))
    return InferRequest(model=model, inputs=inputs, out=out, ep=CPU, **kw)


def _single_process_reference(model: Path, inputs: Path, batch: int) -> dict[str, np.ndarray]:
    """The same rows batched the same way (``batch`` consecutive files per run), in this process."""
    from ortgpu.session import load

    names = sorted(p.stem for p in inputs.glob("*.npz"))
    out = {}
    with load(model, ep="cpu") as session:
        for start in range(0, len(names), batch):
            group = names[start : start + batch]
            images = np.stack([np.load(inputs / f"{n}.npz")["image"] for n in group])
            logits = session.run({"image": images})[0]
            out.update({n: logits[i : i + 1] for i, n in enumerate(group)})
    return out


@pytest.mark.slow
def test_two_workers_equal_one_process_bit_for_bit(demo_model: Path, tmp_path: Path, make_images, read_outputs) -> None:
    inputs = make_images(tmp_path / "in", 21)
    one = run_infer(_request(demo_model, inputs, tmp_path / "one", batch=4))
    two = run_infer(_request(demo_model, inputs, tmp_path / "two", batch=4, devices=parse_devices("cpu:2")))
    assert (one.written, two.written, len(two.workers)) == (21, 21, 2)
    assert {w.pid for w in two.workers}.isdisjoint({os.getpid()})
    reference = _single_process_reference(demo_model, inputs, 4)
    for name, arrays in read_outputs(tmp_path / "two").items():
        assert arrays["logits"].tobytes() == reference[name].tobytes(), name
    first = json.loads((tmp_path / "one" / "manifest.json").read_text())
    second = json.loads((tmp_path / "two" / "manifest.json").read_text())
    hashes = {k: v["output_sha256"] for k, v in first["items"].items()}
    assert hashes == {k: v["output_sha256"] for k, v in second["items"].items()}  # the same bytes, file by file
    assert first["counts"] == {"items": 21, "done": 21, "bad": 0, "rows": 21}


@pytest.mark.slow
def test_a_killed_worker_is_replaced_and_its_task_retried(
    demo_model: Path, tmp_path: Path, make_images, read_outputs
) -> None:
    inputs = make_images(tmp_path / "in", 24)
    killed: list[tuple[int, str]] = []

    def dispatching(index: int, worker: str, pid: int) -> None:
        if index == 2 and not killed:  # the worker dies holding task 2
            os.kill(pid, signal.SIGKILL)
            killed.append((pid, worker))

    result = run_infer(
        _request(demo_model, inputs, tmp_path / "out", batch=4, devices=parse_devices("cpu:2")),
        events=PoolEvents(dispatching=dispatching),
    )
    assert killed and result.replaced == 1 and result.retried >= 1
    assert result.complete and result.written + result.kept == 24
    assert killed[0][1] + "#1" in {w.name for w in result.workers}  # the replacement, on the same device
    reference = _single_process_reference(demo_model, inputs, 4)
    outputs = read_outputs(tmp_path / "out")
    assert sorted(outputs) == sorted(reference)  # nothing lost, nothing extra
    for name, arrays in outputs.items():
        assert arrays["logits"].tobytes() == reference[name].tobytes()
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["counts"]["done"] == 24 and manifest["counts"]["rows"] == 24
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.endswith(".tmp")]


@pytest.mark.slow
def test_rerun_skips_what_is_verified_and_never_replaces_a_changed_output(tiny_model: Path, tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    for i in range(6):
        np.savez(inputs / f"x{i}.npz", x=np.full((2, 4), i, np.float32))
    out = tmp_path / "out"
    first = run_infer(_request(tiny_model, inputs, out, batch=2))
    assert first.written == 6 and first.rows == 12
    stamps = {p.name: p.stat().st_mtime_ns for p in out.glob("*.npz")}
    again = run_infer(_request(tiny_model, inputs, out, batch=2))
    assert (again.written, again.verified, again.tasks) == (0, 6, 0)
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.npz")} == stamps
    (out / "x1.npz").unlink()  # deleted: computed again
    (out / "x2.npz").write_bytes(b"edited by hand")  # changed: reported, left alone
    np.savez(inputs / "x3.npz", x=np.full((2, 4), 9, np.float32))  # input changed: reported, output left alone
    third = run_infer(_request(tiny_model, inputs, out, batch=2))
    assert third.written == 1 and third.verified == 3
    assert {b.name for b in third.bad} == {"x2", "x3"}
    assert (out / "x2.npz").read_bytes() == b"edited by hand"
    with np.load(out / "x1.npz") as data:
        assert np.array_equal(data["y"], np.full((2, 4), 1, np.float32) + BIAS)


@pytest.mark.slow
def test_bad_inputs_are_reported_and_skipped_or_stop_with_fail_fast(tiny_model: Path, tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    np.savez(inputs / "a.npz", x=np.ones((1, 4), np.float32))
    np.savez(inputs / "b.npz", x=np.ones((1, 4), np.float64))  # wrong dtype
    np.savez(inputs / "c.npz", nope=np.ones((1, 4), np.float32))  # wrong name
    (inputs / "d.npz").write_bytes(b"garbage")
    np.savez(inputs / "e.npz", x=np.ones((1, 5), np.float32))  # wrong width
    result = run_infer(_request(tiny_model, inputs, tmp_path / "out", batch=8))
    reasons = {b.name: b.reason for b in result.bad}
    assert result.written == 1 and set(reasons) == {"b", "c", "d", "e"}
    assert "float64" in reasons["b"] and "'x'" in reasons["c"] and "dim 1" in reasons["e"]
    assert sorted(p.name for p in (tmp_path / "out").glob("*.npz")) == ["a.npz"]
    stopped = run_infer(_request(tiny_model, inputs, tmp_path / "ff", batch=1, fail_fast=True))
    assert stopped.stopped and stopped.written <= 1


def test_refusals_before_any_worker(tiny_model: Path, tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    np.savez(inputs / "a.npz", x=np.ones((1, 4), np.float32))
    with pytest.raises(InferInputError, match="is the input folder"):
        run_infer(_request(tiny_model, inputs, inputs))
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "a.npz").write_bytes(b"someone else's")
    with pytest.raises(InferInputError, match="not written by ortgpu infer"):
        run_infer(_request(tiny_model, inputs, foreign))
    assert (foreign / "a.npz").read_bytes() == b"someone else's"
    with pytest.raises(InferInputError, match="--batch 0"):
        run_infer(_request(tiny_model, inputs, tmp_path / "o", batch=0))
    with pytest.raises(InferInputError, match="parent folder"):
        run_infer(_request(tiny_model, inputs, tmp_path / "no" / "such"))


@pytest.mark.slow
def test_another_batch_into_the_same_folder_is_refused(tiny_model: Path, tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    np.savez(inputs / "a.npz", x=np.ones((1, 4), np.float32))
    run_infer(_request(tiny_model, inputs, tmp_path / "out", batch=2))
    with pytest.raises(InferInputError, match="another --batch"):
        run_infer(_request(tiny_model, inputs, tmp_path / "out", batch=3))


@pytest.mark.slow
def test_columns_source_rows_per_file(tiny_model: Path, tmp_path: Path, read_outputs) -> None:
    x = np.arange(40, dtype=np.float32).reshape(10, 4)
    np.savez(tmp_path / "cols.npz", x=x, label=np.arange(10))
    result = run_infer(_request(tiny_model, tmp_path / "cols.npz", tmp_path / "out", batch=3, rows_per_item=4))
    assert (result.items, result.written, result.rows) == (3, 3, 10)
    outputs = read_outputs(tmp_path / "out")
    joined = np.concatenate([outputs[k]["y"] for k in sorted(outputs)])
    assert np.array_equal(joined, x + BIAS)
