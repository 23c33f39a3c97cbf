"""Run a model through a package's own C library, in a subprocess, and bring back outputs, timings and placement.

The child (``python -m ortgpu.capi.child``) never imports the onnxruntime wheel: two ORT copies in one process
would share the provider libraries (``libonnxruntime_providers_shared``), and a crash in a foreign library must
not take the caller down. Inputs and outputs travel as ``.npz`` files (never pickled); errors come back as
ortgpu's own error types with one-line messages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ortgpu
from ortgpu.atomic import atomic_write_bytes
from ortgpu.capi import binding
from ortgpu.capi.api import numpy_dtype
from ortgpu.capi.binding import LoggingLevel, LogRecord, TensorSpec
from ortgpu.capi.library_locator import LocatedLibrary, SourceKind, locate_library
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import BadInputError, EnvironmentUnfitError, OrtgpuError
from ortgpu.placement import parse_profile_file, parse_verbose_log
from ortgpu.results import to_jsonable

__all__ = [
    "PROVIDER_NAMES",
    "PackageRunError",
    "PackageRunResult",
    "UnsupportedSettingError",
    "load_npz",
    "normalize_session_settings",
    "provider_chain",
    "run_package_model",
    "save_npz",
]

# ep as ortgpu names it ("cuda", ExecutionProvider.CUDA) or as ORT does -> ORT's name
PROVIDER_NAMES = {ep.value: ep.ort_name for ep in ExecutionProvider}


class PackageRunError(EnvironmentUnfitError):
    """The child process running the package's library crashed, timed out or failed unexpectedly."""


class UnsupportedSettingError(BadInputError):
    """A session setting the C-API runner cannot apply."""


@dataclass(frozen=True)
class PackageRunResult:
    """One model run through a package's C library: what the library is, where nodes ran, outputs and timings.

    ``outputs`` holds numpy arrays (from the first run), so use :meth:`describe` for JSON.
    """

    library: Path
    ort_version: str
    library_api_version: int  # the library's own C API version (its minor version)
    api_version: int  # the C API version negotiated with it
    build_info: str | None
    compiled_providers: tuple[str, ...]  # what the build contains, not what can load
    requested_provider: str  # ORT's name, e.g. "CUDAExecutionProvider"
    appended_providers: tuple[str, ...]  # in priority order; CPU is always there last, implicitly
    provider_options: dict[str, dict[str, str]]  # effective options per appended provider, as ORT reports them
    inputs: tuple[TensorSpec, ...]
    output_specs: tuple[TensorSpec, ...]
    outputs: dict[str, Any] = field(repr=False)
    provider_setup_s: float  # creating + appending the provider options (loads the provider libraries)
    session_creation_s: float  # provider setup + CreateSession: the cold start a C++ app pays
    first_run_s: float
    warmup_runs: int
    latencies_ns: tuple[int, ...]  # timed runs, after the first run and the warm-up
    placement: Any  # ortgpu.placement.PlacementReport | None (from the verbose log, else the profile)
    providers_used: tuple[str, ...]  # providers that got at least one node
    log: tuple[LogRecord, ...]  # ORT's warnings and errors
    profile_file: Path | None  # kept copy of ORT's profile, when asked for
    wall_s: float

    def describe(self) -> dict[str, Any]:
        """A JSON-ready view: every field, outputs summarised as dtype and shape."""

        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            if name == "outputs":
                out[name] = {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in self.outputs.items()}
            else:
                out[name] = to_jsonable(getattr(self, name))
        return out


# ---------------------------------------------------------------------------------------------------------------
# Arrays through .npz, without pickle: strings as numpy unicode, ml_dtypes types (bfloat16, float8) as raw bits


