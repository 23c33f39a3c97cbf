"""Every subcommand listed in one place, imported only when it is invoked."""

from __future__ import annotations

import importlib
import importlib.util

import click

__all__ = ["COMMANDS", "LazyGroup"]

# name -> (module, one-line help). Modules are imported on use so `ortgpu --help` stays fast.
COMMANDS: dict[str, tuple[str, str]] = {
    "doctor": ("ortgpu.cli.doctor", "Diagnose this machine or an ORT package for running ONNX Runtime on the GPU."),
    "explain": ("ortgpu.cli.explain", "Explain a pasted ONNX Runtime / CUDA error message and how to fix it."),
    "check": ("ortgpu.cli.check", "Prove a model runs on the requested EP: placement, parity, timings."),
    "bench": ("ortgpu.cli.bench", "Honest latency and throughput: warm-up, percentiles, modes, sweeps, report."),
    "demo": ("ortgpu.cli.demo", "The main job on a built-in model: doctor summary, check and bench."),
    "tune": ("ortgpu.cli.tune", "Find the fastest config whose outputs still match fp32; write ortgpu.toml."),
    "infer": ("ortgpu.cli.infer", "Batch inference over a dataset with verified sessions: local GPU workers or Ray."),
    "bundle": ("ortgpu.cli.bundle", "Copy the files a C/C++ deployment of an ORT package needs, with a manifest."),
    "inspect": ("ortgpu.cli.inspect", "What a model takes and returns, its ops, and which nodes the CUDA EP takes."),
    "profile": ("ortgpu.cli.profile", "Where a model's time goes, per op and node, by provider; fusion; report."),
    "fp16": ("ortgpu.cli.fp16", "Convert a model to fp16, validated on data, with the fp32 keep-list found for you."),
    "compare": ("ortgpu.cli.compare", "Compare two runs: EPs, models, saved outputs, ORT versions, C libraries."),
    "debug": ("ortgpu.cli.debug", "Tools for a failing model: `debug reduce` finds the smallest failing subgraph."),
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported only when run (or when their help is asked)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name, (module, _) in COMMANDS.items() if _module_exists(module)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None or not _module_exists(entry[0]):
            return None
        return importlib.import_module(entry[0]).command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_) for name, (module, help_) in COMMANDS.items() if _module_exists(module)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _module_exists(module: str) -> bool:
    return importlib.util.find_spec(module) is not None
