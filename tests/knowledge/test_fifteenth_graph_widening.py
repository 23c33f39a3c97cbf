"""Explain's rules from the fifteenth set's model, fp16, TensorRT, config and custom-op misses: casts ORT inserted for
fp16 on the CPU, graph optimizers failing, kernels refusing a node, genai contrib checks, thread pinning, engines
built on another GPU, provider options, external-data files. Texts are composed, not copied from any labelled set;
the learned fallback is off so that the rules decide."""

from __future__ import annotations

import pytest
from tests.support.explain_top import rule_ids
from tests.support.explain_top import rule_top as top

from ortgpu.explain import PasteKind, explain

# ---------------------------------------------------------------- fp16 on the CPU EP: casts ORT inserted


@pytest.mark.parametrize(
    "text",
    [
        "2025-02-11 10:02:11.1 [E:onnxruntime:, sequential_executor.cc:516 ExecuteKernel] Non-zero status code "
        "returned while running Cast node. Name:'InsertedPrecisionFreeCast_/blocks.7/ffn/Gelu_output_0' Status "
        "Message: Shape mismatch attempting to re-use buffer. {2,1,768} != {2,77,768}",
        "RuntimeException: Non-zero status code returned while running Cast node. "
        "Name:'InsertedPrecisionFreeCast_onnx::MatMul_4412' Status Message: invalid output shape {1,-3,64}",
    ],
)
def test_a_failing_cast_that_ort_inserted_is_an_fp16_model_on_the_cpu(text: str) -> None:
    result = explain(text, closest=False)
    assert result.matches[0].id == "FM-141"
    assert result.verdict is PasteKind.NOT_GPU


def test_a_users_own_cast_node_stays_a_shape_error() -> None:
    text = (
        "Non-zero status code returned while running Cast node. Name:'/decoder/Cast_3' Status Message: Shape "
        "mismatch attempting to re-use buffer. {1,4} != {1,9}"
    )
    assert "FM-141" not in rule_ids(text)
    assert top(text) == "NG-10"


# ---------------------------------------------------------------- a graph optimizer failing at initialisation


@pytest.mark.parametrize(
    "text",
    [
        "[E:onnxruntime:, inference_session.cc:2100 operator()] Exception during initialization: "
        "/onnxruntime_src/onnxruntime/core/graph/graph_utils.cc:41 bool onnxruntime::graph_utils::RemoveNode(...) "
        "was false. Should be unreachable for node: /encoder/ln_f/Mul/LayerNormFusion/",
        "Ort::Exception: Exception during initialization: C:\\a\\_work\\1\\s\\onnxruntime\\core\\optimizer\\"
        "gelu_fusion.cc:188 onnxruntime::GeluFusion::ApplyImpl input_defs.size() == 2 was false.",
    ],
)
def test_a_failing_graph_transformer_is_an_optimizer_problem(text: str) -> None:
    result = explain(text, closest=False)
    assert result.matches[0].id == "FM-142"
    assert result.verdict is PasteKind.NOT_GPU


def test_the_cast_fusion_case_names_the_optimizer_not_the_cpu_cast() -> None:
    text = (
        "Exception during initialization: graph_utils.cc:29 GetIndexFromName itr != node_args.end() was false. "
        "Attempting to get index by a name which does not exist:InsertedPrecisionFreeCast_/ln/Constant_output_0 for "
        "node: /ln/Mul/SimplifiedLayerNormFusion/"
    )
    assert rule_ids(text)[0] == "FM-142"


@pytest.mark.parametrize(
    "text",
    [  # optimizer files whose failures are another class: a kernel lookup, a weights file
        "Exception during initialization: /onnxruntime_src/onnxruntime/core/optimizer/optimizer_execution_frame.cc:"
        "73 onnxruntime::OptimizerExecutionFrame::Info::Info [ONNXRuntimeError] : 1 : FAIL : Failed to find kernel "
        "for Div",
        "Exception during initialization: /onnxruntime_src/onnxruntime/core/optimizer/initializer.cc:43 "
        "onnxruntime::Initializer::Initializer [ONNXRuntimeError] : 1 : FAIL : GetFileLength for ./w.bin failed:open "
        "file w.bin fail, errcode = 2 - No such file or directory",
    ],
)
def test_optimizer_files_with_their_own_meaning_are_not_an_optimizer_bug(text: str) -> None:
    assert "FM-142" not in rule_ids(text)


