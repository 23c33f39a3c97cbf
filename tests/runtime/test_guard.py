"""The ORT import guard: one error naming the extra to install and why; no other module imports onnxruntime itself."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from ortgpu.env.nvml import DriverInfo, GpuInfo
from ortgpu.errors import ExitCode
from ortgpu.runtime.guard import (
    OrtImportError,
    OrtNotInstalledError,
    import_onnxruntime,
    install_advice,
    not_installed_error,
)

SRC = Path(__file__).resolve().parents[2] / "src" / "ortgpu"
H200 = GpuInfo(0, "NVIDIA H200", "GPU-1", 150 << 30, (9, 0), "0000:01:00.0")


def test_gpu_present_asks_for_the_gpu_extra() -> None:
    driver = DriverInfo(True, "580.95.05", "13.0", (H200, H200), None)
    error = not_installed_error(driver=driver)
    assert error.exit_code is ExitCode.ENVIRONMENT
    assert "NVML sees 2 NVIDIA GPUs (NVIDIA H200, driver 580.95.05)" in error.message
    assert "install the `gpu` extra" in error.message
    assert "pip install 'ortgpu[gpu]'" in error.hint and "onnxruntime-gpu[cuda,cudnn]" in error.hint
    assert sys.executable in error.hint  # the direct command is for this interpreter
    assert "\n" not in error.one_line()


def test_no_gpu_asks_for_the_cpu_extra() -> None:
    driver = DriverInfo(False, None, None, (), "NVML: NVML Shared Library Not Found")
    advice = install_advice(driver)
    assert advice.extra == "cpu" and advice.requirement == "onnxruntime"
    assert advice.reason == "no NVIDIA GPU answers (NVML: NVML Shared Library Not Found)"
    driver_no_gpu = DriverInfo(True, "550.54", "12.4", (), None)
    assert install_advice(driver_no_gpu).extra == "cpu"
    assert "sees no GPU" in install_advice(driver_no_gpu).reason


def test_absent_onnxruntime_raises_the_one_error(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # what `import onnxruntime` sees when it is not there
    monkeypatch.setenv("ORTGPU_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1")
    with pytest.raises(OrtNotInstalledError, match="onnxruntime is not installed") as caught:
        import_onnxruntime()
    assert "running a model" in caught.value.message and "`cpu` extra" in caught.value.message


def test_session_load_raises_it_too(monkeypatch, tmp_path) -> None:
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )  # fmt: skip
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    monkeypatch.setenv("ORTGPU_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1")
    import ortgpu

    with pytest.raises(OrtNotInstalledError):
        ortgpu.load(model)


def test_broken_onnxruntime_is_an_import_error(monkeypatch, tmp_path) -> None:
    package = tmp_path / "onnxruntime"
    package.mkdir()
    (package / "__init__.py").write_text("raise ImportError('libonnxruntime.so.1.31.1: cannot open shared object')\n")
    monkeypatch.delitem(sys.modules, "onnxruntime", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(OrtImportError, match="does not import: ImportError: libonnxruntime"):
        import_onnxruntime()
    sys.modules.pop("onnxruntime", None)


# Modules that handle a missing onnxruntime themselves: the doctor's in-process query and the load child's script.
_OWN_HANDLING = {"runtime/guard.py", "env/doctor.py", "env/load_attempt.py"}


def test_every_onnxruntime_import_goes_through_the_guard() -> None:
    pattern = re.compile(r"^\s*(import onnxruntime\b|from onnxruntime\b)", re.MULTILINE)
    offenders = []
    for path in SRC.rglob("*.py"):
        relative = path.relative_to(SRC).as_posix()
        text = path.read_text(encoding="utf-8")
        for match in pattern.finditer(text):
            line_start = text.rfind("\n", 0, match.start()) + 1
            before = text[max(0, line_start - 200) : line_start]
            guarded = "import_onnxruntime(" in before or "TYPE_CHECKING" in before
            if relative not in _OWN_HANDLING and not guarded:
                offenders.append(f"{relative}: {match.group(0).strip()}")
    assert not offenders, offenders
