"""Mangled pastes made readable before matching: UTF-16 read as bytes, letters spaced apart or spaces stripped out,
localised OS messages."""

from __future__ import annotations

import re

__all__ = ["LOCALISED_PHRASES", "repair", "squeeze"]

# What the loaders print in other languages, and the English every knowledge-base pattern is written against.
# glibc's dlerror() texts come from its own translations (libc.mo); Windows' FormatMessage text for error 126 from the
# localised system message tables.
_CANNOT_OPEN = "cannot open shared object file"
_NO_SUCH_FILE = "No such file or directory"
_MODULE_NOT_FOUND = "The specified module could not be found."
LOCALISED_PHRASES: dict[str, str] = {
    # glibc: "cannot open shared object file"
    "共有オブジェクトファイルを開けません": _CANNOT_OPEN,
    "无法打开共享对象文件": _CANNOT_OPEN,
    "無法開啟共用物件": _CANNOT_OPEN,
    "동적 오브젝트 파일을 열 수 없습니다": _CANNOT_OPEN,
    "Kann die Shared-Object-Datei nicht öffnen": _CANNOT_OPEN,
    "Ne peut ouvrir le fichier d'objet partagé": _CANNOT_OPEN,
    "no se puede abrir el fichero del objeto compartido": _CANNOT_OPEN,
    "невозможно открыть разделяемый объектный файл": _CANNOT_OPEN,
    "impossibile aprire il file oggetto condiviso": _CANNOT_OPEN,
    "não é possível abrir arquivo compartilhado": _CANNOT_OPEN,
    "nie można otworzyć pliku obiektu dzielonego": _CANNOT_OPEN,
    # glibc: "No such file or directory"
    "そのようなファイルやディレクトリはありません": _NO_SUCH_FILE,
    "没有那个文件或目录": _NO_SUCH_FILE,
    "沒有此一檔案或目錄": _NO_SUCH_FILE,
    "그런 파일이나 디렉터리가 없습니다": _NO_SUCH_FILE,
    "Datei oder Verzeichnis nicht gefunden": _NO_SUCH_FILE,
    "Aucun fichier ou dossier de ce type": _NO_SUCH_FILE,
    "No existe el fichero o el directorio": _NO_SUCH_FILE,
    "Нет такого файла или каталога": _NO_SUCH_FILE,
    "File o directory non esistente": _NO_SUCH_FILE,
    "Arquivo ou diretório inexistente": _NO_SUCH_FILE,
    "Nie ma takiego pliku ani katalogu": _NO_SUCH_FILE,
    # Windows: ERROR_MOD_NOT_FOUND (126)
    "指定されたモジュールが見つかりません。": _MODULE_NOT_FOUND,
    "指定されたモジュールが見つかりません": _MODULE_NOT_FOUND,
    "找不到指定的模块。": _MODULE_NOT_FOUND,
    "找不到指定的模块": _MODULE_NOT_FOUND,
    "找不到指定的模組。": _MODULE_NOT_FOUND,
    "找不到指定的模組": _MODULE_NOT_FOUND,
    "지정된 모듈을 찾을 수 없습니다.": _MODULE_NOT_FOUND,
    "Das angegebene Modul wurde nicht gefunden.": _MODULE_NOT_FOUND,
    "Le module spécifié est introuvable.": _MODULE_NOT_FOUND,
    "No se puede encontrar el módulo especificado.": _MODULE_NOT_FOUND,
    "Не найден указанный модуль.": _MODULE_NOT_FOUND,
    "Impossibile trovare il modulo specificato.": _MODULE_NOT_FOUND,
    "Não foi possível encontrar o módulo especificado.": _MODULE_NOT_FOUND,
    "Nie można odnaleźć określonego modułu.": _MODULE_NOT_FOUND,
}
# ORT's and the loaders' phrases the knowledge base is written against, found again in a log whose spaces were
# stripped ("Initproviderbridgefailed", "LoadLibraryfailedwitherror126"): each word kept, the spaces optional
_STRIPPED_PHRASES = (
    "Init provider bridge failed",
    "LoadLibrary failed with error",
    "when trying to load",
    "Failed to load library",
    "cannot open shared object file",
    "No such file or directory",
    "The specified module could not be found",
    "DLL load failed while importing",
    "Error loading",
    "which is missing",
    "or one of its dependencies",
    "Non-zero status code returned while running",
    "Status Message",
    "Exception during initialization",
    "Failed to create CUDAExecutionProvider",
    "Failed to create TensorrtExecutionProvider",
    "Please reference",
    "Could not find an implementation for",
    "Falling back to",
    "and retrying",
    "when using",
    "Failed to allocate memory for requested buffer of size",
    "Attempt to use DefaultLogger but none has been registered",
    "is not a valid Win32 application",
    "Some nodes were not assigned to the preferred execution providers",
    "with error",
    "CUDA failure",
    "CUDNN failure",
    "CUBLAS failure",
    "CUDA error",
)
_STRIPPED = re.compile("|".join(r"\s?".join(re.escape(w) for w in p.split()) for p in _STRIPPED_PHRASES), re.IGNORECASE)
_SPACED = {p.replace(" ", "").lower(): p for p in _STRIPPED_PHRASES}
_ORT_LOG_MARK = re.compile(r"\[[EWIV]:onnxruntime|onnxruntime::|\[ONNXRuntimeError\]|onnxruntime", re.IGNORECASE)
# the fixed punctuation of ORT's log lines: a timestamp, the "[E:onnxruntime:logger, file.cc:123 function]" header,
# "[ONNXRuntimeError] : 1 : FAIL : "
_LOG_PUNCTUATION = (
    (re.compile(r"(\d{4}-\d\d-\d\d)(?=\d\d:\d\d:)"), r"\1 "),
    (re.compile(r"(?<=\d)\[(?=[EWIV]:onnxruntime)"), " ["),
    (re.compile(r"(\[[EWIV]:onnxruntime:[\w-]{0,40},)(?=\S)"), r"\1 "),
    (re.compile(r"(\.(?:cc|cpp|h|cu):\d{1,6})(?=[A-Za-z])"), r"\1 "),
    (re.compile(r"\](?=[A-Za-z])"), "] "),
    (re.compile(r"(?<=\w)(?=\[ONNXRuntimeError\])"), " "),
    (re.compile(r"\[ONNXRuntimeError\]:(\d{1,2}):([A-Z_]{2,30}):"), r"[ONNXRuntimeError] : \1 : \2 : "),
    (re.compile(r"(?<=[a-z0-9_])node\.Name:"), " node. Name:"),
)
_LOCALISED = re.compile("|".join(re.escape(p) for p in sorted(LOCALISED_PHRASES, key=len, reverse=True)))
_SQUEEZE_TABLE = {ord(c): None for c in " \t\r\n\f\v\u00a0\u3000"}


