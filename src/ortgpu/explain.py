"""`ortgpu explain`: what a pasted ORT / CUDA / cuDNN / TensorRT message means, its likely cause and the fix."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from ortgpu.errors import BadInputError
from ortgpu.knowledge import examples, linear, matrix
from ortgpu.knowledge.base import FailureMode, Family, KnowledgeBase, Severity, load_knowledge_base
from ortgpu.knowledge.matcher import Hit, PasteFacts, extract_facts, find_hits, prepare
from ortgpu.knowledge.matrix import LibraryFamily, Platform
from ortgpu.knowledge.nearest import closest_hit
from ortgpu.knowledge.provider_signals import canonical_ep, ep_package
from ortgpu.knowledge.signals import FUSED_OPS

__all__ = ["ExplainInputError", "ExplainResult", "Match", "PasteKind", "RelatedEntry", "explain"]

MAX_TEXT_CHARS = 1_000_000  # a log bigger than this is not a paste; refuse rather than crawl


class ExplainInputError(BadInputError):
    """The text to explain is empty or unusable."""


class PasteKind(Enum):
    """What kind of message the paste is, decided by its best match."""

    GPU_PROBLEM = "gpu_problem"  # a GPU / CUDA / driver / ORT-install problem with a fix
    CONFIGURATION = "configuration"  # how the program configures or calls ORT (options, provider names or order)
    HOST_MEMORY = "host_memory"  # the machine's RAM ran out (not GPU memory)
    NOT_GPU = "not_gpu"  # a model or input error: not a GPU setup problem
    BENIGN = "benign"  # informational output, nothing to fix
    NOT_RECOGNISED = "not_recognised"
    CLOSEST = "closest_known"  # no rule fired; the nearest entry by its words: a lead, not a diagnosis


@dataclass(frozen=True)
class RelatedEntry:
    id: str
    title: str


@dataclass(frozen=True)
class Match:
    """One recognised failure mode, with the specifics pulled out of the paste."""

    id: str
    title: str
    family: Family
    severity: Severity
    meaning: str
    cause: str
    fix: str  # for the platform the paste comes from (both variants when unknown)
    fix_linux: str | None
    fix_windows: str | None
    detail: str | None  # the specifics: which library, which CUDA/cuDNN major, which ORT builds, sizes
    library: str | None
    libraries: tuple[str, ...]
    specifics: Mapping[str, str]  # every named value the patterns captured (code, path, bytes, input...)
    matched_line: str
    sources: tuple[str, ...]
    related: tuple[RelatedEntry, ...]
    # "pattern", "structure" (library name, provider list, status...), "wrapped text", or "closest" (no rule fired:
    # the nearest entry by the paste's words, a low-confidence lead)
    matched_by: str = "pattern"


@dataclass(frozen=True)
class ExplainResult:
    """The diagnosis of one paste."""

    verdict: PasteKind
    recognised: bool
    summary: str
    matches: tuple[Match, ...]
    facts: PasteFacts
    build_note: str | None  # what the ORT build named in the paste needs, from the version matrix
    next_step: str
    line_count: int = field(default=0)


def explain(text: str, kb: KnowledgeBase | None = None, *, closest: bool = True) -> ExplainResult:
    """Diagnose a pasted message. Raises ExplainInputError (exit 2) for empty text.

    When no rule recognises the paste and `closest` is on, the nearest entry by the paste's words is offered as a
    low-confidence lead (verdict CLOSEST, matched_by "closest"), if it clears the calibrated score and margin."""
    if not text or not text.strip():
        raise ExplainInputError(
            "nothing to explain: the text is empty",
            "paste the message as the argument (quoted), or pipe it in with `ortgpu explain -`",
        )
    if len(text) > MAX_TEXT_CHARS:
        raise ExplainInputError(
            f"the text is {len(text):,} characters; explain takes a pasted message, at most {MAX_TEXT_CHARS:,}",
            "paste the error lines (the last screen of output is usually enough)",
        )
    kb = kb or load_knowledge_base()
    paste = prepare(text)
    facts = extract_facts(paste)
    hits = find_hits(paste, kb)
    guessed = False
    if not hits and closest:
        # the trained model's lead where it is confident, else the BM25 ranking's (both calibrated by CV)
        near = linear.closest_hit(paste, kb) or closest_hit(
            paste,
            kb,
            examples.shipped_documents(kb),
            examples.THRESHOLD,
            examples.MARGIN,
            examples.shipped_features(paste),
        )
        hits, guessed = ((near,), True) if near is not None else ((), False)
    if facts.build_cuda_major is None and any(h.entry.id == "FM-30" for h in hits):
        # the Windows 1.19.0 GPU zip is a CUDA 11 / cuDNN 8 build, unlike every other 1.19 package
        facts = dataclasses.replace(facts, ort_version=None, build_cuda_major=11, build_cudnn_major=8)
    merged = _merged_into(kb)
    matches = tuple(_match(hit, facts, kb, merged) for hit in hits)
    verdict = PasteKind.CLOSEST if guessed else _verdict(hits)
    return ExplainResult(
        verdict=verdict,
        recognised=verdict not in (PasteKind.NOT_RECOGNISED, PasteKind.CLOSEST),
        summary=_summary(verdict, matches),
        matches=matches,
        facts=facts,
        build_note=_build_note(facts),
        next_step=_next_step(verdict),
        line_count=len(text.splitlines()),
    )


def _verdict(hits: tuple[Hit, ...]) -> PasteKind:
    if not hits:
        return PasteKind.NOT_RECOGNISED
    top = hits[0].entry
    if top.family is Family.NOT_GPU:
        return PasteKind.NOT_GPU
    if top.severity is Severity.INFO:
        return PasteKind.BENIGN
    return _FAMILY_VERDICT.get(top.family, PasteKind.GPU_PROBLEM)


# families whose problems are not in the GPU setup: the verdict says what they are
_FAMILY_VERDICT = {Family.CONFIGURATION: PasteKind.CONFIGURATION, Family.HOST_MEMORY: PasteKind.HOST_MEMORY}
# the summary's opening words for each verdict that names a problem
_OPENING = {
    PasteKind.GPU_PROBLEM: "GPU problem",
    PasteKind.CONFIGURATION: "Configuration problem",
    PasteKind.HOST_MEMORY: "Host memory",
}


def _summary(verdict: PasteKind, matches: tuple[Match, ...]) -> str:
    if verdict is PasteKind.NOT_RECOGNISED:
        return "Not recognised: this message is not in ortgpu's knowledge base."
    top = matches[0]
    if verdict is PasteKind.CLOSEST:
        return (
            f"Not recognised with certainty. Closest known problem: {top.id} {top.title} — a lead by the words the "
            "paste shares with it, not a certain diagnosis."
        )
    what = f"{top.id} {top.title}" + (f" [{top.library}]" if top.library else "")
    others = {m.family is Family.NOT_GPU for m in matches[1:]} - {top.family is Family.NOT_GPU}
    tail = ""
    if verdict in _OPENING and others:
        tail = " The paste also shows a model/input error (not GPU-related), listed below."
    elif verdict is PasteKind.NOT_GPU and any(
        m.severity is not Severity.INFO for m in matches if m.family is not Family.NOT_GPU
    ):
        tail = " The paste also shows a GPU problem, listed below."
    if verdict is PasteKind.NOT_GPU:
        return f"Not a GPU setup problem — a model/input error: {what}.{tail}"
    if verdict is PasteKind.BENIGN:
        return f"Benign: {what}. Nothing to fix."
    return f"{_OPENING[verdict]}: {what}.{tail}"


def _next_step(verdict: PasteKind) -> str:
    return {
        PasteKind.GPU_PROBLEM: "Run `ortgpu doctor` on the machine where it failed: it confirms which library, driver "
        "or package is at fault there.",
        PasteKind.CONFIGURATION: "Change how the program configures or calls ONNX Runtime (the fix above); the GPU "
        "setup is not what failed here. `ortgpu check MODEL` shows which provider each node runs on.",
        PasteKind.HOST_MEMORY: "Free or add host RAM (the fix above); GPU memory is not what ran out here.",
        PasteKind.NOT_GPU: "Fix the model or the inputs you feed; the GPU setup is not what failed here.",
        PasteKind.BENIGN: "Nothing to fix. `ortgpu check MODEL` shows which provider each node runs on.",
        PasteKind.CLOSEST: "Check whether the closest problem's meaning fits your paste before applying its fix; run "
        "`ortgpu doctor` on the machine where it failed: it checks the installed ORT, the CUDA/cuDNN libraries, the "
        f"driver and the GPU, and names the cause. {_MORE_LINES}",
        PasteKind.NOT_RECOGNISED: "Run `ortgpu doctor` on the machine where it failed: it checks the installed ORT, "
        f"the CUDA/cuDNN libraries the provider needs, the driver and the GPU, and names the cause. {_MORE_LINES}",
    }[verdict]


# a bare crash or a last line rarely shows its cause (blind expert readers could not name one either,
# benchmarks/results/2026-12-02-cpu-explain-expert-baseline.md); the lines before it, at ORT's verbose level, usually do
_MORE_LINES = (
    "If the paste is a crash or only the last line, run it again with ORT's verbose log "
    "(SessionOptions.log_severity_level = 0) and explain the lines before the failure."
)


def _merged_into(kb: KnowledgeBase) -> dict[str, list[FailureMode]]:
    out: dict[str, list[FailureMode]] = {}
    for entry in kb.entries:
        if entry.merged_into:
            out.setdefault(entry.merged_into, []).append(entry)
    return out


def _match(hit: Hit, facts: PasteFacts, kb: KnowledgeBase, merged: dict[str, list[FailureMode]]) -> Match:
    entry = hit.entry
    related_ids = list(dict.fromkeys([m.id for m in merged.get(entry.id, ())] + list(entry.related)))
    related = tuple(RelatedEntry(r, kb.get(r).title) for r in related_ids)
    platform = facts.platform or (entry.platforms[0] if len(entry.platforms) == 1 else None)
    return Match(
        id=entry.id,
        title=entry.title,
        family=entry.family,
        severity=entry.severity,
        meaning=entry.meaning,
        cause=entry.cause,
        fix=entry.fix_for(platform),
        fix_linux=entry.fix_linux,
        fix_windows=entry.fix_windows,
        detail=_detail(hit, facts),
        library=hit.library,
        libraries=hit.libraries,
        specifics=dict(hit.groups),
        matched_line=_clip(hit.line),
        sources=entry.sources,
        related=related,
        matched_by=hit.how,
    )


def _clip(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------- specifics


_WINDOWS_CODES = {
    "126": "error 126 = the module (a DLL) could not be found",
    "127": "error 127 = a procedure was not found in a DLL that did load (a version mix)",
    "1114": "error 1114 = a DLL's initialisation routine failed",
}


def _detail(hit: Hit, facts: PasteFacts) -> str | None:
    if hit.how == "closest":
        groups = hit.groups
        if "score" in groups:
            return (
                f"No rule matched. This entry shares the most distinctive words with the paste ({groups['terms']}; "
                f"score {groups['score']}, next entry {groups['runner_up']})."
            )
        return (
            f"No rule matched. A model trained on labelled pastes finds this entry the most likely ({groups['terms']}; "
            f"probability {groups['probability']}, next entry {groups['runner_up']})."
        )
    parts: list[str] = []
    for lib in hit.libraries:
        sentence = _library_sentence(lib)
        if sentence:
            parts.append(sentence)
    groups = hit.groups
    code = groups.get("code")
    if code in _WINDOWS_CODES and hit.entry.family in (Family.WINDOWS_LOADER, Family.TENSORRT):
        parts.append(_WINDOWS_CODES[code][0].upper() + _WINDOWS_CODES[code][1:] + ".")
    if hit.entry.id == "FM-21" or (hit.entry.id == "FM-29" and not hit.libraries):
        parts.append(_windows_candidates(facts))
    if "bytes" in groups:
        parts.append(_size_sentence(int(groups["bytes"])))
    if hit.entry.id in ("FM-34", "FM-36") and facts.build_cuda_major:
        floor = matrix.minor_compat_floor(facts.build_cuda_major, facts.platform or Platform.LINUX)
        if floor:
            parts.append(f"The build needs CUDA {facts.build_cuda_major}: a driver >= {floor}.")
    if "provider" in groups:
        parts.append(f"Requested provider: {groups['provider']}.")
    if "symbol" in groups and hit.entry.family is Family.PACKAGE:
        parts.append(f"Missing symbol version: {groups['symbol']}.")
    if "input" in groups:
        parts.append(f"Input: {groups['input']}.")
    if "got" in groups and "expected" in groups:
        where = f"dimension {groups['index']}" if "index" in groups else "rank"
        parts.append(f"{where[0].upper() + where[1:]}: got {groups['got']}, the model expects {groups['expected']}.")
    if "node" in groups and "op" in groups:
        parts.append(_node_sentence(groups["op"], groups["node"]))
    elif "op" in groups:
        parts.append(_op_sentence(hit.entry.id, groups["op"]))
    if "status" in groups:
        code = f" (code {groups['code']})" if "code" in groups else ""
        call = f" in {groups['call']}" if "call" in groups else ""
        who = groups.get("returned_by", "cuDNN")
        parts.append(f"{who[:1].upper()}{who[1:]} returned {groups['status']}{code}{call}.")
    elif "call" in groups and "returned_by" in groups:
        who = groups["returned_by"]
        parts.append(f"{who[:1].upper()}{who[1:]} failed in {groups['call']}.")
    if hit.entry.id == "FM-04" and ("arch" in groups or "python" in groups or "installer" in groups):
        said = [f"installer: {groups['installer']}"] if "installer" in groups else []
        said += [f"Python {groups['python']}"] if "python" in groups else []
        said += [f"platform: {groups['arch']}"] if "arch" in groups else []
        parts.append("No build of it for this setup (" + ", ".join(said) + ").")
    if "cuda_only" in groups:
        parts.append(
            f"{groups['cuda_only']} is a com.microsoft contrib op that only the CUDA EP implements; this session "
            "looked for it on the CPU EP."
        )
    elif "ep" in groups and hit.entry.id in ("FM-54", "NG-08"):
        parts.append(f"The EP without a kernel for it: {groups['ep']}.")
    if "dtype" in groups:
        parts.append(f"TensorRT cannot take {groups['dtype']} inputs for that layer.")
    if "providers" in groups:
        parts.append(
            f"Providers this onnxruntime offers: {groups['providers']} — no GPU provider at all, so it is a CPU build."
        )
    if "device" in groups:
        parts.append("onnxruntime.get_device() says CPU: the onnxruntime Python imports is a CPU build.")
    if "installed" in groups:
        parts.append(
            f"{groups['installed']} was installed, yet only the CPU provider is there: the CPU package `onnxruntime` "
            "is most likely installed too and shadows it (FM-01) — uninstall both, then install only the one you need."
        )
    if "correct" in groups and "requested" in groups:
        if groups.get("problem") == "string":
            parts.append(
                f"The providers were given as the string '{groups['requested']}', not a list: ORT compared its "
                f"characters. Pass a list: {groups['correct']}."
            )
        else:
            parts.append(f"'{groups['requested']}' is not a provider name; ORT spells it {groups['correct']}.")
    elif "requested" in groups and "offered" in groups:
        parts.append(
            f"Requested: {groups['requested']}; this onnxruntime build offers {groups['offered']}. "
            f"{groups['requested']} comes in {groups['ep_package']}."
        )
    elif (
        "provider" in groups
        and (package := ep_package(groups["provider"])) is not None
        and (canonical_ep(groups["provider"]) != "CUDA" or hit.entry.id != "FM-02")
    ):
        parts.append(f"{canonical_ep(groups['provider'])} comes in {package}.")
    if "session" in groups:
        parts.append(
            "The session's providers show only the CPU although a GPU provider was asked for or is compiled in; the "
            "reason is not in the paste."
        )
    if "option" in groups:
        parts.append(f"The option ORT refused: {groups['option']}.")
    if "package" in groups and hit.entry.id == "FM-02":
        parts.append(f"`{groups['package']}` (without -gpu) is the CPU build.")
    if "packages" in groups:
        parts.append(f"Installed together: {groups['packages']} (they overwrite each other's files).")
    if "numbers" in groups or "ops" in groups:
        parts.append(_fp16_sentence(groups.get("numbers"), groups.get("ops")))
    if "version" in groups and hit.entry.family is Family.NOT_GPU:
        limit = f" (this onnxruntime supports up to {groups['max']})" if "max" in groups else ""
        parts.append(f"Model version: {groups['version']}{limit}.")
    if "gpu" in groups and hit.entry.id == "FM-39":
        parts.append(f"Failing device_id: {groups['gpu']}.")
    if "count" in groups:
        parts.append(f"{groups['count']} Memcpy nodes were inserted.")
    text = " ".join(p for p in parts if p)
    return text or None


def _node_sentence(op: str, node: str) -> str:
    onnx = FUSED_OPS.get(op)
    where = f"The failing node is {op} '{node}'"
    if onnx is None:
        return f"{where} (ONNX op {op})."
    return (
        f"{where}: {op} is not an ONNX op but ONNX Runtime's kernel for {onnx}; with graph optimisations at basic "
        "(ORT_ENABLE_BASIC) the fusion is off, which shows whether the fused kernel is at fault."
    )


def _op_sentence(entry_id: str, op: str) -> str:
    if entry_id == "FM-74":
        return f"TensorRT has no importer or plugin for: {op}."
    return f"Operator: {op}."


def _fp16_sentence(numbers: str | None, ops: str | None) -> str:
    parts = []
    if numbers:
        parts.append(
            f"Values in the paste past fp16's largest finite number, 65504: {numbers} — they become Inf, then NaN."
        )
    if ops:
        parts.append(
            f"Ops named: {ops}; sums, powers and exponentials (ReduceMean/ReduceSum/Pow/Softmax/normalisations) are "
            "where fp16 overflows: keep those nodes in fp32 (the float16 converter's op_block_list / node_block_list)."
        )
    return " ".join(parts)


def _library_sentence(lib: str) -> str | None:
    info = matrix.library_info(lib)
    if info is None:
        return (
            f"{lib} is the library that could not be found or loaded (not a CUDA, cuDNN, TensorRT or driver library "
            "ortgpu knows by name): install what ships it, or put its folder on the loader path."
        )
    if info.family is LibraryFamily.CUDA:
        if info.major is None and info.component == "cuRAND":
            return (
                f"{info.name} is {info.component}; its file name is the same in CUDA 11, 12 and 13, so this is a "
                "missing component, not a CUDA major mismatch."
            )
        if info.major is None:
            return (
                f"{info.name} is {info.component}, part of the CUDA toolkit (its name does not say which CUDA major): "
                "install that toolkit component, or put its folder on the loader path."
            )
        builds = _release_ranges(matrix.builds_for_cuda(info.major))
        if not builds:
            return (
                f"{info.name} is {info.describe()}: no ORT release in ortgpu's matrix (1.14 and later) uses CUDA "
                f"{info.major}, so an old onnxruntime (or another program) asks for it: install the onnxruntime-gpu "
                "build for the CUDA you have."
            )
        return f"{info.name} is {info.describe()}: the ORT build that needs it is a CUDA {info.major} build" + (
            f" (CUDA {info.major} builds: {builds})."
        )
    if info.family is LibraryFamily.CUDNN:
        builds = _release_ranges(tuple(b for b in matrix.all_builds() if b.cudnn_major == info.major))
        return f"{info.name} is {info.describe()}" + (
            f" (ORT builds using cuDNN {info.major}: {builds})." if builds else "."
        )
    if info.family is LibraryFamily.TENSORRT:
        builds = _release_ranges(tuple(b for b in matrix.all_builds() if b.tensorrt_major == info.major))
        return f"{info.name} is {info.describe()}" + (
            f" (ORT releases linking TensorRT {info.major}: {builds})." if builds else "."
        )
    if info.family is LibraryFamily.DRIVER:
        return (
            f"{info.name} belongs to {info.component}: it comes with the driver install, not with the CUDA "
            "toolkit or pip packages."
        )
    return f"{info.name} is {info.describe()}."


def _release_ranges(builds: tuple[matrix.OrtBuildRequirements, ...]) -> str:
    """Release ranges per channel from matrix rows, e.g. '1.14–1.18 (PyPI); 1.19–1.21 (onnxruntime-cuda-11 feed)'."""
    patch_rows: dict[tuple[tuple[int, int], str], int] = {}
    for b in matrix.all_builds():
        parts = b.ort_version.split(".")
        if len(parts) > 2:
            key = ((int(parts[0]), int(parts[1])), b.flavour.value)
            patch_rows[key] = max(patch_rows.get(key, -1), int(parts[2]))
    seen: dict[str, dict[tuple[int, int], set[str]]] = {}
    for b in builds:
        parts = b.ort_version.split(".")
        minor = (int(parts[0]), int(parts[1]))
        seen.setdefault(b.channel or b.flavour.value, {}).setdefault(minor, set()).add(
            b.ort_version if len(parts) > 2 else f"minor:{b.flavour.value}"
        )
    by_channel: dict[str, dict[tuple[int, int], str]] = {}
    for channel, minors in seen.items():
        labels = by_channel.setdefault(channel, {})
        for minor, kinds in minors.items():
            patches = sorted(k for k in kinds if not k.startswith("minor:"))
            flavours = [k.split(":", 1)[1] for k in kinds if k.startswith("minor:")]
            if not flavours:
                labels[minor] = patches[0]
            elif patches or (minor, flavours[0]) not in patch_rows:
                labels[minor] = f"{minor[0]}.{minor[1]}"
            else:  # the minor row covers the patches after the patch-specific rows
                labels[minor] = f"{minor[0]}.{minor[1]}.{patch_rows[(minor, flavours[0])] + 1}+"
    chunks: list[str] = []
    for channel, labels in by_channel.items():
        runs: list[list[tuple[int, int]]] = []
        for minor in sorted(labels):
            if runs and minor == (runs[-1][-1][0], runs[-1][-1][1] + 1):
                runs[-1].append(minor)
            else:
                runs.append([minor])
        spans = [labels[r[0]] if len(r) == 1 else f"{labels[r[0]]}–{labels[r[-1]]}" for r in runs]
        chunks.append(f"{', '.join(spans)} ({channel})")
    return "; ".join(chunks)


def _key_windows_dlls(build: matrix.OrtBuildRequirements) -> list[str]:
    """The DLLs worth naming for a build: what it imports or opens, without the driver and cuDNN's sub-DLLs."""
    names = list(build.needed_libraries_windows + build.lazy_libraries_windows)
    if build.cudnn_major == 8:
        names.append("zlibwapi.dll")
    return [
        name
        for name in dict.fromkeys(names)
        if (info := matrix.library_info(name)) is not None and info.family is not LibraryFamily.DRIVER
    ]


