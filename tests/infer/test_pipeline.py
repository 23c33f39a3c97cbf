"""The worker's pipeline: inputs read straight into arrays, read-ahead, writer threads, per-stage times."""

from __future__ import annotations

import json
import os
import signal
import zipfile
from pathlib import Path

import numpy as np
import pytest

from ortgpu.config import ExecutionProvider
from ortgpu.infer.dataset import Item, ItemError, ItemReader, SourceKind
from ortgpu.infer.fastnpz import read_stored_npz
from ortgpu.infer.local import PoolEvents
from ortgpu.infer.run import InferRequest, run_infer
from ortgpu.infer.worker import STAGES
from ortgpu.scale.devices import parse_devices


def test_fast_reader_gives_numpys_bits(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    arrays = {
        "image": rng.standard_normal((4, 3, 5, 7)).astype(np.float32),
        "ids": rng.integers(0, 1 << 40, (4, 9)),
        "mask": rng.integers(0, 2, (4, 9)).astype(bool),
        "empty": np.zeros((0, 3), np.float16),
        "big_endian": np.arange(6, dtype=">f4"),
    }
    path = tmp_path / "a.npz"
    np.savez(path, **arrays)
    fast = read_stored_npz(path)
    assert fast is not None and list(fast) == list(arrays)
    with np.load(path) as slow:
        for name in arrays:
            assert fast[name].dtype == slow[name].dtype and fast[name].shape == slow[name].shape, name
            assert fast[name].tobytes() == slow[name].tobytes(), name


def test_fast_reader_leaves_what_it_does_not_handle_to_numpy(tmp_path: Path) -> None:
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.savez_compressed(tmp_path / "compressed.npz", x=data)
    np.savez(tmp_path / "fortran.npz", x=np.asfortranarray(data))
    with zipfile.ZipFile(tmp_path / "text.npz", "w") as archive:
        archive.writestr("notes.txt", "hello")
    for name in ("compressed", "fortran", "text"):
        assert read_stored_npz(tmp_path / f"{name}.npz") is None, name
    reader = ItemReader(SourceKind.NPZ_FOLDER)
    for name in ("compressed", "fortran"):  # numpy reads them: the same arrays
        got = reader.read(Item(name, str(tmp_path / f"{name}.npz")))["x"]
        assert got.tobytes() == data.tobytes() and got.shape == (3, 4)


def test_a_damaged_input_is_a_bad_item_in_numpys_words(tmp_path: Path) -> None:
    path = tmp_path / "bad.npz"
    np.savez(path, x=np.arange(1000, dtype=np.float32))
    raw = bytearray(path.read_bytes())
    raw[raw.index(b"x.npy") + 400] ^= 0xFF  # one byte of the array data flipped: the CRC no longer matches
    path.write_bytes(bytes(raw))
    assert read_stored_npz(path) is None
    with pytest.raises(ItemError, match=r"(?i)crc"):
        ItemReader(SourceKind.NPZ_FOLDER).read(Item("bad", str(path)))


def _reference(model: Path, inputs: Path, batch: int) -> dict[str, bytes]:
    from ortgpu.session import load

    names = sorted(p.stem for p in inputs.glob("*.npz"))
    out: dict[str, bytes] = {}
    with load(model, ep="cpu") as session:
        for start in range(0, len(names), batch):
            group = names[start : start + batch]
            logits = session.run({"image": np.stack([np.load(inputs / f"{n}.npz")["image"] for n in group])})[0]
            out.update({n: logits[i : i + 1].tobytes() for i, n in enumerate(group)})
    return out


def _outputs(folder: Path) -> dict[str, bytes]:
    found = {}
    for path in sorted(folder.glob("*.npz")):
        with np.load(path) as data:
            found[path.stem] = data["logits"].tobytes()
    return found


@pytest.mark.slow
def test_read_ahead_keeps_outputs_order_and_reports_stage_times(demo_model: Path, tmp_path: Path, make_images) -> None:
    inputs = make_images(tmp_path / "in", 14)
    order: list[int] = []
    result = run_infer(
        InferRequest(
            demo_model, inputs, tmp_path / "out", ep=ExecutionProvider.CPU, devices=parse_devices("cpu:1"), batch=2
        ),
        events=PoolEvents(dispatching=lambda index, worker, pid: order.append(index)),
    )
    assert result.complete and result.written == 14 and result.tasks == 7
    assert order == list(range(7))  # handed out in plan order, several ahead of the one running
    assert _outputs(tmp_path / "out") == _reference(demo_model, inputs, 2)
    stages = dict(result.stage_s)
    assert list(stages) == list(STAGES)
    assert stages["read"] > 0 and stages["run"] > 0 and stages["write"] > 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["counts"] == {"items": 14, "done": 14, "bad": 0, "rows": 14}


@pytest.mark.slow
def test_a_worker_killed_while_reading_ahead_loses_and_doubles_nothing(
    demo_model: Path, tmp_path: Path, make_images
) -> None:
    inputs = make_images(tmp_path / "in", 16)
    killed: list[int] = []

    def dispatching(index: int, worker: str, pid: int) -> None:
        if index == 2 and not killed:  # tasks 0 and 1 are being read, run or written: all in flight
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    result = run_infer(
        InferRequest(
            demo_model, inputs, tmp_path / "out", ep=ExecutionProvider.CPU, devices=parse_devices("cpu:1"), batch=2
        ),
        events=PoolEvents(dispatching=dispatching),
    )
    assert killed and result.replaced == 1 and result.retried >= 1
    assert result.complete and result.written + result.kept == 16 and not result.bad
    assert _outputs(tmp_path / "out") == _reference(demo_model, inputs, 2)  # every output once, the same bits
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["counts"] == {"items": 16, "done": 16, "bad": 0, "rows": 16}
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.endswith(".tmp")]
    again = run_infer(
        InferRequest(
            demo_model, inputs, tmp_path / "out", ep=ExecutionProvider.CPU, devices=parse_devices("cpu:1"), batch=2
        )
    )
    assert again.verified == 16 and again.written == 0 and again.tasks == 0  # idempotent re-run


