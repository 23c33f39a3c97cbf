"""ortgpu.toml: one declaration per setting drives validation, did-you-mean errors and docs/config.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from ortgpu.cli.params import parse_ep_option
from ortgpu.config import (
    CUDA_OPTIONS,
    INPUT_SETTINGS,
    SESSION_SETTINGS,
    TENSORRT_OPTIONS,
    TOP_LEVEL_SETTINGS,
    Config,
    ConfigError,
    ExecutionMode,
    Fallback,
    GraphOptimizationLevel,
    config_reference_markdown,
    load_config,
    parse_bytes,
    validate_ep_options,
)
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import ExitCode

DOCS = Path(__file__).resolve().parents[1] / "docs" / "config.md"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ortgpu.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_no_file_gives_the_declared_defaults() -> None:
    config = load_config(None)
    assert config == Config()
    assert config.fallback is Fallback.NONE
    assert config.ep_options == {}
    assert dict(config.session) == {s.name: s.default for s in SESSION_SETTINGS}
    assert config.inputs.shapes == {} and config.inputs.seed == 0


def test_a_full_file_is_validated_and_normalised(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """
fallback = "cpu"
[session]
graph_optimization_level = "EXTENDED"
execution_mode = "parallel"
intra_op_num_threads = 3
enable_mem_pattern = false
[ep.cuda]
cudnn_conv_algo_search = "heuristic"
arena_extend_strategy = "ksameasrequested"
gpu_mem_limit = "8GB"
use_tf32 = false
device_id = 1
[ep.tensorrt]
trt_fp16_enable = true
trt_max_workspace_size = "2GiB"
[inputs]
shapes = { image = "1x3x224x224", mask = [1, 128] }
dims = { batch = 8 }
ranges = { image = [-1.0, 1] }
npz = "data/inputs.npz"
seed = 7
""",
    )
    config = load_config(path)
    assert config.fallback is Fallback.CPU
    assert config.source == path
    assert config.session["graph_optimization_level"] == "extended"
    assert config.session["execution_mode"] == "parallel"
    assert config.session["intra_op_num_threads"] == 3
    assert config.session["enable_mem_pattern"] is False
    assert config.session["enable_cpu_mem_arena"] is True  # untouched keys keep their defaults
    assert config.options_for(ExecutionProvider.CUDA) == {
        "cudnn_conv_algo_search": "HEURISTIC",
        "arena_extend_strategy": "kSameAsRequested",
        "gpu_mem_limit": "8000000000",
        "use_tf32": "0",
        "device_id": "1",
    }
    assert config.options_for(ExecutionProvider.TENSORRT) == {
        "trt_fp16_enable": "1",
        "trt_max_workspace_size": str(2 * 2**30),
    }
    assert config.inputs.shapes == {"image": (1, 3, 224, 224), "mask": (1, 128)}
    assert config.inputs.dims == {"batch": 8}
    assert config.inputs.ranges == {"image": (-1.0, 1.0)}
    assert config.inputs.npz == tmp_path / "data" / "inputs.npz"  # relative to the config file, not the cwd
    assert config.inputs.seed == 7


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[session]\nintra_op_threads = 2\n", "did you mean 'intra_op_num_threads'"),
        ("[ep.cuda]\ncudnn_conv_algo = 'HEURISTIC'\n", "did you mean 'cudnn_conv_algo_search'"),
        ("[ep.tensorrt]\ntrt_fp16 = true\n", "did you mean 'trt_fp16_enable'"),
        ("[sesion]\nintra_op_num_threads = 2\n", "did you mean 'session'"),
        ("[ep.cdua]\ndevice_id = 0\n", "did you mean 'cuda'"),
        ("[inputs]\nshape = { x = '1x2' }\n", "did you mean 'shapes'"),
        ("falback = 'cpu'\n", "did you mean 'fallback'"),
    ],
)
def test_unknown_keys_are_refused_with_a_did_you_mean(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(_write(tmp_path, text))
    assert expected in caught.value.message
    assert caught.value.exit_code == ExitCode.BAD_INPUT
    assert "\n" not in caught.value.one_line()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("fallback = 'gpu'\n", "not one of none, cpu"),
        ("[session]\ngraph_optimization_level = 'max'\n", "not one of"),
        ("[session]\nintra_op_num_threads = -1\n", "out of range"),
        ("[session]\nintra_op_num_threads = 'four'\n", "expected an integer"),
        ("[session]\nenable_mem_pattern = 'maybe'\n", "expected true or false"),
        ("[ep.cuda]\ngpu_mem_limit = '8 XB'\n", "byte count"),
        ("[ep.cuda]\ncudnn_conv_algo_search = 'FAST'\n", "not one of EXHAUSTIVE, HEURISTIC, DEFAULT"),
        ("[ep.tensorrt]\ntrt_builder_optimization_level = 6\n", "out of range"),
        ("[ep.cpu]\nuse_arena = true\n", "takes no provider options"),
        ("[inputs]\nshapes = { x = '1xAx3' }\n", "not a shape of whole numbers"),
        ("[inputs]\nranges = { x = [2, 1] }\n", "low <= high"),
        ("[inputs]\ndims = { batch = 0 }\n", "positive integer"),
        ("[session\n", "not valid TOML"),
    ],
)
def test_bad_values_are_config_errors(tmp_path: Path, text: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(_write(tmp_path, text))
    assert fragment in caught.value.message
    assert caught.value.hint


def test_missing_or_directory_config_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="directory"):
        load_config(tmp_path)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (123, 123),
        ("4096", 4096),
        ("8GB", 8 * 10**9),
        ("8GiB", 8 * 2**30),
        ("512MiB", 512 * 2**20),
        ("512 mb", 512 * 10**6),
        ("1.5GiB", 3 * 2**29),
        ("2KiB", 2048),
    ],
)
def test_byte_sizes_take_si_and_iec_units(text: object, value: int) -> None:
    assert parse_bytes(text) == value


def test_command_line_provider_options_are_validated_like_the_file() -> None:
    assert parse_ep_option("gpu_mem_limit=2GiB") == ("gpu_mem_limit", "2GiB")
    assert validate_ep_options(ExecutionProvider.CUDA, {"gpu_mem_limit": "2GiB", "prefer_nhwc": "true"}) == {
        "gpu_mem_limit": str(2 * 2**30),
        "prefer_nhwc": "1",
    }
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        parse_ep_option("prefer_nhwc")
    with pytest.raises(ConfigError, match="did you mean 'prefer_nhwc'"):
        validate_ep_options(ExecutionProvider.CUDA, {"prefer_nchw": "1"})


def test_with_session_validates_like_the_file() -> None:
    config = Config().with_session(intra_op_num_threads="2")
    assert config.session["intra_op_num_threads"] == 2
    with pytest.raises(ConfigError, match="did you mean 'execution_mode'"):
        Config().with_session(execution_mod="parallel")


@pytest.mark.parametrize("ep", list(ExecutionProvider))
def test_every_execution_provider_parses_from_its_short_and_ort_names(ep: ExecutionProvider) -> None:
    assert ExecutionProvider.parse(ep.value) is ep
    assert ExecutionProvider.parse(ep.ort_name) is ep
    assert ExecutionProvider.parse(ep.value.upper()) is ep
    assert ExecutionProvider.from_ort_name(ep.ort_name) is ep
    assert ep.is_gpu == (ep is not ExecutionProvider.CPU)


def test_unknown_execution_provider_suggests_the_closest() -> None:
    with pytest.raises(ConfigError, match="did you mean 'tensorrt'"):
        ExecutionProvider.parse("tensorrtt")


@pytest.mark.parametrize("level", list(GraphOptimizationLevel))
def test_every_optimisation_level_maps_to_an_onnxruntime_member(level: GraphOptimizationLevel) -> None:
    import onnxruntime as ort

    assert level.ort_attr.startswith("ORT_")
    if level is not GraphOptimizationLevel.LAYOUT:  # ORT_ENABLE_LAYOUT exists only in newer onnxruntime
        assert hasattr(ort.GraphOptimizationLevel, level.ort_attr)


@pytest.mark.parametrize("mode", list(ExecutionMode))
def test_every_execution_mode_maps_to_an_onnxruntime_member(mode: ExecutionMode) -> None:
    import onnxruntime as ort

    assert hasattr(ort.ExecutionMode, mode.ort_attr)


def test_every_declared_setting_has_help_and_a_docs_row() -> None:
    docs = config_reference_markdown()
    for settings in (TOP_LEVEL_SETTINGS, SESSION_SETTINGS, CUDA_OPTIONS, TENSORRT_OPTIONS, INPUT_SETTINGS):
        names = [s.name for s in settings]
        assert len(names) == len(set(names)), "a setting is declared twice"
        for setting in settings:
            assert setting.help.strip()
            assert f"| `{setting.name}` |" in docs


def test_every_setting_default_passes_its_own_validation() -> None:
    for settings in (TOP_LEVEL_SETTINGS, SESSION_SETTINGS, CUDA_OPTIONS, TENSORRT_OPTIONS, INPUT_SETTINGS):
        for setting in settings:
            if setting.default is not None:
                assert setting.parse(setting.default, setting.name) == setting.default


def test_docs_config_md_is_generated_from_the_declarations() -> None:
    assert DOCS.read_text(encoding="utf-8") == config_reference_markdown(), (
        "docs/config.md is stale: regenerate it with  python -m ortgpu.config > docs/config.md"
    )