def _windows_candidates(facts: PasteFacts) -> str:
    """Which DLLs a Windows build needs, for the error-126 message that names none."""
    if facts.build_cuda_major:
        build = next(
            (
                b
                for b in reversed(matrix.all_builds())
                if b.cuda_major == facts.build_cuda_major
                and b.cudnn_major == facts.build_cudnn_major
                and b.flavour is matrix.BuildFlavour.DEFAULT
            ),
            None,
        ) or next(
            (
                b
                for b in matrix.all_builds()
                if b.cuda_major == facts.build_cuda_major and b.cudnn_major == facts.build_cudnn_major
            ),
            None,
        )
        if build:
            return (
                f"The warning in the paste says this build needs CUDA {facts.build_cuda_major} and cuDNN "
                f"{facts.build_cudnn_major}; one of these is missing from PATH: {', '.join(_key_windows_dlls(build))} "
                "(or the MSVC runtime)."
            )
    if facts.ort_version:
        build = matrix.requirements_for(facts.ort_version)
        if build:
            return (
                f"ORT {facts.ort_version} (default build) needs CUDA {build.cuda_major} and cuDNN {build.cudnn_major}; "
                f"one of these is missing from PATH: {', '.join(_key_windows_dlls(build))} (or the MSVC runtime)."
            )
    sets = []
    for cuda, cudnn in ((12, 9), (11, 8), (13, 9)):
        rows = [
            b
            for b in matrix.builds_for_cuda(cuda)
            if b.cudnn_major == cudnn and b.flavour is matrix.BuildFlavour.DEFAULT and b.confirmed
        ]
        if rows:
            ranges = _release_ranges(tuple(rows))
            sets.append(
                f"for a CUDA {cuda} / cuDNN {cudnn} build (ORT {ranges}): {', '.join(_key_windows_dlls(rows[-1]))}"
            )
    return "The usual culprits: " + "; ".join(sets) + "; plus the MSVC runtime."


