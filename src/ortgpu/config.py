"""`ortgpu.toml`: every setting declared once (type, default, help); the declaration drives validation and docs."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.errors import BadInputError, quoted
from ortgpu.limits import CONFIG_LIMIT, parse_nested, read_input_text

if TYPE_CHECKING:  # pragma: no cover
    from ortgpu.model.inputs import InputSpec

__all__ = [
    "CUDA_OPTIONS",
    "INPUT_SETTINGS",
    "MODEL_SETTINGS",
    "RUN_SETTINGS",
    "SESSION_SETTINGS",
    "TENSORRT_OPTIONS",
    "TOP_LEVEL_SETTINGS",
    "Config",
    "ConfigError",
    "ExecutionMode",
    "ExecutionProvider",
    "Fallback",
    "GraphOptimizationLevel",
    "Kind",
    "Setting",
    "config_reference_markdown",
    "default_config",
    "load_config",
    "options_for",
    "parse_bytes",
    "parse_ep_option",
    "validate_ep_options",
]


class ConfigError(BadInputError):
    """A config file, provider option or setting value that cannot be used (exit 2)."""


class ExecutionProvider(Enum):
    """The execution providers ortgpu drives."""

    CPU = "cpu"
    CUDA = "cuda"
    TENSORRT = "tensorrt"

    @property
    def ort_name(self) -> str:
        return {
            ExecutionProvider.CPU: "CPUExecutionProvider",
            ExecutionProvider.CUDA: "CUDAExecutionProvider",
            ExecutionProvider.TENSORRT: "TensorrtExecutionProvider",
        }[self]

    @property
    def is_gpu(self) -> bool:
        return self is not ExecutionProvider.CPU

    @classmethod
    def from_ort_name(cls, name: str) -> ExecutionProvider | None:
        return next((ep for ep in cls if ep.ort_name == name), None)

    @classmethod
    def parse(cls, text: str) -> ExecutionProvider:
        """ "cuda", "CUDA" or "CUDAExecutionProvider" -> CUDA; anything else is a ConfigError with a did-you-mean."""
        value = text.strip()
        for ep in cls:
            if value.lower() in (ep.value, ep.ort_name.lower()):
                return ep
        raise ConfigError(
            f"unknown execution provider {text!r}{_did_you_mean(value.lower(), [e.value for e in cls])}",
            "use one of: " + ", ".join(e.value for e in cls),
        )


class Fallback(Enum):
    """What to do when the requested EP cannot be active: fail (default) or run on CPU and record it."""

    NONE = "none"
    CPU = "cpu"


class GraphOptimizationLevel(Enum):
    DISABLE = "disable"
    BASIC = "basic"
    EXTENDED = "extended"
    LAYOUT = "layout"
    ALL = "all"

    @property
    def ort_attr(self) -> str:
        """The member name in onnxruntime.GraphOptimizationLevel."""
        return {
            GraphOptimizationLevel.DISABLE: "ORT_DISABLE_ALL",
            GraphOptimizationLevel.BASIC: "ORT_ENABLE_BASIC",
            GraphOptimizationLevel.EXTENDED: "ORT_ENABLE_EXTENDED",
            GraphOptimizationLevel.LAYOUT: "ORT_ENABLE_LAYOUT",
            GraphOptimizationLevel.ALL: "ORT_ENABLE_ALL",
        }[self]


class ExecutionMode(Enum):
    SEQUENTIAL = "sequential"
    PARALLEL = "parallel"

    @property
    def ort_attr(self) -> str:
        return {ExecutionMode.SEQUENTIAL: "ORT_SEQUENTIAL", ExecutionMode.PARALLEL: "ORT_PARALLEL"}[self]


class Kind(Enum):
    """The type of a setting's value, as written in ortgpu.toml."""

    BOOL = "bool"
    INT = "int"
    BYTES = "bytes"  # an int, or a string with a unit: "8GB" (10^9), "512MiB" (2^20)
    CHOICE = "choice"
    STR = "string"
    SHAPES = "table of shapes"  # {name = "1x3x224x224"} or {name = [1, 3, 224, 224]}
    DIMS = "table of ints"  # {symbol = 8}
    RANGES = "table of [low, high]"
    PATH = "path"  # relative to the config file's folder


@dataclass(frozen=True)
class Setting:
    """One setting: its declaration is the single source for validation and for docs/config.md."""

    name: str
    kind: Kind
    help: str
    default: Any = None  # None: not passed to onnxruntime, which then uses its own default (`ort_default`)
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None
    ort_default: str | None = None  # what onnxruntime does when the setting is left out (docs only)

    def parse(self, value: Any, where: str) -> Any:
        """The validated Python value (str/int/bool/float, or an enum member's value for choices)."""
        return _PARSERS[self.kind](self, value, where)

    def to_provider_value(self, value: Any) -> str:
        """The string onnxruntime's provider-option parser expects."""
        if isinstance(value, bool):
            return "1" if value else "0"
        return str(value)


# ---------------------------------------------------------------------------------------------------------------
# The declarations. Edit here; docs/config.md is generated from them (python -m ortgpu.config > docs/config.md).
# ---------------------------------------------------------------------------------------------------------------

