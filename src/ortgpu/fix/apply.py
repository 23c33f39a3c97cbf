"""Running a fix plan: each pip command through an injectable runner, then the doctor again in a fresh process.

The doctor is re-run in a child (``python -m ortgpu doctor --json``) because this process may already have
imported the onnxruntime that pip just replaced; its verdict is the "after" beside the "before".
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ortgpu.errors import ExitCode
from ortgpu.fix.plan import FixPlan, FixStep, plan_fixes
from ortgpu.progress import silent

__all__ = ["DoctorState", "FixResult", "StepRun", "doctor_in_child", "fix_environment", "run_command"]

Progress = Callable[[str, "float | None"], None]
Runner = Callable[[Sequence[str]], tuple[int, str]]  # argv -> (exit status, output)

_PIP_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class DoctorState:
    """The doctor's verdict and the facts a fix changes, before or after."""

    ready: bool
    verdict: str
    distributions: tuple[str, ...]  # "onnxruntime-gpu 1.31.1 (cuda)"
    providers: tuple[str, ...]  # compiled into the onnxruntime that imports
    error: str | None = None  # the doctor could not be re-run: why

    @classmethod
    def from_report(cls, report: Any) -> DoctorState:
        dists = tuple(f"{d.name} {d.version} ({d.flavour.value})" for d in report.distributions.distributions)
        return cls(report.ready, report.verdict, dists, tuple(report.ort.available_providers))


@dataclass(frozen=True)
class StepRun:
    step: FixStep
    returncode: int
    output_tail: str  # the last lines pip printed
    seconds: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0


@dataclass(frozen=True)
class FixResult:
    plan: FixPlan
    applied: bool  # the commands were run (--yes)
    runs: tuple[StepRun, ...]
    before: DoctorState
    after: DoctorState | None  # None when nothing ran
    stopped: str | None  # a step failed or the plan could not run: why

    @property
    def exit_code(self) -> int:
        """0 when the environment is (now) GPU ready or nothing is wrong in it; 3 otherwise."""

        state = self.after or self.before
        return int(ExitCode.OK if state.ready and not self.stopped else ExitCode.ENVIRONMENT)


def run_command(argv: Sequence[str]) -> tuple[int, str]:
    """Run one pip command; output (stdout and stderr together) is captured, never shown raw."""
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=_PIP_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 1, f"{type(exc).__name__}: {exc}"
    return done.returncode, (done.stdout or "") + (done.stderr or "")


def doctor_in_child(python: str = sys.executable) -> DoctorState:
    """The doctor's verdict from a fresh ``python -m ortgpu doctor --json``."""
    try:
        done = subprocess.run(
            [python, "-m", "ortgpu", "doctor", "--json"], capture_output=True, text=True, timeout=600, check=False
        )
        result = json.loads(done.stdout)["result"]
    except (OSError, subprocess.TimeoutExpired, ValueError, KeyError, TypeError) as exc:
        return DoctorState(False, "the doctor could not be re-run", (), (), f"{type(exc).__name__}: {exc}")
    dists = tuple(f"{d['name']} {d['version']} ({d['flavour']})" for d in result["distributions"]["distributions"])
    return DoctorState(
        bool(result["ready"]), str(result["verdict"]), dists, tuple(result["ort"]["available_providers"])
    )


def _tail(text: str, lines: int = 8) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def fix_environment(
    report: Any,
    *,
    apply: bool = False,
    runner: Runner | None = None,
    rediagnose: Callable[[], DoctorState] | None = None,
    progress: Progress | None = None,
    plan: FixPlan | None = None,
) -> FixResult:
    """Plan the pip fixes for ``report`` (a DoctorReport of this machine); with ``apply`` run them in order,
    stopping at the first failure, then re-run the doctor. Manual steps are never run."""
    tell = progress or silent
    plan = plan or plan_fixes(report)
    before = DoctorState.from_report(report)
    if not apply or not plan.runnable:
        return FixResult(plan, False, (), before, None, None)
    if plan.blocked:
        return FixResult(plan, False, (), before, None, plan.blocked)
    runs: list[StepRun] = []
    stopped = None
    steps = plan.runnable
    for index, step in enumerate(steps):
        tell(step.text(), index / (len(steps) + 1))
        started = time.perf_counter()
        code, output = (runner or run_command)(step.command)
        runs.append(StepRun(step, code, _tail(output), time.perf_counter() - started))
        if code != 0:
            stopped = f"`{step.text()}` exited with status {code}"
            break
    tell("re-running the doctor", len(steps) / (len(steps) + 1))
    after = (rediagnose or (lambda: doctor_in_child(plan.python)))()
    return FixResult(plan, True, tuple(runs), before, after, stopped)
