"""Structure in a paste where two parts that must be a matched pair disagree, told by who reports it, not by wording.

- `unknown_allocation_device`: a binding's own error that it does not know the allocation-device name an EP
  reported for a value (the Rust ort crate's `UnknownAllocationDevice("DML CPU")`, any binding's "unknown allocation
  / memory device"): the session ran; the binding cannot wrap the result (FM-200).
- `openvino_default_device`: the OpenVINO EP is in the session's providers, the run stays on the CPU, OpenVINO lists
  a GPU, and no `device_type` is set for the provider: OpenVINO used its default device (FM-201).
- `function_body_opset`: the graph check rejects a node with no name (one ORT created by expanding an ONNX function
  body, such as LayerNormalization's) for an attribute the model's opset turned into an input (`axes`, `split`,
  ...): the body was written for an older opset than the model (FM-202).
- `genai_own_library`: the onnxruntime-genai extension module cannot load its own native library
  (`libonnxruntime-genai.dylib/.so`): a packaging problem of that genai wheel (FM-203).
- `ort_python_api_too_old`: an InferenceSession constructor (named by Python 3.10+, or a bare `__init__()` refusing
  `provider_options`, which only ORT's session takes, or `providers` where the paste names an InferenceSession)
  refuses one of its keywords: the installed onnxruntime predates that keyword (FM-204). Another class named as the
  one refusing it is that library's own API, not onnxruntime's.
Every whole-paste scan is gated by a cheap word test first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.evidence import evidence_signal, first_evidence
from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal

__all__ = ["pairings"]

_UNKNOWN_DEVICE = re.compile(r"\bUnknown[ _]?(?:Allocation|Memory)[ _]?Device\b", re.IGNORECASE)

_OPENVINO_EP = re.compile(r"\bOpenVINO(?:ExecutionProvider|\s?EP)\b|--execution-provider[ =]openvino\b", re.IGNORECASE)
_ON_CPU = re.compile(
    r"\b(?:runs?|running|stays?|staying|falls? back|fallback|defaults?|defaulting|executes?|uses?|using)\b"
    r"[^\n]{0,30}?\b(?:on|to)\s(?:the\s)?CPU\b"
    r"|\baccelerator:\s{0,3}CPU\b",
    re.IGNORECASE,
)
# OpenVINO's own device list with a GPU in it (`Core().available_devices` -> ['CPU', 'GPU'])
_OPENVINO_GPU = re.compile(r"\bavailable_devices\b|\[\s?['\"]CPU['\"],\s?['\"]GPU(?:\.\d)?['\"]")
_DEVICE_SET = re.compile(r"\bdevice_type['\"]?\s{0,3}[:=]", re.IGNORECASE)

# a node with no name (ORT's function expansion) rejected for an attribute that became an input in a later opset
_FUNCTION_BODY = re.compile(
    r"\bIn Node,\s{0,3}\(\"\",\s{0,3}(?P<op>Reduce[A-Za-z]{1,12}|Squeeze|Unsqueeze|Split|Pad|Slice|Resize)\b"
    r"[^\n]{0,600}?\bUnrecognized attribute:\s{0,3}(?P<attr>axes|split|pads|starts|ends|scales|sizes)\b"
)

_GENAI_OWN_LIBRARY = re.compile(
    r"\bLibrary not loaded:\s{0,3}\S{0,200}?(?<![\w-])libonnxruntime[-_]genai\.dylib\b"
    r"|(?<![\w-])libonnxruntime[-_]genai\.so(?:\.\d{1,6}){0,3}\s{0,3}:\s{0,3}cannot open shared object file",
    re.IGNORECASE,
)

# Python 3.10+ names the class (`InferenceSession.__init__()`); older Pythons print a bare `__init__()`
_SESSION_KEYWORD = re.compile(
    r"(?:\b(?P<cls>\w{1,80})\.|(?<![\w.]))__init__\(\) got an unexpected keyword argument"
    r" '(?P<kw>provider_options|providers|sess_options)'"
)


def pairings(paste: Paste) -> Iterator[Signal]:
    """The first line of each pairing class the paste shows (see the module's docstring)."""
    low = paste.lowered
    if "device" in low and ("allocation" in low or "memory" in low):
        yield from first_evidence(paste, _UNKNOWN_DEVICE, "unknown_allocation_device")
    if "openvino" in low and _openvino_default_device(paste):
        yield from first_evidence(paste, _OPENVINO_EP, "openvino_default_device")
    if "unrecognized attribute" in low:
        yield from first_evidence(paste, _FUNCTION_BODY, "function_body_opset")
    if "onnxruntime-genai" in low or "onnxruntime_genai" in low:
        yield from first_evidence(paste, _GENAI_OWN_LIBRARY, "genai_own_library")
    if "unexpected keyword argument" in low:
        yield from _session_keyword(paste)


def _openvino_default_device(paste: Paste) -> bool:
    text = paste.joined[:200_000]
    return (
        _OPENVINO_EP.search(text) is not None
        and _ON_CPU.search(text) is not None
        and _OPENVINO_GPU.search(text) is not None
        and _DEVICE_SET.search(text) is None
    )


def _session_keyword(paste: Paste) -> Iterator[Signal]:
    session_named = "inferencesession" in paste.lowered
    for index, line in enumerate(paste.lines):
        found = _SESSION_KEYWORD.search(line)
        if found is None:
            continue
        cls = found.group("cls")
        if cls is not None:
            ours = cls.endswith("InferenceSession")
        else:
            ours = found.group("kw") == "provider_options" or session_named
        if ours:
            yield evidence_signal(paste, index, found.start(), "ort_python_api_too_old")
        return
