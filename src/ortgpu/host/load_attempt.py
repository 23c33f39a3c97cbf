"""A real load of ORT's provider libraries in a child process: the loader's own error text, and which CUDA files map.

The child dlopens libonnxruntime_providers_shared (RTLD_GLOBAL) then the provider library
(RTLD_LOCAL), as ORT itself does, and reports each loader error verbatim. With `session=True`
(only worth it when a GPU is present) it then imports the same onnxruntime, builds a one-Conv
model, creates a CUDA EP session and runs it once, so the libraries ORT opens lazily (cuDNN,
cuBLAS) are mapped too, and reads /proc/self/maps to say exactly which files were mapped.
A crash or hang of the child cannot take ortgpu down with it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

__all__ = [
    "ADD_MODEL",
    "CHILD_CUDA_SESSION",
    "CHILD_IMPORT_ORT",
    "CHILD_REPORTER",
    "MAPPED_PREFIXES",
    "ChildRun",
    "LibraryLoad",
    "LoadAttempt",
    "LoadOutcome",
    "PrestartedChild",
    "attempt_load",
    "provider_libraries",
    "run_child",
]

# Files worth reporting from /proc/self/maps: CUDA user-space, the driver, TensorRT, ORT itself.
MAPPED_PREFIXES = (
    "libcudart",
    "libcublas",
    "libcudnn",
    "libcufft",
    "libcurand",
    "libnvrtc",
    "libnvJitLink",
    "libcuda.so",
    "libnvidia-ml",
    "libnvinfer",
    "libnvonnxparser",
    "libonnxruntime",
)
_MARK = "ORTGPU_STAGE "
# The doctor's default CUDA session: y = x + x on [1, 8] (opset 17, IR 8), serialised once with onnx (a test checks
# it still parses and validates), so the child imports neither onnx nor builds anything, and no cuDNN work runs.
ADD_MODEL = bytes.fromhex(
    "08083a490a0e0a01780a01781201792203416464120d6f72746770755f646f63746f725a130a0178120e0a0c080112080a0208"
    "010a02080862130a0179120e0a0c080112080a0208010a02080842040a001011"
)

# Child-script pieces shared with the Windows (LoadLibraryExW) child in winapi: the stage reporter,
# the optional `import onnxruntime` (cfg["import_ort"]), and the one-Conv CUDA session run once the
# libraries loaded. Each script defines MARK and sets `ok` before the session piece.
CHILD_REPORTER = r"""
def stage(name, value):
    sys.stdout.write(MARK + json.dumps({"stage": name, "value": value}) + "\n")
    sys.stdout.flush()
"""

CHILD_IMPORT_ORT = r"""
ort = None
if cfg["import_ort"]:
    try:
        if cfg["module_parent"]:
            sys.path.insert(0, cfg["module_parent"])
        import onnxruntime as ort
        ort.set_default_logger_severity(3)
        said, preload_error = "", None
        if cfg["preload"]:
            import contextlib, io
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):  # preload_dlls reports failures on stdout
                if not hasattr(ort, "preload_dlls"):
                    preload_error = "this onnxruntime has no preload_dlls()"
                else:
                    for call in cfg.get("preload_calls") or [{}]:
                        try:
                            ort.preload_dlls(**call)
                        except Exception as exc:
                            preload_error = type(exc).__name__ + ": " + str(exc)
                            break
            said = buffer.getvalue()[-2000:]
        stage("ort", {"file": ort.__file__, "version": ort.__version__, "error": None,
                      "preload_output": said, "preload_error": preload_error})
    except Exception as exc:  # reported as text: an import failure is a finding, not a crash
        ort = None
        stage("ort", {"file": None, "version": None, "error": type(exc).__name__ + ": " + str(exc)})
