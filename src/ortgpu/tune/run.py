"""`run_tune`: an Optuna study (TPE + successive halving) over the levers, each trial isolated and accuracy-gated."""

from __future__ import annotations

import os
import shutil
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ortgpu.atomic import atomic_write
from ortgpu.check.parity import Precision
from ortgpu.config import Config
from ortgpu.ep import ExecutionProvider
from ortgpu.model.free_dims import fixed_dims_for, input_dim_labels
from ortgpu.model.inputs import InputSpec, make_inputs
from ortgpu.model.inspect import inspect_model
from ortgpu.output_paths import check_writable_folder
from ortgpu.session import ProviderUnavailableError, best_available_ep, open_session, probe_provider
from ortgpu.tune.journal import (
    check_identity,
    check_trials,
    import_optuna,
    open_study,
    quiet_optuna,
)
from ortgpu.tune.output import config_text, write_config
from ortgpu.tune.request import (
    CONFIG_NAME,
    JOURNAL_NAME,
    TuneInputError,
    TuneRequest,
    parse_budget,
)
from ortgpu.tune.result import Objective, TrialRecord, TrialStatus, TuneResult, WrittenFile
from ortgpu.tune.space import (
    LEVERS,
    SpaceContext,
    combinations,
    defaults_for,
    placement_key,
    prune_reason,
    signature,
    suggest,
    variant_key,
)
from ortgpu.tune.trial import Outcome, TrialLimits, run_child
from ortgpu.tune.variants import Variant, VariantError, has_conv1d, model_traits, prepare_variant, sha256_file

__all__ = ["JOURNAL_NAME", "Progress", "TuneInputError", "TuneRequest", "parse_budget", "run_tune"]

Progress = Callable[[str, "float | None"], None]


def _silent(message: str, fraction: float | None = None) -> None:
    """The progress callback used when the caller gives none."""


# ------------------------------------------------------------------------------------------------ preparation


@dataclass
class _Prepared:
    """What every trial of one tune shares. ``arrays``: batch -> (inputs, fp32 reference outputs), held until
    :func:`_write_work` puts them in ``work`` as the files the trial processes read (``files``)."""

    ep: ExecutionProvider
    ctx: SpaceContext
    batches: tuple[int, ...]
    shapes: dict[int, dict[str, tuple[int, ...]]]
    labels: dict[str, tuple[Any, ...]]
    work: Path
    arrays: dict[int, tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=dict)
    files: dict[int, tuple[Path, Path]] = field(default_factory=dict)  # batch -> (inputs npz, reference npz)

    def identity(self, request: TuneRequest, model_sha256: str) -> dict[str, Any]:
        """What a resumed tune must share with the one in the journal."""
        return {
            "model_sha256": model_sha256,
            "ep": self.ep.value,
            "objective": request.objective.value,
            "batches": list(self.batches),
            "shapes": {str(b): {k: list(v) for k, v in s.items()} for b, s in self.shapes.items()},
        }


def _resolve_ep(request: TuneRequest) -> ExecutionProvider:
    if request.ep is None:
        return best_available_ep()[0]
    if request.ep is ExecutionProvider.CPU:
        return request.ep
    probe = probe_provider(request.ep, request.device_id)
    if not probe.active:
        raise ProviderUnavailableError(
            f"the {request.ep.value} execution provider cannot run here: {probe.cause}",
            "run `ortgpu doctor`, or tune on another EP (--ep cpu)",
        )
    return request.ep


