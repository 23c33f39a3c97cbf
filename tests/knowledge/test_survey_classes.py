"""Problem classes anticipated from the own messages of ONNX Runtime, CUDA, NVML, glibc, Windows and pip (#16):
each in the forms users paste it (Python traceback, C++/C#/Java exception, log line), with false-positive guards.
Texts are composed from the producers' message formats; the learned fallback is off so that the rules decide."""

from __future__ import annotations

import pytest
from tests.support.explain_top import rule_top as top

from ortgpu.knowledge.base import load_knowledge_base

_CUDA_LINE = (
    "onnxruntime::CudaCall CUDA failure {code}: {message} ; GPU=0 ; hostname=node-4 ; "
    "file=/onnxruntime_src/onnxruntime/core/providers/cuda/cuda_execution_provider.cc ; line=282 ; "
    "expr=cudaSetDevice(info_.device_id);"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # FM-114: the toolkit's stub libcuda.so
        (_CUDA_LINE.format(code=34, message="CUDA driver is a stub library"), "FM-114"),
        (
            "Ort::Exception: [ONNXRuntimeError] : 1 : FAIL : "
            + _CUDA_LINE.format(code=34, message="CUDA driver is a stub library"),
            "FM-114",
        ),
        ("RuntimeError: cudaErrorStubLibrary while creating the CUDA provider", "FM-114"),
        # FM-115: kernel module and user-space driver of different versions
        (
            "$ nvidia-smi\nFailed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.144",
            "FM-115",
        ),
        (
            "[  812.4] NVRM: API mismatch: the client has the version 550.144.03, but\n"
            "NVRM: API mismatch: the NVIDIA kernel module has version 550.127.05, but this NVIDIA driver component",
            "FM-115",
        ),
        # FM-116: Fabric Manager not running on an NVSwitch system
        (_CUDA_LINE.format(code=802, message="system not yet initialized"), "FM-116"),
        (
            "ai.onnxruntime.OrtException: Error code - ORT_RUNTIME_EXCEPTION - message: "
            + _CUDA_LINE.format(code=802, message="system not yet initialized"),
            "FM-116",
        ),
        # FM-117: glibc 2.41 refuses an executable-stack library
        (
            'Traceback (most recent call last):\n  File "app.py", line 1, in <module>\n    import onnxruntime\n'
            "ImportError: /opt/venv/lib/python3.13/site-packages/onnxruntime/capi/onnxruntime_pybind11_state.cpython-"
            "313-x86_64-linux-gnu.so: cannot enable executable stack as shared object requires: Invalid argument",
            "FM-117",
        ),
        (
            "java.lang.UnsatisfiedLinkError: /tmp/onnxruntime-java42/libonnxruntime.so: cannot enable executable "
            "stack as shared object requires: Invalid argument",
            "FM-117",
        ),
        # FM-118: static TLS used up
        ("ImportError: /lib/aarch64-linux-gnu/libgomp.so.1: cannot allocate memory in static TLS block", "FM-118"),
        (
            "OSError: /usr/local/lib/python3.10/dist-packages/onnxruntime/capi/libonnxruntime.so.1.16.0: "
            "cannot allocate memory in static TLS block",
            "FM-118",
        ),
        # FM-119: the Windows paging file
        (
            "OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading "
            '"C:\\venv\\Lib\\site-packages\\nvidia\\cublas\\bin\\cublasLt64_12.dll" or one of its dependencies.',
            "FM-119",
        ),
        (
            "[E:onnxruntime:Default, provider_bridge_ort.cc:1992 onnxruntime::TryGetProviderInfo_CUDA] "
            'LoadLibrary failed with error 1455 "The paging file is too small for this operation to complete." '
            'when trying to load "C:\\app\\onnxruntime_providers_cuda.dll"',
            "FM-119",
        ),
        # FM-120: Windows long paths
        (
            "ERROR: Could not install packages due to an OSError: [Errno 2] No such file or directory: "
            "'C:\\Users\\dev\\AppData\\Local\\pip\\nvidia\\cudnn\\include\\cudnn_backend_v9.h'\n"
            "HINT: This error might have occurred since this system does not have Windows Long Path support "
            "enabled. You can find information on how to enable this at https://pip.pypa.io/warnings/enable-long-paths",
            "FM-120",
        ),
        # FM-121: disk full
        (
            "Collecting nvidia-cudnn-cu12\n  Downloading nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl"
            " (664.8 MB)\nERROR: Could not install packages due to an OSError: [Errno 28] No space left on device",
            "FM-121",
        ),
        # FM-122: 2 GB protobuf limit
        ("ValueError: Message onnx.ModelProto exceeds maximum protobuf size of 2GB: 6815744123", "FM-122"),
        (
            "RuntimeError: The serialized model is larger than the 2GiB limit imposed by the protobuf library. "
            "Therefore the output file must be a file path, so that the ONNX external data can be written",
            "FM-122",
        ),
        # FM-123: TensorRT dropped the GPU's architecture
        (
            "2025-03-02 10:11:12.1 [E:onnxruntime:Default, tensorrt_execution_provider.h:88 log] [2025-03-02 "
            "10:11:12   ERROR] Target GPU SM 61 is not supported by this TensorRT release.",
            "FM-123",
        ),
        (
            "[E] [TRT] 1: [caskUtils.cpp::trtSmToCask::147] Error Code 1: Internal Error (Unsupported SM: 0x809)",
            "FM-123",
        ),
        ("../rtSafe/cuda/caskUtils.cpp (98) - Assertion Error in trtSmToCask: 0 (Unsupported SM.)", "FM-123"),
        # FM-124: 64 KiB pages
        (
            "ImportError: /opt/venv/lib/python3.12/site-packages/onnxruntime/capi/onnxruntime_pybind11_state.so: "
            "ELF load command address/offset not page-aligned",
            "FM-124",
        ),
        ("dlopen failed: libonnxruntime.so: ELF load command alignment not page-aligned", "FM-124"),
        # FM-125: CUDA unloaded before the session
        (_CUDA_LINE.format(code=4, message="driver shutting down"), "FM-125"),
        # FM-126: a running process holds the DLLs pip replaces
        (
            "ERROR: Could not install packages due to an OSError: [WinError 5] Access is denied: "
            "'C:\\venv\\Lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_shared.dll'\n"
            "Consider using the `--user` option or check the permissions.",
            "FM-126",
        ),
        (
            "OSError: [WinError 32] The process cannot access the file because it is being used by another process: "
            "'C:\\venv\\Lib\\site-packages\\onnxruntime\\capi\\onnxruntime.dll'",
            "FM-126",
        ),
        # FM-127: external data without the model's path
        (
            "onnxruntime.capi.onnxruntime_pybind11_state.Fail: [ONNXRuntimeError] : 1 : FAIL : /onnxruntime_src/"
            "onnxruntime/core/framework/tensorprotoutils.cc:1024 onnxruntime::utils::GetExtDataFromTensorProto "
            "!model_path.empty() was false. model_path must not be empty. Ensure that a path is provided when the "
            "model is created or loaded.",
            "FM-127",
        ),
        (
            "Microsoft.ML.OnnxRuntime.OnnxRuntimeException: [ErrorCode:Fail] initializer.cc:45 "
            "Initializer::Initializer !model_path.empty() was false. model_path must not be empty.",
            "FM-127",
        ),
        # FM-128: code-integrity policy
        (
            "ImportError: DLL load failed while importing onnxruntime_pybind11_state: An Application Control "
            "policy has blocked this file.",
            "FM-128",
        ),
        ("OSError: [WinError 4551] An Application Control policy has blocked this file: onnxruntime.dll", "FM-128"),
        # FM-129: InferenceSession given neither a path nor bytes
        (
            'Traceback (most recent call last):\n  File "serve.py", line 8, in <module>\n'
            "    sess = ort.InferenceSession(model, providers=['CUDAExecutionProvider', 'CPUExecutionProvider'])\n"
            "TypeError: Unable to load from type '<class 'onnx.onnx_ml_pb2.ModelProto'>'",
            "FM-129",
        ),
        ("TypeError: Unable to load from type '<class 'NoneType'>'", "FM-129"),
        # FM-130: the display watchdog
        (_CUDA_LINE.format(code=702, message="the launch timed out and was terminated"), "FM-130"),
        (
            "Non-zero status code returned while running Conv node. Name:'/conv1/Conv' Status Message: CUDA error "
            "cudaErrorLaunchTimeout:the launch timed out and was terminated",
            "FM-130",
        ),
        # towards existing entries
        (
            "  File \"bind.py\", line 3, in <module>\n    x = ort.OrtValue.ortvalue_from_numpy(arr, 'cuda', 0)\n"
            "RuntimeError: Can't allocate memory on the CUDA device using this package of OnnxRuntime. Please use "
            "the CUDA package of OnnxRuntime to use this feature.",
            "FM-02",
        ),
        ("$ nvidia-smi\nFailed to initialize NVML: Unknown Error", "FM-70"),
        (
            "The requested API version [22] is not available, only API versions [1, 16] are supported in this "
            "build. Current ORT Version is: 1.16.3",
            "FM-82",
        ),
        (
            "Microsoft.ML.OnnxRuntime.OnnxRuntimeException: [ErrorCode:RuntimeException] Non-zero status code "
            "returned while running MatMul node. Name:'/MatMul' Status Message: onnxruntime::BFCArena::"
            "AllocateRawInternal Available memory of 1024 is smaller than requested bytes of 4194304",
            "FM-46",
        ),
    ],
)
def test_anticipated_class_recognised(text: str, expected: str) -> None:
    assert top(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "nvidia-smi works, NVML version 550.127, no version mismatch between the packages",
        "The executable stack is disabled on this system and everything works",
        "I freed disk space earlier; now there is plenty of space left on the device",
        "model_path = 'model.onnx'; sess = ort.InferenceSession(model_path)",
        "Requested API version 18 with the ort crate, it loads fine",
        "The paging file was increased to 32 GB last year",
        "[WinError 5] Access is denied: 'C:\\Windows\\System32\\config'",
        "Our group policy requires signed installers",
        "The model is 1.4 GB, well under the protobuf limit",
        "Unable to load from type hints in our own config loader",
        "This GPU is an unsupported SM for our own kernels, we skip them",
    ],
)
def test_similar_words_claim_nothing(text: str) -> None:
    assert top(text) is None


def test_new_entries_claim_their_signals_and_stay_in_range() -> None:
    kb = load_knowledge_base()
    ids = [f"FM-{n}" for n in range(114, 131)]
    for eid in ids:
        entry = kb.get(eid)
        assert entry.claims, eid
        assert all(s.startswith("http") for s in entry.sources), eid


def test_c_api_version_wins_over_other_guesses_in_a_rust_log() -> None:
    text = (
        "thread 'main' panicked at src/main.rs:12:5:\n"
        "The requested API version [20] is not available, only API versions [1, 17] are supported in this build. "
        "Current ORT Version is: 1.17.1\nnote: run with `RUST_BACKTRACE=1`"
    )
    assert top(text) == "FM-82"
