"""Structure in a paste: which library is missing, which providers exist, which packages, which cuDNN status and op.

The knowledge base's patterns recognise known phrasings. Signals recognise the shape of a problem whatever the
phrasing: a library name next to any loader failure, a provider list with only the CPU in it, two ORT packages in one
listing, a cuDNN status on a node, a TensorRT build error, fp16 numbers past 65504. Knowledge-base entries claim
signals (the `signals` field of an entry); the matcher turns a claimed signal into a hit for that entry.
Every pattern here is bounded and runs on the bounded lines of a Paste, so extraction stays linear in the paste size.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from ortgpu.knowledge.binding_signals import ort_library_missing
from ortgpu.knowledge.import_signals import broken_import, shadowed_gpu_install
from ortgpu.knowledge.io_kind_signals import trt_probe_only
from ortgpu.knowledge.late_extractors import LATE_EXTRACTORS
from ortgpu.knowledge.listing_signals import listed_distributions
from ortgpu.knowledge.matrix import library_info
from ortgpu.knowledge.model_signals import op_shape_errors, unimplemented_variants
from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.prose_signals import provider_typo, slow_gpu
from ortgpu.knowledge.provider_load_signals import provider_load_unexplained
from ortgpu.knowledge.provider_signals import non_nvidia_gpu, other_ep_build, silent_fallback
from ortgpu.knowledge.runtime_signals import (
    CUDA_ONLY_OPS,
    library_statuses,
    missing_kernels,
    no_wheel,
    rocm_library_statuses,
    trt_logged,
)
from ortgpu.knowledge.setup_signals import no_gpu_visible
from ortgpu.knowledge.signal_kinds import MAX_SIGNALS_PER_KIND, FailingNode, Signal, SignalKind, node_values
from ortgpu.knowledge.statuses import cudnn_name
from ortgpu.knowledge.usage_signals import (
    device_not_in_session,
    installed_packages,
    provider_order,
    two_packages_in_prose,
    web_backend,
)
from ortgpu.knowledge.version_signals import SYMBOL_FAILURE
from ortgpu.knowledge.warning_signals import benign_warnings

__all__ = ["CUDA_ONLY_OPS", "FUSED_OPS", "FailingNode", "Signal", "SignalKind", "extract_signals", "failing_nodes"]

# ORT's fused kernels and the ONNX ops they replace, for errors that name the fused node.
FUSED_OPS: dict[str, str] = {
    "FusedConv": "Conv (fused by ORT with its bias Add and activation)",
    "FusedGemm": "Gemm (fused by ORT with its activation)",
    "FusedMatMul": "MatMul (fused by ORT with a Transpose or a scale)",
    "NhwcConv": "Conv (run by ORT in NHWC layout)",
    "QLinearConv": "Conv (quantized)",
    "BiasGelu": "Add + Gelu (fused by ORT)",
    "FastGelu": "Gelu (fused by ORT)",
    "SkipLayerNormalization": "Add + LayerNormalization (fused by ORT)",
    "SkipSimplifiedLayerNormalization": "Add + RMS normalisation (fused by ORT)",
    "SimplifiedLayerNormalization": "RMS normalisation (fused by ORT)",
    "Attention": "the attention block (fused by ORT)",
    "MultiHeadAttention": "the attention block (fused by ORT)",
    "GroupQueryAttention": "the attention block (fused by ORT)",
}

# ---------------------------------------------------------------- missing libraries

_LIB = r"[\w.+-]{1,120}?\.(?:dll|so(?:\.\d{1,6}){0,4})\b"
_START = r"(?<![\w.+-])"  # a library name starts at a word edge or right after a path separator
# In order of trust: the loader's own "X: cannot open shared object file", Windows' "depends on X which is missing",
# then the wordings of cuDNN, .NET, Java, ctypes and people describing what they saw.
_FAILURE_WORDS = ("cannot", "can't", "could not", "unable", "failed", "missing", "not found", "which is missing")
_LIBRARY_FAILURES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(p, re.IGNORECASE), needs)
    for p, needs in (
        (rf"{_START}(?P<lib>{_LIB})\s{{0,3}}:\s{{0,3}}cannot open shared object file", ("cannot open shared object",)),
        (
            r"depends on \\?[\"']?(?P<lib>[^\"'\s\\/]{1,120}?\.dll)\\?[\"']? which is missing",
            ("which is missing",),
        ),
        (  # prose quoting the loader: "`onnxruntime_providers_cuda.dll` depends on `cublasLt64_13.dll`"
            r"providers_(?:cuda|tensorrt)\.dll[`\"']?\s{0,3}(?:depends|relies) on\s{0,3}"
            r"[`\"']?(?P<lib>[^`\"'\s\\/]{1,120}?\.dll)",
            ("depends on", "relies on"),
        ),
        (r"LoadLibrary\(?\)?\s{0,3}:?\s{0,3}[\"']?(?P<lib>[^\"'\s\\/]{1,120}?\.dll)[\"']? not found", ("not found",)),
        (
            rf"Unable to (?:load|open|dlopen|find)(?: DLL| library| shared library)?:?\s{{0,3}}[\"']?(?P<lib>{_LIB})",
            ("unable to",),
        ),
        (rf"Could not (?:locate|load library|find|load|open)\s{{1,3}}[\"']?(?P<lib>{_LIB})", ("could not",)),
        (rf"(?:cannot|can't|failed to|unable to) (?:load|find|locate|open) [\"']?(?P<lib>{_LIB})", _FAILURE_WORDS),
        (rf"\b(?:missing|without)\s{{1,3}}[`\"']?(?P<lib>{_LIB})", ("missing", "without")),
        (
            rf"{_START}(?P<lib>{_LIB})[\"']?[^\n]{{0,60}}?\b(?:cannot be (?:located|found|loaded)|could not be "
            r"(?:located|found|loaded)|is missing|was not found|not found|is not found)",
            ("cannot be", "could not be", "missing", "not found"),
        ),
    )
)
_LOOSE = frozenset(p for p, _ in _LIBRARY_FAILURES[-2:])  # "missing X", "X ... not found": also said of other things
_ADJACENT = re.compile(
    r"[\"'`:\s]{0,4}(?:is |was |are )?(?:missing|not found|cannot be|could not be|can't be)", re.IGNORECASE
)
_LIBRARY_HINT = re.compile(r"\.so\b|\.so\.\d|\.dll\b", re.IGNORECASE)
# the provider libraries ORT itself loads: named as the loader, never the culprit
_LOADERS = (
    "libonnxruntime_providers_cuda",
    "onnxruntime_providers_cuda",
    "libonnxruntime_providers_tensorrt",
    "onnxruntime_providers_tensorrt",
    "libonnxruntime_providers_rocm",
    "onnxruntime_providers_rocm",
)
_SHARED_PROVIDER = ("libonnxruntime_providers_shared", "onnxruntime_providers_shared")
# a whole name: after a space, quote, path separator, colon, bracket or comma (not inside garbled text)
_LIB_TOKEN = re.compile(rf"(?<![^\s\"'`/\\:{{\[(,=])(?P<lib>{_LIB})", re.IGNORECASE)
# cuDNN 9 and CTranslate2 list every name they tried: "Unable to load any of {libcudnn_ops.so.9.1.0, ...}"
_NAME_LIST = re.compile(
    r"(?:load|find|open|locate)\w{0,3}(?: any of| one of)?\s{0,3}:?\s{0,3}[{\[(](?P<list>[^{}\[\]()\n]{1,800})[}\])]",
    re.IGNORECASE,
)
# Any wording of "this library could not be loaded": with a library name on the same line, the name is the culprit.
_LOADER_FAILURE = re.compile(
    r"cannot open shared object|error while loading shared librar|no such file|\bdlopen|\bdlerror"
    r"|\b(?:cannot|can't|could not|couldn't|unable to|failed to|fail to|not able to) (?:be )?(?:load|find|open|locate)"
    r"|\b(?:not found|is missing|are missing|was not found|were not found|missing)\b"
    r"|\b(?:could not|cannot|can't) be (?:loaded|found|located|opened)",
    re.IGNORECASE,
)


# ORT's main library: a binding that cannot load it is FM-82 (the native library itself), not a dependency of a provider
_MAIN_LIBRARY = re.compile(r"(?:lib)?onnxruntime(?:\.dll|\.dylib|\.so(?:\.\d{1,3}){0,3})?", re.IGNORECASE)


def _culprit(lib: str) -> bool:
    """Whether a library named next to a loader failure can be what is missing (not the provider ORT was loading,
    nor ORT's own main library, whose failure to load is the binding's)."""
    return not lib.lower().startswith(_LOADERS) and not _MAIN_LIBRARY.fullmatch(lib)


def _known(lib: str) -> bool:
    """A library the version matrix knows (CUDA, cuDNN, TensorRT, driver, VC++ runtime, zlib) or ORT's shared
    provider library: only these are claimed from a loose wording, so that an unrelated `.so` in a log is not."""
    info = library_info(lib)
    if lib.lower().startswith(_SHARED_PROVIDER):
        return True
    return info is not None and info.family.value != "ort"


def _missing_libraries(paste: Paste) -> Iterator[Signal]:
    seen: set[str] = set()
    for index, line in enumerate(paste.lines):
        if not _LIBRARY_HINT.search(line) or SYMBOL_FAILURE.search(line):  # found, but a symbol is missing: FM-72
            continue
        for lib, at in _line_culprits(line):
            key = lib.lower()
            if key not in seen:
                seen.add(key)
                yield _library_signal(lib, index, paste.starts[index] + at)


def _line_culprits(line: str) -> list[tuple[str, int]]:
    """The missing libraries one line names, with where: by the trusted wordings first, then a name list after
    "load any of", then any loader-failure wording next to a library the matrix knows."""
    low = line.lower()
    for pattern, needs in _LIBRARY_FAILURES:
        if not any(n in low for n in needs):
            continue
        loose = pattern in _LOOSE
        for m in itertools.islice(pattern.finditer(line), 8):
            lib = m.group("lib").strip("\"'")
            if not _culprit(lib):
                continue
            # a loose wording names an unknown library only when the failure follows the name directly
            if loose and not _known(lib) and not _ADJACENT.match(line, m.end("lib")):
                continue
            return [(lib, m.start("lib"))]
    listed = _NAME_LIST.search(line)
    if listed:
        names = [
            (m.group("lib"), listed.start("list") + m.start("lib")) for m in _LIB_TOKEN.finditer(listed.group("list"))
        ]
        names = [(n, at) for n, at in names[:16] if _culprit(n) and _known(n)]
        if names:  # the most specific name: one that carries a major version
            with_major = [(n, at) for n, at in names if getattr(library_info(n), "major", None) is not None]
            return [(with_major or names)[0]]
    if not _LOADER_FAILURE.search(line):
        return []
    found = []
    for m in itertools.islice(_LIB_TOKEN.finditer(line), 8):
        lib = m.group("lib")
        if _culprit(lib) and _known(lib):
            found.append((lib, m.start("lib")))
    return found[:1]


def _library_signal(lib: str, index: int, position: int) -> Signal:
    info = library_info(lib)
    platform = "windows" if lib.lower().endswith(".dll") else "linux"
    attributes: dict[str, str | int] = {"name": lib.lower(), "platform": platform}
    if info is not None:
        attributes["family"] = info.family.value
        attributes["component"] = info.component
        if info.major is not None:
            attributes["major"] = info.major
    else:
        attributes["family"] = "unknown"
    return Signal(SignalKind.MISSING_LIBRARY, index, position, attributes, {"lib": lib})


# ---------------------------------------------------------------- providers and packages

_PROVIDER_NAME = re.compile(r"(?<![A-Za-z])(\w{2,30}?)ExecutionProvider\b")
_CPU_SIDE = {"CPU", "Azure"}
_LIST = re.compile(r"\[[^\[\]\n]{1,400}\]|'[^'\n]{1,400}'")
# "CUDAExecutionProvider is not available" is what apps print after checking get_available_providers()
_NOT_AVAILABLE = re.compile(
    r"(?:CUDA|Tensorrt)ExecutionProvider['\"]?\s{1,3}(?:is\s{1,3})?not\s{1,3}ava\w{0,5}ble", re.IGNORECASE
)
# an application's own line for "this onnxruntime has no GPU provider" (it checked get_available_providers())
_APP_NO_GPU = re.compile(
    r"(?:doesn't|does not|don't|do not) come with (?:any )?(?:acceleration|gpu|cuda|hardware) providers?"
    r"|\b(?:cuda|gpu|tensorrt|trt)(?: execution)? providers? (?:is |are )?(?:not|un)\s?(?:available|supported|found)"
    r"|\bno (?:gpu|cuda|acceleration|accelerated) (?:execution )?providers? (?:is |are )?(?:available|found|present)"
    r"|\b(?:cuda|gpu) (?:is )?not available[,;:.]? (?:-+ ?)?(?:falling back|fall back|using|switch\w{0,3}|running on)"
    r"(?: to| on)? (?:the )?cpu"
    r"|onnxruntime(?:-gpu)? (?:has|with) no (?:gpu|cuda) (?:support|providers?)"
    r"|onnxruntime (?:is )?(?:the )?cpu[- ]only (?:build|package|version)",
    re.IGNORECASE,
)
# evidence that a GPU provider was there and failed: then "not available" is a consequence, not a CPU build
_GPU_EP_FAILED = re.compile(
    r"failed to create (?:cuda|tensorrt)|failed to load|error loading|ep error|cannot open shared object|which is "
    r"missing|loadlibrary failed|error 126|CUDA failure|CUDNN|CUBLAS",
    re.IGNORECASE,
)
_ORT_CONTEXT = re.compile(r"onnxruntime|\bort\b|ExecutionProvider|\bprovider|onnx", re.IGNORECASE)
_AVAILABILITY = re.compile(r"available|get_available_providers|get_device\(\)", re.IGNORECASE)
_CHOICES = re.compile(r"choose from ((?:'[\w-]{1,30}'(?:, ?)?){1,12})", re.IGNORECASE)
_GPU_CHOICE = re.compile(r"cuda|tensorrt|gpu|rocm|dml|directml|migraphx|openvino", re.IGNORECASE)
_GET_DEVICE_CPU = re.compile(r"get_device\(\)[^\n]{0,80}?['\"]?CPU['\"]?(?!\w)|^['\"]CPU['\"]$")
# "it only shows CPUExecutionProvider", "only ['CPUExecutionProvider'] is listed"
_ONLY_CPU_LISTED = re.compile(
    r"\bonly\b[^\n]{0,30}?\[?['\"]?CPUExecutionProvider\b|\bCPUExecutionProvider['\"]?\]?\s{0,3}(?:is\s)?only\b", re.I
)
# "it only loads ['AzureExecutionProvider', 'CPUExecutionProvider']": a list after "only" that holds no GPU provider
_ONLY_LIST = re.compile(r"\bonly\b[^\n\[]{0,30}?\[(?P<list>[^\[\]\n]{1,300})\]", re.I)
# a GPU flavour the user installed: with only the CPU provider visible, the CPU package shadows it
_GPU_INSTALL = re.compile(
    r"\bpip3?\s{1,3}install\s{1,3}(?:-U\s|--upgrade\s)?(?P<pkg>onnxruntime[-_](?:gpu|directml|openvino|rocm|qnn))\b",
    re.I,
)
_PLAIN_CPU_INSTALL = re.compile(r"pip3? install (?:-U |--upgrade )?onnxruntime(?![\w-])[^\n]{0,120}?\bonly\b", re.I)
_ONLY_CPU = re.compile(r"\bcpu\b", re.IGNORECASE)


def _provider_lists(line: str) -> Iterator[tuple[int, list[str]]]:
    """Each list of provider names in a line (`[...]`, `'A, B'`, or the whole line), with where it starts."""
    found = False
    for m in itertools.islice(_LIST.finditer(line), 8):
        names = _PROVIDER_NAME.findall(m.group(0))
        if names:
            found = True
            yield m.start(), names
    if not found:  # an unquoted list ("Available providers: CPUExecutionProvider, ."): it starts at its first name
        first = _PROVIDER_NAME.search(line)
        if first:
            yield first.start(), _PROVIDER_NAME.findall(line)


def _cpu_only_providers(paste: Paste) -> Iterator[Signal]:
    lines = paste.lines
    app_check = bool(_ORT_CONTEXT.search(paste.joined)) and not _GPU_EP_FAILED.search(paste.joined)
    for index, line in enumerate(lines):
        if app_check:
            m = _APP_NO_GPU.search(line)
            if m:
                app_check = False
                yield Signal(SignalKind.CPU_ONLY_PROVIDERS, index, paste.starts[index] + m.start(), {}, {})
                continue
        if "ExecutionProvider" in line:
            previous = lines[index - 1] if index else ""
            listing_only = line.lstrip()[:1] in "[('\""  # a REPL result line: its context is the line above
            hit = None
            for at, names in _provider_lists(line):
                if not (set(names) <= _CPU_SIDE and "CPU" in names):
                    continue
                context = line[max(0, at - 80) : at + 1]  # what the line says about this list
                if _AVAILABILITY.search(context) or (listing_only and _AVAILABILITY.search(previous)):
                    hit = names
                    break
            if hit is None and _NOT_AVAILABLE.search(line):
                hit = ["CPU"]  # an app's own check: the GPU provider is not among the available ones
            if hit is None and _ONLY_CPU_LISTED.search(line) and set(_PROVIDER_NAME.findall(line)) <= _CPU_SIDE:
                hit = ["CPU"]  # "it only shows CPUExecutionProvider"
            only = _ONLY_LIST.search(line) if hit is None else None
            if only and "CPU" in (listed := _PROVIDER_NAME.findall(only.group("list"))) and set(listed) <= _CPU_SIDE:
                hit = listed  # the list the line says is all there is
            if hit is not None:
                values = {"providers": ", ".join(dict.fromkeys(hit))}
                installed = _GPU_INSTALL.search(paste.joined)
                if installed:
                    values["installed"] = installed.group("pkg").lower().replace("_", "-")
                yield Signal(SignalKind.CPU_ONLY_PROVIDERS, index, paste.starts[index], {}, values)
                continue
        choices = _CHOICES.search(line)
        if choices:
            offered = re.findall(r"'([\w-]{1,30})'", choices.group(1))
            if any(c.lower() == "cpu" for c in offered) and not any(_GPU_CHOICE.search(c) for c in offered):
                yield Signal(
                    SignalKind.CPU_ONLY_PROVIDERS, index, paste.starts[index], {}, {"providers": ", ".join(offered)}
                )
                continue
        if "get_device" in line or line in ("'CPU'", '"CPU"'):
            previous = lines[index - 1] if index else ""
            if _GET_DEVICE_CPU.search(line) and ("get_device" in line or "get_device" in previous):
                yield Signal(SignalKind.CPU_ONLY_PROVIDERS, index, paste.starts[index], {}, {"device": "CPU"})
                continue
        m = _PLAIN_CPU_INSTALL.search(line)
        if m and _ONLY_CPU.search(line, m.end() - 5):
            yield Signal(SignalKind.CPU_ONLY_PROVIDERS, index, paste.starts[index], {}, {"package": "onnxruntime"})


_PACKAGE_LINE = re.compile(
    r"^[\W_]{0,4}(?P<pkg>onnxruntime(?:[-_](?:gpu|directml|openvino|rocm|training|silicon|qnn|cuda))?)"
    r"\s{0,24}(?:==|=|:|-|\s)\s{0,6}v?\d{1,3}\.\d{1,3}",
    re.IGNORECASE,
)
_PIP_INSTALL = re.compile(r"\bpip3?\s{1,3}install\b", re.IGNORECASE)
_PACKAGE_WORD = re.compile(
    r"(?<![\w./\\-])(onnxruntime(?:[-_](?:gpu|directml|openvino|rocm|training|silicon|qnn))?)(?![\w-])", re.I
)
_GPU_FLAVOURS = ("onnxruntime-gpu", "onnxruntime-directml", "onnxruntime-openvino", "onnxruntime-rocm")


# NuGet: Microsoft.ML.OnnxRuntime next to Microsoft.ML.OnnxRuntime.Gpu / .DirectML (both ship onnxruntime.dll)
_NUGET = re.compile(
    r"Microsoft\.ML\.OnnxRuntime(?P<flavour>\.(?:Gpu|DirectML|OpenVino|Training|QNN)(?:\.\w{1,12})?)?(?![\w.])"
)

_NUGET_CONTEXT = re.compile(
    r"PackageReference|Include=|nuget|Install-Package|dotnet add|packages\.config|<package ", re.I
)


def _both_nuget(paste: Paste) -> Iterator[Signal]:
    if "microsoft.ml.onnxruntime" not in paste.lowered:
        return
    seen: dict[str, int] = {}
    for index, line in enumerate(paste.lines):
        if not _NUGET_CONTEXT.search(line):  # a package reference, not a namespace in code or a stack trace
            continue
        for m in itertools.islice(_NUGET.finditer(line), 8):
            seen.setdefault(m.group(0), index)
    plain = "Microsoft.ML.OnnxRuntime"
    gpu = [p for p in seen if p != plain and not p.endswith(("Training", ".Managed"))]
    if plain in seen and gpu:
        yield _packages_signal([plain, *gpu], max(seen[plain], seen[gpu[0]]), paste)


def _both_packages(paste: Paste) -> Iterator[Signal]:
    yield from _both_nuget(paste)
    listed: dict[str, int] = {}
    for index, line in enumerate(paste.lines):
        if "onnx" not in line.lower():
            continue
        m = _PACKAGE_LINE.match(line)
        if m:
            listed.setdefault(m.group("pkg").lower().replace("_", "-"), index)
        for pkg in (*installed_packages(line), *listed_distributions(line)):  # pip show, reports, tables, freeze
            listed.setdefault(pkg, index)
        if _PIP_INSTALL.search(line):
            words = {w.lower().replace("_", "-") for w in _PACKAGE_WORD.findall(line)}
            if "onnxruntime" in words and words & set(_GPU_FLAVOURS):
                yield _packages_signal(sorted(words), index, paste)
                return
    gpu = [p for p in listed if p in _GPU_FLAVOURS]
    if "onnxruntime" in listed and gpu:
        yield _packages_signal(["onnxruntime", *gpu], max(listed["onnxruntime"], listed[gpu[0]]), paste)
        return
    yield from two_packages_in_prose(paste)


def _packages_signal(packages: list[str], index: int, paste: Paste) -> Signal:
    return Signal(SignalKind.BOTH_PACKAGES, index, paste.starts[index], {}, {"packages": ", ".join(packages)})


# "while importing X": an extension that links CUDA itself (onnxruntime_genai's CUDA build) is not ORT's own module
_DLL_LOAD_FAILED = re.compile(r"DLL load failed(?! while importing (?:onnxruntime_genai|\w{0,40}cuda)\b)", re.I)


def _pybind_load_failed(paste: Paste) -> Iterator[Signal]:
    if "onnxruntime" not in paste.lowered or "dll load failed" not in paste.lowered:
        return
    for index, line in enumerate(paste.lines):
        if _DLL_LOAD_FAILED.search(line):
            yield Signal(SignalKind.PYBIND_LOAD_FAILED, index, paste.starts[index])
            return


# ---------------------------------------------------------------- cuDNN statuses and failing nodes

_CUDNN_STATUS = re.compile(
    r"CUDNN(?:_FE)? (?:failure|error|status)\s{0,3}(?:code\s{0,3})?[:=]?\s{0,3}(?P<code>\d{1,6})\b"
    r"(?:\s{0,3}:?\s{0,3}(?P<status>CUDNN_[A-Z_]{3,60}))?"
    r"|(?<![A-Z_])(?P<bare>CUDNN_STATUS_[A-Z_]{3,60})",
    re.IGNORECASE,
)
# cuDNN failing without a status: the frontend, a named cuDNN call, an algorithm search
_CUDNN_CALL = re.compile(
    r"Failed to initiali[sz]e CUDNN Frontend|CUDNN(?:_FE)? error executing (?P<call>\w{1,60})"
    r"|(?P<fn>cudnn(?:Find|Get|Create|Convolution|Backend|Set)\w{0,60})[^\n]{0,200}?\b(?:failed|error|fault)\b",
    re.IGNORECASE,
)
_FAILING_NODE = re.compile(r"while running (?P<op>\w{1,60}) node\.\s{0,3}Name:\s{0,3}'(?P<node>[^'\n]{0,300})'")


def failing_nodes(paste: Paste) -> tuple[FailingNode, ...]:
    """Every node ORT names as failing, innermost last on each line ("If node ... FusedConv node")."""
    found: list[FailingNode] = []
    if "while running" not in paste.joined:
        return ()
    for index, line in enumerate(paste.lines):
        if "while running" in line:
            found.extend(
                FailingNode(m.group("op"), m.group("node"), index)
                for m in itertools.islice(_FAILING_NODE.finditer(line), 8)
            )
    return tuple(found)


def _cudnn_statuses(paste: Paste, nodes: tuple[FailingNode, ...]) -> Iterator[Signal]:
    if "cudnn" not in paste.lowered:
        return
    for index, line in enumerate(paste.lines):
        if "cudnn" not in line.lower():
            continue
        values: dict[str, str] = {"returned_by": "cuDNN"}
        attributes: dict[str, str | int] = {}
        m = _CUDNN_STATUS.search(line)
        if m is not None:
            full = m.group("status") or m.group("bare")
            if full is None:  # a number only: named from cudnnStatus_t
                name = cudnn_name(int(m.group("code")))
                full = f"CUDNN_STATUS_{name}" if name else None
            if full is not None:
                full = full.upper()
                attributes["status"] = re.sub(r"^CUDNN_(?:STATUS_)?", "", full)
                values["status"] = full
            if m.group("code"):
                values["code"] = m.group("code")
            if full is None and not m.group("code"):
                continue
        else:
            m = _CUDNN_CALL.search(line)
            if m is None:
                continue
            call = m.group("call") or m.group("fn")
            if call:
                values["call"] = call
        values.update(node_values(nodes, index))
        yield Signal(SignalKind.CUDNN_STATUS, index, paste.starts[index] + m.start(), attributes, values)
        return


# ---------------------------------------------------------------- TensorRT build errors

_TRT_PROFILE = re.compile(
    r"no optimi[sz]ation profile|shape inputs with associated profiles|no associated shape profiles"
    r"|missing dimensions in profile|dynamic shape inputs? (?:is|are) not provided"
    r"|profile (?:is )?not (?:set|provided)",
    re.IGNORECASE,
)
_TRT_UNSUPPORTED = re.compile(
    r"could not find plugin:? ?(?P<op>\w{1,60})?|no importer registered for op:? ?(?P<op2>\w{1,60})?"
    r"|UNSUPPORTED_NODE|No graph will run on TensorRT|Plugin not found|inputs must not be (?P<dtype>Int32|Int64|Bool)"
    r"|(?:op|operator|layer) (?:type )?(?P<op3>\w{1,60}) (?:is )?not supported",
    re.IGNORECASE,
)


# An error TensorRT itself logged: its severity tag, an "Error Code N" status, a CUDA error inside tactic selection,
# or ORT's TensorRT EP saying it failed.
_TRT_ERROR = re.compile(
    r"(?:^|[\[\s])(?:ERROR|E|INTERNAL_ERROR)\]|\bError Code \d{1,3}\s{0,3}:|Cuda Error in \w{0,60}Tactic"
    r"|\bTensorRT EP\b[^\n]{0,120}?\b(?:failed|error|could not|cannot|unable)\b"
    r"|\[TensorRT EP\][^\n]{0,120}?\b(?:failed|error|could not|cannot|unable)\b"
    r"|\bIBuilder::\w{1,60}: Error Code",
    re.IGNORECASE,
)


# the TensorRT EP refusing one of its options (the engine-decryption library path, an enum value): the option's fault
# (FM-81), not an engine build
_TRT_OPTION = re.compile(
    r"could not open shared library from|decryption|Failed to map enum (?:value|name)|The value for the key '"
    r"|EP option:|format of provider option",
    re.IGNORECASE,
)


def _tensorrt(paste: Paste) -> Iterator[Signal]:
    low = paste.lowered
    # the unsupported-op wordings are TensorRT's only in its context (the text, or the ORT component that logged)
    in_tensorrt = "tensorrt" in low or "trt" in low or any("tensorrt" in o for o in paste.origins)
    profile_done = False
    unsupported_done = not in_tensorrt
    build_done = not in_tensorrt or trt_probe_only(paste)  # the parser probing types: nodes fall back, no build error
    for index, line in enumerate(paste.lines):
        if not build_done and trt_logged(paste, index):
            m = _TRT_ERROR.search(line)
            text = " ".join(paste.lines[index : index + 2])  # TensorRT's message may sit on the logger's next line
            bad = _TRT_PROFILE.search(text) or _TRT_UNSUPPORTED.search(text) or _TRT_OPTION.search(text)
            if m and not bad:
                build_done = True
                yield Signal(
                    SignalKind.TRT_BUILD_ERROR, index, paste.starts[index] + m.start(), {}, {"trt_error": line[:200]}
                )
        if not profile_done:
            m = _TRT_PROFILE.search(line)
            if m:
                profile_done = True
                yield Signal(SignalKind.TRT_PROFILE, index, paste.starts[index] + m.start(), {}, {})
        if not unsupported_done:
            m = _TRT_UNSUPPORTED.search(line)
            if m:
                unsupported_done = True
                op = m.group("op") or m.group("op2") or m.group("op3")
                values = {"op": op} if op else {}
                if m.group("dtype"):
                    values["dtype"] = m.group("dtype")
                yield Signal(SignalKind.TRT_UNSUPPORTED_OP, index, paste.starts[index] + m.start(), {}, values)
        if profile_done and unsupported_done and build_done:
            return


# ---------------------------------------------------------------- fp16 overflow in prose or logs

# ASCII edges, not \b: "转成fp16以后" has no word boundary around fp16 (CJK letters are word characters)
_HALF = re.compile(
    r"(?<![A-Za-z0-9_])(?:fp16|float16|half[- ]precision|mixed[- ]precision|q4f16|f16)(?![A-Za-z0-9_])", re.IGNORECASE
)
_BAD_VALUES = re.compile(
    r"\bnan\b|\binf(?:inity)?\b|overflow|exceed\w*|out of range|65[, ]?504|65[, ]?519"
    # what NaN outputs look like downstream: numpy's cast warning, black / blank / all-zero images
    r"|invalid value encountered"
    # prose: "the fp16 model outputs strange results", "garbage output after converting to fp16"
    r"|\b(?:strange|wrong|weird|garbage|incorrect|meaningless|broken|bad|nonsense)\s"
    r"(?:results?|outputs?|predictions?|values?)"
    r"|\b(?:results?|outputs?|predictions?) (?:is|are|was|were|looks?|becomes?) (?:all )?"
    r"(?:wrong|garbage|strange|weird|nonsense)"
    r"|结果(?:不对|错误|异常|不正确)|输出(?:不对|错误|异常|全是)|おかしい|異常な?(?:結果|出力)|結果が(?:違う|変)"
    r"|\b(?:black|blank|empty|all[- ]zeros?|green|noise) (?:images?|outputs?|pictures?|frames?)"
    r"|\b(?:image|output|result|picture)s? (?:is|are|was|were|comes? out|turns?) (?:all |completely |just )?"
    r"(?:black|blank|zeros?)\b",
    re.IGNORECASE,
)
_BIG_NUMBER = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3}){1,4}|\d{5,12})(?:\.\d+)?(?![\w,])")
_OVERFLOW_OPS = re.compile(  # op names as ONNX writes them, also inside node names ("/norm/ReduceSum_output_0")
    r"(?<![A-Za-z])(ReduceSumSquare|ReduceMean|ReduceSum|ReduceL2|Pow|Softmax|SimplifiedLayerNormalization|"
    r"SkipLayerNormalization|LayerNormalization|Exp|Sqrt|MatMul|Gemm|Erf|Div|InstanceNormalization|GroupNorm)"
    r"(?![a-z])"
)
FP16_MAX = 65504


def _fp16_overflow(paste: Paste) -> Iterator[Signal]:
    if not _HALF.search(paste.joined):
        return
    lines = paste.lines
    for index, line in enumerate(lines):
        if not _HALF.search(line):
            continue
        window = "\n".join(lines[max(0, index - 2) : index + 4])
        if not _BAD_VALUES.search(window):
            continue
        values: dict[str, str] = {}
        big = [
            n
            for n in (int(t.replace(",", "")) for t in _BIG_NUMBER.findall(window)[:20])
            if n > FP16_MAX and n < 10**12
        ]
        if big:
            values["numbers"] = ", ".join(f"{n:,}" for n in big[:3])
        ops = list(dict.fromkeys(_OVERFLOW_OPS.findall(window)))
        if ops:
            values["ops"] = ", ".join(ops[:4])
        yield Signal(SignalKind.FP16_OVERFLOW, index, paste.starts[index], {}, values)
        return


def extract_signals(paste: Paste) -> tuple[Signal, ...]:
    """Every structural signal in a normalised paste, in the order of the extractors, each kind bounded."""
    nodes = failing_nodes(paste)
    extractors = (
        _missing_libraries(paste),
        _cpu_only_providers(paste),
        _both_packages(paste),
        _pybind_load_failed(paste),
        ort_library_missing(paste),
        _cudnn_statuses(paste, nodes),
        library_statuses(paste, nodes),
        rocm_library_statuses(paste, nodes),
        _tensorrt(paste),
        missing_kernels(paste),
        unimplemented_variants(paste),
        no_wheel(paste),
        _fp16_overflow(paste),
        other_ep_build(paste),
        silent_fallback(paste),
        non_nvidia_gpu(paste),
        slow_gpu(paste),
        provider_typo(paste),
        web_backend(paste),
        provider_order(paste),
        device_not_in_session(paste),
        no_gpu_visible(paste),
        op_shape_errors(paste),
        *(extractor(paste) for extractor in LATE_EXTRACTORS),
    )
    found = tuple(s for extractor in extractors for s in itertools.islice(extractor, MAX_SIGNALS_PER_KIND))
    missing = any(s.kind is SignalKind.MISSING_LIBRARY for s in found)
    wrapper = {s.line_index for s in found if s.kind is SignalKind.WRAPPER_CHECK}  # its words name both packages
    found = tuple(s for s in found if not (s.kind is SignalKind.BOTH_PACKAGES and s.line_index in wrapper))
    found += tuple(broken_import(paste, missing)) + tuple(shadowed_gpu_install(paste, found))
    return found + tuple(provider_load_unexplained(paste, found)) + tuple(benign_warnings(paste))
