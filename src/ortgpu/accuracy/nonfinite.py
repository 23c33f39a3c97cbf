"""NaN and Inf in outputs: how many, of which kind, and where the first one is."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["NonFinite", "find_nonfinite", "scan_outputs"]


@dataclass(frozen=True)
class NonFinite:
    """The NaN/Inf values of one output (of one sample, when ``sample`` names it)."""

    name: str
    elements: int
    nan_count: int
    posinf_count: int
    neginf_count: int
    first_index: tuple[int, ...]
    first_value: str  # "nan", "inf" or "-inf"
    sample: str | None = None
    reference_count: int | None = None  # NaN/Inf in the reference at the same output; None: no reference

    @property
    def count(self) -> int:
        return self.nan_count + self.posinf_count + self.neginf_count

    def line(self) -> str:
        """One line naming the output, the counts and the first index."""
        kinds = [
            f"{count} {label}"
            for count, label in ((self.nan_count, "NaN"), (self.posinf_count, "+Inf"), (self.neginf_count, "-Inf"))
            if count
        ]
        where = f" in sample {self.sample}" if self.sample else ""
        also = ""
        if self.reference_count:
            also = f"; the reference has {self.reference_count} too (the model itself, not the EP)"
        elif self.reference_count == 0:
            also = "; the reference has none"
        return (
            f"output {self.name!r}{where}: {', '.join(kinds)} of {self.elements} values, first {self.first_value} "
            f"at {list(self.first_index)}{also}"
        )


def find_nonfinite(name: str, value: Any, sample: str | None = None) -> NonFinite | None:
    """The NaN/Inf summary of ``value`` (a numpy array), or None when it is all finite or not a float array."""
    import numpy as np

    if not isinstance(value, np.ndarray) or value.dtype.kind not in "fc":
        return None
    bad = ~np.isfinite(value)
    if not bad.any():
        return None
    nan = np.isnan(value)
    first_flat = int(np.argmax(bad.reshape(-1)))
    first = np.unravel_index(first_flat, value.shape) if value.ndim else ()
    item = value.reshape(-1)[first_flat]
    kind = "nan" if np.isnan(item) else ("inf" if item > 0 else "-inf")
    return NonFinite(
        name=name,
        elements=int(value.size),
        nan_count=int(nan.sum()),
        posinf_count=int(np.isposinf(value).sum()),
        neginf_count=int(np.isneginf(value).sum()),
        first_index=tuple(int(i) for i in first),
        first_value=kind,
        sample=sample,
    )


def scan_outputs(
    outputs: Mapping[str, Any], sample: str | None = None, reference: Mapping[str, Any] | None = None
) -> tuple[NonFinite, ...]:
    """Every output of one run that holds NaN/Inf; with ``reference``, each also says how many the reference has."""
    from dataclasses import replace

    found = []
    for name, value in outputs.items():
        item = find_nonfinite(name, value, sample)
        if item is None:
            continue
        if reference is not None and name in reference:
            ref = find_nonfinite(name, reference[name])
            item = replace(item, reference_count=0 if ref is None else ref.count)
        found.append(item)
    return tuple(found)
