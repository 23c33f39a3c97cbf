"""`ortgpu tune MODEL`: search for the fastest configuration whose outputs still match fp32; write ortgpu.toml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ortgpu.cli.output import emit, json_option, progress_reporter, safe
from ortgpu.cli.params import DIM, SHAPE, parse_int_list
from ortgpu.ep import ExecutionProvider
from ortgpu.tune import Objective, TuneRequest, parse_budget, run_tune
from ortgpu.tune.request import parse_memory_budget

__all__ = ["command", "render"]

_SHOWN = 15


@click.command("tune")
@click.argument("model", type=click.Path(path_type=Path))
@click.option("--ep", "ep_name", metavar="EP", help="cpu, cuda or tensorrt (default: the best available here).")
@click.option(
    "--objective",
    type=click.Choice(["p50", "p95", "p99", "throughput"]),
    default="p50",
    show_default=True,
    help="Latency percentile to lower, or samples/s to raise.",
)
@click.option("--batch", "batch_text", metavar="N[,N]", help="Batch to tune for, or a sweep (e.g. 1,8,32).")
@click.option(
    "--shape", "shapes", type=SHAPE, multiple=True, metavar="NAME=1x128", help="Input shape to tune for (repeatable)."
)
@click.option(
    "--dim", "dims", type=DIM, multiple=True, metavar="SYMBOL=N", help="Value of a named symbolic dim (repeatable)."
)
@click.option(
    "--budget",
    "budget_text",
    default="10m",
    show_default=True,
    metavar="TIME",
    help="Wall time for the whole search, e.g. 90s, 10m, 1h30m.",
)
@click.option("--trials", "max_trials", type=int, help="Stop after this many trials (also bounded by --budget).")
@click.option(
    "--memory-budget", "memory_text", metavar="BYTES", help="Reject trials whose peak memory is over it (e.g. 8GiB)."
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("ortgpu-tune"),
    show_default=True,
    help="Folder for ortgpu.toml, the converted model files and the study journal.",
)
@click.option("--resume", is_flag=True, help="Continue the tune in --out (a new tune needs a new or empty --out).")
@click.option(
    "--measure",
    "measure_s",
    type=float,
    default=1.0,
    show_default=True,
    metavar="SECONDS",
    help="Time each trial is measured (after its warm-up).",
)
@click.option("--device", "device_id", type=int, default=0, show_default=True, help="CUDA device id.")
@click.option("--seed", type=int, default=0, show_default=True, help="The sampler's seed.")
@json_option
def command(
    model: Path,
    ep_name: str | None,
    objective: str,
    batch_text: str | None,
    shapes: tuple[tuple[str, tuple[int, ...]], ...],
    dims: tuple[tuple[str, int], ...],
    budget_text: str,
    max_trials: int | None,
    memory_text: str | None,
    out: Path,
    resume: bool,
    measure_s: float,
    device_id: int,
    seed: int,
    as_json: bool,
) -> int:
    """Find the fastest configuration of MODEL whose outputs match the fp32 CPU EP: session options, provider
    options, IO binding / CUDA graph, fp16, ORT's transformer fusions. Each trial runs in its own process.

    Writes OUT/ortgpu.toml (+ the converted model it names, sha256-pinned) for `load()`, `check --config` and
    `bench --config`; a new tune needs a new or empty OUT, --resume continues the one in it. Inputs are generated
    as for check and bench: --batch for the leading dim, --dim / --shape for the others.

    Exit 0 when a configuration was found; 1 when no trial passed; 2 bad input; 3 the EP cannot run here or
    Optuna is missing; 130 interrupted, 143 on SIGTERM (the trials that ended are kept, the best is written).
    """

    request = TuneRequest(
        model=model,
        out=out,
        ep=ExecutionProvider.parse(ep_name) if ep_name else None,
        objective=Objective(objective),
        batches=parse_int_list(batch_text, "--batch") if batch_text else (),
        shapes=dict(shapes),
        dims=dict(dims),
        budget_s=parse_budget(budget_text),
        max_trials=max_trials,
        memory_budget=parse_memory_budget(memory_text) if memory_text else None,
        resume=resume,
        measure_s=measure_s,
        device_id=device_id,
        seed=seed,
    )
    with progress_reporter(not as_json) as progress:
        result = run_tune(request, progress)
    emit("tune", result, as_json, render)
    if result.stopped == "interrupted":
        return 130
    return 0 if result.best is not None else 1


def _value(record: Any, unit: str) -> str:
    if record.value is None:
        return "–"
    if unit == "samples/s":
        return f"{record.value:,.0f}" if record.value >= 100 else f"{record.value:.4g}"
    return f"{record.value:.4g}"  # four significant digits: a 2 µs model's trials must not all read 0.002


def _lever_text(params: dict[str, Any], base: dict[str, Any]) -> str:
    changed = [f"{k}={v}" for k, v in params.items() if base.get(k) != v]
    return ", ".join(changed) or "ORT defaults"


def _x(text: object) -> str:
    """Text that may quote a model (ORT's error messages name its nodes) made safe for a rich console: markup
    escaped, control characters shown as escapes, the middle of a very long text left out (cli.output.safe)."""
    return safe(text)


def render(result: Any, console: Any) -> None:
    """The ranked trials, the best against ORT's defaults, and where the config went."""
    from rich.table import Table

    unit = result.objective.unit
    console.print(
        f"[bold]{_x(result.model.name)}[/] on [bold]{result.ep.value}[/], objective {result.objective.value} ({unit}), "
        f"batch {', '.join(map(str, result.batches))}: {len(result.trials)} trial(s) in {result.elapsed_s:.0f} s "
        f"(space {result.space_size:,} combinations; stopped: {result.stopped})"
    )
    base = result.defaults.params if result.defaults is not None else {}
    table = Table(show_edge=False, pad_edge=False)
    for column in ("#", "status", result.objective.value):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("what differs from ORT's defaults / why", overflow="fold")
    for record in result.trials[:_SHOWN]:
        colour = {"ok": "green", "pruned": "dim", "duplicate": "dim"}.get(record.status.value, "yellow")
        detail = _x(_lever_text(record.params, base))
        if record.reason:
            detail += f" [dim]— {_x(record.reason)}[/]"
        elif record.is_defaults:
            detail = "ORT defaults"
        table.add_row(str(record.number), f"[{colour}]{record.status.value}[/]", _value(record, unit), detail)
    console.print(table)
    if len(result.trials) > _SHOWN:
        console.print(f"  [dim]... {len(result.trials) - _SHOWN} more trial(s) (see --json)[/]")
    for note in result.notes:
        console.print(f"  [dim]{_x(note)}[/]")
    if result.stopped == "interrupted":
        finished = sum(1 for t in result.trials if t.status.value == "ok")
        console.print(
            f"[yellow]interrupted: the {len(result.trials)} trial(s) that ended are kept ({finished} measured)"
            + (", the best of them is written" if result.best is not None else "")
            + f"[/]; continue with: ortgpu tune {_x(str(result.model))} --out {_x(str(result.journal.parent))} "
            "--resume (and the same --ep, --objective, --batch, --shape, --dim)"
        )
    if result.best is None:
        console.print("[red]no trial passed: nothing written[/] (the table says why each failed)")
        return
    speed = f", {result.speedup:.2f}x ORT's defaults" if result.speedup else ""
    console.print(f"[bold green]best: trial {result.best.number}, {_value(result.best, unit)} {unit}{speed}[/]")
    for written in result.files:
        console.print(f"  wrote {_x(str(written.path))} ({written.what}, sha256 {written.sha256[:12]}...)")
    console.print(
        f"  use it: ortgpu bench {_x(str(result.model))} --config {_x(str(result.config_path))} --against-defaults"
    )
