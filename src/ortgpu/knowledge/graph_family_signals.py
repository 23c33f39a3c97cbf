"""Structure in a paste about the graph ORT rewrote or was given: inserted casts, fusions, kernels refusing a node.

Four classes, each told by where ORT's own message comes from, not by one wording:

- `precision_free_cast`: the failing node is one ORT inserted (`InsertedPrecisionFreeCast_...`), which its
  InsertCastTransformer does for float16 nodes placed on the CPU EP: an fp16 model run on the CPU (FM-141).
- `optimizer_fusion`: session initialisation fails inside a graph transformer (a `...Fusion` named, or a source
  file of core/optimizer other than the ones whose failures mean something else), or the graph check rejecting a
  node a fusion created (`Error in Node:fused ...`): an optimizer bug (FM-142).
- `kernel_rejects_node`: session initialisation fails in a kernel's constructor (`onnxruntime::K::K`) on an
  ORT_ENFORCE: the node's inputs/attributes are not what that kernel accepts, the model is invalid for it (NG-11).
- `genai_contrib_check`: onnxruntime-genai runs a model whose contrib op (GroupQueryAttention, RotaryEmbedding, ...)
  fails its input check: the genai model and the onnxruntime it loaded are not a matching pair (FM-144). Also
  the check of ORT's generation ops (BeamSearch, WhisperBeamSearch, GreedySearch, Sampling) on their encoder/decoder
  subgraphs, failing in its own source file (`subgraph_whisper_decoder.cc ... Validate`): a model exported by
  another onnxruntime release's transformers script than the runtime (FM-144).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.evidence import evidence_signal
from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal

__all__ = ["graph_family"]

_INSERTED_CAST = re.compile(r"\bInsertedPrecisionFreeCast_[^\s'\"`]{0,300}")
_INIT_FAILED = re.compile(r"Exception during initiali[sz]ation:?", re.IGNORECASE)
# a graph transformer named by its class (SimplifiedLayerNormFusion, AttentionFusion, ...) or by its source file
_FUSION = re.compile(r"\b(?P<fusion>[A-Z][A-Za-z0-9]{2,60}Fusion)\b(?!\w)")
# the graph check naming a node that a fusion created: ORT names it "fused <original node>" (conv/gemm activation ...)
_FUSED_NODE = re.compile(r"\bError in Node:\s{0,3}fused (?P<node>[^\s:]{1,200})\s{0,3}:")
_OPTIMIZER_FILE = re.compile(r"[\\/]optimizer[\\/](?P<file>[a-z0-9_]{1,60})\.cc(?::\d{1,5})?")
# optimizer files whose failures are another class: a kernel lookup (NG-08 / FM-54), a weights file (NG-09)
_OTHER_CLASS_FILES = frozenset({"optimizer_execution_frame", "transformer_memcpy", "initializer"})
_OTHER_CLASS_WORDS = re.compile(
    r"Failed to find kernel|GetFileLength|External data|open file|No such file|out of memory|CUDA failure"
    r"|CUDNN failure|CUBLAS failure",
    re.IGNORECASE,
)
# a kernel's constructor: onnxruntime::[ns::]Kernel::Kernel in a kernel source file, on an ORT_ENFORCE
_KERNEL_CTOR = re.compile(
    r"[\\/](?:contrib_ops|providers)[\\/][\w\\/]{1,160}\.cc(?::\d{1,5})?\s{1,3}onnxruntime::"
    r"(?P<qualified>(?:\w{1,80}::){1,4}\w{1,80})\b"
)
_ENFORCE = re.compile(r"\bwas false\b")
# an optimizer's own internal check (ORT_ENFORCE / ORT_THROW), not a kernel's status while folding constants
_INTERNAL_CHECK = re.compile(r"\bwas false\b|\bShould be unreachable\b|\bAttempting to get index by a name\b")
_GENAI = re.compile(r"onnxruntime[_-]genai|\bog\.Generator\b|\bOgaGenerator\b", re.IGNORECASE)
# ORT's contrib ops that genai's model builder emits, failing with an input check (not a CUDA error)
_GENAI_NODE = re.compile(
    r"while running (?P<op>GroupQueryAttention|MultiHeadAttention|RotaryEmbedding|SparseAttention|PagedAttention"
    r"|MatMulNBits|SkipSimplifiedLayerNormalization|SimplifiedLayerNormalization|GatherBlockQuantized) node\b"
    r"[^\n]{0,300}?Status Message:\s{0,3}(?P<message>[^\n]{0,300})"
)
# the subgraph check of ORT's generation ops (contrib_ops/cpu/transformers/subgraph_*.cc), named by its source file
_GENERATION_SUBGRAPH = re.compile(
    r"\bsubgraph_(?P<sub>base|gpt|t5_encoder|t5_decoder|whisper_encoder|whisper_decoder)\.cc\b(?::\d{1,5})?"
    r"[^\n]{0,80}?\b(?:Validate|expected|inputs?|outputs?)\b"
)
_INPUT_CHECK = re.compile(
    r"\b(?:must be|must have|is expected|expected to|expects|should be|dimension|shape|Input \d|input '?\w{1,40}'?)\b",
    re.IGNORECASE,
)


def graph_family(paste: Paste) -> Iterator[Signal]:
    """The first line of each graph-family class the paste shows (see the module's docstring)."""
    yield from _optimizer_and_casts(paste)
    if "error in node" in paste.lowered:
        yield from _fused_node_invalid(paste)
    yield from _kernel_rejects_node(paste)
    yield from _genai_contrib_check(paste)


def _optimizer_and_casts(paste: Paste) -> Iterator[Signal]:
    low = paste.lowered
    casts = "insertedprecisionfreecast_" in low
    if not casts and "initiali" not in low:
        return
    fusion_seen = cast_seen = False
    for index, line in enumerate(paste.lines):
        if _OTHER_CLASS_WORDS.search(line):
            continue
        init = _INIT_FAILED.search(line)
        if init is not None and not fusion_seen and _INTERNAL_CHECK.search(line):
            rest = line[init.end() :]
            named = _FUSION.search(rest)
            source = _OPTIMIZER_FILE.search(rest)
            if named is not None or (source is not None and source.group("file") not in _OTHER_CLASS_FILES):
                where = named.group("fusion") if named is not None else source.group("file") if source else ""
                fusion_seen = True
                yield evidence_signal(paste, index, init.start(), "optimizer_fusion", {"optimizer": where})
                continue
        if casts and not cast_seen:
            found = _INSERTED_CAST.search(line)
            if found is not None and ("Non-zero status" in line or "Status Message" in line or init is not None):
                cast_seen = True
                yield evidence_signal(paste, index, found.start(), "precision_free_cast", {"node": found.group(0)})


def _fused_node_invalid(paste: Paste) -> Iterator[Signal]:
    """The graph check failing on a node whose name ORT's fusions gave it ("fused " + the original node's name)."""
    for index, line in enumerate(paste.lines):
        found = _FUSED_NODE.search(line)
        if found is not None:
            yield evidence_signal(paste, index, found.start(), "optimizer_fusion", {"optimizer": "fused node"})
            return


def _kernel_rejects_node(paste: Paste) -> Iterator[Signal]:
    if "initiali" not in paste.lowered or "was false" not in paste.lowered:
        return
    for index, line in enumerate(paste.lines):
        init = _INIT_FAILED.search(line)
        if init is None or not _ENFORCE.search(line) or _OTHER_CLASS_WORDS.search(line):
            continue
        found = _KERNEL_CTOR.search(line, init.end())
        names = found.group("qualified").split("::") if found is not None else []
        if found is not None and names[-1] == names[-2] and not names[-1].endswith("Provider"):
            yield evidence_signal(paste, index, found.start(), "kernel_rejects_node", {"op": names[-1]})
            return


def _genai_contrib_check(paste: Paste) -> Iterator[Signal]:
    if "subgraph_" in paste.lowered:
        for index, line in enumerate(paste.lines):
            sub = _GENERATION_SUBGRAPH.search(line)
            if sub is not None and not _OTHER_CLASS_WORDS.search(line):
                yield evidence_signal(paste, index, sub.start(), "genai_contrib_check", {"op": sub.group("sub")})
                return
    if "genai" not in paste.lowered and "oga" not in paste.lowered:
        return
    if _GENAI.search(paste.joined) is None:
        return
    for index, line in enumerate(paste.lines):
        found = _GENAI_NODE.search(line)
        if found is None or _OTHER_CLASS_WORDS.search(found.group("message")):
            continue
        if _INPUT_CHECK.search(found.group("message")):
            yield evidence_signal(paste, index, found.start(), "genai_contrib_check", {"op": found.group("op")})
            return
