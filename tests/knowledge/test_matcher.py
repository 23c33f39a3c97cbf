"""The knowledge base and the matcher: valid data, every entry's own examples, real noisy pastes, negatives."""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest

from ortgpu.knowledge import Family, Severity, load_knowledge_base, lookup
from ortgpu.knowledge.base import ALLOWED_GROUPS, KnowledgeBaseError, UnknownFailureModeError, validate_document
from ortgpu.knowledge.matcher import extract_facts, find_hits, normalise
from ortgpu.knowledge.matrix import Platform

KB = load_knowledge_base()


def _doc() -> dict:
    return json.loads(resources.files("ortgpu").joinpath("data/failure_modes.json").read_text(encoding="utf-8"))


def _top(text: str) -> str | None:
    hits = find_hits(text)
    return hits[0].entry.id if hits else None


# ---------------------------------------------------------------- the data itself


def test_packaged_knowledge_base_is_valid() -> None:
    assert validate_document(_doc()) == []


def test_every_research_failure_mode_is_in_the_data() -> None:
    ids = {e.id for e in KB.entries}
    missing = [f"FM-{n:02d}" for n in range(1, 67) if f"FM-{n:02d}" not in ids]
    assert missing == []


def test_merged_entries_say_where_they_went() -> None:
    merged = [e for e in KB.entries if e.merged_into]
    assert merged, "FM-09 shares its message with FM-08"
    for entry in merged:
        assert not entry.patterns
        assert KB.get(entry.merged_into).patterns


@pytest.mark.parametrize("entry", KB.entries, ids=lambda e: e.id)
def test_every_entry_compiles_and_has_fix_text(entry) -> None:
    for pattern in entry.patterns:
        assert set(re.compile(pattern).groupindex) <= ALLOWED_GROUPS
    for platform in (Platform.LINUX, Platform.WINDOWS, None):
        assert entry.fix_for(platform).strip()
    assert entry.meaning.strip() and entry.cause.strip() and entry.sources and entry.examples


EXAMPLES = [(e, i, x) for e in KB.entries for i, x in enumerate(e.examples)]


@pytest.mark.parametrize(("entry", "index", "example"), EXAMPLES, ids=lambda v: getattr(v, "id", None) or str(v)[:0])
def test_each_entry_example_matches_that_entry_first(entry, index, example) -> None:
    assert _top(example.text) == (entry.merged_into or entry.id)


def test_validation_reports_broken_entries() -> None:
    doc = _doc()
    broken = doc["entries"][0] | {"patterns": ["(unclosed"], "fix": {"any": " "}, "id": "FM-1"}
    doc["entries"] = [*doc["entries"], broken]
    problems = " | ".join(validate_document(doc))
    assert "does not compile" in problems and "no fix text" in problems and "id must look like" in problems


def test_loading_a_broken_file_raises(tmp_path) -> None:
    path = tmp_path / "fm.json"
    path.write_text('{"schema": 1, "entries": [{"id": "FM-01"}]}', encoding="utf-8")
    with pytest.raises(KnowledgeBaseError, match="FM-01"):
        load_knowledge_base(path)


def test_lookup() -> None:
    assert lookup("FM-12").title.startswith("`libcudnn.so.9` missing")
    assert lookup("FM-09").merged_into == "FM-08"  # doctor can still use its own fix text
    with pytest.raises(UnknownFailureModeError):
        lookup("FM-999")


def test_every_family_and_severity_has_entries() -> None:
    assert {e.family for e in KB.entries} == set(Family)
    assert {e.severity for e in KB.entries} == set(Severity)


# ---------------------------------------------------------------- normalisation


def test_normalise_strips_paste_noise() -> None:
    text = (
        "\x1b[1;31m2024-05-01 10:00:00.123456789 [E:onnxruntime:Default, provider_bridge_ort.cc:1548 "
        "TryGetProviderInfo_CUDA] D:\\\\a\\\\_work\\\\1\\\\s\\\\onnxruntime\\\\core\\\\session\\\\"
        "provider_bridge_ort.cc:1637 "
        "boom ; hostname=gpu-node-17 ;\x1b[m\r\n"
        "Traceback (most recent call last):\r\n"
        '  File "/app/run.py", line 12, in <module>\r\n'
        "    sess = make_session()\r\n"
        "                ^^^^^^^^^^\r\n"
        "\r\n"
        "[05/01/2024-10:36:56] [TRT] [E] 6: tail"
    )
    lines = normalise(text)
    assert lines == (
        r"D:\a\_work\1\s\onnxruntime\core\session\provider_bridge_ort.cc boom ; hostname=<host> ;",
        "[TRT] [E] 6: tail",
    )


