"""The search space: levers offered only where they mean something, impossible combinations pruned before running,
and Optuna's TPE reaching the best configuration in fewer trials than a grid."""

from __future__ import annotations

import warnings

import pytest

from ortgpu.ep import ExecutionProvider
from ortgpu.tune.space import (
    ModelTraits,
    SpaceContext,
    combinations,
    defaults_for,
    grid,
    placement_key,
    prune_reason,
    signature,
    suggest,
)

CONV = ModelTraits(has_conv=True, open_dims=True)
BERT = ModelTraits(transformer_like=True, open_dims=True)


def test_cpu_space_has_threads_and_modes_but_no_gpu_levers() -> None:
    ctx = SpaceContext(BERT, ExecutionProvider.CPU, cores=4)
    names = set().union(*(p.keys() for p in grid(ctx)))
    assert {"execution_mode", "intra_op_num_threads", "inter_op_num_threads", "fusion", "io", "fix_dims"} <= names
    assert not names & {"precision", "prefer_nhwc", "cudnn_conv_algo_search", "use_ep_level_unified_stream"}
    assert {p["io"] for p in grid(ctx)} == {"run", "iobinding"}
    assert all("inter_op_num_threads" not in p for p in grid(ctx) if p["execution_mode"] == "sequential")


def test_cuda_space_offers_conv_levers_only_for_convolution_models() -> None:
    conv = {k for p in grid(SpaceContext(CONV, ExecutionProvider.CUDA)) for k in p}
    bert = {k for p in grid(SpaceContext(BERT, ExecutionProvider.CUDA)) for k in p}
    assert {"prefer_nhwc", "fuse_conv_bias", "cudnn_conv_algo_search", "cudnn_conv_use_max_workspace"} <= conv
    assert "fusion" not in conv and "fusion" in bert
    assert not bert & {"prefer_nhwc", "cudnn_conv_algo_search"}
    assert {p["precision"] for p in grid(SpaceContext(BERT, ExecutionProvider.CUDA))} == {"fp32", "tf32", "fp16"}


def test_a_latency_sweep_leaves_the_dims_open() -> None:
    ctx = SpaceContext(BERT, ExecutionProvider.CUDA, fixed_batch=False)
    assert all("fix_dims" not in p for p in grid(ctx))
    assert all(prune_reason(p, ctx) for p in grid(ctx) if p["io"] == "cudagraph")


def test_impossible_combinations_are_pruned_with_the_reason() -> None:
    ctx = SpaceContext(CONV, ExecutionProvider.CUDA)
    base = defaults_for(ctx)
    assert prune_reason(base, ctx) is None
    assert "needs fixed shapes" in prune_reason(dict(base, io="cudagraph"), ctx)
    assert prune_reason(dict(base, io="cudagraph", fix_dims=True), ctx) is None
    assert "fuse_conv_bias without prefer_nhwc" in prune_reason(dict(base, fuse_conv_bias=True), ctx)
    graph = dict(base, io="cudagraph", fix_dims=True)
    learned = {placement_key(graph): "82 node(s) run on the CPU with these settings (Shape, Gather)"}
    assert "every node on the GPU: 82 node(s)" in prune_reason(graph, ctx, learned)


def test_defaults_are_ort_defaults_and_part_of_the_space() -> None:
    for ctx in (SpaceContext(CONV, ExecutionProvider.CUDA), SpaceContext(BERT, ExecutionProvider.CPU, cores=2)):
        base = defaults_for(ctx)
        assert signature(base) in {signature(p) for p in grid(ctx)}
    assert defaults_for(SpaceContext(CONV, ExecutionProvider.CUDA))["precision"] == "tf32"


def test_suggest_samples_exactly_the_levers_that_apply() -> None:
    optuna = pytest.importorskip("optuna")
    ctx = SpaceContext(CONV, ExecutionProvider.CUDA)
    keys = {signature(p) for p in grid(ctx)}
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    for _ in range(30):
        trial = study.ask()
        assert signature(suggest(trial, ctx)) in keys
        study.tell(trial, 1.0)


# ------------------------------------------------------------------------------------------ TPE against a grid

_FACTORS = {  # a synthetic latency model of a conv net on a GPU: what the H200 showed, multiplied together
    ("precision", "fp16"): 0.45,
    ("precision", "fp32"): 2.0,
    ("io", "iobinding"): 0.75,
    ("io", "cudagraph"): 0.55,
    ("prefer_nhwc", True): 0.8,
    ("cudnn_conv_algo_search", "DEFAULT"): 1.4,
    ("cudnn_conv_algo_search", "HEURISTIC"): 1.02,
    ("graph_optimization_level", "basic"): 1.15,
    ("graph_optimization_level", "extended"): 1.03,
}


def _latency(params: dict) -> float:
    value = 10.0
    for item in params.items():
        value *= _FACTORS.get(item, 1.0)
    if params.get("fuse_conv_bias") and params.get("prefer_nhwc"):
        value *= 0.72
    return value


def _trials_to_reach(order: list[dict], best: float) -> int:
    for count, params in enumerate(order, 1):
        if _latency(params) <= best * 1.02:
            return count
    return len(order)


def test_tpe_reaches_the_best_configuration_in_far_fewer_trials_than_a_grid() -> None:
    optuna = pytest.importorskip("optuna")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    ctx = SpaceContext(CONV, ExecutionProvider.CUDA)
    space = [p for p in grid(ctx) if prune_reason(p, ctx) is None]
    best = min(_latency(p) for p in space)
    # a grid in its natural order, and the expected trials of a grid in random order: (N + 1) / (hits + 1)
    hits = sum(1 for p in space if _latency(p) <= best * 1.02)
    random_grid = (len(space) + 1) / (hits + 1)
    tpe_counts = []
    for seed in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True, n_startup_trials=8)
        study = optuna.create_study(sampler=sampler)
        seen: list[dict] = []

        def objective(trial: optuna.Trial, seen: list[dict] = seen) -> float:
            params = suggest(trial, ctx)
            if prune_reason(params, ctx):
                raise optuna.TrialPruned()
            seen.append(params)
            return _latency(params)

        study.optimize(objective, n_trials=120)
        tpe_counts.append(_trials_to_reach(seen, best))
    assert len(space) > 1000
    assert statistics_median(tpe_counts) < random_grid / 3, (tpe_counts, random_grid, len(space))
    assert statistics_median(tpe_counts) < _trials_to_reach(space, best)


def statistics_median(values: list[int]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def test_the_space_size_counts_conditional_levers_once() -> None:
    ctx = SpaceContext(BERT, ExecutionProvider.CPU, cores=1)
    assert combinations(ctx) == sum(1 for _ in grid(ctx))
    # fusion 2 x io 2 x fix_dims 2 x level 3 x threads {0, 1} x (sequential, or parallel with inter {0, 1, 2})
    assert combinations(ctx) == 2 * 2 * 2 * 3 * 2 * (1 + 3)
