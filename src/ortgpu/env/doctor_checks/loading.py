"""Checks from the real load attempt: did the CUDA provider load, and which CUDA files did the session map."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ortgpu.env.checks import Check, Status
from ortgpu.env.doctor_checks.facts import MappedLibrary, ProviderLibrary
from ortgpu.env.load_attempt import LoadAttempt, LoadOutcome

__all__ = ["load_check", "mapped_check", "skipped_check"]


def skipped_check(cuda_lib: ProviderLibrary) -> Check:
    """The load attempt was not made (doctor --quick): say so, and what that leaves unverified."""
    return Check(
        "load.attempt",
        "CUDA EP load attempt",
        Status.SKIP,
        f"skipped (--quick): {cuda_lib.path.name} was not loaded and no CUDA session ran, so the loader's own answer "
        "and the files it maps are not verified; the verdict rests on the static checks above",
        fix="run `ortgpu doctor` without --quick for the real load",
    )


def load_check(
    cuda_lib: ProviderLibrary | None, attempt: LoadAttempt | None, preload: LoadAttempt | None, gpu_usable: bool
) -> Check:
    title = "CUDA EP load attempt"
    if cuda_lib is None or attempt is None:
        return Check("load.attempt", title, Status.SKIP, "no libonnxruntime_providers_cuda.so in the installed ORT")
    model = "a 1-Conv model (cuDNN loaded too)" if attempt.conv else "a 1-Add model (no cuDNN work)"
    what = f"dlopen + CUDA session on {model}" if attempt.session_requested else "dlopen only (no usable GPU)"
    if attempt.preload_calls:  # as ortgpu's own GPU sessions do (ortgpu.runtime.preload)
        what = "; ".join(attempt.preload_calls) + ", then " + what
    details: dict[str, Any] = {"duration_s": round(attempt.duration_s, 3), "mode": what}
    if attempt.preload_calls:
        details["preload_calls"] = list(attempt.preload_calls)
        details["preload_output"] = attempt.preload_output
    if preload is not None:
        details["with_preload_dlls"] = preload.outcome.value
    if attempt.ok:
        if attempt.session_requested:
            evidence = f"{what}: session providers {', '.join(attempt.session_providers)}"
        else:
            evidence = f"{what}: libonnxruntime_providers_shared.so and {cuda_lib.path.name} load"
        return Check("load.attempt", title, Status.OK, evidence, details=details)
    evidence = f"{what}: {attempt.outcome.value}: {attempt.error}"
    if attempt.preload_error:
        evidence += f" (preload_dlls: {attempt.preload_error})"
    if preload is not None:
        evidence += f"; with onnxruntime.preload_dlls() first: {preload.outcome.value}"
        if preload.error:
            evidence += f" ({preload.error})"
    cause, fix = _load_failure_fix(attempt, preload)
    return Check("load.attempt", title, Status.FAIL, evidence, cause=cause, fix=fix, details=details)


def _load_failure_fix(attempt: LoadAttempt, preload: LoadAttempt | None) -> tuple[str, str]:
    text = attempt.error or ""
    if preload is not None and preload.ok:
        return (
            "the CUDA libraries load only when onnxruntime.preload_dlls() runs first",
            "call onnxruntime.preload_dlls() right after `import onnxruntime`, before creating sessions",
        )
    if attempt.outcome is LoadOutcome.TIMEOUT:
        return "loading the CUDA provider did not finish in time", "run `nvidia-smi` to see whether the GPU is hung"
    if "cannot open shared object file" in text and text.startswith("libcuda.so"):
        return "the NVIDIA driver library libcuda.so.1 is not reachable", "see the NVIDIA driver check"
    if "cannot open shared object file" in text:
        missing = text.split(":", 1)[0]
        return (
            f"the loader cannot find {missing}",
            "install it (see the libraries table) or add its folder to LD_LIBRARY_PATH",
        )
    if "version `GLIBCXX_" in text or "CXXABI_" in text:
        return (
            "the libstdc++ that loads first is older than the one ORT was built against",
            "upgrade the system libstdc++ (or, in conda, `conda install -c conda-forge libstdcxx-ng`)",
        )
    if "version `GLIBC_" in text:
        return "this system's glibc is too old for the provider library", "use a system with a newer glibc"
    if "undefined symbol" in text:
        return (
            "a CUDA library of another version was loaded (symbols missing)",
            "make every CUDA/cuDNN library come from one CUDA major (see the libraries table); "
            f"`ortgpu explain '{text[:120]}'`",
        )
    if attempt.outcome is LoadOutcome.SESSION_FAILED:
        return (
            "the provider libraries load but the CUDA session fails or falls back to CPU",
            f"`ortgpu explain '{(attempt.error or '')[:160]}'`",
        )
    return f"the CUDA provider does not load: {text}", f"`ortgpu explain '{text[:160]}'`"


def mapped_check(mapped: Sequence[MappedLibrary]) -> Check:
    cuda = [m for m in mapped if m.origin != "driver"]
    origins = sorted({m.origin for m in cuda})
    evidence = "; ".join(f"{m.path} [{m.origin}]" for m in cuda) or "no CUDA library mapped"
    return Check(
        "load.mapped",
        "CUDA libraries the session mapped",
        Status.INFO,
        evidence,
        details={"origins": origins, "files": [{"path": str(m.path), "why": m.why} for m in mapped]},
    )