def test_normalise_unwraps_hard_wrapped_lines() -> None:
    message = (
        "Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot open shared "
        "object file: No such file or directory"
    )
    wrapped = "\n".join(message[i : i + 80] for i in range(0, len(message), 80))
    assert len(wrapped.splitlines()) == 2
    assert normalise(wrapped + "\n" + wrapped) == (message,)  # unwrapped, and the repeat kept once


# ---------------------------------------------------------------- real pastes with noise

ANSI_LINUX_CUBLAS11 = (
    "[2024-03-27 06:33:22,299] [    INFO] - >>> [InferBackend] Use GPU to inference ...\n"
    "\x1b[1;31m2024-03-27 06:33:23.219728338 [E:onnxruntime:Default, provider_bridge_ort.cc:1548 "
    "TryGetProviderInfo_CUDA] /onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1209 "
    "onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load "
    "library libonnxruntime_providers_cuda.so with error: libcublasLt.so.11: cannot open shared object file: No such "
    "file or directory\x1b[m\n"
    "\x1b[0;93m2024-03-27 06:33:23.219759101 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:861 "
    "CreateExecutionProviderInstance] Failed to create CUDAExecutionProvider. Please reference "
    "https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirementsto ensure all "
    "dependencies are met.\x1b[m\n"
)

# wrapped at 73 columns: a break falls inside "shared object"
WRAPPED_CUDNN9 = "\n".join(
    (lambda s: [s[i : i + 73] for i in range(0, len(s), 73)])(
        "2025-07-31 15:09:16.647314988 [E:onnxruntime:Default, provider_bridge_ort.cc:2195 TryGetProviderInfo_CUDA] "
        "/onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1778 onnxruntime::Provider& "
        "onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library "
        "libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot open shared object file: No such file "
        "or directory"
    )
) + (
    "\n2025-07-31 15:09:16.647341662 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:1055 "
    "CreateExecutionProviderInstance] Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*. "
    "Please install all dependencies as mentioned in the GPU requirements page "
    "(https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements), make sure they're in "
    "the PATH, and that your GPU is supported."
)

REPR_WINDOWS_CUDNN9 = (
    "onnxruntime.capi.onnxruntime_pybind11_state.Fail: [ONNXRuntimeError] : 1 : FAIL : Error loading "
    '"C:\\\\Users\\\\me\\\\ComfyUI\\\\venv\\\\Lib\\\\site-packages\\\\onnxruntime\\\\capi\\\\onnxruntime_providers_cuda.dll"'
    ' which depends on "cudnn64_9.dll" which is missing. (Error 126: "The specified module could not be found.")'
)

CRLF_WINDOWS_126 = (
    "PS C:\\work> python infer.py\r\n"
    "2024-08-21 09:12:44.1234567 [E:onnxruntime:Default, provider_bridge_ort.cc:1992 "
    "onnxruntime::TryGetProviderInfo_CUDA] D:\\a\\_work\\1\\s\\onnxruntime\\core\\session\\provider_bridge_ort.cc:1637 "
    'onnxruntime::ProviderLibrary::Get [ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 "" when '
    'trying to load "C:\\Python311\\Lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll"\r\n'
    "2024-08-21 09:12:44.1300000 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:965 "
    "onnxruntime::python::CreateExecutionProviderInstance] Failed to create CUDAExecutionProvider. Require cuDNN 9.* "
    "and CUDA 12.*, and the latest MSVC runtime. Please install all dependencies as mentioned in the GPU requirements "
    "page (https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements), make sure "
    "they're in the PATH, and that your GPU is supported.\r\n"
)

