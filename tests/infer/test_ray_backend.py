"""`infer --ray` on a local Ray cluster (2 CPUs) when actors die: replaced, the batch retried, nothing lost or doubled.

The actors die for real: a worker-process setup hook (run in every Ray worker of this module's cluster) wraps
:class:`InferWorker` so that it ends its own process with ``os._exit`` after writing a task's outputs (one task,
once per arming: a file renamed armed -> fired decides), or when it reads a task that holds the item ``poison``;
and so that building a session for a model named ``no-session.onnx`` raises an ortgpu error.
Skipped without Ray (the ortgpu[ray] extra). One cluster for the module: starting Ray is the slow part.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from ortgpu.ep import ExecutionProvider  # noqa: E402
from ortgpu.infer.local import PoolEvents  # noqa: E402
from ortgpu.infer.run import InferRequest, run_infer  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.slow]
KILL_ONCE = "ORTGPU_TEST_KILL_ONCE"  # a folder: the first task to rename its file armed -> fired ends its actor
KILL_ON = "ORTGPU_TEST_KILL_ON"  # an item name: a task holding it ends its actor before any write, every time


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    if ray.is_initialized():
        pytest.skip("Ray is already running in this process without this module's setup hook")

    def setup_hook() -> None:
        """Run in each Ray worker process at start; a local function, so cloudpickle sends it by value (the
        workers cannot import the tests)."""
        import os as _os

        from ortgpu.infer import worker as module

        prepare, write, build = module.InferWorker.prepare, module.InferWorker.write, module.InferWorker.__init__

        def init(self, spec, name):  # type: ignore[no-untyped-def]
            if spec.model.endswith("no-session.onnx"):
                from ortgpu.errors import EnvironmentUnfitError

                raise EnvironmentUnfitError("no session here", "a hint from the actor")
            build(self, spec, name)

        def read(self, task):  # type: ignore[no-untyped-def]
            poison = _os.environ.get("ORTGPU_TEST_KILL_ON")
            if poison and any(item.name == poison for item in task.items):
                _os._exit(9)
            return prepare(self, task)

        def written(self, prepared):  # type: ignore[no-untyped-def]
            records = write(self, prepared)
            armed = _os.environ.get("ORTGPU_TEST_KILL_ONCE")
            try:
                _os.rename(f"{armed}/armed", f"{armed}/fired")  # atomic: one task of one actor wins
            except OSError:
                return records
            _os._exit(9)  # dies holding the task: its outputs are written, its records never reach the driver

        module.InferWorker.prepare, module.InferWorker.write = read, written
        module.InferWorker.__init__ = init

    control = tmp_path_factory.mktemp("control")
    env = {KILL_ONCE: str(control), KILL_ON: "poison"}
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level="ERROR",
        runtime_env={"worker_process_setup_hook": setup_hook, "env_vars": env},
    )
    yield control
    ray.shutdown()


def _images(folder: Path, count: int) -> Path:
    folder.mkdir()
    rng = np.random.default_rng(5)
    for i in range(count):
        np.savez(folder / f"s{i:02d}.npz", image=rng.standard_normal((3, 32, 32)).astype(np.float32))
    return folder


def _request(model: Path, inputs: Path, out: Path, **kw) -> InferRequest:
    kw.setdefault("workers", 2)
    return InferRequest(model, inputs, out, ep=ExecutionProvider.CPU, ray=True, **kw)


def _reference(model: Path, inputs: Path, batch: int) -> dict[str, bytes]:
    """Each output's bytes from the same batches run in this process."""
    from ortgpu.infer.store import npz_bytes
    from ortgpu.session import load

    names = sorted(p.stem for p in inputs.glob("*.npz"))
    out = {}
    with load(model, ep="cpu") as session:
        for start in range(0, len(names), batch):
            group = names[start : start + batch]
            logits = session.run({"image": np.stack([np.load(inputs / f"{n}.npz")["image"] for n in group])})[0]
            out.update({n: npz_bytes({"logits": logits[i : i + 1]}) for i, n in enumerate(group)})
    return out


