"""Explain's rules from the sixteenth set's misses: CUDA memory bound to a session without a GPU provider (FM-02),
onnxruntime-gpu's module gone after a package swap (FM-01, not FM-111), and older releases' unregistered custom op
(FM-131). Texts are composed, not copied from any labelled set; the learned fallback is off so that the rules
decide. Each class has its false-positive guards."""

from __future__ import annotations

import pytest
from tests.support.explain_top import rule_ids
from tests.support.explain_top import rule_top as top

_NO_TRANSFER = (
    "RuntimeError: Error when binding input: There's no data transfer registered for copying tensors from "
    "Device:[DeviceType:1 MemoryType:0 DeviceId:0] to Device:[DeviceType:0 MemoryType:0 DeviceId:0]"
)

# ---------------------------------------------------------------- FM-02: GPU data, no GPU provider in the session


@pytest.mark.parametrize(
    "text",
    [
        _NO_TRANSFER,
        "binding = sess.io_binding()\nbinding.bind_input('images', 'cuda', 0, np.float32, list(x.shape), "
        "x.data_ptr())\n" + _NO_TRANSFER.replace("input", "output"),
        "  File \"/srv/app/detect.py\", line 40, in run\n    io.bind_input(name='x', device_type='cuda', device_id=0,"
        " element_type=np.float16, shape=t.shape, buffer_ptr=t.data_ptr())\n" + _NO_TRANSFER,
    ],
)
def test_cuda_memory_bound_to_a_cpu_only_session_is_fm02(text: str) -> None:
    assert top(text) == "FM-02"


@pytest.mark.parametrize(
    "text",
    [
        # the caller chose the CPU provider itself: nothing says the package lacks the GPU one
        "sess = ort.InferenceSession('m.onnx', providers=['CPUExecutionProvider'])\n" + _NO_TRANSFER,
        # the other direction (CPU memory into a GPU-only copy) is not this class
        "RuntimeError: There's no data transfer registered for copying tensors from Device:[DeviceType:0 "
        "MemoryType:0 DeviceId:0] to Device:[DeviceType:1 MemoryType:0 DeviceId:0]",
        "io binding works fine now, thanks: no data transfer registered errors anymore",
    ],
)
def test_other_data_transfer_texts_are_not_fm02(text: str) -> None:
    assert "FM-02" not in rule_ids(text)


# ---------------------------------------------------------------- FM-01: onnxruntime-gpu's module gone


@pytest.mark.parametrize(
    "text",
    [
        "After I installed onnxruntime-gpu the script stopped working:\n"
        "ModuleNotFoundError: No module named 'onnxruntime'",
        "I'm using onnxruntime-gpu 1.17 and now `import onnxruntime` says No module named 'onnxruntime'",
    ],
)
def test_gpu_package_said_installed_but_module_missing_is_fm01_not_fm111(text: str) -> None:
    ids = rule_ids(text)
    assert ids[:1] == ["FM-01"] and "FM-111" not in ids


@pytest.mark.parametrize(
    "text",
    [
        # no GPU package named: the interpreter simply has none (FM-111 keeps it)
        "python3 run.py\nModuleNotFoundError: No module named 'onnxruntime'",
        # the GPU package only recommended, not said to be installed
        "ModuleNotFoundError: No module named 'onnxruntime'\nHint: pip install the package first",
    ],
)
def test_no_module_without_the_gpu_package_installed_is_not_fm01(text: str) -> None:
    assert "FM-01" not in rule_ids(text)
    assert top(text) == "FM-111"


def test_gpu_package_named_without_the_import_error_is_not_fm01_by_this_rule() -> None:
    assert "FM-01" not in rule_ids("I'm using onnxruntime-gpu 1.17 and the CUDA provider works on my RTX 4090")


# ---------------------------------------------------------------- FM-131: older releases' unregistered custom op


@pytest.mark.parametrize(
    "text",
    [
        "onnxruntime.capi.onnxruntime_pybind11_state.Fail: [ONNXRuntimeError] : 1 : FAIL : Load model from m.onnx "
        "failed:Fatal error: ATen is not a registered function/op",
        "[ONNXRuntimeError] : 1 : FAIL : Fatal error: my_roi_align is not a registered function/op",
    ],
)
def test_legacy_unregistered_non_onnx_op_is_fm131(text: str) -> None:
    assert top(text) == "FM-131"


@pytest.mark.parametrize(
    "text",
    [
        # a standard ONNX operator unknown to an old release: opset/build, not a custom op
        "[ONNXRuntimeError] : 1 : FAIL : Fatal error: Trilu is not a registered function/op",
        "[ONNXRuntimeError] : 1 : FAIL : Fatal error: GridSample is not a registered function/op",
    ],
)
def test_legacy_unregistered_standard_op_is_not_fm131(text: str) -> None:
    assert "FM-131" not in rule_ids(text)


# ---------------------------------------------------------------- FM-81: an empty provider option key or value


def test_empty_provider_option_key_or_value_is_fm81() -> None:
    text = (
        "ort::execution_providers: An error occurred when attempting to register `CUDAExecutionProvider`: "
        "key/value cannot be empty"
    )
    assert top(text) == "FM-81"


def test_another_programs_key_value_message_is_not_fm81() -> None:
    assert "FM-81" not in rule_ids('IllegalArgumentException: "Key/Value cannot be empty" from the settings store')
