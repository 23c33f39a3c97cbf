"""Structure in a paste: versions that do not fit together (a model newer than the runtime, two builds in one process).

Four shapes, whatever the wording or the language of the message:
- a model written by a newer converter than the installed onnxruntime reads: its IR version (NG-06) or an opset /
  domain version (NG-07) past what this build knows, in any of the words ORT's releases and bindings print;
- a DLL whose own start-up code failed (Windows error 1114, HRESULT 0x8007045A, or the system's localised phrase
  "DLL initialization routine failed") while a CUDA build was being imported: FM-78, decided by the error's kind,
  not by the module's name;
- a GPU or ORT library with a symbol its neighbour does not export ("undefined symbol", "symbol lookup error",
  "The procedure entry point X could not be located in ... cublas64_12.dll"): two releases mixed (FM-72), not a
  missing library;
- two copies of the native onnxruntime in one process (a second onnxruntime-node brought by a dependency, two wheels,
  another library's libonnxruntime): ORT's process-wide environment torn down by the other copy (OrtEnv::Release).
Bounded patterns on the bounded lines of a Paste, as in knowledge/signals.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.shutdown_signals import released_at_shutdown
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["SYMBOL_FAILURE", "dll_init_failed", "model_too_new", "symbol_mismatch", "two_runtimes"]

# ---------------------------------------------------------------- a model newer than the runtime

_IR_TOO_NEW = re.compile(
    r"Unknown model file format version|Unsupported model IR version|max(?:imum)? supported IR version"
    r"|\bIR[ _]?version\b[^\n]{0,80}?\b(?:not supported|unsupported|is too new|too high|higher than|newer than"
    r"|greater than)",
    re.IGNORECASE,
)
_OPSET_TOO_NEW = re.compile(
    r"\bOpset \d{1,3} is under development|only \*?guarantees\*? support for models stamped"
    r"|Current official support for domain [\w.]{0,40} is till opset"
    r"|\b(?:opset|domain[ _]version|opset[ _]version)\b[^\n]{0,80}?\b(?:is not supported by this version|not supported"
    r"|unsupported|is too new|too high|higher than|newer than|greater than|exceeds|past the)"
    r"|\bUnsupported (?:ONNX )?opset\b|\bonly supports? (?:ONNX )?opset(?:s| versions?)? (?:up to|<=|until|till)"
    r"|is not supported by this version of (?:ORT|onnx ?runtime)",
    re.IGNORECASE,
)

# ORT's warning about a model stamped with a LEGACY opset (below 7): the opset complaints that follow it ("Transpose
# optimizer failed: Unsupported ONNX opset") are about an old model, which still runs; not a model too new
_OPSET_TOO_OLD = re.compile(
    r"stamped with opset version \d{1,3} or above|Please upgrade your model to opset \d{1,3} or higher"
    r"|this opset \d{1,3} model may run depending upon legacy support",
    re.IGNORECASE,
)


def model_too_new(paste: Paste) -> Iterator[Signal]:
    """The first line where the runtime says the model's IR version or opset is past what it supports."""
    low = paste.lowered
    if "version" not in low and "opset" not in low:
        return
    old = "legacy" in low or "upgrade your model" in low or "or above" in low
    patterns: tuple[tuple[str, re.Pattern[str]], ...] = (("ir", _IR_TOO_NEW), ("opset", _OPSET_TOO_NEW))
    if old and _OPSET_TOO_OLD.search(paste.joined[:200_000]):
        patterns = patterns[:1]
    for index, line in enumerate(paste.lines):
        for what, pattern in patterns:
            m = pattern.search(line)
            if m is not None and not _GPU_WORDS.search(line[max(0, m.start() - 80) : m.end()]):
                attributes: dict[str, str | int] = {"component": what}
                yield Signal(SignalKind.MODEL_TOO_NEW, index, paste.starts[index] + m.start(), attributes, {})
                return


# a GPU library's version, in the match or just before it ("CUDA version 12 is not supported"), is not the model's
_GPU_WORDS = re.compile(r"cuda|cudnn|tensorrt|driver|compute capability|\bsm_?\d", re.IGNORECASE)

# ---------------------------------------------------------------- a DLL's start-up failed (error 1114)

