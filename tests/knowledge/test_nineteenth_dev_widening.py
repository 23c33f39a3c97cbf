"""Explain's rules for runs that cross a limit (the nineteenth set's dev half): the CUDA EP's rank limit, TopK's k,
delay-loaded native modules, the Rust crate's link step, cut provider errors, the shape inference tool, kernel launch
arguments, TensorRT profile ranges, CUDA 12 DLLs on CUDA 11 hosts. Texts are composed, not copied from any labelled
set; the learned fallback is off so that the rules decide."""

from __future__ import annotations

import pytest
from tests.support.explain_top import rule_ids
from tests.support.explain_top import rule_top as top

# ---------------------------------------------------------------- the CUDA EP's 8-dimension shape array


@pytest.mark.parametrize(
    "text",
    [
        "Status Message: /build/onnxruntime/core/providers/cuda/shared_inc/cuda_utils.h:91 void "
        "onnxruntime::cuda::TArray<T, capacity>::SetSize(int32_t) [with T = long int; int capacity = 8] "
        "0 <= size && size <= capacity was false.",
        "running Where node 'w3': cuda_utils.h:84 check failed: size <= capacity (got 10 dims)",
    ],
)
def test_more_than_eight_dimensions_on_the_cuda_ep_is_the_rank_limit(text: str) -> None:
    assert top(text) == "FM-187"


def test_an_unrelated_capacity_word_is_not_the_rank_limit() -> None:
    assert "FM-187" not in rule_ids("the queue reached its capacity = 8 and the worker stopped")


# ---------------------------------------------------------------- TopK's k larger than the axis


def test_a_topk_k_larger_than_its_axis_is_a_model_shape_problem() -> None:
    text = (
        "Non-zero status code returned while running TopK node. Name:'/roi_heads/TopK' Status Message: "
        "k argument [100] should not be greater than specified axis dim value [37]"
    )
    assert top(text) == "NG-10"


# ---------------------------------------------------------------- Windows delay-load 'Module not found'


def test_a_delay_load_failure_in_a_managed_host_is_the_native_library_missing() -> None:
    text = "Unhandled exception at 0x00007FFA in MyApp.exe (dotnet): 0xC06D007E: Module not found."
    assert top(text) == "FM-82"


def test_a_delay_load_code_without_a_binding_host_is_not_claimed() -> None:
    assert "FM-82" not in rule_ids("setup.exe returned 0xc06d007e while installing drivers")


# ---------------------------------------------------------------- the Rust crate cannot link ONNX Runtime


@pytest.mark.parametrize(
    "text",
    [
        "[ort-sys 2.0.0-rc.10] cargo::error=ort-sys could not link to the ONNX Runtime build in `/opt/ort/lib`",
        "/usr/bin/ld: libort_sys-1a2b.rlib(ort_sys.o):/root/.cargo/registry/src/ort-sys-2.0.0-rc.9/src/link_error.rs:"
        "15: undefined reference to `ort-sys could not find ONNX Runtime'",
    ],
)
def test_the_rust_crate_failing_its_link_step_is_a_build_link_problem(text: str) -> None:
    assert top(text) == "FM-91"


# ---------------------------------------------------------------- the providers= error cut short


def test_a_cut_providers_required_error_still_says_pass_providers() -> None:
    text = '  File "serve.py", line 9, in load\n    raise ValueError(\nValueError: This ORT build has [\'CUDAExecutionP'
    assert top(text) == "FM-03"


# ---------------------------------------------------------------- ORT's symbolic shape inference tool


@pytest.mark.parametrize(
    "text",
    [
        "python -m onnxruntime.tools.symbolic_shape_infer --input clf.onnx\nType case unsupported for symbolic shape "
        "inference. inferred=6",
        "Exception: Incomplete symbolic shape inference (optimizer step skipped)",
    ],
)
def test_the_shape_inference_tool_stopping_is_a_tool_limit(text: str) -> None:
    assert top(text) == "FM-188"


def test_merely_naming_symbolic_shape_inference_is_not_a_failure() -> None:
    assert "FM-188" not in rule_ids("we run symbolic shape inference before the optimizer; it works on our models")


# ---------------------------------------------------------------- a kernel's launch rejected by the GPU


def test_invalid_argument_from_an_ort_cu_file_is_a_kernel_bug() -> None:
    text = (
        "Non-zero status code returned while running GroupQueryAttention node. Status Message: CUDA failure 1: "
        "invalid argument ; GPU=0 ;\nfile=/src/onnxruntime/contrib_ops/cuda/bert/attention_impl.cu ; line=310 ; "
        "expr=cudaFuncSetAttribute(kernel);"
    )
    assert top(text) == "FM-80"


def test_invalid_argument_without_an_ort_kernel_file_is_not_a_kernel_bug() -> None:
    assert "FM-80" not in rule_ids("CUDA failure 1: invalid argument ; expr=cudaSetDevice(7) in my app.cu")


# ---------------------------------------------------------------- TensorRT optimisation profile ranges


def test_an_input_outside_the_tensorrt_profile_is_the_profile_problem() -> None:
    text = (
        "[E:onnxruntime:Default, tensorrt_execution_provider.h:77 log] ERROR: Parameter check failed at: "
        "runtime/api/executionContext.cpp::setInputShape::2013, condition: profileMaxDims.d[i] >= dimensions.d[i]"
    )
    assert top(text) == "FM-73"


# ---------------------------------------------------------------- a CUDA 12 DLL on a CUDA 11 host


def test_a_cuda12_dll_missing_on_a_cuda11_host_is_the_cuda_major_mismatch() -> None:
    text = (
        "Could not locate cudart64_12.dll. Please make sure it is in your library path!\n"
        "Environment: Windows 10, CUDA Version: 11.7, onnxruntime-gpu 1.19"
    )
    assert top(text) == "FM-10"


def test_a_cuda12_dll_missing_without_cuda11_is_not_claimed_as_the_mismatch() -> None:
    text = "Could not locate cudart64_12.dll. Please make sure it is in your library path!\nCUDA Version: 12.4"
    assert "FM-10" not in rule_ids(text)
