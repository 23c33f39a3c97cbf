"""The profiled session: warm-up and profiled runs with ORT's profiler on, its optimised graph saved.

Runs in this process, or in a child (``python -m ortgpu.profile.execute``, a JSON spec on stdin) when the
environment must differ: ``CUDA_LAUNCH_BLOCKING=1`` makes every CUDA launch wait for its kernel, so a node's time
includes its GPU work. CUDA reads that variable once per process, hence the child.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ortgpu.config import Config, Fallback
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import BadInputError, CheckFailedError, EnvironmentUnfitError, ExitCode, OrtgpuError
from ortgpu.model.inputs import InputSpec, make_inputs
from ortgpu.model.inspect import inspect_model
from ortgpu.runtime.guard import import_onnxruntime
from ortgpu.session import open_session
from ortgpu.session.capture import capture_native_stderr

__all__ = ["ExecuteSpec", "Executed", "ProfiledRunError", "execute", "execute_in_child", "main"]

_BUILD_LOG = "session-build.log"
_OPTIMIZED = "optimized.onnx"


class ProfiledRunError(CheckFailedError):
    """The profiled session failed in its child process without an ortgpu error (exit 1)."""


@dataclass(frozen=True)
class ExecuteSpec:
    """One profiled session. ``work_dir`` receives ORT's trace, its optimised model and the session's build log."""

    model: Path
    ep: ExecutionProvider
    config: Config
    ep_options: Mapping[str, str]
    device_id: int | None
    inputs: Any  # ortgpu.model.inputs.InputSpec
    warmup: int
    runs: int
    work_dir: Path
    dump_optimized: bool = True


@dataclass(frozen=True)
class Executed:
    """What the profiled session left: files in the work folder and the facts of the session."""

    trace_file: Path
    optimized_model: Path | None
    build_log: Path
    active_ep: ExecutionProvider
    providers: tuple[str, ...]
    provider_options: dict[str, str]
    fallback_reason: str | None
    creation_s: float
    runs_done: int
    input_shapes: dict[str, tuple[int, ...]]
    input_notes: tuple[str, ...]
    ort_version: str
    cuda_launch_blocking: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)


def execute(spec: ExecuteSpec) -> Executed:
    """Run ``spec`` in this process; ORT errors come out as ortgpu errors (exit 2 / 3 / 1)."""
    ort = import_onnxruntime("profiling a model")

    info = inspect_model(spec.model)
    inputs = make_inputs(info, spec.inputs)
    optimized = spec.work_dir / _OPTIMIZED if spec.dump_optimized else None
    session = open_session(
        info.path,
        spec.ep,
        spec.config,
        spec.device_id,
        spec.ep_options,
        collect_placement=True,
        model_info=info,
        profile_dir=spec.work_dir,
        optimized_model_path=optimized,
    )
    # The session logger stays at the verbose level the placement needed: its last lines (ORT writes the profile
    # when the session ends, also when Ctrl-C or SIGTERM stops the runs) are kept off the console.
    try:
        for _ in range(spec.warmup + spec.runs):
            session.run(inputs.feeds)
        with capture_native_stderr():
            trace = session.end_profiling()
            session.close()
    except BaseException as exc:
        with capture_native_stderr():
            session.close()
            _release_frames(exc)
        raise
    log = spec.work_dir / _BUILD_LOG
    log.write_text(session.build_log, encoding="utf-8")
    return Executed(
        trace_file=trace,
        optimized_model=optimized if optimized is not None and optimized.is_file() else None,
        build_log=log,
        active_ep=session.active_ep,
        providers=tuple(session.providers),
        provider_options=dict(session.provider_options),
        fallback_reason=session.fallback_reason,
        creation_s=session.creation_s,
        runs_done=spec.warmup + spec.runs,
        input_shapes={k: tuple(v) for k, v in inputs.shapes.items()},
        input_notes=tuple(inputs.notes),
        ort_version=ort.__version__,
        cuda_launch_blocking=os.environ.get("CUDA_LAUNCH_BLOCKING") == "1",
    )


def _release_frames(exc: BaseException) -> None:
    """The frames of a run that failed or was stopped (onnxruntime's own ``run()`` among them, also through the
    ORT error an ortgpu error was raised from) hold the session: cleared here, so the session ends inside the
    capture and ORT's last log lines ("Writing profiler data ...") never reach the console."""
    import traceback

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        traceback.clear_frames(current.__traceback__)
        current = current.__cause__ or current.__context__


# --------------------------------------------------------------------------------------------- child process


def _spec_to_json(spec: ExecuteSpec) -> dict[str, Any]:
    inputs = spec.inputs
    config = spec.config
    return {
        "model": str(spec.model),
        "ep": spec.ep.value,
        "config": {
            "session": dict(config.session),
            "ep_options": {ep.value: dict(options) for ep, options in config.ep_options.items()},
            "fallback": config.fallback.value,
            "source": str(config.source) if config.source is not None else None,
            "model": {k: str(v) if isinstance(v, Path) else v for k, v in config.model.items()},
            "run": dict(config.run),
        },
        "ep_options": dict(spec.ep_options),
        "device_id": spec.device_id,
        "inputs": {
            "shapes": {k: list(v) for k, v in inputs.shapes.items()},
            "dims": dict(inputs.dims),
            "ranges": {k: list(v) for k, v in inputs.ranges.items()},
            "npz": str(inputs.npz) if inputs.npz is not None else None,
            "seed": inputs.seed,
            "batch": inputs.batch,
        },
        "warmup": spec.warmup,
        "runs": spec.runs,
        "work_dir": str(spec.work_dir),
        "dump_optimized": spec.dump_optimized,
    }


