"""Checks of the DLLs ORT loads on Windows: each provider's needs, other onnxruntime.dll copies, a real load."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ortgpu.doctor.checks.windows.fixes import (
    ESSENTIAL_ROLES,
    OPTIONAL_AT_RUN_TIME,
    RUN_TIME_KINDS,
    FixEnv,
    is_blocking,
    kb_fix,
    need_cause,
    need_fix,
    need_rank,
    need_text,
    root_needs,
)
from ortgpu.doctor.verdict import Check, Status
from ortgpu.host.load_attempt import LoadAttempt, LoadOutcome
from ortgpu.host.windows import windows_error_code
from ortgpu.loader.windows import DllCopy, DllResolution, DllStatus, LibraryImports, LoadContext
from ortgpu.package.analysis import Component, LibraryRole, NeedKind
from ortgpu.versions import version_tuple

__all__ = [
    "load_check",
    "need_checks",
    "provider_check",
    "shadowing_check",
]


def provider_check(library: LibraryImports, env: FixEnv, provider: str, attempt: LoadAttempt | None = None) -> Check:
    """Every DLL one provider's load brings in (W04-W10): the most fundamental problem named, with its fix."""
    check_id, title = f"ort.provider.{provider}", f"{library.name} needs"
    relevant = [n for n in library.needs if not n.system and n.component is not Component.ORT]
    judged = [(n, is_blocking(n, library.role)) for n in library.needs]
    blocking = [n for n, b in judged if b]
    optional = [n for n, b in judged if b is False]
    evidence = f"{sum(n.ok for n in relevant)}/{len(relevant)} DLLs resolve ({library.order.value}: {library.search})"
    if env.build.cuda_major:
        evidence += f"; built for CUDA {env.build.cuda_major}"
        evidence += f", cuDNN {env.build.cudnn_major}" if env.build.cudnn_major else ""
    details: dict[str, Any] = {
        "path": library.path,
        "needs": [n.name for n in library.needs],
        "unresolved": {n.name: n.status.value for n in library.needs if not n.ok},
    }
    if provider == "tensorrt" or not blocking:
        problems = blocking + optional
        if not problems:
            return Check(check_id, title, Status.OK, evidence, details=details)
        cause = (
            "the TensorRT EP cannot load (the CUDA EP does not need these)"
            if provider == "tensorrt"
            else "DLLs the CUDA EP opens only for some operators (FFT, random numbers, runtime-compiled kernels) "
            "are missing"
        )
        trt = [n for n in problems if n.component is Component.TENSORRT]
        fix = need_fix(trt[0] if trt else min(problems, key=need_rank), env)
        if trt and len(trt) < len(problems):
            fix += "; and the CUDA/cuDNN DLLs as the CUDA EP check says"
        return Check(
            check_id,
            title,
            Status.WARN,
            evidence + ": " + "; ".join(need_text(n) for n in problems),
            cause=cause,
            fix=fix,
            details=details,
        )
    first = min(blocking, key=need_rank)
    fixes = list(dict.fromkeys(need_fix(n, env) for n in sorted(root_needs(blocking), key=need_rank)))
    cause = "the CUDA EP cannot load: " + need_cause(first)
    if len(blocking) > 1:
        others = [n.name for n in blocking if n is not first]
        cause += f" (+{len(others)} more: {', '.join(others[:4])}{', ...' if len(others) > 4 else ''})"
    if attempt is not None and attempt.ok:
        # The real loader found them although the emulated search did not: trust it, and say so.
        return Check(
            check_id,
            title,
            Status.WARN,
            evidence + ": " + "; ".join(need_text(n) for n in blocking),
            cause="the emulated search misses " + ", ".join(n.name for n in blocking) + " but the real load attempt "
            "succeeded: they are reached in a way ortgpu does not model (already loaded, SetDllDirectory, an "
            "installer's side-by-side copy)",
            fix="nothing to do while it works; the fix below makes the setup explicit: " + fixes[0],
            details=details,
        )
    return Check(
        check_id,
        title,
        Status.FAIL,
        evidence + ": " + "; ".join(need_text(n) for n in blocking),
        cause=cause,
        fix="; then ".join(fixes[:3]),
        details={**details, "component": first.component.value},
    )


