"""`ortgpu compare`: two models, saved outputs, another Python's onnxruntime, a package's C library; outputs,
layer-wise, latency and library-needs diffs; exit codes."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import crafted
import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from ortgpu.check import parse_tolerances
from ortgpu.cli.main import main
from ortgpu.compare import CompareError, CompareRequest, InterpreterError, OtherOrtError, SideKind, run_compare
from ortgpu.config import ExecutionProvider
from ortgpu.fp16 import Fp16Request, run_fp16
from ortgpu.model.inputs import InputSpec


def _request(a: Path, b: Path | None = None, **fields: object) -> CompareRequest:
    values: dict[str, object] = {"inputs": InputSpec(dims={"batch": 2}), "latency": False}
    values.update(fields)
    return CompareRequest(a=a, b=b, **values)  # type: ignore[arg-type]


@pytest.fixture
def cnn(tmp_path: Path) -> Path:
    return crafted.small_cnn(tmp_path / "cnn.onnx")


def test_fp32_against_its_fp16_model_uses_the_fp16_tolerance_and_compares_layer_by_layer(
    cnn: Path, tmp_path: Path
) -> None:
    fp16 = tmp_path / "cnn.fp16.onnx"
    assert run_fp16(Fp16Request(model=cnn, output=fp16, ep=ExecutionProvider.CPU)).passed
    result = run_compare(_request(cnn, fp16, samples=3, layerwise=True))
    assert result.passed and result.verdict.startswith("SAME: 1 output(s)")
    (probs,) = result.outputs
    assert probs.precision is not None and probs.precision.value == "float16" and probs.samples == 3
    assert probs.max_abs is not None and 0 < probs.max_abs < 1e-3
    assert result.layerwise is not None and result.layerwise.compared >= 10 and result.layerwise.diverged == 0
    strict = run_compare(
        _request(cnn, fp16, atol=parse_tolerances(["0"], "--atol"), rtol=parse_tolerances(["0"], "--rtol"))
    )
    assert not strict.passed and strict.failures[0].startswith("output 'probs'")


def test_saved_outputs_on_either_side(cnn: Path, tmp_path: Path) -> None:
    from ortgpu.check import CheckRequest, run_check

    saved = tmp_path / "ref.npz"
    run_check(
        CheckRequest(model=cnn, ep=ExecutionProvider.CPU, inputs=InputSpec(dims={"batch": 2}), save_outputs=saved)
    )
    same = run_compare(_request(cnn, saved))
    assert same.passed and same.b.kind is SideKind.OUTPUTS and same.outputs[0].max_abs == 0.0
    with np.load(saved) as data:
        probs = data["probs"].copy()
    probs[1, 3] += 0.25
    np.savez(tmp_path / "off.npz", probs=probs, extra=np.zeros(1))
    both_files = run_compare(_request(saved, tmp_path / "off.npz"))
    assert not both_files.passed and both_files.only_in_b == ("extra",)
    assert both_files.outputs[0].worst_index == (1, 3) and "output 'extra' only in B" in both_files.failures


def test_python_side_with_this_interpreter_runs_the_runner_script(cnn: Path) -> None:
    # the same build on both sides: latency is measured, not judged (a shared machine is noisy)
    result = run_compare(_request(cnn, python=sys.executable, latency=True, duration_s=0.05, max_regression=100.0))
    assert result.passed and result.a.kind is SideKind.PYTHON and result.b.kind is SideKind.PYTHON
    assert result.outputs[0].max_abs == 0.0
    import onnxruntime

    assert result.b.ort_version == onnxruntime.__version__ and result.b.runner.startswith(sys.executable)
    latency = result.latency
    assert latency is not None and latency.a_p50_ms and latency.b_p50_ms and "runner script" in latency.method
    assert result.needs is not None and result.needs.error is None and not result.needs.changed


def test_python_errors_are_exit_2_or_3(cnn: Path, tmp_path: Path) -> None:
    with pytest.raises(InterpreterError, match="no such interpreter"):
        run_compare(_request(cnn, python=str(tmp_path / "nope")))
    fake = tmp_path / "fake" / "onnxruntime"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('broken on purpose')\n")
    with pytest.raises(OtherOrtError, match="broken on purpose"):
        run_compare(_request(cnn, python=sys.executable, python_env={"PYTHONPATH": str(fake.parent)}))
    with pytest.raises(OtherOrtError, match="CUDAExecutionProvider is not in this onnxruntime"):
        run_compare(_request(cnn, python=sys.executable, ep_b=ExecutionProvider.CUDA))


def _slower_twin(model: Path, path: Path) -> Path:
    """``model`` plus a heavy side branch whose result is added times zero: the same outputs, slower."""
    twin = onnx.load(str(model))
    graph = twin.graph
    graph.initializer.append(numpy_helper.from_array(np.ones((768, 768), np.float32) * 1e-3, "heavy_w"))
    graph.initializer.append(numpy_helper.from_array(np.array([1, 768], np.int64), "heavy_shape"))
    graph.initializer.append(numpy_helper.from_array(np.array(0.0, np.float32), "zero"))
    out = graph.output[0].name
    for node in graph.node:
        for i, name in enumerate(node.output):
            if name == out:
                node.output[i] = "plain"
    n = helper.make_node
    graph.node.extend(
        [
            n("ReduceSum", ["image"], ["total"], name="heavy_sum", keepdims=0),
            n("Expand", ["total", "heavy_shape"], ["row"], name="heavy_row"),
        ]
        + [n("MatMul", ["row" if i == 0 else f"h{i - 1}", "heavy_w"], [f"h{i}"], name=f"heavy{i}") for i in range(40)]
        + [
            n("ReduceSum", ["h39"], ["hs"], name="heavy_total", keepdims=0),
            n("Mul", ["hs", "zero"], ["nothing"], name="times_zero"),
            n("Add", ["plain", "nothing"], [out], name="same_output"),
        ]
    )
    onnx.checker.check_model(twin)
    path.write_bytes(twin.SerializeToString())
    return path


def test_a_latency_regression_beyond_the_limit_fails(cnn: Path, tmp_path: Path) -> None:
    slow = _slower_twin(cnn, tmp_path / "slow.onnx")
    result = run_compare(_request(cnn, slow, latency=True, duration_s=0.1, max_regression=0.5))
    assert result.outputs[0].status.value == "pass"
    latency = result.latency
    assert latency is not None and latency.regressed and latency.delta is not None and latency.delta > 0.5
    assert not result.passed and result.failures[-1].startswith("latency: B's p50")


def test_through_the_wheels_c_library_with_the_library_needs(cnn: Path) -> None:
    spec = importlib.util.find_spec("onnxruntime")
    capi = Path(next(iter(spec.submodule_search_locations)), "capi") if spec else None
    if capi is None or not list(capi.glob("libonnxruntime.so*")) or not sys.platform.startswith("linux"):
        pytest.skip("the installed onnxruntime wheel ships no libonnxruntime.so (it does from 1.31 on Linux)")
    result = run_compare(_request(cnn, package=capi))
    assert result.passed and result.b.kind is SideKind.PACKAGE and result.b.runner.startswith("C library")
    assert result.needs is not None and result.needs.error is None


def test_bad_comparisons_are_exit_2(cnn: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(CompareError, match="the same run"):
        run_compare(_request(cnn))
    with pytest.raises(CompareError, match="--layerwise compares two models"):
        run_compare(_request(cnn, python=sys.executable, layerwise=True))
    other = crafted.small_transformer(tmp_path / "t.onnx")
    with pytest.raises(CompareError, match="different inputs"):
        run_compare(_request(cnn, other))
    assert main(["compare", str(cnn), "--python", sys.executable, "--package", str(tmp_path)]) == 2
    assert main(["compare", str(cnn), str(tmp_path / "missing.onnx")]) == 2
    assert main(["compare", str(cnn), "--python", sys.executable, "--python-env", "NOEQUALS"]) == 2


def test_cli_table_json_and_report(cnn: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "compare.html"
    args = ["compare", str(cnn), "--python", sys.executable, "--duration", "0.05", "--max-regression", "10000%"]
    args += ["--report", str(report)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Outputs: B against A" in out and "Latency" in out and "Library needs" in out and "SAME" in out
    page = report.read_text()
    assert "Errors of probs" in page and "Library needs" in page
    assert main(["compare", str(cnn), "--python", sys.executable, "--no-latency", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "ortgpu.compare/v1" and doc["result"]["passed"] is True


# --------------------------------------------------------------------------------------------- another ORT version

OLD_ORT = "1.20.1"


def _old_ort_python() -> Path:
    """A venv with onnxruntime 1.20.1 from PyPI, built once into the test cache; skips without network."""
    override = os.environ.get("ORTGPU_TEST_CACHE")
    root = (Path(override).parent if override else Path.home() / ".cache" / "ortgpu-tests") / "venvs"
    venv = root / f"ort-{OLD_ORT}"
    python = venv / "bin" / "python"
    if python.is_file():
        return python
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=".build-") as tmp:
        build = Path(tmp) / "venv"
        steps = [
            [sys.executable, "-m", "venv", str(build)],
            [str(build / "bin" / "python"), "-m", "pip", "install", "--quiet", f"onnxruntime=={OLD_ORT}"],
        ]
        for command in steps:
            done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
            if done.returncode != 0:
                reason = (done.stderr or done.stdout).strip().splitlines()
                pytest.skip(f"cannot build a venv with onnxruntime {OLD_ORT}: {reason[-1] if reason else '?'}")
        os.replace(build, venv)  # a venv's python finds its site-packages relative to itself: it may move
    return python


@pytest.mark.network
def test_upgrade_check_against_onnxruntime_1_20_in_another_venv(cnn: Path) -> None:
    python = _old_ort_python()
    result = run_compare(
        _request(cnn, python=str(python), samples=2, latency=True, duration_s=0.05, max_regression=100.0)
    )
    assert result.b.ort_version == OLD_ORT and result.a.ort_version != OLD_ORT
    assert result.outputs[0].status.value == "pass", result.failures
    assert result.needs is not None and result.needs.error is None and OLD_ORT in result.needs.b
