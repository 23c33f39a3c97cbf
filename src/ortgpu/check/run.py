"""`run_check`: strict session, placement, timings, GPU memory and parity for one model on one EP.

The model runs through the onnxruntime wheel Python imports, or (``CheckRequest.package``) through a package's
own C library in a child process (:mod:`ortgpu.check.package`). Both produce an :class:`Execution`; parity,
saved outputs and the verdict are then worked out the same way for both.
"""

from __future__ import annotations

import os
import statistics
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.accuracy.nonfinite import NonFinite, scan_outputs
from ortgpu.check.fixed_dims import FixedDimsProbe, probe_fixed_dims
from ortgpu.check.parity import (
    OutputParity,
    ParityStatus,
    Precision,
    Tolerance,
    check_output_names,
    compare_output,
    worst_sample,
)
from ortgpu.check.result import (
    CheckResult,
    GpuMemory,
    InputSummary,
    PackageLibrary,
    ParityReport,
    PlacementStatus,
    ReferenceKind,
    Timings,
    verdict_line,
)
from ortgpu.config import Config, ExecutionProvider
from ortgpu.errors import BadInputError, OrtgpuError
from ortgpu.placement import PlacementReport
from ortgpu.runtime.guard import import_onnxruntime
from ortgpu.session.failures import RunFailedError
from ortgpu.session.options import device_of, effective_provider_options

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ortgpu.accuracy.dataset import Dataset
    from ortgpu.accuracy.layerwise import LayerwiseReport
    from ortgpu.model.inputs import InputSpec, ResolvedInputs
    from ortgpu.model.inspect import ModelInfo
    from ortgpu.session import VerifiedSession

__all__ = [
    "CheckRequest",
    "Execution",
    "OutputFileError",
    "ReferenceFileError",
    "merge_input_spec",
    "run_check",
]

Progress = Callable[[str, float | None], None]


class ReferenceFileError(BadInputError):
    """--reference FILE.npz cannot be used (exit 2)."""


class OutputFileError(BadInputError):
    """--save-outputs cannot be written where asked (exit 2)."""


@dataclass(frozen=True)
class CheckRequest:
    """What to check. ``inputs`` None uses ``config.inputs``; ``ep`` None picks the best available EP.

    ``package``: run through the ONNX Runtime C library in this release archive, extracted folder, wheel, any
    folder holding libonnxruntime, or the library file itself, instead of the onnxruntime wheel Python imports.
    ``samples``: generated samples to run (or the most to take from a data set); the inputs' ``npz`` may be a
    folder of .npz files or one .npz whose arrays carry a leading sample axis. ``allow_nonfinite``: NaN/Inf in
    an output is not a failure by itself. ``report``: write an HTML report (error histograms) there.
    ``layerwise``: also compare every intermediate tensor with the CPU EP (on the first sample) and report where
    the two first part; on the CPU EP itself, where NaN/Inf first appear.
    """

    model: Path
    ep: ExecutionProvider | None = None
    ep_options: Mapping[str, str] = field(default_factory=dict)
    device_id: int | None = None
    config: Config = field(default_factory=Config)
    inputs: InputSpec | None = None
    reference: Path | None = None
    atol: Tolerance = field(default_factory=Tolerance)
    rtol: Tolerance = field(default_factory=Tolerance)
    strict_placement: bool = False
    save_outputs: Path | None = None
    warm_runs: int = 5
    package: Path | None = None
    samples: int | None = None
    allow_nonfinite: bool = False
    report: Path | None = None
    layerwise: bool = False


@dataclass(frozen=True)
class Execution:
    """What running the model on the requested EP gave, through the wheel or a package's C library."""

    outputs: dict[str, Any]  # by output name, from the first run
    requested_ep: ExecutionProvider
    active_ep: ExecutionProvider
    providers: tuple[str, ...]
    ep_reason: str | None
    fallback_used: bool
    fallback_reason: str | None
    device_id: int  # the CUDA device of the options (0 on CPU)
    provider_options: dict[str, str]
    timings: Timings
    gpu_memory: GpuMemory
    placement: PlacementReport | None
    placement_note: str | None
    ort_version: str
    cpu_reference: Callable[[], Mapping[str, Any]]  # the CPU EP's outputs on the same inputs (run when called)
    package: PackageLibrary | None = None
    more_outputs: tuple[dict[str, Any], ...] = ()  # outputs of the data set's further samples, in order
    cpu_references: Callable[[], list[dict[str, Any]]] | None = None  # the CPU EP's, for every sample
    cuda_libraries: str | None = None  # GPU EPs through the wheel: how CUDA/cuDNN were loaded (preload_dlls or not)
    fixed_dims: FixedDimsProbe | None = None  # placement with the open dims fixed, when nodes left the EP


