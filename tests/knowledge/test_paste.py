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
