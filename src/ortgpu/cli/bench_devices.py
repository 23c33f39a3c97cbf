"""`ortgpu bench --devices`: run the multi-process bench and render its per-device and aggregate tables."""

from __future__ import annotations

from typing import Any

from ortgpu.cli.output import emit, progress_reporter
from ortgpu.cli.output import safe as x

__all__ = ["render_devices", "run_devices"]


def run_devices(request: Any, devices_text: str, as_json: bool) -> int:
    """Parse --devices, run ``request`` on every device, render; exit 1 when a case failed, 130 interrupted."""
    from ortgpu.bench.devices import run_bench_devices
    from ortgpu.scale.devices import parse_devices

    spec = parse_devices(devices_text)
    with progress_reporter(not as_json) as progress:
        result = run_bench_devices(request, spec, progress)
    emit("bench.devices", result, as_json, render_devices)
    if result.interrupted:
        return 130
    return 1 if result.failed_cases else 0


def _num(value: float | None, fmt: str = "{:,.0f}") -> str:
    return "–" if value is None else fmt.format(value)


def render_devices(result: Any, console: Any) -> None:
    """Which physical GPU each worker ran on, then per case one row per worker and the aggregate."""
    from rich.table import Table

    console.print(
        f"[bold]{x(result.model.name)}[/] on [bold]{result.ep.value}[/], --devices {x(result.devices)}: "
        f"{len(result.runs)} worker processes, timed runs started together"
    )
    where = result.parent_cuda_visible_devices
    mapping = Table(
        title=f"workers (this process: CUDA_VISIBLE_DEVICES={'unset' if where is None else x(where)})",
        title_justify="left",
        show_edge=False,
        pad_edge=False,
    )
    for column in ("worker", "pid", "CUDA_VISIBLE_DEVICES", "device_id", "GPU (NVML index)", "UUID", "PCI bus"):
        mapping.add_column(column, no_wrap=column in ("worker", "pid", "device_id"), overflow="fold")
    for run in result.runs:
        gpu = run.result.environment.gpu
        seen = run.result.environment.cuda_visible_devices
        mapping.add_row(
            run.slot.label,
            str(run.pid),
            "unset" if seen is None else x(seen),
            str(run.result.settings.device_id),
            f"{x(gpu.name)} ({gpu.nvml_index})" if gpu else "–",
            x(gpu.uuid) if gpu else "–",
            x(gpu.pci_bus_id or "–") if gpu else "–",
        )
    console.print(mapping)
    table = Table(show_edge=False, pad_edge=False)
    for column in ("case", "worker", "p50 ms", "samples/s", "start spread", "in step"):
        table.add_column(column, justify="left" if column in ("case", "worker") else "right", no_wrap=True)
    labels = [run.slot.label for run in result.runs]
    for case in result.cases:
        for label, throughput, p50 in zip(labels, case.per_worker, case.p50_ms, strict=True):
            table.add_row(x(case.label), label, _num(p50, "{:.3f}"), _num(throughput), "", "")
        spread = "" if case.spread is None else f" (spread {case.spread:.1%})"
        step = "yes" if case.synchronised else "[yellow]no[/]"
        table.add_row(
            f"[bold]{x(case.label)}[/]",
            f"[bold]all {case.measured}/{case.workers}[/]",
            "",
            f"[bold]{_num(case.throughput)}[/]{spread}",
            _num(case.start_spread_ms, "{:.1f} ms"),
            step,
            end_section=True,
        )
    console.print(table)
    for run in result.runs:
        for case in run.result.cases:
            if case.status.value in ("failed", "skipped"):
                style = "red" if case.status.value == "failed" else "dim"
                what = f"{run.slot.label} {x(case.key.label)}: {case.status.value}"
                console.print(f"[{style}]{what}: {x(str(case.reason))}[/]")
    if result.interrupted:
        console.print("[yellow]interrupted[/]: only what finished is shown")
    if result.saved_to is not None:
        console.print(f"saved: {x(str(result.saved_to))}")
