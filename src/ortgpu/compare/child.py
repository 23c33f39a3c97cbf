"""Run a model with another Python's onnxruntime: a self-contained runner script fed to that interpreter on stdin,
inputs and outputs through .npz files in a private folder (never pickled), a JSON reply."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ortgpu.errors import BadInputError, EnvironmentUnfitError

__all__ = ["RUNNER_SCRIPT", "ChildRun", "InterpreterError", "OtherOrtError", "run_in_python"]


class InterpreterError(BadInputError):
    """--python names no interpreter that can start (exit 2)."""


class OtherOrtError(EnvironmentUnfitError):
    """The other interpreter has no usable onnxruntime, or its run failed (exit 3)."""


# Runs under any Python 3.8+ with numpy and onnxruntime; imports nothing from ortgpu (the other environment
# need not have it). argv[1]: the work folder holding spec.json and inputs.npz; writes outputs.npz, reply.json.
RUNNER_SCRIPT = r"""
import json, os, sys, time, traceback
work = sys.argv[1]
reply = {"ok": False}
def done(code):
    with open(os.path.join(work, "reply.json"), "w") as handle:
        json.dump(reply, handle)
    sys.exit(code)
try:
    spec = json.load(open(os.path.join(work, "spec.json")))
    try:
        np = __import__("numpy")
        ort = __import__("onnxruntime")  # the other interpreter's own: nothing of ortgpu runs there
    except Exception as exc:
        reply["error"] = {"kind": "import", "message": "%s: %s" % (type(exc).__name__, exc)}
        done(3)
    reply["python"] = sys.version.split()[0]
    reply["executable"] = sys.executable
    reply["ort_version"] = ort.__version__
    reply["ort_dir"] = os.path.dirname(os.path.abspath(ort.__file__))
    reply["available"] = list(ort.get_available_providers())
    try:
        from importlib import metadata
        for name in ("onnxruntime-gpu", "onnxruntime", "onnxruntime-directml", "onnxruntime-openvino"):
            try:
                reply.setdefault("distributions", []).append([name, metadata.version(name)])
            except Exception:
                pass
    except Exception:
        pass
    if spec["ep"] not in reply["available"]:
        reply["error"] = {"kind": "provider", "message": "%s is not in this onnxruntime %s (available: %s)"
                          % (spec["ep"], ort.__version__, ", ".join(reply["available"]))}
        done(3)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    providers = [spec["ep"]] + (["CPUExecutionProvider"] if spec["ep"] != "CPUExecutionProvider" else [])
    provider_options = [spec.get("provider_options", {})] + ([{}] if len(providers) > 1 else [])
    session = ort.InferenceSession(spec["model"], options, providers=providers, provider_options=provider_options)
    reply["active"] = list(session.get_providers())
    if reply["active"][0] != spec["ep"]:
        reply["error"] = {"kind": "provider", "message": "%s did not become active (active: %s)"
                          % (spec["ep"], ", ".join(reply["active"]))}
        done(3)
    names = [o.name for o in session.get_outputs()]
    reply["outputs"] = names
    data = np.load(os.path.join(work, "inputs.npz"), allow_pickle=False)
    samples = []
    for index in range(spec["samples"]):
        feeds = {}
        for k, name in enumerate(spec["inputs"]):
            value = data["s%d_%d" % (index, k)]
            feeds[name] = value.astype(object) if value.dtype.kind == "U" else value
        samples.append(feeds)
    saved = {}
    for index, feeds in enumerate(samples):
        for k, value in enumerate(session.run(None, feeds)):
            value = np.asarray(value)
            saved["s%d_%d" % (index, k)] = value.astype(str) if value.dtype.kind == "O" else value
    np.savez(os.path.join(work, "outputs.npz"), **saved)
    latencies = []
    if spec["iterations"]:
        feeds = samples[0]
        for _ in range(spec["warmup"]):
            session.run(None, feeds)
        deadline = time.perf_counter() + spec["duration_s"]
        while len(latencies) < spec["iterations"] or (time.perf_counter() < deadline and len(latencies) < 100000):
            start = time.perf_counter_ns()
            session.run(None, feeds)
            latencies.append(time.perf_counter_ns() - start)
    reply["latencies_ns"] = latencies
    reply["ok"] = True
    done(0)
except SystemExit:
    raise
except BaseException as exc:
    reply["error"] = {"kind": "run", "message": "%s: %s" % (type(exc).__name__, " ".join(str(exc).split())),
                      "traceback": traceback.format_exc()[-2000:]}
    done(1)
