"""`ortgpu demo`: the main job on a built-in model: doctor summary, check and bench on the best EP, one report."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.errors import BadInputError
from ortgpu.output_paths import check_outputs
from ortgpu.runtime.guard import import_onnxruntime

if TYPE_CHECKING:  # pragma: no cover
    from ortgpu.bench.result import BenchResult
    from ortgpu.check.result import CheckResult
    from ortgpu.config import ExecutionProvider

__all__ = ["DEMO_REPORT_NAME", "DemoResult", "DoctorSummary", "run_demo"]

DEMO_REPORT_NAME = "ortgpu-demo-report.html"
DEMO_MODEL_DESCRIPTION = (
    "ortgpu's built-in demo model: convolutions and pooling, then a transformer block (LayerNormalization, "
    "MatMul QKV, Softmax attention, MLP), dynamic batch, input image float32 [batch, 3, 32, 32], random weights"
)
# Bench settings sized so the whole demo stays under a minute on two CPU cores.
_BATCHES = (1, 8, 32)
_WARMUP_RUNS = 10
_DURATION_S = 1.0
_FACTS = 6

Progress = Callable[[str, "float | None"], None]


@dataclass(frozen=True)
class DoctorSummary:
    """The doctor's verdict in a line, its root cause and fix when not ready, and the key facts behind it."""

    ready: bool
    verdict: str
    root_cause: str | None
    fix: str | None
    facts: tuple[str, ...]
    seconds: float


@dataclass(frozen=True)
class DemoResult:
    """What the demo did: doctor summary, the EP it chose and why, the check, the bench, and the report."""

    doctor: DoctorSummary
    ep: ExecutionProvider
    ep_reason: str
    model: str
    check: CheckResult
    bench: BenchResult
    report: Path
    steps_s: dict[str, float]
    elapsed_s: float

    @property
    def passed(self) -> bool:
        return self.check.passed and not self.bench.failed_cases and not self.bench.interrupted


def _doctor_summary(report: Any, seconds: float) -> DoctorSummary:
    from ortgpu.env.checks import Status

    order = {Status.FAIL: 0, Status.WARN: 1, Status.OK: 2, Status.INFO: 3, Status.SKIP: 4}
    ranked = sorted(report.checks, key=lambda c: order[c.status])
    facts = tuple(f"{c.status.symbol} {c.title}: {c.evidence}" for c in ranked[:_FACTS])
    return DoctorSummary(report.ready, report.verdict, report.root_cause, report.fix, facts, seconds)


def _sections(result_doctor: DoctorSummary, ep: ExecutionProvider, ep_reason: str, check: Any) -> list[tuple[str, str]]:
    from ortgpu.report.html import escape

    facts = "".join(f"<li>{escape(f)}</li>" for f in result_doctor.facts)
    cause = (
        f"<p><b>cause</b>: {escape(result_doctor.root_cause)}<br><b>fix</b>: {escape(result_doctor.fix)}</p>"
        if result_doctor.root_cause
        else ""
    )
    verdict_class = "ok" if check.passed else "bad"
    return [
        ("Doctor", f"<p><b>{escape(result_doctor.verdict)}</b></p>{cause}<ul>{facts}</ul>"),
        ("Execution provider", f"<p><b>{escape(ep.value)}</b>: {escape(ep_reason)}</p>"),
        (
            "Check",
            f'<p class="{verdict_class}"><b>{escape(check.verdict)}</b></p><p>placement: '
            f"{escape(check.placement_status.value)}; session created in {check.timings.creation_s:.2f} s, "
            f"first run {check.timings.first_run_s * 1e3:.1f} ms</p>",
        ),
    ]


def _stage(progress: Progress, start: float, span: float) -> Progress:
    """A progress callback mapping a step's 0..1 onto [start, start + span] of the whole demo."""

    def report(message: str, fraction: float | None = None) -> None:
        progress(message, None if fraction is None else start + span * min(max(fraction, 0.0), 1.0))

    return report


def run_demo(out_dir: Path | None = None, progress: Progress | None = None) -> DemoResult:
    """Run the demo: no argument needed. Builds the demo model in a temporary folder (removed afterwards), runs
    the doctor, then ``check`` and ``bench`` on the best available EP, and writes ``ortgpu-demo-report.html``
    into ``out_dir`` (default: the current folder). Never prints.
    """
    from ortgpu.bench.modes import BenchMode
    from ortgpu.bench.runner import BenchRequest, run_bench
    from ortgpu.check import CheckRequest, run_check
    from ortgpu.env.doctor import diagnose
    from ortgpu.model.zoo import build_demo_model
    from ortgpu.report.html import write_report
    from ortgpu.session import best_available_ep

    import_onnxruntime()  # before the doctor runs: without an ORT the demo cannot run a model
    tell = progress or (lambda message, fraction=None: None)
    folder = Path(out_dir) if out_dir is not None else Path.cwd()
    if not folder.is_dir():
        raise BadInputError(f"--out-dir {folder}: no such folder", "create it first, or leave it out")
    report_path = (folder / DEMO_REPORT_NAME).resolve()
    check_outputs({"report": report_path})  # before the doctor, check and bench run
    started = time.perf_counter()
    steps: dict[str, float] = {}

    tell("doctor: diagnosing this machine", 0.0)
    mark = time.perf_counter()
    doctor = _doctor_summary(diagnose(_stage(tell, 0.0, 0.15)), time.perf_counter() - mark)
    steps["doctor"] = doctor.seconds

    mark = time.perf_counter()
    ep, ep_reason = best_available_ep()
    steps["choose EP"] = time.perf_counter() - mark
    with tempfile.TemporaryDirectory(prefix="ortgpu-demo-") as tmp:
        model = build_demo_model(Path(tmp) / "ortgpu-demo.onnx")
        tell(f"check on {ep.value}", 0.15)
        mark = time.perf_counter()
        check = run_check(CheckRequest(model=model, ep=ep, warm_runs=3), _stage(tell, 0.15, 0.15))
        steps["check"] = time.perf_counter() - mark
        mark = time.perf_counter()
        bench = run_bench(
            BenchRequest(
                model=model,
                ep=ep,
                ep_reason=ep_reason,
                modes=tuple(BenchMode),
                all_modes=True,
                batches=_BATCHES,
                warmup=_WARMUP_RUNS,
                duration_s=_DURATION_S,
                compare_cpu=ep.is_gpu,
            ),
            _stage(tell, 0.3, 0.65),
        )
        steps["bench"] = time.perf_counter() - mark
    tell("writing the report", 0.97)
    write_report(bench, report_path, title="ortgpu demo", sections=_sections(doctor, ep, ep_reason, check))
    return DemoResult(
        doctor=doctor,
        ep=ep,
        ep_reason=ep_reason,
        model=DEMO_MODEL_DESCRIPTION,
        check=check,
        bench=bench,
        report=report_path,
        steps_s=steps,
        elapsed_s=time.perf_counter() - started,
    )
