"""Strict sessions: the requested EP is the active one, or a typed error names the real cause."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ortgpu
from ortgpu.config import Config, ConfigError, Fallback, load_config
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import ExitCode
from ortgpu.model.inputs import InputError, InputSpec
from ortgpu.model.inspect import ModelError
from ortgpu.model.zoo import build_cpu_only_op_model, build_demo_model, build_tiny_model
from ortgpu.session import (
    ModelNotSupportedError,
    ProviderUnavailableError,
    RunFailedError,
    best_available_ep,
    load,
    open_session,
)
from ortgpu.session import providers as providers_module
from ortgpu.session import verified as verified_module
from ortgpu.session.capture import capture_native_stderr
from ortgpu.session.failures import DeviceOutOfMemoryError, Phase, clean_ort_message, translate_ort_error
from ortgpu.session.options import build_session_options, effective_provider_options, provider_chain
from ortgpu.session.providers import cause_from_log

CPU_ONLY_ORT = "CUDAExecutionProvider" not in __import__("onnxruntime").get_available_providers()
needs_cpu_only_ort = pytest.mark.skipif(not CPU_ONLY_ORT, reason="this onnxruntime has the CUDA provider")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("models")
    return {
        "demo": build_demo_model(folder / "demo.onnx"),
        "tiny": build_tiny_model(folder / "tiny.onnx"),
        "cpu_only_op": build_cpu_only_op_model(folder / "cpu_only_op.onnx"),
    }


def _reshape_model(path: Path) -> Path:
    """Reshape driven by an input: a shape that does not fit fails inside ORT at run time, not before."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")],
        "reshape",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("shape", TensorProto.INT64, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["d0", "d1"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


# --------------------------------------------------------------------------------------------- CPU sessions


def test_cpu_session_is_verified_and_carries_its_placement(models: dict[str, Path]) -> None:
    with open_session(models["demo"], ExecutionProvider.CPU, collect_placement=True) as session:
        assert session.requested_ep is ExecutionProvider.CPU
        assert session.active_ep is ExecutionProvider.CPU
        assert session.providers == ["CPUExecutionProvider"]
        assert not session.fallback_used
        assert session.creation_s > 0
        placement = session.placement
        assert placement is not None and placement.all_on_requested
        assert placement.compute_per_provider == {"CPUExecutionProvider": placement.compute_count}
        assert placement.memcpy_count == 0
        (logits,) = session.run({"image": np.zeros((2, 3, 32, 32), np.float32)})
        assert logits.shape == (2, 10)
        assert session.last_run_s is not None and session.last_run_s > 0
    assert session.ort is None  # the context manager released it


def test_ep_given_as_text_is_parsed(models: dict[str, Path]) -> None:
    with open_session(models["tiny"], "CPUExecutionProvider") as session:
        assert session.active_ep is ExecutionProvider.CPU


def test_bad_model_file_is_bad_input_before_onnxruntime_sees_it(tmp_path: Path) -> None:
    truncated = tmp_path / "half.onnx"
    data = build_demo_model(tmp_path / "demo.onnx").read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelError) as caught:
        open_session(truncated, ExecutionProvider.CPU)
    assert caught.value.exit_code == ExitCode.BAD_INPUT


# --------------------------------------------------------------------------------------------- strictness


@needs_cpu_only_ort
@pytest.mark.parametrize("ep", [ExecutionProvider.CUDA, ExecutionProvider.TENSORRT])
def test_gpu_request_on_cpu_only_onnxruntime_exits_3_with_the_fix(
    models: dict[str, Path], ep: ExecutionProvider
) -> None:
    with pytest.raises(ProviderUnavailableError) as caught:
        open_session(models["tiny"], ep)
    error = caught.value
    assert error.exit_code == ExitCode.ENVIRONMENT
    assert "CPU-only build" in error.message and ep.ort_name in error.message
    assert error.hint == "pip uninstall onnxruntime && pip install onnxruntime-gpu"


@needs_cpu_only_ort
def test_fallback_cpu_runs_on_cpu_and_records_why(models: dict[str, Path]) -> None:
    config = Config(fallback=Fallback.CPU)
    with open_session(models["tiny"], ExecutionProvider.CUDA, config, collect_placement=True) as session:
        assert session.fallback_used
        assert session.requested_ep is ExecutionProvider.CUDA
        assert session.active_ep is ExecutionProvider.CPU
        assert "CPU-only build" in (session.fallback_reason or "")
        assert session.placement is not None
        assert session.placement.requested_provider == "CPUExecutionProvider"


class _FakeSession:
    """What ORT returns when the CUDA provider library failed to load: a session on CPU only."""

    def __init__(self, providers: list[str]) -> None:
        self._providers = providers

    def get_providers(self) -> list[str]:
        return self._providers

    def get_inputs(self) -> list[Any]:
        return []

    def get_outputs(self) -> list[Any]:
        return []


_CUDA_LOAD_FAILURE = (
    "2026-12-01 10:00:00.000 [E:onnxruntime:Default, provider_bridge_ort.cc:2167 TryGetProviderInfo_CUDA] "
    "/onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1778 onnxruntime::Provider& "
    "onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library "
    "libonnxruntime_providers_cuda.so with error: libcublasLt.so.12: cannot open shared object file: "
    "No such file or directory\n"
    "2026-12-01 10:00:00.001 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:1000 "
    "CreateExecutionProviderInstance] Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*.\n"
)


def _simulate_cuda_build(monkeypatch: pytest.MonkeyPatch, active: list[str], log: str) -> None:
    """This machine has no onnxruntime-gpu: stand in for ORT's part (it falls back and only logs why)."""
    monkeypatch.setattr(
        verified_module, "_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"]
    )
    monkeypatch.setattr(
        verified_module, "_create", lambda *args, **kwargs: (_FakeSession(active), 0.01, log, "ortgpu-test")
    )
    monkeypatch.setattr(providers_module, "library_load_failure", lambda ep: None)


