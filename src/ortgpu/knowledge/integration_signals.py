"""Structure in a paste: how an app wires ORT in (custom ops, serving configs, its C++ env, per-component providers).

Each recogniser here reads evidence of the integration around the session rather than a GPU library failing: a
custom-domain operator with no custom-op library registered for it, a custom-op library built against a newer ORT API
than the runtime it is registered into, a serving config (Triton's config.pbtxt) whose shapes or types disagree with
the model, a C++ program that hands a null Ort::Env to a session, one component of an app creating its sessions with
the CPU provider only while another component in the same environment gets a GPU provider, a run made slow by the
CUDA provider's EXHAUSTIVE convolution search, and TensorRT's notice that it casts INT64 weights to INT32.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["integration_signals"]

_SCAN = 200_000  # evidence searched across lines looks at the first 200 KB only

# ORT's own operator domains: an op in one of these that is "not a registered function/op" is an opset or build
# problem (NG-08); any other domain belongs to a custom-op library that was not registered.
_ORT_DOMAINS = ("", "ai.onnx", "ai.onnx.ml", "ai.onnx.training", "ai.onnx.preview.training", "com.microsoft")
# the com.microsoft (contrib) schemas an ORT build registers (onnxruntime 1.2x, get_all_operator_schema())
_CONTRIB_NAMES = """
    Attention AttnLSTM BeamSearch BiasAdd BiasDropout BiasGelu BiasSoftmax BiasSplitGelu BifurcationDetector
    BitmaskBiasDropout BitmaskDropout BranchwiseRMSNorm CDist CausalConvWithState ComplexMul ComplexMulConj
    ConvStateReplay ConvTransposeWithDynamicPads CropAndResize DecoderAttention DecoderMaskedMultiHeadAttention
    DecoderMaskedSelfAttention DequantizeBFP DequantizeLinear DequantizeWithOrder DynamicQuantizeLSTM
    DynamicQuantizeMatMul DynamicSparseAttention DynamicTimeWarping EPContext EmbedLayerNormalization EngramGate
    ExpandDims FastGelu FusedConv FusedGemm FusedMatMul FusedMatMulActivation GatedAdd GatedDeltaNet
    GatedDeltaNetStateReplay GatedRMSNorm GatedRelativePositionBias GatherBlockQuantized GatherND GatherPacked Gelu
    GemmFastGelu GemmFloat8 GemmaRotaryEmbedding GreedySearch GridSample GroupNorm GroupQueryAttention
    HyperConnectionLowRankMix HyperConnectionPostMix HyperConnectionPreMix Inverse Irfft IsAllFinite LinearAttention
    LinearAttentionGate LongformerAttention MRotaryEmbedding Mamba2Verify MatMulBlockQuantizedFp4Weight
    MatMulBlockQuantizedFp8Weight MatMulBnb4 MatMulFpQ4 MatMulInteger16 MatMulIntegerToFloat MatMulNBits
    MatMulNBitsMlp MatMulNBitsQLoRA MatMulNBitsQkv MatMulPacked MaxpoolWithMask MoE MoEGroupRouter MoEPacked
    MulInteger MultiHeadAttention MurmurHash3 NGramHashMapping NGramRepeatBlock NhwcConv NhwcFusedConv NhwcMaxPool
    PackedAttention PackedMultiHeadAttention PackedSparseAttentionIndexer PackedSparseAttentionIndexerMerge Pad
    PagedAttention QAttention QEmbedLayerNormalization QGemm QLinearAdd QLinearAveragePool QLinearConcat QLinearConv
    QLinearGlobalAveragePool QLinearLeakyRelu QLinearMul QLinearReduceMean QLinearSigmoid QLinearSoftmax QLinearWhere
    QMoE QOrderedAttention QOrderedGelu QOrderedLayerNormalization QOrderedLongformerAttention QOrderedMatMul
    QuantizeBFP QuantizeLinear QuantizeWithOrder QuickGelu RMSNormRotary Range ReduceSumInteger RelativePositionBias
    RemovePadding RestorePadding Rfft RotaryEmbedding RouterGateUpProj SampleOp Sampling ScaledSiLU SkipGroupNorm
    SkipLayerNormalization SkipSimplifiedLayerNormalization Snpe SparseAttention SparseAttentionIndexer
    SparsePagedAttention SparseToDenseMatMul SpeculativePrefixCommit SwiGLU Tokenizer TorchEmbedding TransposeMatMul
    Trilu UnfoldTensor Unique VarlenCausalConvWithState VarlenNGramHashMapping WhisperBeamSearch
    WordConvEmbedding"""
_CONTRIB_OPS = frozenset(_CONTRIB_NAMES.split())
_UNREGISTERED = re.compile(
    r"(?P<domain>[A-Za-z][\w.]{0,60}):(?P<op>\w{1,80})\((?P<version>-?\d{1,4})\) is not a registered function/op"
)
_API_VERSION = re.compile(
    r"The given version \[(?P<version>\d{1,3})\] is not supported, only version 1 to (?P<max>\d{1,3}) is supported"
)
_CUSTOM_OP_CONTEXT = re.compile(
    r"register_?custom_?ops_?library|RegisterCustomOps|custom[ _-]?op|ortextensions|onnxruntime[_-]extensions"
    r"|add_?op_?library|custom_op_library",
    re.IGNORECASE,
)
# Triton's onnxruntime backend comparing config.pbtxt with the model (onnxruntime.cc / model_config_utils)
_SERVING = re.compile(
    r"the model expects[^\n]{0,200}?but the model configuration specifies"
    r"|model configuration specifies[^\n]{0,200}?but (?:the )?model (?:expects|specifies|has)"
    r"|unexpected (?:datatype|data type|shape)[^\n]{0,200}?(?:model configuration|config\.pbtxt)",
    re.IGNORECASE,
)
_NULL_ENV = re.compile(r"Ort::Env\s{1,3}\w{1,40}\s{0,3}(?:\{\s{0,3}nullptr\s{0,3}\}|\(\s{0,3}nullptr\s{0,3}\))")
_SESSION_USE = re.compile(r"Ort::Session\b|CreateSession", re.IGNORECASE)
# one component's provider list holding only the CPU, another one's (or the environment's) holding CUDA/TensorRT
_PROVIDER_LIST = re.compile(r"\[\s{0,3}(?:'|\")\w{2,40}ExecutionProvider(?:'|\")[^\]\n]{0,600}\]")
_GPU_PROVIDER = re.compile(r"(?:CUDA|Tensorrt|TensorRT|NvTensorRTRTX)ExecutionProvider")
_COMPONENT_LABEL = re.compile(r"\[[\w .-]{2,40}\][^\n]{0,80}?providers?\s{0,3}[:=]\s{0,3}$", re.IGNORECASE)
# the session itself fell back (a provider failed to load or create): FM-33's and the loaders' business
_FELL_BACK = re.compile(
    r"Failed to create (?:CUDA|Tensorrt)ExecutionProvider|fall(?:ing|s)? ?back|\berror\b|\bfailed\b", re.IGNORECASE
)
_ALGO_SEARCH = re.compile(r"cudnn_conv_algo_search[^\n]{0,120}?EXHAUSTIVE", re.IGNORECASE)
_TIMING = re.compile(
    r"\bslow|\btakes?\b|\btook\b|latency|\bdur\b|\"dur\"|kernel_time|\bms\b|seconds|耗时|很慢|变慢|慢", re.IGNORECASE
)
_INT64_CAST = re.compile(
    r"(?:generated with|has) INT64 weights[^\n]{0,200}?(?:does not natively support INT64|cast down to INT32)",
    re.IGNORECASE,
)
# an error of another kind: then the paste is about that, not a warning or a slow run
_ERROR = re.compile(
    r"\[[EF]:onnxruntime|Traceback \(most recent call last\)|\b\w{2,40}(?:Error|Exception)\b\s{0,2}:"
    r"|\[ONNXRuntimeError\]|Segmentation fault|core dumped|\bAborted\b|\bterminate called|\] ERROR\b",
    re.IGNORECASE,
)
_WORDS = (
    "registered function/op",
    "the given version",
    "model configuration",
    "nullptr",
    "executionprovider",
    "cudnn_conv_algo_search",
    "int64 weights",
)


def _signal(
    kind: SignalKind, paste: Paste, index: int, start: int, attributes: dict[str, str | int], **values: str
) -> Signal:
    return Signal(kind, index, paste.starts[index] + start, attributes, values)


def integration_signals(paste: Paste) -> Iterator[Signal]:
    """Every integration signal of the paste (each recogniser yields at most one)."""
    lowered = paste.lowered
    if not any(word in lowered for word in _WORDS):
        return
    head = paste.joined[:_SCAN]
    errors = _ERROR.search(head) is not None
    for found in (
        _custom_op_unregistered(paste),
        _custom_op_api(paste, head),
        _serving_config(paste),
        _null_env(paste, head),
        _component_cpu_only(paste),
        _algo_search(paste, head, errors),
        _int64_cast(paste, errors),
    ):
        if found is not None:
            yield found


def _custom_op_unregistered(paste: Paste) -> Signal | None:
    if "registered function/op" not in paste.lowered:
        return None
    for index, line in enumerate(paste.lines):
        for m in _UNREGISTERED.finditer(line):
            domain, op = m.group("domain"), m.group("op")
            if domain.lower() in _ORT_DOMAINS[1:5] or domain.lower().startswith(("com.microsoft.", "com.ms.")):
                continue
            if domain == "com.microsoft" and op in _CONTRIB_OPS:
                continue
            values = {"domain": domain, "op": op}
            return _signal(SignalKind.CUSTOM_OP_UNREGISTERED, paste, index, m.start(), {}, **values)
    return None


def _custom_op_api(paste: Paste, head: str) -> Signal | None:
    if "the given version" not in paste.lowered or _CUSTOM_OP_CONTEXT.search(head) is None:
        return None
    for index, line in enumerate(paste.lines):
        m = _API_VERSION.search(line)
        if m is not None:
            values = {"version": m.group("version"), "max": m.group("max")}
            return _signal(SignalKind.CUSTOM_OP_API, paste, index, m.start(), {}, **values)
    return None


def _serving_config(paste: Paste) -> Signal | None:
    if "model configuration" not in paste.lowered:
        return None
    for index, line in enumerate(paste.lines):
        m = _SERVING.search(line)
        if m is not None:
            return _signal(SignalKind.SERVING_CONFIG, paste, index, m.start(), {}, said=line[:300])
    return None


def _null_env(paste: Paste, head: str) -> Signal | None:
    if "nullptr" not in paste.lowered or _SESSION_USE.search(head) is None:
        return None
    for index, line in enumerate(paste.lines):
        m = _NULL_ENV.search(line)
        if m is not None:
            return _signal(SignalKind.ENV_NOT_INITIALISED, paste, index, m.start(), {}, code=m.group(0))
    return None


def _component_cpu_only(paste: Paste) -> Signal | None:
    """A provider list of only the CPU next to another list (another component's) that offers a GPU provider."""
    if "executionprovider" not in paste.lowered or _FELL_BACK.search(paste.joined[:_SCAN]) is not None:
        return None
    cpu_only: tuple[int, int] | None = None
    gpu = False
    for index, line in enumerate(paste.lines):
        for m in _PROVIDER_LIST.finditer(line):
            names = re.findall(r"\w{2,40}ExecutionProvider", m.group(0))
            if names and all(name == "CPUExecutionProvider" for name in names):
                # a component's own log line: "[Name] ... providers: [...]", not a REPL's bare output
                if cpu_only is None and _COMPONENT_LABEL.search(line[: m.start()]) is not None:
                    cpu_only = (index, m.start())
            elif any(_GPU_PROVIDER.fullmatch(name) for name in names):
                gpu = True
    if cpu_only is None or not gpu:
        return None
    index, start = cpu_only
    return _signal(SignalKind.WRAPPER_CHECK, paste, index, start, {}, providers=paste.lines[index][:200])


def _algo_search(paste: Paste, head: str, errors: bool) -> Signal | None:
    if errors or "exhaustive" not in paste.lowered or _TIMING.search(head) is None:
        return None
    for index, line in enumerate(paste.lines):
        m = _ALGO_SEARCH.search(line)
        if m is not None:
            attributes: dict[str, str | int] = {"evidence": "algo_search"}
            return _signal(SignalKind.SLOW_GPU, paste, index, m.start(), attributes, said=line[:200])
    return None


def _int64_cast(paste: Paste, errors: bool) -> Signal | None:
    if errors or "int64 weights" not in paste.lowered:
        return None
    for index, line in enumerate(paste.lines):
        m = _INT64_CAST.search(line)
        if m is not None:
            meaning = "TensorRT stores the model's INT64 weights as INT32 while building its engine; the run goes on"
            return _signal(SignalKind.BENIGN_WARNING, paste, index, m.start(), {"name": "trt_int64"}, meaning=meaning)
    return None