def need_checks(libraries: Sequence[LibraryImports], env: FixEnv) -> list[Check]:
    """doctor --package: one check per DLL the package needs from the machine (as the Linux host checks do)."""
    seen: dict[str, tuple[DllResolution, set[LibraryRole]]] = {}
    for library in libraries:
        for need in library.needs:
            seen.setdefault(need.name.lower(), (need, set()))[1].add(library.role)
    checks = []
    for need, roles in seen.values():
        if need.system or need.component in (Component.VC_RUNTIME, Component.PYTHON):
            continue  # the VC++ check judges the runtime; the OS and python3XX.dll are always there
        if need.component is Component.ORT and need.ok:
            continue  # shipped in the package, next to the library that needs it
        essential = bool(roles & ESSENTIAL_ROLES) and not (
            need.kind in RUN_TIME_KINDS and need.component in OPTIONAL_AT_RUN_TIME
        )
        chosen = need.chosen
        details: dict[str, Any] = {
            "soname": need.name,
            "component": need.component.value,
            "status": need.status.value,
            "path": chosen.path if chosen else None,
            "source": chosen.where if chosen else None,
            "file_version": chosen.file_version if chosen else None,
            "machine": chosen.machine if chosen else None,
            "requested_by": need.requested_by,
            "lazy": need.kind in RUN_TIME_KINDS,
            "for": sorted(r.value for r in roles),
            "essential": essential,
        }
        check_id, title = f"host.lib.{need.name}", f"{need.component.value}: {need.name}"
        if need.ok:
            checks.append(Check(check_id, title, Status.OK, need_text(need), details=details))
        elif need.component is Component.CUDA_DRIVER:
            evidence = need_text(need) + "; see the NVIDIA driver check"
            checks.append(Check(check_id, title, Status.INFO, evidence, details=details))
        else:
            scope = (
                "" if essential else " (only some operators need it)" if roles & ESSENTIAL_ROLES else " (TensorRT EP)"
            )
            details["problem"] = f"{need.name} ({need.component.value}) {need.status.value}"
            checks.append(
                Check(
                    check_id,
                    title,
                    Status.FAIL if essential else Status.WARN,
                    need_text(need) + scope,
                    cause=need_cause(need),
                    fix=need_fix(need, env),
                    details=details,
                )
            )
    return checks


def _api_version(version: str | None) -> int | None:
    """ORT's C API version is its minor version (1.19 -> 19)."""
    parts = version_tuple(version)
    return parts[1] if len(parts) >= 2 and parts[0] == 1 else None


def shadowing_check(
    copies: Sequence[DllCopy], context: LoadContext, package_version: str | None, check_id: str
) -> Check | None:
    """Another onnxruntime.dll an .exe's search reaches: Windows 11's own System32 copy, another app's (W23)."""
    if not copies:
        return None
    title = "Other onnxruntime.dll copies"
    listed = "; ".join(f"{c.path} {c.file_version or '(no version)'} ({c.where})" for c in copies)
    if context.python:
        return Check(
            check_id,
            title,
            Status.INFO,
            f"{listed}: not used by the Python package (its core is in onnxruntime_pybind11_state.pyd), but a C/C++ "
            "program without its own onnxruntime.dll next to its .exe loads the first one",
        )
    first = copies[0]
    want, got = _api_version(package_version), _api_version(first.file_version)
    symptom = (
        f' ("The requested API version [{want}] is not available, only API versions [1, {got}] are supported")'
        if want and got and got < want
        else ""
    )
    return Check(
        check_id,
        title,
        Status.WARN,
        f"an .exe whose folder has no onnxruntime.dll reaches: {listed}",
        cause=f"unless your .exe's folder holds this package's onnxruntime.dll, Windows loads {first.path} "
        f"({first.file_version or 'another version'}) instead: System32 and earlier PATH entries come first{symptom}",
        fix="copy every DLL of the package's lib\\ folder (onnxruntime.dll, onnxruntime_providers_shared.dll, "
        "onnxruntime_providers_cuda.dll, and _tensorrt.dll if used) next to your .exe; putting lib\\ on PATH is not "
        "enough",
        details={"problem": f"{first.path} shadows the package's onnxruntime.dll", "component": "ONNX Runtime"},
    )


