"""Renders `ortgpu doctor --package` (a PackageReport) as terminal tables."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ortgpu.cli.output import safe
from ortgpu.doctor.package import PackageReport
from ortgpu.doctor.verdict import Status
from ortgpu.package.analysis import Component, NeedKind

if TYPE_CHECKING:  # rich loads only when a command renders, not for --help
    from rich.console import Console

__all__ = ["render_package"]

# Needs every system has: listed in JSON, left out of the table so the GPU libraries stand out.
_QUIET = {Component.C_RUNTIME, Component.OS}


def render_package(report: PackageReport, console: Console) -> None:
    """Verdict first, then what the package is, what it needs, and (same platform) what this machine has."""
    from rich.table import Table

    analysis = report.analysis
    style = {True: "bold green", False: "bold red", None: "bold cyan"}[report.ready]
    console.print(f"[{style}]{safe(report.verdict)}[/]")

    about = Table(show_header=False, box=None, pad_edge=False)
    about.add_column(style="bold")
    about.add_column()
    about.add_row("Package", safe(f"{analysis.source} ({analysis.kind.value})"))
    version = analysis.label + (f", commit {analysis.git_commit}" if analysis.git_commit else "")
    about.add_row(
        "Version",
        safe(version + (f"  [{'; '.join(analysis.version_evidence)}]" if analysis.version_evidence else "")),
    )
    about.add_row("Platform", safe(f"{analysis.platform.value}  [{analysis.platform_evidence}]"))
    providers = ", ".join(analysis.providers) or "none: CPU EP only"
    about.add_row("Flavour", safe(f"{analysis.flavour.value} (providers: {providers})"))
    console.print(about)

    if analysis.requirements:
        needs = Table(title="What it needs", title_justify="left", show_lines=False)
        needs.add_column("Needs")
        needs.add_column("Version")
        needs.add_column("Evidence", overflow="fold")
        for req in analysis.requirements:
            value = req.value + (" (optional)" if req.optional else "")
            source = "[dim]version matrix:[/] " if req.from_matrix and "matrix" not in req.evidence else ""
            needs.add_row(req.kind.value, safe(value), source + safe(req.evidence))
        console.print(needs)

    libraries = Table(title="Libraries inside", title_justify="left")
    libraries.add_column("Library", overflow="fold")
    libraries.add_column("Role")
    libraries.add_column("Needs (lazy/indirect: opened at run time)", overflow="fold")
    for lib in analysis.libraries:
        shown = []
        for need in lib.needs:
            if need.component in _QUIET:
                continue
            text = safe(need.name)
            if need.kind in (NeedKind.LAZY, NeedKind.INDIRECT):
                text = f"[italic]{text} ({need.kind.value})[/]"
            elif need.kind is NeedKind.DELAY_LOAD:
                text += " (delay-load)"
            if need.in_package:
                text = f"[dim]{text}[/]"
            shown.append(text)
        libraries.add_row(safe(lib.name), lib.role.value, ", ".join(shown) or "[dim]OS and C/C++ runtime only[/]")
    console.print(libraries)

    host_checks = [c for c in report.checks if c.id.startswith("host.")]
    if host_checks:
        here = Table(title=f"This machine ({report.host})", title_justify="left")
        here.add_column("", width=1)
        here.add_column("Check", overflow="fold")
        here.add_column("Evidence", overflow="fold")
        for check in host_checks:
            here.add_row(f"[{check.status.style}]{check.status.symbol}[/]", safe(check.title), safe(check.evidence))
        console.print(here)
    _render_fixes(report, console)


def _render_fixes(report: PackageReport, console: Console) -> None:
    """One line per distinct fix (several missing libraries often share one), the root cause's fix first."""

    problems = [c for c in report.checks if c.status in (Status.FAIL, Status.WARN)]
    if not problems:
        return
    grouped: dict[str, list[Any]] = {}
    for check in sorted(problems, key=lambda c: (c.status is not Status.FAIL, c.fix != report.fix)):
        grouped.setdefault(check.fix or "", []).append(check)
    console.print("[bold]Fix[/] (first the root cause):")
    for fix, checks in grouped.items():
        status = Status.FAIL if any(c.status is Status.FAIL for c in checks) else Status.WARN
        what = ", ".join(c.details.get("soname") or c.title for c in checks)
        console.print(f"  [{status.style}]{status.symbol}[/] {safe(what)}: {safe(fix)}")
