"""Explain's rules from the seen sets' model, graph and runtime misses after the seventeenth set: ORT-format model
versions, a caller's stream capture around ORT's CUDA graph, negative dimensions from input metadata, standard ops
without a schema at the model's opset, nested graph type errors, numeric option values, CUDA-graph arena failures,
TensorRT build timeouts. Texts are composed, not copied from any labelled set; the learned fallback is off so that
the rules decide."""

from __future__ import annotations

import pytest
from tests.support.explain_top import rule_ids
from tests.support.explain_top import rule_top as top

# ---------------------------------------------------------------- ORT format (.ort) model from another release


@pytest.mark.parametrize(
    "text",
    [
        "onnxruntime.capi.onnxruntime_pybind11_state.Fail: [ONNXRuntimeError] : 1 : FAIL : Load model from "
        "yolo.ort failed: The ORT format model version [5] is not supported in this build 1.14.1.",
        "E/onnxruntime: LoadOrtModel: ORT format version 3 unsupported by this runtime (minimal build)",
    ],
)
def test_an_ort_format_model_of_another_release(text: str) -> None:
    assert top(text) == "FM-159"


def test_the_onnx_format_of_a_model_is_not_an_ort_format_version() -> None:
    text = "InvalidProtobuf: Load model from m.onnx failed: Protobuf parsing failed (wrong file format or version?)"
    assert "FM-159" not in rule_ids(text)


# ---------------------------------------------------------------- the caller's capture around ORT's CUDA graph


@pytest.mark.parametrize(
    "text",
    [
        "torch.cuda.graph(g) around sess.run_with_iobinding(b) with enable_cuda_graph=1:\n"
        "onnxruntime Fail: CUDA error cudaErrorStreamCaptureUnsupported: operation not permitted when stream is "
        "capturing ; file=onnxruntime/core/providers/cuda/cuda_graph.cc ; expr=cudaGraphLaunch(exec, stream_);",
        "We call cudaStreamBeginCapture(stream) and then session.Run(); it aborts with\n"
        "CUDA failure 900: operation not permitted when stream is capturing",
    ],
)
def test_a_callers_stream_capture_around_orts_cuda_graph(text: str) -> None:
    assert top(text) == "FM-160"


def test_error_900_without_any_graph_capture_is_not_the_caller_capture_class() -> None:
    text = "CUDA failure 900: operation not permitted when stream is capturing ; expr=cudaMemcpyAsync(dst, src)"
    assert "FM-160" not in rule_ids(text)


# ---------------------------------------------------------------- -1 from the metadata used as a size


@pytest.mark.parametrize(
    "text",
    [
        'var dims = session.InputMetadata["input"].Dimensions;\nvar t = new DenseTensor<float>(dims);\n'
        "Unhandled exception. System.ArgumentOutOfRangeException: Dimensions must be non-negative "
        "(Parameter 'dimensions')",
        "Ort::Value::CreateTensor with the shape from GetShape() throws: Tried creating tensor with negative value "
        "in shape",
    ],
)
def test_a_dynamic_dimension_used_as_a_tensor_size(text: str) -> None:
    assert top(text) == "FM-161"


def test_negative_dimensions_in_numpy_without_ort_are_not_this_class() -> None:
    text = 'ValueError: negative dimensions are not allowed\n  File "prep.py", line 3, in <module> np.zeros(shape)'
    assert "FM-161" not in rule_ids(text)


# ---------------------------------------------------------------- a standard op without a schema at this opset


@pytest.mark.parametrize("op", ["Unsqueeze", "LabelEncoder"])
def test_a_standard_op_without_a_schema_is_an_opset_too_new(op: str) -> None:
    text = (
        "InvalidGraph: [ONNXRuntimeError] : 10 : INVALID_GRAPH : This is an invalid model. "
        f"Error in Node:/enc/{op}_3 : No Op registered for {op} with domain_version of 21"
    )
    assert top(text) == "NG-07"


def test_an_unknown_op_without_a_schema_stays_a_missing_op() -> None:
    text = (
        "INVALID_GRAPH : This is an invalid model. Error in Node:n0 : "
        "No Op registered for FancyAttention with domain_version of 17"
    )
    assert "NG-07" not in rule_ids(text)
    assert top(text) == "NG-08"


# ---------------------------------------------------------------- fp16 NaN/Inf: "inference" is not "inf"


def test_an_fp16_flag_on_an_inference_line_is_not_nan_or_inf() -> None:
    text = (
        "Node (/up/Reshape_2) Op (Reshape) [ShapeInferenceError] Dimension could not be inferred: incompatible "
        "shapes\n"
        "out = engine.inference(frames, model='x2.onnx', fp16=True)  # 1920x1080"
    )
    assert "FM-52" not in rule_ids(text)
    assert top(text) == "NG-11"


def test_fp16_with_infinite_outputs_stays_an_fp16_overflow() -> None:
    assert top("after converting to fp16 the outputs are all inf and nans") == "FM-52"


# ---------------------------------------------------------------- graph type errors with nested types


def test_a_type_error_on_an_output_arg_with_a_nested_type_is_an_invalid_model() -> None:
    text = (
        "onnxruntime Fail: [ONNXRuntimeError] : 1 : FAIL : Type Error: Type (seq(tensor(float))) of output arg "
        "(probabilities) of node (ZipMap_2) does not match"
    )
    assert top(text) == "NG-11"


# ---------------------------------------------------------------- ORT's old wording of a missing kernel


def test_the_old_no_suitable_kernel_wording_is_a_missing_kernel() -> None:
    text = "RuntimeError: [ONNXRuntimeError] : 1 : GENERAL ERROR : No suitable kernel definition found for op Tile(6)"
    assert top(text) == "NG-08"


# ---------------------------------------------------------------- a number where an option takes a name


@pytest.mark.parametrize(
    "text",
    [
        "providers=[('CUDAExecutionProvider', {'cudnn_conv_algo_search': '2'})] and the log still shows EXHAUSTIVE",
        'parameters { key: "cudnn_conv_algo_search" value: "0" }',
    ],
)
def test_a_numeric_cudnn_conv_algo_search_is_an_option_value_problem(text: str) -> None:
    assert top(text) == "FM-81"


def test_a_named_cudnn_conv_algo_search_is_no_option_problem() -> None:
    assert "FM-81" not in rule_ids("providers=[('CUDAExecutionProvider', {'cudnn_conv_algo_search': 'HEURISTIC'})]")


# ---------------------------------------------------------------- CUDA graph and the arena; TensorRT build timeouts


def test_an_arena_failure_with_cuda_graph_on_names_the_cuda_graph_class() -> None:
    text = (
        "sess options: enable_cuda_graph=1\n"
        "Status Message: bfc_arena.cc:376 AllocateRawInternal Failed to allocate memory for requested buffer of "
        "size 8388608"
    )
    assert "FM-98" in rule_ids(text)


def test_an_arena_failure_without_cuda_graph_is_memory_only() -> None:
    text = "bfc_arena.cc:376 AllocateRawInternal Failed to allocate memory for requested buffer of size 8388608"
    assert "FM-98" not in rule_ids(text)


def test_a_tensorrt_engine_build_that_timed_out_is_a_slow_build() -> None:
    text = "worker: TRT engine building for unet.onnx timed out after 600 s; the job was killed"
    assert top(text) == "FM-62"


def test_a_timeout_elsewhere_is_not_a_slow_engine_build() -> None:
    assert "FM-62" not in rule_ids("requests.exceptions.ReadTimeout: the inference server timed out")
