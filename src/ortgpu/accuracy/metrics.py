"""Error metrics of one array against its reference: cosine, SNR, mean/median/max errors, the tolerances that
would pass, and a histogram of the errors."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["ErrorHistogram", "ErrorMetrics", "error_metrics", "histogram_of"]

_MAX_BINS = 18  # decades shown: from 1e-12 to 1e6 is plenty for anything a float holds that still matters


@dataclass(frozen=True)
class ErrorHistogram:
    """|actual - reference| over the elements finite on both sides, by decade.

    ``exact``: elements with no error at all. ``edges`` are decade boundaries (len(counts) + 1 of them);
    ``counts[i]`` holds the errors in (edges[i], edges[i + 1]]; the first bin also takes every smaller non-zero
    error and the last every larger one.
    """

    exact: int
    edges: tuple[float, ...]
    counts: tuple[int, ...]

    @property
    def total(self) -> int:
        return self.exact + sum(self.counts)


@dataclass(frozen=True)
class ErrorMetrics:
    """How far ``actual`` is from ``reference`` over the elements finite on both sides (``compared`` of them).

    ``snr_db``: 10 log10(sum ref^2 / sum err^2); inf when there is no error, None when the reference is all 0.
    ``min_atol``: the smallest atol that passes every compared element with the rtol in use;
    ``min_rtol``: the smallest rtol that passes them with the atol in use (None: no rtol can, because some
    element whose reference is 0 is off by more than atol). Neither covers NaN/Inf mismatches: no tolerance does.
    """

    compared: int
    max_abs: float
    max_rel: float  # over elements whose reference is not 0
    mean_abs: float
    median_abs: float
    cosine: float
    snr_db: float | None
    min_atol: float
    min_rtol: float | None
    histogram: ErrorHistogram


def histogram_of(errors: np.ndarray) -> ErrorHistogram:
    """Decade histogram of non-negative errors (see ErrorHistogram)."""
    import numpy as np

    errors = np.asarray(errors, dtype=np.float64).reshape(-1)
    nonzero = errors[errors > 0]
    exact = int(errors.size - nonzero.size)
    if nonzero.size == 0:
        return ErrorHistogram(exact=exact, edges=(), counts=())
    low = math.floor(math.log10(float(nonzero.min())))
    high = max(math.ceil(math.log10(float(nonzero.max()))), low + 1)
    low = max(low, high - _MAX_BINS)
    edges = np.array([10.0**k for k in range(low, high + 1)])
    # bin i holds (edges[i], edges[i+1]]; values at or below edges[0] go to bin 0, above the last edge to the last
    index = np.clip(np.searchsorted(edges, nonzero, side="left") - 1, 0, len(edges) - 2)
    counts = np.bincount(index, minlength=len(edges) - 1)
    return ErrorHistogram(exact=exact, edges=tuple(float(e) for e in edges), counts=tuple(int(c) for c in counts))


def error_metrics(
    got: np.ndarray, want: np.ndarray, finite: np.ndarray, atol: float, rtol: float
) -> ErrorMetrics | None:
    """Metrics over ``finite`` (a mask of elements finite in both float64 arrays); None when no element is."""
    import numpy as np

    if not finite.any():
        return None
    g = got[finite]
    w = want[finite]
    d = np.abs(g - w)
    abs_w = np.abs(w)
    nonzero = abs_w != 0
    max_rel = float(np.max(d[nonzero] / abs_w[nonzero])) if nonzero.any() else 0.0
    norm_g, norm_w = float(np.linalg.norm(g)), float(np.linalg.norm(w))
    if norm_g == 0.0 and norm_w == 0.0:
        cosine = 1.0
    elif norm_g == 0.0 or norm_w == 0.0:
        cosine = 0.0
    else:
        cosine = float(np.clip(np.dot(g, w) / (norm_g * norm_w), -1.0, 1.0))
    signal = float(np.sum(w * w))
    noise = float(np.sum(d * d))
    if noise == 0.0:
        snr: float | None = math.inf
    elif signal == 0.0:
        snr = None
    else:
        snr = 10.0 * math.log10(signal / noise)
    min_atol = max(0.0, float(np.max(d - rtol * abs_w)))
    over = d > atol
    if not over.any():
        min_rtol: float | None = 0.0
    elif np.any(over & ~nonzero):
        min_rtol = None
    else:
        min_rtol = float(np.max((d[over] - atol) / abs_w[over]))
    return ErrorMetrics(
        compared=int(d.size),
        max_abs=float(np.max(d)),
        max_rel=max_rel,
        mean_abs=float(np.mean(d)),
        median_abs=float(np.median(d)),
        cosine=cosine,
        snr_db=snr,
        min_atol=min_atol,
        min_rtol=min_rtol,
        histogram=histogram_of(d),
    )