# the number, the HRESULT, or "DLL initialization routine failed" in the system's language: "(DLL)" or "DLL" next to
# the word for initialisation (English, German, French, Spanish, Portuguese, Italian, Russian, Chinese, Japanese,
# Korean, Polish, Turkish)
_DLL_INIT = re.compile(
    r"\b(?:WinError|error|error code|Win32 error|errno)\s{0,3}:?\s{0,3}\[?1114\b|0x8007045A|\bERROR_DLL_INIT_FAILED"
    r"|DLL\)?[^\n]{0,60}?(?:initiali[sz]ation|Initialisierung|inicializ|inizializz|инициализ|初始化|初期化|초기화"
    r"|inicjaliz|başlatma)"
    r"|(?:initiali[sz]ation|Initialisierungs|inicializ|inizializz|инициализ|初始化|初期化|초기화)[^\n]{0,60}?\bDLL\b",
    re.IGNORECASE,
)
# the import or load was of a CUDA build: the CUDA toolkit, a CUDA provider, a GPU package or genai's CUDA flavour
_CUDA_BUILD = re.compile(
    r"\bcuda|cudnn|cublas|providers_cuda|onnxruntime[-_]gpu|onnxruntime[-_]genai[-_]cuda|\bnvidia\b",
    re.IGNORECASE,
)


# onnxruntime-genai's import fallback says this whatever failed to import: no evidence of a CUDA build
_GENAI_CUDA_PATH_HINT = re.compile(r"Could not find the CUDA libraries\. Please set the CUDA_PATH environment variable")


# the binding's own onnxruntime.dll failing its start-up is the binding's load (FM-82), not a CUDA build's import
_ORT_MAIN_DLL = re.compile(r"(?<![\w-])onnxruntime\.dll\b|['\"]onnxruntime['\"]", re.IGNORECASE)


def dll_init_failed(paste: Paste) -> Iterator[Signal]:
    """A DLL found but failing in its own start-up (error 1114 in any form); evidence "cuda" when a CUDA build is what
    was being imported or loaded (then FM-78's driver/CUDA/conflicting-DLL causes; otherwise FM-28's runtime)."""
    if "dll" not in paste.lowered and "1114" not in paste.joined and "045a" not in paste.lowered:
        return
    for index, line in enumerate(paste.lines):
        m = _DLL_INIT.search(line)
        if m is None or _ORT_MAIN_DLL.search(line):
            continue
        text = _GENAI_CUDA_PATH_HINT.sub("", paste.joined[:200_000])
        evidence = "cuda" if _CUDA_BUILD.search(text) else "none"
        yield Signal(SignalKind.DLL_INIT_FAILED, index, paste.starts[index] + m.start(), {"evidence": evidence}, {})
        return


# ---------------------------------------------------------------- a symbol one library lacks: two releases mixed

SYMBOL_FAILURE = re.compile(
    r"undefined symbol\s{0,3}:?|symbol lookup error|cannot find symbol|could not find symbol|symbol not found"
    r"|procedure entry point [^\n]{1,200}? could not be located|entry point not found",
    re.IGNORECASE,
)
# the libraries whose mismatch is this entry's: the CUDA stack, TensorRT, ORT itself (a Windows system DLL is FM-93's)
_STACK_LIB = re.compile(
    r"(?P<lib>(?:lib)?(?:nvinfer\w{0,20}|nvonnxparser|nvparsers|cudnn\w{0,20}|cublas\w{0,6}|cudart|nvrtc\w{0,10}"
    r"|cufft\w{0,4}|curand|cusparse\w{0,4}|cusolver\w{0,4}|nvjitlink|onnxruntime\w{0,40})"
    r"(?:\.so(?:\.\d{1,6}){0,4}|\d{0,3}(?:_\d{1,3}){0,2}\.dll|\.dylib))",
    re.IGNORECASE,
)

