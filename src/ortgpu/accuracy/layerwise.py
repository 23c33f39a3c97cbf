"""Layer-wise comparison: every intermediate tensor of a model on the engine under test against a reference
engine, in topological order, in memory-bounded chunks; the first tensors that diverge, and where NaN/Inf start."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, TypedDict

from ortgpu.accuracy.engines import TensorEngine
from ortgpu.accuracy.graph import Skipped, TensorSlot
from ortgpu.progress import silent

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "DEFAULT_BYTE_BUDGET",
    "DEFAULT_MAX_PER_CHUNK",
    "LayerwiseReport",
    "TensorComparison",
    "TensorStatus",
    "chunk_slots",
    "compare_layers",
]

DEFAULT_BYTE_BUDGET = 1 << 30  # tensors exposed by one run, per side: 1 GiB
DEFAULT_MAX_PER_CHUNK = 2000  # and at most this many outputs per session
_SHOWN = 25

Progress = Callable[[str, "float | None"], None]


class TensorStatus(Enum):
    MATCH = "match"  # within tolerance of the reference (or, with no reference, finite)
    DIVERGED = "diverged"  # off tolerance, or NaN/Inf where the reference has a number (or NaN on both sides)
    NONFINITE = "nonfinite"  # no reference: holds NaN/Inf
    MISSING = "missing"  # an engine did not return it


@dataclass(frozen=True)
class TensorComparison:
    """One intermediate tensor compared. Errors are over elements finite on both sides; the ``reference_*``
    numbers describe the reference's values (the range statistics fp16 conversion needs)."""

    position: int
    name: str
    op_type: str
    node_name: str
    status: TensorStatus
    elements: int = 0
    mismatches: int = 0
    max_abs: float | None = None
    max_rel: float | None = None
    cosine: float | None = None
    nonfinite: int = 0  # NaN/Inf on the tested side
    reference_nonfinite: int = 0
    reference_max_abs: float | None = None  # largest finite |value| on the reference side
    reference_min_nonzero: float | None = None  # smallest non-zero |value| there
    tested_max_abs: float | None = None
    root: bool = False  # diverges while every tensor its node reads matched (where it starts)
    reason: str | None = None


@dataclass(frozen=True)
class LayerwiseReport:
    """What the layer-wise comparison found. ``first_divergent``: the first tensors that diverge, in topological
    order; ``roots``: those whose inputs all matched (where divergence starts)."""

    tested: str
    reference: str | None  # None: no reference, only NaN/Inf were looked for
    tensors: int  # intermediate tensors in the model
    compared: int
    diverged: int
    skipped: tuple[Skipped, ...]
    chunks: int
    first_divergent: tuple[TensorComparison, ...]
    roots: tuple[TensorComparison, ...]
    notes: tuple[str, ...] = ()

    def summary(self) -> str:
        what = "diverge" if self.reference is not None else "hold NaN/Inf"
        against = f" against {self.reference}" if self.reference else ""
        text = (
            f"{self.compared} of {self.tensors} intermediate tensors on {self.tested}{against}: {self.diverged} {what}"
        )
        if self.roots:
            first = self.roots[0]
            text += f"; first: {first.name!r} from {first.op_type} node {first.node_name!r}"
        return text


def chunk_slots(
    slots: Sequence[TensorSlot], itemsize: Mapping[int, int], byte_budget: int, max_per_chunk: int
) -> list[list[TensorSlot]]:
    """Slots cut into runs whose outputs fit ``byte_budget`` (sizes from shape inference; a tensor of unknown size
    counts as the largest known one) and ``max_per_chunk``."""
    known = [s.elements * itemsize.get(s.elem_type, 4) for s in slots if s.elements is not None]
    fallback = max(known) if known else 0
    chunks: list[list[TensorSlot]] = []
    current: list[TensorSlot] = []
    used = 0
    for slot in slots:
        size = slot.elements * itemsize.get(slot.elem_type, 4) if slot.elements is not None else fallback
        if current and (used + size > byte_budget or len(current) >= max_per_chunk):
            chunks.append(current)
            current, used = [], 0
        current.append(slot)
        used += size
    if current:
        chunks.append(current)
    return chunks


