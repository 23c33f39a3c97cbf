"""Every setting ortgpu reads, declared once: the sections of ortgpu.toml, and docs/config.md generated from them.

A declarative table ([session], [ep.cuda], [ep.tensorrt], [model], [run], [inputs]); it is long because each
setting carries its kind, default, bounds and help, which drive validation, the provider options and the docs.
"""

from __future__ import annotations

from collections.abc import Iterable

from ortgpu.ep import ExecutionProvider
from ortgpu.settings import (
    BYTES_CEILING,
    INT_CEILING,
    ExecutionMode,
    Fallback,
    GraphOptimizationLevel,
    Kind,
    Setting,
)

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
EPSECTIONS: dict[ExecutionProvider, tuple[Setting, ...]] = {
    ExecutionProvider.CUDA: CUDA_OPTIONS,
    ExecutionProvider.TENSORRT: TENSORRT_OPTIONS,
    ExecutionProvider.CPU: (),
}
SECTIONS: dict[str, tuple[Setting, ...]] = {
    "session": SESSION_SETTINGS,
    "model": MODEL_SETTINGS,
    "run": RUN_SETTINGS,
    "inputs": INPUT_SETTINGS,
    **{f"ep.{ep.value}": settings for ep, settings in EPSECTIONS.items()},
}


def options_for(ep: ExecutionProvider) -> tuple[Setting, ...]:
    """The provider options ortgpu knows for ``ep`` (the CPU EP takes none)."""
    return EPSECTIONS[ep]


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
        "<!-- Generated from src/ortgpu/settings_table.py: python -m ortgpu.config > docs/config.md -->",
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
