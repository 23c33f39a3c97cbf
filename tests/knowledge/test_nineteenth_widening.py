"""Explain's rules from the nineteenth set's misses: BatchNormalization in training mode (FM-197), TensorRT without
a buffer for an empty data-dependent output (FM-198), cuBLAS's ARCH_MISMATCH as a missing GPU feature (FM-199), and
onnxruntime's Python files importing a name its compiled module lacks (FM-01). Texts are composed, not copied from
any labelled set; the learned fallback is off so that the rules decide. Each class has its false-positive guards."""

from __future__ import annotations

import pytest
from tests.support.explain_top import rule_ids
from tests.support.explain_top import rule_top as top

# ---------------------------------------------------------------- FM-197: BatchNormalization in training mode


@pytest.mark.parametrize(
    "text",
    [
        "RUNTIME_EXCEPTION : Exception during initialization: /src/onnxruntime/core/providers/cpu/nn/batch_norm.h:47 "
        "onnxruntime::BatchNorm<T>::BatchNorm(const OpKernelInfo&) [with T = double] !is_train_ was false. "
        "Training mode is not supported in this build.",
        "Ort::Exception: Training mode is not supported in this build.",
    ],
)
def test_batchnorm_training_mode(text: str) -> None:
    assert top(text) == "FM-197"


@pytest.mark.parametrize(
    "text",
    [
        "We export the model with training=TrainingMode.EVAL; training mode is supported in the other build.",
        "model.train() was called before torch.onnx.export; the session works fine",
    ],
)
def test_batchnorm_guard(text: str) -> None:
    assert "FM-197" not in rule_ids(text)


# ---------------------------------------------------------------- FM-198: TensorRT output without an address


def test_trt_empty_output_outranks_engine_failure() -> None:
    text = (
        "[E:onnxruntime:Default, tensorrt_execution_provider.h:88 log] IExecutionContext::enqueueV3: Error Code 3: "
        "API Usage Error (Neither address or allocator is set for output tensor boxes. Call setOutputTensorAddress "
        "before enqueue/execute.)\n"
        "Non-zero status code returned while running TRTKernel_graph_torch_jit_123_0 node. TensorRT EP execution "
        "context enqueue failed."
    )
    assert top(text) == "FM-198"


def test_trt_empty_output_guard() -> None:
    text = "TensorRT EP failed to create engine from network for fused node: TensorrtExecutionProvider_TRTKernel_0"
    assert "FM-198" not in rule_ids(text)


# ---------------------------------------------------------------- FM-199: cuBLAS ARCH_MISMATCH


def test_cublas_arch_mismatch_is_a_missing_gpu_feature() -> None:
    text = (
        "CUBLAS failure 8: CUBLAS_STATUS_ARCH_MISMATCH ; GPU=0 ; hostname=box ; expr=cublasGemmEx(handle, ...); "
        "Non-zero status code returned while running MatMul node. Name:'/fc/MatMul'"
    )
    assert top(text) == "FM-199"


def test_no_kernel_image_stays_fm41() -> None:
    text = "CUDA error cudaErrorNoKernelImageForDevice:no kernel image is available for execution on the device"
    ids = rule_ids(text)
    assert ids[0] == "FM-41"
    assert "FM-199" not in ids


# ---------------------------------------------------------------- FM-01: Python files and compiled module disagree


@pytest.mark.parametrize("module", ["_pybind_state", "onnxruntime_pybind11_state"])
def test_pybind_name_missing(module: str) -> None:
    text = (
        '  File "/venv/lib/python3.10/site-packages/onnxruntime/__init__.py", line 24, in <module>\n'
        f"ImportError: cannot import name 'SomeNewerName' from 'onnxruntime.capi.{module}' "
        f"(/venv/lib/python3.10/site-packages/onnxruntime/capi/{module}.py)"
    )
    assert "FM-01" in rule_ids(text)


def test_pybind_guard_other_package() -> None:
    text = "ImportError: cannot import name 'pipeline' from 'transformers' (unknown location); onnxruntime 1.17 is fine"
    assert "FM-01" not in rule_ids(text)


@pytest.mark.parametrize(
    "text",
    [
        # a name every release defines: the compiled module failed to load, no proof of two installs
        "ImportError: cannot import name 'get_all_providers' from 'onnxruntime.capi._pybind_state'",
        # older _pybind_state.py warns that the compiled module did not load
        "UserWarning: Cannot load onnxruntime.capi. Error: 'libcudart.so.11.0: cannot open shared object file'\n"
        "ImportError: cannot import name 'NewerName' from 'onnxruntime.capi._pybind_state'",
    ],
)
def test_pybind_guard_module_not_loaded(text: str) -> None:
    assert "FM-01" not in rule_ids(text)


def test_windows_newer_name_is_two_installs_not_a_dll_load() -> None:
    text = (
        '  File "C:\\\\app\\\\venv\\\\lib\\\\site-packages\\\\onnxruntime\\\\__init__.py", line 61, in <module>\n'
        "    raise import_capi_exception\n"
        "ImportError: cannot import name 'SomeNewerName' from 'onnxruntime.capi._pybind_state' "
        "(C:\\\\app\\\\venv\\\\lib\\\\site-packages\\\\onnxruntime\\\\capi\\\\_pybind_state.py)"
    )
    assert top(text) == "FM-01"


def test_windows_core_name_missing_stays_a_load_failure() -> None:
    text = (
        '  File "C:\\\\app\\\\venv\\\\lib\\\\site-packages\\\\onnxruntime\\\\__init__.py", line 23, in <module>\n'
        "ImportError: cannot import name 'get_all_providers' from 'onnxruntime.capi._pybind_state' "
        "(C:\\\\app\\\\venv\\\\lib\\\\site-packages\\\\onnxruntime\\\\capi\\\\_pybind_state.py)"
    )
    assert top(text) != "FM-01"


# ---------------------------------------------------------------- FM-41: PTX that cannot be JIT-compiled for this GPU


def test_invalid_ptx_is_the_architecture_not_compiled_in() -> None:
    text = (
        "Error: CUDA error cudaErrorInvalidPtx:a PTX JIT compilation failed\nGPU: RTX 5090 (sm_120), onnxruntime 1.23"
    )
    assert top(text) == "FM-41"


def test_ptx_newer_than_the_driver_stays_fm36() -> None:
    text = "CUDA error cudaErrorUnsupportedPtxVersion:the provided PTX was compiled with an unsupported toolchain."
    assert top(text) == "FM-36"