class _Where(TypedDict):
    """The fields that say which tensor a comparison is about."""

    position: int
    name: str
    op_type: str
    node_name: str


class _Numbers(TypedDict):
    """The value statistics every compared tensor carries."""

    elements: int
    nonfinite: int
    reference_nonfinite: int
    reference_max_abs: float | None
    reference_min_nonzero: float | None
    tested_max_abs: float | None


_ITEMSIZE = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8}


def _range(values: np.ndarray) -> tuple[float | None, float | None, int]:
    import numpy as np

    if values.dtype.kind not in "fiub" or values.size == 0:
        return None, None, 0
    data = values.astype(np.float64, copy=False)
    finite = np.isfinite(data)
    magnitudes = np.abs(data[finite])
    nonzero = magnitudes[magnitudes > 0]
    largest = float(magnitudes.max()) if magnitudes.size else None
    smallest = float(nonzero.min()) if nonzero.size else None
    return largest, smallest, int(values.size - finite.sum())


def _compare(slot: TensorSlot, got: Any, want: Any | None, rtol: float, atol_scale: float) -> TensorComparison:
    import numpy as np

    common = _Where(position=slot.position, name=slot.name, op_type=slot.op_type, node_name=slot.node_name)
    if got is None:
        return TensorComparison(status=TensorStatus.MISSING, reason="the engine under test did not return it", **common)
    got = np.asarray(got)
    tested_max, _, nonfinite = _range(got)
    if want is None:
        status = TensorStatus.NONFINITE if nonfinite else TensorStatus.MATCH
        return TensorComparison(
            status=status, elements=int(got.size), nonfinite=nonfinite, tested_max_abs=tested_max, **common
        )
    want = np.asarray(want)
    ref_max, ref_min, ref_nonfinite = _range(want)
    numbers = _Numbers(
        elements=int(want.size),
        nonfinite=nonfinite,
        reference_nonfinite=ref_nonfinite,
        reference_max_abs=ref_max,
        reference_min_nonzero=ref_min,
        tested_max_abs=tested_max,
    )
    if got.shape != want.shape:
        return TensorComparison(
            status=TensorStatus.DIVERGED,
            reason=f"shape {list(got.shape)} against {list(want.shape)}",
            mismatches=int(want.size),
            **numbers,
            **common,
        )
    if got.dtype.kind not in "fc" and want.dtype.kind not in "fc":
        unequal = int(np.count_nonzero(got != want))
        status = TensorStatus.DIVERGED if unequal else TensorStatus.MATCH
        return TensorComparison(status=status, mismatches=unequal, **numbers, **common)
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    finite = np.isfinite(g) & np.isfinite(w)
    atol = atol_scale * max(1.0, ref_max or 0.0)
    diff = np.abs(np.where(finite, g - w, 0.0))
    same_inf = np.isinf(g) & np.isinf(w) & (np.sign(g) == np.sign(w))
    bad = np.where(finite, diff > atol + rtol * np.abs(np.where(finite, w, 0.0)), ~same_inf)
    mismatches = int(bad.sum())
    max_abs: float | None = None
    max_rel: float | None = None
    cosine: float | None = None
    if finite.any():
        d = diff[finite]
        max_abs = float(d.max())
        ref_abs = np.abs(w[finite])
        nonzero = ref_abs > 0
        max_rel = float((d[nonzero] / ref_abs[nonzero]).max()) if nonzero.any() else 0.0
        ng, nw = float(np.linalg.norm(g[finite])), float(np.linalg.norm(w[finite]))
        cosine = (
            1.0
            if ng == nw == 0.0
            else (0.0 if ng == 0.0 or nw == 0.0 else float(np.dot(g[finite], w[finite]) / (ng * nw)))
        )
        if not math.isfinite(cosine):
            cosine = None
    return TensorComparison(
        status=TensorStatus.DIVERGED if mismatches else TensorStatus.MATCH,
        mismatches=mismatches,
        max_abs=max_abs,
        max_rel=max_rel,
        cosine=cosine,
        **numbers,
        **common,
    )