def merge_input_spec(
    base: InputSpec,
    *,
    shapes: Mapping[str, tuple[int, ...]] | None = None,
    dims: Mapping[str, int] | None = None,
    ranges: Mapping[str, tuple[float, float]] | None = None,
    npz: Path | None = None,
    seed: int | None = None,
) -> InputSpec:
    """The config's [inputs] with command-line values laid over it, name by name."""
    return replace(
        base,
        shapes={**base.shapes, **(shapes or {})},
        dims={**base.dims, **(dims or {})},
        ranges={**base.ranges, **(ranges or {})},
        npz=npz if npz is not None else base.npz,
        seed=seed if seed is not None else base.seed,
    )


def _silent(message: str, fraction: float | None = None) -> None:
    """The progress callback used when the caller gives none."""


def run_check(request: CheckRequest, progress: Progress | None = None) -> CheckResult:
    """Prove ``request.model`` runs on the requested EP with the right numbers; never prints.

    Bad input raises BadInputError subclasses (exit 2) before anything runs or is written; an EP that cannot
    be active raises ProviderUnavailableError (exit 3; ProviderLoadError with ORT's own text for a package)
    unless the config allows a CPU fallback. A check that ran returns a result whose ``failures`` say what did
    not hold (parity off, strict placement broken).
    """
    from ortgpu.accuracy.dataset import load_dataset
    from ortgpu.model.inspect import inspect_model

    report = progress or _silent
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
    try:
        if request.package is not None:
            from ortgpu.check.package import run_through_package

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
            executed = run_through_package(request, request.package, model, inputs.feeds, report)
        else:
            extra = [s.inputs.feeds for s in dataset.samples[1:]]
            executed = _run_through_wheel(request, model, inputs.feeds, report, extra)
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
    if request.report is not None:
        from ortgpu.report.accuracy import write_check_report

        write_check_report(result, request.report)
    return result


def _layerwise(
    request: CheckRequest, model: ModelInfo, feeds: Mapping[str, Any], executed: Execution, report: Progress
) -> LayerwiseReport:
    """Every intermediate tensor on the active EP against the CPU EP (or, on the CPU EP, scanned for NaN/Inf)."""
    from ortgpu.accuracy.engines import OrtEngine
    from ortgpu.accuracy.graph import intermediate_tensors, load_model
    from ortgpu.accuracy.layerwise import compare_layers
    from ortgpu.check.parity import DEFAULT_TOLERANCES

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


def _name_the_inputs(exc: RunFailedError, model: ModelInfo, inputs: ResolvedInputs, spec: InputSpec) -> OrtgpuError:
    """A run failure traced from the node ORT names to the model inputs it reads: generated ones get the flags that
    replace them (exit 2), values from --inputs are named (exit 1); otherwise the error as it was."""
    from ortgpu.model.culprits import explain_run_failure
    from ortgpu.model.inputs import DEFAULT_FLOAT_RANGE, DEFAULT_INT_RANGE, InputError

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


