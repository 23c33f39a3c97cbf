"""run_bench on the CPU EP: cases, counts, sweeps, concurrency, skips, failures, Ctrl-C, bad settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ortgpu.bench.hints import bench_hints
from ortgpu.bench.modes import BenchMode, ModeRefusedError, RunMode
from ortgpu.bench.result import BenchCase, CaseStatus, HintKind
from ortgpu.bench.runner import BenchInputError, BenchRequest, run_bench
from ortgpu.bench.stats import MIN_RUNS
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import ExitCode
from ortgpu.report.html import write_report


def _quick(model: Path, **fields: object) -> BenchRequest:
    values: dict[str, object] = {"model": model, "ep": ExecutionProvider.CPU, "iterations": 30, "warmup": 3}
    values.update(fields)
    return BenchRequest(**values)


def test_batch_sweep_over_modes(tiny_model: Path) -> None:
    progress: list[tuple[str, float | None]] = []
    result = run_bench(
        _quick(tiny_model, modes=(BenchMode.RUN, BenchMode.IOBINDING), batches=(1, 8)),
        lambda message, fraction=None: progress.append((message, fraction)),
    )
    assert [(c.mode, c.batch) for c in result.cases] == [
        (BenchMode.RUN, 1),
        (BenchMode.IOBINDING, 1),
        (BenchMode.RUN, 8),
        (BenchMode.IOBINDING, 8),
    ]
    for case in result.cases:
        assert case.status is CaseStatus.OK
        assert case.shapes == {"x": (case.batch, 4)}
        assert case.stats.count == 30
        assert case.stats.throughput == pytest.approx(case.batch * 30 / case.stats.wall_s)
        assert case.stats.min_ms <= case.stats.p50_ms <= case.stats.p99_ms <= case.stats.max_ms
        assert case.cold.first_run_ms > 0
        assert case.warmup.runs == 3 and case.warmup.policy == "count"
    assert result.cases[0].cold.session_reused is False
    assert all(c.cold.session_reused for c in result.cases[1:])  # one session serves both modes and batches
    assert result.settings.batches == (1, 8)
    assert result.environment.ort_version and result.environment.ep == "cpu"
    fractions = [f for _, f in progress if f is not None]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0


def test_duration_and_auto_warmup(tiny_model: Path) -> None:
    result = run_bench(_quick(tiny_model, iterations=None, duration_s=0.2, warmup=None, max_warmup_s=0.3))
    case = result.cases[0]
    assert case.stats.count >= MIN_RUNS
    assert case.stats.wall_s >= 0.2
    assert case.warmup.policy == "auto" and case.warmup.seconds <= 1.0
    assert result.settings.duration_s == 0.2


def test_concurrency_threads_and_sessions(tiny_model: Path) -> None:
    result = run_bench(_quick(tiny_model, concurrency=(1, 3), sessions=3))
    single, threaded = result.cases
    assert (single.concurrency, single.sessions) == (1, 1)
    assert (threaded.concurrency, threaded.sessions) == (3, 3)
    assert threaded.stats.count == 3 * 30  # every thread's runs are in the stats
    assert threaded.stats.throughput == pytest.approx(3 * 30 / threaded.stats.wall_s)


def test_mode_all_on_cpu_skips_cudagraph_with_the_reason(tiny_model: Path) -> None:
    result = run_bench(_quick(tiny_model, modes=tuple(BenchMode), all_modes=True))
    graph = next(c for c in result.cases if c.mode is BenchMode.CUDAGRAPH)
    assert graph.status is CaseStatus.SKIPPED and "GPU" in graph.reason
    assert graph.stats is None
    assert {c.mode for c in result.measured_cases} == {BenchMode.RUN, BenchMode.IOBINDING}


def test_cudagraph_asked_for_on_cpu_is_refused(tiny_model: Path) -> None:
    with pytest.raises(ModeRefusedError) as info:
        run_bench(_quick(tiny_model, modes=(BenchMode.CUDAGRAPH,)))
    assert info.value.exit_code is ExitCode.ENVIRONMENT
    assert "CPU" in info.value.message


def test_a_failing_case_is_recorded_and_the_others_still_run(batch_one_only_model: Path) -> None:
    result = run_bench(_quick(batch_one_only_model, batches=(1, 2)))
    ok, failed = result.cases
    assert ok.status is CaseStatus.OK
    assert failed.status is CaseStatus.FAILED and failed.reason
    assert result.failed_cases == (failed,)
    assert any(h.kind is HintKind.FAILED for h in result.hints)


def test_fixed_batch_model_cannot_be_swept(fixed_batch_model: Path) -> None:
    with pytest.raises(BenchInputError, match="fixed leading dim"):
        run_bench(_quick(fixed_batch_model, batches=(1, 4)))
    result = run_bench(_quick(fixed_batch_model))  # without --batch, its fixed batch counts the samples
    assert result.cases[0].batch == 2


def test_ctrl_c_keeps_what_finished(tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = RunMode._prepare
    calls = {"n": 0}

    def prepare_with_interrupt(self: RunMode):
        step = original(self)

        def interrupted_step():
            calls["n"] += 1
            if calls["n"] == 3 + 1 + 1 + 20:  # first run, probe, 3 warm-up, then 20 timed runs of batch 2
                raise KeyboardInterrupt
            return step()

        return interrupted_step if self.feeds["x"].shape[0] == 2 else step

    monkeypatch.setattr(RunMode, "_prepare", prepare_with_interrupt)
    save = tmp_path / "partial.json"
    result = run_bench(_quick(tiny_model, batches=(1, 2, 4), save=save))
    assert result.interrupted
    assert [c.batch for c in result.cases] == [1, 2]  # batch 4 never started
    first, cut = result.cases
    assert first.status is CaseStatus.OK and first.stats.count == 30
    assert cut.status is CaseStatus.INTERRUPTED and 15 <= cut.stats.count < 30
    assert json.loads(save.read_text())["result"]["interrupted"] is True
    assert any(h.kind is HintKind.INTERRUPTED for h in result.hints)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"batches": (0,)}, "--batch"),
        ({"concurrency": (0,)}, "--concurrency"),
        ({"concurrency": ()}, "--concurrency"),
        ({"sessions": 0}, "--sessions"),
        ({"iterations": 0}, "--iterations"),
        ({"duration_s": 1.0}, "both given"),
        ({"iterations": None, "duration_s": -1.0}, "--duration"),
        ({"iterations": None, "duration_s": float("nan")}, "--duration"),
        ({"warmup": -1}, "--warmup"),
        ({"max_regression": -0.1}, "--max-regression"),
    ],
)
def test_nonsense_settings_are_bad_input(tiny_model: Path, fields: dict, message: str) -> None:
    with pytest.raises(BenchInputError, match=message) as info:
        run_bench(_quick(tiny_model, **fields))
    assert info.value.exit_code is ExitCode.BAD_INPUT


def test_output_folder_is_checked_before_running(tiny_model: Path, tmp_path: Path) -> None:
    with pytest.raises(BenchInputError, match="does not exist"):
        run_bench(_quick(tiny_model, save=tmp_path / "missing" / "x.json"))
    with pytest.raises(BenchInputError, match="does not exist"):
        run_bench(_quick(tiny_model, report=tmp_path / "missing" / "x.html"))


def _gpu_case(mode: str, batch: int, p50: float, speedup: float | None = None) -> BenchCase:
    from ortgpu.bench.stats import compute_stats

    stats = compute_stats([int(p50 * 1e6)] * 50, batch, wall_s=p50 * 50 / 1e3)
    return BenchCase(
        ep=ExecutionProvider.CUDA,
        mode=BenchMode(mode),
        batch=batch,
        concurrency=1,
        sessions=1,
        status=CaseStatus.OK,
        shapes={"x": (batch, 4)},
        stats=stats,
        speedup_vs_cpu=speedup,
    )


def test_hints_name_the_bottleneck(demo_model: Path) -> None:
    from ortgpu.model.inspect import inspect_model

    model = inspect_model(demo_model)
    cases = [
        _gpu_case("run", 1, 1.0, speedup=0.5),
        _gpu_case("iobinding", 1, 0.5),
        _gpu_case("cudagraph", 1, 0.2),
    ]
    hints = bench_hints(cases, model, ExecutionProvider.CUDA, False, "asked", False)
    kinds = {h.kind for h in hints}
    assert {HintKind.COPY_BOUND, HintKind.LAUNCH_BOUND, HintKind.GPU_SLOWER_THAN_CPU} <= kinds
    assert HintKind.UNSTABLE not in kinds
    steady = bench_hints(
        [_gpu_case("iobinding", 1, 0.5), _gpu_case("cudagraph", 1, 0.49)],
        model,
        ExecutionProvider.CUDA,
        False,
        "asked",
        False,
    )
    assert not steady


def test_bench_ignores_a_configs_cpu_fallback_so_cpu_numbers_never_carry_a_gpu_label(tmp_path) -> None:
    from ortgpu.bench import BenchRequest, run_bench
    from ortgpu.model.zoo import build_tiny_model
    from ortgpu.session import ProviderUnavailableError

    model = build_tiny_model(tmp_path / "tiny.onnx")
    config_file = tmp_path / "ortgpu.toml"
    config_file.write_text('fallback = "cpu"\n')
    import onnxruntime as ort

    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime has the CUDA EP: no fallback to provoke")
    request = BenchRequest(model=model, ep=ExecutionProvider.CUDA, config=config_file, iterations=5)
    with pytest.raises(ProviderUnavailableError):
        run_bench(request)


def test_without_a_mode_the_config_run_mode_is_used(tiny_model: Path, tmp_path: Path) -> None:
    config = tmp_path / "ortgpu.toml"
    config.write_text('[run]\nmode = "iobinding"\n')
    result = run_bench(BenchRequest(tiny_model, ep=ExecutionProvider.CPU, modes=(), config=config, iterations=20))
    assert [c.mode for c in result.cases] == [BenchMode.IOBINDING]
    plain = run_bench(BenchRequest(tiny_model, ep=ExecutionProvider.CPU, modes=(), iterations=20))
    assert [c.mode for c in plain.cases] == [BenchMode.RUN]


def test_against_defaults_benches_ort_defaults_too_and_gives_the_speedup(tiny_model: Path, tmp_path: Path) -> None:
    config = tmp_path / "ortgpu.toml"
    config.write_text('[run]\nmode = "iobinding"\n[session]\nintra_op_num_threads = 1\n')
    request = BenchRequest(
        tiny_model, ep=ExecutionProvider.CPU, modes=(), config=config, iterations=30, against_defaults=True
    )
    result = run_bench(request)
    assert result.defaults is not None
    assert [c.mode for c in result.defaults.cases] == [BenchMode.RUN]
    assert result.defaults.settings.config is None
    ((label, speedup),) = result.speedups_over_defaults().items()
    base = result.defaults.cases[0].stats.p50_ms
    assert label == "cpu/iobinding batch 1" and speedup == pytest.approx(base / result.cases[0].stats.p50_ms)


def test_against_defaults_measures_the_defaults_on_the_configs_inputs(tiny_model: Path, tmp_path: Path) -> None:
    """tune writes the tuned batch into [inputs]: ORT's defaults must be measured on the same shapes, or the table
    has no defaults row and no speed-up (what `tune --batch 32` then `bench --against-defaults` showed)."""
    config = tmp_path / "ortgpu.toml"
    config.write_text('[run]\nmode = "iobinding"\n[inputs]\nshapes = { x = "4x4" }\n')
    request = BenchRequest(
        tiny_model, ep=ExecutionProvider.CPU, modes=(), config=config, iterations=20, against_defaults=True
    )
    result = run_bench(request)
    assert result.defaults is not None and [c.batch for c in result.defaults.cases] == [4]
    assert list(result.speedups_over_defaults()) == ["cpu/iobinding batch 4"]


def test_against_defaults_is_in_the_html_report(tiny_model: Path, tmp_path: Path) -> None:
    config = tmp_path / "ortgpu.toml"
    config.write_text('[run]\nmode = "iobinding"\n')
    report = tmp_path / "r.html"
    request = BenchRequest(
        tiny_model, ep=ExecutionProvider.CPU, modes=(), config=config, iterations=20, against_defaults=True,
        report=report,
    )  # fmt: skip
    result = run_bench(request)
    write_report(result, result.report_to)  # the caller renders the report (the CLI does it for --report)
    html = report.read_text(encoding="utf-8")
    (speedup,) = result.speedups_over_defaults().values()
    assert '<table id="against-defaults">' in html and "ORT defaults (run)" in html
    assert f"{speedup:.2f}x" in html and "ortgpu.toml (iobinding)" in html
