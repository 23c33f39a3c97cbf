"""How ortgpu preloads CUDA/cuDNN: the preload_dlls() calls planned for each layout, and running them."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from ortgpu.runtime.preload import PreloadCall, PreloadPlan, plan_preload, run_preload


def _dirs(root: Path, *folders: str) -> None:
    for folder in folders:
        (root / "nvidia" / folder).mkdir(parents=True)


def test_nvidia_beside_onnxruntime_uses_ort_default(tmp_path) -> None:
    (tmp_path / "onnxruntime").mkdir()
    _dirs(tmp_path, "cu13/lib", "cudnn/lib")
    plan = plan_preload(tmp_path / "onnxruntime", 13, [str(tmp_path)])
    assert plan.texts() == ("onnxruntime.preload_dlls()",)
    assert plan.covers(tmp_path / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")
    assert not plan.covers(Path("/usr/lib/x86_64-linux-gnu/libcudnn.so.9"))


def test_ort_elsewhere_names_each_folder_cuda_and_cudnn_apart(tmp_path) -> None:
    unpacked, site = tmp_path / "unpacked", tmp_path / "site"
    (unpacked / "onnxruntime").mkdir(parents=True)
    _dirs(site, "cu13/lib", "cudnn/lib", "cu12/lib")
    plan = plan_preload(unpacked / "onnxruntime", 13, [str(unpacked), str(site)])
    assert plan.calls == (
        PreloadCall(True, False, site / "nvidia" / "cu13" / "lib"),
        PreloadCall(False, True, site / "nvidia" / "cudnn" / "lib"),
    )
    assert plan.calls[0].kwargs() == {"cuda": True, "cudnn": False, "directory": str(site / "nvidia/cu13/lib")}
    assert "away from onnxruntime" in plan.reason


def test_cuda12_per_component_folders(tmp_path) -> None:
    _dirs(tmp_path, "cuda_runtime/lib", "cublas/lib", "cudnn/lib")
    plan = plan_preload(tmp_path / "elsewhere" / "onnxruntime", 12, [str(tmp_path)])
    assert [c.directory.parent.name for c in plan.calls] == ["cuda_runtime", "cublas", "cudnn"]


@pytest.mark.parametrize(
    ("module", "cuda", "has", "reason"),
    [
        (None, 13, True, "not installed"),
        (Path("x/onnxruntime"), None, True, "not a CUDA build"),
        (Path("x/onnxruntime"), 13, False, "no preload_dlls()"),
        (Path("x/onnxruntime"), 11, True, "12 or newer only"),
        (Path("x/onnxruntime"), 13, True, "the loader finds the system ones"),
    ],
)
def test_no_call_and_why(tmp_path, module, cuda, has, reason) -> None:
    plan = plan_preload(module, cuda, [str(tmp_path)], has_preload=has)
    assert plan.calls == () and reason in plan.reason


def test_run_preload_captures_what_ort_prints_and_reports_errors(capsys) -> None:
    made = []

    def preload_dlls(**kwargs):
        made.append(kwargs)
        print("Failed to load libcudnn.so.9: not found")  # ORT reports misses on stdout
        if kwargs.get("directory") == "/gone":
            raise RuntimeError("Invalid parameter of directory=/gone. The directory does not exist!")

    ort = SimpleNamespace(preload_dlls=preload_dlls)
    plan = PreloadPlan((PreloadCall(True, False, Path("/pip/cu13/lib")), PreloadCall(False, True, Path("/gone"))), "r")
    outcome = run_preload(ort, plan)
    assert capsys.readouterr().out == ""  # nothing reaches the user's stdout
    assert len(made) == 2 and outcome.calls == (plan.calls[0].text(),)
    assert "Failed to load libcudnn.so.9" in outcome.output
    assert outcome.error and "directory does not exist" in outcome.error and outcome.error in outcome.summary
    assert run_preload(ort, PreloadPlan((), "no folders")).summary == "no preload_dlls() call: no folders"


def test_gpu_sessions_preload_first_cpu_sessions_do_not(monkeypatch, tmp_path) -> None:
    import onnx
    from onnx import TensorProto, helper

    from ortgpu.runtime.preload import PreloadOutcome
    from ortgpu.session import ProviderUnavailableError, open_session, verified

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )  # fmt: skip
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    calls = []
    outcome = PreloadOutcome(("onnxruntime.preload_dlls()",), "CUDA/cuDNN preloaded (test)")
    monkeypatch.setattr(verified, "ensure_preloaded", lambda: calls.append(1) or outcome)
    with open_session(model, "cpu") as session:
        assert session.cuda_libraries is None and calls == []
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this onnxruntime has the CUDA EP: the CPU-build path is what this test needs")
    with pytest.raises(ProviderUnavailableError):
        open_session(model, "cuda")
    assert calls == [1]  # preloaded before ORT was asked for the CUDA EP


def test_preload_is_linux_only(monkeypatch) -> None:
    from ortgpu.runtime import preload

    monkeypatch.setattr(sys, "platform", "darwin")
    assert "nothing to preload on darwin" in preload.ensure_preloaded().summary
