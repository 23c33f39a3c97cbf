"""`run_fp16`: convert with ORT's converter, validate against fp32 on data, grow the keep-list from measurements
until the fp16 model passes, write it atomically, and time it against fp32 on a GPU."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.accuracy.dataset import load_dataset
from ortgpu.accuracy.engines import OrtEngine
from ortgpu.accuracy.graph import TensorSlot, intermediate_tensors, load_model, name_unnamed_nodes
from ortgpu.accuracy.layerwise import (
    _ITEMSIZE,
    DEFAULT_BYTE_BUDGET,
    DEFAULT_MAX_PER_CHUNK,
    LayerwiseReport,
    chunk_slots,
    compare_layers,
)
from ortgpu.accuracy.nonfinite import NonFinite, scan_outputs
from ortgpu.atomic import atomic_write_bytes, atomic_write_text
from ortgpu.bench import BenchMode, BenchRequest, run_bench
from ortgpu.check.parity import DEFAULT_TOLERANCES, OutputParity, ParityStatus, Precision, compare_output, worst_sample
from ortgpu.config import Config, load_config
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import BadInputError
from ortgpu.fp16.convert import Converted, convert_to_fp16, converter_default_block_list, float_tensor_count
from ortgpu.fp16.keeplist import (
    KeepRule,
    KeptNode,
    TensorRange,
    chain_groups,
    chain_rule,
    divergence_rule,
    overflow_failures,
    range_rule,
)
from ortgpu.fp16.provenance import KEEP_KEY, SOURCE_SHA_KEY, sha256_file
from ortgpu.fp16.provenance import config_section as section_text
from ortgpu.fp16.result import Attempt, Fp16Result, Sizes, Speed
from ortgpu.fp16.validate import EngineChoice, choose_engine, open_engine
from ortgpu.model.inputs import InputSpec
from ortgpu.model.inspect import inspect_model
from ortgpu.output_paths import check_outputs
from ortgpu.progress import silent
from ortgpu.runtime.guard import import_onnxruntime
from ortgpu.session.providers import missing_from_build_error

if TYPE_CHECKING:  # pragma: no cover
    import onnx

__all__ = ["SOURCE_SHA_KEY", "Fp16Error", "Fp16Request", "run_fp16"]

Progress = Callable[[str, "float | None"], None]

_FAILURES_KEPT = 6


class Fp16Error(BadInputError):
    """A request `fp16` cannot act on (exit 2)."""


@dataclass(frozen=True)
class Fp16Request:
    """What to convert and how to validate it.

    ``ep``: where the fp16 model is validated (and timed); the CPU EP validates with onnx's reference evaluator
    where ORT's CPU kernels would compute fp16 nodes in fp32. ``atol`` / ``rtol``: output tolerances against
    fp32 (default: the float16 row, rtol 2e-2, atol 2e-2 x the output's largest value). ``keep``: node names to
    keep in fp32 whatever happens; ``auto_keep`` grows the list from measurements until the model passes (at
    most ``max_iterations`` conversions). ``force``: write OUT even when it does not pass. ``bench``: time fp16
    against fp32 on a GPU EP (at ``bench_batch`` when given, else the data's shapes).
    """

    model: Path
    output: Path
    ep: ExecutionProvider = ExecutionProvider.CUDA
    config: Path | None = None
    device_id: int | None = None
    ep_options: Mapping[str, str] = field(default_factory=dict)
    inputs: InputSpec | None = None
    samples: int | None = None
    atol: float | None = None
    rtol: float | None = None
    keep_io_types: bool = True
    keep: tuple[str, ...] = ()
    auto_keep: bool = True
    max_iterations: int = 8
    force: bool = False
    bench: bool = True
    bench_batch: int | None = None
    bench_duration_s: float = 2.0
    config_out: Path | None = None  # a new ortgpu.toml whose [model] points load/check/bench at OUT


def _check_request(request: Fp16Request, config_source: Path | None) -> None:
    out = Path(request.output)
    if out.suffix != ".onnx":
        raise Fp16Error(f"-o {out}: the file name must end in .onnx", f"e.g. -o {out.stem}.fp16.onnx")
    if Path(request.model).exists() and out.exists() and os.path.samefile(out, request.model):
        raise Fp16Error(f"-o {out} is the input model itself", "write the fp16 model to another file")
    if request.config_out is not None:
        if Path(request.config_out).suffix != ".toml":
            raise Fp16Error(
                f"--write-config {request.config_out}: must end in .toml", "e.g. --write-config ortgpu.toml"
            )
        if Path(request.config_out).exists():
            raise Fp16Error(
                f"--write-config {request.config_out} exists: ortgpu fp16 writes a new config, never edits one",
                "give a new file name, or add the [model] section from --json (config_section) to yours",
            )
    npz = request.inputs.npz if request.inputs is not None else None
    check_outputs(
        {"-o": out, "--write-config": request.config_out},
        (request.model, npz, config_source),
        error=Fp16Error,
    )
    if request.max_iterations < 1:
        raise Fp16Error(f"--max-iterations {request.max_iterations}: needs 1 or more", "e.g. --max-iterations 8")
    for name, value in (("--atol", request.atol), ("--rtol", request.rtol)):
        if value is not None and not (value >= 0 and value != float("inf")):
            raise Fp16Error(f"{name} {value}: must be a finite number >= 0", f"e.g. {name} 1e-2")


def _check_ep(ep: ExecutionProvider) -> None:
    ort = import_onnxruntime("validating an fp16 model")

    if ep is not ExecutionProvider.CPU and ep.ort_name not in ort.get_available_providers():
        error = missing_from_build_error(ep)
        raise type(error)(
            error.message,
            f"{error.hint}; or validate on this machine with --ep cpu (onnx's reference evaluator computes fp16)",
        )


# --------------------------------------------------------------------------------------------- the fp32 side


@dataclass
class _Fp32Run:
    outputs: list[dict[str, Any]]
    ranges: dict[str, TensorRange]
    slots: list[TensorSlot]
    skipped: list[Any]


def _merge_range(ranges: dict[str, TensorRange], name: str, value: Any) -> None:
    import numpy as np

    array = np.asarray(value)
    if array.dtype.kind != "f" or array.size == 0:
        return
    data = np.abs(array.astype(np.float64, copy=False))
    finite = np.isfinite(data)
    magnitudes = data[finite]
    nonzero = magnitudes[magnitudes > 0]
    largest = float(magnitudes.max()) if magnitudes.size else None
    smallest = float(nonzero.min()) if nonzero.size else None
    old = ranges.get(name)
    if old is not None:
        largest = max(x for x in (largest, old.max_abs) if x is not None) if (largest or old.max_abs) else largest
        smallest = min((x for x in (smallest, old.min_nonzero) if x is not None), default=None)
    ranges[name] = TensorRange(name, largest, smallest, int(array.size - finite.sum()) + (old.nonfinite if old else 0))


def _fp32_run(proto: onnx.ModelProto, feeds: list[dict[str, Any]], tell: Progress) -> _Fp32Run:
    """The fp32 model on the CPU EP, every intermediate tensor exposed (in chunks), over every sample."""

    slots, skipped = intermediate_tensors(proto, {n: tuple(a.shape) for n, a in feeds[0].items()})
    ranges: dict[str, TensorRange] = {}
    for values in feeds:
        for name, value in values.items():
            _merge_range(ranges, name, value)
    with OrtEngine(proto, feeds[0], ExecutionProvider.CPU) as engine:
        tell("fp32 on the CPU EP: outputs", 0.08)
        outputs = engine.outputs_for(feeds)
        chunks = chunk_slots(slots, _ITEMSIZE, DEFAULT_BYTE_BUDGET, DEFAULT_MAX_PER_CHUNK)
        for index, chunk in enumerate(chunks):
            tell(f"fp32 on the CPU EP: tensor ranges, chunk {index + 1}/{len(chunks)}", 0.1)
            for per_sample in engine.values_for(chunk, feeds):
                for name, value in per_sample.items():
                    _merge_range(ranges, name, value)
    return _Fp32Run(outputs, ranges, slots, skipped)


# --------------------------------------------------------------------------------------------- validation


@dataclass
class _Validation:
    parity: tuple[OutputParity, ...]
    nonfinite: tuple[NonFinite, ...]
    overflow: list[str]
    failures: list[str]
    worst_sample: int

    @property
    def passed(self) -> bool:
        return not self.failures


def _validate(
    request: Fp16Request,
    proto: onnx.ModelProto,
    converted: Converted,
    choice: EngineChoice,
    config: Config,
    feeds: list[dict[str, Any]],
    fp32: _Fp32Run,
    effective_kept: set[str],
    labels: Sequence[str],
) -> _Validation:
    with open_engine(choice, converted.model, feeds[0], request.ep, config, request.device_id, request.ep_options) as e:
        outputs = e.outputs_for(feeds)  # type: ignore[attr-defined]
    per_sample = []
    nonfinite: list[NonFinite] = []
    several = len(feeds) > 1
    for index, (got, want) in enumerate(zip(outputs, fp32.outputs, strict=True)):
        per_sample.append(
            [compare_output(n, got.get(n), want[n], Precision.FP16, request.atol, request.rtol) for n in want]
        )
        nonfinite.extend(scan_outputs(got, labels[index] if several else None, want))
    if several:
        parity = tuple(
            worst_sample([(labels[i], sample[k]) for i, sample in enumerate(per_sample)])
            for k in range(len(per_sample[0]))
        )
    else:
        parity = tuple(per_sample[0])
    overflow = overflow_failures(proto, fp32.ranges, effective_kept)
    failures = [item.line() for item in nonfinite]
    failures += overflow
    failures += [p.failure_line() for p in parity if p.status is ParityStatus.FAIL]
    worst = max(
        range(len(per_sample)),
        key=lambda i: sum(p.mismatches + 10 * p.nonfinite_mismatches for p in per_sample[i]),
    )
    return _Validation(parity, tuple(nonfinite), overflow, failures, worst)


def _layerwise(
    request: Fp16Request,
    proto: onnx.ModelProto,
    converted: Converted,
    choice: EngineChoice,
    config: Config,
    feeds: dict[str, Any],
    fp32: _Fp32Run,
    tell: Progress,
) -> tuple[LayerwiseReport, list[Any]]:
    rule = DEFAULT_TOLERANCES[Precision.FP16]
    with (
        open_engine(choice, converted.model, feeds, request.ep, config, request.device_id, request.ep_options) as fp16,
        OrtEngine(proto, feeds, ExecutionProvider.CPU) as reference,
    ):
        reference.label = "fp32 on the CPU EP"
        fp16.label = f"fp16 on {choice.label}"
        return compare_layers(fp32.slots, fp32.skipped, fp16, reference, rule.rtol, rule.atol_scale, progress=tell)


# --------------------------------------------------------------------------------------------- the loop


def run_fp16(request: Fp16Request, progress: Progress | None = None) -> Fp16Result:
    """Convert ``request.model`` to fp16 and prove it on data; never prints. See Fp16Request.

    Bad input raises BadInputError subclasses (exit 2) before anything is written; a GPU EP this onnxruntime
    lacks raises ProviderUnavailableError (exit 3). A conversion that does not pass returns a result with
    ``passed`` False and writes nothing unless ``force``.
    """

    tell = progress or silent
    config = load_config(request.config)
    _check_request(request, config.source)
    tell("reading the model", 0.0)
    info = inspect_model(request.model)
    _check_ep(request.ep)
    proto = load_model(info.path)
    unnamed = sum(1 for n in proto.graph.node if not n.name)
    name_unnamed_nodes(proto)
    if float_tensor_count(proto) == 0:
        raise Fp16Error(f"{info.path.name} has no float32 input or weight: nothing to convert", "give an fp32 model")
    nodes = {n.name: n for n in proto.graph.node}
    unknown = [k for k in request.keep if k not in nodes]
    if unknown:
        raise Fp16Error(
            f"--keep {unknown[0]!r}: the model has no node of that name",
            "name nodes as the model does (ortgpu check --layerwise --json lists them)",
        )
    tell("making inputs", 0.04)
    dataset = load_dataset(info, request.inputs if request.inputs is not None else config.inputs, request.samples)
    feeds = [dict(s.inputs.feeds) for s in dataset.samples]
    labels = dataset.labels
    fp32 = _fp32_run(proto, feeds, tell)
    broken = [item for out in fp32.outputs for item in scan_outputs(out)]
    if broken:
        raise Fp16Error(
            f"the fp32 model itself gives NaN/Inf: {broken[0].line()}",
            "fix the fp32 model first: ortgpu check MODEL --layerwise finds where it starts",
        )
    groups = chain_groups(proto)
    blocked_ops = converter_default_block_list()
    converter_kept = {
        n.name: KeptNode(n.name, n.op_type, KeepRule.CONVERTER, "ORT's converter keeps this op type in fp32", 0)
        for n in proto.graph.node
        if n.op_type in blocked_ops
    }
    keep: dict[str, KeptNode] = {
        name: KeptNode(name, nodes[name].op_type, KeepRule.ASKED, "asked for (--keep)", 0) for name in request.keep
    }
    attempts: list[Attempt] = []
    notes: list[str] = []
    if unnamed:
        notes.append(f"{unnamed} unnamed node(s) were named <op>_<index> so they can be kept by name")
    choice: EngineChoice | None = None
    layerwise_report = None
    for iteration in range(request.max_iterations):
        tell(
            f"converting (attempt {iteration + 1}, {len(keep)} node(s) kept)",
            0.2 + 0.6 * iteration / request.max_iterations,
        )
        converted = convert_to_fp16(proto, keep, request.keep_io_types)
        if choice is None:
            choice = choose_engine(converted.model, request.ep, config, request.device_id, request.ep_options)
        tell(f"validating attempt {iteration + 1} on {choice.label}", None)
        effective = set(keep) | set(converter_kept)
        validation = _validate(request, proto, converted, choice, config, feeds, fp32, effective, labels)
        added: dict[str, KeptNode] = {}
        last = iteration == request.max_iterations - 1
        if not validation.passed and request.auto_keep and not last:
            added = range_rule(proto, fp32.ranges, effective, iteration + 1)
            if not added:
                tell("layer-wise: where does fp16 depart from fp32?", None)
                layerwise_report, results = _layerwise(
                    request, proto, converted, choice, config, feeds[validation.worst_sample], fp32, tell
                )
                roots = [r for r in results if r.root]
                added = divergence_rule(proto, roots, {**keep, **converter_kept}, iteration + 1)
            added.update(chain_rule(proto, groups, {**keep, **converter_kept, **added}, iteration + 1))
        attempts.append(
            Attempt(
                iteration=iteration + 1,
                kept=len(keep),
                passed=validation.passed,
                failures=tuple(validation.failures[:_FAILURES_KEPT]),
                added=tuple(added),
                casts_removed=converted.casts_removed,
            )
        )
        if validation.passed or not added:
            if not validation.passed and request.auto_keep and not last:
                notes.append("no further node could be found to keep: the rules ran out (see the failures)")
            break
        keep.update(added)
    assert choice is not None  # the loop ran at least once (max_iterations >= 1 is checked)
    passed = validation.passed
    final = _with_provenance(converted.model, info.sha256, keep)
    data = final.SerializeToString()
    written = False
    if passed or request.force:
        tell(f"writing {request.output}", 0.9)
        atomic_write_bytes(request.output, data)
        written = True
    config_section = config_written = None
    if written and passed:
        folder = Path(request.config_out).parent if request.config_out is not None else Path(request.output).parent
        config_section = section_text(Path(request.output), sha256_file(Path(request.output)), info.sha256, folder)
        if request.config_out is not None:
            config_written = _write_config(Path(request.config_out), config_section, info.path.name)
    speed = _speed(request, info.path, written, passed, dataset, tell)
    sizes = Sizes(fp32_bytes=proto.ByteSize(), fp16_bytes=len(data))
    failures = tuple(validation.failures)
    verdict = _verdict(passed, written, request, keep, converter_kept, choice, len(feeds), failures, sizes)
    tell("done", 1.0)
    ops = {n.name: n.op_type for n in proto.graph.node}
    return Fp16Result(
        model=info.path,
        output=Path(request.output),
        written=written,
        forced=request.force and not passed,
        passed=passed,
        ep=request.ep,
        engine=choice.label,
        engine_reason=choice.reason,
        reference="fp32 on the CPU EP",
        dataset=dataset.source,
        samples=labels,
        keep_io_types=request.keep_io_types,
        keep=tuple(sorted({**converter_kept, **keep}.values(), key=lambda k: (k.iteration, k.name))),
        chains=tuple(g.text(ops) for g in groups),
        attempts=tuple(attempts),
        parity=validation.parity,
        nonfinite=validation.nonfinite,
        overflow=tuple(validation.overflow),
        sizes=sizes,
        speed=speed,
        layerwise=layerwise_report,
        upcast=choice.upcast,
        failures=failures,
        verdict=verdict,
        notes=(*notes, *dataset.notes),
        config_section=config_section,
        config_written=config_written,
    )


def _write_config(path: Path, section: str, source: str) -> Path:
    """A new ortgpu.toml holding the [model] section, read back through the one config reader."""

    text = f"# written by ortgpu fp16: ortgpu.load({source!r}, config=...) runs the fp16 model\n\n{section}"
    atomic_write_text(path, text)
    load_config(path)  # a config ortgpu writes and cannot read is a bug: fail here, loudly
    return path


def _with_provenance(model: onnx.ModelProto, sha256: str, keep: Mapping[str, KeptNode]) -> onnx.ModelProto:
    """The model stamped with the fp32 model it came from (``ortgpu.load`` checks it) and its keep-list."""
    values = {SOURCE_SHA_KEY: sha256, KEEP_KEY: ",".join(sorted(keep))}
    for prop in list(model.metadata_props):
        if prop.key in values:
            model.metadata_props.remove(prop)
    for key, value in values.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    return model


def _verdict(
    passed: bool,
    written: bool,
    request: Fp16Request,
    keep: Mapping[str, KeptNode],
    converter_kept: Mapping[str, KeptNode],
    choice: EngineChoice,
    samples: int,
    failures: Sequence[str],
    sizes: Sizes,
) -> str:
    kept = len(keep) + len(converter_kept)
    where = f"{samples} sample(s) on {choice.label}"
    if passed:
        wrote = f"; written to {request.output} ({sizes.ratio:.2f}x the fp32 size)" if written else ""
        return f"PASS: fp16 matches fp32 within tolerance on {where}; {kept} node(s) kept in fp32{wrote}"
    more = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
    forced = f"; written anyway to {request.output} (--force)" if written else "; nothing written"
    return f"FAIL: {failures[0] if failures else 'validation failed'}{more}{forced}"


def _speed(request: Fp16Request, fp32_path: Path, written: bool, passed: bool, dataset: Any, tell: Progress) -> Speed:
    """fp32 against the written fp16 model through the bench engine: IO binding, the same shapes, the same EP."""
    mode = "iobinding"
    if not request.ep.is_gpu:
        note = "not measured: speed is measured on a GPU EP (the CPU EP runs fp16 models largely by casting to fp32)"
        return Speed(request.ep, mode, request.bench_batch, None, None, note)
    if not request.bench:
        return Speed(request.ep, mode, request.bench_batch, None, None, "not measured: --no-bench")
    if not written:
        return Speed(request.ep, mode, request.bench_batch, None, None, "not measured: nothing was written")

    first = dataset.samples[0].inputs
    shapes = {n: tuple(a.shape) for n, a in first.feeds.items()}
    batches = (request.bench_batch,) if request.bench_batch else ()
    if batches:
        shapes = {}
    p50 = []
    for label, path in (("fp32", fp32_path), ("fp16", Path(request.output))):
        tell(f"timing {label} with IO binding", 0.95)
        result = run_bench(
            BenchRequest(
                model=path,
                ep=request.ep,
                modes=(BenchMode.IOBINDING,),
                batches=batches,
                shapes=shapes,
                dims=dict(getattr(request.inputs, "dims", {}) or {}),
                duration_s=request.bench_duration_s,
                provider_options=dict(request.ep_options),
                config=request.config,
                device_id=request.device_id or 0,
            )
        )
        cases = result.measured_cases
        p50.append(cases[0].stats.p50_ms if cases and cases[0].stats else None)
    verdict = None if passed else "the fp16 model did not pass validation (--force)"
    return Speed(request.ep, mode, request.bench_batch or first.batch, p50[0], p50[1], verdict)
