"""The structural signals' types: what kind of fact a signal is, where it was seen, and the node ORT names."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

__all__ = ["MAX_SIGNALS_PER_KIND", "FailingNode", "Signal", "SignalKind", "nearest_node"]

MAX_SIGNALS_PER_KIND = 16  # a log that repeats one failure a thousand times is one failure


class SignalKind(Enum):
    """What a signal says about the paste."""

    MISSING_LIBRARY = "missing_library"  # a named shared library / DLL could not be found or loaded
    CPU_ONLY_PROVIDERS = "cpu_only_providers"  # the installed onnxruntime has no GPU provider at all
    BOTH_PACKAGES = "both_packages"  # the CPU package and a GPU package are installed together
    PYBIND_LOAD_FAILED = "pybind_load_failed"  # onnxruntime's own Python extension DLL did not load (Windows)
    ORT_LIBRARY_MISSING = "ort_library_missing"  # a binding cannot load onnxruntime's own native library
    CUDNN_STATUS = "cudnn_status"  # cuDNN returned an error status while running a node
    CUBLAS_STATUS = "cublas_status"  # a cuBLAS call failed (status by name or number, or just the call)
    CUDA_ERROR = "cuda_error"  # the CUDA runtime returned an error (cudaError_t by name, number or message)
    TRT_PROFILE = "trt_profile"  # TensorRT: dynamic input shapes without (complete) optimisation profiles
    TRT_UNSUPPORTED_OP = "trt_unsupported_op"  # TensorRT cannot take a node (no importer / plugin / type)
    TRT_BUILD_ERROR = "trt_build_error"  # TensorRT's builder or runtime logged an error through ORT (or its own)
    MISSING_KERNEL = "missing_kernel"  # no kernel for a node on the EP it was given to (attribute ep: which EP)
    NO_WHEEL = (
        "no_wheel"  # an installer (pip, uv, poetry, pipenv, pdm, conda/mamba) found no onnxruntime build to install
    )
    FP16_OVERFLOW = "fp16_overflow"  # fp16 numbers past 65504, NaN or Inf in a half-precision model
    OTHER_EP_BUILD = "other_ep_build"  # a provider was asked for; this build carries another GPU EP, not that one
    SILENT_FALLBACK = "silent_fallback"  # the session runs on the CPU although a GPU EP was asked for; no reason shown
    SLOW_GPU = "slow_gpu"  # prose: a GPU run is slow or slower than the CPU (evidence: what points at a cause)
    PROVIDER_TYPO = "provider_typo"  # a provider name that is no provider (misspelt), or providers given as a string
    WEB_BACKEND = "web_backend"  # onnxruntime-web/-node: "no available backend found" (evidence: wasm, webgpu, ...)
    PROVIDER_ORDER = "provider_order"  # the CPU provider registered before a GPU one: the GPU EP never gets a node
    NO_GPU_VISIBLE = "no_gpu_visible"  # a container / VM shows the process no NVIDIA GPU (no /dev/nvidia*, no --gpus)
    BROKEN_PACKAGE = "broken_package"  # `import onnxruntime` gives a module without its API (a half-removed install)
    WRAPPER_CHECK = "wrapper_check"  # a wrapper refuses a provider while only the GPU package is installed
    ENV_NOT_INITIALISED = "env_not_initialised"  # a binding used ORT before its environment existed (no logger)
    OP_SHAPE_ERROR = "op_shape_error"  # a node's kernel rejected its data's shape/index; no GPU library in the paste
    MODEL_TOO_NEW = "model_too_new"  # the model's IR version or opset is past what this onnxruntime supports
    DLL_INIT_FAILED = "dll_init_failed"  # a DLL's start-up failed (Windows 1114 / 0x8007045A, in any language)
    SYMBOL_MISMATCH = "symbol_mismatch"  # a CUDA/TensorRT/ORT library lacks a symbol its neighbour needs
    TWO_RUNTIMES = "two_runtimes"  # two copies of the native onnxruntime in one process
    NON_NVIDIA_GPU = "non_nvidia_gpu"  # the CUDA provider used on a GPU that is not NVIDIA's (ZLUDA on AMD, ...)
    DEVICE_NOT_IN_SESSION = "device_not_in_session"  # data bound on a GPU device the session's providers do not use
    PROVIDER_LOAD_FAILED = "provider_load_failed"  # a CUDA/TensorRT provider library did not load; no reason shown
    BENIGN_WARNING = "benign_warning"  # one of ORT's warnings that working runs log, and no error besides it
    ANTICIPATED = "anticipated"  # a class anticipated from ORT's / CUDA's / the loader's own words (evidence: which)
    CPU_INSTRUCTIONS = "cpu_instructions"  # the process died on an instruction the CPU lacks (SIGILL, 0xC000001D)
    CUSTOM_OP_LIBRARY = "custom_op_library"  # ORT could not load a custom-op library registered by path
    OLD_WINDOWS = "old_windows"  # onnxruntime's own library fails to load on a Windows older than 10
    EMPTY_OUTPUT = "empty_output"  # a binding refused to wrap an output with a zero-length dimension
    CUSTOM_OP_UNREGISTERED = "custom_op_unregistered"  # an op of a custom domain with no custom-op library for it
    CUSTOM_OP_API = "custom_op_api"  # a custom-op library asks for a newer ORT API than the runtime has
    SERVING_CONFIG = "serving_config"  # a serving config (Triton config.pbtxt) disagrees with the model


@dataclass(frozen=True)
class Signal:
    """One structural fact, where it was seen, the attributes entries claim it by, and what to tell the user."""

    kind: SignalKind
    line_index: int
    position: int  # offset in Paste.joined
    attributes: Mapping[str, str | int] = field(default_factory=dict)  # matched against entries' claims
    values: Mapping[str, str] = field(default_factory=dict)  # the specifics shown to the user


@dataclass(frozen=True)
class FailingNode:
    """The node ORT names in "Non-zero status code returned while running <op> node. Name:'<node>'"."""

    op: str
    node: str
    line_index: int


def node_values(nodes: tuple[FailingNode, ...], index: int) -> dict[str, str]:
    """The op and node name of the failing node nearest to line ``index`` (a signal's values), or nothing."""
    node = nearest_node(nodes, index)
    return {"op": node.op, "node": node.node} if node is not None else {}


def nearest_node(nodes: tuple[FailingNode, ...], index: int) -> FailingNode | None:
    near = [n for n in nodes if abs(n.line_index - index) <= 3]
    if not near:
        return None
    best = min(abs(n.line_index - index) for n in near)
    return [n for n in near if abs(n.line_index - index) == best][-1]
