"""ORT's own error-message templates across releases, placeholders filled: each family is recognised and mapped.

The templates are the message texts of ORT's sources (core/framework kernel lookup, core/session/provider_bridge_ort.cc,
python/onnxruntime_pybind_state.cc, providers/cuda/cuda_call.cc, providers/tensorrt, the C#/Node/Java loaders), old and
new wordings of one error side by side; docs/explain.md lists which families are covered.
"""

from __future__ import annotations

import pytest

from ortgpu.explain import explain

# (template with {placeholders}, values, expected top entry)
TEMPLATES: list[tuple[str, dict[str, str], str]] = [
    # core/framework kernel lookup: ORT <= 1.3, 1.4 - 1.15, >= 1.16 (domain and EP named)
    ("Failed to find kernel for {op}({v}) (node {node}). Kernel not found", {"op": "Einsum", "v": "12"}, "NG-08"),
    ("Failed to find kernel for {op}({v}) (node:'{node}' ep:'CPUExecutionProvider'). Kernel not found", {}, "NG-08"),
    ("Failed to find kernel for com.microsoft.{op}({v}) (node:'{node}' ep:'CPUExecutionProvider')", {}, "NG-08"),
    ("Failed to find kernel for {op}({v}) (node:'{node}' ep:'CUDAExecutionProvider'). Kernel not found", {}, "FM-54"),
    ("Could not find an implementation for the node {op}({v})", {}, "NG-08"),
    ("Could not find an implementation for {op}({v}) node with name '{node}'", {}, "NG-08"),
    ("Could not find an implementation for MemcpyToHost(1) node with name '{node}'", {}, "NG-13"),
    # provider bridge (core/session/provider_bridge_ort.cc): Linux dlopen, Windows LoadLibrary old and new
    (
        "{ort}/provider_bridge_ort.cc:1539 onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() "
        "[ONNXRuntimeError] : 1 : FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: "
        "{lib}: cannot open shared object file: No such file or directory",
        {"lib": "libcublasLt.so.12"},
        "FM-10",
    ),
    (
        '[ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 "" when trying to load '
        '"{win}\\onnxruntime_providers_cuda.dll"',
        {},
        "FM-21",
    ),
    (
        '[ONNXRuntimeError] : 1 : FAIL : Error loading "{win}\\onnxruntime_providers_cuda.dll" which depends on '
        '"{dll}" which is missing. (Error 126: "The specified module could not be found.")',
        {"dll": "cudnn64_9.dll"},
        "FM-22",
    ),
    (
        '[ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 127 "" when trying to load '
        '"{win}\\onnxruntime_providers_cuda.dll"',
        {},
        "FM-76",
    ),
    # python/onnxruntime_pybind_state.cc
    (
        "Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*. Please install all dependencies "
        "as mentioned in the GPU requirements page",
        {},
        "FM-33",
    ),
    (
        "Specified provider 'CUDAExecutionProvider' is not in available provider names.Available providers: "
        "'CPUExecutionProvider'",
        {},
        "FM-02",
    ),
    # providers/cuda/cuda_call.cc: CUDA, cuBLAS, cuDNN, with and without the status name, old and new layouts
    (
        "CUDA failure {code}: {msg} ; GPU=0 ; hostname=h ; expr=cudaSetDevice(info_.device_id);",
        {"code": "100", "msg": "no CUDA-capable device is detected"},
        "FM-37",
    ),
    (
        "CUDA error cudaError{name}:{msg}",
        {"name": "InsufficientDriver", "msg": "CUDA driver version is insufficient for CUDA runtime version"},
        "FM-34",
    ),
    (
        "CUBLAS failure {code}: CUBLAS_STATUS_{name} ; GPU=0 ; hostname=h ; expr=cublasCreate(&cublas_handle_);",
        {"code": "3", "name": "ALLOC_FAILED"},
        "FM-44",
    ),
    ("CUBLAS failure {code} ; GPU=0 ; hostname=h ; expr=cublasGemmHelper(...)", {"code": "13"}, "FM-45"),
    ("CUBLAS error executing cublasGemmHelper( Base::CublasHandle(), transB, transA, ...)", {}, "FM-45"),
    (
        "CUDNN failure {code}: CUDNN_STATUS_{name} ; GPU=0 ; hostname=h ; expr=cudnnCreate(&cudnn_handle_);",
        {"code": "4", "name": "INTERNAL_ERROR"},
        "FM-42",
    ),
    (
        "CUDNN_FE failure {code}: {name} ; GPU=0 ; hostname=h ; file={ort}/cudnn_fe_call.cc ; line=99 ; "
        "expr=s_.cudnn_fe_graph->build_operation_graph(handle);",
        {"code": "11", "name": "CUDNN_BACKEND_API_FAILED"},
        "FM-43",
    ),
    (
        "Non-zero status code returned while running Conv node. Name:'{node}' Status Message: Failed to initialize "
        "CUDNN Frontend{ort}/cudnn_fe_call.cc:99",
        {},
        "FM-43",
    ),
    # providers/tensorrt: EP statuses and the TensorRT logger
    (
        "[ONNXRuntimeError] : 11 : EP_FAIL : TensorRT EP failed to create engine from network for fused node: "
        "TensorrtExecutionProvider_TRTKernel_graph_main_1_0",
        {},
        "FM-75",
    ),
    ("[ONNXRuntimeError] : 11 : EP_FAIL : TensorRT EP Failed to Build Engine.", {}, "FM-75"),
    (
        "[E:onnxruntime:Default, tensorrt_execution_provider.h:88 log] [2025-01-01 00:00:00   ERROR] 4: "
        "[network.cpp::validate::3100] Error Code 4: Internal Error (out of memory while building)",
        {},
        "FM-75",
    ),
    (
        "TensorRT EP failed to load dependency '{win}\\{dll}': The specified module could not be found.",
        {"dll": "nvinfer_10.dll"},
        "FM-59",
    ),
    # C API / bindings: Node.js, C#, Java
    ("Error: OrtSessionOptionsAppendExecutionProvider_Cuda: Failed to load shared library", {}, "FM-79"),
    (
        "System.DllNotFoundException: Unable to load DLL '{dll}' or one of its dependencies: The specified module "
        "could not be found. (0x8007007E)",
        {"dll": "cudnn64_8.dll"},
        "FM-22",
    ),
    (
        "java.lang.UnsatisfiedLinkError: {linux}/libonnxruntime_providers_cuda.so: {lib}: cannot open shared object "
        "file: No such file or directory",
        {"lib": "libcudnn.so.9"},
        "FM-12",
    ),
    # model/session templates (core/session, core/graph)
    (
        "[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Got invalid dimensions for input: {input} for the following "
        "indices\n index: 1 Got: 4 Expected: 3",
        {},
        "NG-01",
    ),
    (
        "[ONNXRuntimeError] : 1 : FAIL : Load model from {linux}/m.onnx failed:Unsupported model IR version: 10, max "
        "supported IR version: 9",
        {},
        "NG-06",
    ),
]

DEFAULTS = {
    "op": "GridSample",
    "v": "16",
    "node": "/blocks/op_3",
    "ort": "/onnxruntime_src/onnxruntime/core/providers/cuda",
    "win": "C:\\Users\\u\\venv\\Lib\\site-packages\\onnxruntime\\capi",
    "linux": "/tmp/onnxruntime-java",
    "input": "pixel_values",
}


@pytest.mark.parametrize(("template", "values", "entry"), TEMPLATES, ids=[f"{t[2]}:{t[0][:40]}" for t in TEMPLATES])
def test_each_ort_message_template_is_recognised_and_mapped(template: str, values: dict[str, str], entry: str) -> None:
    text = template.format(**{**DEFAULTS, **values})
    result = explain(text)
    assert result.matches, text
    assert result.matches[0].id == entry, (text, [m.id for m in result.matches])