# functions every release of their CUDA library has had: missing from the process, they mean the library that exports
# them was never loaded (a provider library built without linking it: a distro or self-built package), not a mix
_BASE_SYMBOL = re.compile(
    r"undefined symbol\s{0,3}:?\s{0,3}(?P<symbol>nvrtc(?:CreateProgram|DestroyProgram|CompileProgram|GetPTX(?:Size)?"
    r"|GetProgramLog(?:Size)?|GetErrorString|Version|AddNameExpression|GetLoweredName)"
    r"|cudnn(?:Create|Destroy|SetStream|GetStream|GetVersion|GetErrorString)"
    r"|cublas(?:Create|Destroy|SetStream|GetVersion|Sgemm)_v2|cublasLt(?:Create|Destroy|Matmul)"
    r"|cufft(?:PlanMany|Destroy|SetStream|ExecC2C|ExecR2C|ExecC2R)|curand(?:CreateGenerator|DestroyGenerator|SetStream)"
    r")(?!\w)",
    re.IGNORECASE,
)


def symbol_mismatch(paste: Paste) -> Iterator[Signal]:
    """A CUDA/TensorRT/ORT library found but lacking a symbol another one needs (its line, or the line above)."""
    if "symbol" not in paste.lowered and "entry point" not in paste.lowered:
        return
    for index, line in enumerate(paste.lines):
        m = SYMBOL_FAILURE.search(line)
        if m is None:
            continue
        near = " ".join(paste.lines[max(0, index - 1) : index + 1])
        libs = [x.group("lib") for x in _STACK_LIB.finditer(near)]
        if not libs:
            continue
        culprit = [lib for lib in libs if "onnxruntime_providers" not in lib.lower()] or libs
        values = {"lib": culprit[-1 if "entry point" in m.group(0).lower() else 0]}
        base = _BASE_SYMBOL.search(line)
        if base is not None:
            values["symbol"] = base.group("symbol")
        evidence = "base_symbol" if base is not None else "none"
        at = paste.starts[index] + m.start()
        yield Signal(SignalKind.SYMBOL_MISMATCH, index, at, {"evidence": evidence}, values)
        return


# ---------------------------------------------------------------- two copies of onnxruntime in one process

# ORT's process-wide environment released by a copy that did not create it (ort_env.cc), at exit or at import
_ENV_RELEASE = re.compile(r"OrtEnv::Release|env_ptr == p_instance_\.get\(\) was false", re.IGNORECASE)
# two versions of one ORT package/library installed side by side: a dependency tree (`npm ls`: ├── / └─┬) or a
# node_modules path with onnxruntime-node@1.21.0 and @1.20.1, two libonnxruntime.so.1.x in one process's map
_VERSIONED = re.compile(
    r"(?P<name>onnxruntime(?:-node|-web|-gpu|-genai)?)(?:@|\.so\.)(?P<version>\d{1,2}\.\d{1,3}\.\d{1,3})",
    re.IGNORECASE,
)
_LISTING = re.compile(r"[├└│]|node_modules|\.so\.\d")
_CRASH = re.compile(
    r"segmentation fault|\bsegfault|bus error|\babort(?:ed)?\b|terminat(?:ing|ed) due to|core dumped|SIGSEGV|SIGABRT"
    r"|double free|free\(\): invalid",
    re.IGNORECASE,
)


def two_runtimes(paste: Paste) -> Iterator[Signal]:
    """ORT's environment torn down by another copy, or a crash with two versions of one ORT package in the paste."""
    if "onnxruntime" not in paste.lowered and "ortenv" not in paste.lowered:
        return
    at_shutdown = released_at_shutdown(paste)  # released out of order at teardown, no second copy (shutdown_signals)
    for index, line in enumerate(() if at_shutdown else paste.lines):
        m = _ENV_RELEASE.search(line)
        if m is not None:
            yield Signal(SignalKind.TWO_RUNTIMES, index, paste.starts[index] + m.start(), {}, {})
            return
    if not _CRASH.search(paste.joined[:200_000]):
        return
    versions: dict[str, set[str]] = {}
    for line in paste.lines:
        if _LISTING.search(line):
            for m in _VERSIONED.finditer(line):
                versions.setdefault(m.group("name").lower(), set()).add(m.group("version"))
    for name, found in versions.items():
        if len(found) > 1:
            index = next(i for i, line in enumerate(paste.lines) if name in line.lower())
            values = {"versions": ", ".join(sorted(found)), "package": name}
            yield Signal(SignalKind.TWO_RUNTIMES, index, paste.starts[index], {}, values)
            return
