"""Structure in a paste about what the host process loads: a shadowed package, an early or null C API, an old DLL.

Each class is decided by the producer's own wording (Python's import system, ORT's C++ header, the Windows loader)
and, where the words alone do not decide, by what else the paste holds:

- Python's `partially initialized module 'onnx...'` (`most likely due to a circular import`) for a package that
  does not import itself circularly (onnx, onnxruntime, optimum, ...): a local file or folder named like the package
  (`onnx.py`, `./onnx/`) is imported in its place;
- the C++ wrapper's `Global<void>::api_ was nullptr` (no `GetApi(...) returned null` next to it): an `Ort::Env` or
  other wrapper object built in a static or global initialiser, before the wrapper's API pointer was set;
- `GetApi(...)`/`GetApi(ORT_API_VERSION)` said to return null: the onnxruntime library loaded into the process is
  older than the headers the program was built with (FM-82, the same class as ORT's `requested API version`);
- the Windows loader's error 182 (`The operating system cannot run %1`, in any language's wording the paste holds as
  the code or the `%1` template) while a DLL loads: the DLL found first by that name lacks an entry the importer
  needs, the mark of an older onnxruntime.dll (System32's, an app's) loaded instead of the one built against;
- an ORT error whose source path is Windows' own tree (`\\engine\\lotus\\onnxruntime\\`) from a binding that is not
  Windows ML: Windows' in-box onnxruntime.dll was loaded instead of the package's.

Every pattern is bounded and runs only on pastes that hold its words.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.evidence import evidence_signal, first_line_match
from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal

__all__ = ["host_load"]

# packages that never import themselves circularly: a circular import of one is another module in its place
_PACKAGES = r"onnx|onnxruntime|onnxruntime_genai|optimum|onnxconverter_common|onnxsim|skl2onnx|tf2onnx|onnxmltools"
_SHADOWED = re.compile(
    rf"partially initiali[sz]ed module '(?P<module>(?:{_PACKAGES})(?:\.[\w.]{{1,80}})?)'",
)
_STATIC_INIT = re.compile(r"\bGlobal<void>::api_ (?:was|is) (?:nullptr|null|NULL)\b")
_API_NULL = re.compile(
    r"\bGetApi\s{0,2}\(\s{0,2}(?:ORT_API_VERSION|\d{1,3}|\.\.\.)?\s{0,2}\)[;`'\"]{0,3}\s{0,3}"
    r"(?:returned|returns|return|is|was|gives|gave)\s{1,3}(?:a\s{1,3})?(?:nullptr|null|NULL)\b",
    re.IGNORECASE,
)
# Windows' error 182 (ERROR_INVALID_ORDINAL) by code and in its English, Japanese and Chinese wording (not 193's
# `%1 is not a valid Win32 application`, another class)
_ORDINAL = re.compile(
    r"The operating system cannot run %1|\[WinError 182\]|\berror(?: code)?:? 182\b"
    r"|このオペレーティング\s?システムでは %1 は実行されません|操作系统无法运行 ?%1",
    re.IGNORECASE,
)
_INBOX = re.compile(r"[\\/]engine[\\/]{1,2}lotus[\\/]{1,2}onnxruntime[\\/]", re.IGNORECASE)
_WINML = re.compile(
    r"Windows\.AI\.MachineLearning|Microsoft\.AI\.MachineLearning|\bWinML\b|\bLearningModel|\bWinRT\b", re.I
)


def host_load(paste: Paste) -> Iterator[Signal]:
    """The host-load classes above, each at the first line that shows it."""
    low = paste.lowered
    if "partially initiali" in low and "circular import" in low:
        hit = first_line_match(paste, _SHADOWED)
        if hit is not None:
            yield evidence_signal(paste, hit[0], hit[1].start(), "shadowed_package", {"module": hit[1].group("module")})
    api_null = first_line_match(paste, _API_NULL) if "getapi" in low else None
    if api_null is not None:
        yield evidence_signal(paste, api_null[0], api_null[1].start(), "api_version", {"message": api_null[1].group(0)})
    elif "api_ " in low:
        hit = first_line_match(paste, _STATIC_INIT)
        if hit is not None:
            yield evidence_signal(paste, hit[0], hit[1].start(), "static_init_api", {"message": hit[1].group(0)})
    if "182" in low or "%1" in low:
        hit = first_line_match(paste, _ORDINAL)
        if hit is not None:
            yield evidence_signal(paste, hit[0], hit[1].start(), "older_dll", {"message": hit[1].group(0)})
    if "lotus" in low and not _WINML.search(paste.joined[:200_000]):
        hit = first_line_match(paste, _INBOX)
        if hit is not None:
            yield evidence_signal(paste, hit[0], hit[1].start(), "older_dll", {"message": hit[1].group(0)})
