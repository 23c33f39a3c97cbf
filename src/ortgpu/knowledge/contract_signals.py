"""Structure in a paste where one component breaks another's contract: plugin ranks, tokenizers, APIs, options, paths.

Classes, each told by who raises it and what it names, not by one wording:

- `trt_plugin_assert`: a TensorRT plugin's own assertion (`Assertion failed: ...` with a `*Plugin` source file) in a
  paste that runs TensorRT: the node's inputs are outside what the plugin implements (FM-74).
- `genai_tokenizer_class`: onnxruntime-genai's tokenizer does not know the model's tokenizer class (`Unsupported
  tokenizer class`): the genai stack is older than the model's tokenizer config (FM-109).
- `genai_api_removed`: an AttributeError on an onnxruntime_genai object (`GeneratorParams`, `Generator`, `Model`,
  ...): code written against another onnxruntime-genai API (FM-167).
- `options_length_mismatch`: `providers` and `provider_options` of different lengths (ORT's message or a report of
  it): the options list must have one entry per provider (FM-81).
- `model_path_missing`: a library's "model file ... should exist / does not exist", or a model loaded from a Windows
  drive path written with a leading slash (`/C:/...`, a classpath URL's path): the file is not where it is read (NG-09).
- `ort_model_verification`: `LoadOrtModel... ORT model verification failed`: a `.ort` file this build cannot verify
  (another release's format, or a damaged file) (FM-159).
- `kernel_def_conflict`: `Failed to add kernel for X: Conflict with existing kernel def hash`: a kernel registered
  twice (sessions created concurrently from threads in older releases, or two provider libraries) (FM-168).
- `arena_alloc_failed`: an exception raised in ORT's bfc_arena.cc from the arena's allocation (the source location
  and function, even where the paste cuts the message after them): out of memory in the arena (FM-46).
- `serving_dtype_unsupported`: a serving app's ONNX Runtime backend refusing a dtype the app was started with
  (`Could not start ... backend ... DType float16 is not supported`) (FM-169).
- `uninitialised_cuda_options`: C/C++ code declaring an `OrtCUDAProviderOptions` without an initialiser (the C
  struct of ORT <= 1.8 has no constructor, so the fields not set hold garbage) and a crash (segfault, access
  violation): the provider read those fields (FM-81).
Every whole-paste scan is gated by a cheap word test first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.evidence import first_evidence
from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["component_contract"]

_PLUGIN_SOURCE = re.compile(r"\b\w{1,60}Plugin\w{0,40}(?:/\w{1,80})?\.(?:cu|cpp|h)(?::\d{1,6})?\b")
_TRT_CONTEXT = re.compile(r"tensorrt|\bTRT\b|nvinfer", re.IGNORECASE)
_TOKENIZER_CLASS = re.compile(r"\bUnsupported tokenizer class\b", re.IGNORECASE)
_GENAI = re.compile(r"\bonnxruntime[_-]genai\b|\bimport onnxruntime_genai\b|\bog\.\w{2,30}\(", re.IGNORECASE)
_GENAI_ATTRIBUTE = re.compile(
    r"['\"]?(?:onnxruntime_genai\.)+(?:onnxruntime_genai\.)?(?P<cls>\w{2,40})['\"]? object has no attribute"
    r" ['\"](?P<attr>\w{1,60})['\"]"
    r"|\bmodule ['\"]onnxruntime_genai['\"] has no attribute ['\"](?P<fn>\w{1,60})['\"]"
)
_OPTIONS_LENGTH = re.compile(
    r"\bprovider_options\b[^\n]{0,80}?\b(?:same length|length (?:of|than|as)|lengths? (?:differ|mismatch|do not match))"
    r"|\b(?:same length|lengths? (?:differ|mismatch|do not match))\b[^\n]{0,80}?\bprovider_options\b",
    re.IGNORECASE,
)
_MODEL_FILE_MISSING = re.compile(
    r"\bmodel[ _-]?(?:file|path)\b[^\n]{0,200}?\b(?:should exist|does not exist|doesn't exist|not exists?)\b",
    re.IGNORECASE,
)
_SLASH_DRIVE = re.compile(r"\bLoad model (?:from )?['\"]?/[A-Za-z]:/[^\n]{0,300}?failed", re.IGNORECASE)
_ORT_VERIFICATION = re.compile(r"\bORT (?:format )?model verification failed\b", re.IGNORECASE)
_KERNEL_CONFLICT = re.compile(
    r"\bFailed to add kernel for \w{1,80}\b[^\n]{0,80}?\bConflict with existing kernel def hash\b", re.IGNORECASE
)
# the arena's allocation failing (its source file and function), also where the message after them was cut off
_ARENA_RAISED = re.compile(r"\bbfc_arena\.cc\b(?::\d{1,6})?[^\n]{0,80}?\bBFCArena::(?:AllocateRawInternal|Extend)\b")
# a declaration with no initialiser ("OrtCUDAProviderOptions o;"), not "o{}", "o = {}", a pointer or the V2 handle
_BARE_CUDA_OPTIONS = re.compile(r"\bOrtCUDAProviderOptions\s{1,3}\w{1,60}\s{0,3};")
_CRASH = re.compile(
    r"Segmentation fault|\bSIGSEGV\b|core dumped|0xC0000005|access violation|访问冲突|-1073741819|3221225477",
    re.IGNORECASE,
)
_SERVING_DTYPE = re.compile(
    r"\bCould not start (?:\w{1,10} )?backend\b[^\n]{0,120}?\bD[Tt]ype \w{1,20} is not supported\b", re.IGNORECASE
)


def component_contract(paste: Paste) -> Iterator[Signal]:
    """The first line of each contract class the paste shows (see the module's docstring)."""
    low = paste.lowered
    if "assertion failed" in low and "plugin" in low and _runs_tensorrt(paste):
        yield from _plugin_assert(paste)
    if "tokenizer class" in low and _GENAI.search(paste.joined[:200_000]):
        yield from first_evidence(paste, _TOKENIZER_CLASS, "genai_tokenizer_class")
    if "has no attribute" in low and "onnxruntime_genai" in low:
        yield from first_evidence(paste, _GENAI_ATTRIBUTE, "genai_api_removed")
    if "provider_options" in low and "length" in low:
        yield from first_evidence(paste, _OPTIONS_LENGTH, "options_length_mismatch")
    if "exist" in low and "model" in low:
        yield from first_evidence(paste, _MODEL_FILE_MISSING, "model_path_missing")
    if ":/" in low and "load model" in low:
        yield from first_evidence(paste, _SLASH_DRIVE, "model_path_missing")
    if "verification failed" in low:
        yield from first_evidence(paste, _ORT_VERIFICATION, "ort_model_verification")
    if "kernel def hash" in low:
        yield from first_evidence(paste, _KERNEL_CONFLICT, "kernel_def_conflict")
    if "bfc_arena.cc" in low:
        yield from first_evidence(paste, _ARENA_RAISED, "arena_alloc_failed")
    if "ortcudaprovideroptions" in low and _CRASH.search(paste.joined[:200_000]):
        yield from first_evidence(paste, _BARE_CUDA_OPTIONS, "uninitialised_cuda_options")
    if "dtype" in low and "backend" in low:
        yield from first_evidence(paste, _SERVING_DTYPE, "serving_dtype_unsupported")


def _runs_tensorrt(paste: Paste) -> bool:
    """TensorRT named in the text or as the origin of a logged line (the log prefix is cut off from the lines)."""
    return any("tensorrt" in origin.lower() for origin in paste.origins) or bool(
        _TRT_CONTEXT.search(paste.joined[:200_000])
    )


def _plugin_assert(paste: Paste) -> Iterator[Signal]:
    """An assertion line with a TensorRT plugin's source file on it or on the next two lines."""
    for index, line in enumerate(paste.lines):
        if "Assertion failed" not in line:
            continue
        window = "\n".join(paste.lines[index : index + 3])
        if _PLUGIN_SOURCE.search(window):
            yield Signal(SignalKind.ANTICIPATED, index, paste.starts[index], {"evidence": "trt_plugin_assert"}, {})
            return
