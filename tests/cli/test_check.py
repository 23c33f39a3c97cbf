"""`ortgpu check` in-process: exit codes 0/1/2/3, one-line errors, JSON, nothing written on bad input."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from ortgpu.cli.main import main
from ortgpu.model.zoo import (
    build_demo_model,
    build_external_data_model,
    build_symbolic_dims_model,
    build_tiny_model,
)
from ortgpu.placement import PlacedNode, PlacementSource, build_report
from ortgpu.session import verified as verified_module

CPU_ONLY_ORT = "CUDAExecutionProvider" not in __import__("onnxruntime").get_available_providers()


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    build_demo_model(tmp_path / "demo.onnx")
    build_tiny_model(tmp_path / "tiny.onnx")
    return tmp_path


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def test_check_passes_on_cpu_and_renders_the_table(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "demo.onnx", "--ep", "cpu", "--dim", "batch=2", "--warm-runs", "2"]) == 0
    out = capsys.readouterr().out
    assert "Placement" in out and "CPUExecutionProvider" in out
    assert "skipped: same EP" in out
    assert "PASS:" in out


def test_json_output_is_the_versioned_envelope(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "tiny.onnx", "--ep", "cpu", "--json", "--save-outputs", "out.npz"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "ortgpu.check/v1"
    result = doc["result"]
    assert result["passed"] is True and result["active_ep"] == "cpu"
    assert result["placement_status"] == "all-on-ep" and result["saved_outputs"] == "out.npz"
    with np.load(workdir / "out.npz", allow_pickle=False) as data:
        assert data["y"].shape == (1, 4)


def test_reference_round_trip_and_a_mismatch_exits_1(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "tiny.onnx", "--ep", "cpu", "--save-outputs", "ref.npz"]) == 0
    assert main(["check", "tiny.onnx", "--ep", "cpu", "--reference", "ref.npz"]) == 0
    with np.load(workdir / "ref.npz") as data:
        y = data["y"] + 1.0
    np.savez(workdir / "off.npz", y=y)
    capsys.readouterr()
    assert main(["check", "tiny.onnx", "--ep", "cpu", "--reference", "off.npz"]) == 1
    out = capsys.readouterr().out
    assert "FAIL: output 'y': 4 of 4 values off tolerance" in out
    assert main(["check", "tiny.onnx", "--ep", "cpu", "--reference", "off.npz", "--atol", "y:1.5"]) == 0


def test_strict_placement_exits_1_when_a_node_left_the_ep(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def partial(log_text: str, requested: str, logid: str | None = None) -> object:
        nodes = [PlacedNode("add", "Add", requested), PlacedNode("det", "Det", "OtherExecutionProvider")]
        return build_report(nodes, requested, PlacementSource.LOG)

    monkeypatch.setattr(verified_module, "parse_verbose_log", partial)
    assert main(["check", "tiny.onnx", "--ep", "cpu"]) == 0
    assert "1 compute node(s) not on CPUExecutionProvider" in capsys.readouterr().out
    assert main(["check", "tiny.onnx", "--ep", "cpu", "--strict-placement"]) == 1
    assert "--strict-placement: 1 compute node(s) left CPUExecutionProvider" in capsys.readouterr().out


@pytest.mark.skipif(not CPU_ONLY_ORT, reason="this onnxruntime has the CUDA provider")
@pytest.mark.parametrize("ep", ["cuda", "tensorrt"])
def test_gpu_request_on_this_cpu_only_onnxruntime_exits_3_with_the_cause(
    workdir: Path, capsys: pytest.CaptureFixture[str], ep: str
) -> None:
    before = _files(workdir)
    assert main(["check", "demo.onnx", "--ep", ep, "--save-outputs", "out.npz"]) == 3
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert "onnxruntime here is the CPU-only build" in lines[0]
    assert "pip uninstall onnxruntime && pip install onnxruntime-gpu" in lines[0]
    assert captured.out == ""
    assert _files(workdir) == before


@pytest.mark.skipif(not CPU_ONLY_ORT, reason="this onnxruntime has the CUDA provider")
def test_gpu_request_error_as_json(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "demo.onnx", "--ep", "cuda", "--json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["error"]["type"] == "ProviderUnavailableError" and doc["error"]["exit_code"] == 3


@pytest.mark.skipif(not CPU_ONLY_ORT, reason="this onnxruntime has the CUDA provider")
def test_fallback_from_the_config_runs_on_cpu_and_says_so(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workdir / "ortgpu.toml").write_text('fallback = "cpu"\n', encoding="utf-8")
    assert main(["check", "tiny.onnx", "--ep", "cuda", "--config", "ortgpu.toml"]) == 0
    out = capsys.readouterr().out
    assert "fallback to CPU (allowed by the config)" in out and "FALLBACK to cpu" in out


def _wheel_library() -> Path:
    """libonnxruntime.so of the installed onnxruntime wheel (wheels ship it from 1.31 on Linux)."""
    spec = importlib.util.find_spec("onnxruntime")
    hits = sorted(Path(next(iter(spec.submodule_search_locations)), "capi").glob("libonnxruntime.so.*")) if spec else []
    if not hits or not sys.platform.startswith("linux"):
        pytest.skip("the installed onnxruntime wheel ships no libonnxruntime.so")
    return hits[0]


def test_package_runs_through_its_c_library_and_says_so(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    library = _wheel_library()
    args = ["check", "demo.onnx", "--ep", "cpu", "--package", str(library.parent), "--warm-runs", "2"]
    assert main([*args, "--save-outputs", "c.npz"]) == 0
    out = capsys.readouterr().out.replace("\n", "")  # rich wraps long paths at the terminal width
    assert "through the C library" in out and library.name in out and "in a child process" in out
    assert "PASS:" in out
    assert main([*args, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["result"]
    assert result["package"]["library"] == str(library) and result["package"]["source"] == str(library.parent)
    assert result["ort_version"] == result["package"]["ort_version"]
    assert main(["check", "demo.onnx", "--ep", "cpu", "--save-outputs", "w.npz"]) == 0
    with np.load(workdir / "c.npz") as through_c, np.load(workdir / "w.npz") as through_wheel:
        assert np.array_equal(through_c["logits"], through_wheel["logits"])


def test_cuda_through_a_cpu_build_package_exits_3_with_orts_text(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    library = _wheel_library()
    before = _files(workdir)
    assert main(["check", "demo.onnx", "--ep", "cuda", "--package", str(library), "--save-outputs", "o.npz"]) == 3
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "CUDA execution provider is not enabled in this build" in lines[0]
    assert captured.out == "" and _files(workdir) == before
    assert main(["check", "demo.onnx", "--ep", "cuda", "--package", str(library), "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["error"]["type"] == "ProviderLoadError"


def _no_library_folder(folder: Path) -> list[str]:
    (folder / "release").mkdir()
    (folder / "release" / "README.md").write_text("headers only\n", encoding="utf-8")
    return ["tiny.onnx", "--package", "release"]


def _other_cpu_library(folder: Path) -> list[str]:
    """The wheel's library with its ELF e_machine set to AArch64: what the loader would refuse on x86_64."""
    data = bytearray(_wheel_library().read_bytes())
    data[18:20] = (183).to_bytes(2, "little")  # EM_AARCH64
    (folder / "arm64").mkdir()
    (folder / "arm64" / "libonnxruntime.so.1.32.0").write_bytes(bytes(data))
    return ["tiny.onnx", "--package", "arm64/libonnxruntime.so.1.32.0"]