def _run_through_wheel(
    request: CheckRequest,
    model: ModelInfo,
    feeds: Mapping[str, Any],
    report: Progress,
    extra: list[Mapping[str, Any]] | None = None,
) -> Execution:
    """The session through the onnxruntime wheel, in this process: creation, first and warm runs, placement."""
    ort = import_onnxruntime()

    from ortgpu.session import best_available_ep, open_session

    ep, ep_reason = (request.ep, None) if request.ep is not None else best_available_ep()
    # Validated before anything runs: a bad --ep-option is exit 2 here, not after a GPU session was built.
    options = effective_provider_options(ep, request.config, request.ep_options, request.device_id)
    memory_probe = _MemoryProbe.start(ep, device_of(options))
    report(f"building the session on {ep.ort_name}", 0.1)
    session = open_session(
        model.path,
        ep,
        request.config,
        request.device_id,
        request.ep_options,
        collect_placement=True,
        model_info=model,
    )
    with session:
        report("first run", 0.3)
        outputs_list = session.run(feeds)
        first_run_s = session.last_run_s or 0.0
        warm = []
        for index in range(request.warm_runs):
            report(f"warm run {index + 1}/{request.warm_runs}", 0.35 + 0.3 * index / max(request.warm_runs, 1))
            session.run(feeds)
            warm.append(session.last_run_s or 0.0)
        gpu_memory = memory_probe.finish(session)
        outputs = dict(zip(session.output_names, outputs_list, strict=True))
        more = []
        for index, sample in enumerate(extra or []):
            report(f"sample {index + 2}/{len(extra or []) + 1}", 0.65 + 0.05 * index / max(len(extra or []), 1))
            more.append(dict(zip(session.output_names, session.run(sample), strict=True)))
        timings = Timings(
            creation_s=session.creation_s,
            first_run_s=first_run_s,
            warm_median_s=statistics.median(warm) if warm else None,
            warm_min_s=min(warm) if warm else None,
            warm_runs=len(warm),
        )
        placement, placement_note = session.placement, session.placement_note
    if placement is None:
        report("reading placement from a profiled run", 0.7)
        placement, placement_note = _profile_placement(model, ep, request, feeds, placement_note)
    fixed = None
    if placement is not None and placement.off_requested_count:
        report("placement with the open dims fixed", 0.75)
        shapes = {name: tuple(array.shape) for name, array in feeds.items()}
        fixed = probe_fixed_dims(
            model.path, ep, request.config, shapes, placement, open_session,
            device_id=request.device_id, ep_options=request.ep_options, model_info=model,
        )  # fmt: skip

    def cpu_references() -> list[dict[str, Any]]:
        with open_session(model.path, ExecutionProvider.CPU, Config(), model_info=model) as cpu:
            return [dict(zip(cpu.output_names, cpu.run(f), strict=True)) for f in [feeds, *(extra or [])]]

    def cpu_reference() -> dict[str, Any]:
        return cpu_references()[0]

    return Execution(
        outputs=outputs,
        requested_ep=session.requested_ep,
        active_ep=session.active_ep,
        providers=tuple(session.providers),
        ep_reason=ep_reason,
        fallback_used=session.fallback_used,
        fallback_reason=session.fallback_reason,
        device_id=session.device_id,
        provider_options=dict(session.provider_options),
        timings=timings,
        gpu_memory=gpu_memory,
        placement=placement,
        placement_note=placement_note,
        ort_version=ort.__version__,
        cpu_reference=cpu_reference,
        more_outputs=tuple(more),
        cpu_references=cpu_references,
        cuda_libraries=session.cuda_libraries,
        fixed_dims=fixed,
    )


# --------------------------------------------------------------------------------------------- reference, output


def _load_reference(path: Path, model: ModelInfo, samples: int = 1) -> list[dict[str, np.ndarray]]:
    """The reference outputs per sample: with several samples, arrays carry a leading sample axis."""
    from ortgpu.npz import load_npz

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
    from ortgpu.accuracy.dataset import split_stacked

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
    from ortgpu.output_paths import check_outputs

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
    from ortgpu.npz import member_name_problem

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

    from ortgpu.accuracy.dataset import stack_outputs
    from ortgpu.atomic import atomic_write
    from ortgpu.npz import save_npz

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


# --------------------------------------------------------------------------------------------- GPU memory