class _Channel:
    """The worker's pipe, in one process: tasks in, messages out."""

    def __init__(self, messages: list) -> None:
        import queue

        self.inbox: queue.Queue = queue.Queue()
        self.sent: list = []
        for message in messages:
            self.inbox.put(message)

    def recv(self):
        return self.inbox.get()

    def send(self, message) -> None:
        self.sent.append(message)


@pytest.mark.parametrize("readers", [2, 4])
def test_a_worker_reads_as_many_tasks_at_once_as_it_has_reader_threads(
    demo_model: Path, tmp_path: Path, make_images, monkeypatch, readers: int
) -> None:
    # reading a big file takes longer than a GPU run: one reader per task in flight keeps the session fed
    import threading
    import time

    from ortgpu.infer.dataset import discover, plan_tasks
    from ortgpu.infer.worker import InferWorker, WorkerSpec, serve

    inputs = make_images(tmp_path / "in", 8)
    tasks = plan_tasks(discover(inputs, 1), 1)
    out = tmp_path / "out"
    out.mkdir()
    prepare = InferWorker.prepare
    lock, now, peak = threading.Lock(), [0], [0]

    def slow_prepare(self, task):
        with lock:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
        time.sleep(0.3)
        try:
            return prepare(self, task)
        finally:
            with lock:
                now[0] -= 1

    monkeypatch.setattr(InferWorker, "prepare", slow_prepare)
    spec = WorkerSpec(str(demo_model), None, "cpu", str(out), SourceKind.NPZ_FOLDER, 1, readers=readers)
    channel = _Channel([("task", t) for t in tasks] + [("stop",)])
    serve((spec, "cpu0"), channel)
    done = [m for m in channel.sent if m[0] == "done"]
    assert sorted(m[1] for m in done) == [t.index for t in tasks]  # every task once
    assert peak[0] == readers


def test_reader_threads_follow_the_cpus_each_worker_has() -> None:
    from ortgpu.infer.worker import reader_threads

    assert reader_threads(1, cpus=16) == 8  # one GPU worker on a 16-core host
    assert reader_threads(1, cpus=64) == 8
    assert reader_threads(8, cpus=16) == 2
    assert reader_threads(1, cpus=2) == 2  # never fewer than two: one reads while the other's task runs


