"""The search space: each lever a real ORT setting, offered only where the model and the EP make it mean something.

Levers are declared once (name, choices, when they apply); :func:`suggest` asks an Optuna trial for the ones that
apply (define-by-run, so a lever that does not apply is never sampled), :func:`prune_reason` refuses combinations
that cannot work before anything runs, and :func:`grid` lists the whole space (for its size and for grid search).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ortgpu.ep import ExecutionProvider

__all__ = [
    "DEFAULTS",
    "LEVERS",
    "Lever",
    "ModelTraits",
    "SpaceContext",
    "combinations",
    "defaults_for",
    "grid",
    "placement_key",
    "prune_reason",
    "signature",
    "suggest",
    "variant_key",
]


@dataclass(frozen=True)
class ModelTraits:
    """What the levers depend on, read from the model once."""

    has_conv: bool = False
    has_conv1d: bool = False
    transformer_like: bool = False  # attention-shaped (MatMul + Softmax + LayerNorm pattern): ORT's optimizer may fuse
    open_dims: bool = False  # some input dim is symbolic or unknown
    op_types: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class SpaceContext:
    """The space for one tune: the model, the EP, the CPU cores, whether the batch can be pinned."""

    traits: ModelTraits
    ep: ExecutionProvider
    cores: int = field(default_factory=lambda: os.cpu_count() or 1)
    fixed_batch: bool = True  # one batch per config (a latency sweep over batches leaves the dims open)


Applies = Callable[[SpaceContext, Mapping[str, Any]], bool]


@dataclass(frozen=True)
class Lever:
    """One setting the search may change. ``choices`` may depend on the context; ``applies`` on the context and
    on the levers chosen before it (levers are sampled in declaration order)."""

    name: str
    help: str
    choices: Callable[[SpaceContext], tuple[Any, ...]]
    applies: Applies = lambda ctx, params: True
    where: str = "session"  # "session" [session], "ep" provider option, "plan" how tune builds and runs it


def _gpu(ctx: SpaceContext, params: Mapping[str, Any]) -> bool:
    return ctx.ep.is_gpu


def _cuda(ctx: SpaceContext, params: Mapping[str, Any]) -> bool:
    return ctx.ep is ExecutionProvider.CUDA


def _cpu(ctx: SpaceContext, params: Mapping[str, Any]) -> bool:
    return ctx.ep is ExecutionProvider.CPU


def _conv(ctx: SpaceContext, params: Mapping[str, Any]) -> bool:
    return _cuda(ctx, params) and ctx.traits.has_conv


def _threads(ctx: SpaceContext) -> tuple[int, ...]:
    return tuple(sorted({0, 1, max(1, ctx.cores // 2), ctx.cores}))


LEVERS: tuple[Lever, ...] = (
    Lever(
        "precision",
        "fp32 (TF32 off), tf32 (fp32 weights, TF32 tensor cores: ORT's CUDA default) or fp16 (the model converted, "
        "inputs and outputs kept fp32); accuracy-gated against the fp32 CPU EP",
        lambda ctx: ("tf32", "fp32", "fp16") if ctx.ep is ExecutionProvider.CUDA else ("fp32", "fp16"),
        _gpu,
        "plan",
    ),
    Lever(
        "fusion",
        "ORT's transformer optimizer (onnxruntime.transformers.optimizer, model type bert): fuses Attention, "
        "SkipLayerNormalization, BiasGelu... on attention-shaped models",
        lambda ctx: ("none", "transformer"),
        lambda ctx, params: ctx.traits.transformer_like,
        "plan",
    ),
    Lever(
        "io",
        "numpy in/out (run), data kept on the device (iobinding), or CUDA graph replay (cudagraph)",
        lambda ctx: ("run", "iobinding", "cudagraph") if ctx.ep.is_gpu else ("run", "iobinding"),
        where="plan",
    ),
    Lever(
        "fix_dims",
        "pin the open input dims to the tuned shapes (free-dimension overrides): ORT folds the shape nodes",
        lambda ctx: (False, True),
        lambda ctx, params: ctx.traits.open_dims and ctx.fixed_batch,
        "plan",
    ),
    Lever("graph_optimization_level", "ORT graph optimisations", lambda ctx: ("all", "extended", "basic")),
    Lever(
        "execution_mode",
        "run graph branches one at a time or in parallel",
        lambda ctx: ("sequential", "parallel"),
        _cpu,
    ),
    Lever("intra_op_num_threads", "threads inside one operator (0: ORT picks)", _threads, _cpu),
    Lever(
        "inter_op_num_threads",
        "threads running operators in parallel (parallel mode)",
        lambda ctx: tuple(sorted({0, 2, ctx.cores})),
        lambda ctx, params: _cpu(ctx, params) and params.get("execution_mode") == "parallel",
    ),
    Lever(
        "cudnn_conv_algo_search",
        "how cuDNN picks convolution algorithms",
        lambda ctx: ("EXHAUSTIVE", "HEURISTIC", "DEFAULT"),
        _conv,
        "ep",
    ),
    Lever("cudnn_conv_use_max_workspace", "cuDNN workspace while searching", lambda ctx: (True, False), _conv, "ep"),
    Lever(
        "cudnn_conv1d_pad_to_nc1d",
        "1-D convolutions as [N, C, 1, D]",
        lambda ctx: (False, True),
        lambda ctx, params: _cuda(ctx, params) and ctx.traits.has_conv1d,
        "ep",
    ),
    Lever("prefer_nhwc", "NHWC convolution kernels", lambda ctx: (False, True), _conv, "ep"),
    Lever("fuse_conv_bias", "cuDNN frontend Conv+bias fusion (ORT >= 1.20)", lambda ctx: (False, True), _conv, "ep"),
    Lever("do_copy_in_default_stream", "copies on the compute stream", lambda ctx: (True, False), _cuda, "ep"),
    Lever(
        "arena_extend_strategy",
        "how the CUDA arena grows",
        lambda ctx: ("kNextPowerOfTwo", "kSameAsRequested"),
        _cuda,
        "ep",
    ),
    Lever("use_ep_level_unified_stream", "one CUDA stream for the EP", lambda ctx: (False, True), _cuda, "ep"),
    Lever(
        "trt_fp16_enable",
        "TensorRT engines with FP16 kernels",
        lambda ctx: (False, True),
        lambda ctx, params: ctx.ep is ExecutionProvider.TENSORRT,
        "ep",
    ),
    Lever(
        "trt_builder_optimization_level",
        "TensorRT builder effort",
        lambda ctx: (3, 5),
        lambda ctx, params: ctx.ep is ExecutionProvider.TENSORRT,
        "ep",
    ),
)

# What ORT does when nothing is set: the first trial of every tune, the base of the speed-ups.
DEFAULTS: dict[str, Any] = {
    "precision": "tf32",
    "fusion": "none",
    "io": "run",
    "fix_dims": False,
    "graph_optimization_level": "all",
    "execution_mode": "sequential",
    "intra_op_num_threads": 0,
    "inter_op_num_threads": 0,
    "cudnn_conv_algo_search": "EXHAUSTIVE",
    "cudnn_conv_use_max_workspace": True,
    "cudnn_conv1d_pad_to_nc1d": False,
    "prefer_nhwc": False,
    "fuse_conv_bias": False,
    "do_copy_in_default_stream": True,
    "arena_extend_strategy": "kNextPowerOfTwo",
    "use_ep_level_unified_stream": False,
    "trt_fp16_enable": False,
    "trt_builder_optimization_level": 3,
}


def _lever(name: str) -> Lever:
    return next(lever for lever in LEVERS if lever.name == name)


def defaults_for(ctx: SpaceContext) -> dict[str, Any]:
    """ORT's defaults, restricted to the levers that apply here."""
    params: dict[str, Any] = {}
    for lever in LEVERS:
        if lever.applies(ctx, params):
            default = DEFAULTS[lever.name]
            choices = lever.choices(ctx)
            params[lever.name] = default if default in choices else choices[0]
    return params


