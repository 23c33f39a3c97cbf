"""`run_check`: strict session, placement, timings, GPU memory and parity for one model on one EP.

The model runs through a backend (:mod:`ortgpu.check.backend`): the onnxruntime wheel Python imports
(:mod:`ortgpu.check.wheel`), or, with ``CheckRequest.package``, a package's own C library in child processes
(:mod:`ortgpu.check.package`). Each produces an :class:`Execution`; parity, saved outputs and the verdict are
then worked out here the same way for all.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.accuracy.dataset import Dataset, load_dataset, split_stacked, stack_outputs
from ortgpu.accuracy.engines import OrtEngine
from ortgpu.accuracy.graph import intermediate_tensors, load_model
from ortgpu.accuracy.layerwise import LayerwiseReport, compare_layers
from ortgpu.accuracy.nonfinite import NonFinite, scan_outputs
from ortgpu.atomic import atomic_write
from ortgpu.check.backend import CheckBackend, CheckRequest, Execution
from ortgpu.check.package import PackageBackend
from ortgpu.check.parity import (
    DEFAULT_TOLERANCES,
    OutputParity,
    ParityStatus,
    Precision,
    check_output_names,
    compare_output,
    worst_sample,
)
from ortgpu.check.result import (
    CheckResult,
    InputSummary,
    ParityReport,
    PlacementStatus,
    ReferenceKind,
    verdict_line,
)
from ortgpu.check.wheel import WheelBackend
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import BadInputError, OrtgpuError
from ortgpu.host import nvml
from ortgpu.model.culprits import explain_run_failure
from ortgpu.model.inputs import (
    DEFAULT_FLOAT_RANGE,
    DEFAULT_INT_RANGE,
    InputError,
    InputSpec,
    ResolvedInputs,
    merge_input_spec,
)
from ortgpu.model.inspect import ModelInfo, inspect_model
from ortgpu.npz import load_npz, member_name_problem, save_npz
from ortgpu.output_paths import check_outputs
from ortgpu.placement import PlacementReport
from ortgpu.progress import Progress, silent
from ortgpu.session.failures import RunFailedError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "CheckRequest",
    "Execution",
    "OutputFileError",
    "ReferenceFileError",
    "backend_for",
    "merge_input_spec",
    "run_check",
]


class ReferenceFileError(BadInputError):
    """--reference FILE.npz cannot be used (exit 2)."""


class OutputFileError(BadInputError):
    """--save-outputs cannot be written where asked (exit 2)."""


def run_check(request: CheckRequest, progress: Progress | None = None) -> CheckResult:
    """Prove ``request.model`` runs on the requested EP with the right numbers; never prints.

    Bad input raises BadInputError subclasses (exit 2) before anything runs or is written; an EP that cannot
    be active raises ProviderUnavailableError (exit 3; ProviderLoadError with ORT's own text for a package)
    unless the config allows a CPU fallback. A check that ran returns a result whose ``failures`` say what did
    not hold (parity off, strict placement broken).
    """
    report = progress or silent
    if request.warm_runs < 0:
        raise BadInputError(f"warm runs {request.warm_runs} is negative", "use 0 or more warm runs")
    _check_output_path(request)
    report("reading the model", 0.0)
    model = inspect_model(request.model)
    check_output_names([request.atol, request.rtol], model.output_names, ["--atol", "--rtol"])
    _check_output_names(request.save_outputs, model.output_names)
    report("making inputs", 0.05)
    spec = request.inputs if request.inputs is not None else request.config.inputs
    dataset = load_dataset(model, spec, request.samples)
    references = None
    if request.reference is not None:
        references = _load_reference(request.reference, model, len(dataset.samples))
    inputs = dataset.samples[0].inputs
    if request.package is not None:
        if request.layerwise:
            raise BadInputError(
                "--layerwise runs through the onnxruntime wheel, not a package's C library",
                "drop --package to compare layer by layer",
            )
        if len(dataset.samples) > 1:
            raise BadInputError(
                f"--package runs one sample; the data set has {len(dataset.samples)}",
                "check a data set through the wheel, or give one sample with --package",
            )
    extra = [s.inputs.feeds for s in dataset.samples[1:]]
    try:
        executed = backend_for(request).execute(request, model, inputs.feeds, report, extra)
    except RunFailedError as exc:
        raise _name_the_inputs(exc, model, inputs, spec) from None

    report("comparing outputs", 0.8)
    all_outputs = [executed.outputs, *executed.more_outputs]
    parity, compared_with = _parity(request, executed, references, dataset)
    nonfinite = _nonfinite(all_outputs, compared_with, dataset)
    layerwise = _layerwise(request, model, inputs.feeds, executed, report) if request.layerwise else None
    saved = None
    if request.save_outputs is not None:
        report("saving outputs", 0.95)
        saved = _save_outputs(request.save_outputs, all_outputs)

    placement = executed.placement
    status = _placement_status(placement)
    failures = _failures(request, parity, placement, status, executed.placement_note, nonfinite)
    report("done", 1.0)
    result = CheckResult(
        model=model.path,
        model_sha256=model.sha256,
        model_node_count=model.node_count,
        ort_version=executed.ort_version,
        requested_ep=executed.requested_ep,
        active_ep=executed.active_ep,
        providers=executed.providers,
        ep_reason=executed.ep_reason,
        fallback_used=executed.fallback_used,
        fallback_reason=executed.fallback_reason,
        device_id=executed.device_id if executed.active_ep.is_gpu else None,
        provider_options=dict(executed.provider_options),
        inputs=_input_summaries(inputs),
        input_notes=inputs.notes,
        timings=executed.timings,
        gpu_memory=executed.gpu_memory,
        placement=placement,
        placement_status=status,
        placement_note=executed.placement_note,
        strict_placement=request.strict_placement,
        parity=parity,
        saved_outputs=saved,
        failures=failures,
        passed=not failures,
        verdict=verdict_line(failures, placement, parity, executed.fallback_used, executed.active_ep),
        package=executed.package,
        nonfinite=nonfinite,
        allow_nonfinite=request.allow_nonfinite,
        samples=dataset.labels if len(dataset.samples) > 1 else (),
        dataset_source=dataset.source,
        dataset_notes=dataset.notes,
        report_to=request.report,
        layerwise=layerwise,
        cuda_libraries=executed.cuda_libraries,
        fixed_dims=executed.fixed_dims,
    )
    return result


def _layerwise(
    request: CheckRequest, model: ModelInfo, feeds: Mapping[str, Any], executed: Execution, report: Progress
) -> LayerwiseReport:
    """Every intermediate tensor on the active EP against the CPU EP (or, on the CPU EP, scanned for NaN/Inf)."""

    report("layer-wise: exposing every intermediate tensor", 0.85)
    proto = load_model(model.path)
    slots, skipped = intermediate_tensors(proto, {name: tuple(a.shape) for name, a in feeds.items()})
    rule = DEFAULT_TOLERANCES[_base_precision(executed.active_ep, executed.provider_options, executed.device_id)]
    options = request.ep_options if executed.active_ep is executed.requested_ep else {}
    with OrtEngine(proto, feeds, executed.active_ep, request.config, request.device_id, options) as tested:
        if executed.active_ep is ExecutionProvider.CPU:
            found, _ = compare_layers(slots, skipped, tested, None, rule.rtol, rule.atol_scale, progress=report)
            return found
        with OrtEngine(proto, feeds, ExecutionProvider.CPU) as cpu:
            cpu.label = "the CPU EP"
            found, _ = compare_layers(slots, skipped, tested, cpu, rule.rtol, rule.atol_scale, progress=report)
            return found


def _nonfinite(
    outputs: list[dict[str, Any]], references: list[Mapping[str, Any]] | None, dataset: Dataset
) -> tuple[NonFinite, ...]:
    """NaN/Inf per output and sample; each names how many the reference holds at that output, when one ran."""
    found: list[NonFinite] = []
    several = len(outputs) > 1
    for index, values in enumerate(outputs):
        reference = references[index] if references is not None and index < len(references) else None
        label = dataset.samples[index].label if several else None
        found.extend(scan_outputs(values, label, reference))
    return tuple(found)


def backend_for(request: CheckRequest) -> CheckBackend:
    """The backend that runs the model: a package's C library when the request names one, else the wheel."""
    return PackageBackend(request.package) if request.package is not None else WheelBackend()


def _name_the_inputs(exc: RunFailedError, model: ModelInfo, inputs: ResolvedInputs, spec: InputSpec) -> OrtgpuError:
    """A run failure traced from the node ORT names to the model inputs it reads: generated ones get the flags that
    replace them (exit 2), values from --inputs are named (exit 1); otherwise the error as it was."""

    dtypes = {i.name: i.dtype for i in model.inputs}
    ranges = {
        name: spec.ranges.get(name, DEFAULT_INT_RANGE if dtype.startswith(("int", "uint")) else DEFAULT_FLOAT_RANGE)
        for name, dtype in dtypes.items()
    }
    culprit = explain_run_failure(exc.message, model.path, dtypes, inputs.sources, ranges, inputs.shapes)
    if culprit is None:
        return exc
    if culprit.generated_only:
        return InputError(culprit.message, culprit.hint)
    return RunFailedError(culprit.message, culprit.hint)


def _input_summaries(inputs: ResolvedInputs) -> tuple[InputSummary, ...]:
    return tuple(
        InputSummary(name, str(array.dtype), tuple(array.shape), inputs.sources.get(name, "generated"))
        for name, array in inputs.feeds.items()
    )


# --------------------------------------------------------------------------------------------- reference, output


def _load_reference(path: Path, model: ModelInfo, samples: int = 1) -> list[dict[str, np.ndarray]]:
    """The reference outputs per sample: with several samples, arrays carry a leading sample axis."""
    hint = "give an .npz written by ortgpu check --save-outputs (arrays named after the model's outputs)"
    arrays = load_npz(path, what="reference file", contents="outputs", error=ReferenceFileError, hint=hint)
    for name in arrays:
        if arrays[name].dtype.kind not in "biufUS":
            raise ReferenceFileError(
                f"reference {path}: array {name!r} has dtype {arrays[name].dtype.str}, not numbers or text "
                "(raw bytes of a type numpy lacks, such as float8 or bfloat16, cannot be compared)",
                "store the reference as float32/float16/int/bool/str arrays",
            )
    if not set(arrays) & set(model.output_names):
        raise ReferenceFileError(
            f"reference {path.name} has none of the model's outputs ({', '.join(model.output_names)}); "
            f"it holds {', '.join(sorted(arrays)) or 'nothing'}",
            hint,
        )
    if samples == 1:
        return [arrays]

    ranks = {o.name: o.rank for o in model.outputs}
    try:
        split = split_stacked(arrays, ranks, path.name)
    except BadInputError as exc:
        raise ReferenceFileError(exc.message, exc.hint) from None
    if split is None or len(split) != samples:
        found = "no sample axis" if split is None else f"{len(split)} samples"
        raise ReferenceFileError(
            f"reference {path.name}: the data set has {samples} samples, the reference has {found}",
            "give one reference per sample along a leading axis (check --save-outputs writes that)",
        )
    return split


def _check_output_path(request: CheckRequest) -> None:
    """Before any work: --save-outputs is an .npz path and --report a file that can be written, neither an input."""

    path = request.save_outputs
    if path is not None and path.suffix != ".npz":
        raise OutputFileError(f"--save-outputs {path}: the file name must end in .npz", f"e.g. {path.stem}.npz")
    outputs = {label: p for label, p in (("--save-outputs", path), ("--report", request.report)) if p is not None}
    if not outputs:
        return
    spec = request.inputs if request.inputs is not None else request.config.inputs
    inputs = (request.model, request.reference, spec.npz if spec else None, request.config.source, request.package)
    check_outputs(outputs, inputs, error=OutputFileError)


def _check_output_names(path: Path | None, output_names: tuple[str, ...]) -> None:
    """Before the run: every output name must be a safe .npz member name when --save-outputs is given."""
    if path is None:
        return

    for name in output_names:
        problem = member_name_problem(name)
        if problem is not None:
            raise OutputFileError(
                f"--save-outputs: the model's output {name!r} cannot be an .npz member name: {problem}",
                "rename that output in the model, or run without --save-outputs",
            )


def _save_outputs(path: Path, outputs: list[dict[str, Any]]) -> Path:
    """One sample: its arrays; several: each output stacked along a leading sample axis."""
    import numpy as np

    per_sample = []
    for values in outputs:
        arrays = {}
        for name, value in values.items():
            if isinstance(value, np.ndarray):
                # Text as fixed-width unicode: object arrays would need pickle to load back.
                arrays[name] = value.astype(str) if value.dtype.kind in "OSU" else value
        per_sample.append(arrays)
    try:
        arrays = per_sample[0] if len(per_sample) == 1 else stack_outputs(per_sample)
    except BadInputError as exc:
        raise OutputFileError(exc.message, exc.hint) from None
    atomic_write(path, lambda handle: save_npz(handle, arrays))
    return path


def _compute_capability(device_id: int) -> tuple[int, int] | None:
    driver = nvml.query_driver()
    visible = nvml.map_visible_devices(
        driver.gpus, os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("CUDA_DEVICE_ORDER")
    )
    match = next((d for d in visible.devices if d.device_id == device_id), None)
    return match.gpu.compute_capability if match else None


# --------------------------------------------------------------------------------------------- placement


def _placement_status(placement: PlacementReport | None) -> PlacementStatus:
    if placement is None:
        return PlacementStatus.UNKNOWN
    return PlacementStatus.ALL_ON_EP if placement.all_on_requested else PlacementStatus.PARTIAL


# --------------------------------------------------------------------------------------------- parity


def _base_precision(ep: ExecutionProvider, options: Mapping[str, str], device_id: int) -> Precision:
    """The float precision ``ep`` computes fp32 in with these provider options, which picks the default
    tolerances."""
    if ep is ExecutionProvider.CPU:
        return Precision.FP32
    if ep is ExecutionProvider.TENSORRT and (
        options.get("trt_fp16_enable") == "1" or options.get("trt_bf16_enable") == "1"
    ):
        return Precision.FP16
    tf32_allowed = os.environ.get("NVIDIA_TF32_OVERRIDE") != "0"
    if ep is ExecutionProvider.CUDA:
        tf32_allowed = tf32_allowed and options.get("use_tf32", "1") != "0"  # ORT's default is on
    capability = _compute_capability(device_id)
    if capability is not None and capability < (8, 0):
        tf32_allowed = False  # TF32 tensor cores start with Ampere (sm_80)
    return Precision.TF32 if tf32_allowed else Precision.FP32_GPU


def _parity(
    request: CheckRequest,
    executed: Execution,
    references: list[dict[str, np.ndarray]] | None,
    dataset: Dataset,
) -> tuple[ParityReport, list[Mapping[str, Any]] | None]:
    """Parity over every sample (each output reports its worst sample) and the reference outputs used."""
    base = _base_precision(executed.active_ep, executed.provider_options, executed.device_id)
    if request.config.model.get("precision") == "fp16":  # a converted [model] file: fp16 weights and compute
        base = Precision.FP16
    outputs = [executed.outputs, *executed.more_outputs]
    if references is not None:
        compared = _compare_samples(request, outputs, references, base, dataset)
        extra = tuple(sorted(set(references[0]) - set(executed.outputs)))
        report = ParityReport(
            ReferenceKind.FILE,
            _overall(compared),
            _skip_reason(compared),
            request.reference,
            compared,
            extra,
        )
        used: list[Mapping[str, Any]] = list(references)
        return report, used
    if executed.active_ep is ExecutionProvider.CPU:
        why = (
            "same EP: the session fell back to the CPU EP, nothing independent to compare with"
            if executed.fallback_used
            else "same EP: the requested EP is the CPU EP (give --reference FILE.npz to compare)"
        )
        return ParityReport(ReferenceKind.NONE, ParityStatus.SKIPPED, why), None
    expected: list[Mapping[str, Any]]
    if len(outputs) > 1 and executed.cpu_references is not None:
        expected = list(executed.cpu_references())
    else:
        expected = [dict(executed.cpu_reference())]
    compared = _compare_samples(request, outputs, expected, base, dataset)
    return ParityReport(ReferenceKind.CPU_EP, _overall(compared), _skip_reason(compared), None, compared), expected


def _compare_samples(
    request: CheckRequest,
    outputs: list[dict[str, Any]],
    references: Sequence[Mapping[str, Any]],
    base: Precision,
    dataset: Dataset,
) -> tuple[OutputParity, ...]:
    per_sample = [_compare_all(request, out, ref, base) for out, ref in zip(outputs, references, strict=True)]
    if len(per_sample) == 1:
        return per_sample[0]
    labels = dataset.labels
    return tuple(
        worst_sample([(labels[i], sample[k]) for i, sample in enumerate(per_sample)]) for k in range(len(per_sample[0]))
    )


def _compare_all(
    request: CheckRequest, outputs: Mapping[str, Any], reference: Mapping[str, Any], base: Precision
) -> tuple[OutputParity, ...]:
    import numpy as np

    compared = []
    for name, value in outputs.items():
        if name not in reference:
            compared.append(OutputParity(name, ParityStatus.SKIPPED, "not in the reference"))
            continue
        is_float = isinstance(value, np.ndarray) and value.dtype.kind == "f"
        compared.append(
            compare_output(
                name,
                value,
                reference[name],
                base,
                atol=request.atol.for_output(name, is_float),
                rtol=request.rtol.for_output(name, is_float),
            )
        )
    return tuple(compared)


def _overall(compared: tuple[OutputParity, ...]) -> ParityStatus:
    statuses = {c.status for c in compared}
    if ParityStatus.FAIL in statuses:
        return ParityStatus.FAIL
    return ParityStatus.PASS if ParityStatus.PASS in statuses else ParityStatus.SKIPPED


def _skip_reason(compared: tuple[OutputParity, ...]) -> str | None:
    if _overall(compared) is not ParityStatus.SKIPPED:
        return None
    return "nothing compared: " + "; ".join(f"{c.name}: {c.reason}" for c in compared) if compared else "no outputs"


# --------------------------------------------------------------------------------------------- verdict


def _failures(
    request: CheckRequest,
    parity: ParityReport,
    placement: PlacementReport | None,
    status: PlacementStatus,
    placement_note: str | None,
    nonfinite: tuple[NonFinite, ...] = (),
) -> tuple[str, ...]:
    failures = []
    if not request.allow_nonfinite:
        failures += [f"{item.line()} (pass --allow-nonfinite if the model means them)" for item in nonfinite]
    failures += [c.failure_line() for c in parity.outputs if c.status is ParityStatus.FAIL]
    if request.strict_placement:
        if status is PlacementStatus.UNKNOWN:
            failures.append(f"--strict-placement: the placement could not be read ({placement_note})")
        elif status is PlacementStatus.PARTIAL and placement is not None:
            shown = ", ".join(
                f"{n.op_type} ({n.name}) on {n.provider}" + (f" [{n.reason.value}]" if n.reason else "")
                for n in placement.off_requested[:5]
            )
            more = f" and {len(placement.off_requested) - 5} more" if len(placement.off_requested) > 5 else ""
            failures.append(
                f"--strict-placement: {placement.off_requested_count} compute node(s) left "
                f"{placement.requested_provider}: {shown}{more}"
            )
    return tuple(failures)
