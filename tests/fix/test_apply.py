"""Running a fix plan with an injected pip runner, then the doctor again; and `ortgpu doctor --fix` in-process."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from ortgpu.cli.main import main
from ortgpu.fix import DoctorState, FixPlan, FixStep, Problem, fix_environment

PY = "/env/bin/python"


def _step(*args: str, problem: Problem = Problem.CONFLICT) -> FixStep:
    return FixStep(problem, f"because {args[-1]}", (PY, "-m", "pip", *args))


def _report(ready: bool = False):
    dist = SimpleNamespace(name="onnxruntime", version="1.32.0", flavour=SimpleNamespace(value="cpu"))
    return SimpleNamespace(
        ready=ready,
        verdict="GPU ready: x" if ready else "not ready: the CPU build shadows onnxruntime-gpu",
        distributions=SimpleNamespace(distributions=(dist,)),
        ort=SimpleNamespace(available_providers=("CPUExecutionProvider",)),
    )


PLAN = FixPlan(
    PY, "/env",
    (_step("uninstall", "-y", "onnxruntime"), FixStep(Problem.CONFLICT, "manual", (), manual="do it"),
     _step("install", "--force-reinstall", "--no-deps", "onnxruntime-gpu==1.31.1")),
    None, None, "3 step(s)",
)  # fmt: skip
AFTER = DoctorState(
    True, "GPU ready: CUDA EP will load on GPU 0", ("onnxruntime-gpu 1.31.1 (cuda)",), ("CUDAExecutionProvider",)
)


def test_runs_each_command_in_order_then_rediagnoses() -> None:
    ran: list[list[str]] = []
    result = fix_environment(
        _report(),
        apply=True,
        plan=PLAN,
        runner=lambda argv: ran.append(list(argv)) or (0, "ok"),
        rediagnose=lambda: AFTER,
    )
    assert ran == [list(PLAN.steps[0].command), list(PLAN.steps[2].command)]  # the manual step is never run
    assert [r.ok for r in result.runs] == [True, True] and result.after == AFTER
    assert result.before.distributions == ("onnxruntime 1.32.0 (cpu)",) and not result.before.ready
    assert result.exit_code == 0 and result.stopped is None


def test_stops_at_the_first_failure() -> None:
    ran = []

    def runner(argv):
        ran.append(argv)
        return 1, "ERROR: Could not find a version that satisfies the requirement\nsecond line"

    result = fix_environment(_report(), apply=True, plan=PLAN, runner=runner, rediagnose=lambda: AFTER)
    assert len(ran) == 1 and result.stopped == f"`{PLAN.steps[0].text()}` exited with status 1"
    assert "Could not find a version" in result.runs[0].output_tail
    assert result.exit_code == 3


def test_without_yes_nothing_runs() -> None:
    result = fix_environment(_report(), plan=PLAN, runner=lambda argv: pytest.fail("ran"), rediagnose=lambda: AFTER)
    assert not result.applied and result.runs == () and result.after is None and result.exit_code == 3


def test_a_blocked_plan_never_runs() -> None:
    blocked = FixPlan(PY, "/usr", PLAN.steps, "externally managed", None, "x")
    result = fix_environment(_report(), apply=True, plan=blocked, runner=lambda argv: pytest.fail("ran"))
    assert result.stopped == "externally managed" and not result.applied


def _no_ort_report(monkeypatch):
    from fake_libs import FakeNvml

    from ortgpu.env.doctor import OrtBuild, Probes, diagnose
    from ortgpu.env.nvml import DriverInfo  # noqa: F401 - documents what NO_GPU stands for

    def fake_diagnose(progress=None, **_kw):
        return diagnose(
            probes=Probes(
                environ={}, sys_path=[], ldconfig_text="", loader_root=Path("/nonexistent"),
                nvml=FakeNvml(fail_init="NVML Shared Library Not Found"),
                ort_query=lambda d: OrtBuild(False, "no onnxruntime module", None, None, None, (), None),
            )
        )  # fmt: skip

    monkeypatch.setattr("ortgpu.env.doctor.diagnose", fake_diagnose)


def test_cli_prints_the_plan(monkeypatch, capsys) -> None:
    _no_ort_report(monkeypatch)
    assert main(["doctor", "--fix"]) == 3
    out = capsys.readouterr().out
    import sys

    assert f"{sys.executable} -m pip install onnxruntime" in out
    assert "--fix --yes" in out


def test_cli_yes_runs_and_shows_before_and_after(monkeypatch, capsys) -> None:
    _no_ort_report(monkeypatch)
    ran = []
    monkeypatch.setattr("ortgpu.fix.apply.run_command", lambda argv: ran.append(argv) or (0, ""))
    monkeypatch.setattr("ortgpu.fix.apply.doctor_in_child", lambda python: AFTER)
    assert main(["doctor", "--fix", "--yes", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "ortgpu.doctor.fix/v1"
    assert doc["result"]["applied"] and doc["result"]["after"]["ready"]
    assert doc["result"]["plan"]["steps"][0]["problem"] == "no-onnxruntime"
    assert [list(a)[-1] for a in ran] == ["onnxruntime"]


def test_cli_yes_needs_fix_and_fix_excludes_package(capsys) -> None:
    assert main(["doctor", "--yes"]) == 2
    assert main(["doctor", "--fix", "--package", "x.whl"]) == 2
