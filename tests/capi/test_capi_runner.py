"""Models run through a package's own C library in a child process: outputs, placement, timings, errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.support.capi_models import identity_feeds
from tests.support.realpackages import have_gcc

from ortgpu.capi import binding
from ortgpu.capi.runner import (
    PackageRunError,
    UnsupportedSettingError,
    load_npz,
    normalize_session_settings,
    provider_chain,
    run_package_model,
    save_npz,
)
from ortgpu.errors import BadInputError, ExitCode

X = np.random.default_rng(7).standard_normal((4, 8)).astype(np.float32)


def wheel_outputs(model: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds), strict=True))


def test_cpu_run_through_the_wheels_own_c_library(wheel_library: Path, mlp: Path, tmp_path: Path) -> None:
    result = run_package_model(wheel_library, mlp, {"X": X}, "cpu", iterations=5, warmup=2, keep_profile_in=tmp_path)
    expected = wheel_outputs(mlp, {"X": X})["Y"]
    np.testing.assert_allclose(result.outputs["Y"], expected, rtol=1e-5, atol=1e-6)
    assert result.requested_provider == "CPUExecutionProvider" and result.appended_providers == ()
    assert result.providers_used == ("CPUExecutionProvider",)
    assert result.placement is not None and result.placement.all_on_requested
    assert len(result.latencies_ns) == 5 and all(ns > 0 for ns in result.latencies_ns)
    assert 0 < result.first_run_s < result.wall_s and 0 < result.session_creation_s < result.wall_s
    assert [(s.name, s.element_type, s.dims) for s in result.inputs] == [("X", "float", ("batch", 8))]
    assert result.profile_file is not None and result.profile_file.parent == tmp_path
    described = result.describe()
    assert described["outputs"] == {"Y": {"dtype": "float32", "shape": [4, 3]}}


def test_every_tensor_type_travels_to_the_child_and_back(wheel_library: Path, identities: Path) -> None:
    feeds = identity_feeds()
    result = run_package_model(wheel_library, identities, feeds, "cpu", profile=False)
    for name, array in feeds.items():
        got = result.outputs[name.replace("in_", "out_")]
        assert got.dtype == array.dtype and got.tolist() == array.tolist(), name
    assert result.placement is None and result.latencies_ns == ()


def test_session_settings_reach_the_library(wheel_library: Path, mlp: Path) -> None:
    plain = run_package_model(
        wheel_library, mlp, {"X": X}, "cpu", session_settings={"graph_optimization_level": "disable"}
    )
    fused = run_package_model(wheel_library, mlp, {"X": X}, "cpu", session_settings={"graph_optimization_level": "all"})
    assert plain.placement.compute_count == 4  # MatMul, Add, Relu, MatMul as written
    assert fused.placement.compute_count < 4  # MatMul+Add fused by the optimiser
    assert set(plain.placement.compute_per_provider) == {"CPUExecutionProvider"}
    np.testing.assert_allclose(plain.outputs["Y"], fused.outputs["Y"], rtol=1e-5, atol=1e-6)


@pytest.mark.network
def test_the_oldest_supported_library_gives_the_same_outputs(ort114_library, mlp: Path) -> None:
    result = run_package_model(ort114_library, mlp, {"X": X}, "cpu", iterations=3)
    assert result.ort_version == "1.14.0" and result.api_version == 14 and result.build_info is None
    np.testing.assert_allclose(result.outputs["Y"], wheel_outputs(mlp, {"X": X})["Y"], rtol=1e-5, atol=1e-6)
    assert result.providers_used == ("CPUExecutionProvider",)


@pytest.mark.network
def test_cuda_on_a_cpu_build_is_exit_3_with_ort_text(ort114_library, mlp: Path) -> None:
    with pytest.raises(binding.ProviderLoadError) as caught:
        run_package_model(ort114_library, mlp, {"X": X}, "cuda")
    assert caught.value.exit_code is ExitCode.ENVIRONMENT
    assert "CUDA execution provider is not enabled in this build" in caught.value.message


@pytest.mark.network
@pytest.mark.slow
def test_gpu_build_runs_on_cpu_and_tells_why_cuda_cannot_load(gpu_library, mlp: Path) -> None:
    result = run_package_model(gpu_library, mlp, {"X": X}, "cpu")
    assert result.ort_version == "1.31.1"
    assert {"CUDAExecutionProvider", "TensorrtExecutionProvider"} <= set(result.compiled_providers)
    np.testing.assert_allclose(result.outputs["Y"], wheel_outputs(mlp, {"X": X})["Y"], rtol=1e-5, atol=1e-6)
    from ortgpu.loader.linux import LoaderEnv, resolve

    if resolve("libcublasLt.so.13", None, LoaderEnv.from_system()).ok:
        pytest.skip("CUDA 13 is installed here: the load-failure text cannot be produced")
    with pytest.raises(binding.ProviderLoadError) as caught:
        run_package_model(gpu_library, mlp, {"X": X}, "cuda", {"cudnn_conv_algo_search": "DEFAULT"})
    assert caught.value.exit_code is ExitCode.ENVIRONMENT
    # the loader's own words, from the status of UpdateCUDAProviderOptions
    assert "libonnxruntime_providers_cuda.so" in caught.value.message
    assert "cannot open shared object file" in caught.value.message
    assert caught.value.status is not None and caught.value.status.function == "UpdateCUDAProviderOptions"


def test_bad_requests_fail_before_anything_runs(wheel_library: Path, mlp: Path, tmp_path: Path) -> None:
    cases = [
        ({"model_path": tmp_path / "nope.onnx"}, "no such model"),
        ({"ep": "rocm"}, "not one of"),
        ({"iterations": -1}, "iterations"),
        ({"provider_options": {"arena_extend_strategy": "x"}}, "CPU EP takes no provider options"),
        ({"ep": "cuda", "device_id": 1, "provider_options": {"device_id": "0"}}, "disagree"),
        ({"feeds": {"X": np.array(["2020-01-01"], dtype="datetime64[D]")}}, "no ONNX tensor element type"),
    ]
    for overrides, said in cases:
        kwargs = {"library": wheel_library, "model_path": mlp, "feeds": {"X": X}, "ep": "cpu", **overrides}
        with pytest.raises(BadInputError) as caught:
            run_package_model(**kwargs)
        assert said in caught.value.message, overrides


def test_child_errors_come_back_as_our_types(wheel_library: Path, mlp: Path) -> None:
    with pytest.raises(binding.OrtInputError) as wrong:
        run_package_model(wheel_library, mlp, {"X": X.astype(np.float64)}, "cpu")
    assert wrong.value.exit_code is ExitCode.BAD_INPUT and "tensor(double)" in wrong.value.message
    assert wrong.value.status is not None and wrong.value.status.function == "Run"
    with pytest.raises(binding.OrtInputError) as missing:
        run_package_model(wheel_library, mlp, {"Z": X}, "cpu")
    assert "missing ['X']" in missing.value.message


def test_settings_are_checked_before_the_run() -> None:
    assert normalize_session_settings({"graph_optimization_level": "extended", "intra_op_num_threads": 2}) == {
        "graph_optimization_level": int(binding.GraphOptimizationLevel.EXTENDED),
        "intra_op_num_threads": 2,
    }
    for bad in ({"enable_mem_reuse": False}, {"use_deterministic_compute": True}, {"frobnicate": 1}):
        with pytest.raises(UnsupportedSettingError):
            normalize_session_settings(bad)
    with pytest.raises(BadInputError):
        normalize_session_settings({"intra_op_num_threads": -1})


def test_tensorrt_gets_cuda_behind_it() -> None:
    requested, chain = provider_chain("tensorrt", {"trt_fp16_enable": True}, 1)
    assert requested == "TensorrtExecutionProvider"
    assert chain == [
        ("TensorrtExecutionProvider", {"trt_fp16_enable": "1", "device_id": "1"}),
        ("CUDAExecutionProvider", {"device_id": "1"}),
    ]


def test_npz_transport_keeps_strings_and_ml_dtypes(tmp_path: Path) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    arrays = {"s": np.array(["x", "ÿ"], dtype=object), "b": np.array([1.5], dtype=ml_dtypes.bfloat16)}
    special = save_npz(tmp_path / "a.npz", arrays)
    back = load_npz(tmp_path / "a.npz", special)
    assert back["s"].dtype == object and back["s"].tolist() == ["x", "ÿ"]
    assert back["b"].dtype == arrays["b"].dtype and back["b"].astype(np.float32).tolist() == [1.5]


CRASHING_ORT = r"""
#include <stddef.h>
#include <stdint.h>
static const void* get_api(uint32_t version) { return (const void*)16; }  /* a table at address 16 */
static const char* get_version(void) { return "1.20.0"; }
static const void* base[2] = { (const void*)get_api, (const void*)get_version };
const void* OrtGetApiBase(void) { return base; }
"""


@pytest.mark.skipif(not have_gcc() or not sys.platform.startswith("linux"), reason="needs gcc on Linux")
def test_a_crashing_library_does_not_take_the_caller_down(tmp_path: Path, mlp: Path) -> None:
    source = tmp_path / "crash.c"
    source.write_text(CRASHING_ORT, encoding="utf-8")
    library = tmp_path / "libonnxruntime.so.1.20.0"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True, capture_output=True)
    with pytest.raises(PackageRunError) as caught:
        run_package_model(library, mlp, {"X": X}, "cpu")
    assert caught.value.exit_code is ExitCode.ENVIRONMENT
    assert "SIGSEGV" in caught.value.message and "libonnxruntime.so.1.20.0" in caught.value.message


def test_a_run_past_its_time_limit_is_stopped(wheel_library: Path, mlp: Path) -> None:
    with pytest.raises(PackageRunError) as caught:
        run_package_model(wheel_library, mlp, {"X": X}, "cpu", iterations=10_000_000, timeout_s=2)
    assert "did not finish within 2 s" in caught.value.message