def _prepare(request: TuneRequest, model: Any, tell: Progress) -> _Prepared:
    """The EP, the space, the inputs and the fp32 reference outputs, in memory: nothing is written yet, so bad
    inputs (an open dim no flag fixes) leave no folder behind."""

    ep = _resolve_ep(request)
    open_leading = any(i.rank and not isinstance(i.shape[0], int) for i in model.inputs)
    if request.batches and not open_leading:
        raise TuneInputError(
            "--batch: every input has a fixed leading dim; the model cannot be batched", "drop --batch"
        )

    def spec(batch: int | None) -> InputSpec:
        return InputSpec(shapes=dict(request.shapes), dims=dict(request.dims), batch=batch)

    batches = request.batches or (make_inputs(model, spec(None)).batch or 1,)
    open_dims = any(i.is_dynamic for i in model.inputs)
    traits = model_traits(model.op_types, open_dims, has_conv1d(model.path) if model.op_types.get("Conv") else False)
    sweep_latency = len(batches) > 1 and request.objective is not Objective.THROUGHPUT
    ctx = SpaceContext(traits, ep, fixed_batch=not sweep_latency)
    prep = _Prepared(ep, ctx, tuple(batches), {}, input_dim_labels(model.path), request.out / "work")
    with open_session(model.path, ExecutionProvider.CPU, Config(), model_info=model) as reference:
        for batch in batches:
            tell(f"fp32 reference on the CPU EP, batch {batch}", None)
            inputs = make_inputs(model, spec(batch if open_leading else None))
            outputs = dict(zip(reference.output_names, reference.run(inputs.feeds), strict=True))
            prep.shapes[batch] = dict(inputs.shapes)
            prep.arrays[batch] = (dict(inputs.feeds), outputs)
    return prep


def _npz_writer(arrays: Mapping[str, Any]) -> Callable[[BinaryIO], None]:
    """What atomic_write calls to save ``arrays`` as one npz file."""
    import numpy as np

    def write(handle: BinaryIO) -> None:
        np.savez(handle, **arrays)

    return write


def _write_work(prep: _Prepared) -> None:
    """The inputs and reference outputs as the npz files the trial processes read."""

    prep.work.mkdir(parents=True, exist_ok=True)
    for batch, (feeds, outputs) in prep.arrays.items():
        pair = (prep.work / f"inputs-b{batch}.npz", prep.work / f"reference-b{batch}.npz")
        atomic_write(pair[0], _npz_writer(feeds))
        atomic_write(pair[1], _npz_writer(outputs))
        prep.files[batch] = pair
    prep.arrays.clear()


# ------------------------------------------------------------------------------------------------ priors


def _priors(ctx: SpaceContext) -> list[dict[str, Any]]:
    """Configurations tried first, after ORT's defaults: the levers measured best on the lent H200
    (fp16, NHWC + fused Conv/bias for convolutions, transformer fusion for attention, IO binding, CUDA graph with
    the dims fixed). Optuna's sampler then searches around them; every one is still accuracy-gated."""
    base = defaults_for(ctx)
    out = []
    if ctx.ep is ExecutionProvider.CUDA:
        best = dict(base)
        best.update(precision="fp16", io="cudagraph")
        if "fix_dims" in base:
            best["fix_dims"] = True
        if "fusion" in base:
            best["fusion"] = "transformer"
        if "prefer_nhwc" in base:
            best.update(prefer_nhwc=True, fuse_conv_bias=True)
        out.append(best)
        safer = dict(best, io="iobinding")
        out.append(safer)
    elif ctx.ep is ExecutionProvider.CPU:
        cores = ctx.cores
        out.append(dict(base, intra_op_num_threads=max(1, cores - 1) if cores > 1 else 1))
        if "fusion" in base:
            out.append(dict(base, fusion="transformer"))
    return [p for p in out if p != base]


# ------------------------------------------------------------------------------------------------ the search


def _base_precision(ep: ExecutionProvider, params: Mapping[str, Any]) -> str:
    if params.get("precision") == "fp16" or params.get("trt_fp16_enable"):
        return Precision.FP16.value
    if ep is ExecutionProvider.CPU:
        return Precision.FP32.value
    if params.get("precision") == "fp32":
        return Precision.FP32_GPU.value
    return Precision.TF32.value


