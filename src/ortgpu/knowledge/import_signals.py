"""Structure in a paste: what `import onnxruntime` gave back (a module without its API, a device that says CPU).

Three shapes recur whatever the transcript looks like (a script, `>>>`, `In [1]:`/`Out[1]:`, a notebook's `!pip`,
prose): the package directory holds no working native module (`cannot import name 'RunOptions' from
'onnxruntime.capi._pybind_state'`, `module 'onnxruntime' has no attribute 'InferenceSession'`), decided by the
platform the paste shows; `get_device()` answers CPU after a GPU package or a `[gpu]` extra was installed (the CPU
package shadows it); a wrapper (optimum, ...) refuses a provider while the paste lists only the GPU package.
Bounded patterns on the bounded lines of a Paste, as in knowledge/signals.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.capability_signals import names_a_newer_binding
from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["broken_import", "device_says_cpu", "env_not_initialised", "shadowed_gpu_install", "wrapper_check"]

# the native module's names missing from the package: `_pybind_state` imported nothing (its load failed quietly)
_NO_NAME = re.compile(
    r"cannot import name ['\"]?(?P<name>\w{1,60})['\"]?(?: from ['\"]?onnxruntime(?:\.capi(?:\.[\w]{1,40})?)?['\"]?)?",
    re.IGNORECASE,
)
_NO_ATTRIBUTE = re.compile(r"module ['\"]onnxruntime['\"] has no attribute\b(?: ['\"]?(?P<name>\w{0,60}))?")
_WINDOWS = re.compile(
    r"\b[A-Z]:\\|\.dll\b|\bwindows\b|\bwin(?:10|11|32|64)\b|WinError|\bVC\+\+|\bVC runtime|visual c\+\+|msvc"
    r"|\bconda\\|\\site-packages",
    re.IGNORECASE,
)
_POSIX = re.compile(
    r"(?:^|[\s\"'(])(?:/usr/|/home/|/opt/|/root/|~/|/Users/|/content/|/workspace/)|\.so\b|\blinux\b|\bubuntu\b"
    r"|\bdebian\b|\bcentos\b|\bmacos\b|\bdarwin\b|\bjetson\b|dist-packages",
    re.IGNORECASE,
)


# one onnxruntime distribution swapped for another right before the import broke (both own the same `onnxruntime`
# directory, so removing or overwriting one leaves it half-replaced): "changed onnxruntime to onnxruntime-gpu", "replace
# onnxruntime-gpu with onnxruntime-directml", or an uninstall of one next to an install of another
_DIST = r"onnxruntime(?:[-_](?:gpu|directml|rocm|openvino|silicon|training|qnn)(?:[-_]cu\d{2,3})?)?(?![-_\w])"
_SWAP = re.compile(
    rf"\b(?:chang|switch|swapp?|replac|mov|went|migrat|upgrad)\w{{0,4}}\b[^\n]{{0,40}}?\b(?P<a>{_DIST})[`'\"]?"
    rf"[^\n]{{0,24}}?\b(?:to|with|by|for|into)\b[^\n]{{0,12}}?\b(?P<b>{_DIST})",
    re.IGNORECASE,
)
_UNINSTALL = re.compile(
    rf"\b(?:pip3?|uv pip|conda|mamba)\s{{1,3}}(?:uninstall|remove)\b[^\n]{{0,40}}?\b(?P<a>{_DIST})", re.I
)
_INSTALL = re.compile(rf"\b(?:pip3?|uv pip|conda|mamba)\s{{1,3}}install\b[^\n]{{0,60}}?\b(?P<b>{_DIST})", re.I)


def _swapped(paste: Paste) -> bool:
    """The paste swaps one onnxruntime distribution for another (in prose or in installer commands)."""
    text = paste.joined[:200_000]
    for m in _SWAP.finditer(text):
        if m.group("a").lower().replace("_", "-") != m.group("b").lower().replace("_", "-"):
            return True
    removed = {m.group("a").lower().replace("_", "-") for m in _UNINSTALL.finditer(text)}
    added = {m.group("b").lower().replace("_", "-") for m in _INSTALL.finditer(text)}
    return bool(removed and added and added - removed)


def _platform(paste: Paste) -> str:
    text = paste.joined[:200_000]
    windows = paste.frame_paths == "windows" or _WINDOWS.search(text)
    posix = paste.frame_paths == "posix" or _POSIX.search(text)
    if windows and not posix:
        return "windows"
    if posix and not windows:
        return "linux"
    return "unknown"


def broken_import(paste: Paste, missing_library: bool) -> Iterator[Signal]:
    """`import onnxruntime` without its API: Windows (or no platform shown) is the native module's load
    (FM-28's pybind signal); Linux/macOS with no library named as missing, or any platform right after one
    distribution was swapped for another, is a broken or mixed install."""
    if "onnxruntime" not in paste.lowered:
        return
    for index, line in enumerate(paste.lines):
        attribute = _NO_ATTRIBUTE.search(line)
        if attribute:
            values = {"name": attribute.group("name") or "?", "platform": _platform(paste)}
            yield Signal(SignalKind.BROKEN_PACKAGE, index, paste.starts[index] + attribute.start(), {}, values)
            return
        m = _NO_NAME.search(line)
        if m is None or not (
            (" from " not in line[m.start() :] and _ort_import_near(paste, index)) or "onnxruntime" in line
        ):
            continue
        platform = _platform(paste)
        values = {"name": m.group("name"), "platform": platform}
        if platform == "linux" and _JETSON.search(paste.joined[:200_000]) and not _swapped(paste):
            return  # a Jetson wheel is a GPU build bound to its JetPack's CUDA libraries: their load, not a mix
        if platform == "linux" or (not missing_library and (_swapped(paste) or _several_versions(paste))):
            if not missing_library:
                yield Signal(SignalKind.BROKEN_PACKAGE, index, paste.starts[index] + m.start(), {}, values)
            return
        if names_a_newer_binding(paste, line):
            return  # the module loaded and lacks a newer name: two installs over each other (capability_signals)
        yield Signal(SignalKind.PYBIND_LOAD_FAILED, index, paste.starts[index] + m.start(), {}, values)
        return


# several onnxruntime versions installed over each other ("onnxruntime==1.20.0", "onnxruntime==1.21.0"): the Python
# files of one release next to the native module of another, so a name the newer release added is missing
_PINNED = re.compile(r"\bonnxruntime(?:[-_]gpu)?\s{0,2}==\s{0,2}v?(?P<version>\d{1,3}\.\d{1,3}(?:\.\d{1,3})?)", re.I)


_JETSON = re.compile(r"\b(?:jetson|l4t|jetpack)\b", re.IGNORECASE)


def _several_versions(paste: Paste) -> bool:
    """The paste installs two or more different versions of onnxruntime (one over the other)."""
    if "==" not in paste.joined:
        return False
    return len({m.group("version") for m in _PINNED.finditer(paste.joined[:200_000])}) >= 2


def _ort_import_near(paste: Paste, index: int) -> bool:
    return any("onnxruntime" in paste.lines[i] for i in range(max(0, index - 4), index))


# `get_device()` and its answer, in any transcript shape: same line, a `>>>` / `Out[n]:` line after it, or prose
_GET_DEVICE = re.compile(r"get_device\s{0,2}\(\s{0,2}\)")
_CPU_ANSWER = re.compile(
    r"^\s{0,8}(?:Out\[\d{1,4}\]:\s{0,3})?['\"]?CPU['\"]?\s{0,3}$"
    r"|\b(?:returns?|returned|returning|gives?|gave|prints?|printed|shows?|showed|outputs?|says?|said|is|still)"
    r"\s{1,3}(?:me\s{1,3}|only\s{1,3}|just\s{1,3})?[\"'`“]{0,2}CPU\b",
    re.IGNORECASE,
)


def device_says_cpu(paste: Paste) -> Iterator[Signal]:
    """`onnxruntime.get_device()` answering CPU within a few lines of the call (a REPL, a notebook, prose)."""
    if "get_device" not in paste.joined:
        return
    for index, line in enumerate(paste.lines):
        if not _GET_DEVICE.search(line):
            continue
        for j in range(index, min(len(paste.lines), index + 5)):
            text = line[line.index("get_device") :] if j == index else paste.lines[j]
            if _CPU_ANSWER.search(text) and "GPU" not in text:
                yield Signal(SignalKind.CPU_ONLY_PROVIDERS, j, paste.starts[j], {}, {"device": "CPU"})
                return


# a GPU build the user installed: a GPU flavour, a `[gpu]`/`[cuda]` extra, a listing line of onnxruntime-gpu
_GPU_INSTALLED = re.compile(
    r"\b(?:pip3?|uv pip|poetry|uv)\s{1,3}(?:install|add)\b[^\n]{0,160}?(?:onnxruntime[-_](?:gpu|directml|rocm)"
    r"|\[[\w,\s-]{0,40}\b(?:gpu|cuda)\b[\w,\s-]{0,40}\])"
    r"|^\s{0,8}(?:Name:\s{0,3})?onnxruntime[-_]gpu\s{0,24}(?:\d|$)"
    r"|\binstall(?:ed|ing)?\s{1,3}(?:the\s{1,3})?`?onnxruntime[-_]gpu\b",
    re.IGNORECASE | re.MULTILINE,
)


_GPU_NAME = re.compile(r"onnxruntime[-_](?:gpu|directml|rocm)", re.IGNORECASE)


def shadowed_gpu_install(paste: Paste, signals: tuple[Signal, ...]) -> Iterator[Signal]:
    """The CPU-only provider set next to a GPU build the paste installed: a GPU wheel always lists its GPU EP, so
    the module answering is the CPU package's (installed too, or pulled in by a dependency)."""
    cpu = [s for s in signals if s.kind is SignalKind.CPU_ONLY_PROVIDERS]
    if not cpu or any(s.kind is SignalKind.BOTH_PACKAGES for s in signals):
        return
    installed = _GPU_INSTALLED.search(paste.joined[:200_000])
    if installed:
        named = _GPU_NAME.search(installed.group(0))
        gpu = named.group(0).lower().replace("_", "-") if named else "the GPU build of the [gpu] extra"
        values = {"packages": f"onnxruntime (the CPU package, which shadows {gpu}) and {gpu}"}
        yield Signal(SignalKind.BOTH_PACKAGES, cpu[0].line_index, cpu[0].position, {}, values)


# a wrapper's own provider check (optimum reads onnxruntime's _ld_preload.py; others their own lists)
_WRAPPER_REFUSAL = re.compile(
    r"(?P<loaded>`?onnxruntime-gpu`? is installed, but GPU dependencies are not loaded)"
    r"|Asked to use (?P<ep>\w{2,30}ExecutionProvider), but `?onnxr",
    re.IGNORECASE,
)
_CPU_PACKAGE_LISTED = re.compile(r"^[\W_]{0,4}(?:Name:\s{0,3})?onnxruntime(?:\s{1,24}|==)v?\d{1,3}\.\d", re.I | re.M)
_GPU_PACKAGE_LISTED = re.compile(
    r"^[\W_]{0,4}(?:Name:\s{0,3})?onnxruntime-gpu(?:\s{1,24}|==)v?\d{1,3}\.\d", re.I | re.M
)

_GPU_PROVIDER_LISTED = re.compile(
    r"\[[^\]\n]{0,200}?['\"](?P<ep>CUDA|Tensorrt|ROCM|Dml)ExecutionProvider['\"][^\]\n]{0,200}\]"
    r"|get_device\(\)[^\n]{0,20}\n?[^\n]{0,20}?['\"`]GPU['\"`]",
    re.IGNORECASE,
)
_WRAPPER_DENIAL = re.compile(
    r"\b(?:onnx ?runtime|ort)\b[`'\"]?\s{1,3}(?:is |was )?not (?:installed|available|found|detected)"
    r"|\bwants? (?:me )?to install[^\n]{0,40}?\bonnxruntime\b(?![-_])"
    r"|\bplease install[`'\"\s]{1,4}onnxruntime[`'\"]?(?![-_\w])"
    r"|(?<![\w.])requires (?:the )?[`'\"]?onnxruntime[`'\"]?(?![-_\w])(?! ?[<>=])",  # prose, not Ruby's `require "x"`
    re.IGNORECASE,
)


def wrapper_check(paste: Paste) -> Iterator[Signal]:
    """A wrapper refusing a GPU provider while the paste shows no CPU package next to the GPU one."""
    if "onnxr" not in paste.lowered or _CPU_PACKAGE_LISTED.search(paste.joined[:200_000]):
        return
    for index, line in enumerate(paste.lines):
        m = _WRAPPER_REFUSAL.search(line)
        if m and m.group("loaded") and not _GPU_PACKAGE_LISTED.search(paste.joined[:200_000]):
            return  # optimum's "conflicting install" with no listing: the two packages (FM-01) stay the reading
        if m and "available execution providers are" not in line:
            values = {"provider": m.group("ep") or "CUDAExecutionProvider"}
            yield Signal(SignalKind.WRAPPER_CHECK, index, paste.starts[index] + m.start(), {}, values)
            return
    # onnxruntime itself lists a GPU provider (or get_device() says GPU), yet a wrapper says onnxruntime is missing or
    # asks for the CPU package: the wrapper's test (a distribution name, a file) misfires on a working GPU install
    listed = _GPU_PROVIDER_LISTED.search(paste.joined[:200_000])
    if listed is None:
        return
    for index, line in enumerate(paste.lines):
        m = _WRAPPER_DENIAL.search(line)
        if m:
            values = {"provider": listed.group("ep") or "CUDAExecutionProvider"}
            yield Signal(SignalKind.WRAPPER_CHECK, index, paste.starts[index] + m.start(), {}, values)
            return


_DEFAULT_LOGGER = re.compile(r"Attempt to use DefaultLogger but none has been registered")
_LOGGER_FRAME = re.compile(
    r"^\s{0,8}(?:#|frame\s{0,2}#)?(?P<n>\d{1,2})?\b[^\n]{0,160}?\bonnxruntime::logging::"
    r"(?P<fn>LoggingManager::(?:Log|DefaultLogger|SendProfileEvent)|Capture::~Capture|Logger::Log)\b"
)
_CRASHED = re.compile(
    r"Segmentation fault|SIGSEGV|SIGABRT|Access violation|\bcore dumped\b|0xC0000005|exit(?:ed)? (?:with )?code 139"
    r"|\bcrash(?:es|ed|ing)?\b",
    re.IGNORECASE,
)
_DOTNET = re.compile(r"Microsoft\.ML\.OnnxRuntime|MakeSessionOption|\[ErrorCode:", re.IGNORECASE)


def env_not_initialised(paste: Paste) -> Iterator[Signal]:
    """ORT's "no default logger": a binding (Rust `ort`, C/C++) called ORT before it created its environment.
    .NET's CUDA-provider form of the same text is the provider library failing to load (FM-79), left to it."""
    if "logg" not in paste.lowered or _DOTNET.search(paste.joined[:200_000]):
        return
    for index, line in enumerate(paste.lines):
        m = _DEFAULT_LOGGER.search(line)
        if m:
            yield Signal(SignalKind.ENV_NOT_INITIALISED, index, paste.starts[index] + m.start(), {}, {})
            return
    # a crash whose innermost frames are ORT's logging manager: it logged through an environment already destroyed
    # (an Ort::Env in an inner scope, a static torn down first) or never created
    if "loggingmanager" not in paste.lowered and "capture::~capture" not in paste.lowered:
        return
    crashed = bool(_CRASHED.search(paste.joined[:200_000]))
    for index, line in enumerate(paste.lines):
        m = _LOGGER_FRAME.search(line)
        if m and (crashed or int(m.group("n") or 9) <= 3):
            yield Signal(
                SignalKind.ENV_NOT_INITIALISED,
                index,
                paste.starts[index] + m.start(),
                {},
                {"crashed in": f"onnxruntime::logging::{m.group('fn')}"},
            )
            return
