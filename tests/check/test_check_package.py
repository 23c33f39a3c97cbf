"""run_check with ``package``: the model through a package's own C library gives what the wheel path gives."""

from __future__ import annotations

import dataclasses
import os
import tarfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ortgpu.capi import runner as runner_module
from ortgpu.capi.binding import ProviderLoadError
from ortgpu.capi.library_locator import LibraryNotFoundError, LibraryPlatformError
from ortgpu.capi.runner import UnsupportedSettingError
from ortgpu.check import (
    CheckRequest,
    ParityStatus,
    PlacementStatus,
    Precision,
    ReferenceKind,
    parse_tolerances,
    run_check,
)
from ortgpu.config import Config, Fallback
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import ExitCode
from ortgpu.host import nvml
from ortgpu.model.zoo import MODELS, build_demo_model
from ortgpu.package.archive import PackageError
from ortgpu.placement import PlacedNode, PlacementSource, build_report
from ortgpu.results import envelope


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_demo_model(tmp_path_factory.mktemp("demo") / "demo.onnx")


def _saved(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


# --------------------------------------------------------------------------------------------- the same as the wheel


@pytest.mark.parametrize("name", sorted(MODELS))  # scalar_if: 0-d inputs must reach ORT as 0-d tensors
def test_every_zoo_model_gives_the_wheel_paths_outputs_through_the_wheels_c_library(
    name: str, wheel_library: Path, tmp_path: Path
) -> None:
    import onnxruntime as ort

    entry = MODELS[name]
    model = entry.build(tmp_path)
    through_wheel = run_check(
        CheckRequest(model=model, ep=ExecutionProvider.CPU, inputs=entry.spec(), save_outputs=tmp_path / "w.npz")
    )
    through_c = run_check(
        CheckRequest(
            model=model,
            ep=ExecutionProvider.CPU,
            inputs=entry.spec(),
            save_outputs=tmp_path / "c.npz",
            package=wheel_library.parent,  # the wheel's capi/ folder: searched like any folder
            warm_runs=2,
        )
    )
    assert through_c.passed, through_c.failures
    wheel_out, c_out = _saved(tmp_path / "w.npz"), _saved(tmp_path / "c.npz")
    assert sorted(c_out) == sorted(wheel_out) == sorted(entry.expected_output_shapes)
    for key, value in wheel_out.items():  # the same build on the same inputs: bit for bit
        assert c_out[key].dtype == value.dtype and np.array_equal(c_out[key], value), key
    package = through_c.package
    assert package is not None and through_wheel.package is None
    assert package.library == wheel_library and package.source == wheel_library.parent
    assert package.ort_version == ort.__version__ == through_c.ort_version
    assert "CPUExecutionProvider" in package.compiled_providers
    assert through_c.inputs == through_wheel.inputs
    assert through_c.placement_status is PlacementStatus.ALL_ON_EP
    assert through_c.placement is not None and through_c.placement.source is PlacementSource.LOG
    assert through_c.timings.creation_s > 0 and through_c.timings.first_run_s > 0
    assert through_c.timings.warm_runs == 2 and through_c.timings.warm_median_s is not None


def test_the_result_records_the_library_and_round_trips_as_json(wheel_library: Path, demo: Path) -> None:
    result = run_check(CheckRequest(model=demo, ep=ExecutionProvider.CPU, package=wheel_library, warm_runs=1))
    doc = envelope("check", result)["result"]
    assert doc["package"]["library"] == str(wheel_library)
    assert doc["package"]["ort_version"] == result.ort_version and doc["package"]["api_version"] >= 11
    assert doc["gpu_memory"]["used_bytes"] is None and "CPU" in doc["gpu_memory"]["note"]
    assert doc["parity"]["status"] == "skipped" and doc["parity"]["reason"].startswith("same EP")


def test_a_reference_file_is_compared_with_the_package_outputs(wheel_library: Path, demo: Path, tmp_path: Path) -> None:
    run_check(CheckRequest(model=demo, ep=ExecutionProvider.CPU, save_outputs=tmp_path / "ref.npz"))
    logits = _saved(tmp_path / "ref.npz")["logits"]
    logits[0, 2] += 0.25
    np.savez(tmp_path / "off.npz", logits=logits)
    request = CheckRequest(model=demo, ep=ExecutionProvider.CPU, package=wheel_library, reference=tmp_path / "off.npz")
    result = run_check(request)
    assert not result.passed and result.parity.reference is ReferenceKind.FILE
    (out,) = result.parity.outputs
    assert out.status is ParityStatus.FAIL and out.worst_index == (0, 2) and out.max_abs == pytest.approx(0.25)
    loose = run_check(dataclasses.replace(request, atol=parse_tolerances(["logits:0.3"], "--atol")))
    assert loose.passed


# --------------------------------------------------------------------------------------------- the EP, strictly


def test_cuda_through_a_cpu_build_is_exit_3_with_orts_text(wheel_library: Path, demo: Path, tmp_path: Path) -> None:
    request = CheckRequest(
        model=demo, ep=ExecutionProvider.CUDA, package=wheel_library, save_outputs=tmp_path / "o.npz"
    )
    with pytest.raises(ProviderLoadError) as caught:
        run_check(request)
    assert caught.value.exit_code is ExitCode.ENVIRONMENT
    assert "CUDA execution provider is not enabled in this build" in caught.value.message
    assert not (tmp_path / "o.npz").exists()


def test_an_allowed_fallback_runs_on_the_packages_cpu_ep_and_keeps_orts_reason(wheel_library: Path, demo: Path) -> None:
    config = Config(fallback=Fallback.CPU)
    request = CheckRequest(
        model=demo, ep=ExecutionProvider.CUDA, ep_options={"use_tf32": "0"}, package=wheel_library, config=config
    )
    result = run_check(request)
    assert result.passed and result.fallback_used and result.provider_options == {}
    assert result.requested_ep is ExecutionProvider.CUDA and result.active_ep is ExecutionProvider.CPU
    assert "not enabled in this build" in (result.fallback_reason or "")
    assert "FALLBACK to cpu" in result.verdict and "fell back" in (result.parity.reason or "")
    assert result.placement is not None and result.placement.requested_provider == "CPUExecutionProvider"


def _driver(present: bool) -> nvml.DriverInfo:
    gpu = nvml.GpuInfo(0, "NVIDIA H200", "GPU-0", 141 * 2**30, (9, 0), "00000000:01:00.0")
    if not present:
        return nvml.DriverInfo(False, None, None, (), "NVML: NVML Shared Library Not Found")
    return nvml.DriverInfo(True, "580.95.05", "13.0", (gpu,), None)


@pytest.mark.parametrize(
    ("present", "reason"),
    [(False, "CPU: no NVIDIA driver answers (NVML"), (True, "cannot enable the CUDA EP here: CUDAExecutionProvider")],
)
def test_without_ep_the_package_gets_cuda_when_it_can_and_says_why_not(
    wheel_library: Path, demo: Path, monkeypatch: pytest.MonkeyPatch, present: bool, reason: str
) -> None:
    monkeypatch.setattr(nvml, "query_driver", lambda *a, **k: _driver(present))
    result = run_check(CheckRequest(model=demo, package=wheel_library, warm_runs=1))
    assert result.passed and not result.fallback_used
    assert result.requested_ep is ExecutionProvider.CPU is result.active_ep
    assert reason in (result.ep_reason or "")


def _simulated_cuda(monkeypatch: pytest.MonkeyPatch, shift: float = 0.0, cpu_nodes: int = 0) -> list[dict[str, Any]]:
    """The runner as on a GPU machine: a "cuda" run is a CPU run reported as CUDA (outputs moved by ``shift``,
    the first ``cpu_nodes`` nodes left on CPU); every call is recorded."""
    real = runner_module.run_package_model
    calls: list[dict[str, Any]] = []

    def run(library: Any, model: Any, feeds: Any, ep: Any = "cpu", provider_options: Any = None, device_id: int = 0,
            **kwargs: Any) -> Any:  # fmt: skip
        calls.append({"library": library.path, "ep": ep, "options": dict(provider_options or {}), **kwargs})
        if ep != "cuda":
            return real(library, model, feeds, ep, provider_options, device_id, **kwargs)
        done = real(library, model, feeds, "cpu", None, 0, **kwargs)
        cuda = "CUDAExecutionProvider"
        placement = done.placement
        if placement is not None:
            nodes = [
                PlacedNode(f"n{i}", "Conv", "CPUExecutionProvider" if i < cpu_nodes else cuda)
                for i in range(placement.compute_count)
            ]
            placement = build_report(nodes, cuda, PlacementSource.LOG)
        return dataclasses.replace(
            done,
            requested_provider=cuda,
            appended_providers=(cuda,),
            provider_options={cuda: {"device_id": str(device_id), "use_tf32": "1", **provider_options}},
            outputs={k: v + np.float32(shift) for k, v in done.outputs.items()},
            placement=placement,
        )

    monkeypatch.setattr(runner_module, "run_package_model", run)
    monkeypatch.delenv("NVIDIA_TF32_OVERRIDE", raising=False)
    return calls


def test_a_gpu_check_compares_with_the_cpu_ep_of_the_same_library(
    wheel_library: Path, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _simulated_cuda(monkeypatch)
    config = Config(ep_options={ExecutionProvider.CUDA: {"cudnn_conv_algo_search": "DEFAULT"}})
    request = CheckRequest(
        model=demo,
        ep=ExecutionProvider.CUDA,
        package=wheel_library,
        config=config,
        ep_options={"use_tf32": "1"},
        warm_runs=3,
    )
    result = run_check(request)
    assert result.passed and result.active_ep is ExecutionProvider.CUDA and result.device_id == 0
    # cold (timed, no profiling), profiled (placement), then the CPU EP of the very same library
    assert [(c["ep"], c["profile"], c["iterations"]) for c in calls] == [
        ("cuda", False, 3),
        ("cuda", True, 0),
        ("cpu", False, 0),
    ]
    assert {c["library"] for c in calls} == {wheel_library}
    assert calls[0]["options"] == {"cudnn_conv_algo_search": "DEFAULT", "use_tf32": "1"}  # config, then flags
    assert result.parity.reference is ReferenceKind.CPU_EP and result.parity.status is ParityStatus.PASS
    assert result.parity.outputs[0].precision is Precision.TF32
    assert result.providers == ("CUDAExecutionProvider", "CPUExecutionProvider")
    assert "not measured: the session ran in a child process" in (result.gpu_memory.note or "")
    assert result.timings.warm_runs == 3


def test_a_gpu_mismatch_and_nodes_left_on_cpu_fail_with_the_numbers(
    wheel_library: Path, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _simulated_cuda(monkeypatch, shift=0.5, cpu_nodes=2)
    request = CheckRequest(model=demo, ep=ExecutionProvider.CUDA, package=wheel_library, strict_placement=True)
    result = run_check(request)
    assert not result.passed and result.placement_status is PlacementStatus.PARTIAL
    assert result.parity.status is ParityStatus.FAIL
    assert result.failures[0].startswith("output 'logits': 10 of 10 values off tolerance")
    assert "--strict-placement: 2 compute node(s) left CUDAExecutionProvider" in result.failures[1]


# --------------------------------------------------------------------------------------------- real other libraries


@pytest.mark.network
def test_the_gpu_wheels_library_names_what_cuda_lacks_and_runs_on_cpu(
    gpu_wheel: Path, demo: Path, tmp_path: Path
) -> None:
    on_cpu = run_check(
        CheckRequest(model=demo, ep=ExecutionProvider.CPU, package=gpu_wheel, save_outputs=tmp_path / "o.npz")
    )
    assert on_cpu.passed and on_cpu.ort_version == "1.31.1"
    assert on_cpu.package is not None and {"CUDAExecutionProvider"} <= set(on_cpu.package.compiled_providers)
    run_check(CheckRequest(model=demo, ep=ExecutionProvider.CPU, save_outputs=tmp_path / "w.npz"))
    np.testing.assert_allclose(_saved(tmp_path / "o.npz")["logits"], _saved(tmp_path / "w.npz")["logits"], 1e-5, 1e-6)
    if any(Path(p, "libcublasLt.so.13").exists() for p in ("/usr/lib/x86_64-linux-gnu", "/usr/local/cuda/lib64")):
        pytest.skip("CUDA 13 is installed here: the load-failure text cannot be produced")
    with pytest.raises(ProviderLoadError) as caught:
        run_check(CheckRequest(model=demo, ep=ExecutionProvider.CUDA, package=gpu_wheel))
    assert "libonnxruntime_providers_cuda.so" in caught.value.message
    assert "cannot open shared object file" in caught.value.message


@pytest.mark.network
def test_the_oldest_supported_library_checks_the_model(ort114_tgz: Path, demo: Path, tmp_path: Path) -> None:
    result = run_check(
        CheckRequest(model=demo, ep=ExecutionProvider.CPU, package=ort114_tgz, save_outputs=tmp_path / "o.npz")
    )
    assert result.passed and result.ort_version == "1.14.0"
    assert result.package is not None and result.package.library.name == "libonnxruntime.so.1.14.0"
    run_check(CheckRequest(model=demo, ep=ExecutionProvider.CPU, save_outputs=tmp_path / "w.npz"))
    np.testing.assert_allclose(_saved(tmp_path / "o.npz")["logits"], _saved(tmp_path / "w.npz")["logits"], 1e-5, 1e-6)


@pytest.mark.network
def test_a_library_for_another_cpu_is_bad_input(ort114_tgz: Path, demo: Path, tmp_path: Path) -> None:
    member = "package/bin/napi-v3/linux/arm64/libonnxruntime.so.1.14.0"
    with tarfile.open(ort114_tgz) as archive:
        (tmp_path / "libonnxruntime.so.1.14.0").write_bytes(archive.extractfile(member).read())
    with pytest.raises(LibraryPlatformError) as caught:
        run_check(CheckRequest(model=demo, ep=ExecutionProvider.CPU, package=tmp_path / "libonnxruntime.so.1.14.0"))
    assert caught.value.exit_code is ExitCode.BAD_INPUT
    assert "is a Linux arm64 library; this machine is Linux x64" in caught.value.message


# --------------------------------------------------------------------------------------------- bad input


def test_a_folder_without_libonnxruntime_is_bad_input(wheel_library: Path, demo: Path, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("no library here\n", encoding="utf-8")
    with pytest.raises(PackageError) as empty:
        run_check(CheckRequest(model=demo, ep=ExecutionProvider.CPU, package=tmp_path))
    assert empty.value.exit_code is ExitCode.BAD_INPUT
    providers_only = tmp_path / "providers"
    providers_only.mkdir()
    shared = wheel_library.parent / "libonnxruntime_providers_shared.so"
    (providers_only / shared.name).write_bytes(shared.read_bytes())  # ORT's file, but not the core library
    with pytest.raises(LibraryNotFoundError) as missing:
        run_check(CheckRequest(model=demo, ep=ExecutionProvider.CPU, package=providers_only))
    assert "no libonnxruntime.so* or onnxruntime.dll" in missing.value.message


def test_a_session_setting_the_c_api_cannot_apply_is_refused_before_any_run(
    wheel_library: Path, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _simulated_cuda(monkeypatch)
    config = Config().with_session(enable_mem_reuse=False)
    with pytest.raises(UnsupportedSettingError) as caught:
        run_check(CheckRequest(model=demo, ep=ExecutionProvider.CPU, package=wheel_library, config=config))
    assert caught.value.exit_code is ExitCode.BAD_INPUT and "enable_mem_reuse" in caught.value.message
    assert calls == []


def test_session_settings_from_the_config_reach_the_library(
    wheel_library: Path, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _simulated_cuda(monkeypatch)
    config = Config().with_session(graph_optimization_level="disable", intra_op_num_threads=1)
    result = run_check(CheckRequest(model=demo, ep=ExecutionProvider.CPU, package=wheel_library, config=config))
    assert calls[0]["session_settings"]["graph_optimization_level"] == "disable"
    assert "run_log_severity_level" not in calls[0]["session_settings"]  # runs log at warning through the C API
    # no graph optimisation: ORT runs the nodes as exported
    assert result.placement is not None and result.placement.compute_count == result.model_node_count


# --------------------------------------------------------------------------------------------- on a GPU


@pytest.mark.gpu
def test_gpu_check_through_the_package_matches_the_wheel(demo: Path) -> None:
    package = os.environ.get("ORTGPU_PACKAGE")
    if not package:
        pytest.skip("set ORTGPU_PACKAGE to an onnxruntime GPU release folder or archive holding libonnxruntime")
    through_c = run_check(CheckRequest(model=demo, ep=ExecutionProvider.CUDA, package=Path(package)))
    through_wheel = run_check(CheckRequest(model=demo, ep=ExecutionProvider.CUDA))
    assert through_c.passed, through_c.failures
    assert through_c.active_ep is ExecutionProvider.CUDA and through_c.placement_status is PlacementStatus.ALL_ON_EP
    assert through_c.parity.reference is ReferenceKind.CPU_EP and through_c.parity.status is ParityStatus.PASS
    assert through_c.placement is not None and through_wheel.placement is not None
    assert through_c.placement.compute_per_provider == through_wheel.placement.compute_per_provider
