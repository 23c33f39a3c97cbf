"""Each trial runs in a child process: a hang, a crash or a memory hog is an outcome, never the end of the tune."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from ortgpu.tune.trial import CHILD_COMMAND, TrialLimits, run_child


def _script(body: str) -> list[str]:
    return [sys.executable, "-c", "import sys, json\nsys.stdin.readline()\n" + body]


def test_a_hanging_trial_is_killed_at_its_time_limit() -> None:
    outcome = run_child({}, TrialLimits(time_s=0.5), command=_script("import time\ntime.sleep(60)"))
    assert outcome.kind == "timeout" and "killed after" in outcome.message
    assert outcome.seconds < 5


def test_a_crashing_trial_is_reported_with_its_signal() -> None:
    body = "sys.stderr.write('boom\\n')\nimport os\nos.abort()"
    outcome = run_child({}, TrialLimits(time_s=20), command=_script(body))
    assert outcome.kind == "crashed"
    assert "signal 6" in outcome.message and "boom" in outcome.stderr_tail


def test_a_trial_over_the_host_memory_limit_is_killed() -> None:
    hog = "import time\nblocks = []\nwhile True:\n    blocks.append(bytearray(50 * 2**20))\n    time.sleep(0.01)"
    outcome = run_child({}, TrialLimits(time_s=20, host_memory_bytes=300 * 2**20), command=_script(hog))
    assert outcome.kind == "memory"
    assert "over the host memory limit of 300 MiB" in outcome.message


def test_stray_output_is_ignored_and_the_pruner_can_stop_a_trial_between_stages() -> None:
    body = (
        "print('not json')\n"
        "for step in range(3):\n"
        "    print(json.dumps({'event': 'stage', 'step': step, 'value': 10.0 + step}), flush=True)\n"
        "    if sys.stdin.readline().strip() != 'go':\n"
        "        sys.exit(0)\n"
        "print(json.dumps({'event': 'done', 'value': 12.0}), flush=True)\n"
    )
    seen: list[tuple[int, float]] = []
    spec = {"stages": [1, 1, 1]}
    stopped = run_child(spec, TrialLimits(20), lambda s, v: seen.append((s, v)) or s < 1, _script(body))
    assert stopped.kind == "pruned" and stopped.stages == (10.0, 11.0) and seen == [(0, 10.0), (1, 11.0)]
    finished = run_child(spec, TrialLimits(20), lambda s, v: s != 2, _script(body))
    assert finished.kind == "done" and finished.result["value"] == 12.0  # the last stage is never thrown away


def _spec(model: Path, tmp_path: Path, reference_shift: float = 0.0) -> dict:
    from ortgpu.model.inputs import InputSpec, make_inputs
    from ortgpu.model.inspect import inspect_model
    from ortgpu.session import open_session

    info = inspect_model(model)
    feeds = make_inputs(info, InputSpec(batch=2)).feeds
    with open_session(model, "cpu") as session:
        outputs = dict(zip(session.output_names, session.run(feeds), strict=True))
    np.savez(tmp_path / "in.npz", **feeds)
    np.savez(tmp_path / "ref.npz", **{k: v + reference_shift for k, v in outputs.items()})
    return {
        "model": str(model),
        "ep": "cpu",
        "session": {"intra_op_num_threads": 1},
        "ep_options": {},
        "mode": "iobinding",
        "batches": [{"batch": 2, "inputs": str(tmp_path / "in.npz"), "reference": str(tmp_path / "ref.npz")}],
        "precision": "float32",
        "stages": [0.05, 0.05, 0.05],
        "objective": "p50",
        "max_warmup_s": 0.2,
    }


@pytest.mark.slow
def test_a_real_trial_measures_in_stages_and_passes_the_accuracy_gate(tiny_model: Path, tmp_path: Path) -> None:
    outcome = run_child(_spec(tiny_model, tmp_path), TrialLimits(60), command=CHILD_COMMAND)
    assert outcome.kind == "done", (outcome.message, outcome.stderr_tail)
    assert len(outcome.stages) == 3
    metrics = outcome.result["per_batch"]["2"]
    assert metrics["p50_ms"] > 0 and metrics["runs"] >= 30
    assert outcome.result["warmup"]["2"]["max_abs_error"] == 0.0
    assert outcome.result["host_memory_peak_bytes"] > 0


@pytest.mark.slow
def test_outputs_off_the_reference_reject_the_trial(tiny_model: Path, tmp_path: Path) -> None:
    outcome = run_child(_spec(tiny_model, tmp_path, reference_shift=1.0), TrialLimits(60), command=CHILD_COMMAND)
    assert outcome.kind == "rejected"
    assert outcome.message.startswith("batch 2: output 'y': 8 of 8 values off tolerance")
