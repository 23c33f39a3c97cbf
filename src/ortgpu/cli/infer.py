"""`ortgpu infer MODEL --inputs SRC --out DST`: batch inference with verified sessions, locally or on Ray."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ortgpu.cli.output import emit, json_option, progress_reporter
from ortgpu.cli.output import safe as x

__all__ = ["command", "render"]


@click.command("infer")
@click.argument("model", type=click.Path(path_type=Path))
@click.option(
    "--inputs",
    "inputs",
    required=True,
    type=click.Path(path_type=Path),
    help="A folder of .npz files, one .npz of columns, a .parquet file or a folder of them.",
)
@click.option(
    "--out", "out", required=True, type=click.Path(path_type=Path), help="Output folder (created if missing)."
)
@click.option("--config", type=click.Path(path_type=Path), help="ortgpu.toml every worker's session is built from.")
@click.option("--ep", "ep_name", metavar="EP", help="cpu, cuda or tensorrt (default: the best available here).")
@click.option("--devices", "devices_text", metavar="0,1|all|cpu:N", help="Local workers: one per GPU, or N on CPU.")
@click.option("--batch", type=int, default=32, show_default=True, help="Rows per session run.")
@click.option(
    "--rows-per-file",
    "rows_per_item",
    type=int,
    default=1024,
    show_default=True,
    help="Rows per output file of a columnar source (.npz of columns, Parquet).",
)
@click.option("--fail-fast", is_flag=True, help="Stop at the first bad input (exit 2) instead of skipping it.")
@click.option("--ray", "use_ray", is_flag=True, help="Run on a Ray cluster: Ray Data actors, one per GPU.")
@click.option("--ray-address", metavar="HOST:PORT", help="The Ray cluster to join (implies --ray).")
@click.option("--workers", type=int, help="With --ray: the number of actors (default: one per GPU; 1 on CPU).")
@click.option("--ep-option", "ep_options", multiple=True, metavar="KEY=VALUE", help="Provider option (repeatable).")
@json_option
def command(
    model: Path,
    inputs: Path,
    out: Path,
    config: Path | None,
    ep_name: str | None,
    devices_text: str | None,
    batch: int,
    rows_per_item: int,
    fail_fast: bool,
    use_ray: bool,
    ray_address: str | None,
    workers: int | None,
    ep_options: tuple[str, ...],
    as_json: bool,
) -> int:
    """Run MODEL over every input in --inputs and write one output .npz per input into --out, with a manifest.

    A re-run skips what is done and verified by hash. Exit 0 when every input was run, 1 when some were bad
    (reported and skipped), 2 for bad usage or input (--fail-fast: at the first bad input), 3 when this machine or
    cluster cannot run it, 130 when interrupted (what finished is kept and in the manifest).
    """
    from ortgpu.config import ExecutionProvider, parse_ep_option
    from ortgpu.infer.run import InferRequest, run_infer
    from ortgpu.scale.devices import parse_devices

    request = InferRequest(
        model=model,
        inputs=inputs,
        out=out,
        config=config,
        ep=ExecutionProvider.parse(ep_name) if ep_name else None,
        devices=parse_devices(devices_text) if devices_text is not None else None,
        batch=batch,
        rows_per_item=rows_per_item,
        fail_fast=fail_fast,
        ray=use_ray or ray_address is not None,
        ray_address=ray_address,
        workers=workers,
        provider_options=dict(parse_ep_option(o) for o in ep_options),
    )
    with progress_reporter(not as_json) as progress:
        result = run_infer(request, progress)
    emit("infer", result, as_json, render)
    if result.interrupted:
        return 130
    if result.stopped:
        return 2
    return 1 if result.bad else 0


def render(result: Any, console: Any) -> None:
    """Counts first, then the workers, the throughput, and each bad input with its reason."""
    from rich.table import Table

    where = (
        "Ray" + (f" at {x(result.ray_address)}" if result.ray_address else "")
        if result.backend.value == "ray"
        else "local"
    )
    console.print(
        f"[bold]{x(result.model.name)}[/] over {result.items} inputs ({result.source_kind}) on [bold]{result.ep}[/], "
        f"{where}, batch {result.batch}"
    )
    colour = "green" if result.complete else ("yellow" if not result.stopped else "red")
    console.print(
        f"[{colour}]written {result.written}[/], already done (verified) {result.verified}, kept {result.kept}, "
        f"bad {len(result.bad)}" + (" — [red]stopped at the first bad input (--fail-fast)[/]" if result.stopped else "")
    )
    if result.workers:
        table = Table(show_edge=False, pad_edge=False)
        for column in ("worker", "host", "pid", "EP", "device", "CUDA_VISIBLE_DEVICES", "session s"):
            table.add_column(column, no_wrap=True)
        for w in result.workers:
            table.add_row(
                x(w.name),
                x(w.host),
                str(w.pid),
                w.active_ep,
                str(w.device_id),
                x(w.cuda_visible_devices or "unset"),
                f"{w.session_s:.2f}",
            )
        console.print(table)
    rate = result.rows_per_s
    if rate is not None:
        console.print(f"throughput: [bold]{rate:,.0f} rows/s[/] ({result.rows} rows in {result.compute_s:.2f} s)")
    if result.replaced or result.retried:
        console.print(f"[yellow]{result.replaced} workers died and were replaced; {result.retried} tasks retried[/]")
    for item in result.bad[:20]:
        console.print(f"[red]bad[/] {x(item.name)}: {x(item.reason)}")
    if len(result.bad) > 20:
        console.print(f"[red]... and {len(result.bad) - 20} more bad inputs[/] (the manifest lists them all)")
    if result.ignored_files:
        console.print(
            f"[dim]{len(result.ignored_files)} files in the input folder are not inputs and were left alone[/]"
        )
    if result.interrupted:
        console.print("[yellow]interrupted[/]: what finished is written and in the manifest; run again to go on")
    console.print(f"manifest: {x(str(result.manifest))}")
