"""Which execution providers can be active here, and, when one cannot, the real reason why."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath

from ortgpu.config import ExecutionProvider
from ortgpu.runtime.guard import import_onnxruntime
from ortgpu.runtime.preload import ensure_preloaded, plan_for
from ortgpu.session.failures import ProviderUnavailableError, clean_ort_message

__all__ = [
    "ProviderProbe",
    "best_available_ep",
    "cause_from_log",
    "inactive_provider_error",
    "library_load_failure",
    "missing_from_build_error",
    "probe_provider",
]

_GPU_INSTALL_HINT = "pip uninstall onnxruntime && pip install onnxruntime-gpu"
# ORT's loader message: "Failed to load library libonnxruntime_providers_cuda.so with error: <dlerror text>".
_LOAD_ERROR = re.compile(r"Failed to load library (?P<lib>\S+) with error: (?P<why>.+)")
_WIN_LOAD_ERROR = re.compile(
    r'LoadLibrary failed with error (?P<code>\d+) "[^"]*" when trying to load "(?P<lib>[^"]+)"'
)
_LOG_LINE = re.compile(r"^\S+ \S+ \[(?P<level>[EWF]):onnxruntime:[^,\]]*, [^\]]*\] (?P<message>.*)$")
_MISSING_LIB = re.compile(r"(?P<lib>lib[\w.+-]+\.so[\w.]*|[\w.+-]+\.dll): cannot open shared object file")


def _ort_version() -> str:
    ort = import_onnxruntime()

    return ort.__version__


def missing_from_build_error(ep: ExecutionProvider) -> ProviderUnavailableError:
    """``ep`` is not even compiled into the onnxruntime that Python imports: name the distribution and the fix."""
    ort = import_onnxruntime()

    from ortgpu.env.distributions import Flavour, find_distributions

    available = ", ".join(ort.get_available_providers())
    report = find_distributions()
    loaded = report.loaded_distribution
    label = f"{loaded.name} {loaded.version}" if loaded else f"onnxruntime {ort.__version__}"
    if report.conflict:
        names = " and ".join(d.name for d in report.distributions)
        return ProviderUnavailableError(
            f"{names} are installed together and the files Python loads have no {ep.ort_name} (available: {available})",
            "pip uninstall -y " + " ".join(d.name for d in report.distributions) + " && pip install onnxruntime-gpu",
        )
    if loaded is None or loaded.flavour is Flavour.CPU:
        return ProviderUnavailableError(
            f"onnxruntime here is the CPU-only build ({label}): it has no {ep.ort_name} (available: {available})",
            _GPU_INSTALL_HINT,
        )
    return ProviderUnavailableError(
        f"this onnxruntime build ({label}) has no {ep.ort_name} (available: {available})",
        "install an onnxruntime-gpu build that includes it; ortgpu doctor lists what is installed",
    )


def cause_from_log(log_text: str) -> str | None:
    """The most telling error ORT logged about a provider failing to load or start, as one line."""
    candidates: list[str] = []
    for line in log_text.splitlines():
        match = _LOG_LINE.match(line.strip())
        message = match["message"] if match else line.strip()
        if not message:
            continue
        load = _LOAD_ERROR.search(message)
        if load:
            return f"{load['lib']} could not be loaded: {clean_ort_message(load['why'])}"
        windows = _WIN_LOAD_ERROR.search(message)
        if windows:
            name, code = PureWindowsPath(windows["lib"]).name, windows["code"]
            meaning = ": a DLL it needs (CUDA, cuDNN or the VC++ runtime) was not found" if code == "126" else ""
            return f"{name} could not be loaded (LoadLibrary error {code}{meaning})"
        if match and re.search(r"cuda|cudnn|tensorrt|provider|driver|device", message, re.IGNORECASE):
            candidates.append(clean_ort_message(message))
    return candidates[0] if candidates else None


def _hint_for(cause: str) -> str:
    missing = _MISSING_LIB.search(cause)
    if missing:
        return (
            f"install {missing['lib']} (e.g. pip install 'onnxruntime-gpu[cuda,cudnn]' and call "
            "onnxruntime.preload_dlls(), or put the CUDA/cuDNN lib folder on LD_LIBRARY_PATH); "
            "ortgpu doctor lists every missing library"
        )
    if re.search(r"driver version is insufficient|driver.*too old", cause, re.IGNORECASE):
        return "update the NVIDIA driver to one that supports this CUDA version (ortgpu doctor shows both)"
    return "run ortgpu doctor for the full diagnosis of this machine"


def _driver_cause() -> str | None:
    from ortgpu.env.nvml import query_driver

    driver = query_driver()
    if not driver.present:
        return f"no NVIDIA driver answers ({driver.error})"
    if not driver.gpus:
        return f"the NVIDIA driver {driver.version} sees no GPU"
    return None


def library_load_failure(ep: ExecutionProvider) -> str | None:
    """Why ``ep``'s provider library does not load, from the doctor's probe: the loader's own error text.

    The probe dlopens libonnxruntime_providers_shared then the provider library in a child process, as ORT
    does (Linux; elsewhere None). None also when the libraries load: the cause is then further on (driver, GPU).
    """
    import sys

    if not sys.platform.startswith("linux"):
        return None
    ort = import_onnxruntime()

    from ortgpu.env.load_attempt import LoadOutcome, attempt_load, provider_libraries

    capi = Path(ort.__file__).parent / "capi"
    libraries = provider_libraries(capi, "tensorrt" if ep is ExecutionProvider.TENSORRT else "cuda")
    calls = [(call.text(), call.kwargs()) for call in plan_for(ort).calls]  # as this process preloaded
    attempt = attempt_load(libraries, preload_calls=calls, module_parent=capi.parent.parent, timeout_s=30.0)
    if attempt.outcome is LoadOutcome.LIBRARY_FAILED:
        failed = next((lib for lib in attempt.libraries if not lib.ok), None)
        name = failed.path.name if failed else "the provider library"
        return f"{name} could not be loaded: {attempt.error}"
    if attempt.outcome in (LoadOutcome.CRASHED, LoadOutcome.TIMEOUT):
        return f"loading the provider library {attempt.outcome.value}: {attempt.error or attempt.stderr_tail}"
    return None


def inactive_provider_error(ep: ExecutionProvider, providers: list[str], log_text: str) -> ProviderUnavailableError:
    """ORT built the session without ``ep`` (it logs why, it does not raise): say the real cause.

    The doctor's load probe names the library the loader refused; ORT's captured log and NVML come next.
    """
    cause = library_load_failure(ep) or cause_from_log(log_text) or _driver_cause()
    active = ", ".join(providers) or "none"
    if cause is None:
        cause = "ORT logged no reason"
    return ProviderUnavailableError(
        f"{ep.ort_name} was requested but onnxruntime {_ort_version()} fell back to {active}: {cause}",
        _hint_for(cause),
    )


@dataclass(frozen=True)
class ProviderProbe:
    """Whether a tiny session on ``ep`` really gets ``ep`` active, and why not."""

    ep: ExecutionProvider
    active: bool
    cause: str | None


@functools.cache
def probe_provider(ep: ExecutionProvider, device_id: int = 0) -> ProviderProbe:
    """Build a one-node session on ``ep`` and see whether ORT keeps it (cached: a process's libraries do not
    change). The CUDA context it creates is reused by the next session on the same device."""
    ort = import_onnxruntime()
    from onnx import TensorProto, helper

    if ep.ort_name not in ort.get_available_providers():
        return ProviderProbe(ep, False, str(missing_from_build_error(ep)))
    if ep.is_gpu:
        ensure_preloaded()  # as open_session does: the probe must see the libraries a real session would
    from ortgpu.session.capture import capture_native_stderr
    from ortgpu.session.failures import ort_exception_types

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "probe",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    providers = [(ep.ort_name, {"device_id": str(device_id)}), "CPUExecutionProvider"]
    try:
        with capture_native_stderr() as log:
            session = ort.InferenceSession(model.SerializeToString(), providers=providers, enable_fallback=0)
    except ort_exception_types() as exc:
        return ProviderProbe(ep, False, clean_ort_message(str(exc)))
    if ep.ort_name in session.get_providers():
        return ProviderProbe(ep, True, None)
    cause = library_load_failure(ep) or cause_from_log(log.text) or _driver_cause() or "ORT logged no reason"
    return ProviderProbe(ep, False, cause)


def best_available_ep() -> tuple[ExecutionProvider, str]:
    """The EP `check` and `load` use when none is asked for, and a sentence saying why, plainly.

    CUDA when this onnxruntime has it and it really starts; else CPU with the reason. TensorRT is never picked
    by default (its engine builds take minutes): ask for it.
    """
    ort = import_onnxruntime()

    available = ort.get_available_providers()
    version = ort.__version__
    if ExecutionProvider.CUDA.ort_name not in available:
        return ExecutionProvider.CPU, f"CPU: {missing_from_build_error(ExecutionProvider.CUDA).message}"
    driver = _driver_cause()
    if driver is not None:
        return ExecutionProvider.CPU, f"CPU: onnxruntime {version} has the CUDA provider but {driver}"
    probe = probe_provider(ExecutionProvider.CUDA)
    if not probe.active:
        return ExecutionProvider.CPU, f"CPU: the CUDA provider of onnxruntime {version} cannot start: {probe.cause}"
    trt = (
        " (TensorRT is available too: ask for it with --ep tensorrt)"
        if "TensorrtExecutionProvider" in available
        else ""
    )
    return ExecutionProvider.CUDA, f"CUDA: onnxruntime {version} has CUDAExecutionProvider and it starts here{trt}"
