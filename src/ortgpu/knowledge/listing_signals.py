"""Environment listings: which onnxruntime distributions a report, table, `pip freeze` or `conda list` line names.

An app's environment report ("ONNX Runtime GPU package installed with version: 1.18.0"), `pip list` / `pip freeze`
("onnxruntime==1.16.3"), `conda list` ("onnxruntime  1.16.3  pypi_0  pypi"), a Markdown table ("| onnxruntime-gpu |
1.18.0 |") or a bullet list ("- onnxruntime 1.16.3") all say the same thing: this distribution is installed, at this
version. A line counts only in a listing shape (the name first on its line after a bullet, pipe or log prefix, or an
"installed ... version" phrase) and never in an installer's remove/replace/error output, so that prose comparing
versions ("onnxruntime 1.16 worked, 1.18 does not") is not read as two installs. Bounded patterns on one line.
"""

from __future__ import annotations

import itertools
import re

__all__ = ["listed_distributions"]

# the distribution's name as pip spells it, or as a report words it ("ONNX Runtime GPU package", "onnxruntime (GPU)")
_NAME = re.compile(
    r"(?<![\w./\\-])(?:(?P<pip>onnxruntime(?:[-_](?:gpu|directml|openvino|rocm|qnn|silicon)(?:[-_]cu\d{2,3})?)?)"
    r"(?:\s{0,2}\((?P<paren>GPU|CPU|CUDA|DirectML)\))?"
    r"|(?P<words>ONNX ?Runtime)(?:[\s-]{1,2}|\s{0,2}\()(?P<flavour>GPU|CPU|CUDA|DirectML|OpenVINO|ROCm)\)?"
    r"(?:\s{1,2}package)?)"
    r"(?![\w-])",
    re.IGNORECASE,
)
# between the name and its version: separators of a listing, or a report's "installed with version:"
_GAP = re.compile(
    r"(?:\s{0,3}(?:==|=|:|\||,|\s)\s{0,30}"
    r"|\s{1,3}(?:package\s{1,3})?(?:is\s{1,3})?installed(?:\s{1,3}with)?(?:\s{1,3}version)?\s{0,3}:?\s{0,3}"
    r"|\s{1,3}version\s{0,3}:?\s{0,3})"
    r"v?(?P<version>\d{1,3}\.\d{1,3}(?:\.\d{1,4})?)",
    re.IGNORECASE,
)
# what may stand before the name on a listing line: a bullet, pipes, a log prefix without spaces ("INFO:app.x:")
_PREFIX = re.compile(r"^[\s\-*+>#|`'\"]{0,8}(?:\d{1,3}\.\s{1,2})?(?:[\w.\[\]-]{1,80}:\s?)?[\s|`'\"]{0,4}$")
# prose after the version ("1.16 worked but ...") makes the line a comparison, not a listing
_PROSE_TAIL = re.compile(r"[^\n]{0,40}?\b(?:but|works?|worked|fails?|failed|does|did|was|were|then|when|and)\b", re.I)
_INSTALLED_PHRASE = re.compile(r"\binstalled\b[^\n]{0,30}\bversion\b", re.IGNORECASE)
# an installer's output about replacing or failing, never a listing of what is there
_NOT_LISTING = re.compile(
    r"uninstall|\bremov|found existing installation|\bcollecting\b|\bdownloading\b|\battempting\b|\berror\b"
    r"|could not|no matching|\bpip3?\s{1,3}install\b|\bconda\s{1,3}install\b|\binstead\b|\breplac|\bswitch",
    re.IGNORECASE,
)


def _distribution(m: re.Match[str]) -> str | None:
    flavour = (m.group("flavour") or m.group("paren") or "").lower()
    if m.group("pip"):
        name = m.group("pip").lower().replace("_", "-")
        if flavour in ("gpu", "cuda") and name == "onnxruntime":
            return "onnxruntime-gpu"
        return re.sub(r"-cu\d{2,3}$", "", name)
    if flavour == "cpu":
        return "onnxruntime"
    return {"gpu": "onnxruntime-gpu", "cuda": "onnxruntime-gpu"}.get(flavour, f"onnxruntime-{flavour}")


def listed_distributions(line: str) -> list[str]:
    """The onnxruntime distributions a listing-shaped line says are installed, with a version (normalised names)."""
    if "onnx" not in line.lower() or len(line) > 400 or _NOT_LISTING.search(line):
        return []
    found = []
    for m in itertools.islice(_NAME.finditer(line), 4):
        gap = _GAP.match(line, m.end())
        if gap is None or _PROSE_TAIL.match(line, gap.end()):
            continue
        phrase = _INSTALLED_PHRASE.search(line, m.end())
        if not (_PREFIX.match(line[: m.start()]) or phrase) or (m.group("words") and not m.group("flavour")):
            continue
        name = _distribution(m)
        if name and name not in found:
            found.append(name)
    return found