def _zero_byte(folder: Path) -> list[str]:
    (folder / "empty.onnx").write_bytes(b"")
    return ["empty.onnx"]


def _truncated(folder: Path) -> list[str]:
    data = (folder / "demo.onnx").read_bytes()
    (folder / "half.onnx").write_bytes(data[: len(data) // 2])
    return ["half.onnx"]


def _not_onnx(folder: Path) -> list[str]:
    (folder / "notes.onnx").write_text("this is not a model\n" * 20, encoding="utf-8")
    return ["notes.onnx"]


def _escaping_external_data(folder: Path) -> list[str]:
    (folder / "outside.bin").write_bytes(b"\0" * 256)
    build_external_data_model(folder / "inner" / "model.onnx", location="../outside.bin")
    return ["inner/model.onnx"]


def _npz(folder: Path, name: str, **arrays: object) -> str:
    np.savez(folder / name, **arrays)
    return name


def _toml(folder: Path, text: str) -> str:
    (folder / "bad.toml").write_text(text, encoding="utf-8")
    return "bad.toml"


BAD_INPUTS: dict[str, Callable[[Path], list[str]]] = {
    "missing file": lambda f: ["nothere.onnx"],
    "directory": lambda f: ["."],
    "zero-byte file": _zero_byte,
    "truncated file": _truncated,
    "not an ONNX file": _not_onnx,
    "external data outside the folder": _escaping_external_data,
    "wrong input name in --shape": lambda f: ["demo.onnx", "--shape", "images=1x3x32x32"],
    "wrong rank in --shape": lambda f: ["demo.onnx", "--shape", "image=1x3x32"],
    "wrong input name in --inputs": lambda f: ["tiny.onnx", "--inputs", _npz(f, "in.npz", z=np.zeros((1, 4), "f4"))],
    "wrong dtype in --inputs": lambda f: ["tiny.onnx", "--inputs", _npz(f, "in.npz", x=np.zeros((1, 4), "f8"))],
    "pickled .npz": lambda f: ["tiny.onnx", "--inputs", _npz(f, "in.npz", x=np.array([{"a": 1}], dtype=object))],
    "config with an unknown key": lambda f: ["tiny.onnx", "--config", _toml(f, "[session]\nintra_threads = 2\n")],
    "config with an unknown section": lambda f: ["tiny.onnx", "--config", _toml(f, "[ep.cudaa]\ndevice_id = 0\n")],
    "unknown --ep": lambda f: ["tiny.onnx", "--ep", "gpu"],
    "unknown --ep-option": lambda f: ["tiny.onnx", "--ep", "cpu", "--ep-option", "use_tf32=1"],
    "bad --device": lambda f: ["tiny.onnx", "--device", "first"],
    "bad --atol": lambda f: ["tiny.onnx", "--atol", "tight"],
    "--atol for an unknown output": lambda f: ["tiny.onnx", "--atol", "z:0.1"],
    "bad --range": lambda f: ["tiny.onnx", "--range", "x=1"],
    "missing --reference": lambda f: ["tiny.onnx", "--reference", "nope.npz"],
    "--dim disagreeing with --shape": lambda f: ["tiny.onnx", "--shape", "x=1x4", "--dim", "batch=2"],
    "a dim nothing fixes": lambda f: [str(build_symbolic_dims_model(f / "symbolic.onnx"))],
    "--package that does not exist": lambda f: ["tiny.onnx", "--package", "onnxruntime-linux-x64-1.31.1.tgz"],
    "--package folder without libonnxruntime": _no_library_folder,
    "--package library for another CPU": _other_cpu_library,
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_every_bad_input_exits_2_with_one_line_and_writes_nothing(
    case: str, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = BAD_INPUTS[case](workdir)
    before = _files(workdir)
    code = main(["check", *args, "--save-outputs", "out.npz"])
    captured = capsys.readouterr()
    assert code == 2, (case, captured.err)
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ortgpu: error: "), (case, captured.err)
    assert "Traceback" not in captured.err and captured.out == ""
    assert _files(workdir) == before, case