"""


@dataclass(frozen=True)
class ChildRun:
    """What the other interpreter's onnxruntime gave: outputs per sample, timings, and what it is."""

    interpreter: str
    python: str
    ort_version: str
    ort_dir: Path
    distributions: tuple[tuple[str, str], ...]
    providers: tuple[str, ...]  # active in the session
    outputs: list[dict[str, Any]]
    latencies_ns: tuple[int, ...]


def _environment(changes: Mapping[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    for key, value in changes.items():
        if value == "":
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run_in_python(
    interpreter: str | os.PathLike[str],
    model: Path,
    feeds: Sequence[Mapping[str, Any]],
    ep_ort_name: str,
    provider_options: Mapping[str, str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    iterations: int = 0,
    warmup: int = 0,
    duration_s: float = 0.0,
    timeout_s: float = 600.0,
) -> ChildRun:
    """Run ``model`` on each of ``feeds`` with ``interpreter``'s onnxruntime on ``ep_ort_name``; time at least
    ``iterations`` runs of the first feeds (for ``duration_s`` seconds at least) after ``warmup``.

    ``env``: variables to set for the child ("" unsets one, e.g. PYTHONPATH). Raises InterpreterError (exit 2)
    when it cannot start, OtherOrtError (exit 3) when its onnxruntime is missing, lacks the EP or fails.
    """
    import numpy as np

    program = str(interpreter)
    names = list(feeds[0]) if feeds else []
    with tempfile.TemporaryDirectory(prefix="ortgpu-python-") as folder:
        work = Path(folder)
        arrays = {}
        for index, sample in enumerate(feeds):
            for k, name in enumerate(names):
                value = np.asarray(sample[name])
                arrays[f"s{index}_{k}"] = value.astype(str) if value.dtype.kind == "O" else value
        np.savez(work / "inputs.npz", **arrays)  # type: ignore[arg-type]  # numpy's stub: **kwds may fill allow_pickle
        spec = {
            "model": str(Path(model).resolve()),
            "ep": ep_ort_name,
            "provider_options": dict(provider_options or {}),
            "inputs": names,
            "samples": len(feeds),
            "iterations": iterations,
            "warmup": warmup,
            "duration_s": duration_s,
        }
        (work / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        try:
            completed = subprocess.run(
                [program, "-", str(work)],
                input=RUNNER_SCRIPT,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                env=_environment(env or {}),
                check=False,
            )
        except FileNotFoundError:
            raise InterpreterError(f"--python {program}: no such interpreter", "give the path of a python") from None
        except PermissionError:
            raise InterpreterError(f"--python {program}: not executable", "give the path of a python") from None
        except OSError as exc:
            raise InterpreterError(f"--python {program}: cannot start it ({exc})", "give a python") from None
        except subprocess.TimeoutExpired:
            raise OtherOrtError(f"{program} did not finish in {timeout_s:.0f} s", "give a smaller model") from None
        reply_path = work / "reply.json"
        if not reply_path.is_file():
            tail = " ".join((completed.stderr or completed.stdout or "").split())[-300:]
            raise InterpreterError(
                f"--python {program} is not a Python that ran the runner (exit {completed.returncode}: {tail})",
                "give the path of a Python 3 interpreter with numpy and onnxruntime",
            )
        reply = json.loads(reply_path.read_text(encoding="utf-8"))
        if not reply.get("ok"):
            error = reply.get("error") or {}
            where = f"{program} (onnxruntime {reply.get('ort_version', '?')})"
            if error.get("kind") == "import":
                raise OtherOrtError(
                    f"{program} cannot import numpy/onnxruntime: {error.get('message')}",
                    f"install onnxruntime into that environment ({program} -m pip install onnxruntime)",
                )
            raise OtherOrtError(f"{where}: {error.get('message', 'the run failed')}", "see the message")
        with np.load(work / "outputs.npz", allow_pickle=False) as data:
            outputs = [
                {name: data[f"s{index}_{k}"] for k, name in enumerate(reply["outputs"])} for index in range(len(feeds))
            ]
    return ChildRun(
        interpreter=program,
        python=str(reply.get("python", "")),
        ort_version=str(reply["ort_version"]),
        ort_dir=Path(reply["ort_dir"]),
        distributions=tuple((str(a), str(b)) for a, b in reply.get("distributions", [])),
        providers=tuple(reply.get("active", ())),
        outputs=outputs,
        latencies_ns=tuple(int(v) for v in reply.get("latencies_ns", [])),
    )