def test_quiet_fallback_by_onnxruntime_is_an_error_naming_the_missing_library(
    models: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _simulate_cuda_build(monkeypatch, ["CPUExecutionProvider"], _CUDA_LOAD_FAILURE)
    with pytest.raises(ProviderUnavailableError) as caught:
        open_session(models["tiny"], ExecutionProvider.CUDA)
    error = caught.value
    assert error.exit_code == ExitCode.ENVIRONMENT
    assert "fell back to CPUExecutionProvider" in error.message
    assert "libcublasLt.so.12: cannot open shared object file" in error.message
    assert "install libcublasLt.so.12" in (error.hint or "")


def test_quiet_fallback_is_allowed_and_recorded_when_the_config_says_cpu(
    models: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _simulate_cuda_build(monkeypatch, ["CPUExecutionProvider"], _CUDA_LOAD_FAILURE)
    session = open_session(models["tiny"], ExecutionProvider.CUDA, Config(fallback=Fallback.CPU))
    assert session.fallback_used and session.active_ep is ExecutionProvider.CPU
    assert "libcublasLt.so.12" in (session.fallback_reason or "")


def test_doctor_probe_is_preferred_over_the_log(models: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    _simulate_cuda_build(monkeypatch, ["CPUExecutionProvider"], "")
    monkeypatch.setattr(
        providers_module,
        "library_load_failure",
        lambda ep: (
            "libonnxruntime_providers_cuda.so could not be loaded: libcudnn.so.9: cannot open shared object file"
        ),
    )
    with pytest.raises(ProviderUnavailableError, match=r"libcudnn\.so\.9"):
        open_session(models["tiny"], ExecutionProvider.CUDA)


@pytest.mark.parametrize(
    ("log", "expected"),
    [
        (_CUDA_LOAD_FAILURE, "libonnxruntime_providers_cuda.so could not be loaded: libcublasLt.so.12: cannot open"),
        (
            '[E:onnxruntime:Default] LoadLibrary failed with error 126 "" when trying to load '
            '"C:\\py\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll"',
            "onnxruntime_providers_cuda.dll could not be loaded (LoadLibrary error 126: a DLL it needs",
        ),
        ("nothing to see\n[I:onnxruntime:, x.cc:1 f] all good\n", None),
    ],
)
def test_cause_from_log(log: str, expected: str | None) -> None:
    cause = cause_from_log(log)
    assert (cause is None) if expected is None else (cause is not None and cause.startswith(expected))


@needs_cpu_only_ort
def test_best_available_ep_says_plainly_why_cpu() -> None:
    ep, reason = best_available_ep()
    assert ep is ExecutionProvider.CPU
    assert reason.startswith("CPU: ") and "CPU-only build" in reason


# --------------------------------------------------------------------------------------------- errors


def test_wrong_feeds_are_input_errors_with_a_did_you_mean(models: dict[str, Path]) -> None:
    with open_session(models["tiny"], ExecutionProvider.CPU) as session:
        with pytest.raises(InputError, match="did you mean 'x'"):
            session.run({"xx": np.zeros((1, 4), np.float32)})
        with pytest.raises(InputError, match="missing input"):
            session.run({})
        with pytest.raises(InputError, match="refused the inputs") as caught:
            session.run({"x": np.zeros((1, 5), np.float32)})
        assert caught.value.exit_code == ExitCode.BAD_INPUT


def test_a_failing_run_is_a_typed_error_and_onnxruntime_prints_nothing(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    with open_session(_reshape_model(tmp_path / "reshape.onnx"), ExecutionProvider.CPU) as session:
        capfd.readouterr()
        with pytest.raises(RunFailedError) as caught:
            session.run({"x": np.zeros((2, 3), np.float32), "shape": np.array([4, 4], np.int64)})
    assert caught.value.exit_code == ExitCode.CHECK_FAILED
    assert "Reshape" in caught.value.message and "/onnxruntime_src/" not in caught.value.message
    assert capfd.readouterr().err == ""  # run_log_severity_level = 4: the error travels in the exception only


def test_model_without_a_kernel_is_refused_with_the_op(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("ImageDecoder", ["x"], ["y"])],
        "decoder",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [16])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, ["h", "w", "c"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    onnx.save(model, tmp_path / "decoder.onnx")
    with pytest.raises(ModelNotSupportedError, match="ImageDecoder"):
        open_session(tmp_path / "decoder.onnx", ExecutionProvider.CPU)


@pytest.mark.parametrize(
    ("message", "phase", "ep", "kind"),
    [
        ('[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Unknown provider option: "fuse_conv_bias".', Phase.CREATE,
         ExecutionProvider.CUDA, ConfigError),
        ("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for Foo(1) node with name 'f'",
         Phase.CREATE, ExecutionProvider.CPU, ModelNotSupportedError),
        ("CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version", Phase.CREATE,
         ExecutionProvider.CUDA, ProviderUnavailableError),
        ("[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Got invalid dimensions for input: x", Phase.RUN,
         ExecutionProvider.CPU, InputError),
        ("Failed to allocate memory for requested buffer of size 8589934592", Phase.RUN, ExecutionProvider.CUDA,
         DeviceOutOfMemoryError),
        ("Non-zero status code returned while running Conv node.", Phase.RUN, ExecutionProvider.CUDA,
         RunFailedError),
    ],
)  # fmt: skip
def test_onnxruntime_errors_become_typed_errors(message: str, phase: Phase, ep: ExecutionProvider, kind: type) -> None:
    error = translate_ort_error(RuntimeError(message), phase, ep, "1.20.0")
    assert isinstance(error, kind)
    assert "[ONNXRuntimeError]" not in error.message


def test_clean_ort_message_drops_prefixes_and_cpp_locations() -> None:
    text = (
        "[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Exception during initialization: "
        "/onnxruntime_src/onnxruntime/core/providers/cpu/rnn/rnn.h:48 onnxruntime::RNN<T>::RNN(const "
        "onnxruntime::OpKernelInfo&) [with T = float] layout_ == 0 was false."
    )
    assert clean_ort_message(text) == "Exception during initialization: layout_ == 0 was false."


# --------------------------------------------------------------------------------------------- options


def test_provider_options_merge_config_then_overrides_then_device(tmp_path: Path) -> None:
    path = tmp_path / "ortgpu.toml"
    path.write_text("[ep.cuda]\ndevice_id = 1\nuse_tf32 = false\ngpu_mem_limit = '1GiB'\n", encoding="utf-8")
    config = load_config(path)
    merged = effective_provider_options(ExecutionProvider.CUDA, config, {"use_tf32": True}, device_id=2)
    assert merged == {"device_id": "2", "use_tf32": "1", "gpu_mem_limit": str(2**30)}
    with pytest.raises(ConfigError, match="did you mean 'use_tf32'"):
        effective_provider_options(ExecutionProvider.CUDA, config, {"use_tf33": "1"})


def test_tensorrt_chain_keeps_cuda_behind_it_on_the_same_device() -> None:
    names, options = provider_chain(ExecutionProvider.TENSORRT, Config(), {"trt_fp16_enable": "1"}, device_id=1)
    assert names == ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    assert options[0] == {"trt_fp16_enable": "1", "device_id": "1"}
    assert options[1] == {"device_id": "1"}
    assert provider_chain(ExecutionProvider.CPU, Config()) == (["CPUExecutionProvider"], [{}])


def test_session_options_follow_the_config() -> None:
    import onnxruntime as ort

    config = Config().with_session(
        graph_optimization_level="basic", execution_mode="parallel", intra_op_num_threads=2, enable_mem_pattern=False
    )
    options = build_session_options(config, log_severity=3, logid="x")
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    assert options.execution_mode == ort.ExecutionMode.ORT_PARALLEL
    assert options.intra_op_num_threads == 2
    assert options.enable_mem_pattern is False
    assert options.log_severity_level == 3 and options.logid == "x"


def test_capture_native_stderr_keeps_what_native_code_wrote(capfd: pytest.CaptureFixture[str]) -> None:
    with capture_native_stderr() as log:
        os.write(2, b"from native code\n")
    os.write(2, b"after\n")
    assert log.text == "from native code\n"
    assert capfd.readouterr().err == "after\n"


# --------------------------------------------------------------------------------------------- ortgpu.load


def test_load_returns_a_warmed_up_verified_session(models: dict[str, Path], tmp_path: Path) -> None:
    path = tmp_path / "ortgpu.toml"
    path.write_text("[inputs]\ndims = { batch = 3 }\n", encoding="utf-8")
    session = ortgpu.load(models["demo"], config=str(path), ep="cpu", warmup_runs=3)
    assert isinstance(session, verified_module.VerifiedSession)
    assert session.warmup_shapes == {"image": (3, 3, 32, 32)}
    assert len(session.warmup_s) == 3
    assert session.placement is not None and session.placement.all_on_requested
    (logits,) = session.run({"image": np.ones((3, 3, 32, 32), np.float32)})
    assert logits.shape == (3, 10)


def test_load_takes_inputs_and_fallback_overrides(models: dict[str, Path]) -> None:
    session = load(models["tiny"], inputs=InputSpec(dims={"batch": 5}), warmup_runs=1, fallback="cpu")
    assert session.warmup_shapes == {"x": (5, 4)}
    assert session.config.fallback is Fallback.CPU


def test_load_refuses_unknown_arguments_with_a_did_you_mean(models: dict[str, Path]) -> None:
    with pytest.raises(ConfigError, match="did you mean 'warmup_runs'"):
        load(models["tiny"], warmup_run=2)
    with pytest.raises(ConfigError, match="warmup_runs"):
        load(models["tiny"], warmup_runs=-1)
    with pytest.raises(ConfigError, match="fallback"):
        load(models["tiny"], fallback="gpu")


@needs_cpu_only_ort
def test_load_on_cuda_raises_the_same_error_the_cli_prints(models: dict[str, Path]) -> None:
    with pytest.raises(ProviderUnavailableError) as caught:
        ortgpu.load(models["tiny"], ep="cuda")
    assert "pip install onnxruntime-gpu" in caught.value.one_line()


# --------------------------------------------------------------------------------------------- GPU (H200)


def _resnet_like(path: Path) -> Path:
    """Conv/BatchNorm/Relu blocks with a residual Add, global pooling and Gemm: every op has a CUDA kernel."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def weight(name: str, *shape: int) -> Any:
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)

    inits = [weight("w1", 16, 3, 3, 3), weight("w2", 16, 16, 3, 3), weight("w3", 16, 16, 3, 3), weight("fc", 16, 10)]
    for i in (1, 2):
        inits += [
            numpy_helper.from_array(np.ones(16, np.float32), f"bn{i}.scale"),
            numpy_helper.from_array(np.zeros(16, np.float32), f"bn{i}.bias"),
            numpy_helper.from_array(np.zeros(16, np.float32), f"bn{i}.mean"),
            numpy_helper.from_array(np.ones(16, np.float32), f"bn{i}.var"),
        ]
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        n("BatchNormalization", ["c1", "bn1.scale", "bn1.bias", "bn1.mean", "bn1.var"], ["b1"], name="bn1"),
        n("Relu", ["b1"], ["r1"], name="relu1"),
        n("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        n("BatchNormalization", ["c2", "bn2.scale", "bn2.bias", "bn2.mean", "bn2.var"], ["b2"], name="bn2"),
        n("Relu", ["b2"], ["r2"], name="relu2"),
        n("Conv", ["r2", "w3"], ["c3"], pads=[1, 1, 1, 1], name="conv3"),
        n("Add", ["c3", "r1"], ["res"], name="residual"),
        n("GlobalAveragePool", ["res"], ["pool"], name="pool"),
        n("Flatten", ["pool"], ["flat"], name="flatten"),
        n("MatMul", ["flat", "fc"], ["logits"], name="fc"),
    ]
    graph = helper.make_graph(
        nodes,
        "resnet_like",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.mark.gpu
def test_gpu_resnet_like_model_runs_every_compute_node_on_cuda(tmp_path: Path) -> None:
    with open_session(_resnet_like(tmp_path / "resnet_like.onnx"), "cuda", collect_placement=True) as session:
        assert session.active_ep is ExecutionProvider.CUDA and session.providers[0] == "CUDAExecutionProvider"
        placement = session.placement
        assert placement is not None
        assert placement.all_on_requested, placement.off_requested
        assert placement.memcpy_count == 0
        (logits,) = session.run({"x": np.ones((2, 3, 32, 32), np.float32)})
        assert logits.shape == (2, 10)


@pytest.mark.gpu
def test_gpu_cpu_only_op_shows_the_fallback_node_and_memcpy(models: dict[str, Path]) -> None:
    with open_session(models["cpu_only_op"], "cuda", collect_placement=True) as session:
        placement = session.placement
        assert placement is not None and not placement.all_on_requested
        assert [n.op_type for n in placement.off_requested] == ["Det"]
        assert placement.off_requested[0].provider == "CPUExecutionProvider"
        assert placement.memcpy_count > 0
        assert {n.op_type for n in placement.memcpy_nodes} <= {"MemcpyToHost", "MemcpyFromHost"}


@pytest.mark.gpu
def test_gpu_best_available_ep_is_cuda_and_load_warms_up_on_it(models: dict[str, Path]) -> None:
    ep, reason = best_available_ep()
    assert ep is ExecutionProvider.CUDA and "starts" in reason
    session = ortgpu.load(models["demo"], provider_options={"cudnn_conv_algo_search": "HEURISTIC"})
    assert session.active_ep is ExecutionProvider.CUDA
    assert session.provider_options["cudnn_conv_algo_search"] == "HEURISTIC"
    assert len(session.warmup_s) == 2