def test_a_kernel_status_while_folding_constants_is_not_an_optimizer_bug() -> None:
    text = (
        "Exception during initialization: /onnxruntime_src/onnxruntime/core/optimizer/constant_folding.cc:240 "
        "onnxruntime::ConstantFolding::ApplyImpl The input tensor cannot be reshaped to the requested shape. Input "
        "shape:{1,96}, requested shape:{7,-1,5}"
    )
    assert "FM-142" not in rule_ids(text)
    assert top(text) == "NG-10"


def test_constant_folding_without_a_cpu_kernel_is_ng08() -> None:
    text = (
        "Exception during initialization: D:\\src\\onnxruntime\\core\\optimizer\\optimizer_execution_frame.cc:75 "
        "onnxruntime::OptimizerExecutionFrame::Info::Info [ONNXRuntimeError] : 1 : FAIL : Failed to find kernel for "
        "Pow"
    )
    assert top(text) == "NG-08"


def test_the_memcpy_transformer_without_a_gpu_kernel_is_fm54() -> None:
    text = (
        "ort.InferenceSession('half.onnx', providers=['CUDAExecutionProvider'])\nException during initialization: "
        "transformer_memcpy.cc:390 bool onnxruntime::TransformerMemcpyImpl::ProcessInitializers(...) status.IsOK() "
        "was false. Failed to find kernel for FusedConv(1) (node:'Conv_12' ep:'CUDAExecutionProvider')"
    )
    assert top(text) == "FM-54"


# ---------------------------------------------------------------- a kernel's constructor refusing the node


@pytest.mark.parametrize(
    "text",
    [
        "RUNTIME_EXCEPTION : Exception during initialization: /onnxruntime_src/onnxruntime/contrib_ops/cpu/"
        "quantization/qlinear_where.cc:22 onnxruntime::contrib::QLinearWhere::QLinearWhere(const OpKernelInfo&) "
        "info.GetInputCount() == 9 was false.",
        "Exception during initialization: C:\\ort\\onnxruntime\\core\\providers\\cpu\\nn\\pool.cc:30 "
        "onnxruntime::Pool::Pool kernel_shape.size() == 2 was false. Only 2-D pooling is supported",
    ],
)
def test_a_kernel_constructor_refusing_its_node_is_an_invalid_model(text: str) -> None:
    result = explain(text, closest=False)
    assert result.matches[0].id == "NG-11"
    assert result.verdict is PasteKind.NOT_GPU


def test_an_execution_providers_own_constructor_is_not_a_kernel() -> None:
    text = (
        "Exception during initialization: /src/onnxruntime/core/providers/tensorrt/tensorrt_execution_provider.cc:"
        "1100 onnxruntime::TensorrtExecutionProvider::TensorrtExecutionProvider ok was false."
    )
    assert "NG-11" not in rule_ids(text)


def test_a_kernels_compute_method_is_not_a_constructor() -> None:
    text = (
        "Exception during initialization: /onnxruntime_src/onnxruntime/contrib_ops/cpu/bert/attention.cc:88 "
        "onnxruntime::contrib::Attention::Compute ok was false."
    )
    assert "NG-11" not in rule_ids(text)


# ---------------------------------------------------------------- onnxruntime-genai: a contrib op's input check


@pytest.mark.parametrize(
    "text",
    [
        "onnxruntime_genai.onnxruntime_genai.OrtException: Non-zero status code returned while running "
        "RotaryEmbedding node. Name:'/model/layers.3/attn/k_rotary/RotaryEmbedding' Status Message: Input 'x' is "
        "expected to have 3 or 4 dimensions, got 5",
        "import onnxruntime_genai as og\nRuntimeError: Non-zero status code returned while running MatMulNBits node. "
        "Name:'/lm_head/MatMul_Q4' Status Message: Input B must be a 3-D tensor",
    ],
)
def test_a_genai_models_contrib_op_check_points_at_the_version_pair(text: str) -> None:
    assert top(text) == "FM-144"


def test_the_same_check_without_genai_stays_a_shape_error() -> None:
    text = (
        "Non-zero status code returned while running RotaryEmbedding node. Name:'rot' Status Message: Input 'x' is "
        "expected to have 3 or 4 dimensions, got 5"
    )
    assert "FM-144" not in rule_ids(text)


def test_a_genai_cuda_failure_is_not_a_version_pair() -> None:
    text = (
        "onnxruntime_genai.OrtException: Non-zero status code returned while running GroupQueryAttention node. "
        "Name:'gqa' Status Message: CUDA failure 2: out of memory"
    )
    assert "FM-144" not in rule_ids(text)


# ---------------------------------------------------------------- the thread pool cannot pin threads