def _run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    from ortgpu.cli.main import main

    code = main(["infer", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)  # stdout holds the JSON only (Ray's messages go to stderr)


def test_a_killed_actor_is_replaced_and_its_batch_retried(
    cluster: Path, demo_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = _images(tmp_path / "in", 16)
    (cluster / "armed").touch()
    args = [str(demo_model), "--inputs", str(inputs), "--out", str(tmp_path / "out"), "--ep", "cpu", "--batch", "4"]
    code, doc = _run_cli([*args, "--ray", "--workers", "2"], capsys)
    result = doc["result"]
    assert (cluster / "fired").exists()  # an actor did die, holding a task whose outputs it had written
    assert code == 0 and result["backend"] == "ray" and not result["bad"]
    assert (result["items"], result["written"] + result["kept"], result["rows"]) == (16, 16, 16)
    assert result["kept"] >= 1  # the retried task found the dead attempt's outputs: kept as they are, not rewritten
    assert result["retried"] >= 1 and result["replaced"] >= 1  # what the user sees: a worker died, its task ran again
    assert len({w["name"] for w in result["workers"]}) == len(result["workers"]) >= 1  # one name per actor process
    reference = _reference(demo_model, inputs, 4)
    written = {p.stem: p.read_bytes() for p in (tmp_path / "out").glob("*.npz")}
    assert written == reference  # every input has exactly one output, bit for bit the single-process run's
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["counts"] == {"items": 16, "done": 16, "bad": 0, "rows": 16}
    assert {k: v["output_sha256"] for k, v in manifest["items"].items()} == {
        k: hashlib.sha256(v).hexdigest() for k, v in reference.items()
    }
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.endswith(".tmp")]
    # the actors' own span of the work: inside the run, without Ray's start (the throughput benchmarks use it)
    assert result["busy_s"] is not None and 0 < result["busy_s"] <= result["elapsed_s"]
    again = run_infer(_request(demo_model, inputs, tmp_path / "out", batch=4))  # a re-run: all verified, nothing to run
    assert (again.verified, again.tasks, again.written) == (16, 0, 0)


def test_an_input_that_kills_every_actor_is_reported_after_its_attempts(
    cluster: Path, demo_model: Path, tmp_path: Path
) -> None:
    inputs = _images(tmp_path / "in", 6)
    np.savez(inputs / "poison.npz", image=np.zeros((3, 32, 32), np.float32))
    retried: list[int] = []
    request = _request(demo_model, inputs, tmp_path / "out", batch=1)
    result = run_infer(request, events=PoolEvents(retried=lambda index, worker, why: retried.append(index)))
    assert [(b.name, b.reason) for b in result.bad] == [("poison", "its Ray actor died running it (3 attempts)")]
    assert result.written == 6 and not result.stopped and result.retried == len(retried) >= 1
    assert sorted(p.stem for p in (tmp_path / "out").glob("*.npz")) == [f"s{i:02d}" for i in range(6)]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["counts"] == {"items": 7, "done": 6, "bad": 1, "rows": 6}


def test_fail_fast_stops_at_a_bad_input(cluster: Path, demo_model: Path, tmp_path: Path) -> None:
    inputs = _images(tmp_path / "in", 8)
    np.savez(inputs / "a-wrong.npz", image=np.zeros((3, 32, 32)))  # float64: the first task's first item
    result = run_infer(_request(demo_model, inputs, tmp_path / "out", batch=1, fail_fast=True, workers=1))
    assert result.stopped and [b.name for b in result.bad] == ["a-wrong"] and result.written < 8


def test_an_actor_that_cannot_build_its_session_stops_the_run_with_its_error(
    cluster: Path, demo_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "no-session.onnx"
    model.write_bytes(demo_model.read_bytes())
    inputs = _images(tmp_path / "in", 2)
    from ortgpu.cli.main import main

    code = main(["infer", str(model), "--inputs", str(inputs), "--out", str(tmp_path / "out"), "--ep", "cpu", "--ray"])
    err = capsys.readouterr().err
    assert code == 3 and "no session here (hint: a hint from the actor)" in err  # the actor's error, as it gave it
    assert "Traceback" not in err


def test_each_actor_process_has_its_own_name_and_a_restart_counts_as_replaced() -> None:
    from ortgpu.infer.ray_backend import _Workers

    started: list[str] = []
    workers = _Workers(PoolEvents(started=lambda info: started.append(info.name)))

    def info(name: str, pid: int) -> str:
        return json.dumps(
            {
                "name": name,
                "pid": pid,
                "host": "h",
                "active_ep": "cpu",
                "device_id": 0,
                "cuda_visible_devices": None,
                "ort_version": "1",
                "session_s": 0.1,
            }
        )

    assert workers.name("aaaa1111" + "01000000", info("ray-aaaa1111", 10)) == "ray-aaaa1111"
    assert workers.name("bbbb2222" + "01000000", info("ray-bbbb2222", 11)) == "ray-bbbb2222"
    assert workers.name("aaaa1111" + "01000000", info("ray-aaaa1111", 10)) == "ray-aaaa1111"  # the same process
    assert workers.name("aaaa1111" + "01000000", info("ray-aaaa1111", 12)) == "ray-aaaa1111#1"  # Ray restarted it
    assert started == ["ray-aaaa1111", "ray-bbbb2222", "ray-aaaa1111#1"] and workers.replaced == 1
    assert [w.pid for w in workers.infos] == [10, 11, 12]


def test_a_task_that_raises_comes_back_as_an_error_not_a_dead_job() -> None:
    from ortgpu.infer.dataset import Item, Task
    from ortgpu.infer.ray_backend import RayInferActor, _task_json

    class Broken:
        def prepare(self, task: Task) -> list:
            raise RuntimeError("disk on fire\nsecond line")

    actor = object.__new__(RayInferActor)  # no Ray, no session: only the call
    actor.actor, actor.worker, actor.info, actor.fatal, actor.running = "abc", Broken(), "{}", "", threading.Lock()
    out = actor({"task": [_task_json(Task(7, (Item("a", "a.npz", None, None),), None))]})
    assert out["task"] == [7] and out["error"] == ["disk on fire"] and out["records"] == ["[]"]
