"""Normalising a paste: a line repeated on the lines after it is kept once, so a flood of one message costs what
one copy costs and explains the same."""

from __future__ import annotations

from ortgpu.explain import explain
from ortgpu.knowledge.paste import prepare

_WARNING = "2024-05-02 10:11:12.345 [W:onnxruntime:Default, device_discovery.cc:164] GPU device discovery failed"
_ERROR = (
    "[E:onnxruntime:Default, provider_bridge_ort.cc:1862 TryGetProviderInfo_CUDA] Failed to load library "
    "libonnxruntime_providers_cuda.so with error: libcublasLt.so.12: cannot open shared object file: No such file or "
    "directory"
)


def test_a_line_repeated_a_thousand_times_is_kept_once_and_still_counts_as_logged() -> None:
    once = prepare(f"{_WARNING}\n{_ERROR}")
    flood = prepare("\n".join([_WARNING] * 1000 + [_ERROR] * 3))
    assert flood.lines == once.lines
    assert flood.logged == once.logged == frozenset({0, 1})


def test_repeats_apart_from_each_other_are_all_kept() -> None:
    paste = prepare("GPU device discovery failed\nsomething else\nGPU device discovery failed")
    assert paste.lines == ("GPU device discovery failed", "something else", "GPU device discovery failed")


def test_a_flood_whose_timestamps_differ_is_kept_once_too() -> None:
    flood = prepare("\n".join(f"2024-05-02 10:11:{n:02}.345 GPU device discovery failed" for n in range(50)))
    assert flood.lines == ("GPU device discovery failed",)


def test_a_flood_of_one_message_explains_as_one_copy_does() -> None:
    once = explain(f"{_WARNING}\n{_ERROR}")
    flood = explain("\n".join([_WARNING] * 1000 + [_ERROR] * 1000))
    assert [m.id for m in flood.matches] == [m.id for m in once.matches]
    assert flood.verdict == once.verdict and flood.matches


def test_two_lines_of_one_length_among_longer_ones_are_not_taken_for_a_hard_wrap() -> None:
    # the prose line and the source line Python echoes under the last frame are both 64 characters: joined as
    # "wrapped", the error after the echoed line was dropped with it and explain recognised nothing
    prose = "When I run the detector on a batch of frames it stops with this:"
    echoed = "    return self._sess.run(output_names, input_feed, run_options)"
    assert len(prose) == len(echoed) >= 60
    error = (
        "onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : "
        "Invalid rank for input: frames Got: 5 Expected: 4 Please fix either the inputs or the model."
    )
    frame = (
        '  File "C:\\app\\lib\\site-packages\\onnxruntime\\capi\\onnxruntime_inference_collection.py", line 220, in run'
    )
    text = "\n".join([prose, "", frame, echoed, error])
    assert error in prepare(text).lines
    assert [m.id for m in explain(text).matches][:1] == ["NG-02"]


def test_a_line_that_starts_a_record_is_not_glued_to_the_line_before_as_a_wrap() -> None:
    # a short traceback whose echoed source line and error line are the only long lines and equally long: taken for
    # a paste hard-wrapped at that width, the error was joined to the echoed line and dropped with it
    error = "onnxruntime.capi.onnxruntime_pybind11_state.NoSuchFile: [ONNXRuntimeError] : 3 : NO_SUCHFILE"
    echoed = "    session = onnxruntime.InferenceSession(MODEL, providers=PROVIDERS)  # load the exported."
    assert len(echoed) == len(error) >= 60
    frame = '  File "infer.py", line 12, in <module>'
    text = "\n".join(["Traceback (most recent call last):", frame, echoed, error])
    assert error in prepare(text).lines


def test_a_terminal_wrap_is_still_undone() -> None:
    message = (
        "Specified provider 'CUDAExecutionProvider' is not in available provider names.Available providers: "
        "'AzureExecutionProvider, CPUExecutionProvider'"
    )
    wrapped = "\n".join(message[i : i + 70] for i in range(0, len(message), 70))
    assert prepare("Running the app prints, every time it starts:\n" + wrapped).lines[-1] == message