"""

CHILD_CUDA_SESSION = r"""
if ok and cfg["session"] and ort is not None:
    result = {"providers": [], "error": None, "ran": False}
    try:
        import numpy as np
        if cfg.get("model_hex"):  # the minimal model: one Add, no onnx import, no cuDNN work
            model_bytes, feed = bytes.fromhex(cfg["model_hex"]), np.ones((1, 8), dtype=np.float32)
        else:  # a Conv, so that cuDNN is loaded and initialised too
            from onnx import TensorProto, helper, numpy_helper
            weight = numpy_helper.from_array(np.full((4, 3, 3, 3), 0.1, dtype=np.float32), "w")
            graph = helper.make_graph(
                [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "ortgpu_doctor",
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [weight])
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
            model.ir_version = 8
            model_bytes, feed = model.SerializeToString(), np.ones((1, 3, 8, 8), dtype=np.float32)
        options = ort.SessionOptions()
        options.log_severity_level = 3
        session = ort.InferenceSession(
            model_bytes, options,
            providers=[("CUDAExecutionProvider", {"device_id": str(cfg["device_id"])}), "CPUExecutionProvider"])
        result["providers"] = session.get_providers()
        session.run(None, {"x": feed})
        result["ran"] = True
    except Exception as exc:  # the child reports any failure as text; the parent decides what it means
        result["error"] = type(exc).__name__ + ": " + str(exc)
    stage("session", result)
"""

_CHILD = (
    r"""
import ctypes, json, os, sys
cfg = json.loads(sys.argv[1])
MARK, PREFIXES = cfg["mark"], tuple(cfg["prefixes"])
"""
    + CHILD_REPORTER
    + r"""
def mapped():
    out = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split(None, 5)
                path = parts[5].strip() if len(parts) == 6 else ""
                if path.startswith("/") and os.path.basename(path).startswith(PREFIXES) and path not in out:
                    out.append(path)
    except OSError:
        pass
    return out
"""
    + CHILD_IMPORT_ORT
    + r"""
loads, ok = [], True
for index, path in enumerate(cfg["libraries"]):
    mode = os.RTLD_NOW | (os.RTLD_GLOBAL if index == 0 else os.RTLD_LOCAL)
    try:
        ctypes.CDLL(path, mode=mode)
        loads.append({"path": path, "ok": True, "error": None})
    except OSError as exc:
        loads.append({"path": path, "ok": False, "error": str(exc)})
        ok = False
        break
stage("loads", loads)
"""
    + CHILD_CUDA_SESSION
    + r"""
stage("mapped", mapped())
# everything is said: end here, skipping the interpreter's shutdown and the libraries' destructors (tearing down
# the CUDA context and ORT's statics took a quarter of a second on the H200, and the parent waits for the exit)
sys.stderr.flush()
os._exit(0)
"""
)


class LoadOutcome(Enum):
    LOADED = "loaded"  # the provider libraries loaded (and, when asked, a session ran on CUDA)
    LIBRARY_FAILED = "library-failed"  # the loader refused a library: `error` is its message
    SESSION_FAILED = "session-failed"  # libraries loaded but the session failed or fell back to CPU
    TIMEOUT = "timeout"
    CRASHED = "crashed"  # the child died without reporting (a signal, an abort inside a library)


@dataclass(frozen=True)
class LibraryLoad:
    path: Path
    ok: bool
    error: str | None  # dlerror() text, verbatim


@dataclass(frozen=True)
class LoadAttempt:
    outcome: LoadOutcome
    libraries: tuple[LibraryLoad, ...]
    error: str | None  # the first failure, verbatim
    session_requested: bool
    session_providers: tuple[str, ...]  # what the session really uses, first = preferred
    session_error: str | None
    mapped: tuple[Path, ...]  # CUDA / driver / ORT files in the child's memory map, in map order
    preload: bool  # onnxruntime.preload_dlls() was called first
    ort_file: str | None
    ort_version: str | None
    returncode: int | None
    stderr_tail: str
    duration_s: float
    conv: bool = True  # the session ran a Conv (cuDNN loaded); False: the minimal Add model
    preload_calls: tuple[str, ...] = ()  # the preload_dlls calls made first, as text ("onnxruntime.preload_dlls()")
    preload_output: str = ""  # what they printed (failures to load a library)
    preload_error: str | None = None  # a call that raised, or "this onnxruntime has no preload_dlls()"

    @property
    def ok(self) -> bool:
        return self.outcome is LoadOutcome.LOADED


def provider_libraries(capi_dir: Path, provider: str = "cuda") -> tuple[Path, ...]:
    """The two files ORT dlopens for a provider, in its order: providers_shared, then the provider."""
    return (capi_dir / "libonnxruntime_providers_shared.so", capi_dir / f"libonnxruntime_providers_{provider}.so")


def _stderr_tail(text: str, limit: int = 4000) -> str:
    return text[-limit:].strip()


class ChildRun:
    """What a load child printed: its stage records, stderr, exit status, and whether it ran out of time."""

    def __init__(
        self, stages: Mapping[str, Any], stderr: str, returncode: int | None, timed_out: bool, duration_s: float
    ) -> None:
        self.stages, self.stderr, self.returncode = stages, stderr, returncode
        self.timed_out, self.duration_s = timed_out, duration_s


def run_child(
    script: str, config: Mapping[str, Any], *, python: str, env: Mapping[str, str], timeout_s: float
) -> ChildRun:
    """Run a load child (`python -c script config-json`) and collect the records it tagged with config["mark"].

    A child that runs out of time still reports the stages it reached.
    """
    mark = str(config["mark"])
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            [python, "-c", script, json.dumps(config)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=dict(env),
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode("utf-8", "replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        stderr = exc.stderr.decode("utf-8", "replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        return ChildRun(_stages(stdout, mark), stderr, None, True, time.perf_counter() - started)
    return ChildRun(_stages(proc.stdout, mark), proc.stderr, proc.returncode, False, time.perf_counter() - started)


# A load child started before the doctor knows what to ask of it: it imports onnxruntime (the slowest part of the
# child after the CUDA session itself) while the parent still reads metadata and ELF files, then reads the script
# and its configuration from stdin. A failed import is undone, so the script's own import fails the same way and
# reports the genuine error, not a half-imported module's.
_PRESTART = r"""
import json, sys
parent = sys.argv[1]
if parent:
    sys.path.insert(0, parent)
try:
    import onnxruntime
except BaseException:
    for name in [n for n in sys.modules if n == "onnxruntime" or n.startswith("onnxruntime.")]:
        del sys.modules[name]
if parent:
    sys.path.remove(parent)
line = sys.stdin.readline()
if not line:
    sys.exit(0)
job = json.loads(line)
sys.argv[1:] = [job["config"]]
exec(compile(job["script"], "<ortgpu-load-child>", "exec"), {"__name__": "__main__"})
"""


class PrestartedChild:
    """A load child already running and importing the onnxruntime under ``module_parent``; :func:`attempt_load` hands
    it its work, or :meth:`cancel` ends it. Used once."""

    def __init__(self, module_parent: Path | None, *, python: str = sys.executable, env: Mapping[str, str]) -> None:
        self.module_parent, self.python, self.env = module_parent, python, dict(env)
        self._proc: subprocess.Popen[str] | None = subprocess.Popen(
            [python, "-c", _PRESTART, str(module_parent) if module_parent else ""],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
        )

    def fits(self, module_parent: Path | None, python: str, env: Mapping[str, str]) -> bool:
        """Whether this child is the one a load with these settings would start."""
        return self._proc is not None and (module_parent, python, dict(env)) == (
            self.module_parent,
            self.python,
            self.env,
        )

    def run(self, script: str, config: Mapping[str, Any], *, timeout_s: float) -> ChildRun:
        """Give the child its script and configuration and collect what it reports, as :func:`run_child` does."""
        proc, self._proc = self._proc, None
        if proc is None:
            raise RuntimeError("a prestarted load child runs once")
        mark = str(config["mark"])
        job = json.dumps({"script": script, "config": json.dumps(config)}) + "\n"
        started = time.perf_counter()
        try:
            stdout, stderr = proc.communicate(job, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            return ChildRun(_stages(stdout, mark), stderr, None, True, time.perf_counter() - started)
        except OSError:  # the child died before reading its work (a broken interpreter): as if it crashed
            stdout, stderr = proc.communicate()
        return ChildRun(_stages(stdout, mark), stderr, proc.returncode, False, time.perf_counter() - started)

    def cancel(self) -> None:
        """End the child if it was not used."""
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.communicate()


def attempt_load(
    libraries: Sequence[Path],
    *,
    session: bool = False,
    module_parent: Path | None = None,
    preload: bool = False,
    preload_calls: Sequence[tuple[str, Mapping[str, Any]]] = (),
    device_id: int = 0,
    python: str = sys.executable,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 60.0,
    conv: bool = True,
    child: PrestartedChild | None = None,
) -> LoadAttempt:
    """Load `libraries` in a fresh child (first with RTLD_GLOBAL), optionally create a CUDA session there.

    `module_parent` is the folder holding the onnxruntime package to import, so the child uses
    the same copy the parent diagnosed. `preload` calls onnxruntime.preload_dlls() first; `preload_calls`
    (text, keyword arguments) makes those calls instead of the one without arguments. The session runs a
    one-Conv model (cuDNN loaded and initialised) unless `conv` is False: then one Add (ADD_MODEL), the least a
    CUDA session can do. `child`: a :class:`PrestartedChild` to use instead of starting one, when it was started
    with the same interpreter, environment and onnxruntime and the child imports onnxruntime anyway; else it is
    ended and a fresh child runs.
    """
    preload = preload or bool(preload_calls)
    config = {
        "mark": _MARK,
        "prefixes": list(MAPPED_PREFIXES),
        "libraries": [str(p) for p in libraries],
        "import_ort": preload or session,
        "session": session,
        "module_parent": str(module_parent) if module_parent else None,
        "preload": preload,
        "preload_calls": [dict(kwargs) for _, kwargs in preload_calls],
        "device_id": device_id,
        "model_hex": None if conv else ADD_MODEL.hex(),
    }
    env = os.environ if env is None else env
    if child is not None and config["import_ort"] and child.fits(module_parent, python, env):
        ran = child.run(_CHILD, config, timeout_s=timeout_s)
    else:
        if child is not None:
            child.cancel()
        ran = run_child(_CHILD, config, python=python, env=env, timeout_s=timeout_s)
    attempt = _result(ran.stages, session, preload, ran.returncode, ran.stderr, ran.duration_s, timed_out=ran.timed_out)
    attempt = dataclasses.replace(attempt, conv=conv)
    if not preload:
        return attempt
    texts = tuple(text for text, _ in preload_calls) or ("onnxruntime.preload_dlls()",)
    return dataclasses.replace(attempt, preload_calls=texts)


def _stages(stdout: str, mark: str) -> dict[str, Any]:
    stages: dict[str, Any] = {}
    for line in stdout.splitlines():
        if line.startswith(mark):
            try:
                record = json.loads(line[len(mark) :])
            except json.JSONDecodeError:
                continue
            stages[record["stage"]] = record["value"]
    return stages


def _result(
    stages: Mapping[str, Any],
    session: bool,
    preload: bool,
    returncode: int | None,
    stderr: str,
    duration: float,
    timed_out: bool = False,
) -> LoadAttempt:
    loads = tuple(
        LibraryLoad(Path(item["path"]), bool(item["ok"]), item["error"]) for item in stages.get("loads", []) or []
    )
    sess = stages.get("session") or {}
    ort = stages.get("ort") or {}
    providers = tuple(sess.get("providers") or ())
    session_error = sess.get("error") or (ort.get("error") if session else None)
    error = next((load.error for load in loads if not load.ok), None)
    if timed_out:
        outcome = LoadOutcome.TIMEOUT
    elif error:
        outcome = LoadOutcome.LIBRARY_FAILED
    elif "mapped" not in stages:
        outcome = LoadOutcome.CRASHED
    elif session and (session_error or not providers or providers[0] != "CUDAExecutionProvider" or not sess.get("ran")):
        outcome = LoadOutcome.SESSION_FAILED
        error = session_error or _fallback_reason(providers, stderr)
    else:
        outcome = LoadOutcome.LOADED
    if outcome is LoadOutcome.CRASHED:
        error = f"the child process ended with status {returncode} before reporting"
    return LoadAttempt(
        outcome=outcome,
        libraries=loads,
        error=error,
        session_requested=session,
        session_providers=providers,
        session_error=session_error,
        mapped=tuple(Path(p) for p in stages.get("mapped", []) or []),
        preload=preload,
        ort_file=ort.get("file"),
        ort_version=ort.get("version"),
        returncode=returncode,
        stderr_tail=_stderr_tail(stderr),
        duration_s=duration,
        preload_output=(ort.get("preload_output") or "").strip(),
        preload_error=ort.get("preload_error"),
    )


def _fallback_reason(providers: Sequence[str], stderr: str) -> str:
    """ORT falls back to CPU silently but logs why: keep its own error lines."""
    lines = [line.strip() for line in stderr.splitlines() if "error" in line.lower() or "fail" in line.lower()]
    used = ", ".join(providers) or "no provider"
    reason = " | ".join(lines[-3:]) if lines else "ORT logged no reason"
    return f"the session runs on {used} instead of CUDAExecutionProvider: {reason}"