WINDOWS_DRIVER_35 = (
    "2023-01-05 12:00:00.000 [E:onnxruntime:, sequential_executor.cc:494 onnxruntime::ExecuteKernel] "
    "D:\\a\\_work\\1\\s\\onnxruntime\\core\\providers\\cuda\\cuda_call.cc:124 onnxruntime::CudaCall "
    "D:\\a\\_work\\1\\s\\onnxruntime\\core\\providers\\cuda\\cuda_call.cc:117 onnxruntime::CudaCall CUDA failure 35: "
    "CUDA driver version is insufficient for CUDA runtime version ; GPU=-2011338632 ; hostname=DESKTOP-7Q2 ; "
    "expr=cudaSetDevice(info_.device_id);"
)

TRACEBACK_CUBLAS = (
    "Traceback (most recent call last):\n"
    '  File "/app/run.py", line 12, in <module>\n'
    '    sess = ort.InferenceSession("model.onnx", providers=["CUDAExecutionProvider"])\n'
    '  File "/usr/lib/python3/dist-packages/onnxruntime/capi/onnxruntime_inference_collection.py", line 419, in '
    "__init__\n"
    "    self._create_inference_session(providers, provider_options, disabled_optimizers)\n"
    "onnxruntime.capi.onnxruntime_pybind11_state.RuntimeException: [ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : "
    "Exception during initialization: /onnxruntime_src/onnxruntime/core/providers/cuda/cuda_call.cc:121 "
    "std::conditional_t<THRW, void, onnxruntime::common::Status> onnxruntime::CudaCall(ERRTYPE, const char*, const "
    "char*, ERRTYPE, const char*, const char*, int) [with ERRTYPE = cublasStatus_t; bool THRW = true] CUBLAS "
    "failure 3: CUBLAS_STATUS_ALLOC_FAILED ; GPU=0 ; hostname=egg ; "
    "file=/onnxruntime_src/onnxruntime/core/providers/cuda/cuda_execution_provider.cc ; line=164 ; "
    "expr=cublasCreate(&cublas_handle_);"
)