def _load_failure(attempt: LoadAttempt, unresolved: Sequence[DllResolution], env: FixEnv) -> tuple[str, str]:
    error = attempt.error or ""
    code = windows_error_code(error)
    named = ", ".join(n.name for n in unresolved if n.kind is NeedKind.LOAD_TIME)  # run-time ones cannot cause 126
    if error.startswith("import onnxruntime"):
        cause = f"`import onnxruntime` fails in a fresh Python: {error.split(': ', 1)[-1]}"
        return cause, kb_fix("FM-28") if "DLL load failed" in error else "reinstall onnxruntime-gpu"
    if code == 126 and named:
        return f"error 126 (module not found) loading the provider: the emulated search misses {named}", (
            "see the provider check's fix"
        )
    if code == 126:
        return (
            "error 126 (module not found) loading the provider, although the emulated search finds every DLL: this "
            "process searches differently (a restricted default DLL search); please report it",
            kb_fix("FM-21"),
        )
    if code == 127:
        return (
            "error 127 (procedure not found): a DLL of the right name but another version was loaded first (mixed "
            "CUDA/cuDNN versions, torch's copies, or an old VC++ runtime)",
            "make every CUDA/cuDNN DLL come from one install (`where.exe cudnn64_*.dll cublas64_*.dll` lists the "
            "copies on PATH); with torch, `import torch` first and keep its CUDA/cuDNN majors equal to ORT's",
        )
    if code == 193:
        bad = next((n for n in unresolved if n.status is DllStatus.BAD_IMAGE), None)
        fix = need_fix(bad, env) if bad else "reinstall onnxruntime-gpu; replace x86/ARM64 CUDA DLLs on PATH"
        return "error 193: a DLL in the load is for another CPU (x86/ARM64) or damaged", fix
    if code == 1114:
        return "error 1114: a DLL's initialisation failed, usually an msvcp140.dll older than ORT's", kb_fix("FM-28")
    if code == 1455:
        return (
            "error 1455: the paging file is too small to map the provider DLL (0.5 GB)",
            "increase the paging file: System > About > Advanced system settings > Performance > Virtual memory",
        )
    if code == 5:
        return (
            "error 5 (access denied): an antivirus or the file permissions block the DLL",
            "allow the site-packages folder in the antivirus and check the files' permissions",
        )
    if attempt.outcome is LoadOutcome.SESSION_FAILED:
        return "the DLLs load but the CUDA session fails or falls back to CPU", f"`ortgpu explain '{error[:160]}'`"
    if attempt.outcome is LoadOutcome.TIMEOUT:
        return "loading the CUDA provider did not finish in time", "run `nvidia-smi` to see whether the GPU is hung"
    return f"the CUDA provider does not load: {error}", f"`ortgpu explain '{error[:160]}'`"


def load_check(
    cuda: LibraryImports | None, attempt: LoadAttempt | None, unresolved: Sequence[DllResolution], env: FixEnv
) -> Check:
    """The real LoadLibraryExW in a child python.exe, keyed by the Windows error code (W07, W13)."""
    title = "CUDA EP load attempt"
    if cuda is None or attempt is None:
        return Check("load.attempt", title, Status.SKIP, "no onnxruntime_providers_cuda.dll in the installed ORT")
    what = "import onnxruntime + LoadLibraryExW(LOAD_WITH_ALTERED_SEARCH_PATH)"
    what += " + CUDA session on a 1-Conv model" if attempt.session_requested else " only (no usable GPU)"
    details: dict[str, Any] = {"mode": what, "duration_s": round(attempt.duration_s, 3)}
    if attempt.ok:
        tail = (
            f"session providers {', '.join(attempt.session_providers)}"
            if attempt.session_requested
            else f"onnxruntime_providers_shared.dll and {cuda.name} load"
        )
        return Check("load.attempt", title, Status.OK, f"{what}: {tail}", details=details)
    details["code"] = windows_error_code(attempt.error)
    cause, fix = _load_failure(attempt, unresolved, env)
    evidence = f"{what}: {attempt.outcome.value}: {attempt.error}"
    return Check("load.attempt", title, Status.FAIL, evidence, cause=cause, fix=fix, details=details)