TOP_LEVEL_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "fallback",
        Kind.CHOICE,
        "What happens when the requested execution provider cannot be active (its library fails to load, no GPU): "
        '"none" fails with exit 3 and the cause; "cpu" runs on the CPU EP and records `fallback_used` in every '
        "result.",
        default="none",
        choices=tuple(f.value for f in Fallback),
    ),
)

SESSION_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "graph_optimization_level",
        Kind.CHOICE,
        "Graph optimisations ORT applies when it builds the session. `layout` needs onnxruntime >= 1.22.",
        default="all",
        choices=tuple(g.value for g in GraphOptimizationLevel),
    ),
    Setting(
        "execution_mode",
        Kind.CHOICE,
        "Run independent branches of the graph one at a time or in parallel (inter-op threads; CPU only).",
        default="sequential",
        choices=tuple(m.value for m in ExecutionMode),
    ),
    Setting(
        "intra_op_num_threads",
        Kind.INT,
        "Threads used inside one operator on the CPU EP. 0 lets ORT pick (one per physical core).",
        default=0,
        minimum=0,
    ),
    Setting(
        "inter_op_num_threads",
        Kind.INT,
        'Threads used to run operators in parallel when execution_mode = "parallel". 0 lets ORT pick.',
        default=0,
        minimum=0,
    ),
    Setting(
        "enable_mem_pattern",
        Kind.BOOL,
        "Pre-plan memory from the first run's shapes. Has no benefit with shapes that change between runs.",
        default=True,
    ),
    Setting("enable_mem_reuse", Kind.BOOL, "Reuse intermediate buffers inside one run.", default=True),
    Setting(
        "enable_cpu_mem_arena", Kind.BOOL, "Use an arena for CPU memory (faster, holds on to memory).", default=True
    ),
    Setting(
        "use_deterministic_compute",
        Kind.BOOL,
        "Ask kernels for deterministic algorithms where they have a choice (may be slower).",
        default=False,
    ),
    Setting(
        "free_dims",
        Kind.DIMS,
        "Fix symbolic dims by name when the session is built (ORT's free-dimension overrides): `{ batch = 8 }`. "
        "ORT then folds the shape computations it would otherwise run on the CPU, so every node can stay on the "
        "GPU and a CUDA graph can be captured; inputs of any other size are refused.",
        default={},
    ),
    Setting(
        "free_dim_denotations",
        Kind.DIMS,
        "The same, for dims the model marks with a denotation instead of a name: `{ DATA_BATCH = 8 }`.",
        default={},
    ),
    Setting(
        "log_severity_level",
        Kind.INT,
        "ORT's log level while the session is built: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal. ortgpu "
        "captures that log instead of printing it (it names load failures; at 0 it lists node placements, which "
        "is why ortgpu builds at 0 when it reports placement).",
        default=2,
        minimum=0,
        maximum=4,
    ),
    Setting(
        "run_log_severity_level",
        Kind.INT,
        "ORT's log level while the session runs. 4 (fatal only) by default: a failing run raises an error that "
        "carries ORT's message, so ORT's own log line would only repeat it on stderr.",
        default=4,
        minimum=0,
        maximum=4,
    ),
)

CUDA_OPTIONS: tuple[Setting, ...] = (
    Setting(
        "device_id",
        Kind.INT,
        "CUDA device to run on (after CUDA_VISIBLE_DEVICES renumbering).",
        minimum=0,
        ort_default="0",
    ),
    Setting(
        "gpu_mem_limit",
        Kind.BYTES,
        'Upper bound of the CUDA EP\'s memory arena, in bytes; "8GB" (8*10^9) and "8GiB" (8*2^30) are converted.',
        minimum=1,
        ort_default="no limit",
    ),
    Setting(
        "arena_extend_strategy",
        Kind.CHOICE,
        "How the arena grows: by powers of two (fewer allocations, more waste) or by what was asked for.",
        choices=("kNextPowerOfTwo", "kSameAsRequested"),
        ort_default="kNextPowerOfTwo",
    ),
    Setting(
        "cudnn_conv_algo_search",
        Kind.CHOICE,
        "How cuDNN picks convolution algorithms: benchmark all on the first run of each shape (EXHAUSTIVE), a "
        "heuristic (HEURISTIC) or the default algorithm (DEFAULT).",
        choices=("EXHAUSTIVE", "HEURISTIC", "DEFAULT"),
        ort_default="EXHAUSTIVE",
    ),
    Setting(
        "do_copy_in_default_stream",
        Kind.BOOL,
        "Do copies on the compute stream. Turning it off can race on some models (ORT issue 4829).",
        ort_default="true",
    ),
    Setting(
        "cudnn_conv_use_max_workspace",
        Kind.BOOL,
        "Let cuDNN use as much workspace as it wants while searching convolution algorithms (faster convs, more "
        "memory).",
        ort_default="true",
    ),
    Setting(
        "cudnn_conv1d_pad_to_nc1d",
        Kind.BOOL,
        "Pad 1-D convolutions as [N, C, 1, D] instead of [N, C, D, 1].",
        ort_default="false",
    ),
    Setting(
        "enable_cuda_graph",
        Kind.BOOL,
        "Capture the whole graph into a CUDA graph after warm-up and replay it (needs fixed shapes, every node on "
        "CUDA and IO binding).",
        ort_default="false",
    ),
    Setting(
        "enable_skip_layer_norm_strict_mode",
        Kind.BOOL,
        "Accumulate SkipLayerNormalization in fp32 for accuracy (slower).",
        ort_default="false",
    ),
    Setting(
        "prefer_nhwc",
        Kind.BOOL,
        "Use NHWC kernels where the CUDA EP has them (layout transformation).",
        ort_default="false",
    ),
    Setting("use_ep_level_unified_stream", Kind.BOOL, "Use one CUDA stream for the whole EP.", ort_default="false"),
    Setting(
        "use_tf32",
        Kind.BOOL,
        "Allow TF32 tensor-core math for fp32 MatMul/Conv on Ampere and newer: faster, ~1e-3 relative error.",
        ort_default="true",
    ),
    Setting(
        "fuse_conv_bias",
        Kind.BOOL,
        "Fuse Conv and bias with cuDNN frontend (onnxruntime >= 1.20, cuDNN 9).",
        ort_default="false",
    ),
    Setting(
        "sdpa_kernel",
        Kind.INT,
        "Bit mask of attention kernels the CUDA EP may use (1 flash, 2 efficient, 4 TRT fused, 8 cuDNN flash, "
        "16 math...); 0 lets ORT choose. onnxruntime >= 1.19.",
        minimum=0,
        ort_default="0",
    ),
    Setting("tunable_op_enable", Kind.BOOL, "Use TunableOp kernels where they exist.", ort_default="false"),
    Setting(
        "tunable_op_tuning_enable",
        Kind.BOOL,
        "Let TunableOp tune kernels on line (first runs are slow).",
        ort_default="false",
    ),
    Setting(
        "tunable_op_max_tuning_duration_ms",
        Kind.INT,
        "Time budget per TunableOp tuning, in ms (0: no limit).",
        minimum=0,
        ort_default="0",
    ),
)