def _spec(
    request: TuneRequest,
    prep: _Prepared,
    params: Mapping[str, Any],
    variant: Variant,
    batches: tuple[int, ...],
    check_placement: bool,
) -> dict[str, Any]:
    levers = {lever.name: lever for lever in LEVERS}
    session = {k: v for k, v in params.items() if k in levers and levers[k].where == "session"}
    ep_options = {k: v for k, v in params.items() if k in levers and levers[k].where == "ep"}
    if prep.ep is ExecutionProvider.CUDA:
        ep_options["use_tf32"] = params.get("precision") != "fp32"
    if prep.ep is ExecutionProvider.TENSORRT:
        cache = str(prep.work / "trt-cache")
        ep_options.update(
            trt_engine_cache_enable=True,
            trt_engine_cache_path=cache,
            trt_timing_cache_enable=True,
            trt_timing_cache_path=cache,
        )
    if prep.ep.is_gpu:
        ep_options["device_id"] = request.device_id
    per_batch = []
    for batch in batches:
        item: dict[str, Any] = {
            "batch": batch,
            "inputs": str(prep.files[batch][0]),
            "reference": str(prep.files[batch][1]),
        }
        if params.get("fix_dims"):
            fixed = fixed_dims_for(prep.labels, prep.shapes[batch])
            item["free_dims"] = {k: v for k, v in fixed.session_settings().items() if v}
        per_batch.append(item)
    stages = [0.2 * request.measure_s, 0.3 * request.measure_s, 0.5 * request.measure_s]
    return {
        "model": str(variant.path),
        "ep": prep.ep.value,
        "device_id": request.device_id,
        "session": session,
        "ep_options": ep_options,
        "mode": params.get("io", "run"),
        "batches": per_batch,
        "precision": _base_precision(prep.ep, params),
        "stages": stages,
        "objective": request.objective.value,
        "max_warmup_s": request.max_warmup_s,
        "check_placement": check_placement,
    }


def _status_of(outcome: Outcome) -> TrialStatus:
    return {
        "done": TrialStatus.OK,
        "refused": TrialStatus.REFUSED,
        "rejected": TrialStatus.REJECTED,
        "pruned": TrialStatus.PRUNED,
    }.get(outcome.kind, TrialStatus.FAILED)


def _reason_of(outcome: Outcome) -> str:
    if outcome.kind in ("done", "pruned", "refused", "rejected"):
        return outcome.message
    tail = outcome.stderr_tail.strip().splitlines()[-1:] if outcome.stderr_tail.strip() else []
    return outcome.message + (f" (last stderr line: {tail[0][:300]})" if tail and outcome.kind == "crashed" else "")


def _record(trial: Any) -> TrialRecord:
    attrs = trial.user_attrs
    status = TrialStatus(attrs.get("status", "failed"))
    params = dict(attrs.get("params") or trial.params)
    return TrialRecord(
        number=int(trial.number),
        params=params,
        status=status,
        value=attrs.get("value"),
        reason=attrs.get("reason"),
        per_batch=dict(attrs.get("per_batch") or {}),
        seconds=float(attrs.get("seconds", 0.0)),
        variant=str(attrs.get("variant", "fp32-none")),
        gpu_memory_peak_bytes=attrs.get("gpu_memory_peak_bytes"),
        host_memory_peak_bytes=attrs.get("host_memory_peak_bytes"),
        sm_clock_mhz=attrs.get("sm_clock_mhz"),
        max_abs_error=attrs.get("max_abs_error"),
        is_defaults=bool(attrs.get("is_defaults", False)),
    )


def _rank(records: list[TrialRecord], objective: Objective) -> tuple[TrialRecord, ...]:
    scored = [(r.value, r) for r in records if r.status is TrialStatus.OK and r.value is not None]
    scored.sort(key=lambda pair: -pair[0] if objective.maximize else pair[0])
    measured = [r for _, r in scored]
    rest = sorted((r for r in records if r not in measured), key=lambda r: r.number)
    return tuple(measured + rest)


def _default_host_limit() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return int(int(line.split()[1]) * 1024 * 0.8)
    except (OSError, ValueError):
        return None
    return None


def run_tune(request: TuneRequest, progress: Progress | None = None) -> TuneResult:
    """Search the levers for ``request.model``; write ortgpu.toml (+ model files) into ``request.out``.

    Bad settings raise TuneInputError / ModelError (exit 2) before anything runs and leave no folder behind; a
    journal ``resume`` cannot read, or one holding what tune never writes, is TuneInputError too; an EP that
    cannot run here raises ProviderUnavailableError (exit 3). Ctrl-C ends the search: the result then holds the
    trials that finished (``stopped == "interrupted"``), and the config is written from the best of them.
    Optuna's own log lines are kept quiet while it runs: every outcome is in the result.
    """
    optuna = import_optuna()
    with quiet_optuna(optuna):
        return _run_tune(optuna, request, progress or _silent)