def repair(text: str) -> str:
    """The paste with NULs of UTF-16-read-as-bytes removed, letter-spaced lines closed up, a BOM dropped and
    localised loader messages replaced by the English ones the knowledge base is written against."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    text = text.replace("\ufeff", "")
    if not text.isascii():
        text = _LOCALISED.sub(lambda m: LOCALISED_PHRASES[m.group(0)], text)
    if " " in text:
        text = "\n".join(_unspace(line) for line in text.split("\n"))
    if "onnxruntime" in text.lower():
        text = "\n".join(_respace(line) for line in text.split("\n"))
    return text


def _respace(line: str) -> str:
    """Put back the spaces of an ORT log line pasted without any ("...[E:onnxruntime:Default,provider_bridge_ort.cc:
    1304onnxruntime::TryGetProviderInfo_CUDA]...LoadLibraryfailedwitherror126"): its punctuation and known phrases."""
    if not 60 <= len(line) <= 20_000 or line.count(" ") > len(line) // 50 or not _ORT_LOG_MARK.search(line):
        return line
    for pattern, spaced in _LOG_PUNCTUATION:
        line = pattern.sub(spaced, line)
    return re.sub(r" {2,}", " ", _STRIPPED.sub(_spaced_phrase, line)).strip()


def _spaced_phrase(m: re.Match[str]) -> str:
    """A stripped phrase with its spaces, set off from the letters or digits glued to it (not from punctuation)."""
    text = m.string
    before = " " if m.start() and text[m.start() - 1].isalnum() else ""
    after = " " if m.end() < len(text) and text[m.end()].isalnum() else ""
    return before + _SPACED.get(re.sub(r"\s", "", m.group(0)).lower(), m.group(0)) + after


def _unspace(line: str) -> str:
    """Close up a line whose every other character is a space ("E r r o r   l o a d i n g")."""
    if len(line) < 8:
        return line
    for phase in (1, 0):
        gaps = line[phase::2]
        if len(gaps) >= 4 and gaps.count(" ") >= 0.95 * len(gaps):
            kept = line[1 - phase :: 2]
            # kept letters alternate with the spaces; an original space shows as a run of three
            return kept if kept.strip() else line
    return line


def squeeze(text: str) -> str:
    """Lower-cased text without any whitespace: what a message still is after wrapping at any column."""
    return text.translate(_SQUEEZE_TABLE).lower()