TENSORRT_OPTIONS: tuple[Setting, ...] = (
    Setting("device_id", Kind.INT, "CUDA device to run on.", minimum=0, ort_default="0"),
    Setting(
        "trt_max_workspace_size",
        Kind.BYTES,
        'TensorRT builder workspace, in bytes ("2GiB" accepted).',
        minimum=1,
        ort_default="1 GiB in older releases; the device memory in newer ones",
    ),
    Setting("trt_fp16_enable", Kind.BOOL, "Build engines with FP16 kernels allowed.", ort_default="false"),
    Setting(
        "trt_bf16_enable",
        Kind.BOOL,
        "Build engines with BF16 kernels allowed (newer onnxruntime only).",
        ort_default="false",
    ),
    Setting(
        "trt_int8_enable",
        Kind.BOOL,
        "Build engines with INT8 kernels (needs a calibration table).",
        ort_default="false",
    ),
    Setting("trt_int8_calibration_table_name", Kind.STR, "INT8 calibration table file name."),
    Setting(
        "trt_int8_use_native_calibration_table",
        Kind.BOOL,
        "The calibration table is TensorRT's native format.",
        ort_default="false",
    ),
    Setting(
        "trt_engine_cache_enable",
        Kind.BOOL,
        "Cache built engines on disk (first session builds, later load).",
        ort_default="false",
    ),
    Setting("trt_engine_cache_path", Kind.STR, "Folder of the engine cache."),
    Setting("trt_engine_cache_prefix", Kind.STR, "File name prefix of cached engines."),
    Setting("trt_timing_cache_enable", Kind.BOOL, "Cache layer timings across engine builds.", ort_default="false"),
    Setting("trt_timing_cache_path", Kind.STR, "Folder of the timing cache."),
    Setting(
        "trt_force_timing_cache",
        Kind.BOOL,
        "Use the timing cache even if it was made on another GPU.",
        ort_default="false",
    ),
    Setting(
        "trt_builder_optimization_level",
        Kind.INT,
        "TensorRT builder effort, 0 (fast build) to 5.",
        minimum=0,
        maximum=5,
        ort_default="3",
    ),
    Setting(
        "trt_max_partition_iterations",
        Kind.INT,
        "Iterations allowed to partition the graph for TensorRT.",
        minimum=1,
        ort_default="1000",
    ),
    Setting("trt_min_subgraph_size", Kind.INT, "Smallest subgraph handed to TensorRT.", minimum=1, ort_default="1"),
    Setting("trt_dla_enable", Kind.BOOL, "Use the DLA (Jetson).", ort_default="false"),
    Setting("trt_dla_core", Kind.INT, "DLA core to use.", minimum=0, ort_default="0"),
    Setting("trt_dump_subgraphs", Kind.BOOL, "Write the subgraphs given to TensorRT to disk.", ort_default="false"),
    Setting("trt_force_sequential_engine_build", Kind.BOOL, "Build engines one at a time.", ort_default="false"),
    Setting(
        "trt_context_memory_sharing_enable",
        Kind.BOOL,
        "Share execution-context memory between engines.",
        ort_default="false",
    ),
    Setting(
        "trt_layer_norm_fp32_fallback", Kind.BOOL, "Keep LayerNorm in FP32 when FP16 is enabled.", ort_default="false"
    ),
    Setting("trt_detailed_build_log", Kind.BOOL, "Log engine build details.", ort_default="false"),
    Setting(
        "trt_build_heuristics_enable", Kind.BOOL, "Faster engine builds with builder heuristics.", ort_default="false"
    ),
    Setting("trt_sparsity_enable", Kind.BOOL, "Allow sparse-weight tactics.", ort_default="false"),
    Setting(
        "trt_auxiliary_streams",
        Kind.INT,
        "Auxiliary streams per engine (-1: TensorRT decides).",
        minimum=-1,
        ort_default="-1",
    ),
    Setting("trt_tactic_sources", Kind.STR, 'Tactic sources to enable/disable, e.g. "-CUDNN,+CUBLAS".'),
    Setting("trt_extra_plugin_lib_paths", Kind.STR, "Extra TensorRT plugin libraries, separated by ';'."),
    Setting("trt_profile_min_shapes", Kind.STR, 'Optimisation profile minimum shapes, e.g. "x:1x3x224x224".'),
    Setting("trt_profile_opt_shapes", Kind.STR, "Optimisation profile optimal shapes."),
    Setting("trt_profile_max_shapes", Kind.STR, "Optimisation profile maximum shapes."),
    Setting("trt_cuda_graph_enable", Kind.BOOL, "Capture TensorRT engines in CUDA graphs.", ort_default="false"),
    Setting("trt_engine_hw_compatible", Kind.BOOL, "Build engines that run on any Ampere+ GPU.", ort_default="false"),
    Setting(
        "trt_dump_ep_context_model",
        Kind.BOOL,
        "Write an EP-context model that embeds or points to the engine.",
        ort_default="false",
    ),
    Setting("trt_ep_context_file_path", Kind.STR, "Where the EP-context model goes."),
    Setting(
        "trt_ep_context_embed_mode",
        Kind.INT,
        "0: the context model points to the engine file; 1: embeds it.",
        minimum=0,
        maximum=1,
        ort_default="0",
    ),
    Setting("trt_weight_stripped_engine_enable", Kind.BOOL, "Build weight-stripped engines.", ort_default="false"),
    Setting("trt_onnx_model_folder_path", Kind.STR, "Folder of the ONNX model (for weight-stripped engines)."),
    Setting(
        "trt_op_types_to_exclude",
        Kind.STR,
        'Op types TensorRT must not take, comma separated, e.g. "NonMaxSuppression".',
    ),
    Setting("trt_engine_decryption_enable", Kind.BOOL, "Engines in the cache are encrypted.", ort_default="false"),
    Setting("trt_engine_decryption_lib_path", Kind.STR, "Library that decrypts cached engines."),
)

