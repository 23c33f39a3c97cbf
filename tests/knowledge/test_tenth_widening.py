"""The tenth widening of explain: environment listings of any shape, op variants a kernel does not implement, null
kernels, non-tensor feeds, extensions that link CUDA themselves, Triton's execution accelerators, prose naming the
CUDA library the provider depends on, DirectML's device creation, a provider's missing entry point.
Texts are composed, not copied from any labelled set."""

from __future__ import annotations

import pytest
from tests.support.explain_top import top_id

from ortgpu.explain import PasteKind, explain
from ortgpu.knowledge.listing_signals import listed_distributions

# ---------------------------------------------------------------- 1. an environment listing with both distributions


@pytest.mark.parametrize(
    "text",
    [
        "[env] ONNX Runtime CPU package installed with version: 1.17.1\n"
        "[env] ONNX Runtime GPU package installed with version: 1.19.2\n"
        "WARNING: CUDAExecutionProvider is not available, running on CPU",
        "$ pip freeze | grep -i onnx\nonnx==1.16.2\nonnxruntime==1.18.1\nonnxruntime-gpu==1.20.0\n"
        "the CUDA provider never shows up",
        "| package | version |\n|---|---|\n| onnxruntime-gpu | 1.19.0 |\n| onnxruntime | 1.19.0 |\n"
        "get_available_providers() gives ['CPUExecutionProvider']",
        "# packages in environment at /opt/conda/envs/sd:\nonnxruntime               1.17.3          pypi_0    pypi\n"
        "onnxruntime-gpu           1.17.3          pypi_0    pypi\nproviders: CPUExecutionProvider only",
    ],
)
def test_a_listing_naming_the_cpu_and_the_gpu_distribution_is_two_packages(text: str) -> None:
    assert top_id(text) == "FM-01"


@pytest.mark.parametrize(
    "line",
    [
        "onnxruntime 1.16 was fine but onnxruntime-gpu 1.18 fails",
        "pip uninstall onnxruntime==1.16.3",
        "Found existing installation: onnxruntime 1.16.3",
        "I compiled against ONNX Runtime version: 1.18",
        "we moved to onnxruntime-gpu 1.18.0 last week",
    ],
)
def test_prose_and_installer_output_are_not_listings(line: str) -> None:
    assert listed_distributions(line) == []


def test_a_listing_with_only_the_gpu_distribution_is_not_two_packages() -> None:
    text = "onnxruntime-gpu==1.20.0\nnumpy==1.26.4\nget_available_providers(): ['CPUExecutionProvider']"
    assert top_id(text) != "FM-01"


# ---------------------------------------------------------------- 2. an op variant the kernel does not implement

_VARIANT = (
    "Non-zero status code returned while running GridSample node. Name:'/warp/GridSample_3' "
    "Status Message: Only 4-D tensor is supported"
)


def test_an_unimplemented_variant_on_the_gpu_is_a_missing_gpu_kernel() -> None:
    text = f"providers=['CUDAExecutionProvider']\n{_VARIANT}"
    assert top_id(text) == "FM-54"


def test_an_unimplemented_variant_that_works_on_the_cpu_is_the_gpu_kernel() -> None:
    assert top_id(f"{_VARIANT}\nthe same model works on CPU, just slowly") == "FM-54"


def test_an_unimplemented_variant_with_no_ep_named_is_no_kernel_not_a_shape_error() -> None:
    # (GridSample's "Only 4-D tensor is supported" is the CUDA kernel's own text, see test_twelfth_widening.py; an
    # op whose CPU kernel has the limit too stays a missing kernel with no GPU named)
    result = explain(
        "Non-zero status code returned while running Col2Im node. Name:'/fold/Col2Im' "
        "Status Message: Only 2-D inputs are supported"
    )
    assert result.verdict is PasteKind.NOT_GPU
    assert result.matches[0].id == "NG-08"


def test_a_real_shape_error_stays_a_shape_error() -> None:
    text = (
        "Non-zero status code returned while running Reshape node. Name:'/head/Reshape_1' "
        "Status Message: The input tensor cannot be reshaped to the requested shape. Input shape:{1,77}"
    )
    assert top_id(text) == "NG-10"


def test_a_null_kernel_after_an_upgrade_is_no_kernel() -> None:
    text = (
        "After moving from onnxruntime 0.4 to 1.2 my opset 8 model no longer loads:\n"
        "op_kernel.cc:25 OpKernelContext kernel != nullptr was false. OpKernel was null"
    )
    assert top_id(text) == "NG-08"


