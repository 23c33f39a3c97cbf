"""Explain's mismatch rules from the eighteenth set's misses: TensorRT's INT8 builder flag, engine deserialization, a
stuck TensorRT build, C# feed names, genai contrib type errors at load, ORT's own `Missing Input`, the Node binding's
float16 check, Java classes missing from the onnxruntime jar. Texts are composed, not copied from any labelled set;
the learned fallback is off so that the rules decide."""

from __future__ import annotations

import pytest
from tests.support.explain_top import rule_ids
from tests.support.explain_top import rule_top as top

# ---------------------------------------------------------------- TensorRT INT8 not enabled in the builder


@pytest.mark.parametrize(
    "text",
    [
        "[E:onnxruntime:Default, tensorrt_execution_provider.h:88 log] [ERROR] 4: [network.cpp::validate::2890] Error "
        "Code 4: Internal Error (Int8 precision has been set for a layer or layer output, but int8 is not configured "
        "in the builder)",
        "session = ort.InferenceSession('model_qdq.onnx', providers=['TensorrtExecutionProvider'])\n"
        "TensorRT builder error: INT8 not enabled in the builder although the network has INT8 layers",
    ],
)
def test_an_int8_layer_without_int8_in_the_builder_is_fm177(text: str) -> None:
    assert top(text) == "FM-177"


def test_int8_calibration_talk_without_the_builder_refusal_is_not_fm177() -> None:
    text = "I enabled trt_int8_enable and the builder took 20 minutes to calibrate the int8 engine; is that expected?"
    assert "FM-177" not in rule_ids(text)


# ---------------------------------------------------------------- TensorRT engine deserialization


@pytest.mark.parametrize(
    "text",
    [
        "Failed loading model phi-4-trtrtx-gpu:2\nNvTensorRTRTX EP failed to deserialize engine for fused node: "
        "NvTensorRTRTXExecutionProvider_TRTKernel_graph_main_1_0",
        "[E:onnxruntime:Default, tensorrt_execution_provider.cc:3100 operator()] TensorRT EP failed to deserialize "
        "engine for fused node: TRTKernel_graph_torch_jit_42_0",
    ],
)
def test_an_engine_the_tensorrt_ep_cannot_deserialize_is_fm63(text: str) -> None:
    assert top(text) == "FM-63"


def test_a_failed_pickle_deserialization_is_not_fm63() -> None:
    text = "TensorRT is installed.\nValueError: failed to deserialize the config object from cache.pkl"
    assert "FM-63" not in rule_ids(text)


# ---------------------------------------------------------------- a TensorRT build that looks stuck


def test_session_stuck_after_tensorrt_takes_the_graph_is_fm62() -> None:
    text = (
        "The program hangs at session creation. Last log line:\n"
        "2024-03-01 10:00:00.1 [I:onnxruntime:Default, tensorrt_execution_provider.cc:1950 GetCapability] [TensorRT "
        "EP] Whole graph will run on TensorRT execution provider\nJetson Orin, TensorRT 8.6, onnxruntime-gpu 1.17"
    )
    assert top(text) == "FM-62"


def test_an_error_after_tensorrt_takes_the_graph_is_not_a_slow_build() -> None:
    text = (
        "It hangs and then crashes:\n[I:onnxruntime:Default, tensorrt_execution_provider.cc:1950 GetCapability] "
        "[TensorRT EP] Whole graph will run on TensorRT execution provider\nSegmentation fault (core dumped)"
    )
    assert "FM-62" not in rule_ids(text)


def test_a_hang_without_tensorrt_taking_the_graph_is_not_fm62() -> None:
    text = "Inference hangs forever with the TensorRT EP when two threads call Run at once (deadlock?)"
    assert "FM-62" not in rule_ids(text)


# ---------------------------------------------------------------- C#: a feed name not in the model's metadata


@pytest.mark.parametrize("kind", ["Input", "Output"])
def test_a_name_not_in_the_csharp_metadata_is_ng05(kind: str) -> None:
    text = (
        "Microsoft.ML.OnnxRuntime.OnnxRuntimeException: [ErrorCode:InvalidArgument] "
        f"{kind} name: 'attention_mask' is not in the metadata\n"
        "   at Microsoft.ML.OnnxRuntime.InferenceSession.LookupInputMetadata(String nodeName)"
    )
    assert top(text) == "NG-05"


# ---------------------------------------------------------------- genai: a contrib op's type error at load


def test_a_genai_contrib_op_type_error_at_load_from_csharp_is_fm144() -> None:
    text = (
        "Load model from C:\\models\\phi3\\model.onnx failed:This is an invalid model. Type Error: Type "
        "'tensor(float16)' of input parameter (/model/layers.3/attn/q_proj/output_0) of operator (MatMulNBits) in "
        "node (/model/layers.3/attn/q_proj/MatMulNBits) is invalid.\n"
        "   at Microsoft.ML.OnnxRuntimeGenAI.Model..ctor(String modelPath)"
    )
    assert top(text) == "FM-144"