def _batches(folder: Path, count: int, rows: int) -> Path:
    """``count`` files each holding ``rows`` samples with the batch axis: b000.npz..."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(3)
    for i in range(count):
        np.savez(folder / f"b{i:03d}.npz", image=rng.standard_normal((rows, 3, 32, 32)).astype(np.float32))
    return folder


def _counting(run, calls: list[int]):
    def counted(feeds):
        calls.append(1)
        return run(feeds)

    return counted


@pytest.mark.parametrize(("rows", "batch", "on_device"), [(4, 4, 3), (3, 4, 0), (5, 4, 0)])
def test_items_copied_ahead_to_the_device_give_the_same_bits(
    demo_model: Path, tmp_path: Path, monkeypatch, rows: int, batch: int, on_device: int
) -> None:
    # on a GPU the reader threads copy an item's arrays to the device while the session runs the one before; only
    # items that make their own run(s) are copied, so the rows of every run, and the bits, stay the same
    import onnxruntime as ort

    from ortgpu.infer.dataset import discover, plan_tasks
    from ortgpu.infer.worker import InferWorker, WorkerSpec

    inputs = _batches(tmp_path / "in", 3, rows)
    tasks = plan_tasks(discover(inputs, 1), 3)  # one task of three items: they may share runs
    results = {}
    for side in ("host", "device"):
        out = tmp_path / side
        out.mkdir()
        worker = InferWorker(WorkerSpec(str(demo_model), None, "cpu", str(out), SourceKind.NPZ_FOLDER, batch), side)
        ran: list[int] = []
        if side == "device":  # CPU ORT values stand in for CUDA ones: the same binding path
            monkeypatch.setattr(
                worker.session,
                "to_device",
                lambda feeds: {n: ort.OrtValue.ortvalue_from_numpy(a) for n, a in feeds.items()},
            )
            monkeypatch.setattr(worker.session, "run_on_device", _counting(worker.session.run_on_device, ran))
        records = [r for task in tasks for r in worker.process(task)]
        worker.close()
        assert [r.status for r in records] == ["done"] * 3
        assert len(ran) == (on_device if side == "device" else 0)
        results[side] = _outputs(out)
    assert results["device"] == results["host"]


@pytest.mark.gpu
def test_infer_on_cuda_gives_the_bits_of_the_session_run_on_host_feeds(demo_model: Path, tmp_path: Path) -> None:
    from ortgpu.session import load

    inputs = _batches(tmp_path / "in", 4, 8)
    result = run_infer(InferRequest(demo_model, inputs, tmp_path / "out", ep=ExecutionProvider.CUDA, batch=8))
    assert result.complete and result.written == 4
    with load(demo_model, ep="cuda") as session:
        for path in sorted(inputs.glob("*.npz")):
            (logits,) = session.run({"image": np.load(path)["image"]})
            with np.load(tmp_path / "out" / path.name) as data:
                assert data["logits"].tobytes() == logits.tobytes()


def test_device_copies_stay_within_their_budget_and_are_given_back(
    demo_model: Path, tmp_path: Path, monkeypatch
) -> None:
    # the copies made ahead of their runs must never crowd out the session's own GPU memory
    import onnxruntime as ort

    import ortgpu.infer.worker as worker_module
    from ortgpu.infer.dataset import discover, plan_tasks
    from ortgpu.infer.worker import InferWorker, WorkerSpec

    inputs = _batches(tmp_path / "in", 3, 4)
    one_item = 4 * 3 * 32 * 32 * 4  # bytes of one item's image
    monkeypatch.setattr(worker_module, "DEVICE_COPY_BUDGET", 2 * one_item)
    out = tmp_path / "out"
    out.mkdir()
    worker = InferWorker(WorkerSpec(str(demo_model), None, "cpu", str(out), SourceKind.NPZ_FOLDER, 4), "w")
    monkeypatch.setattr(
        worker.session, "to_device", lambda feeds: {n: ort.OrtValue.ortvalue_from_numpy(a) for n, a in feeds.items()}
    )
    prepared = [worker.prepare(task) for task in plan_tasks(discover(inputs, 1), 1)]  # three read ahead
    assert [len(p.device) for p in prepared] == [1, 1, 0] and worker.device_bytes == 2 * one_item
    records = [r for p in prepared for r in worker.execute(p)]
    worker.close()
    assert [r.status for r in records] == ["done"] * 3 and worker.device_bytes == 0