PASTES = [
    # (name, text, expected top id, expected library or None)
    ("linux loader, ANSI + log prefixes", ANSI_LINUX_CUBLAS11, "FM-08", "libcublasLt.so.11"),
    ("linux loader, hard-wrapped", WRAPPED_CUDNN9, "FM-12", "libcudnn.so.9"),
    ("windows loader, repr backslashes", REPR_WINDOWS_CUDNN9, "FM-22", "cudnn64_9.dll"),
    ("windows loader, CRLF old format", CRLF_WINDOWS_126, "FM-21", None),
    (
        "windows zlib",
        "Could not locate zlibwapi.dll. Please make sure it is in your library path!\r\n"
        "Process finished with exit code -1073740791 (0xC0000409)",
        "FM-24",
        "zlibwapi.dll",
    ),
    ("driver, Windows paths + hostname", WINDOWS_DRIVER_35, "FM-34", None),
    (
        "device, k8s",
        "2024-06-01 10:00:00.1 [E:onnxruntime:Default, cuda_call.cc:121 CudaCall] CUDA failure 100: no "
        "CUDA-capable device is detected ; GPU=0 ; hostname=inference-7f9c ; "
        "file=/onnxruntime_src/onnxruntime/core/providers/cuda/cuda_execution_provider.cc ; line=245 ; "
        "expr=cudaSetDevice(info_.device_id);",
        "FM-37",
        None,
    ),
    ("cuda library, Python traceback", TRACEBACK_CUBLAS, "FM-44", None),
    (
        "memory, absurd size",
        "Non-zero status code returned while running Conv node. Name:'/conv1/Conv' Status "
        "Message: /onnxruntime_src/onnxruntime/core/framework/bfc_arena.cc:376 void* "
        "onnxruntime::BFCArena::AllocateRawInternal(size_t, bool, onnxruntime::Stream*, bool, "
        "onnxruntime::WaitNotificationFn) Failed to allocate memory for requested buffer of size 4585490524328388608",
        "FM-46",
        None,
    ),
    (
        "tensorrt, pip TRT 8",
        "EP Error /onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1193 "
        "onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load "
        "library libonnxruntime_providers_tensorrt.so with error: libnvinfer.so.8: cannot open shared object file: No "
        "such file or directory\n when using ['TensorrtExecutionProvider']\nFalling back to ['CUDAExecutionProvider', "
        "'CPUExecutionProvider'] and retrying.",
        "FM-57",
        "libnvinfer.so.8",
    ),
    (
        "package, warnings.warn prefix",
        "/usr/local/lib/python3.10/dist-packages/onnxruntime/capi/"
        "onnxruntime_inference_collection.py:69: UserWarning: Specified provider 'CUDAExecutionProvider' is not in "
        "available provider names.Available providers: 'AzureExecutionProvider, CPUExecutionProvider'\n"
        "  warnings.warn(",
        "FM-02",
        None,
    ),
    (
        "package, glibc",
        "ImportError: /lib/x86_64-linux-gnu/libm.so.6: version `GLIBC_2.29' not found (required by "
        "/opt/conda/lib/python3.8/site-packages/onnxruntime/capi/onnxruntime_pybind11_state.so)",
        "FM-06",
        None,
    ),
    (
        "fallback only",
        "2024-11-02 08:00:00.5 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:965 "
        "CreateExecutionProviderInstance] Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*. "
        "Please install all dependencies as mentioned in the GPU requirements page",
        "FM-33",
        None,
    ),
    (
        "performance, memcpy",
        "2025-03-01 10:00:00.1 [W:onnxruntime:, transformer_memcpy.cc:83 "
        "ApplyImpl] 24 Memcpy nodes are added to the graph main_graph for CUDAExecutionProvider. "
        "It might have negative "
        "impact on performance (including unable to run CUDA graph). Set session_options.log_severity_level=1 to see "
        "the detail logs before this message.",
        "FM-51",
        None,
    ),
    ("concurrency, fork", "RuntimeError: CUDA error executing cudaSetDevice(GetDeviceId()) in worker 3", "FM-56", None),
    (
        "benign placement warning",
        "2024-01-20 11:42:06.5 [W:onnxruntime:, session_state.cc:1162 "
        "onnxruntime::VerifyEachNodeIsAssignedToAnEp] Some nodes were not assigned to the preferred "
        "execution providers "
        "which may or may not have an negative impact on performance. e.g. ORT explicitly assigns shape related ops to "
        "CPU to improve perf.\n2024-01-20 11:42:06.5 [W:onnxruntime:, session_state.cc:1164 "
        "onnxruntime::VerifyEachNodeIsAssignedToAnEp] Rerunning with verbose output on a non-minimal build will show "
        "node assignments.",
        "FM-65",
        None,
    ),
    (
        "cuda 13 missing",
        "Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.13: "
        "cannot open shared object file: No such file or directory",
        "FM-67",
        "libcublasLt.so.13",
    ),
    (
        "no driver",
        "OSError: libcuda.so.1: cannot open shared object file: No such file or directory",
        "FM-70",
        "libcuda.so.1",
    ),
    (
        "other library",
        "[E:onnxruntime:Default, provider_bridge_ort.cc:1848 TryGetProviderInfo_CUDA] Failed to load "
        "library libonnxruntime_providers_cuda.so with error: libcusparse.so.12: cannot open shared object "
        "file: No such "
        "file or directory",
        "FM-71",
        "libcusparse.so.12",
    ),
    (
        "bare ctypes message",
        "OSError: libcublasLt.so.11: cannot open shared object file: No such file or directory",
        "FM-08",
        "libcublasLt.so.11",
    ),
]


@pytest.mark.parametrize(("name", "text", "top", "library"), PASTES, ids=[p[0] for p in PASTES])
def test_real_pastes_with_noise(name: str, text: str, top: str, library: str | None) -> None:
    hits = find_hits(text)
    assert hits and hits[0].entry.id == top
    if library:
        assert hits[0].library == library


def test_hard_wrapped_message_is_joined_before_matching() -> None:
    assert "open sh\nared object" in WRAPPED_CUDNN9  # the raw paste really is broken mid-phrase
    assert any(
        "libcudnn.so.9: cannot open shared object file: No such file or directory" in line
        for line in normalise(WRAPPED_CUDNN9)
    )
    assert extract_facts(WRAPPED_CUDNN9).build_cuda_major == 12


def test_a_specific_match_hides_the_catch_all() -> None:
    ids = [h.entry.id for h in find_hits(ANSI_LINUX_CUBLAS11)]
    assert ids[0] == "FM-08" and "FM-33" in ids and "FM-71" not in ids
    assert "FM-71" not in [h.entry.id for h in find_hits(PASTES[17][1])]