def suggest(trial: Any, ctx: SpaceContext) -> dict[str, Any]:
    """Ask an Optuna trial for every lever that applies, in declaration order."""
    params: dict[str, Any] = {}
    for lever in LEVERS:
        if lever.applies(ctx, params):
            params[lever.name] = trial.suggest_categorical(lever.name, list(lever.choices(ctx)))
    return params


def grid(ctx: SpaceContext) -> Iterator[dict[str, Any]]:
    """Every combination of the space (conditional levers expanded only where they apply)."""

    def expand(index: int, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if index == len(LEVERS):
            yield dict(params)
            return
        lever = LEVERS[index]
        if not lever.applies(ctx, params):
            yield from expand(index + 1, params)
            return
        for choice in lever.choices(ctx):
            params[lever.name] = choice
            yield from expand(index + 1, params)
            del params[lever.name]

    yield from expand(0, {})


def signature(params: Mapping[str, Any]) -> str:
    """A stable text key of a parameter set (duplicates a sampler proposes again are measured once)."""
    return ";".join(f"{k}={params[k]}" for k in sorted(params))


def prune_reason(params: Mapping[str, Any], ctx: SpaceContext, learned: Mapping[str, str] | None = None) -> str | None:
    """Why this combination cannot work, known before running it (None: run it).

    ``learned``: constraints found by earlier trials, keyed by :func:`constraint_key`-style strings (e.g. nodes on
    the CPU for a model variant with open dims).
    """
    learned = learned or {}
    if params.get("io") == "cudagraph":
        if ctx.traits.open_dims and not params.get("fix_dims"):
            return "a CUDA graph needs fixed shapes: the model's open dims are left open (fix_dims off)"
        key = placement_key(params)
        if key in learned:
            return f"a CUDA graph needs every node on the GPU: {learned[key]}"
    if params.get("fuse_conv_bias") and not params.get("prefer_nhwc"):
        return (
            "fuse_conv_bias without prefer_nhwc: cuDNN's frontend has no NCHW engine for it ('No valid engine "
            "configs' at the first Conv, seen on the H200 with ORT 1.31)"
        )
    variant = variant_key(params)
    if variant in learned:
        return learned[variant]
    return None


def variant_key(params: Mapping[str, Any]) -> str:
    """The model file a trial runs: precision and fusion decide it."""
    precision = "fp16" if params.get("precision") == "fp16" else "fp32"
    return f"variant:{precision}:{params.get('fusion', 'none')}"


def placement_key(params: Mapping[str, Any]) -> str:
    """What decides whether every node lands on the GPU: the model file, the fixed dims, the optimisation level."""
    return f"placement:{variant_key(params)}:{bool(params.get('fix_dims'))}:{params.get('graph_optimization_level')}"


def combinations(ctx: SpaceContext) -> int:
    """The size of the space (conditional levers counted where they apply)."""
    return sum(1 for _ in grid(ctx))
