"""Structure in a paste about the model file or the runtime's own CUDA graph: format versions, opsets, shapes, capture.

Classes, each told by where the message comes from, not by one wording:

- `ort_format_version`: a `.ort` (ORT format) model whose format version this build does not read: the model was
  converted by another onnxruntime release (FM-159).
- `caller_stream_capture`: ORT's CUDA graph replayed, or its graphs destroyed, while the caller's stream is capturing
  (CUDA error 900 / cudaErrorStreamCaptureUnsupported in cuda_graph.cc, or named next to cudaStreamBeginCapture):
  the caller's own capture around Run() with ORT's CUDA graph on (FM-160).
- `negative_dim_shape`: a tensor built with a negative dimension (a binding's "Dimensions must be non-negative", ORT's
  "negative value in shape"): a dynamic dimension read from the model's input metadata (-1) used as a size (FM-161).
- `enum_option_number`: cudnn_conv_algo_search given a number where the string options take a name
  (EXHAUSTIVE / HEURISTIC / DEFAULT): a provider-option value not understood (FM-81).
- `cuda_graph_arena`: the BFC arena fails an allocation in a paste that turns ORT's CUDA graph on: capture forbids
  new device allocations, the run needs one (FM-98, after the memory reading).
- `trt_build_timeout`: a TensorRT engine build that timed out (a caller's probe or timeout killed it): slow engine
  builds at session creation (FM-62).
- ORT's old wording for a missing kernel, "No suitable kernel definition found for op X(N)": NG-08's missing kernel.
- a standard ONNX op with "No Op registered for <op> with domain_version of N": the op exists, so the runtime has no
  schema for that domain version: a model stamped with an opset this onnxruntime does not know (NG-07).
Every whole-paste scan is gated by a cheap word test first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.evidence import first_evidence
from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["model_family"]

_ORT_FORMAT_VERSION = re.compile(
    r"\bORT[ _-]format\b[^\n]{0,60}?\bversion\b[^\n]{0,80}?\b(?:is not supported|not supported|unsupported"
    r"|incompatible|cannot be (?:loaded|read))",
    re.IGNORECASE,
)
# the capture error (CUDA 900 by number, name or message) ...
_CAPTURE_ERROR = re.compile(
    r"\bCUDA (?:failure|error) 900\b|\bcudaErrorStreamCaptureUnsupported\b"
    r"|operation not permitted when stream is capturing",
    re.IGNORECASE,
)
# ... from ORT's own CUDA graph (its source file, its manager, the graph launch/destroy calls) or the caller's capture
_ORT_GRAPH = re.compile(
    r"\bcuda_graph\.cc\b|\bCUDAGraph(?:Manager)?\b|\bCudaGraphSet\b|\bcudaGraphLaunch\b|\bcudaGraphExecDestroy\b"
    r"|\benable_cuda_graph\b|\bcudaStreamBeginCapture\b",
    re.IGNORECASE,
)
_NEGATIVE_DIM = re.compile(
    r"\bDimensions must be non-negative\b|\bnegative value in (?:the )?shape\b|\bnegative dimensions? (?:is|are) not"
    r" allowed\b|\bdimension[^\n]{0,20}? must (?:not be negative|be non-?negative|be >= ?0)\b",
    re.IGNORECASE,
)
# the tensor was being built for ORT: an ORT binding's tensor types or the input metadata the dims came from
_ORT_TENSOR = re.compile(
    r"\bDenseTensor\b|\bOrtValue\b|\bOnnxTensor\b|\bNamedOnnxValue\b|\bCreateTensor\w{0,20}\b|\bInputMetadata\b"
    r"|\bget_inputs\(\)|\bGetInputTypeInfo\b|\bGetShape\b|\bonnx ?runtime\b",
    re.IGNORECASE,
)
_NO_OP_REGISTERED = re.compile(r"No Op registered for (?P<op>\w{1,60}) with domain_version of (?P<version>\d{1,3})\b")

_NUMERIC_ALGO_SEARCH = re.compile(
    r"\bcudnn_conv_algo_search\b[\"']?\s{0,3}(?:[:=,]|value\s{0,2}:)\s{0,3}[\"']?(?P<value>\d)\b", re.IGNORECASE
)
_ARENA_FAILED = re.compile(r"Failed to allocate memory for requested buffer|BFCArena::AllocateRawInternal")
_CUDA_GRAPH_ON = re.compile(r"\benable_cuda_graph\b|\bcuda[ _-]?graphs?\b|\bgraph capture\b", re.IGNORECASE)
_TRT_BUILD_TIMEOUT = re.compile(
    r"\b(?:TensorRT|TRT)\b[^\n]{0,40}?\bengine build(?:ing)?\b[^\n]{0,40}?\b(?:timed out|time ?out)\b",
    re.IGNORECASE,
)
_OLD_MISSING_KERNEL = re.compile(r"No suitable kernel definition found for op (?P<op>\w{1,60})\((?P<version>\d{1,3})\)")

# ONNX's standard operators (ai.onnx and ai.onnx.ml): no schema for one of these means the domain version is unknown
_STANDARD_OP_NAMES = """
    Abs Acos Acosh Add AffineGrid And ArgMax ArgMin Asin Asinh Atan Atanh AveragePool BatchNormalization Bernoulli
    BitShift BitwiseAnd BitwiseNot BitwiseOr BitwiseXor BlackmanWindow Cast CastLike Ceil Celu CenterCropPad Clip Col2Im
    Compress Concat ConcatFromSequence Constant ConstantOfShape Conv ConvInteger ConvTranspose Cos Cosh CumSum DFT
    DeformConv DepthToSpace DequantizeLinear Det Div Dropout DynamicQuantizeLinear Einsum Elu Equal Erf Exp Expand
    EyeLike Flatten Floor GRU Gather GatherElements GatherND Gelu Gemm GlobalAveragePool GlobalLpPool GlobalMaxPool
    Greater GreaterOrEqual GridSample GroupNormalization HammingWindow HannWindow HardSigmoid HardSwish Hardmax Identity
    If ImageDecoder InstanceNormalization IsInf IsNaN LRN LSTM LayerNormalization LeakyRelu Less LessOrEqual Log
    LogSoftmax Loop LpNormalization LpPool MatMul MatMulInteger Max MaxPool MaxRoiPool MaxUnpool Mean
    MeanVarianceNormalization MelWeightMatrix Min Mish Mod Mul Multinomial Neg NegativeLogLikelihoodLoss
    NonMaxSuppression NonZero Not OneHot Optional OptionalGetElement OptionalHasElement Or PRelu Pad Pow QLinearConv
    QLinearMatMul QuantizeLinear RNN RandomNormal RandomNormalLike RandomUniform RandomUniformLike Range Reciprocal
    ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceMax ReduceMean ReduceMin ReduceProd ReduceSum ReduceSumSquare
    RegexFullMatch Relu Reshape Resize ReverseSequence RoiAlign Round STFT Scan Scatter ScatterElements ScatterND Selu
    SequenceAt SequenceConstruct SequenceEmpty SequenceErase SequenceInsert SequenceLength SequenceMap Shape Shrink
    Sigmoid Sign Sin Sinh Size Slice Softmax SoftmaxCrossEntropyLoss Softplus Softsign SpaceToDepth Split
    SplitToSequence Sqrt Squeeze StringConcat StringNormalizer StringSplit Sub Sum Tan Tanh TfIdfVectorizer
    ThresholdedRelu Tile TopK Transpose Trilu Unique Unsqueeze Upsample Where Xor ArrayFeatureExtractor Binarizer
    CastMap CategoryMapper DictVectorizer FeatureVectorizer Imputer LabelEncoder LinearClassifier LinearRegressor
    Normalizer OneHotEncoder SVMClassifier SVMRegressor Scaler TreeEnsembleClassifier TreeEnsembleRegressor
    TreeEnsemble ZipMap"""
_STANDARD_OPS = frozenset(_STANDARD_OP_NAMES.split())


def model_family(paste: Paste) -> Iterator[Signal]:
    """The first line of each model-family class the paste shows (see the module's docstring)."""
    low = paste.lowered
    if "format" in low:
        yield from first_evidence(paste, _ORT_FORMAT_VERSION, "ort_format_version")
    if ("900" in low or "capturing" in low or "captureunsupported" in low) and _ORT_GRAPH.search(
        paste.joined[:200_000]
    ):
        yield from first_evidence(paste, _CAPTURE_ERROR, "caller_stream_capture")
    if "negative" in low and _ORT_TENSOR.search(paste.joined[:200_000]):
        yield from first_evidence(paste, _NEGATIVE_DIM, "negative_dim_shape")
    if "cudnn_conv_algo_search" in low:
        yield from first_evidence(paste, _NUMERIC_ALGO_SEARCH, "enum_option_number")
    if "allocate" in low and ("graph" in low) and _CUDA_GRAPH_ON.search(paste.joined[:200_000]):
        yield from first_evidence(paste, _ARENA_FAILED, "cuda_graph_arena")
    if "timed out" in low or "timeout" in low or "time out" in low:
        yield from first_evidence(paste, _TRT_BUILD_TIMEOUT, "trt_build_timeout")
    if "no suitable kernel" in low:
        for index, line in enumerate(paste.lines):
            m = _OLD_MISSING_KERNEL.search(line)
            if m is not None:
                values = {"op": m.group("op")}
                yield Signal(
                    SignalKind.MISSING_KERNEL, index, paste.starts[index] + m.start(), {"op": m.group("op")}, values
                )
                break
    if "no op registered" in low:
        yield from _standard_op_unknown_version(paste)


def _standard_op_unknown_version(paste: Paste) -> Iterator[Signal]:
    """No schema for a standard ONNX op at the model's domain version: the opset is past what the runtime knows."""
    for index, line in enumerate(paste.lines):
        m = _NO_OP_REGISTERED.search(line)
        if m is None or m.group("op") not in _STANDARD_OPS:
            continue
        # placed at the line's start: the opset reading comes before the generic missing-kernel one on that line
        attributes: dict[str, str | int] = {"component": "opset"}
        yield Signal(SignalKind.MODEL_TOO_NEW, index, paste.starts[index], attributes, {"op": m.group("op")})
        return