INPUT_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "shapes",
        Kind.SHAPES,
        'Input shapes: `{ image = "1x3x224x224" }` or `{ image = [1, 3, 224, 224] }`.',
        default={},
    ),
    Setting("dims", Kind.DIMS, "Values for named symbolic dims: `{ batch = 8, seq = 128 }`.", default={}),
    Setting("ranges", Kind.RANGES, "Value ranges of generated data: `{ image = [0.0, 1.0] }`.", default={}),
    Setting("npz", Kind.PATH, "Real input data: an .npz whose names match the model's inputs (no pickles)."),
    Setting("seed", Kind.INT, "Seed of generated input data.", default=0, minimum=0),
)

MODEL_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "file",
        Kind.PATH,
        "Run this model file instead of the one given to `check`, `bench` or `load()`: a converted (fp16) or fused "
        "copy that `ortgpu tune` wrote. Relative to the config file's folder. The given model must be the one it "
        "was derived from (`source_sha256`) or the file itself.",
    ),
    Setting("sha256", Kind.STR, "sha256 of `file`; a file that changed since is refused."),
    Setting("source_sha256", Kind.STR, "sha256 of the model `file` was derived from."),
    Setting(
        "precision",
        Kind.CHOICE,
        "Float precision of `file` (picks the parity tolerances `check` applies against the fp32 CPU EP).",
        default="fp32",
        choices=("fp32", "fp16"),
    ),
)

RUN_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "mode",
        Kind.CHOICE,
        "How `bench` times the model when no --mode is given: numpy in/out (`run`), data kept on the device "
        "(`iobinding`), or CUDA graph replay (`cudagraph`). `check` and `load()` run numpy in/out whatever it says.",
        default="run",
        choices=("run", "iobinding", "cudagraph"),
    ),
)

# Sections of ortgpu.toml and their settings; provider sections are "ep.<name>".
_EP_SECTIONS: dict[ExecutionProvider, tuple[Setting, ...]] = {
    ExecutionProvider.CUDA: CUDA_OPTIONS,
    ExecutionProvider.TENSORRT: TENSORRT_OPTIONS,
    ExecutionProvider.CPU: (),
}
_SECTIONS: dict[str, tuple[Setting, ...]] = {
    "session": SESSION_SETTINGS,
    "model": MODEL_SETTINGS,
    "run": RUN_SETTINGS,
    "inputs": INPUT_SETTINGS,
    **{f"ep.{ep.value}": settings for ep, settings in _EP_SECTIONS.items()},
}


def options_for(ep: ExecutionProvider) -> tuple[Setting, ...]:
    """The provider options ortgpu knows for ``ep`` (the CPU EP takes none)."""
    return _EP_SECTIONS[ep]


# ---------------------------------------------------------------------------------------------------------------
# Value parsing
# ---------------------------------------------------------------------------------------------------------------