def test_garbage_gpu_index_is_a_note_listed_last() -> None:
    ids = [h.entry.id for h in find_hits(WINDOWS_DRIVER_35)]
    assert ids == ["FM-34", "FM-66"]


def test_hostname_and_source_positions_do_not_leak_into_the_matched_line() -> None:
    hit = find_hits(WINDOWS_DRIVER_35)[0]
    assert "DESKTOP-7Q2" not in hit.line and "cuda_call.cc:124" not in hit.line
    assert hit.groups["code"] == "35"


# ---------------------------------------------------------------- not GPU problems

NEGATIVES = [
    (
        "shape",
        "Traceback (most recent call last):\n"
        '  File "/home/u/det.py", line 30, in <module>\n'
        '    out = sess.run(None, {"data": x})\n'
        '  File "/home/u/.venv/lib/python3.11/site-packages/onnxruntime/capi/onnxruntime_inference_collection.py", '
        "line 266, in run\n"
        "    return self._sess.run(output_names, input_feed, run_options)\n"
        "onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Got "
        "invalid dimensions for input: data for the following indices\n index: 0 Got: 2 Expected: 1\n Please fix "
        "either the inputs or the model.",
        "NG-01",
    ),
    (
        "missing inputs",
        "ValueError: Required inputs (['token_type_ids']) are missing from input feed (['input_ids', "
        "'attention_mask']).",
        "NG-03",
    ),
    (
        "dtype",
        "[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Unexpected input data type. Actual: (tensor(double)) , expected: "
        "(tensor(float))",
        "NG-04",
    ),
    (
        "ir version",
        "[ONNXRuntimeError] : 1 : FAIL : Load model from m.onnx failed:Unsupported model IR version: 10, "
        "max supported IR version: 9",
        "NG-06",
    ),
    (
        "rank",
        "[ErrorCode:InvalidArgument] Invalid rank for input: feats Got: 2 Expected: 3 Please fix either the "
        "inputs/outputs or the model.",
        "NG-02",
    ),
    (
        "reshape on the GPU",
        "Non-zero status code returned while running Reshape node. Name:'/Reshape' Status Message: "
        "/onnxruntime_src/onnxruntime/core/providers/cpu/tensor/reshape_helper.h:26 The input tensor "
        "cannot be reshaped "
        "to the requested shape. Input shape:{1,3}, requested shape:{2,2}",
        "NG-10",
    ),
]


@pytest.mark.parametrize(("name", "text", "top"), NEGATIVES, ids=[n[0] for n in NEGATIVES])
def test_model_and_input_errors_are_not_gpu_problems(name: str, text: str, top: str) -> None:
    hits = find_hits(text)
    assert hits[0].entry.id == top
    assert all(h.entry.family is Family.NOT_GPU for h in hits), [h.entry.id for h in hits]


@pytest.mark.parametrize(
    "text",
    [
        "The quick brown fox jumps over the lazy dog.",
        "ModuleNotFoundError: No module named 'cv2'",
        "Segmentation fault (core dumped)",
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.",
        "12345 67890",
    ],
)
def test_unrelated_text_matches_nothing(text: str) -> None:
    assert find_hits(text) == ()


# ---------------------------------------------------------------- facts


def test_facts_from_a_windows_paste() -> None:
    facts = extract_facts(CRLF_WINDOWS_126)
    assert facts.platform is Platform.WINDOWS
    assert (facts.build_cuda_major, facts.build_cudnn_major) == (12, 9)


def test_facts_from_a_linux_paste() -> None:
    facts = extract_facts(ANSI_LINUX_CUBLAS11)
    assert facts.platform is Platform.LINUX
    assert facts.libraries == ("libcublasLt.so.11",)
    assert facts.build_cuda_major is None


def test_facts_ort_version_and_codes() -> None:
    facts = extract_facts(
        'LoadLibrary failed with error 126 "" when trying to load '
        '"C:\\libs\\onnxruntime-win-x64-gpu-1.19.0\\lib\\onnxruntime_providers_cuda.dll"\n'
        "CUDA failure 35: x ; CUDA failure 35: y ; CUDA failure 999: z"
    )
    assert facts.ort_version == "1.19.0"
    assert facts.cuda_error_codes == (35, 999)
    assert extract_facts("pip install onnxruntime-gpu==1.18.1").ort_version == "1.18.1"