# ---------------------------------------------------------------- 3. a value fed that is not a tensor


def test_a_sequence_fed_where_a_tensor_is_expected_is_an_input_error() -> None:
    text = (
        "Non-zero status code returned while running Gather node. Name:'g0' Status Message: "
        "tensor_type_and_shape.cc:210 GetTensorTypeAndShape type != nullptr was false. OrtValue is not a Tensor"
    )
    result = explain(text)
    assert result.verdict is PasteKind.NOT_GPU
    assert result.matches[0].id == "NG-12"


# ---------------------------------------------------------------- 4. an extension that links CUDA itself (Windows)


def test_an_extension_linking_cuda_failing_to_load_is_a_missing_cuda_dll_not_the_vc_runtime() -> None:
    text = (
        ">>> import onnxruntime_genai as og\n"
        '  File "C:\\Python312\\Lib\\site-packages\\onnxruntime_genai\\__init__.py", line 5, in <module>\n'
        "ImportError: DLL load failed while importing onnxruntime_genai: The specified module could not be found."
    )
    assert top_id(text) == "FM-21"


def test_path_no_longer_searched_for_cuda_dlls_is_a_missing_cuda_dll() -> None:
    text = "Since Python 3.8 the PATH is no longer searched for DLL dependencies, so cudart64_12.dll is never found"
    assert top_id(text) == "FM-21"


def test_ort_own_extension_failing_to_load_stays_the_vc_runtime() -> None:
    text = "ImportError: DLL load failed while importing onnxruntime_pybind11_state: The specified module could not be"
    assert top_id(text) == "FM-28"


# ---------------------------------------------------------------- 5. serving: an accelerator the backend lacks


def test_triton_rejecting_an_execution_accelerator_is_a_build_without_that_provider() -> None:
    text = (
        "| resnet | 1 | UNAVAILABLE: Invalid argument: unknown Execution Accelerator 'openvino' is requested |\n"
        "NVIDIA Release 22.02"
    )
    assert top_id(text) == "FM-32"


def test_a_provider_entry_point_not_found_in_the_library_is_a_build_without_it() -> None:
    text = (
        "WARN ort::execution_providers: failed to register `TensorRTExecutionProvider`: Error trying to load symbol "
        "`OrtSessionOptionsAppendExecutionProvider_TensorRT` from dynamic library"
    )
    assert top_id(text) == "FM-32"


# ---------------------------------------------------------------- 6. prose naming the CUDA library of another major


def test_prose_naming_the_cuda_dll_the_provider_depends_on_is_that_missing_dll() -> None:
    text = (
        "The service logs say `onnxruntime_providers_cuda.dll` depends on `cudart64_13.dll`; the machine only "
        "has the CUDA 12.6 toolkit, which ships cudart64_12.dll."
    )
    assert top_id(text) in ("FM-22", "FM-67")


# ---------------------------------------------------------------- 7. DirectML: the device, not the graph


def test_directml_failing_in_its_provider_factory_is_the_device() -> None:
    text = (
        "core\\providers\\dml\\dml_provider_factory.cc(112)\\onnxruntime.dll!00007FFA: (caller: 00007FFA) "
        "Exception(2) tid(91c) 80070057 The parameter is incorrect."
    )
    assert top_id(text) == "FM-83"


def test_directml_rejecting_a_graph_stays_the_graph() -> None:
    text = "DmlExecutionProvider: graph fusion failed: 80070057 The parameter is incorrect. (DmlGraphFusionHelper.cpp)"
    assert top_id(text) == "FM-84"


# ---------------------------------------------------------------- 8. a host said to have no NVIDIA GPU or runtime


def test_the_cuda_provider_failing_on_a_host_without_nvidia_is_no_driver() -> None:
    text = (
        "Laptop with Intel Arc graphics, no NVIDIA driver installed.\n"
        "Error: OrtSessionOptionsAppendExecutionProvider_Cuda: Failed to load shared library\n"
        "    at new InferenceSession (node_modules/onnxruntime-node/dist/index.js:12:9)"
    )
    assert top_id(text) == "FM-70"


def test_no_nvidia_named_without_the_provider_at_work_is_not_claimed() -> None:
    text = "This build machine has no NVIDIA GPU; the CPU wheel installs fine and the tests pass."
    assert top_id(text) != "FM-70"
