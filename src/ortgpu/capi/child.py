"""The child process of the C-API runner: ``python -m ortgpu.capi.child REQUEST.json`` (never imports the wheel).

It reads the request written by :mod:`ortgpu.capi.runner`, runs the model through the library, and writes
``result.json`` (and ``outputs.npz``) next to the request. Errors are written there too, as ortgpu error
types with one-line messages; the exit status only says whether it worked.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ortgpu.atomic import atomic_write_text
from ortgpu.capi import binding
from ortgpu.capi.api import readable_message
from ortgpu.capi.binding import (
    CudaProviderOptions,
    Env,
    LoggingLevel,
    OrtLibrary,
    ProviderLoadError,
    RunOptions,
    Session,
    SessionOptions,
    TensorRtProviderOptions,
)
from ortgpu.capi.runner import load_npz, save_npz
from ortgpu.errors import OrtgpuError

__all__ = ["main"]

_OPTION_TYPES: dict[str, type[binding.CudaProviderOptions] | type[binding.TensorRtProviderOptions]] = {
    "CUDAExecutionProvider": CudaProviderOptions,
    "TensorrtExecutionProvider": TensorRtProviderOptions,
}
# session_state.cc logs "Node placements" and one line per EP / node from this function (VERBOSE)
_PLACEMENT_FUNCTION = "VerifyEachNodeIsAssignedToAnEp"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        sys.stderr.write("usage: python -m ortgpu.capi.child REQUEST.json\n")
        return 2
    request_path = Path(args[0])
    work = request_path.parent
    try:
        request = json.loads(request_path.read_text(encoding="utf-8"))
        result = _run(request, work)
        reply: dict[str, Any] = {"ok": True, "result": result}
        status = 0
    except OrtgpuError as exc:
        reply = {"ok": False, "error": _error_dict(exc)}
        status = int(exc.exit_code)
    except Exception as exc:  # a bug in the runner: reported to the parent as one line, not a traceback
        reply = {"ok": False, "error": {"type": "internal", "message": f"{type(exc).__name__}: {exc}", "hint": None}}
        status = 70
    atomic_write_text(work / "result.json", json.dumps(reply))
    return status


def _error_dict(exc: OrtgpuError) -> dict[str, Any]:
    error: dict[str, Any] = exc.to_dict()
    status = getattr(exc, "status", None)
    if status is not None:
        error["status"] = {"function": status.function, "code": int(status.code), "message": status.message}
    return error


def _run(request: Mapping[str, Any], work: Path) -> dict[str, Any]:
    library = OrtLibrary(request["library"])
    profile: bool = bool(request["profile"])
    settings: Mapping[str, Any] = request["session"]
    feeds = load_npz(work / request["feeds"], request.get("feed_dtypes"))
    with contextlib.ExitStack() as stack:
        # VERBOSE while the session is built: ORT lists every node's EP then; runs log at WARNING (RunOptions)
        env = stack.enter_context(Env(library, LoggingLevel.VERBOSE if profile else LoggingLevel.WARNING))
        options = stack.enter_context(SessionOptions(library))
        _apply_settings(options, settings)
        if profile:
            options.set_log_severity(LoggingLevel.VERBOSE)
            options.enable_profiling(work / "profile")
        start = time.perf_counter()
        effective = _append_providers(library, env, options, request["providers"], stack)
        provider_setup_s = time.perf_counter() - start
        mark = len(env.records)
        try:
            session = stack.enter_context(Session(env, request["model"], options))
        except (ProviderLoadError, binding.OrtRuntimeError) as exc:
            raise _with_log(exc, env, mark) from None
        session_creation_s = time.perf_counter() - start
        env.set_level(LoggingLevel.WARNING)
        run_options = stack.enter_context(RunOptions(library, LoggingLevel.WARNING))

        names = [spec.name for spec in session.inputs]
        missing = [n for n in names if n not in feeds]
        unknown = [n for n in feeds if n not in names]
        if missing or unknown:
            raise binding.OrtInputError(
                f"inputs do not match the model: missing {missing or 'none'}, unknown {unknown or 'none'}",
                f"the model's inputs are {names}",
            )
        output_names = [spec.name for spec in session.outputs]
        values = [stack.enter_context(session.make_value(feeds[n])) for n in names]

        prepared = session.prepare(names, values, output_names, run_options)
        start = time.perf_counter()
        outputs = prepared.run_to_numpy()
        first_run_s = time.perf_counter() - start
        for _ in range(int(request["warmup"])):
            prepared.run()
        profile_file = session.end_profiling() if profile else None  # profiling stops here: timed runs are clean
        # each timed run is the Run call and the release of its outputs, as a C/C++ application pays it
        latencies: list[int] = []
        clock = time.perf_counter_ns
        for _ in range(int(request["iterations"])):
            begin = clock()
            prepared.run()
            latencies.append(clock() - begin)

        output_dtypes = save_npz(work / "outputs.npz", outputs)
        records = list(env.records)
    return {
        "version": library.version,
        "library_api_version": library.library_api_version,
        "api_version": library.api_version,
        "build_info": library.build_info,
        "compiled_providers": list(library.available_providers()),
        "appended": list(options.providers),
        "provider_options": effective,
        "inputs": [_spec_dict(s) for s in session.inputs],
        "outputs": [_spec_dict(s) for s in session.outputs],
        "output_dtypes": output_dtypes,
        "provider_setup_s": provider_setup_s,
        "session_creation_s": session_creation_s,
        "first_run_s": first_run_s,
        "latencies_ns": latencies,
        "profile_file": profile_file.name if profile_file else None,
        "placement_log": _placement_lines(records),
        "log": [_record_dict(r) for r in records if int(r.severity) >= LoggingLevel.WARNING],
    }


def _apply_settings(options: SessionOptions, settings: Mapping[str, Any]) -> None:
    """Apply settings already checked by runner.normalize_session_settings."""
    if "graph_optimization_level" in settings:
        options.set_graph_optimization_level(binding.GraphOptimizationLevel(settings["graph_optimization_level"]))
    if "execution_mode" in settings:
        options.set_execution_mode(binding.ExecutionMode(settings["execution_mode"]))
    if settings.get("intra_op_num_threads"):  # 0 is ORT's own default: leave it to ORT
        options.set_intra_op_threads(settings["intra_op_num_threads"])
    if settings.get("inter_op_num_threads"):
        options.set_inter_op_threads(settings["inter_op_num_threads"])
    if "enable_mem_pattern" in settings:
        options.set_mem_pattern(settings["enable_mem_pattern"])
    if "enable_cpu_mem_arena" in settings:
        options.set_cpu_mem_arena(settings["enable_cpu_mem_arena"])
    if "log_severity_level" in settings:
        options.set_log_severity(LoggingLevel(settings["log_severity_level"]))
    for key, value in (settings.get("config_entries") or {}).items():
        options.add_config_entry(key, value)


def _append_providers(
    library: OrtLibrary,
    env: Env,
    options: SessionOptions,
    providers: Sequence[Mapping[str, Any]],
    stack: contextlib.ExitStack,
) -> dict[str, dict[str, str]]:
    effective: dict[str, dict[str, str]] = {}
    for entry in providers:
        name = entry["name"]
        mark = len(env.records)
        try:
            provider_options = stack.enter_context(_OPTION_TYPES[name](library, entry["options"]))
            effective[name] = provider_options.as_dict()
            options.append(provider_options)
        except ProviderLoadError as exc:
            raise _with_log(exc, env, mark) from None
    return effective


def _with_log(exc: OrtgpuError, env: Env, mark: int) -> OrtgpuError:
    """When ORT's status only says "Failed to load shared library", its log has the loader's reason: add it."""
    errors = [
        readable_message(r.message)
        for r in env.records_since(mark, LoggingLevel.ERROR)
        if readable_message(r.message) not in exc.message
    ]
    if not errors:
        return exc
    enriched = type(exc)(f"{exc.message} (ORT log: {' | '.join(errors[:2])})", exc.hint)
    enriched.status = getattr(exc, "status", None)  # type: ignore[attr-defined]
    return enriched


def _placement_lines(records: Sequence[binding.LogRecord]) -> list[str]:
    """ORT's placement messages as log lines the way ortgpu.placement reads them (one line per node)."""
    lines: list[str] = []
    for record in records:
        if _PLACEMENT_FUNCTION not in record.code_location:
            continue
        for part in record.message.splitlines() or [""]:
            lines.append(f"[V:onnxruntime:{record.logid}, {record.code_location}] {part}")
    return lines


def _spec_dict(spec: binding.TensorSpec) -> dict[str, Any]:
    return {"name": spec.name, "onnx_type": spec.onnx_type, "element_type": spec.element_type, "dims": list(spec.dims)}


def _record_dict(record: binding.LogRecord) -> dict[str, Any]:
    return {
        "severity": int(record.severity),
        "category": record.category,
        "logid": record.logid,
        "code_location": record.code_location,
        "message": record.message,
    }


if __name__ == "__main__":
    sys.exit(main())
