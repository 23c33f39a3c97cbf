"""`ortgpu doctor`: can ONNX Runtime use the GPU here (or in the given package), and if not, why and how to fix it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ortgpu.cli.doctor_fix import render_fix
from ortgpu.cli.doctor_fleet import run_fleet
from ortgpu.cli.doctor_package import render_package
from ortgpu.cli.output import emit, json_option, progress_reporter, safe
from ortgpu.doctor import machine
from ortgpu.doctor.machine import DoctorReport
from ortgpu.doctor.package import diagnose_package
from ortgpu.doctor.verdict import Status
from ortgpu.fix import fix_environment
from ortgpu.loader.windows import WindowsReport

if TYPE_CHECKING:  # rich loads only when a command renders, not for --help
    from rich.console import Console

__all__ = ["command", "render_doctor"]


@click.command("doctor")
@click.option(
    "--package",
    "package",
    type=click.Path(path_type=Path),
    default=None,
    help="Analyse an onnxruntime(-gpu) wheel, release archive (.tgz/.zip) or extracted folder instead of this machine.",
)
@click.option(
    "--fix",
    "fix",
    is_flag=True,
    help="Print the pip commands (for this Python) that repair ONNX Runtime inside this environment.",
)
@click.option("--yes", "yes", is_flag=True, help="With --fix: run those commands, then run the doctor again.")
@click.option("--ray", "use_ray", is_flag=True, help="Run the doctor on every node of a Ray cluster: one table.")
@click.option("--ray-address", metavar="HOST:PORT", help="The Ray cluster (implies --ray).")
@click.option(
    "--quick",
    is_flag=True,
    help="Skip the child process that loads the CUDA provider and runs a session (the slow part on a GPU machine); "
    "the report says what is then not verified.",
)
@json_option
def command(
    package: Path | None, fix: bool, yes: bool, use_ray: bool, ray_address: str | None, quick: bool, as_json: bool
) -> int:
    """Diagnose this machine (or an ORT package) for running ONNX Runtime on an NVIDIA GPU.

    Exit 0 when the CUDA EP will load, 3 when it will not (the verdict says why), 2 for bad input.
    """
    if use_ray or ray_address is not None:
        if package is not None or fix:
            raise click.UsageError("--ray runs the doctor on the nodes: it does not combine with --package or --fix")
        return run_fleet(ray_address, as_json)
    if yes and not fix:
        raise click.UsageError("--yes runs the fixes of --fix: give both")
    if fix and package is not None:
        raise click.UsageError("--fix repairs this environment; it does not apply to --package")
    if fix:
        with progress_reporter(enabled=not as_json) as progress:
            result = fix_environment(machine.diagnose(progress=progress), apply=yes, progress=progress)
        emit("doctor.fix", result, as_json, render_fix)
        return result.exit_code
    with progress_reporter(enabled=not as_json) as progress:
        if package is not None:
            package_report = diagnose_package(package, progress=progress)
            emit("doctor.package", package_report, as_json, render_package)
            return int(package_report.exit_code)

        report = machine.diagnose(progress=progress, quick=quick)  # looked up here: tests replace it
    emit("doctor", report, as_json, render_doctor)
    return report.exit_code


def render_doctor(report: DoctorReport, console: Console) -> None:
    """The verdict line first, then the checks, the libraries the CUDA EP needs, and the files it mapped."""
    from rich.table import Table

    colour = "bold green" if report.ready else "bold red"
    console.print(f"[{colour}]{safe(report.verdict)}[/]")
    if report.fix:
        console.print(f"[bold]fix:[/] {safe(report.fix)}")

    checks = Table(title="Checks", title_justify="left", show_lines=True)
    checks.add_column("", no_wrap=True)
    checks.add_column("Check", overflow="fold")
    checks.add_column("Evidence", overflow="fold", ratio=3)
    checks.add_column("Fix", overflow="fold", ratio=2)
    for check in report.checks:
        evidence = safe(check.evidence)
        if check.cause and check.status in (Status.FAIL, Status.WARN):
            evidence += f"\n[italic]cause: {safe(check.cause)}[/]"
        checks.add_row(
            f"[{check.status.style}]{check.status.symbol}[/]",
            safe(check.title),
            evidence,
            safe(check.fix or ""),
        )
    console.print(checks)

    if report.windows is not None:
        _render_windows(report.windows, console)
    rows = [n for n in report.libraries if not n.system]
    if rows:
        libraries = Table(title="Libraries the provider libraries need", title_justify="left")
        libraries.add_column("Library", overflow="fold")
        libraries.add_column("Needed by", overflow="fold")
        libraries.add_column("Status")
        libraries.add_column("Loader picks (how)", overflow="fold", ratio=3)
        libraries.add_column("Other copies / versions", overflow="fold", ratio=2)
        for need in rows:
            name = need.soname + (" (lazy)" if need.lazy else "")
            style = "green" if need.ok else ("yellow" if need.status.value == "pip-only" else "red")
            where = f"{need.path} ({need.source.value})" if need.path and need.source else "-"
            if need.real_name and need.path and need.real_name != need.path.name:
                where += f" -> {need.real_name}"
            others = [f"{c.path} ({c.source.value})" for c in need.also_at]
            others += [str(p) for p in need.other_versions]
            libraries.add_row(
                safe(name),
                safe(need.requested_by),
                f"[{style}]{need.status.value}[/]",
                safe(where),
                safe("\n".join(others)),
            )
        console.print(libraries)
        system = sum(1 for n in report.libraries if n.system)
        if system:
            console.print(f"[dim]{system} C/C++ runtime libraries (libc, libstdc++...) not shown; --json lists them[/]")

    if report.mapped:
        mapped = Table(title="Files the CUDA session mapped (which copy wins, and why)", title_justify="left")
        mapped.add_column("File", overflow="fold", ratio=3)
        mapped.add_column("Component")
        mapped.add_column("From")
        mapped.add_column("Why", overflow="fold", ratio=3)
        for item in report.mapped:
            mapped.add_row(safe(str(item.path)), safe(item.component), safe(item.origin), safe(item.why))
        console.print(mapped)
    console.print(f"[dim]doctor took {report.duration_s:.2f} s[/]")
    if report.timings:  # the probes overlap (threads, the child), so they add up to more than the total
        slowest = sorted(report.timings.items(), key=lambda item: -item[1])
        console.print("[dim]probes: " + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in slowest) + "[/]")


def _render_windows(windows: WindowsReport, console: Console) -> None:
    """Every DLL ORT's libraries bring in, as the Windows loader will resolve it (system DLLs left to --json)."""
    from rich.table import Table

    table = Table(title="DLLs ORT's libraries need (as the Windows loader resolves them)", title_justify="left")
    table.add_column("DLL", overflow="fold")
    table.add_column("Needed by", overflow="fold")
    table.add_column("Status")
    table.add_column("Loader picks (search step)", overflow="fold", ratio=3)
    table.add_column("Version / CPU", overflow="fold")
    table.add_column("Other copies", overflow="fold", ratio=2)
    hidden, shown = 0, set()
    for library in windows.libraries:
        for need in library.needs:
            if need.name.lower() in shown:
                continue  # each DLL once: later imports of it reuse the loaded copy
            shown.add(need.name.lower())
            if need.system or (need.component.value == "ONNX Runtime" and need.ok):
                hidden += 1
                continue
            style = "green" if need.ok else ("yellow" if need.status.value == "off-path" else "red")
            chosen = need.chosen
            where = f"{chosen.path} ({chosen.where})" if chosen else "-"
            version = f"{chosen.file_version or '-'} / {chosen.machine or '?'}" if chosen else "-"
            others = [f"{c.path} ({c.where})" for c in (*need.later, *need.off_path, *need.other_versions)]
            table.add_row(
                safe(need.name + ("" if need.kind.value in ("load-time", "delay-load") else " (run time)")),
                safe(need.requested_by),
                f"[{style}]{need.status.value}[/]",
                safe(where),
                safe(version),
                safe("\n".join(others[:4])),
            )
    console.print(table)
    if hidden:
        console.print(f"[dim]{hidden} system and ORT DLLs (KnownDLLs, API sets, ORT's own) not shown; see --json[/]")
