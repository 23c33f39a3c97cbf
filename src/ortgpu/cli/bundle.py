"""`ortgpu bundle`: copy the exact set of files a C/C++ deployment of an ORT package needs into one folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ortgpu.cli.output import emit, json_option, progress_reporter, safe

__all__ = ["command", "render_bundle"]


@click.command("bundle")
@click.option(
    "--package",
    type=click.Path(path_type=Path),
    default=None,
    help="Release archive (.tgz/.zip), extracted release folder or wheel. Default: the installed onnxruntime.",
)
@click.option("--out", "out", type=click.Path(path_type=Path), required=True, help="Folder to write (new or empty).")
@click.option(
    "--target",
    type=click.Choice(["linux-x64", "win-x64"]),
    default=None,
    help="Platform of the deployment; must be the package's own (default: the package's).",
)
@click.option(
    "--providers",
    default=None,
    metavar="LIST",
    help="Execution providers to ship, e.g. cuda,tensorrt ('cpu' for none). Default: every GPU provider in it.",
)
@click.option(
    "--libs-from",
    "libs_from",
    multiple=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder searched first for CUDA/cuDNN/TensorRT libraries (repeatable).",
)
@click.option("--force", is_flag=True, help="Replace --out when it is not empty.")
@json_option
def command(
    package: Path | None,
    out: Path,
    target: str | None,
    providers: str | None,
    libs_from: tuple[Path, ...],
    force: bool,
    as_json: bool,
) -> int:
    """Write the ORT libraries, the provider libraries and the CUDA/cuDNN libraries they need, with a manifest.

    Exit 0 when the bundle is complete, 1 when required libraries were not found on this machine (the bundle is
    written, its manifest and README say what is missing and where to get it), 2 for bad input.
    """
    from ortgpu.bundle import BundleRequest, Target, create_bundle, providers_from_text

    request = BundleRequest(
        out=out,
        package=package,
        target=Target(target) if target else None,
        providers=providers_from_text(providers) if providers is not None else None,
        library_dirs=libs_from,
        force=force,
    )
    with progress_reporter(enabled=not as_json) as progress:
        result = create_bundle(request, progress=progress)
    emit("bundle", result, as_json, render_bundle)
    return 0 if result.complete else 1


def render_bundle(result: Any, console: Any) -> None:
    """Verdict, the files (headers summed up), what the target system must provide, what is missing."""
    from rich.table import Table

    manifest = result.manifest
    files = [f for f in manifest.files if f.link_to is None]
    state = "[bold green]complete[/]" if manifest.complete else "[bold red]incomplete[/]"
    console.print(
        f"{state}: {safe(str(result.out_dir))} holds ONNX Runtime {safe(manifest.ort_version or '?')} for "
        f"{manifest.target.value} ({', '.join(manifest.providers) or 'CPU only'}): {len(files)} files, "
        f"{_size(manifest.total_bytes)}"
    )
    table = Table(show_lines=False)
    table.add_column("File", no_wrap=True)
    table.add_column("Size", justify="right", no_wrap=True)
    table.add_column("Why", overflow="fold")
    headers = [f for f in files if f.kind.value == "header"]
    for f in manifest.files:
        if f.kind.value == "header":
            continue
        why = f"-> {f.link_to}: {f.why}" if f.link_to else f.why
        table.add_row(safe(f.path), "link" if f.link_to else _size(f.size), safe(why))
    if headers:
        table.add_row(f"include/ ({len(headers)} files)", _size(sum(f.size for f in headers)), "C/C++ headers")
    console.print(table)
    console.print("[bold]The target system must provide[/]")
    for req in manifest.system_requirements:
        minimum = f" >= {req.minimum}" if req.minimum else ""
        console.print(f"  {safe(req.what)}{safe(minimum)}: {safe(req.why)}")
    if manifest.missing:
        console.print("[bold red]Missing[/] (not found on this machine)")
        for m in manifest.missing:
            need = "required" if m.required else "optional"
            console.print(f"  {safe(m.name)} ({safe(m.component)}, {need}): {safe(m.get_it)}")
        console.print(
            "  then run ortgpu bundle again: the loader path and the nvidia-* pip packages here are searched, "
            "--libs-from folders first"
        )
    for line in result.warnings:
        console.print(f"[yellow]note:[/] {safe(line)}")
    if result.verification:
        console.print(f"[bold]check:[/] {safe(result.verification)}")
    variables = "; ".join(f"{k}={v.replace('<BUNDLE>', str(result.out_dir))}" for k, v in manifest.environment.items())
    console.print(f"[bold]use it:[/] {safe(variables)} (README-bundle.md has a CMake snippet)")


def _size(size: int) -> str:
    if size < 2**10:
        return f"{size} B"
    if size < 2**20:
        return f"{size / 2**10:.1f} KiB"
    return f"{size / 2**20:.1f} MiB"