def compare_layers(
    slots: Sequence[TensorSlot],
    skipped: Sequence[Skipped],
    tested: TensorEngine,
    reference: TensorEngine | None,
    rtol: float,
    atol_scale: float,
    *,
    byte_budget: int = DEFAULT_BYTE_BUDGET,
    max_per_chunk: int = DEFAULT_MAX_PER_CHUNK,
    progress: Progress | None = None,
    name_map: Mapping[str, str] | None = None,
) -> tuple[LayerwiseReport, list[TensorComparison]]:
    """Compare ``slots`` (topological order) on ``tested`` against ``reference``, chunk by chunk; without a
    reference, look for where NaN/Inf appear. Returns the report and every comparison (in order).

    A tensor diverges when an element is off ``atol + rtol * |ref|`` (atol = atol_scale * max(1, max |ref|)), or
    holds NaN/Inf the reference does not (NaN never matches NaN). ``name_map`` maps a reference tensor name to
    the tested model's name for it when they differ (fp16 conversion renames some).
    """
    tell: Progress = progress or silent
    chunks = chunk_slots(slots, _ITEMSIZE, byte_budget, max_per_chunk)
    name_map = dict(name_map or {})
    results: list[TensorComparison] = []
    for index, chunk in enumerate(chunks):
        tell(f"layer-wise: chunk {index + 1}/{len(chunks)} ({len(chunk)} tensors)", index / max(len(chunks), 1))
        tested_slots = [_renamed(s, name_map) for s in chunk]
        got = tested.values(tested_slots)
        want = reference.values(chunk) if reference is not None else {}
        for slot, renamed in zip(chunk, tested_slots, strict=True):
            value = got.get(renamed.name)
            if reference is not None and slot.name not in want:
                results.append(
                    TensorComparison(
                        slot.position, slot.name, slot.op_type, slot.node_name, TensorStatus.MISSING,
                        reason="the reference engine did not return it",
                    )
                )  # fmt: skip
                continue
            results.append(_compare(slot, value, want.get(slot.name) if reference else None, rtol, atol_scale))
    results = _mark_roots(results, slots)
    bad = [r for r in results if r.status in (TensorStatus.DIVERGED, TensorStatus.NONFINITE)]
    notes = []
    if len(chunks) > 1:
        notes.append(
            f"{len(slots)} tensors compared in {len(chunks)} chunks (one session per chunk and side) to bound memory"
        )
    if skipped:
        notes.append(f"{len(skipped)} tensors skipped (see skipped: unknown type, strings, sequences)")
    notes.append(
        "tensors are exposed as outputs of a copy of the model: ORT cannot fuse across them, so the tested numbers "
        "are those of the unfused graph"
    )
    report = LayerwiseReport(
        tested=tested.label,
        reference=reference.label if reference is not None else None,
        tensors=len(slots) + len(skipped),
        compared=sum(1 for r in results if r.status is not TensorStatus.MISSING),
        diverged=len(bad),
        skipped=tuple(skipped),
        chunks=len(chunks),
        first_divergent=tuple(bad[:_SHOWN]),
        roots=tuple(r for r in bad if r.root)[:_SHOWN],
        notes=tuple(notes),
    )
    return report, results


def _renamed(slot: TensorSlot, name_map: Mapping[str, str]) -> TensorSlot:
    from dataclasses import replace

    target = name_map.get(slot.name)
    return slot if target is None else replace(slot, name=target)


def _mark_roots(results: list[TensorComparison], slots: Sequence[TensorSlot]) -> list[TensorComparison]:
    from dataclasses import replace

    bad_names = {r.name for r in results if r.status in (TensorStatus.DIVERGED, TensorStatus.NONFINITE)}
    inputs = {s.name: s.node_inputs for s in slots}
    return [
        replace(r, root=True) if r.name in bad_names and not any(i in bad_names for i in inputs.get(r.name, ())) else r
        for r in results
    ]