def _size_sentence(size: int) -> str:
    units = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    value = float(size)
    unit = 0
    while value >= 1024 and unit < len(units) - 1:
        value /= 1024
        unit += 1
    human = f"{size} bytes" if unit == 0 else f"{value:.1f} {units[unit]}"
    if size > 1 << 40:  # no GPU has a terabyte: the size itself is wrong
        return (
            f"Requested {human}: more than any GPU has, so this is almost certainly a shape bug (corrupt or "
            "mis-ordered input dims), not a lack of memory."
        )
    return f"Requested {human} in one allocation."


def _build_note(facts: PasteFacts) -> str | None:
    if facts.ort_version:
        build = matrix.requirements_for(facts.ort_version)
        if build:
            cudnn = f", cuDNN {build.cudnn_major}" if build.cudnn_major else ""
            driver = f", driver >= {build.min_driver_linux} (Linux)" if build.min_driver_linux else ""
            flag = "" if build.confirmed else " [unconfirmed]"
            return (
                f"ORT {facts.ort_version} (default build) needs CUDA {build.cuda_major}"
                f"{f' (built with {build.cuda_build})' if build.cuda_build else ''}{cudnn}{driver}{flag}."
            )
    if facts.build_cuda_major:
        cudnn = f" and cuDNN {facts.build_cudnn_major}" if facts.build_cudnn_major else ""
        return f"The ORT build in this paste needs CUDA {facts.build_cuda_major}{cudnn} (from its own warning)."
    return None
