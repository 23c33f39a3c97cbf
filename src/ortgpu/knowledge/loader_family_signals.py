"""Structure in a paste about loading onnxruntime: the interpreter without it, macOS without libomp, musl's loader.

Each class is decided by the producer's own wording (Python's import system, macOS dyld, musl's dynamic loader, a
linker) plus, where the words alone do not decide, a second kind of evidence in the same paste:

- `No module named 'onnxruntime'`: the interpreter that runs has no onnxruntime at all (another venv, pipx, an
  app's embedded Python), unless the paste uninstalled one onnxruntime distribution or says onnxruntime-gpu is
  the one installed (a shared directory emptied by a package swap, FM-01);
- dyld's `Library not loaded: .../libomp.dylib` for onnxruntime's module: the OpenMP runtime older macOS wheels
  link against is not installed;
- musl's `Error loading shared library X: No such file or directory (needed by .../onnxruntime...)` (glibc says
  `cannot open shared object file`): a glibc build of onnxruntime on a musl system (Alpine);
- a linker's undefined `onnxruntime::...` symbols, or ORT's internal headers (`core/session/...h`) not found: the
  program uses ORT's internal C++ classes, which the shared library does not export;
- the provider bridge failing in a frozen app (Nuitka, PyInstaller, cx_Freeze, py2exe): the bundler left out
  onnxruntime/capi's provider DLLs;
- a CUDA/cuDNN library an application demands while the user runs it in CPU mode (an app's own dependency check);
- a GPU provider listed as available, a session created with no provider argument anywhere in the paste, and the
  run said to use the CPU: a binding (Ruby, C#, Java, Node, C++) appends no GPU provider unless asked (FM-03);
- prose that a CUDA library of one major is absent (`I don't have libcudnn.so.9`) next to a listing (ldconfig, ls,
  dpkg) of the same library in another major only: that library missing, as if the loader had said so.

Every pattern is bounded and runs only on pastes that hold its words (the prefilter of each class).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.binding_data_signals import gpu_package_named
from ortgpu.knowledge.evidence import evidence_signal, first_line_match
from ortgpu.knowledge.matrix import library_info
from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["loader_family"]

_NOT_INSTALLED = re.compile(r"No module named ['\"]?onnxruntime['\"]?(?![\w.-])")
_UNINSTALLED = re.compile(r"\buninstall(?:ed|ing)?\b[^\n]{0,60}?\bonnxruntime", re.IGNORECASE)
_LIBOMP = re.compile(
    r"Library not loaded:\s{0,3}[^\n]{0,200}?\blibomp\.dylib"
    r"|\blibomp\.dylib\b[^\n]{0,80}?\b(?:image not found|no such file|not found)",
    re.IGNORECASE,
)
_MUSL_LOADER = re.compile(
    r"Error loading shared library (?P<lib>[\w.+-]{1,80}):\s{1,8}No such file or directory"
    r"\s{0,8}\(needed by [^)]{0,300}?onnxruntime",
    re.IGNORECASE,
)
_INTERNAL_SYMBOL = re.compile(
    r"(?:undefined reference to|unresolved external symbol)[^\n]{0,80}?"
    r"(?<![\w:])onnxruntime::(?P<symbol>\w{1,60})"
    r"|[\"<](?P<header>core/(?:session|framework|graph|providers|common)/[\w/]{1,80}\.h)[\">][^\n]{0,40}?"
    r"(?:No such file|cannot open|not found)",
    re.IGNORECASE,
)
_FROZEN = re.compile(
    r"\b(?:nuitka|pyinstaller|cx_freeze|cx-freeze|py2exe|auto-py-to-exe)\b|--(?:standalone|onefile)\b|_MEIPASS",
    re.IGNORECASE,
)
_BRIDGE = re.compile(
    r"Init provider bridge failed|ProviderSharedLibrary::Ensure|onnxruntime_providers_shared", re.IGNORECASE
)
_GPU_LIBRARY_MISSING = re.compile(
    r"(?:cannot|can't|could not|couldn't|unable to) (?:locate|find|load|open)[^\n]{0,60}?"
    r"\b(?P<lib>(?:lib)?(?:cudnn|cublas(?:Lt)?|cudart|cufft|curand|nvinfer)[\w.]{0,20}\.(?:dll|so[\d.]{0,12}))"
    r"|\b(?P<lib2>(?:lib)?(?:cudnn|cublas(?:Lt)?|cudart|cufft|curand|nvinfer)[\w.]{0,20}\.(?:dll|so[\d.]{0,12}))"
    r"[^\n]{0,40}?\b(?:is missing|was not found|not found|could not be found)",
    re.IGNORECASE,
)
_CPU_MODE = re.compile(
    r"\bcpu(?: processing)? mode\b|\bwithout (?:an? )?(?:cuda[- ](?:compatible|capable) |nvidia |cuda )?gpu\b"
    r"|\b(?:run|running|use|using|test)(?: it)? (?:on|with) (?:the )?cpu only\b",
    re.IGNORECASE,
)


_GPU_AVAILABLE = re.compile(
    r"\[[^\]\n]{0,200}?['\"](?:CUDA|Tensorrt|Dml|ROCM)ExecutionProvider['\"][^\]\n]{0,200}\]"
    r"|\b(?:CUDA|Tensorrt|Dml|ROCM)ExecutionProvider\b[`'\"]? (?:is|was|shows(?: up)?(?: as)?)"
    r" (?:listed|available|there)",
    re.IGNORECASE,
)
_RUNS_ON_CPU = re.compile(
    r"\b(?:only|still|just) (?:using|uses|used|runs?|running|ran|computes?|computing)(?: on)?(?: the)? cpu\b"
    r"|\b(?:using|uses|runs? on|running on) (?:the )?cpu only\b|\bgpu (?:is )?(?:not|never) (?:being )?used\b"
    r"|\bnot (?:using|use) (?:the |my )?gpu\b",
    re.IGNORECASE,
)
_SESSION_CREATED = re.compile(
    r"\bInferenceSession(?:\.new|\.create)?\s{0,2}[(\s]|\bnew OrtSession\b|\bcreateSession\s{0,2}\("
    r"|\bOrt::Session\s{0,2}\w{0,40}\s{0,2}[({]|\bSession::builder\b",
)
# any way a paste passes a provider to a session, in any binding
_PROVIDER_PASSED = re.compile(
    r"\bproviders\s{0,2}[:=]|\bexecutionProviders\b|append_?execution_?provider|\baddCUDA|with_execution_providers"
    r"|\bproviders\s{0,2}\(\s{0,2}\[|failed to create \w{0,20}executionprovider|\bprovider_options\b",
    re.IGNORECASE,
)


_LIB = r"(?:lib(?:cudnn|cublas(?:Lt)?|cudart|cufft|curand|nvinfer)\w{0,20}\.so\.\d{1,2})"
_SAID_ABSENT = re.compile(
    rf"\b(?:not having|(?:do not|don't|doesn't|does not|didn't) have|no|missing|without|lack(?:ing|s)?)\s"
    rf"(?:a |any |the )?[`'\"]?(?P<lib>{_LIB})(?!\.?\d)",
    re.IGNORECASE,
)
_LISTED_MAJOR = re.compile(
    r"\b(?P<stem>lib(?:cudnn|cublas(?:Lt)?|cudart|cufft|curand|nvinfer))\w{0,20}\.so\.(?P<major>\d{1,2})\b"
)


def _said_absent(paste: Paste) -> Iterator[Signal]:
    """A library said to be absent in prose while a listing shows the same library only in another major."""
    hit = first_line_match(paste, _SAID_ABSENT)
    if hit is None:
        return
    lib = hit[1].group("lib")
    stem, _, major = lib.lower().partition(".so.")
    stem = re.sub(r"_\w{0,20}$", "", stem)  # libcudnn_ops_infer -> libcudnn
    said = paste.starts[hit[0]] + hit[1].start("lib")  # the absent library's own mention is no listing
    found = _LISTED_MAJOR.finditer(paste.joined[:200_000])
    listed = {m.group("major") for m in found if m.group("stem").lower() == stem and m.start() != said}
    if not listed or major in listed:
        return
    info = library_info(lib)
    if info is None:
        return
    attributes: dict[str, str | int] = {"name": lib.lower(), "platform": "linux", "family": info.family.value}
    attributes["component"] = info.component
    if info.major is not None:
        attributes["major"] = info.major
    yield Signal(SignalKind.MISSING_LIBRARY, hit[0], said, attributes, {"lib": lib})


def loader_family(paste: Paste) -> Iterator[Signal]:
    """The loader-family classes above, each at the first line that shows it."""
    low = paste.lowered
    uninstalled = _UNINSTALLED.search(paste.joined[:200_000]) is not None
    if "no module named" in low and not uninstalled and not gpu_package_named(paste):
        hit = first_line_match(paste, _NOT_INSTALLED)
        if hit is not None:
            yield evidence_signal(paste, hit[0], hit[1].start(), "not_installed", {"message": hit[1].group(0)})
    if "libomp" in low:
        hit = first_line_match(paste, _LIBOMP)
        if hit is not None:
            yield evidence_signal(paste, hit[0], hit[1].start(), "libomp", {"message": hit[1].group(0)})
    if "error loading shared library" in low and "needed by" in low:
        found = _MUSL_LOADER.search(paste.joined[:200_000])  # a console may wrap its one line
        if found is not None:
            index = paste.line_index(found.start())
            values = {"lib": found.group("lib")}
            yield evidence_signal(paste, index, found.start() - paste.starts[index], "musl_loader", values)
    if "onnxruntime::" in low or "core/" in low:
        hit = first_line_match(paste, _INTERNAL_SYMBOL)
        if hit is not None:
            symbol = hit[1].group("symbol") or hit[1].group("header")
            yield evidence_signal(paste, hit[0], hit[1].start(), "internal_api", {"symbol": symbol})
    if ("bridge" in low or "providers_shared" in low) and _FROZEN.search(paste.joined[:200_000]):
        hit = first_line_match(paste, _BRIDGE)
        if hit is not None:
            yield evidence_signal(paste, hit[0], hit[1].start(), "frozen_bridge", {"message": hit[1].group(0)})
    if "cpu" in low and _CPU_MODE.search(paste.joined[:200_000]):
        hit = first_line_match(paste, _GPU_LIBRARY_MISSING)
        if hit is not None:
            lib = hit[1].group("lib") or hit[1].group("lib2")
            yield evidence_signal(paste, hit[0], hit[1].start(), "cpu_mode_gpu_libs", {"lib": lib})
    if "executionprovider" in low and "cpu" in low:
        yield from _providers_not_passed(paste)
    if ".so." in low:
        yield from _said_absent(paste)


def _providers_not_passed(paste: Paste) -> Iterator[Signal]:
    text = paste.joined[:200_000]
    if _PROVIDER_PASSED.search(text) or not _GPU_AVAILABLE.search(text) or not _RUNS_ON_CPU.search(text):
        return
    hit = first_line_match(paste, _SESSION_CREATED)
    if hit is not None:
        yield evidence_signal(paste, hit[0], hit[1].start(), "providers_not_passed", {"call": hit[1].group(0).strip()})