def save_npz(path: Path, arrays: Mapping[str, Any]) -> dict[str, str]:
    """Write arrays to ``path``; returns the dtype names that were stored as raw bits (to give load_npz)."""
    import numpy as np

    stored: dict[str, Any] = {}
    special: dict[str, str] = {}
    for index, (name, value) in enumerate(arrays.items()):
        array = np.asarray(value)
        if array.dtype.kind == "O":
            array = array.astype(str)
        elif (
            array.dtype.kind == "V"
            or type(array.dtype).__module__.startswith("ml_dtypes")
            or (array.dtype.type.__module__ != "numpy")
        ):
            special[name] = array.dtype.name
            array = array.view(f"u{array.dtype.itemsize}")
        stored[f"a{index}"] = array
    names = list(arrays)
    with open(path, "wb") as handle:
        np.savez(handle, __names__=np.array(names, dtype=str), **stored)
    return special


def load_npz(path: Path, special: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Read what :func:`save_npz` wrote; strings come back as object arrays of str (as the Python API gives)."""
    import numpy as np

    with np.load(path, allow_pickle=False) as data:
        names = [str(n) for n in data["__names__"]]
        out: dict[str, Any] = {}
        for index, name in enumerate(names):
            array = data[f"a{index}"]
            if array.dtype.kind == "U":
                array = array.astype(object)
            elif special and name in special:
                dtype = numpy_dtype(special[name])
                if dtype is None:
                    raise BadInputError(f"array {name!r} has dtype {special[name]}, unknown here", "install ml_dtypes")
                array = array.view(dtype)
            out[name] = array
    return out


# ---------------------------------------------------------------------------------------------------------------
# Request validation (in the caller's process: bad input fails before anything is spawned)

_GRAPH_LEVELS = {
    "disable": binding.GraphOptimizationLevel.DISABLE_ALL,
    "disable_all": binding.GraphOptimizationLevel.DISABLE_ALL,
    "basic": binding.GraphOptimizationLevel.BASIC,
    "extended": binding.GraphOptimizationLevel.EXTENDED,
    "layout": binding.GraphOptimizationLevel.LAYOUT,
    "all": binding.GraphOptimizationLevel.ALL,
}
_EXECUTION_MODES = {"sequential": binding.ExecutionMode.SEQUENTIAL, "parallel": binding.ExecutionMode.PARALLEL}


def normalize_session_settings(settings: Mapping[str, object] | None) -> dict[str, object]:
    """[session] settings (as ``ortgpu.config.Config.session`` holds them) -> plain values the child applies.

    Keys: graph_optimization_level, execution_mode, intra_op_num_threads, inter_op_num_threads,
    enable_mem_pattern, enable_cpu_mem_arena, enable_mem_reuse (True only), use_deterministic_compute (False
    only), log_severity_level, config_entries (a mapping of session config keys to values).
    """
    out: dict[str, object] = {}
    for key, raw in (settings or {}).items():
        value = getattr(raw, "value", raw)  # ortgpu.config enums carry their TOML spelling in .value
        if key == "graph_optimization_level":
            text = str(value).lower().removeprefix("ort_").removeprefix("enable_")
            if text not in _GRAPH_LEVELS:
                raise BadInputError(f"graph_optimization_level {raw!r} is not one of {sorted(_GRAPH_LEVELS)}", None)
            out[key] = int(_GRAPH_LEVELS[text])
        elif key == "execution_mode":
            text = str(value).lower().removeprefix("ort_")
            if text not in _EXECUTION_MODES:
                raise BadInputError(f"execution_mode {raw!r} is not one of {sorted(_EXECUTION_MODES)}", None)
            out[key] = int(_EXECUTION_MODES[text])
        elif key in ("intra_op_num_threads", "inter_op_num_threads", "log_severity_level"):
            out[key] = _int_setting(key, value)
        elif key in ("enable_mem_pattern", "enable_cpu_mem_arena"):
            out[key] = bool(value)
        elif key == "enable_mem_reuse":
            if not value:
                raise UnsupportedSettingError(
                    "enable_mem_reuse = false cannot be set through ORT's C API", "leave it at its default (true)"
                )
        elif key == "use_deterministic_compute":
            if value:
                raise UnsupportedSettingError(
                    "use_deterministic_compute = true is not applied by the C-API runner",
                    "leave it at its default (false) for --package runs",
                )
        elif key in ("free_dims", "free_dim_denotations"):
            if value:
                raise UnsupportedSettingError(
                    f"{key} is not applied by the C-API runner", "leave it out of the config for --package runs"
                )
        elif key == "config_entries":
            if not isinstance(value, Mapping):
                raise BadInputError("config_entries must map session config keys to values", None)
            out[key] = {str(k): str(v) for k, v in value.items()}
        else:
            raise UnsupportedSettingError(f"unknown session setting {key!r} for a --package run", None)
    return out


def _int_setting(key: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadInputError(f"{key} must be a non-negative integer, got {value!r}", None)
    return value


def provider_chain(
    ep: object, provider_options: Mapping[str, object] | None, device_id: int
) -> tuple[str, list[tuple[str, dict[str, str]]]]:
    """ORT's name of the requested EP, and the providers to append in order with their options.

    TensorRT gets the CUDA EP behind it (as ORT's own docs recommend), for nodes TensorRT does not take.
    """
    raw = str(getattr(ep, "value", ep))
    requested = PROVIDER_NAMES.get(raw.lower()) or next((n for n in PROVIDER_NAMES.values() if n == raw), None)
    if requested is None:
        raise BadInputError(f"execution provider {raw!r} is not one of {sorted(PROVIDER_NAMES)}", None)
    if isinstance(device_id, bool) or not isinstance(device_id, int) or device_id < 0:
        raise BadInputError(f"device_id must be a non-negative integer, got {device_id!r}", None)
    options = {str(k): binding._option_text(v) for k, v in (provider_options or {}).items()}
    if requested == PROVIDER_NAMES["cpu"]:
        if options:
            raise BadInputError(f"the CPU EP takes no provider options (got {sorted(options)})", None)
        return requested, []
    given = options.get("device_id")
    if given is not None and given != str(device_id):
        raise BadInputError(
            f"device_id {device_id} and provider option device_id={given} disagree", "give the device once"
        )
    options["device_id"] = str(device_id)
    if requested == PROVIDER_NAMES["tensorrt"]:
        return requested, [(requested, options), (PROVIDER_NAMES["cuda"], {"device_id": str(device_id)})]
    return requested, [(requested, options)]


# ---------------------------------------------------------------------------------------------------------------
# The run


def run_package_model(
    library: str | os.PathLike[str] | LocatedLibrary,
    model_path: str | os.PathLike[str],
    feeds: Mapping[str, Any],
    ep: object = "cpu",
    provider_options: Mapping[str, object] | None = None,
    device_id: int = 0,
    iterations: int = 0,
    warmup: int = 0,
    profile: bool = True,
    timeout_s: float = 600.0,
    *,
    session_settings: Mapping[str, object] | None = None,
    library_dirs: Sequence[str | os.PathLike[str]] = (),
    keep_profile_in: str | os.PathLike[str] | None = None,
) -> PackageRunResult:
    """Run ``model_path`` through ``library``'s C API on ``ep``, in a child process.

    ``library``: a library file, folder, archive or wheel (see :func:`locate_library`), or a LocatedLibrary.
    One first run (timed apart), ``warmup`` more, then ``iterations`` timed runs (ns each: the Run call and the
    release of its outputs, as a C/C++ application pays it). With ``profile`` the session's placement is read
    from ORT's verbose log (every node) or, failing that, its profile; that logging goes through a Python
    callback and lengthens session creation, so time cold starts from a run without ``profile``. Profiling
    stops before the timed runs.
    ``library_dirs`` are put in front of the loader path of the child (LD_LIBRARY_PATH / PATH), for CUDA
    libraries that live outside the default search. A provider that cannot load raises ProviderLoadError
    (exit 3) with ORT's own text; the C API never falls back silently.
    """
    import numpy as np

    model = Path(model_path)
    if not model.is_file():
        raise BadInputError(f"{model}: no such model file", "check the path")
    for name, value in (("iterations", iterations), ("warmup", warmup)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise BadInputError(f"{name} must be a non-negative integer, got {value!r}", None)
    if not timeout_s or timeout_s <= 0:
        raise BadInputError(f"timeout must be positive, got {timeout_s!r}", None)
    requested, chain = provider_chain(ep, provider_options, device_id)
    settings = normalize_session_settings(session_settings)
    arrays = {}
    for name, value in feeds.items():
        array = np.asarray(value)
        binding.ElementType.from_numpy(array.dtype)  # refuses dtypes ORT has no tensor type for
        arrays[str(name)] = array
    # A LocatedLibrary is already open (its caller owns any extracted copy); anything else is located here.
    opened = nullcontext(library) if isinstance(library, LocatedLibrary) else locate_library(library)
    with opened as located:
        return _run(
            located,
            model,
            arrays,
            requested,
            chain,
            settings,
            iterations,
            warmup,
            profile,
            timeout_s,
            library_dirs,
            keep_profile_in,
        )


def _run(
    located: LocatedLibrary,
    model: Path,
    arrays: Mapping[str, Any],
    requested: str,
    chain: list[tuple[str, dict[str, str]]],
    settings: dict[str, object],
    iterations: int,
    warmup: int,
    profile: bool,
    timeout_s: float,
    library_dirs: Sequence[str | os.PathLike[str]],
    keep_profile_in: str | os.PathLike[str] | None,
) -> PackageRunResult:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ortgpu-capi-") as tmp:
        work = Path(tmp)
        special = save_npz(work / "feeds.npz", arrays)
        request = {
            "library": str(located.path),
            "model": str(model.absolute()),
            "feeds": "feeds.npz",
            "feed_dtypes": special,
            "providers": [{"name": n, "options": o} for n, o in chain],
            "session": settings,
            "iterations": iterations,
            "warmup": warmup,
            "profile": profile,
        }
        (work / "request.json").write_text(json.dumps(request), encoding="utf-8")
        completed = _spawn(work, located, timeout_s, library_dirs)
        reply = _read_reply(work, completed, located)
        if not reply.get("ok"):
            raise _error_from(reply.get("error") or {}, located)
        data = reply["result"]
        outputs = load_npz(work / "outputs.npz", data.get("output_dtypes"))
        kept = _keep_profile(work, data.get("profile_file"), keep_profile_in)
        placement = _placement(data, work, requested)
    return PackageRunResult(
        library=located.path if located.kind is SourceKind.FILE else Path(located.source) / located.member,
        ort_version=data["version"],
        library_api_version=data["library_api_version"],
        api_version=data["api_version"],
        build_info=data.get("build_info"),
        compiled_providers=tuple(data["compiled_providers"]),
        requested_provider=requested,
        appended_providers=tuple(data["appended"]),
        provider_options={k: dict(v) for k, v in data["provider_options"].items()},
        inputs=tuple(TensorSpec(**_spec(s)) for s in data["inputs"]),
        output_specs=tuple(TensorSpec(**_spec(s)) for s in data["outputs"]),
        outputs=outputs,
        provider_setup_s=data["provider_setup_s"],
        session_creation_s=data["session_creation_s"],
        first_run_s=data["first_run_s"],
        warmup_runs=warmup,
        latencies_ns=tuple(int(x) for x in data["latencies_ns"]),
        placement=placement,
        providers_used=_providers_used(placement),
        log=tuple(_log_record(r) for r in data["log"]),
        profile_file=kept,
        wall_s=time.perf_counter() - start,
    )


def _spawn(
    work: Path, located: LocatedLibrary, timeout_s: float, library_dirs: Sequence[str | os.PathLike[str]]
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    package_root = str(Path(ortgpu.__file__).resolve().parent.parent)  # the child must import this ortgpu
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    if library_dirs:
        variable = "PATH" if sys.platform == "win32" else "LD_LIBRARY_PATH"
        dirs = [str(Path(d).absolute()) for d in library_dirs]
        env[variable] = os.pathsep.join([*dirs, env.get(variable, "")]).rstrip(os.pathsep)
    command = [sys.executable, "-m", "ortgpu.capi.child", str(work / "request.json")]
    try:
        return subprocess.run(
            command, cwd=work, env=env, capture_output=True, text=True, errors="replace", timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        raise PackageRunError(
            f"the run through {located.member} did not finish within {timeout_s:g} s (the child was stopped)",
            "give a longer timeout or fewer iterations",
        ) from None


def _read_reply(work: Path, completed: subprocess.CompletedProcess[str], located: LocatedLibrary) -> dict[str, Any]:
    path = work / "result.json"
    if path.is_file():
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            pass  # a half-written reply: the child died while writing; reported below as a crash
    code = completed.returncode
    tail = [line for line in (completed.stderr or "").splitlines() if line.strip()][-3:]
    if code < 0:
        import signal

        try:
            how = f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"was killed by signal {-code}"
    else:
        how = f"exited with status {code} without a result"
    detail = f": {' | '.join(tail)}" if tail else ""
    raise PackageRunError(
        f"the process running {located.member} {how}{detail}",
        "the library crashed; `ortgpu doctor --package PATH` checks what it needs",
    )


_ERROR_TYPES: dict[str, type[OrtgpuError]] = {
    cls.__name__: cls
    for cls in (
        binding.LibraryLoadError,
        binding.NotOrtLibraryError,
        binding.CapiVersionError,
        binding.OrtModelError,
        binding.OrtInputError,
        binding.UnsupportedValueError,
        binding.ProviderOptionError,
        binding.ProviderLoadError,
        binding.OrtRuntimeError,
        UnsupportedSettingError,
        BadInputError,
        EnvironmentUnfitError,
    )
}


def _error_from(error: Mapping[str, Any], located: LocatedLibrary) -> OrtgpuError:
    """The child's error as the same ortgpu error type (a known name only: nothing is imported by name)."""
    message = str(error.get("message") or "unknown error")
    hint = error.get("hint")
    cls = _ERROR_TYPES.get(str(error.get("type")))
    if cls is None:
        return PackageRunError(f"the C-API runner failed on {located.member}: {message}", hint)
    made = cls(message, hint)
    status = error.get("status")
    if status and hasattr(made, "status"):
        made.status = binding.OrtStatusInfo(  # type: ignore[attr-defined]
            function=status["function"], code=binding.OrtErrorCode.of(status["code"]), message=status["message"]
        )
    return made


def _spec(raw: Mapping[str, Any]) -> dict[str, Any]:
    return {**raw, "dims": tuple(raw["dims"])}


def _log_record(raw: Mapping[str, Any]) -> LogRecord:
    try:
        severity: LoggingLevel | int = LoggingLevel(raw["severity"])
    except ValueError:
        severity = raw["severity"]
    return LogRecord(
        severity=severity,
        category=raw["category"],
        logid=raw["logid"],
        code_location=raw["code_location"],
        message=raw["message"],
    )


def _placement(data: Mapping[str, Any], work: Path, requested: str) -> Any:
    lines = data.get("placement_log") or []
    if lines:
        report = parse_verbose_log("\n".join(lines), requested)
        if report is not None:
            return report
    profile = data.get("profile_file")
    if profile and (work / Path(profile).name).is_file():
        try:
            return parse_profile_file(work / Path(profile).name, requested)
        except (OSError, ValueError):
            return None
    return None


def _providers_used(placement: Any) -> tuple[str, ...]:
    if placement is None:
        return ()
    names = {ep for ep, count in placement.compute_per_provider.items() if count}
    names |= {node.provider for node in placement.memcpy_nodes}
    return tuple(sorted(names))


def _keep_profile(work: Path, profile: str | None, keep_in: str | os.PathLike[str] | None) -> Path | None:
    if not profile or keep_in is None:
        return None
    source = work / Path(profile).name
    if not source.is_file():
        return None

    folder = Path(keep_in)
    if not folder.is_dir():
        raise BadInputError(f"{folder}: no such folder to keep the profile in", "create it first")
    return atomic_write_bytes(folder / source.name, source.read_bytes())
