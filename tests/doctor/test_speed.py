"""doctor on a GPU host in under 2 s: the probes run at once, the CUDA child does the least it can (one Add, no
cuDNN) unless the cuDNN the GPU gets is in question, and --quick skips the child with a note."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from tests.support.doctor_machines import NEEDS, Machine, check_of, lazy_libraries, loaded_attempt, ort_query
from tests.support.fake_libs import FakeNvml, fake_ort, needs_gcc

from ortgpu.cli.main import main
from ortgpu.doctor.machine import diagnose
from ortgpu.doctor.verdict import Status
from ortgpu.host.load_attempt import ADD_MODEL

pytestmark = needs_gcc


def _machine(tmp_path: Path) -> Machine:
    machine = Machine(tmp_path)
    fake_ort(machine.site, cuda_needs=NEEDS)
    machine.provide(*NEEDS, *lazy_libraries())
    return machine


def _recording(calls: list[dict], delay_s: float = 0.0):
    inner = loaded_attempt([])

    def load(libraries, **kwargs):
        calls.append(kwargs)
        time.sleep(delay_s)
        return inner(libraries, **kwargs)

    return load


def test_the_minimal_session_model_is_one_valid_add() -> None:
    import onnxruntime as ort

    model = onnx.load_from_string(ADD_MODEL)
    onnx.checker.check_model(model)
    assert [n.op_type for n in model.graph.node] == ["Add"]
    session = ort.InferenceSession(ADD_MODEL, providers=["CPUExecutionProvider"])
    (out,) = session.run(None, {"x": np.full((1, 8), 1.5, dtype=np.float32)})
    assert np.array_equal(out, np.full((1, 8), 3.0, dtype=np.float32))


def test_the_child_runs_the_minimal_session_when_cudnn_is_not_in_question(tmp_path: Path) -> None:
    calls: list[dict] = []
    report = diagnose(probes=_machine(tmp_path).probes(load=_recording(calls)))
    assert report.ready, report.verdict
    assert len(calls) == 1 and calls[0]["conv"] is False and calls[0]["session"] is True


def test_a_second_reachable_cudnn_brings_the_conv_session(tmp_path: Path) -> None:
    machine = _machine(tmp_path)
    other = tmp_path / "other" / "lib"
    other.mkdir(parents=True)
    machine.provide(*[n for n in lazy_libraries() if n.startswith("libcudnn")], directory=other)
    calls: list[dict] = []
    probes = machine.probes(load=_recording(calls), environ={"LD_LIBRARY_PATH": f"{machine.lib}:{other}"})
    report = diagnose(probes=probes)
    assert [c["conv"] for c in calls] == [True]  # decided before the child starts: one child, the Conv session
    assert report.load_attempt is not None and report.load_attempt.session_requested


def test_cudnn_preloaded_from_pip_settles_which_cudnn_so_the_add_session_is_enough(tmp_path: Path) -> None:
    machine = _machine(tmp_path)
    cudnn = [n for n in lazy_libraries() if n.startswith("libcudnn")]
    machine.provide(*cudnn, directory=machine.site / "nvidia" / "cudnn" / "lib")  # preload_dlls() loads these
    other = tmp_path / "other" / "lib"  # and a second, system copy the loader could reach
    other.mkdir(parents=True)
    machine.provide(*cudnn, directory=other)
    calls: list[dict] = []
    probes = machine.probes(load=_recording(calls), environ={"LD_LIBRARY_PATH": f"{machine.lib}:{other}"})
    report = diagnose(probes=probes)
    assert report.cuda_preload is not None and any(
        f.name == "lib" and f.parent.name == "cudnn" for f in report.cuda_preload.folders
    )
    assert [c["conv"] for c in calls] == [False]


def test_the_report_times_every_probe(tmp_path: Path) -> None:
    report = diagnose(probes=_machine(tmp_path).probes(load=_recording([], delay_s=0.2)))
    for probe in (
        "distributions",
        "onnxruntime import",
        "NVML driver query",
        "loader environment",
        "provider libraries",
        "kernel archs (fatbin headers)",
        "load attempt (child)",
    ):
        assert probe in report.timings, report.timings
    assert report.timings["load attempt (child)"] >= 0.2
    assert all(seconds >= 0 for seconds in report.timings.values())


class _SlowNvml(FakeNvml):
    def __init__(self, delay_s: float, **kwargs) -> None:
        super().__init__(**kwargs)
        self.delay_s = delay_s

    def nvmlInit(self) -> None:
        time.sleep(self.delay_s)
        super().nvmlInit()


def _pci_with_a_gpu(tmp_path: Path) -> Path:
    device = tmp_path / "pci" / "0000:00:05.0"
    device.mkdir(parents=True)
    (device / "vendor").write_text("0x10de\n")
    (device / "class").write_text("0x030200\n")
    return tmp_path / "pci"


def test_the_child_does_not_wait_for_a_slow_nvml_when_the_pci_bus_shows_a_gpu(tmp_path: Path) -> None:
    calls: list[dict] = []
    probes = _machine(tmp_path).probes(load=_recording(calls, delay_s=0.5), nvml=_SlowNvml(0.5))
    probes = replace(probes, sys_pci=_pci_with_a_gpu(tmp_path))
    started = time.perf_counter()
    report = diagnose(probes=probes)
    elapsed = time.perf_counter() - started
    assert report.ready, report.verdict
    assert len(calls) == 1 and calls[0]["session"] is True
    assert elapsed < 0.95, f"{elapsed:.2f} s: NVML and the child ran one after the other"


def test_a_pci_gpu_that_nvml_does_not_confirm_gets_the_dlopen_only_child(tmp_path: Path) -> None:
    calls: list[dict] = []
    nvml = _SlowNvml(0.3, fail_init="NVML_ERROR_DRIVER_NOT_LOADED")
    probes = replace(_machine(tmp_path).probes(load=_recording(calls), nvml=nvml), sys_pci=_pci_with_a_gpu(tmp_path))
    report = diagnose(probes=probes)
    assert [c["session"] for c in calls] == [True, False]  # the guess, then the child that matches NVML
    assert not report.ready
    assert report.load_attempt is not None and not report.load_attempt.session_requested


def test_the_ort_import_and_the_child_run_at_the_same_time(tmp_path: Path) -> None:
    slow_query = ort_query()

    def query(module_dir):
        time.sleep(0.5)
        return slow_query(module_dir)

    machine = _machine(tmp_path)
    probes = machine.probes(load=_recording([], delay_s=0.5), ort=query)
    started = time.perf_counter()
    report = diagnose(probes=probes)
    elapsed = time.perf_counter() - started
    assert report.ready
    assert elapsed < 0.95, f"{elapsed:.2f} s: the two 0.5 s probes ran one after the other"


def test_quick_skips_the_child_and_says_what_that_leaves_unverified(tmp_path: Path) -> None:
    calls: list[dict] = []
    report = diagnose(probes=_machine(tmp_path).probes(load=_recording(calls)), quick=True)
    assert calls == []
    check = check_of(report, "load.attempt")
    assert check.status is Status.SKIP and "--quick" in check.evidence and "not verified" in check.evidence
    assert report.load_attempt is None


def test_quick_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", "--quick", "--json"])
    assert code in (0, 3)
    out = capsys.readouterr().out
    assert '"schema": "ortgpu.doctor/v1"' in out


def test_the_child_imports_onnxruntime_while_the_probes_still_run(tmp_path: Path, monkeypatch) -> None:
    # the child's `import onnxruntime` is its slowest part before the session: it must not wait for the ELF reads
    import ortgpu.doctor.machine as machine_module

    machine = _machine(tmp_path)
    stamp = tmp_path / "imported-at"
    (machine.site / "onnxruntime" / "__init__.py").write_text(
        f"import time\nopen({str(stamp)!r}, 'w').write(repr(time.time()))\n"
    )
    read_elf_files = machine_module._provider_libraries
    finished: list[float] = []

    def slow_provider_libraries(*args, **kwargs):
        time.sleep(1.5)
        finished.append(time.time())
        return read_elf_files(*args, **kwargs)

    monkeypatch.setattr(machine_module, "_provider_libraries", slow_provider_libraries)
    report = diagnose(probes=replace(machine.probes(), sys_pci=_pci_with_a_gpu(tmp_path)))
    assert report.load_attempt is not None and report.load_attempt.session_requested
    assert report.load_attempt.ort_file is None  # the fake package has no set_default_logger_severity: reported
    assert float(stamp.read_text()) < finished[0], "the child imported onnxruntime only after the probes"


def test_quick_starts_no_child(tmp_path: Path, monkeypatch) -> None:
    started: list[object] = []
    probes = replace(_machine(tmp_path).probes(), prestart=lambda *a, **k: started.append(a))
    report = diagnose(probes=probes, quick=True)
    assert started == [] and report.load_attempt is None


def test_no_child_is_started_ahead_without_an_nvidia_gpu_in_sight(tmp_path: Path) -> None:
    started: list[object] = []
    probes = replace(_machine(tmp_path).probes(), prestart=lambda *a, **k: started.append(a))
    report = diagnose(probes=probes)  # no PCI GPU, no kernel module
    assert started == [] and report.load_attempt is not None  # the load attempt still runs, in its own child


def test_the_child_has_its_work_before_onnxruntime_is_imported_here(tmp_path: Path) -> None:
    # importing onnxruntime's extension module holds the GIL through a long dlopen: begun first, it held back the
    # ELF reads that decide the child's work, and so the child's start
    events: list[str] = []
    inner_query = ort_query()

    def query(module_dir):
        events.append("import")
        return inner_query(module_dir)

    inner_load = _recording([])

    def load(libraries, **kwargs):
        events.append("load")
        return inner_load(libraries, **kwargs)

    report = diagnose(probes=_machine(tmp_path).probes(load=load, ort=query))
    assert report.ready, report.verdict
    assert events[:2] == ["load", "import"], events
