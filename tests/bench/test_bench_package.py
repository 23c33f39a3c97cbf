"""run_bench with ``package``: the model timed through a package's own C library, in child processes."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ortgpu.bench import BenchInputError, BenchMode, BenchRequest, CaseStatus, HintKind, load_result, run_bench
from ortgpu.bench.package import _PROBE_RUNS
from ortgpu.capi import runner as runner_module
from ortgpu.capi.binding import ProviderLoadError
from ortgpu.capi.runner import UnsupportedSettingError
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import ExitCode
from ortgpu.host import nvml
from ortgpu.package.archive import PackageError
from ortgpu.report.html import write_report
from ortgpu.results import envelope

QUICK: dict[str, Any] = {"iterations": 40, "warmup": 3}  # counts given: no probe child, one child per case


def _recorded(monkeypatch: pytest.MonkeyPatch, cuda: bool = False) -> list[dict[str, Any]]:
    """Record every call to the C-API runner. With ``cuda``, a "cuda" run is a CPU run reported as CUDA (what a
    GPU machine would return), so the GPU paths can be followed on this machine."""
    real = runner_module.run_package_model
    calls: list[dict[str, Any]] = []

    def run(library: Any, model: Any, feeds: Any, ep: Any = "cpu", provider_options: Any = None, device_id: int = 0,
            **kwargs: Any) -> Any:  # fmt: skip
        shapes = {k: tuple(np.asarray(v).shape) for k, v in feeds.items()}
        calls.append(
            {"ep": ep, "options": dict(provider_options or {}), "device_id": device_id, "shapes": shapes, **kwargs}
        )
        if not (cuda and ep == "cuda"):
            return real(library, model, feeds, ep, provider_options, device_id, **kwargs)
        done = real(library, model, feeds, "cpu", None, 0, **kwargs)
        name = "CUDAExecutionProvider"
        return dataclasses.replace(
            done,
            requested_provider=name,
            appended_providers=(name,),
            provider_options={name: {"device_id": str(device_id), "use_tf32": "1", **provider_options}},
        )

    monkeypatch.setattr(runner_module, "run_package_model", run)
    return calls


# --------------------------------------------------------------------------------------------- what it measures


def test_a_package_bench_gives_sane_stats_and_records_the_library(
    wheel_library: Path, demo_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnxruntime as ort

    calls = _recorded(monkeypatch)
    request = BenchRequest(model=demo_model, ep=ExecutionProvider.CPU, batches=(1, 16), package=wheel_library, **QUICK)
    result = run_bench(request)
    assert [c.status for c in result.cases] == [CaseStatus.OK, CaseStatus.OK]
    one, sixteen = result.cases
    for case in result.cases:
        s = case.stats
        assert s is not None and s.count == 40 and case.warmup is not None and case.warmup.runs == 3
        assert 0 < s.min_ms <= s.p50_ms <= s.p95_ms <= s.p99_ms <= s.max_ms
        assert s.throughput == pytest.approx(case.batch * s.runs_per_s)
        assert case.cold is not None and not case.cold.session_reused  # a fresh child process per case
        assert case.cold.session_creation_s > 0 and case.cold.first_run_ms > 0
        assert len(case.timeline_ms) == 40 and case.gpu_memory_used_bytes is None
    # the batch reached the library: 16 images take longer than one
    assert sixteen.stats.p50_ms > one.stats.p50_ms and sixteen.shapes["image"][0] == 16
    # one child per case, never profiled, the warm-up timed with the runs (and dropped from the stats)
    assert [(c["ep"], c["iterations"], c["warmup"], c["profile"]) for c in calls] == [("cpu", 43, 0, False)] * 2
    assert [c["shapes"]["image"][0] for c in calls] == [1, 16]
    package = result.package
    assert package is not None and package.library == wheel_library and package.source == wheel_library
    assert package.ort_version == ort.__version__ and package.api_version >= 11
    assert "CPUExecutionProvider" in package.compiled_providers
    env = result.environment
    assert env.ort_version == package.ort_version and env.ort_build_info == (package.build_info or "")
    assert env.active_providers == ("CPUExecutionProvider",) and env.loaded_libraries == ()
    assert any(str(wheel_library) in note for note in env.notes)
    assert result.ep is ExecutionProvider.CPU and result.ep_reason == "asked for with --ep"


def test_duration_becomes_a_run_count_from_a_probe_and_auto_warmup_is_judged_on_timed_runs(
    wheel_library: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _recorded(monkeypatch)
    result = run_bench(BenchRequest(model=tiny_model, ep=ExecutionProvider.CPU, duration_s=0.3, package=wheel_library))
    (case,) = result.cases
    probe, measured = calls
    assert probe["iterations"] == _PROBE_RUNS
    assert case.warmup is not None and case.warmup.policy == "auto" and case.warmup.runs >= 3
    assert measured["iterations"] == case.warmup.runs + case.stats.count
    assert case.stats.count >= 10
    # about the time asked for (the probe's median sizes it; a loaded CI machine moves it, not by 5x)
    assert 0.3 / 5 < case.stats.wall_s < 0.3 * 5
    assert result.settings.duration_s == 0.3 and result.settings.iterations is None


def test_iterations_with_auto_warmup_still_probe_and_a_warmup_count_does_not(
    wheel_library: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _recorded(monkeypatch)
    auto = run_bench(BenchRequest(model=tiny_model, ep=ExecutionProvider.CPU, iterations=25, package=wheel_library))
    assert [c["iterations"] for c in calls] == [_PROBE_RUNS, auto.cases[0].warmup.runs + 25]
    calls.clear()
    counted = run_bench(
        BenchRequest(model=tiny_model, ep=ExecutionProvider.CPU, iterations=25, warmup=7, package=wheel_library)
    )
    assert [c["iterations"] for c in calls] == [32]
    assert counted.cases[0].warmup.policy == "count" and counted.cases[0].warmup.settled


# --------------------------------------------------------------------------------------------- the EP, strictly


def test_cuda_through_a_cpu_build_is_exit_3_with_orts_text_and_writes_nothing(
    wheel_library: Path, tiny_model: Path, tmp_path: Path
) -> None:
    saved = tmp_path / "never.json"
    request = BenchRequest(model=tiny_model, ep=ExecutionProvider.CUDA, package=wheel_library, save=saved, **QUICK)
    with pytest.raises(ProviderLoadError) as caught:
        run_bench(request)
    assert caught.value.exit_code is ExitCode.ENVIRONMENT
    assert "CUDA execution provider is not enabled in this build" in caught.value.message
    assert not saved.exists()


@pytest.mark.parametrize(
    ("present", "reason"),
    [(False, "CPU: no NVIDIA driver answers"), (True, "cannot enable the CUDA EP here: CUDAExecutionProvider")],
)
def test_without_ep_the_package_gets_cuda_when_it_can_and_says_why_not(
    wheel_library: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch, present: bool, reason: str
) -> None:
    gpu = nvml.GpuInfo(0, "NVIDIA H200", "GPU-0", 141 * 2**30, (9, 0), "00000000:01:00.0")
    driver = (
        nvml.DriverInfo(True, "580.95.05", "13.0", (gpu,), None)
        if present
        else nvml.DriverInfo(False, None, None, (), "NVML: NVML Shared Library Not Found")
    )
    monkeypatch.setattr(nvml, "query_driver", lambda *a, **k: driver)
    result = run_bench(BenchRequest(model=tiny_model, package=wheel_library, **QUICK))
    assert result.ep is ExecutionProvider.CPU and result.cases[0].status is CaseStatus.OK
    assert reason in result.ep_reason
    assert any(h.kind is HintKind.CPU_ONLY for h in result.hints)


def test_a_gpu_bench_takes_the_provider_options_and_compares_with_the_same_librarys_cpu_ep(
    wheel_library: Path, tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _recorded(monkeypatch, cuda=True)
    config = tmp_path / "ortgpu.toml"
    config.write_text('[ep.cuda]\ncudnn_conv_algo_search = "DEFAULT"\n', encoding="utf-8")
    request = BenchRequest(
        model=tiny_model,
        ep=ExecutionProvider.CUDA,
        compare_cpu=True,
        batches=(1, 4),
        provider_options={"use_tf32": "0"},
        config=config,
        device_id=1,
        package=wheel_library,
        **QUICK,
    )
    result = run_bench(request)
    assert [(c.ep.value, c.batch, c.status.value) for c in result.cases] == [
        ("cuda", 1, "ok"),
        ("cuda", 4, "ok"),
        ("cpu", 1, "ok"),
        ("cpu", 4, "ok"),
    ]
    cuda_calls = [c for c in calls if c["ep"] == "cuda"]
    assert {c["device_id"] for c in cuda_calls} == {1}
    assert cuda_calls[0]["options"] == {"cudnn_conv_algo_search": "DEFAULT", "use_tf32": "0", "device_id": "1"}
    assert all(c["options"] == {} for c in calls if c["ep"] == "cpu")  # the CPU EP of the same library, plain
    gpu_cases = [c for c in result.cases if c.ep is ExecutionProvider.CUDA]
    assert all(c.speedup_vs_cpu is not None and c.speedup_vs_cpu > 0 for c in gpu_cases)
    env = result.environment
    assert env.active_providers == ("CUDAExecutionProvider", "CPUExecutionProvider")
    assert env.provider_options["CUDAExecutionProvider"]["use_tf32"] == "0" and env.device_id == 1


# --------------------------------------------------------------------------------------------- results that last


def test_save_baseline_and_report_work_on_a_package_result(
    wheel_library: Path, tiny_model: Path, tmp_path: Path
) -> None:
    wheel_run = tmp_path / "wheel.json"
    run_bench(BenchRequest(model=tiny_model, ep=ExecutionProvider.CPU, save=wheel_run, **QUICK))
    saved, report = tmp_path / "c.json", tmp_path / "c.html"
    request = BenchRequest(
        model=tiny_model,
        ep=ExecutionProvider.CPU,
        package=wheel_library,
        save=saved,
        report=report,
        baseline=wheel_run,
        max_regression=1000.0,  # this test is about the comparison, not about the speed of a noisy machine
        **QUICK,
    )
    result = run_bench(request)
    write_report(result, result.report_to)  # the caller renders the report (the CLI does it for --report)
    loaded = load_result(saved)
    assert loaded.package == result.package and loaded.cases == result.cases
    assert envelope("bench", result)["result"]["package"]["library"] == str(wheel_library)
    comparison = result.comparison
    assert comparison is not None and [c.key.label for c in comparison.cases] == ["cpu/run batch 1"]
    assert any(
        change.startswith(f"ONNX Runtime library: the onnxruntime wheel -> the C library {wheel_library}")
        for change in comparison.environment_changes
    )
    html = report.read_text(encoding="utf-8")
    assert "timed through the C library" in html and "<img" in html


def test_a_run_that_fails_at_one_batch_fails_that_case_only(wheel_library: Path, batch_one_only_model: Path) -> None:
    result = run_bench(
        BenchRequest(
            model=batch_one_only_model, ep=ExecutionProvider.CPU, batches=(1, 3), package=wheel_library, **QUICK
        )
    )
    ok, failed = result.cases
    assert ok.status is CaseStatus.OK and failed.status is CaseStatus.FAILED
    assert "cannot be reshaped" in (failed.reason or "") and failed.stats is None
    assert any(h.kind is HintKind.FAILED for h in result.hints)


def test_ctrl_c_keeps_the_cases_that_finished(
    wheel_library: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = runner_module.run_package_model
    done: list[int] = []

    def run(*args: Any, **kwargs: Any) -> Any:
        if done:
            raise KeyboardInterrupt
        done.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(runner_module, "run_package_model", run)
    result = run_bench(
        BenchRequest(model=tiny_model, ep=ExecutionProvider.CPU, batches=(1, 2, 4), package=wheel_library, **QUICK)
    )
    assert result.interrupted and [c.status for c in result.cases] == [CaseStatus.OK, CaseStatus.INTERRUPTED]
    assert any(h.kind is HintKind.INTERRUPTED for h in result.hints)


# --------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"modes": (BenchMode.IOBINDING,)},
            "--mode iobinding with --package: a package's C library is timed in mode run",
        ),
        ({"modes": (BenchMode.RUN, BenchMode.CUDAGRAPH)}, "--mode cudagraph with --package"),
        ({"concurrency": (1, 4)}, "--concurrency 4 with --package"),
        ({"sessions": 2, "concurrency": (2,)}, "--concurrency 2 with --package"),
        ({"sessions": 2}, "--sessions 2 with --package"),
    ],
)
def test_what_a_package_cannot_time_is_exit_2_before_any_child(
    wheel_library: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch, changes: dict[str, Any], message: str
) -> None:
    calls = _recorded(monkeypatch)
    request = BenchRequest(model=tiny_model, ep=ExecutionProvider.CPU, package=wheel_library, **QUICK)
    with pytest.raises(BenchInputError) as caught:
        run_bench(dataclasses.replace(request, **changes))
    assert caught.value.exit_code is ExitCode.BAD_INPUT and message in caught.value.message
    assert "\n" not in caught.value.one_line() and calls == []


def test_mode_all_skips_the_modes_a_package_cannot_time_and_says_why(wheel_library: Path, tiny_model: Path) -> None:
    request = BenchRequest(
        model=tiny_model,
        ep=ExecutionProvider.CPU,
        modes=tuple(BenchMode),
        all_modes=True,
        package=wheel_library,
        **QUICK,
    )
    result = run_bench(request)
    statuses = {c.mode: c.status for c in result.cases}
    assert statuses == {
        BenchMode.RUN: CaseStatus.OK,
        BenchMode.IOBINDING: CaseStatus.SKIPPED,
        BenchMode.CUDAGRAPH: CaseStatus.SKIPPED,
    }
    skipped = next(c for c in result.cases if c.mode is BenchMode.IOBINDING)
    assert "timed in mode run only" in (skipped.reason or "")


def test_a_setting_the_c_api_cannot_apply_and_a_folder_without_a_library_are_exit_2(
    wheel_library: Path, tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _recorded(monkeypatch)
    config = tmp_path / "ortgpu.toml"
    config.write_text("[session]\nenable_mem_reuse = false\n", encoding="utf-8")
    base = BenchRequest(model=tiny_model, ep=ExecutionProvider.CPU, package=wheel_library, **QUICK)
    with pytest.raises(UnsupportedSettingError) as setting:
        run_bench(dataclasses.replace(base, config=config))
    assert setting.value.exit_code is ExitCode.BAD_INPUT and "enable_mem_reuse" in setting.value.message
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(PackageError) as folder:
        run_bench(dataclasses.replace(base, package=empty))
    assert folder.value.exit_code is ExitCode.BAD_INPUT
    assert calls == []


# --------------------------------------------------------------------------------------------- other libraries


@pytest.mark.network
def test_the_oldest_supported_library_is_benched_from_its_archive(ort114_tgz: Path, tiny_model: Path) -> None:
    result = run_bench(BenchRequest(model=tiny_model, ep=ExecutionProvider.CPU, package=ort114_tgz, **QUICK))
    assert result.cases[0].status is CaseStatus.OK and result.cases[0].stats.count == 40
    package = result.package
    assert package is not None and package.ort_version == "1.14.0" == result.environment.ort_version
    assert package.source == ort114_tgz and package.library.name == "libonnxruntime.so.1.14.0"


@pytest.mark.gpu
def test_gpu_bench_through_the_package_lands_near_the_wheel(demo_model: Path) -> None:
    package = os.environ.get("ORTGPU_PACKAGE")
    if not package:
        pytest.skip("set ORTGPU_PACKAGE to an onnxruntime GPU release folder or archive holding libonnxruntime")
    counts = {"iterations": 300, "warmup": 50, "batches": (8,)}
    through_c = run_bench(BenchRequest(model=demo_model, ep=ExecutionProvider.CUDA, package=Path(package), **counts))
    through_wheel = run_bench(BenchRequest(model=demo_model, ep=ExecutionProvider.CUDA, **counts))
    c, w = through_c.cases[0].stats, through_wheel.cases[0].stats
    assert through_c.environment.active_providers[0] == "CUDAExecutionProvider"
    # the same work (Run with host outputs) through two bindings of the same kernels: within a factor of 2
    assert 0.5 < c.p50_ms / w.p50_ms < 2.0
