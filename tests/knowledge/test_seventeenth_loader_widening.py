"""Explain's host-load rules from the seventeenth set's loader/binding misses, in other words than the pastes."""

from __future__ import annotations

import pytest
from tests.support.explain_top import rule_ids, rule_top


@pytest.mark.parametrize(
    "text",
    [
        "ImportError: cannot import name 'TensorProto' from partially initialized module 'onnx' "
        "(most likely due to a circular import) (/home/u/work/onnx.py)",
        "AttributeError: partially initialized module 'onnxruntime' has no attribute 'InferenceSession' "
        "(most likely due to a circular import)",
        "cannot import name 'main_export' from partially initialized module 'optimum.exporters.onnx' "
        "(most likely due to a circular import) (/opt/venv/lib/python3.11/site-packages/optimum/exporters/onnx/"
        "__init__.py)",
    ],
)
def test_a_circular_import_of_a_package_is_a_local_module_in_its_place(text: str) -> None:
    assert rule_top(text) == "FM-151"


def test_the_users_own_circular_import_is_not_a_shadowed_package() -> None:
    text = (
        "ImportError: cannot import name 'Detector' from partially initialized module 'myapp.models' "
        "(most likely due to a circular import) (/srv/myapp/models.py)"
    )
    assert "FM-151" not in rule_ids(text)


def test_the_wrappers_null_api_pointer_is_static_initialisation() -> None:
    text = 'static Ort::Env g_env{ORT_LOGGING_LEVEL_ERROR, "svc"};\nwhat(): Global<void>::api_ is nullptr'
    assert rule_top(text) == "FM-152"


@pytest.mark.parametrize(
    "text",
    [
        "OrtGetApiBase() works but GetApi(ORT_API_VERSION) returns NULL in my plugin",
        "Ort::GetApi(...) returned nullptr when the test host starts",
        # both: the null GetApi decides (an older library), not the static initialiser
        "GetApi(16) returned null, then Global<void>::api_ was nullptr",
    ],
)
def test_getapi_returning_null_is_an_older_library_loaded(text: str) -> None:
    assert rule_top(text) == "FM-82"
    assert "FM-152" not in rule_ids(text)


@pytest.mark.parametrize(
    "text",
    [
        "ImportError: DLL load failed while importing _native: The operating system cannot run %1.",
        "OSError: [WinError 182] 操作系统无法运行 %1。: 'C:\\\\app\\\\bin\\\\my_ort_ext.dll'",
    ],
)
def test_windows_error_182_is_an_older_dll_of_that_name_found_first(text: str) -> None:
    assert rule_top(text) == "FM-82"


def test_error_193_is_not_error_182() -> None:
    text = (
        "ImportError: DLL load failed while importing onnxruntime_pybind11_state: %1 is not a valid Win32 application."
    )
    assert "FM-82" not in rule_ids(text)


def test_windows_in_box_onnxruntime_path_from_a_nuget_app_is_the_wrong_dll() -> None:
    text = (
        "Microsoft.ML.OnnxRuntime.OnnxRuntimeException: [ErrorCode:Fail] Load model failed: "
        "C:\\__w\\1\\s\\engine\\lotus\\onnxruntime\\core\\session\\inference_session.cc:1012"
    )
    assert rule_top(text) == "FM-82"


def test_windows_ml_itself_reports_its_own_tree_without_a_wrong_dll() -> None:
    text = (
        "WinRT originate error - 0x80070057 : 'Failed to load model with error: "
        "D:\\a\\_work\\1\\s\\engine\\lotus\\onnxruntime\\core/graph/model.cc:111 Unsupported model IR version'"
    )
    assert "FM-82" not in rule_ids(text)


@pytest.mark.parametrize(
    "text",
    [
        'note: "-ladd_ort_library_path_or_enable_feature_download-binaries_see_ort_docs" "-lc"',
        "ld: library 'onnxruntime' not found\nclang: error: linker command failed with exit code 1",
    ],
)
def test_the_rust_crate_or_linker_without_an_onnxruntime_library_is_a_build_not_finding_it(text: str) -> None:
    assert rule_top(text) == "FM-91"


def test_a_wasm_backend_not_registered_is_a_package_without_it() -> None:
    text = (
        "const ort = require('onnxruntime-node');\nexecutionProviders: ['wasm']\n"
        "Error: no available backend found. ERR: [wasm] backend not found."
    )
    assert rule_top(text) == "FM-32"


def test_a_wasm_backend_that_failed_to_start_stays_the_web_class() -> None:
    text = (
        "Error: no available backend found. ERR: [wasm] RuntimeError: Aborted(both async and sync fetching of "
        "the wasm failed)"
    )
    assert rule_top(text) == "FM-88"
