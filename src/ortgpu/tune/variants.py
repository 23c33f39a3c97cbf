"""Model files a trial can run: the original, an fp16 conversion, a transformer-optimizer fusion, or both.

Each variant is written once into the tune's folder and named by what made it; a variant that cannot be made
(the optimizer fused nothing, the converter failed) is a reason every trial that needs it is pruned with.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ortgpu.errors import OrtgpuError
from ortgpu.fp16.convert import convert_to_fp16
from ortgpu.runtime.guard import import_onnxruntime
from ortgpu.tune.space import ModelTraits

__all__ = [
    "FUSED_OPS",
    "Variant",
    "VariantError",
    "convert_fp16_for_tune",
    "fuse_transformer",
    "model_traits",
    "prepare_variant",
    "sha256_file",
]

# Ops ORT's transformer optimizer writes when a fusion applied (com.microsoft domain or fused ONNX ops).
FUSED_OPS = (
    "Attention",
    "MultiHeadAttention",
    "SkipLayerNormalization",
    "EmbedLayerNormalization",
    "BiasGelu",
    "FastGelu",
    "Gelu",
    "LayerNormalization",
    "SkipSimplifiedLayerNormalization",
    "BiasSplitGelu",
)


class VariantError(OrtgpuError):
    """A model variant cannot be made; its message is why the trials needing it were pruned."""


@dataclass(frozen=True)
class Variant:
    """One model file trials run. ``fused``: op type -> count the optimizer produced; ``notes``: what was done."""

    key: str
    path: Path
    sha256: str
    precision: str  # "fp32" or "fp16"
    fusion: str  # "none" or "transformer"
    fused: Mapping[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_traits(op_types: Mapping[str, int], open_dims: bool, conv1d: bool = False) -> ModelTraits:
    """What the search space depends on, from the model's op histogram (``ModelInfo.op_types``)."""
    ops = dict(op_types)
    attention = ops.get("Softmax", 0) > 0 and ops.get("MatMul", 0) >= 2
    norm = ops.get("LayerNormalization", 0) > 0 or ops.get("ReduceMean", 0) >= 2
    return ModelTraits(
        has_conv=ops.get("Conv", 0) > 0 or ops.get("ConvTranspose", 0) > 0,
        has_conv1d=conv1d,
        transformer_like=attention and norm,
        open_dims=open_dims,
        op_types=ops,
    )


def has_conv1d(model_path: Path) -> bool:
    """A Conv whose weight is rank 3 (a 1-D convolution)."""
    import onnx

    model = onnx.load(str(model_path), load_external_data=False)
    ranks = {t.name: len(t.dims) for t in model.graph.initializer}
    return any(n.op_type == "Conv" and len(n.input) > 1 and ranks.get(n.input[1]) == 3 for n in model.graph.node)


def convert_fp16_for_tune(source: Path, target: Path) -> tuple[str, ...]:
    """fp32 -> fp16 through `ortgpu fp16`'s converter (ORT's, inputs and outputs kept fp32, the graph repaired and
    sorted topologically: ORT's converter alone leaves input Casts after their consumers, which the ONNX checker
    refuses). The accuracy gate is the tune trial's parity check against the fp32 CPU EP, on every trial."""
    import onnx

    converted = convert_to_fp16(onnx.load(str(source)), keep_io_types=True)
    _save(converted.model, target)
    return ("fp16 (ortgpu fp16: onnxruntime.transformers.float16, keep_io_types, sorted)",)


def fuse_transformer(source: Path, target: Path, use_gpu: bool) -> dict[str, int]:
    """ORT's transformer optimizer (model type bert, Python fusions only: opt_level 0); the fused op counts.

    Raises VariantError when it fused nothing (not a model type it knows) or failed.
    """
    import_onnxruntime()
    from onnxruntime.transformers.optimizer import optimize_model

    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            optimized = optimize_model(str(source), model_type="bert", opt_level=0, use_gpu=use_gpu)
            stats = optimized.get_fused_operator_statistics()
    except Exception as exc:  # the optimizer raises anything from its pattern matchers: a reason, not a crash
        raise VariantError(f"ORT's transformer optimizer failed: {type(exc).__name__}: {exc}", None) from None
    fused = {op: int(count) for op, count in stats.items() if op in FUSED_OPS and count}
    if not fused:
        raise VariantError(
            "ORT's transformer optimizer fused nothing (not an attention pattern it knows: export with eager "
            "attention, e.g. transformers attn_implementation='eager')",
            None,
        )
    _save(optimized.model, target)
    return fused


def _save(model: Any, target: Path) -> None:
    import onnx

    from ortgpu.atomic import atomic_write

    domains = {node.domain for node in model.graph.node if node.domain not in ("", "ai.onnx")}
    declared = {o.domain for o in model.opset_import}
    for domain in sorted(domains - declared):  # the optimizer writes contrib ops without always declaring them
        model.opset_import.append(onnx.helper.make_opsetid(domain, 1))

    external = model.ByteSize() > 1_800_000_000  # protobuf's 2 GB limit: weights go next to it
    if external:
        onnx.save_model(model, str(target), save_as_external_data=True, location=target.name + ".data")
        return
    data = model.SerializeToString()
    atomic_write(target, lambda handle: handle.write(data))


def prepare_variant(source: Path, precision: str, fusion: str, folder: Path, use_gpu: bool) -> Variant:
    """The model file for (precision, fusion), made in ``folder`` unless already there."""
    key = f"{'fp16' if precision == 'fp16' else 'fp32'}-{fusion}"
    if key == "fp32-none":
        return Variant(key, Path(source), sha256_file(source), "fp32", "none")
    folder.mkdir(parents=True, exist_ok=True)
    stem = Path(source).stem
    notes: list[str] = []
    fused: dict[str, int] = {}
    current = Path(source)
    if fusion == "transformer":
        fused_path = folder / f"{stem}.fused.onnx"
        fused = fuse_transformer(current, fused_path, use_gpu)
        notes.append("ORT transformer optimizer: " + ", ".join(f"{op} x{n}" for op, n in sorted(fused.items())))
        current = fused_path
    if precision == "fp16":
        target = folder / f"{stem}{'.fused' if fusion == 'transformer' else ''}.fp16.onnx"
        try:
            notes += convert_fp16_for_tune(current, target)
        except Exception as exc:  # the converter can fail on odd graphs: a reason for the trials needing it
            raise VariantError(f"fp16 conversion failed: {type(exc).__name__}: {exc}", None) from None
        current = target
    return Variant(
        key, current, sha256_file(current), "fp16" if precision == "fp16" else "fp32", fusion, fused, tuple(notes)
    )
