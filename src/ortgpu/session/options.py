"""Turn a validated Config into onnxruntime SessionOptions and the provider chain for one EP."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ortgpu.config import Config, ConfigError, ExecutionMode, GraphOptimizationLevel, validate_ep_options
from ortgpu.ep import ExecutionProvider
from ortgpu.runtime.guard import import_onnxruntime

if TYPE_CHECKING:  # pragma: no cover
    import onnxruntime

__all__ = [
    "VERBOSE",
    "build_session_options",
    "device_of",
    "effective_provider_options",
    "provider_chain",
    "run_options",
]

VERBOSE = 0  # ORT's log severity for "verbose": the level at which it logs node placements


def build_session_options(config: Config, *, log_severity: int, logid: str) -> onnxruntime.SessionOptions:
    """SessionOptions from ``config.session``; ``log_severity`` replaces the configured level while building."""
    ort = import_onnxruntime()

    settings = config.session
    options = ort.SessionOptions()
    level = GraphOptimizationLevel(settings["graph_optimization_level"])
    if not hasattr(ort.GraphOptimizationLevel, level.ort_attr):
        raise ConfigError(
            f"graph_optimization_level = {level.value!r} needs a newer onnxruntime than {ort.__version__}",
            'use "extended" or "all"',
        )
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level.ort_attr)
    options.execution_mode = getattr(ort.ExecutionMode, ExecutionMode(settings["execution_mode"]).ort_attr)
    options.intra_op_num_threads = config.session_int("intra_op_num_threads")
    options.inter_op_num_threads = config.session_int("inter_op_num_threads")
    options.enable_mem_pattern = bool(settings["enable_mem_pattern"])
    options.enable_mem_reuse = bool(settings["enable_mem_reuse"])
    options.enable_cpu_mem_arena = bool(settings["enable_cpu_mem_arena"])
    options.use_deterministic_compute = bool(settings["use_deterministic_compute"])
    for name, value in config.session_dims("free_dims").items():
        options.add_free_dimension_override_by_name(name, value)
    for denotation, value in config.session_dims("free_dim_denotations").items():
        options.add_free_dimension_override_by_denotation(denotation, value)
    options.log_severity_level = log_severity
    options.logid = logid
    return options


def run_options(config: Config) -> onnxruntime.RunOptions:
    """RunOptions at the configured run log level (a session built verbose would otherwise log runs verbosely)."""
    ort = import_onnxruntime()

    options = ort.RunOptions()
    options.log_severity_level = config.session_int("run_log_severity_level")
    return options


def effective_provider_options(
    ep: ExecutionProvider,
    config: Config,
    overrides: Mapping[str, Any] | None = None,
    device_id: int | None = None,
) -> dict[str, str]:
    """The options passed to ``ep``: the config's, then ``overrides`` (validated), then ``device_id``."""
    merged = config.options_for(ep)
    merged.update(validate_ep_options(ep, overrides or {}, "provider options"))
    if ep.is_gpu and device_id is not None:
        merged["device_id"] = str(device_id)
    return merged


def device_of(options: Mapping[str, str]) -> int:
    return int(options.get("device_id", "0"))


def provider_chain(
    ep: ExecutionProvider,
    config: Config,
    overrides: Mapping[str, Any] | None = None,
    device_id: int | None = None,
) -> tuple[list[str], list[dict[str, str]]]:
    """Provider names and their options, most preferred first; CPU always last (ORT adds it anyway).

    TensorRT is followed by CUDA (with the [ep.cuda] options and the same device) so nodes TensorRT does not
    take stay on the GPU, as ORT's TensorRT docs recommend.
    """
    options = effective_provider_options(ep, config, overrides, device_id)
    if ep is ExecutionProvider.CPU:
        return ["CPUExecutionProvider"], [{}]
    names, chain = [ep.ort_name], [options]
    if ep is ExecutionProvider.TENSORRT:
        cuda = config.options_for(ExecutionProvider.CUDA)
        cuda["device_id"] = str(device_of(options))
        names.append(ExecutionProvider.CUDA.ort_name)
        chain.append(cuda)
    names.append("CPUExecutionProvider")
    chain.append({})
    return names, chain