_BYTE_UNITS = {
    "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}  # fmt: skip


def parse_bytes(value: Any, where: str = "value") -> int:
    """An int, or "8GB" / "512MiB" / "1.5 GiB" -> bytes. SI units are powers of 10, IEC units powers of 2."""
    if isinstance(value, bool):
        raise ConfigError(f"{where}: expected a byte count, got {value!r}", 'write e.g. 8589934592 or "8GiB"')
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if re.fullmatch(r"[0-9]{1,30}", text):
        return int(text)
    match = re.fullmatch(r"([0-9]{1,30}(?:\.[0-9]{1,30})?)\s*([A-Za-z]+)", text)
    unit = _BYTE_UNITS.get(match.group(2).lower()) if match else None
    if match is None or unit is None:
        raise ConfigError(
            f"{where}: cannot read {quoted(value)} as a byte count",
            "write bytes (8589934592) or a number with a unit: B, KB, MB, GB, TB (powers of 10), KiB, MiB, GiB, TiB",
        )
    return round(float(match.group(1)) * unit)


def _parse_bool(setting: Setting, value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{where}: expected true or false, got {value!r}", f"set {setting.name} = true or false")


def _parse_int(setting: Setting, value: Any, where: str) -> int:
    if isinstance(value, bool):
        raise ConfigError(f"{where}: expected an integer, got {value!r}", f"set {setting.name} to a whole number")
    if isinstance(value, int):
        number = value
    else:
        text = str(value).strip()
        if not re.fullmatch(r"[+-]?[0-9]{1,30}", text):
            raise ConfigError(
                f"{where}: expected an integer, got {quoted(value)}", f"set {setting.name} to a whole number"
            )
        number = int(text)
    return _check_bounds(setting, number, where)


def _parse_bytes_setting(setting: Setting, value: Any, where: str) -> int:
    return _check_bounds(setting, parse_bytes(value, where), where)


# onnxruntime takes whole-number settings as a C int and byte counts as a size_t: a value past those would
# only fail inside ORT's bindings (a multi-line pybind message), so the declaration's range is capped here.
INT_CEILING = 2**31 - 1
BYTES_CEILING = 2**63 - 1


def _check_bounds(setting: Setting, number: int, where: str) -> int:
    ceiling = BYTES_CEILING if setting.kind is Kind.BYTES else INT_CEILING
    low = setting.minimum if setting.minimum is not None else -ceiling - 1
    high = min(setting.maximum, ceiling) if setting.maximum is not None else ceiling
    if number < low or number > high:
        bounds = f">= {low}" if high == ceiling else f"between {low} and {high}"
        if high == ceiling:
            bounds += f" and at most {ceiling:,} ({'a 64-bit size' if setting.kind is Kind.BYTES else 'a C int'})"
        shown = str(number) if len(str(number)) <= 24 else f"a {len(str(abs(number)))}-digit number"
        raise ConfigError(f"{where}: {shown} is out of range", f"{setting.name} must be {bounds}")
    return number


def _parse_choice(setting: Setting, value: Any, where: str) -> str:
    text = str(value).strip()
    for choice in setting.choices:
        if text.lower() == choice.lower():
            return choice
    raise ConfigError(
        f"{where}: {value!r} is not one of {', '.join(setting.choices)}{_did_you_mean(text, setting.choices)}",
        f"set {setting.name} to one of: {', '.join(setting.choices)}",
    )


def _parse_str(setting: Setting, value: Any, where: str) -> str:
    if isinstance(value, (dict, list)):
        raise ConfigError(
            f"{where}: expected a string, got {type(value).__name__}", f"quote the value of {setting.name}"
        )
    return str(value)


def _parse_shapes(setting: Setting, value: Any, where: str) -> dict[str, tuple[int, ...]]:
    table = _expect_table(value, where)
    shapes: dict[str, tuple[int, ...]] = {}
    for name, shape in table.items():
        if isinstance(shape, str):
            text = shape.strip().lower()
            parts = [] if text in ("", "scalar", "[]") else re.split(r"[x,\s]+", text.strip("[]() "))
        elif isinstance(shape, list):
            parts = shape
        else:
            raise ConfigError(f'{where}.{name}: expected "1x3x224x224" or a list of ints', 'e.g. image = "1x3x224x224"')
        dims = []
        for part in parts:
            if isinstance(part, bool) or not re.fullmatch(r"[0-9]{1,19}", str(part).strip()):
                raise ConfigError(
                    f"{where}.{name}: {quoted(shape)} is not a shape of whole numbers", 'e.g. "1x3x224x224"'
                )
            dims.append(_dim_in_range(int(str(part).strip()), f"{where}.{name}"))
        shapes[str(name)] = tuple(dims)
    return shapes


def _parse_dims(setting: Setting, value: Any, where: str) -> dict[str, int]:
    table = _expect_table(value, where)
    dims: dict[str, int] = {}
    for name, size in table.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(f"{where}.{name}: expected a positive integer, got {quoted(size)}", "e.g. batch = 8")
        dims[str(name)] = _dim_in_range(size, f"{where}.{name}")
    return dims


def _dim_in_range(value: int, where: str) -> int:
    from ortgpu.model.inputs import MAX_DIM

    if value > MAX_DIM:
        raise ConfigError(f"{where}: dim {value} is larger than ONNX allows ({MAX_DIM:,})", "use a realistic size")
    return value


def _parse_ranges(setting: Setting, value: Any, where: str) -> dict[str, tuple[float, float]]:
    table = _expect_table(value, where)
    ranges: dict[str, tuple[float, float]] = {}
    for name, pair in table.items():
        ok = (
            isinstance(pair, list)
            and len(pair) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in pair)
        )
        if not ok or pair[0] > pair[1]:
            raise ConfigError(
                f"{where}.{name}: expected [low, high] with low <= high, got {pair!r}", "e.g. image = [0.0, 1.0]"
            )
        ranges[str(name)] = (float(pair[0]), float(pair[1]))
    return ranges


def _parse_path(setting: Setting, value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: expected a file path string, got {value!r}", 'e.g. npz = "inputs.npz"')
    return value


def _expect_table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table, got {type(value).__name__}", "write it as { name = value }")
    return value


_PARSERS: dict[Kind, Callable[[Setting, Any, str], Any]] = {
    Kind.BOOL: _parse_bool,
    Kind.INT: _parse_int,
    Kind.BYTES: _parse_bytes_setting,
    Kind.CHOICE: _parse_choice,
    Kind.STR: _parse_str,
    Kind.SHAPES: _parse_shapes,
    Kind.DIMS: _parse_dims,
    Kind.RANGES: _parse_ranges,
    Kind.PATH: _parse_path,
}


def _did_you_mean(word: str, candidates: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _find(settings: Iterable[Setting], name: str) -> Setting | None:
    return next((s for s in settings if s.name == name), None)


def _unknown_key_error(key: str, where: str, settings: tuple[Setting, ...]) -> ConfigError:
    names = [s.name for s in settings]
    known = ", ".join(names) if len(names) <= 8 else ", ".join(names[:8]) + ", ..."
    hint = f"known keys: {known} (see docs/config.md)" if names else f"{where} takes no keys"
    return ConfigError(f"unknown key {key!r} in {where}{_did_you_mean(key, names)}", hint)


# ---------------------------------------------------------------------------------------------------------------
# Provider options from the command line or from code
# ---------------------------------------------------------------------------------------------------------------


def parse_ep_option(text: str) -> tuple[str, str]:
    """--ep-option KEY=VALUE -> (key, value); validation happens in validate_ep_options."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise ConfigError(
            f"--ep-option {text!r}: expected KEY=VALUE", "e.g. --ep-option cudnn_conv_algo_search=HEURISTIC"
        )
    return key.strip(), value.strip()


def validate_ep_options(ep: ExecutionProvider, options: Mapping[str, Any], where: str | None = None) -> dict[str, str]:
    """Check every key against the declaration for ``ep`` and return ORT-ready strings (bools as "1"/"0")."""
    settings = options_for(ep)
    section = where or f"[ep.{ep.value}]"
    result: dict[str, str] = {}
    for key, value in options.items():
        setting = _find(settings, key)
        if setting is None:
            if not settings:
                raise ConfigError(
                    f"the {ep.value} execution provider takes no provider options (got {key!r})",
                    "provider options apply to cuda and tensorrt; CPU settings live in [session]",
                )
            raise _unknown_key_error(key, section, settings)
        result[key] = setting.to_provider_value(setting.parse(value, f"{section} {key}"))
    return result


# ---------------------------------------------------------------------------------------------------------------
# The config object and the file reader
# ---------------------------------------------------------------------------------------------------------------


def _default_input_spec() -> InputSpec:
    from ortgpu.model.inputs import InputSpec

    return InputSpec()


def _default_session() -> dict[str, object]:
    return {s.name: s.default for s in SESSION_SETTINGS}


@dataclass(frozen=True)
class Config:
    """A validated ortgpu.toml. ``session`` holds every [session] setting (defaults filled in); ``ep_options``
    only the provider options the file sets, as the strings onnxruntime takes."""

    session: Mapping[str, object] = field(default_factory=_default_session)
    ep_options: Mapping[ExecutionProvider, Mapping[str, str]] = field(default_factory=dict)
    inputs: InputSpec = field(default_factory=_default_input_spec)
    fallback: Fallback = Fallback.NONE
    source: Path | None = None
    model: Mapping[str, object] = field(default_factory=dict)  # [model] as written (file resolved to a Path)
    run: Mapping[str, object] = field(default_factory=lambda: {s.name: s.default for s in RUN_SETTINGS})

    def options_for(self, ep: ExecutionProvider) -> dict[str, str]:
        return dict(self.ep_options.get(ep, {}))

    def model_file_for(self, given: Path, given_sha256: str) -> Path:
        """The model file to build sessions from: [model] file when set (checked against its sha256 and against
        the given model's), else ``given``."""
        file = self.model.get("file")
        if file is None:
            return Path(given)
        where = self.source.name if self.source else "[model]"
        if not self.model.get("sha256"):  # unpinned, any file would run in place of the given model
            raise ConfigError(
                f"{where}: [model] file {Path(str(file)).name} has no sha256",
                "add sha256 (and source_sha256, the model it came from), as ortgpu tune and ortgpu fp16 write them",
            )
        allowed = {self.model.get("source_sha256"), self.model.get("sha256")} - {None}
        if allowed and given_sha256 not in allowed:
            raise ConfigError(
                f"{where}: [model] file {Path(str(file)).name} was derived from another model than {Path(given).name} "
                f"(sha256 {given_sha256[:12]}... is not {str(self.model.get('source_sha256'))[:12]}...)",
                "use the config tune wrote for this model, or run ortgpu tune on it",
            )
        expected = self.model.get("sha256")
        if expected is not None and _sha256_of(Path(str(file))) != expected:
            raise ConfigError(
                f"{where}: [model] file {file} changed since its sha256 was written",
                "run ortgpu tune again, or restore the file",
            )
        return Path(str(file))

    def with_session(self, **values: Any) -> Config:
        """A copy with [session] settings replaced (validated like the file)."""
        session = dict(self.session)
        for key, value in values.items():
            setting = _find(SESSION_SETTINGS, key)
            if setting is None:
                raise _unknown_key_error(key, "[session]", SESSION_SETTINGS)
            session[key] = setting.parse(value, f"[session] {key}")
        return replace(self, session=session)


_HASHES: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256: a big model is hashed once


def _sha256_of(path: Path) -> str:
    import hashlib

    try:
        stat = path.stat()
    except OSError as exc:
        raise ConfigError(f"[model] file {path} cannot be read: {exc.strerror}", "check the path in [model]") from None
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _HASHES:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _HASHES[key] = digest.hexdigest()
    return _HASHES[key]


def default_config() -> Config:
    return Config()


def load_config(path: Path | str | None) -> Config:
    """Read and validate ``path``; None gives the defaults (./ortgpu.toml is never read implicitly)."""
    if path is None:
        return Config()
    path = Path(path)
    data = _read_toml(path)
    where = path.name
    fallback = Fallback.NONE
    session = _default_session()
    ep_options: dict[ExecutionProvider, dict[str, str]] = {}
    inputs_raw: dict[str, Any] = {}
    tables: dict[str, dict[str, Any]] = {"model": {}, "run": {s.name: s.default for s in RUN_SETTINGS}}
    for key, value in data.items():
        if key == "fallback":
            fallback = Fallback(TOP_LEVEL_SETTINGS[0].parse(value, f"{where}: fallback"))
        elif key == "session":
            for name, item in _expect_table(value, f"{where}: [session]").items():
                setting = _find(SESSION_SETTINGS, name)
                if setting is None:
                    raise _unknown_key_error(name, f"{where}: [session]", SESSION_SETTINGS)
                session[name] = setting.parse(item, f"{where}: [session] {name}")
        elif key == "ep":
            for ep_name, table in _expect_table(value, f"{where}: [ep]").items():
                ep = _section_ep(ep_name, where)
                ep_options[ep] = validate_ep_options(
                    ep, _expect_table(table, f"{where}: [ep.{ep_name}]"), f"{where}: [ep.{ep.value}]"
                )
        elif key == "inputs":
            for name, item in _expect_table(value, f"{where}: [inputs]").items():
                setting = _find(INPUT_SETTINGS, name)
                if setting is None:
                    raise _unknown_key_error(name, f"{where}: [inputs]", INPUT_SETTINGS)
                inputs_raw[name] = setting.parse(item, f"{where}: [inputs] {name}")
        elif key in tables:
            settings = _SECTIONS[key]
            for name, item in _expect_table(value, f"{where}: [{key}]").items():
                setting = _find(settings, name)
                if setting is None:
                    raise _unknown_key_error(name, f"{where}: [{key}]", settings)
                tables[key][name] = setting.parse(item, f"{where}: [{key}] {name}")
        else:
            candidates = ["fallback", "session", "inputs", "ep", "model", "run"]
            kind = "section" if isinstance(value, dict) else "key"
            raise ConfigError(
                f"unknown {kind} {key!r} in {where}{_did_you_mean(key, candidates)}",
                "top level takes: fallback, [session], [ep.cuda], [ep.tensorrt], [inputs], [model], [run] "
                "(see docs/config.md)",
            )
    if "file" in tables["model"]:
        tables["model"]["file"] = path.parent / str(tables["model"]["file"])
    elif tables["model"]:
        raise ConfigError(f"{where}: [model] without file", 'add file = "model.onnx" or remove [model]')
    return Config(
        session=session,
        ep_options=ep_options,
        inputs=_input_spec(inputs_raw, path.parent),
        fallback=fallback,
        source=path,
        model=tables["model"],
        run=tables["run"],
    )


def _section_ep(name: str, where: str) -> ExecutionProvider:
    names = [ep.value for ep in ExecutionProvider]
    if name not in names:
        raise ConfigError(
            f"unknown section [ep.{name}] in {where}{_did_you_mean(name, names)}",
            "provider sections are [ep.cuda] and [ep.tensorrt]",
        )
    return ExecutionProvider(name)


def _input_spec(values: Mapping[str, Any], folder: Path) -> InputSpec:
    from ortgpu.model.inputs import InputSpec

    npz = values.get("npz")
    return InputSpec(
        shapes=values.get("shapes", {}),
        dims=values.get("dims", {}),
        ranges=values.get("ranges", {}),
        npz=(folder / npz) if npz else None,
        seed=values.get("seed", 0),
    )


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    hint = "it must be a UTF-8 TOML file (see docs/config.md)"
    text = read_input_text(path, CONFIG_LIMIT, hint, what="config file", error=ConfigError)
    try:
        return parse_nested(tomllib.loads, text, f"config {path.name}", "see docs/config.md", ConfigError)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{path.name} is not valid TOML: {exc}", "fix the line it names (see docs/config.md)"
        ) from None


# ---------------------------------------------------------------------------------------------------------------
# docs/config.md, generated from the declarations
# ---------------------------------------------------------------------------------------------------------------


def _default_text(setting: Setting) -> str:
    if setting.default is None:
        return f"ORT: {setting.ort_default}" if setting.ort_default else "not set"
    if isinstance(setting.default, bool):
        return "true" if setting.default else "false"
    if isinstance(setting.default, dict):
        return "{}"
    if isinstance(setting.default, str):
        return f'"{setting.default}"'
    return str(setting.default)


def _type_text(setting: Setting) -> str:
    if setting.kind is Kind.CHOICE:
        return " \\| ".join(f'"{c}"' for c in setting.choices)
    if setting.kind is Kind.INT and (setting.minimum is not None or setting.maximum is not None):
        low = "" if setting.minimum is None else str(setting.minimum)
        high = "" if setting.maximum is None else str(setting.maximum)
        return f"int ({low}..{high})"
    return setting.kind.value


def _table(settings: Iterable[Setting]) -> list[str]:
    lines = ["| key | type | default | what it does |", "|---|---|---|---|"]
    for s in settings:
        help_text = s.help.replace("|", r"\|")
        lines.append(f"| `{s.name}` | {_type_text(s)} | {_default_text(s)} | {help_text} |")
    return lines


def config_reference_markdown() -> str:
    """docs/config.md: the reference of every setting, generated from the declarations above."""
    out = [
        "# `ortgpu.toml` reference",
        "",
        "<!-- Generated from src/ortgpu/config.py: python -m ortgpu.config > docs/config.md -->",
        "",
        "`ortgpu check --config FILE`, `ortgpu.load(model, config=FILE)` and `bench` read this file; `tune` writes it.",
        "It is never read implicitly: pass it. Unknown sections or keys are refused (exit 2) with a did-you-mean.",
        f"Whole numbers are at most {INT_CEILING:,} (onnxruntime reads them as a C int) and byte counts at most",
        f"{BYTES_CEILING:,}; the file itself may be at most 1 MiB (`ORTGPU_MAX_CONFIG` raises that).",
        "Provider options given on the command line (`--ep-option KEY=VALUE`, `--device N`) override the file's.",
        "",
        "```toml",
        'fallback = "none"',
        "",
        "[session]",
        'graph_optimization_level = "all"',
        "intra_op_num_threads = 4",
        "",
        "[ep.cuda]",
        'cudnn_conv_algo_search = "HEURISTIC"',
        'gpu_mem_limit = "8GiB"',
        "use_tf32 = false",
        "",
        "[ep.tensorrt]",
        "trt_fp16_enable = true",
        "trt_engine_cache_enable = true",
        'trt_engine_cache_path = "trt-cache"',
        "",
        "[inputs]",
        'shapes = { image = "1x3x224x224" }',
        "dims = { batch = 8 }",
        "ranges = { image = [0.0, 1.0] }",
        "seed = 0",
        "```",
        "",
        'Booleans are TOML `true`/`false` (strings "1"/"0" are accepted too); ortgpu hands them to onnxruntime as',
        '"1"/"0". Byte sizes take an integer or a string with a unit: "8GB" is 8*10^9 bytes, "8GiB" is 8*2^30.',
        'A provider option left out is not passed, so onnxruntime\'s own default applies ("ORT: ..." below).',
        "",
        "## Top level",
        "",
        *_table(TOP_LEVEL_SETTINGS),
        "",
        "## `[session]`",
        "",
        "onnxruntime `SessionOptions`.",
        "",
        *_table(SESSION_SETTINGS),
        "",
        "## `[ep.cuda]`",
        "",
        "CUDA execution provider options. Options that take memory addresses (`user_compute_stream`,",
        "`gpu_external_alloc`...) cannot be written in a file and are left out on purpose.",
        "",
        *_table(CUDA_OPTIONS),
        "",
        "## `[ep.tensorrt]`",
        "",
        "TensorRT execution provider options. ortgpu registers the CUDA EP after TensorRT (with the `[ep.cuda]`",
        "options) so nodes TensorRT does not take run on the GPU too.",
        "",
        *_table(TENSORRT_OPTIONS),
        "",
        "## `[model]`",
        "",
        "A model file to run instead of the given one: `ortgpu tune` writes its converted or fused model and",
        "pins it here with its sha256 and the sha256 of the model it came from.",
        "",
        *_table(MODEL_SETTINGS),
        "",
        "## `[run]`",
        "",
        *_table(RUN_SETTINGS),
        "",
        "## `[inputs]`",
        "",
        "How inputs are made for `check`, `bench` and the warm-up of `ortgpu.load`. The matching command-line flags",
        "(`--shape`, `--dim`, `--range`, `--inputs`, `--seed`) override these entries name by name. `npz` is",
        "relative to the config file's folder.",
        "",
        *_table(INPUT_SETTINGS),
        "",
    ]
    return "\n".join(out)


if __name__ == "__main__":  # regenerate the reference: python -m ortgpu.config > docs/config.md
    import sys

    sys.stdout.write(config_reference_markdown())
