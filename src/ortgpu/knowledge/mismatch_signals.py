"""Structure in a paste where two sides disagree: builder flags, engine caches, bindings, feeds and runtime releases.

Classes, each told by who raises it and what it names, not by one wording:

- `trt_int8_not_enabled`: TensorRT's builder refuses a layer set to INT8 precision (a quantized / QDQ model) because
  INT8 is not enabled in the builder config: the TensorRT EP was not given `trt_int8_enable` (FM-177).
- `trt_engine_deserialize`: a TensorRT EP (TensorRT, NvTensorRTRTX) that cannot deserialize a cached or embedded
  engine: an engine built by another TensorRT version or for another GPU (FM-63).
- `trt_build_seems_stuck`: a paste that says session creation or run is stuck/hangs right after the TensorRT EP took
  the graph (GetCapability, "will run on TensorRT"): TensorRT builds its engines there, which can take minutes (FM-62).
- `feed_name_not_in_metadata`: the C# binding's "Input name: 'x' is not in the metadata" (or output): a feed or fetch
  named something the model does not declare (NG-05).
- `genai_contrib_check`: a type error on a contrib op that onnxruntime-genai's model builder emits (GroupQueryAttention,
  MatMulNBits, ...) at load in a genai paste, the C# `OnnxRuntimeGenAI` included: model and runtime do not pair
  (FM-144).
- `kernel_input_missing`: ORT's own "Missing Input: <name>" from OpKernelContext::Input while running a node, naming
  a weight (a parameter path ending in weight / bias / gamma / beta / scale), not a graph input: the model carries it
  as an initializer, the kernel finds no value for it: a runtime release's regression in that kernel (FM-178). A graph
  input's name there (`attention_mask`) is an input not fed (IO binding, bindings that skip the feed check): no signal.
- `node_float16_tensor`: onnxruntime-node's type check rejecting the data of a float16 tensor (`Tensor.data must be a
  typed array ... for float16 tensors`): the Node binding's float16 support (FM-179).
- `binding_class_missing`: a Java `NoClassDefFoundError` / `ClassNotFoundException` for a class under `ai.onnxruntime`
  that is not a native-load failure: the onnxruntime jar on the classpath is older than the code using it (FM-82).
- `genai_loads_folder`: in an onnxruntime-genai paste, ORT's `Load model from <path>/ failed: Protobuf parsing failed`
  on a path that ends in a separator: genai handed ORT its folder, not the config's model file (FM-180).
- `serving_backend_c_api_crash`: a segfault inside ORT's C API (`OrtApis::...`) in a serving backend (Triton's
  onnxruntime backend): the backend passed ORT an invalid handle, e.g. after a failed Run (FM-181).
Every whole-paste scan is gated by a cheap word test first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.evidence import first_evidence
from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["binding_mismatch"]

_INT8_BUILDER = re.compile(
    r"\bint8 (?:precision )?(?:is )?not (?:configured|enabled|set) (?:in|on|for) the builder\b"
    r"|\bInt8 precision has been set for a layer\b",
    re.IGNORECASE,
)
_DESERIALIZE = re.compile(
    r"\b(?:TensorRT|NvTensorRTRTX|TRT)\w{0,30}(?: EP)? failed to deserialize (?:the |an? )?(?:cuda )?engine\b"
    r"|\bdeserializeCudaEngine\b[^\n]{0,80}?\b(?:failed|returned null|nullptr)\b",
    re.IGNORECASE,
)
_STUCK = re.compile(r"\b(?:stuck|hangs?|hanging|hung|freez(?:es|ing)|never (?:returns|finishes))\b", re.IGNORECASE)
_TRT_TAKES_GRAPH = re.compile(
    r"\bwill run on TensorRT execution provider\b|\btensorrt_execution_provider\.cc(?::\d{1,6})? GetCapability\b",
    re.IGNORECASE,
)
# a slow build would not show an error after the TensorRT EP took the graph
_TRT_FAILED = re.compile(
    r"\[E:onnxruntime|\[(?:E|ERROR)\]|\bTraceback\b|\w(?:Error|Exception):|\bSegmentation fault\b|\bcore dumped\b"
    r"|\bfailed\b"
)
_NOT_IN_METADATA = re.compile(r"\b(?:Input|Output) name: '(?P<name>[^'\n]{1,200})' is not in the metadata\b")
_GENAI = re.compile(r"onnxruntime[_-]?genai|\bgenai[ _]config\b|\bog\.\w{2,30}\(|\bOga\w{2,30}\b", re.IGNORECASE)
_CONTRIB_TYPE_ERROR = re.compile(
    r"\bType Error: Type '[^'\n]{1,40}' of input parameter \([^\n]{0,300}?\) of operator \((?P<op>GroupQueryAttention"
    r"|MultiHeadAttention|RotaryEmbedding|SparseAttention|PagedAttention|MatMulNBits|SkipSimplifiedLayerNormalization"
    r"|SimplifiedLayerNormalization|GatherBlockQuantized)\)"
)
_MISSING_INPUT = re.compile(
    r"\bwhile running (?P<op>\w{1,80}) node\b[^\n]{0,600}?\bMissing Input: (?P<name>\S{1,200})"
    r"|\bOpKernelContext::Input\b[^\n]{0,300}?\bMissing Input: (?P<name2>\S{1,200})"
)
_NODE_FLOAT16 = re.compile(r"\bTensor\.data must be a typed array\b[^\n]{0,40}?\bfor float16 tensors\b", re.IGNORECASE)
_JAVA_CLASS_MISSING = re.compile(
    r"\b(?:NoClassDefFoundError|ClassNotFoundException):? (?P<cls>ai[./]onnxruntime[./][\w./$]{1,120})"
)

_GENAI_FOLDER = re.compile(
    r"\bLoad model from [^\n]{0,300}?[/\\]['\"]? failed:\s{0,3}Protobuf parsing failed", re.IGNORECASE
)
_SEGFAULT = re.compile(r"\bSIGSEGV\b|\bSegmentation fault\b", re.IGNORECASE)
_C_API_FRAME = re.compile(r"\bin OrtApis::(?P<fn>\w{2,80}) ?\(")
_SERVING_BACKEND = re.compile(r"\btritonserver\b|\btriton_?onnxruntime\b|\bbackends/onnxruntime\b", re.IGNORECASE)


def binding_mismatch(paste: Paste) -> Iterator[Signal]:
    """The first line of each mismatch class the paste shows (see the module's docstring)."""
    low = paste.lowered
    if "int8" in low and "builder" in low:
        yield from first_evidence(paste, _INT8_BUILDER, "trt_int8_not_enabled")
    if "deserializ" in low:
        yield from first_evidence(paste, _DESERIALIZE, "trt_engine_deserialize")
    if "tensorrt" in low and ("stuck" in low or "hang" in low or "hung" in low or "freez" in low):
        yield from _trt_build_stuck(paste)
    if "is not in the metadata" in low:
        yield from first_evidence(paste, _NOT_IN_METADATA, "feed_name_not_in_metadata")
    if "genai" in low and "of operator (" in low and _GENAI.search(paste.joined[:200_000]):
        yield from first_evidence(paste, _CONTRIB_TYPE_ERROR, "genai_contrib_check")
    if "missing input: " in low:
        yield from _kernel_input_missing(paste)
    if "float16 tensors" in low:
        yield from first_evidence(paste, _NODE_FLOAT16, "node_float16_tensor")
    if "ai/onnxruntime/" in low or "ai.onnxruntime." in low:
        yield from first_evidence(paste, _JAVA_CLASS_MISSING, "binding_class_missing")
    if "protobuf parsing failed" in low and "genai" in low and _GENAI.search(paste.joined[:200_000]):
        yield from first_evidence(paste, _GENAI_FOLDER, "genai_loads_folder")
    if "ortapis::" in low and ("sigsegv" in low or "segmentation fault" in low) and "triton" in low:
        yield from _serving_c_api_crash(paste)


def _serving_c_api_crash(paste: Paste) -> Iterator[Signal]:
    """A C API frame in a crash report from a serving backend that loads ORT."""
    head = paste.joined[:200_000]
    if _SEGFAULT.search(head) is None or _SERVING_BACKEND.search(head) is None:
        return
    yield from first_evidence(paste, _C_API_FRAME, "serving_backend_c_api_crash")


# a parameter's name: a dotted or slashed path whose last part is a weight kind (graph inputs are plain names)
_WEIGHT_NAME = re.compile(r"[./][\w./-]{0,180}?[./_](?:weight|bias|gamma|beta|scale|kernel)s?$", re.IGNORECASE)


def _kernel_input_missing(paste: Paste) -> Iterator[Signal]:
    for index, line in enumerate(paste.lines):
        m = _MISSING_INPUT.search(line)
        if m is None:
            continue
        name = (m.group("name") or m.group("name2") or "").split("\\", 1)[0].rstrip("\"'.,;)")
        if _WEIGHT_NAME.search(name):
            yield Signal(
                SignalKind.ANTICIPATED, index, paste.starts[index] + m.start(), {"evidence": "kernel_input_missing"}, {}
            )
            return


def _trt_build_stuck(paste: Paste) -> Iterator[Signal]:
    """A stuck/hang report and the TensorRT EP taking the graph, with no error after that line."""
    if _STUCK.search(paste.joined[:200_000]) is None:
        return
    for index, line in enumerate(paste.lines):
        m = _TRT_TAKES_GRAPH.search(line)
        if m is None:
            continue
        after = "\n".join(paste.lines[index + 1 :])[:20_000]
        if _TRT_FAILED.search(after) is None:
            yield Signal(
                SignalKind.ANTICIPATED,
                index,
                paste.starts[index] + m.start(),
                {"evidence": "trt_build_seems_stuck"},
                {},
            )
        return