def _make_out(request: TuneRequest) -> list[Path]:
    """Create --out (and check a file can be made in it); the paths this tune created, to remove on failure."""

    created = []
    missing = [p for p in (request.out, *request.out.parents) if not os.path.lexists(p)]
    try:
        request.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TuneInputError(
            f"--out {request.out}: cannot create it ({exc.strerror or exc})", "give a folder you can write to"
        ) from None
    if missing:
        created.append(missing[-1])  # the topmost folder made: removing it removes the rest
    check_writable_folder(request.out, "--out", TuneInputError)
    return created


def _clean_up(request: TuneRequest, created: list[Path]) -> None:
    """After a new tune failed or was stopped before its first trial: remove what it made (never on --resume)."""

    if request.resume:
        return
    for path in created:
        shutil.rmtree(path, ignore_errors=True)
    if not created:  # --out existed (empty): take out what this tune put in it
        for name in ("work", "models", JOURNAL_NAME, JOURNAL_NAME + ".lock"):
            target = request.out / name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target, ignore_errors=True)
            elif os.path.lexists(target):
                target.unlink()


def _run_tune(optuna: Any, request: TuneRequest, tell: Progress) -> TuneResult:

    started = time.perf_counter()
    request.validate()
    model = inspect_model(request.model)
    tell("preparing: fp32 reference outputs", 0.0)
    prep = _prepare(request, model, tell)
    journal = request.out / JOURNAL_NAME
    with warnings.catch_warnings():  # multivariate/group are marked experimental; they are what conditional spaces need
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = optuna.samplers.TPESampler(seed=request.seed, multivariate=True, group=True, n_startup_trials=4)
    pruner = optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=2)
    identity = prep.identity(request, model.sha256)
    created = _make_out(request)
    try:
        study = open_study(optuna, request, journal, sampler, pruner)
        if request.resume:
            check_identity(study, identity, request, journal)
            check_trials(study, prep, journal)
        else:
            for key, value in identity.items():
                study.set_user_attr(key, value)
            for params in [defaults_for(prep.ctx), *(_priors(prep.ctx) if request.priors else [])]:
                if len(prep.batches) > 1 and request.objective is Objective.THROUGHPUT:
                    params = dict(params, batch=max(prep.batches))
                study.enqueue_trial(params, skip_if_exists=True)
        _write_work(prep)
    except BaseException:  # bad input, a write error or Ctrl-C before the first trial: leave nothing half made
        _clean_up(request, created)
        raise
    resumed = len(study.trials)
    learned: dict[str, str] = {}
    measured: dict[str, dict[str, Any]] = {}
    variants: dict[str, Variant] = {}
    durations: list[float] = []
    for old in study.trials:  # what a resumed study already knows
        attrs = old.user_attrs
        if attrs.get("status") == TrialStatus.OK.value and attrs.get("signature"):
            measured[attrs["signature"]] = dict(attrs)
        if attrs.get("learned_key"):
            learned[attrs["learned_key"]] = attrs.get("reason", "")
    limits = TrialLimits(request.trial_timeout_s, request.host_memory_limit or _default_host_limit())
    deadline = started + request.budget_s
    sweep_batch = len(prep.batches) > 1 and request.objective is Objective.THROUGHPUT

    def variant_for(params: Mapping[str, Any]) -> Variant:
        key = variant_key(params)
        if key not in variants:
            precision = "fp16" if params.get("precision") == "fp16" else "fp32"
            fusion = str(params.get("fusion", "none"))
            tell(f"preparing the model: {precision}, fusion {fusion}", None)
            variants[key] = prepare_variant(model.path, precision, fusion, request.out / "models", prep.ep.is_gpu)
        return variants[key]

    def objective(trial: Any) -> float:
        params = suggest(trial, prep.ctx)
        if sweep_batch:
            params["batch"] = trial.suggest_categorical("batch", list(prep.batches))
        batches = (params["batch"],) if sweep_batch else prep.batches
        is_defaults = trial.number == 0 and not request.resume
        sig = signature(params)
        trial.set_user_attr("params", params)
        trial.set_user_attr("signature", sig)
        trial.set_user_attr("is_defaults", is_defaults)
        tell(f"trial {trial.number}: {_short(params)}", _fraction())

        def finish(status: TrialStatus, reason: str | None = None, **attrs: Any) -> None:
            trial.set_user_attr("status", status.value)
            if reason:
                trial.set_user_attr("reason", reason)
            for key, value in attrs.items():
                trial.set_user_attr(key, value)

        if sig in measured:
            earlier = measured[sig]
            finish(TrialStatus.DUPLICATE, f"the same configuration as trial {earlier.get('number')}")
            return float(earlier["value"])
        why = prune_reason(params, prep.ctx, learned)
        if why:
            finish(TrialStatus.PRUNED, why)
            raise optuna.TrialPruned(why)
        try:
            variant = variant_for(params)
        except VariantError as exc:
            learned[variant_key(params)] = exc.message
            finish(TrialStatus.PRUNED, exc.message, learned_key=variant_key(params))
            raise optuna.TrialPruned(exc.message) from None
        check_placement = params.get("io") == "cudagraph" and placement_key(params) not in learned

        def on_stage(step: int, value: float) -> bool:
            trial.report(value, step)
            return is_defaults or not trial.should_prune()

        remaining = max(30.0, deadline - time.perf_counter() + 30.0)
        run_limits = TrialLimits(min(limits.time_s, remaining), limits.host_memory_bytes)
        spec = _spec(request, prep, params, variant, batches, check_placement)
        outcome = run_child(spec, run_limits, on_stage, request.child_command)
        durations.append(outcome.seconds)
        status = _status_of(outcome)
        common = {"seconds": outcome.seconds, "variant": variant.key, "number": trial.number}
        if outcome.kind == "refused" and params.get("io") == "cudagraph":
            learned[placement_key(params)] = outcome.message
            common["learned_key"] = placement_key(params)
        if status is not TrialStatus.OK:
            finish(status, _reason_of(outcome), **common)
            raise optuna.TrialPruned(_reason_of(outcome))
        result = outcome.result
        value = float(result["value"])
        warm = result.get("warmup") or {}
        worst = max((float(w.get("max_abs_error") or 0.0) for w in warm.values()), default=None)
        metrics = {
            **common,
            "value": value,
            "per_batch": result.get("per_batch") or {},
            "gpu_memory_peak_bytes": result.get("gpu_memory_peak_bytes"),
            "host_memory_peak_bytes": result.get("host_memory_peak_bytes"),
            "sm_clock_mhz": result.get("sm_clock_mhz"),
            "max_abs_error": worst,
        }
        peak = result.get("gpu_memory_peak_bytes") if prep.ep.is_gpu else result.get("host_memory_peak_bytes")
        if request.memory_budget is not None and peak is not None and peak > request.memory_budget:
            reason = f"peak memory {peak / 2**20:.0f} MiB over --memory-budget {request.memory_budget / 2**20:.0f} MiB"
            finish(TrialStatus.REJECTED, reason, **metrics)
            raise optuna.TrialPruned(reason)
        finish(TrialStatus.OK, None, **metrics, signature=sig)
        measured[sig] = {**metrics, "value": value}
        return value

    ended = 0  # trials ended in this run: with --trials, progress is the larger of the two shares

    def _fraction() -> float:
        by_time = (time.perf_counter() - started) / request.budget_s
        by_count = ended / request.max_trials if request.max_trials else 0.0
        return min(1.0, max(by_time, by_count))

    stopped = ""

    def after_trial(study: Any, trial: Any) -> None:
        nonlocal stopped, ended
        ended += 1
        status = trial.user_attrs.get("status", "?")
        value = trial.user_attrs.get("value")
        shown = f"{value:.4g} {request.objective.unit}" if isinstance(value, (int, float)) else status
        tell(f"trial {trial.number}: {shown}", _fraction())
        typical = sorted(durations)[len(durations) // 2] if durations else 0.0
        if time.perf_counter() + typical > deadline:
            stopped = "budget"
            study.stop()

    total = combinations(prep.ctx) * (len(prep.batches) if sweep_batch else 1)
    interrupted = False
    try:
        study.optimize(
            objective,
            n_trials=request.max_trials,
            timeout=max(1.0, deadline - time.perf_counter()),
            callbacks=[after_trial],
            catch=(),
        )
    except KeyboardInterrupt:
        interrupted = True
    if not stopped:
        stopped = "interrupted" if interrupted else ("trial limit" if request.max_trials else "budget")
    records = [_record(t) for t in study.trials if t.user_attrs.get("status")]
    ranked = _rank(records, request.objective)
    best = next((r for r in ranked if r.status is TrialStatus.OK), None)
    defaults = next((r for r in records if r.is_defaults and r.status is TrialStatus.OK), None)
    speedup = None
    if best is not None and defaults is not None and best.value and defaults.value:
        speedup = best.value / defaults.value if request.objective.maximize else defaults.value / best.value
    config_path: Path | None = None
    files: tuple[WrittenFile, ...] = ()
    if best is not None:
        tell("writing ortgpu.toml", 1.0)
        config_path, files = _write_outputs(request, prep, model, best, variants, speedup)
    return TuneResult(
        model=Path(request.model),
        model_sha256=model.sha256,
        ep=prep.ep,
        objective=request.objective,
        batches=prep.batches,
        space_size=total,
        trials=ranked,
        best=best,
        defaults=defaults,
        speedup=speedup,
        config_path=config_path,
        files=files,
        journal=journal,
        elapsed_s=time.perf_counter() - started,
        budget_s=request.budget_s,
        resumed_trials=resumed,
        stopped=stopped,
        notes=tuple(f"{v.key}: {'; '.join(v.notes)}" for v in variants.values() if v.notes),
    )


def _short(params: Mapping[str, Any]) -> str:
    shown = [f"{k}={v}" for k, v in params.items() if k in ("precision", "fusion", "io", "fix_dims", "batch")]
    return ", ".join(shown)


def _write_outputs(
    request: TuneRequest,
    prep: _Prepared,
    model: Any,
    best: TrialRecord,
    variants: Mapping[str, Variant],
    speedup: float | None,
) -> tuple[Path, tuple[WrittenFile, ...]]:
    params = best.params
    batch = int(params["batch"]) if "batch" in params else prep.batches[0]
    variant = variants.get(variant_key(params)) or prepare_variant(
        model.path,
        "fp16" if params.get("precision") == "fp16" else "fp32",
        str(params.get("fusion", "none")),
        request.out / "models",
        prep.ep.is_gpu,
    )
    files: list[WrittenFile] = []
    model_table = None
    if variant.key != "fp32-none":
        relative = os.path.relpath(variant.path, request.out)
        model_table = {
            "file": relative,
            "sha256": sha256_file(variant.path),
            "source_sha256": model.sha256,
            "precision": variant.precision,
        }
        files.append(WrittenFile(variant.path, model_table["sha256"], f"model ({variant.key})"))
    fixed = fixed_dims_for(prep.labels, prep.shapes[batch]).session_settings() if params.get("fix_dims") else None
    one_batch = len(prep.batches) == 1 or "batch" in params
    header = (
        f"model {Path(request.model).name} (sha256 {model.sha256[:16]}...), EP {prep.ep.value}, objective "
        f"{request.objective.value}, trial {best.number}: {best.value:.4g} {request.objective.unit}"
        + (f", {speedup:.2f}x ORT's defaults" if speedup else "")
    )
    text = config_text(params, prep.ep, prep.shapes[batch] if one_batch else {}, fixed, model_table, header)
    path = write_config(request.out / CONFIG_NAME, text)
    files.insert(0, WrittenFile(path, sha256_file(path), "config"))
    return path, tuple(files)
