"""Terminal pieces the accuracy commands share: the per-output parity table and NaN/Inf lines."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ortgpu.cli.output import safe as escape

__all__ = ["db", "num", "render_nonfinite", "render_parity_table"]


def num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


def db(value: float | None) -> str:
    if value is None:
        return "–"
    return "exact" if value == float("inf") else f"{value:.1f}"


def render_parity_table(outputs: Sequence[Any], console: Any, tolerance_basis: bool = False) -> None:
    """One row per output (max abs, max rel, cosine, SNR, NaN/Inf, result) and a dim detail line under it.

    ``tolerance_basis`` (check): a line per output with its dtype, shape and where its atol/rtol came from."""
    from rich.table import Table

    if not outputs:
        return
    table = Table(show_edge=False, pad_edge=False)
    for column in ("output", "max abs", "max rel", "cosine", "SNR dB", "NaN/Inf", "result"):
        table.add_column(column, justify="left" if column in ("output", "result") else "right")
    details = []
    for out in outputs:
        colour = {"pass": "green", "fail": "red", "skipped": "dim"}[out.status.value]
        verdict = out.status.value
        if out.status.value == "fail" and out.max_abs is not None:
            verdict = f"fail: {out.mismatches}/{out.elements} off"
        table.add_row(
            escape(out.name),
            num(out.max_abs),
            num(out.max_rel),
            "–" if out.cosine is None else f"{out.cosine:.6f}",
            db(out.snr_db),
            f"{out.nan_count}/{out.inf_count}",
            f"[{colour}]{verdict}[/]",
        )
        if out.mean_abs is not None:
            rtol = "no rtol" if out.min_rtol is None else f"rtol {num(out.min_rtol)}"
            given = "" if tolerance_basis else f"atol {num(out.atol)}, rtol {num(out.rtol)}; "
            details.append(
                f"  {out.name}: mean abs {num(out.mean_abs)}, median abs {num(out.median_abs)}; {given}"
                f"would pass with atol {num(out.min_atol)} or {rtol}"
            )
        if out.samples > 1:
            details.append(f"  {out.name}: worst of {out.samples} samples: {out.sample} ({out.samples_failed} failed)")
        if tolerance_basis and out.atol is not None:
            shape = f" {list(out.shape)}" if out.shape is not None else ""
            precision = out.precision
            basis = " (given)" if out.tolerance_given or precision is None else f" ({precision.value} defaults)"
            details.append(f"  {out.name}: {out.dtype}{shape}, atol {num(out.atol)}, rtol {num(out.rtol)}{basis}")
        if out.reason:
            details.append(f"  {out.name}: {out.reason}")
    console.print(table)
    for line in details:
        console.print(f"[dim]{escape(line)}[/]")


def render_nonfinite(items: Sequence[Any], console: Any, allowed: bool = False, shown: int = 10) -> None:
    if not items:
        return
    colour = "yellow" if allowed else "red"
    for item in items[:shown]:
        console.print(f"  [{colour}]{escape(item.line())}[/]")
    if len(items) > shown:
        console.print(f"  ... {len(items) - shown} more (see --json)")
