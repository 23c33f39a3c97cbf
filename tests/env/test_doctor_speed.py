"""doctor on a GPU host in under 2 s: the probes run at once, the CUDA child does the least it can (one Add, no
cuDNN) unless the cuDNN the GPU gets is in question, and --quick skips the child with a note."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from fake_libs import fake_ort, needs_gcc
from test_doctor import NEEDS, Machine, _check, _lazy_libraries, _loaded, _ort

from ortgpu.cli.main import main
from ortgpu.env.checks import Status
from ortgpu.env.doctor import diagnose
from ortgpu.env.load_attempt import ADD_MODEL

pytestmark = needs_gcc


def _machine(tmp_path: Path) -> Machine:
    machine = Machine(tmp_path)
    fake_ort(machine.site, cuda_needs=NEEDS)
    machine.provide(*NEEDS, *_lazy_libraries())
    return machine


def _recording(calls: list[dict], delay_s: float = 0.0):
    inner = _loaded([])

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
    machine.provide(*[n for n in _lazy_libraries() if n.startswith("libcudnn")], directory=other)
    calls: list[dict] = []
    probes = machine.probes(load=_recording(calls), environ={"LD_LIBRARY_PATH": f"{machine.lib}:{other}"})
    report = diagnose(probes=probes)
    assert [c["conv"] for c in calls] == [False, True]  # the minimal one first, then the one that loads cuDNN
    assert report.load_attempt is not None and report.load_attempt.session_requested


def test_the_ort_import_and_the_child_run_at_the_same_time(tmp_path: Path) -> None:
    slow_query = _ort()

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
    check = _check(report, "load.attempt")
    assert check.status is Status.SKIP and "--quick" in check.evidence and "not verified" in check.evidence
    assert report.load_attempt is None


def test_quick_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", "--quick", "--json"])
    assert code in (0, 3)
    out = capsys.readouterr().out
    assert '"schema": "ortgpu.doctor/v1"' in out
