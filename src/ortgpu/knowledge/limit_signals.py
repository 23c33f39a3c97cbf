"""Structure in a paste where a run crosses a limit: a kernel's rank, an op's bound, a profile's range, a link step.

Classes, each told by who raises it and what it names, not by one wording:

- `cuda_rank_limit`: the CUDA EP's fixed-capacity shape array (`TArray<T, capacity>::SetSize`, `size <= capacity`)
  refusing a tensor of more dimensions than its kernels support (8): the op runs on the CPU EP only (FM-187).
- `topk_k_exceeds_axis`: TopK's `k argument [k] should not be greater than specified axis dim value [n]`: an input
  with fewer candidates than the k the model fixed (often frozen from the export's sample input) (NG-10).
- `delay_load_module_missing`: the Windows delay-load exception `0xc06d007e` ('Module not found', exit code
  -1066598274) in a .NET/Java/Node host: the binding's native onnxruntime.dll or one of its dependencies is not
  found next to the app (FM-82).
- `rust_binding_link`: the Rust crate's build script (`ort-sys`) that cannot link the ONNX Runtime it was pointed at,
  or its `link_error` placeholder symbol left undefined at link time: a C-level link problem of the build (FM-91).
- `providers_required_cut`: the GPU build's `ValueError: This ORT build has [...` cut before the rest of the
  sentence: a session created without `providers=` (FM-03).
- `symbolic_shape_inference`: ORT's symbolic shape inference tool (`symbolic_shape_infer`, used by the mobile
  usability checker, the transformer optimizer and TensorRT preparation) stopping on a type or op it does not handle:
  a limit of that tool, not of the runtime (FM-188).
- `kernel_launch_invalid_argument`: `CUDA failure 1: invalid argument` with ORT's own `.cu` file named: a kernel's
  launch setup (shared memory, attributes) rejected on this GPU, a kernel bug (FM-80).
- `trt_profile_range`: TensorRT's `profileMaxDims.d[i] >= dimensions.d[i]` (or Min) check: an input outside the
  optimisation profile the engine was built with (FM-73).
- `cuda12_dll_on_cuda11`: a CUDA 12 DLL (`cublasLt64_12.dll`, `cudart64_12.dll`, ...) not found on a host the paste
  says has CUDA 11: a CUDA 12 build on a CUDA 11 host (FM-10).
Every whole-paste scan is gated by a cheap word test first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.evidence import evidence_signal, first_evidence, first_line_match
from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal

__all__ = ["run_limits"]

_RANK_LIMIT = re.compile(
    r"\bTArray<[^\n]{0,120}?>::SetSize\b|\bcuda_utils\.h(?::\d{1,6})?[^\n]{0,300}?\bsize <= capacity\b"
    r"|\bint capacity = 8\b"
)
_TOPK_K = re.compile(r"\bk argument \[\d{1,12}\] should not be greater than specified axis dim value \[\d{1,12}\]")
_DELAY_LOAD = re.compile(r"\b0xc06d007e\b|\bexited with code -1066598274\b", re.IGNORECASE)
_MANAGED_HOST = re.compile(
    r"\bdotnet(?:\.exe)?\b|\.NET\b|\bC#|\bcsharp\b|\bMicrosoft\.ML\.OnnxRuntime\b|\bjava(?:\.exe)?\b|\bnode(?:\.exe)?\b"
    r"|\bonnxruntime\.dll\b",
    re.IGNORECASE,
)
_RUST_LINK = re.compile(
    r"\bort-sys could not link to the ONNX Runtime\b|\bort[-_]sys[-\w.]{0,40}[/\\]src[/\\]link_error\.rs\b"
    r"|\bundefined reference to[^\n]{0,20}\bort_sys\b[^\n]{0,40}\blink_error\b"
    r"|\bort_sys\d?::link_error\b",
    re.IGNORECASE,
)
_PROVIDERS_CUT = re.compile(r"\bValueError: This ORT build has \[")
_SYMBOLIC = re.compile(
    r"\b(?:Type case unsupported|unsupported|not supported|failed|cannot)\b[^\n]{0,80}?\bsymbolic shape inference\b"
    r"|\bsymbolic shape inference\b[^\n]{0,80}?\b(?:failed|fails|unsupported|not supported|error)\b"
    r"|\bIncomplete symbolic shape inference\b",
    re.IGNORECASE,
)
_INVALID_ARGUMENT = re.compile(r"\bCUDA failure 1: invalid argument\b")
_ORT_CU_FILE = re.compile(r"\bfile=[^\n;]{0,300}?\bonnxruntime[/\\][^\n;]{1,300}?\.cu\b")
_TRT_PROFILE = re.compile(r"\bprofile(?:Max|Min)Dims\.d\[i\] [<>]= dimensions\.d\[i\]")
_CUDA12_DLL = re.compile(
    r"\b(?:cublasLt|cublas|cudart|cufft|curand|cusparse|cusolver|nvrtc)64_12\.dll\b[^\n]{0,120}?"
    r"(?:not found|missing|could not|cannot|Could not locate|is not in|make sure)"
    r"|\bCould not (?:locate|load|find) (?:cublasLt|cublas|cudart|cufft|curand|cusparse|cusolver)64_12\.dll\b",
    re.IGNORECASE,
)
_HOST_CUDA11 = re.compile(r"\bCUDA(?:[ _-]?(?:Version|toolkit))?[*:= ]{0,6}v?11\.\d\b", re.IGNORECASE)


def run_limits(paste: Paste) -> Iterator[Signal]:
    """The first line of each limit class the paste shows (see the module's docstring)."""
    low = paste.lowered
    if "tarray" in low or "size <= capacity" in low:
        yield from first_evidence(paste, _RANK_LIMIT, "cuda_rank_limit")
    if "k argument [" in low:
        yield from first_evidence(paste, _TOPK_K, "topk_k_exceeds_axis")
    if ("c06d007e" in low or "-1066598274" in low) and _MANAGED_HOST.search(paste.joined[:200_000]):
        yield from first_evidence(paste, _DELAY_LOAD, "delay_load_module_missing")
    if "ort-sys" in low or "ort_sys" in low:
        yield from first_evidence(paste, _RUST_LINK, "rust_binding_link")
    if "this ort build has [" in low:
        yield from first_evidence(paste, _PROVIDERS_CUT, "providers_required_cut")
    if "symbolic shape inference" in low:
        yield from first_evidence(paste, _SYMBOLIC, "symbolic_shape_inference")
    if "cuda failure 1: invalid argument" in low and ".cu" in low:
        yield from _kernel_launch_invalid_argument(paste)
    if "dimensions.d[i]" in low:
        yield from first_evidence(paste, _TRT_PROFILE, "trt_profile_range")
    if "64_12.dll" in low and "11." in low and _HOST_CUDA11.search(paste.joined[:200_000]):
        yield from first_evidence(paste, _CUDA12_DLL, "cuda12_dll_on_cuda11")


def _kernel_launch_invalid_argument(paste: Paste) -> Iterator[Signal]:
    """`invalid argument` from a CUDA call whose report (this line or the next two) names one of ORT's `.cu` files."""
    hit = first_line_match(paste, _INVALID_ARGUMENT)
    if hit is None:
        return
    index, found = hit
    near = "\n".join(paste.lines[index : index + 3])[:4_000]
    if _ORT_CU_FILE.search(near) is not None:
        yield evidence_signal(paste, index, found.start(), "kernel_launch_invalid_argument")
