"""`ortgpu doctor --ray`: run the fleet doctor and render one row per node, the drift in yellow."""

from __future__ import annotations

from typing import Any

from ortgpu.cli.output import emit, progress_reporter
from ortgpu.cli.output import safe as x
from ortgpu.fleet.doctor import majority, run_fleet_doctor

__all__ = ["render_fleet", "run_fleet"]


def run_fleet(address: str | None, as_json: bool) -> int:
    with progress_reporter(enabled=not as_json) as progress:
        report = run_fleet_doctor(address, progress)
    emit("doctor.fleet", report, as_json, render_fleet)
    return report.exit_code


def render_fleet(report: Any, console: Any) -> None:
    """The verdict over the cluster, then one row per node; a value that differs from most nodes' is yellow."""
    from rich.table import Table

    bad = [n for n in report.nodes if not n.ready]
    if report.ready:
        console.print(f"[bold green]{len(report.nodes)} nodes ready[/]" + (" (with drift)" if report.drift else ""))
    else:
        console.print(f"[bold red]not ready: {len(bad)} of {len(report.nodes)} nodes[/]")
    if report.drift:
        console.print(f"[yellow]drift[/] between nodes in: {', '.join(report.drift)}")
    table = Table(show_lines=True, title=f"Ray cluster {x(report.address or '')}", title_justify="left")
    columns: list[tuple[str, str]] = [  # (title, the node's attribute) after "node"
        ("GPUs", "gpus"),
        ("driver", "driver"),
        ("CUDA (driver)", "cuda_driver"),
        ("CUDA/cuDNN mapped", "cuda_libraries"),
        ("ORT", "ort_version"),
        ("verdict", "ready"),
    ]
    for title in ["node", *(heading for heading, _ in columns)]:
        table.add_column(title, overflow="fold")
    common = {name: majority(report.nodes, name) for _, name in columns}
    for node in report.nodes:
        cells = [f"{x(node.host)}\n[dim]{x(node.address)} {x(node.node_id[:12])}[/]"]
        for _, name in columns[:-1]:
            value = getattr(node, name)
            text = "\n".join(_count(value)) if isinstance(value, tuple) else (value or "–")
            key = tuple(value) if isinstance(value, tuple) else value
            drifted = name in report.drift and key != common[name] and node.error is None
            cells.append(f"[yellow]{x(str(text))}[/]" if drifted else x(str(text)))
        cells.append(f"[green]{x(node.verdict)}[/]" if node.ready else f"[red]{x(node.verdict)}[/]")
        table.add_row(*cells)
    console.print(table)
    for node in bad:
        if node.fix:
            console.print(f"[bold]fix[/] on {x(node.host)}: {x(node.fix)}")
    console.print(f"[dim]fleet doctor took {report.duration_s:.1f} s[/]")


def _count(values: tuple[str, ...]) -> list[str]:
    """ "NVIDIA H200" x8 instead of eight lines."""
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return [f"{k} x{v}" if v > 1 else k for k, v in counts.items()] or ["–"]