def test_a_contrib_op_type_error_outside_genai_is_not_fm144() -> None:
    text = (
        "onnxruntime.capi.onnxruntime_pybind11_state.InvalidGraph: [ONNXRuntimeError] : 10 : INVALID_GRAPH : This is "
        "an invalid model. Type Error: Type 'tensor(float16)' of input parameter (x) of operator (MatMulNBits) in node "
        "(n1) is invalid."
    )
    assert "FM-144" not in rule_ids(text)


# ---------------------------------------------------------------- ORT's own Missing Input in a kernel


@pytest.mark.parametrize(
    "text",
    [
        "[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code returned while running "
        "SkipLayerNormalization node. Name:'SkipLayerNorm_3' Status Message: "
        "/src/include/onnxruntime/core/framework/op_kernel_context.h:42 const T* onnxruntime::OpKernelContext::"
        "Input(int) const [with T = onnxruntime::Tensor] Missing Input: bert.encoder.layer.5.output.LayerNorm.bias",
        "Error: Non-zero status code returned while running Attention node. Name:'Attention_0' Status Message: "
        "Missing Input: attention.qkv.weight",
    ],
)
def test_a_kernel_missing_a_declared_input_at_run_is_fm178(text: str) -> None:
    assert top(text) == "FM-178"


def test_required_inputs_missing_from_the_feed_is_still_ng03() -> None:
    text = "ValueError: Required inputs (['token_type_ids']) are missing from input feed (['input_ids'])."
    assert top(text) == "NG-03"
    assert "FM-178" not in rule_ids(text)


# ---------------------------------------------------------------- onnxruntime-node float16 tensors


def test_the_node_binding_refusing_float16_tensor_data_is_fm179() -> None:
    text = (
        "TypeError: Tensor.data must be a typed array (4) for float16 tensors, but got typed array (10).\n"
        "    at node_modules/onnxruntime-node/dist/backend.js:100:20"
    )
    assert top(text) == "FM-179"


def test_a_float32_typed_array_error_is_not_fm179() -> None:
    text = "TypeError: Tensor.data must be a typed array (1) for float32 tensors, but got typed array (7)."
    assert "FM-179" not in rule_ids(text)


# ---------------------------------------------------------------- Java: a class the onnxruntime jar lacks


@pytest.mark.parametrize(
    "text",
    [
        'Exception in thread "main" java.lang.NoClassDefFoundError: ai/onnxruntime/OrtSession$RunOptions\n'
        "    at com.example.Embedder.embed(Embedder.java:40)",
        "java.lang.ClassNotFoundException: ai.onnxruntime.platform.Fp16Conversions\n"
        "    at java.base/jdk.internal.loader.BuiltinClassLoader.loadClass(BuiltinClassLoader.java:641)",
    ],
)
def test_a_class_missing_from_the_onnxruntime_jar_is_fm82(text: str) -> None:
    assert top(text) == "FM-82"


def test_a_class_missing_from_another_package_is_not_fm82() -> None:
    text = "java.lang.NoClassDefFoundError: com/example/tokenizer/Vocab\n    at ai.djl.Model.load(Model.java:10)"
    assert "FM-82" not in rule_ids(text)


@pytest.mark.parametrize("name", ["attention_mask", "length"])
def test_a_graph_input_missing_in_a_kernel_is_not_fm178(name: str) -> None:
    text = (
        "RuntimeError: Error in execution: Non-zero status code returned while running Cast node. Name:'Cast_1' "
        "Status Message: /src/include/onnxruntime/core/framework/op_kernel_context.h:40 const T* "
        f"onnxruntime::OpKernelContext::Input(int) const [with T = onnxruntime::Tensor] Missing Input: {name}"
    )
    assert "FM-178" not in rule_ids(text)


# ---------------------------------------------------------------- genai: a folder loaded as the model file


def test_genai_loading_its_folder_as_the_model_is_fm180() -> None:
    text = (
        "import onnxruntime_genai as og\nmodel = og.Model('models/qwen3-0.6b/')\n"
        "RuntimeError: Load model from models/qwen3-0.6b/ failed:Protobuf parsing failed."
    )
    assert top(text) == "FM-180"


def test_a_model_file_that_does_not_parse_is_not_fm180() -> None:
    text = (
        "import onnxruntime_genai as og\n"
        "RuntimeError: Load model from models/qwen3/model.onnx failed:Protobuf parsing failed."
    )
    assert "FM-180" not in rule_ids(text)


# ---------------------------------------------------------------- a serving backend crashing in ORT's C API


def test_a_triton_backend_crash_in_the_c_api_is_fm181() -> None:
    text = (
        'Thread 9 "tritonserver" received signal SIGSEGV, Segmentation fault.\n'
        "0x00007f00 in OrtApis::GetTensorTypeAndShape(OrtValue const*, OrtTensorTypeAndShapeInfo**) () from "
        "/opt/tritonserver/backends/onnxruntime/libonnxruntime.so"
    )
    assert top(text) == "FM-181"


def test_a_c_api_crash_outside_a_serving_backend_is_not_fm181() -> None:
    text = (
        "Program received signal SIGSEGV, Segmentation fault.\n0x00007f00 in OrtApis::Run(OrtSession*, ...) () from "
        "/usr/lib/libonnxruntime.so\n#1 main () at app.cpp:40"
    )
    assert "FM-181" not in rule_ids(text)