@dataclass
class _MemoryProbe:
    nvml_index: int | None
    before: int | None
    note: str | None

    @classmethod
    def start(cls, ep: ExecutionProvider, device: int) -> _MemoryProbe:
        if not ep.is_gpu:
            return cls(None, None, "not measured: the session runs on the CPU EP")
        from ortgpu.env.nvml import device_memory_used_bytes

        index, note = _nvml_index(device)
        if index is None:
            return cls(None, None, note)
        before = device_memory_used_bytes(index)
        if before is None:
            return cls(None, None, "not measured: NVML did not answer")
        return cls(index, before, note)

    def finish(self, session: VerifiedSession) -> GpuMemory:
        if not session.active_ep.is_gpu:
            note = self.note if session.requested_ep is session.active_ep else "not measured: fell back to CPU"
            return GpuMemory(used_bytes=None, note=note or "not measured: the session runs on the CPU EP")
        if self.nvml_index is None or self.before is None:
            return GpuMemory(used_bytes=None, note=self.note)
        from ortgpu.env.nvml import device_memory_used_bytes

        after = device_memory_used_bytes(self.nvml_index)
        if after is None:
            return GpuMemory(used_bytes=None, nvml_index=self.nvml_index, note="not measured: NVML did not answer")
        return GpuMemory(
            used_bytes=after - self.before,
            before_bytes=self.before,
            after_bytes=after,
            nvml_index=self.nvml_index,
            note=self.note or "device-wide NVML delta: includes the CUDA context; other processes count too",
        )


def _nvml_index(device_id: int) -> tuple[int | None, str | None]:
    """The NVML index of CUDA device ``device_id`` under CUDA_VISIBLE_DEVICES."""
    from ortgpu.env.nvml import map_visible_devices, query_driver

    driver = query_driver()
    if not driver.present:
        return None, f"not measured: NVML unavailable ({driver.error})"
    visible = map_visible_devices(
        driver.gpus, os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("CUDA_DEVICE_ORDER")
    )
    match = next((d for d in visible.devices if d.device_id == device_id), None)
    if match is None:
        return None, f"not measured: CUDA device {device_id} is not among the visible GPUs"
    return match.gpu.index, (visible.note if not visible.exact else None)


def _compute_capability(device_id: int) -> tuple[int, int] | None:
    from ortgpu.env.nvml import map_visible_devices, query_driver

    driver = query_driver()
    visible = map_visible_devices(
        driver.gpus, os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("CUDA_DEVICE_ORDER")
    )
    match = next((d for d in visible.devices if d.device_id == device_id), None)
    return match.gpu.compute_capability if match else None


# --------------------------------------------------------------------------------------------- placement


def _profile_placement(
    model: ModelInfo,
    ep: ExecutionProvider,
    request: CheckRequest,
    feeds: Mapping[str, Any],
    note: str | None,
) -> tuple[PlacementReport | None, str | None]:
    """Placement from ORT profiling of one run, when the build log gave none."""
    from ortgpu.placement import parse_profile_file
    from ortgpu.session import open_session

    with (
        tempfile.TemporaryDirectory(prefix="ortgpu-profile-") as folder,
        open_session(
            model.path,
            ep,
            request.config,
            request.device_id,
            request.ep_options,
            model_info=model,
            profile_dir=Path(folder),
        ) as session,
    ):
        session.run(feeds)
        placement = parse_profile_file(session.end_profiling(), session.active_ep.ort_name)
    if placement is None:
        return None, (note or "") + "; profiling recorded no node either"
    return placement, "from ORT profiling of one run: nodes that did not run (untaken If branches) are not seen"


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
        return report, list(references)
    if executed.active_ep is ExecutionProvider.CPU:
        why = (
            "same EP: the session fell back to the CPU EP, nothing independent to compare with"
            if executed.fallback_used
            else "same EP: the requested EP is the CPU EP (give --reference FILE.npz to compare)"
        )
        return ParityReport(ReferenceKind.NONE, ParityStatus.SKIPPED, why), None
    if len(outputs) > 1 and executed.cpu_references is not None:
        expected = executed.cpu_references()
    else:
        expected = [dict(executed.cpu_reference())]
    compared = _compare_samples(request, outputs, expected, base, dataset)
    return ParityReport(ReferenceKind.CPU_EP, _overall(compared), _skip_reason(compared), None, compared), expected


def _compare_samples(
    request: CheckRequest,
    outputs: list[dict[str, Any]],
    references: list[Mapping[str, Any]],
    base: Precision,
    dataset: Dataset,
) -> tuple[OutputParity, ...]:
    per_sample = [_compare_all(request, out, ref, base) for out, ref in zip(outputs, references, strict=True)]
    if len(per_sample) == 1:
        return per_sample[0]
    labels = dataset.labels
    return tuple(
        worst_sample([(labels[i], sample[k]) for i, sample in enumerate(per_sample)])
        for k in range(len(per_sample[0]))
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