@pytest.mark.parametrize(
    "text",
    [
        "terminate called after throwing an instance of 'Ort::Exception'\n  what():  /onnxruntime_src/onnxruntime/"
        "core/platform/posix/env.cc:183 onnxruntime::PosixThread::PosixThread(...) pthread_setaffinity_np failed, "
        "error code: 22 error msg: Invalid argument\nAborted (core dumped)",
        "onnxruntime.capi.onnxruntime_pybind11_state.Fail: pthread_setaffinity_np failed, error code: 0 error msg: ",
    ],
)
def test_thread_pinning_refused_is_fm143(text: str) -> None:
    assert top(text) == "FM-143"


def test_the_logged_pinning_failure_of_newer_releases_stays_benign() -> None:
    text = (
        "[E:onnxruntime:Default, env.cc:226 ThreadMain] pthread_setaffinity_np failed for thread: 912, index: 1, mask: "
        "{2, 3, }, error code: 22 error msg: Invalid argument. Specify the number of threads explicitly so the "
        "affinity is not set."
    )
    assert "FM-143" not in rule_ids(text)


# ---------------------------------------------------------------- TensorRT, provider options, custom-op entry point


def test_an_engine_built_on_another_gpu_is_the_stale_cache() -> None:
    text = (
        "[E:onnxruntime:Default, tensorrt_execution_provider.h:88 log] [2024-01-02 10:00:00   ERROR] 6: The engine "
        "plan file is generated on an incompatible device, expecting compute 8.9 got compute 8.0, please rebuild."
    )
    assert top(text) == "FM-63"


def test_trt_partitioning_that_cannot_resolve_the_graph_is_a_node_trt_cannot_take() -> None:
    text = (
        "Exception during initialization: /src/onnxruntime/core/providers/tensorrt/tensorrt_execution_provider.cc:"
        "1502 onnxruntime::TensorrtExecutionProvider::GetSupportedList graph_build.Resolve().IsOK() was false."
    )
    assert top(text) == "FM-74"


@pytest.mark.parametrize(
    "text",
    [
        "TypeError: initialize_session(): incompatible function arguments. The following argument types are "
        "supported:\n    1. (self, arg0: List[str], arg1: List[Dict[str, str]]) -> None\n\nInvoked with: <...>, "
        "['CUDAExecutionProvider'], [{'device_id': 0, 'gpu_mem_limit': 4294967296}]",
        "Ort::Exception: Received invalid value of cudnn_conv_algo_search 1818326560",
    ],
)
def test_provider_options_of_the_wrong_type_or_garbage_are_fm81(text: str) -> None:
    assert top(text) == "FM-81"


def test_run_with_incompatible_arguments_stays_an_input_error() -> None:
    text = "TypeError: run(): incompatible function arguments. The following argument types are supported:"
    assert "FM-81" not in rule_ids(text)


def test_a_library_without_the_custom_op_entry_point_in_javas_words_is_fm106() -> None:
    text = (
        "ai.onnxruntime.OrtException: Error code - ORT_FAIL - message: Failed to find symbol RegisterCustomOps in "
        "library, error code: 127"
    )
    assert top(text) == "FM-106"


# ---------------------------------------------------------------- model files and feeds


def test_a_missing_external_weights_file_under_directml_is_the_model_file() -> None:
    text = (
        'sess = ort.InferenceSession("unet/model.onnx", providers=["DmlExecutionProvider"])\n'
        "Exception during initialization: initializer.cc:43 onnxruntime::Initializer::Initializer [ONNXRuntimeError]"
        " : 1 : FAIL : GetFileLength for .\\unet\\weights.pb failed:open file weights.pb fail, errcode = 2 - "
        "The system cannot find the file specified."
    )
    assert top(text) == "NG-09"


def test_a_directml_failure_without_a_missing_file_stays_fm84() -> None:
    text = "DmlExecutionProvider: the operator fusion failed with 80070057 The parameter is incorrect."
    assert top(text) == "FM-84"


def test_a_web_feed_keyed_by_another_name_is_a_missing_input() -> None:
    text = "Uncaught (in promise) Error: input 'pixel_values' is missing in 'feeds'."
    assert top(text) == "NG-03"


def test_a_reshape_error_cut_after_its_location_is_ng10() -> None:
    text = (
        "Non-zero status code returned while running Reshape node. Name:'/enc/Reshape_7' Status Message: "
        "/onnxruntime_src/onnxruntime/core/providers/cpu/tensor/reshape_helper.h:30 onnxruntime::ReshapeHelper::"
        "ReshapeHel"
    )
    assert top(text) == "NG-10"
