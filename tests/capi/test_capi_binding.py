"""The ctypes binding on real libonnxruntime builds: values of every type, errors mapped, objects released."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.support.capi_models import identity_feeds, save
from tests.support.realpackages import have_gcc

from ortgpu.capi import binding
from ortgpu.capi.binding import (
    CapiVersionError,
    CudaProviderOptions,
    Env,
    GraphOptimizationLevel,
    LoggingLevel,
    NotOrtLibraryError,
    OrtInputError,
    OrtLibrary,
    OrtModelError,
    ProviderLoadError,
    RunOptions,
    Session,
    SessionOptions,
    api_version_of,
    negotiate_api_version,
)
from ortgpu.errors import ExitCode


@pytest.mark.parametrize(("version", "api"), [("1.14.0", 14), ("1.31.1", 31), ("1.20.0-dev", 20), ("2.0.0", None)])
def test_api_version_is_the_minor_version(version: str, api: int | None) -> None:
    assert api_version_of(version) == api


def test_negotiation_asks_for_what_we_use_or_less() -> None:
    assert negotiate_api_version(31) == binding.TARGET_API_VERSION
    assert negotiate_api_version(14) == 14
    with pytest.raises(CapiVersionError) as caught:
        negotiate_api_version(binding.MIN_API_VERSION - 1, "1.10.0")
    assert caught.value.exit_code is ExitCode.BAD_INPUT
    assert "1.10.0" in caught.value.message and f"C API {binding.MIN_API_VERSION}" in caught.value.message


def test_library_reports_its_version_and_build(wheel_library: Path) -> None:
    library = OrtLibrary(wheel_library)
    assert library.version == importlib.metadata.version("onnxruntime")
    assert library.api_version == min(library.library_api_version, binding.TARGET_API_VERSION)
    assert "CPUExecutionProvider" in library.available_providers()
    assert library.build_info and "git-commit-id" in library.build_info


def test_every_tensor_type_round_trips(wheel_library: Path, identities: Path) -> None:
    library = OrtLibrary(wheel_library)
    feeds = identity_feeds()
    with Env(library) as env, SessionOptions(library) as options, Session(env, identities, options) as session:
        assert {s.name: s.dims for s in session.inputs}["in_float32"] == ("n",)
        out = session.run(feeds)
    for name, array in feeds.items():
        got = out[name.replace("in_", "out_")]
        assert got.dtype == array.dtype, name
        assert got.tolist() == array.tolist(), name


def test_bfloat16_round_trips_when_ml_dtypes_is_there(wheel_library: Path, tmp_path: Path) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "bf16",
        [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [3])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [3])],
    )
    path = save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "bf16.onnx")
    library = OrtLibrary(wheel_library)
    x = np.array([1.5, -2.25, 3.0], dtype=ml_dtypes.bfloat16)
    with Env(library) as env, SessionOptions(library) as options, Session(env, path, options) as session:
        y = session.run({"x": x})["y"]
    assert y.dtype == x.dtype and y.astype(np.float32).tolist() == [1.5, -2.25, 3.0]


def test_bad_inputs_and_models_are_input_errors_with_ort_text(wheel_library: Path, mlp: Path, tmp_path: Path) -> None:
    library = OrtLibrary(wheel_library)
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"not a model at all")
    with Env(library) as env, SessionOptions(library) as options:
        with Session(env, mlp, options) as session:
            with pytest.raises(OrtInputError) as wrong_type:
                session.run({"X": np.zeros((2, 8), np.float64)})
            with pytest.raises(OrtInputError) as wrong_shape:
                session.run({"X": np.zeros((2, 5), np.float32)})
            with pytest.raises(OrtInputError) as wrong_name:
                session.run({"x": np.zeros((2, 8), np.float32)})
        for bad in (tmp_path / "missing.onnx", corrupt):
            with pytest.raises(OrtModelError) as caught:
                Session(env, bad, options)
            assert caught.value.exit_code is ExitCode.BAD_INPUT
            assert caught.value.status is not None
    assert "tensor(double)" in wrong_type.value.message
    assert wrong_type.value.status.code is binding.OrtErrorCode.INVALID_ARGUMENT
    assert "index: 1 Got: 5 Expected: 8" in " ".join(wrong_shape.value.status.message.split())
    assert "missing ['X']" in wrong_name.value.message
    assert all(e.exit_code is ExitCode.BAD_INPUT for e in (wrong_type.value, wrong_shape.value))


def test_cuda_on_a_cpu_build_is_an_environment_error_with_ort_text(wheel_library: Path) -> None:
    library = OrtLibrary(wheel_library)
    with pytest.raises(ProviderLoadError) as caught:
        CudaProviderOptions(library, {"device_id": 0})
    assert caught.value.exit_code is ExitCode.ENVIRONMENT
    assert "CUDA execution provider is not enabled in this build" in caught.value.message


def test_logger_captures_placement_and_profiling_stops(wheel_library: Path, mlp: Path, tmp_path: Path) -> None:
    library = OrtLibrary(wheel_library)
    with Env(library, LoggingLevel.VERBOSE) as env, SessionOptions(library) as options:
        options.set_log_severity(LoggingLevel.VERBOSE)
        options.set_graph_optimization_level(GraphOptimizationLevel.DISABLE_ALL)
        options.enable_profiling(tmp_path / "profile")
        with Session(env, mlp, options) as session, RunOptions(library) as run_options:
            placements = [r for r in env.records if "VerifyEachNodeIsAssignedToAnEp" in r.code_location]
            session.run({"X": np.ones((2, 8), np.float32)}, run_options=run_options)
            first = session.end_profiling()
            session.run({"X": np.ones((2, 8), np.float32)}, run_options=run_options)
            second = session.end_profiling()
    assert any("CPUExecutionProvider" in r.message for r in placements)
    assert first is not None and first.is_file() and first.parent == tmp_path
    nodes = {e["name"].removesuffix("_kernel_time") for e in json.loads(first.read_text()) if e.get("cat") == "Node"}
    assert {"mm1", "add1", "relu1", "mm2"} <= nodes  # optimisations off: every node ran under its own name
    assert second is None


def test_a_file_that_is_not_ort_is_refused(wheel_library: Path) -> None:
    shared = wheel_library.parent / "libonnxruntime_providers_shared.so"
    if not shared.is_file():
        pytest.skip("no providers_shared library next to the core")
    with pytest.raises(NotOrtLibraryError) as caught:
        OrtLibrary(shared)
    assert caught.value.exit_code is ExitCode.BAD_INPUT and "OrtGetApiBase" in caught.value.message


FAKE_ORT = r"""
#include <stddef.h>
#include <stdint.h>
static const void* get_api(uint32_t version) { return NULL; }
static const char* get_version(void) { return "%s"; }
static const void* base[2] = { (const void*)get_api, (const void*)get_version };
const void* OrtGetApiBase(void) { return base; }
"""


def _fake_ort(folder: Path, version: str) -> Path:
    source = folder / "fake_ort.c"
    source.write_text(FAKE_ORT % version, encoding="utf-8")
    target = folder / f"libonnxruntime.so.{version}"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(target), str(source)], check=True, capture_output=True)
    return target


@pytest.mark.skipif(not have_gcc() or not sys.platform.startswith("linux"), reason="needs gcc on Linux")
def test_a_library_too_old_for_our_c_api_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(CapiVersionError) as old:
        OrtLibrary(_fake_ort(tmp_path, "1.9.0"))
    assert old.value.exit_code is ExitCode.BAD_INPUT and "1.9.0" in old.value.message
    # a version we accept, but a GetApi that answers NULL: refused, never called through
    with pytest.raises(CapiVersionError) as refused:
        OrtLibrary(_fake_ort(tmp_path, "1.18.0"))
    assert "refused C API 15" in refused.value.message


@pytest.mark.skipif(not have_gcc() or not sys.platform.startswith("linux"), reason="needs gcc on Linux")
def test_an_api_base_with_null_functions_is_refused_not_called(tmp_path: Path) -> None:
    source = tmp_path / "null_base.c"
    source.write_text(
        "static const void* base[2] = { 0, 0 };\nconst void* OrtGetApiBase(void) { return base; }\n", encoding="utf-8"
    )
    target = tmp_path / "libonnxruntime.so.1.20.0"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(target), str(source)], check=True, capture_output=True)
    with pytest.raises(NotOrtLibraryError) as caught:
        OrtLibrary(target)
    assert caught.value.exit_code is ExitCode.BAD_INPUT and "NULL" in caught.value.message


def test_paths_are_utf16_on_windows_and_bytes_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    path = Path("models") / "mödel 大.onnx"
    monkeypatch.setattr(binding, "IS_WINDOWS", True)
    assert binding._ortchar(path) == str(path)
    monkeypatch.setattr(binding, "IS_WINDOWS", False)
    assert binding._ortchar(path) == str(path).encode("utf-8")


def test_binding_imports_nothing_heavy() -> None:
    code = (
        "import ortgpu.capi.binding, ortgpu.capi.runner, ortgpu.capi.library_locator, ortgpu.capi.child, sys;"
        "print(sorted(m for m in ('onnxruntime', 'onnx', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
