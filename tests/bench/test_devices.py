"""`bench --devices`: one worker process per device, started together; GPU plumbing checked with the CPU EP."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from ortgpu.bench.devices import DeviceWorkerError, run_on_slots
from ortgpu.bench.runner import BenchRequest
from ortgpu.cli.main import main
from ortgpu.config import ExecutionProvider
from ortgpu.env.nvml import DriverInfo, GpuInfo
from ortgpu.scale.devices import parse_devices, plan_slots

QUICK = ["--ep", "cpu", "--iterations", "40", "--warmup", "3"]


@pytest.mark.slow
def test_cpu_workers_json(tiny_model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["bench", str(tiny_model), "--devices", "cpu:2", "--concurrency", "1,2", "--json", *QUICK]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "ortgpu.bench.devices/v1"
    result = doc["result"]
    runs = result["runs"]
    assert [r["slot"]["kind"] for r in runs] == ["cpu", "cpu"]
    assert len({r["pid"] for r in runs}) == 2 and os.getpid() not in {r["pid"] for r in runs}
    assert [c["key"] for c in result["cases"]] == ["cpu/run/b1/x1/s1", "cpu/run/b1/x2/s1"]
    for case in result["cases"]:
        per = [
            r_case["stats"]["throughput"]
            for r in runs
            for r_case in r["result"]["cases"]
            if f"x{r_case['concurrency']}" in case["key"]
        ]
        assert case["measured"] == 2 and case["throughput"] == pytest.approx(sum(per))
        assert case["synchronised"] is True  # both workers passed the gate of this case together
        # every worker ran the same model, shapes and iteration count
        assert all(c["stats"]["count"] == 40 * c["concurrency"] for r in runs for c in r["result"]["cases"])
    for run in runs:
        starts = [s["key"] for s in run["starts"]]
        assert starts == ["cpu/run/b1/x1/s1", "cpu/run/b1/x2/s1"]


def test_cpu_table(tiny_model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", str(tiny_model), "--devices", "cpu:1", *QUICK]) == 0
    out = capsys.readouterr().out
    for text in ("--devices cpu:1", "CUDA_VISIBLE_DEVICES", "cpu0", "all 1/1", "samples/s"):
        assert text in out


@pytest.mark.slow
def test_gpu_slots_pin_each_worker_run_on_the_cpu_ep(tiny_model: Path) -> None:
    """The GPU path's plumbing, with the EP injected: each worker runs with its GPU's UUID as CUDA_VISIBLE_DEVICES
    and device_id 0, whatever this process's CUDA_VISIBLE_DEVICES says."""
    gpus = tuple(GpuInfo(i, "NVIDIA H200", f"GPU-{i}f{i}f-0000", 140 << 30, (9, 0), f"0000:{i}:00.0") for i in range(3))
    driver = DriverInfo(True, "580.95.05", "13.0", gpus, None)
    slots = plan_slots(parse_devices("0,1"), gpu_ep=True, driver=driver, environ={"CUDA_VISIBLE_DEVICES": "2,0"})
    request = BenchRequest(model=tiny_model, ep=ExecutionProvider.CPU, iterations=20, warmup=2, device_id=7)
    runs, interrupted = run_on_slots(request, slots)
    assert not interrupted
    seen = [(r.slot.label, r.result.environment.cuda_visible_devices, r.result.settings.device_id) for r in runs]
    assert seen == [("gpu0", "GPU-2f2f-0000", 0), ("gpu1", "GPU-0f0f-0000", 0)]


def test_gpu_ids_on_the_cpu_ep_are_exit_2(tiny_model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", str(tiny_model), "--devices", "0,1", *QUICK]) == 2
    err = capsys.readouterr().err
    assert "names GPUs" in err and "--devices cpu:2" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("extra", "flag"),
    [(["--compare-cpu"], "--compare-cpu"), (["--report", "r.html"], "--report"), (["--devices", "x"], "--devices")],
)
def test_refused_combinations_are_exit_2(
    tiny_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], flag: str
) -> None:
    os.chdir(tmp_path)
    args = ["bench", str(tiny_model), "--devices", "cpu:2", *QUICK, *extra]
    assert main(args) == 2
    assert flag in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def kill_worker(name: str, sig: int = 9) -> int:
    """Kill this process's worker child named ``name`` (its command line ends with it); its pid."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and b"ortgpu.scale.worker" in argv and argv[-2:-1] == [name.encode()]:
            os.kill(int(entry.name), sig)
            return int(entry.name)
    raise AssertionError(f"no worker {name} found")


@pytest.mark.slow
def test_a_worker_that_dies_is_exit_3_naming_it(tiny_model: Path) -> None:
    slots = plan_slots(parse_devices("cpu:2"), gpu_ep=False)
    request = BenchRequest(model=tiny_model, ep=ExecutionProvider.CPU, duration_s=20.0, warmup=2)
    killed: list[int] = []

    def progress(message: str, fraction: float | None = None) -> None:
        if message.startswith("cpu1:") and not killed:
            killed.append(kill_worker("cpu1"))

    with pytest.raises(DeviceWorkerError) as caught:
        run_on_slots(request, slots, progress)
    assert caught.value.exit_code == 3
    assert "cpu1" in caught.value.message and "signal 9" in caught.value.message
    assert str(killed[0]) in caught.value.message


def test_save_writes_the_devices_result(tiny_model: Path, tmp_path: Path) -> None:
    saved = tmp_path / "devices.json"
    assert main(["bench", str(tiny_model), "--devices", "cpu:1", "--save", str(saved), *QUICK]) == 0
    doc = json.loads(saved.read_text())
    assert doc["schema"] == "ortgpu.bench.devices/v1" and doc["result"]["saved_to"] == str(saved)
    assert dataclasses.is_dataclass(BenchRequest)