def _spec_from_json(doc: Mapping[str, Any]) -> ExecuteSpec:
    raw = doc["config"]
    config = Config(
        session=dict(raw["session"]),
        ep_options={ExecutionProvider(k): dict(v) for k, v in raw["ep_options"].items()},
        fallback=Fallback(raw["fallback"]),
        source=Path(raw["source"]) if raw["source"] else None,
        model={k: Path(v) if k == "file" else v for k, v in raw["model"].items()},
        run=dict(raw["run"]),
    )
    spec = doc["inputs"]
    inputs = InputSpec(
        shapes={k: tuple(v) for k, v in spec["shapes"].items()},
        dims=dict(spec["dims"]),
        ranges={k: (float(v[0]), float(v[1])) for k, v in spec["ranges"].items()},
        npz=Path(spec["npz"]) if spec["npz"] else None,
        seed=int(spec["seed"]),
        batch=spec["batch"],
    )
    return ExecuteSpec(
        model=Path(doc["model"]),
        ep=ExecutionProvider(doc["ep"]),
        config=config,
        ep_options=dict(doc["ep_options"]),
        device_id=doc["device_id"],
        inputs=inputs,
        warmup=int(doc["warmup"]),
        runs=int(doc["runs"]),
        work_dir=Path(doc["work_dir"]),
        dump_optimized=bool(doc["dump_optimized"]),
    )


def _executed_to_json(done: Executed) -> dict[str, Any]:
    return {
        "trace_file": str(done.trace_file),
        "optimized_model": str(done.optimized_model) if done.optimized_model else None,
        "build_log": str(done.build_log),
        "active_ep": done.active_ep.value,
        "providers": list(done.providers),
        "provider_options": done.provider_options,
        "fallback_reason": done.fallback_reason,
        "creation_s": done.creation_s,
        "runs_done": done.runs_done,
        "input_shapes": {k: list(v) for k, v in done.input_shapes.items()},
        "input_notes": list(done.input_notes),
        "ort_version": done.ort_version,
        "cuda_launch_blocking": done.cuda_launch_blocking,
    }


def _executed_from_json(doc: Mapping[str, Any]) -> Executed:
    return Executed(
        trace_file=Path(doc["trace_file"]),
        optimized_model=Path(doc["optimized_model"]) if doc["optimized_model"] else None,
        build_log=Path(doc["build_log"]),
        active_ep=ExecutionProvider(doc["active_ep"]),
        providers=tuple(doc["providers"]),
        provider_options=dict(doc["provider_options"]),
        fallback_reason=doc["fallback_reason"],
        creation_s=float(doc["creation_s"]),
        runs_done=int(doc["runs_done"]),
        input_shapes={k: tuple(v) for k, v in doc["input_shapes"].items()},
        input_notes=tuple(doc["input_notes"]),
        ort_version=str(doc["ort_version"]),
        cuda_launch_blocking=bool(doc["cuda_launch_blocking"]),
    )


_ERROR_TYPES: dict[int, type[OrtgpuError]] = {
    int(ExitCode.BAD_INPUT): BadInputError,
    int(ExitCode.ENVIRONMENT): EnvironmentUnfitError,
    int(ExitCode.CHECK_FAILED): CheckFailedError,
}


def execute_in_child(spec: ExecuteSpec, env: Mapping[str, str], timeout_s: float) -> Executed:
    """Run ``spec`` in a child Python with ``env`` added to this environment; its ortgpu errors are raised here
    with the same message, hint and exit code."""
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "ortgpu.profile.execute"],
            input=json.dumps(_spec_to_json(spec)),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env={**os.environ, **env},
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ProfiledRunError(
            f"the profiled session did not finish within {timeout_s:.0f} s", "profile fewer runs"
        ) from None
    if proc.returncode != 0:
        if proc.returncode < 0:
            try:
                how = f"crashed ({signal.Signals(-proc.returncode).name})"
            except ValueError:
                how = f"crashed (signal {-proc.returncode})"
        else:
            how = f"failed (exit {proc.returncode})"
        last = next((ln.strip() for ln in reversed(proc.stderr.splitlines()) if ln.strip()), "")
        raise ProfiledRunError(
            f"the profiled session {how} in its child process" + (f": {last[-400:]}" if last else ""),
            "profile with asynchronous launches (in this process) to see the error, and report it",
        )
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise ProfiledRunError("the profiled session's child process answered no JSON", "report it") from None
    if "error" in doc:
        error = doc["error"]
        kind = _ERROR_TYPES.get(int(error.get("exit_code", 1)), CheckFailedError)
        raise kind(str(error.get("message", "")), error.get("hint"))
    return _executed_from_json(doc)


def main() -> int:
    """The child: a spec as JSON on stdin; the Executed (or the ortgpu error) as JSON on stdout."""
    spec = _spec_from_json(json.loads(sys.stdin.read()))
    start = time.perf_counter()
    try:
        done = execute(spec)
    except OrtgpuError as exc:
        sys.stdout.write(json.dumps({"error": exc.to_dict()}))
        return 0
    sys.stdout.write(json.dumps({**_executed_to_json(done), "child_s": time.perf_counter() - start}))
    return 0


if __name__ == "__main__":  # pragma: no cover - run as a child process
    sys.exit(main())
