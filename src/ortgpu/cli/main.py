"""`ortgpu` entry point: builds the command group and turns errors into one line and an exit code."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

import click

from ortgpu.cli.registry import LazyGroup
from ortgpu.cli.signals import call_handling_sigterm
from ortgpu.errors import ExitCode, OrtgpuError

__all__ = ["cli", "main", "run"]


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, _param, value: _print_version(ctx) if value and not ctx.resilient_parsing else None,
    help="Show ortgpu's version, the Python running it and the ONNX Runtime it would load, then exit.",
)
@click.option("--debug", is_flag=True, help="Show tracebacks for unexpected errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """ortgpu: make ONNX Runtime GPU deployments work, provably and fast.

    Every command prints a table by default and versioned JSON with --json.
    Exit codes: 0 ok, 1 the check failed, 2 bad input, 3 the environment cannot do it.
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def _print_version(ctx: click.Context) -> None:
    """ortgpu, Python, and the ORT distribution `import onnxruntime` would load (read from metadata, not imported)."""
    from ortgpu.runtime.identity import version_info

    for line in version_info().lines():
        click.echo(line)
    ctx.exit(0)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI in-process and return the exit code (tests call this)."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    try:
        rv = cli.main(args=args, prog_name="ortgpu", standalone_mode=False)
    except OrtgpuError as exc:
        _report_error(exc, as_json="--json" in args)
        return int(exc.exit_code)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("ortgpu: interrupted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return int(ExitCode.BAD_INPUT)
    except KeyboardInterrupt:
        click.echo("ortgpu: interrupted", err=True)
        return 130
    except Exception as exc:  # a bug: one line unless --debug asks for the traceback
        if debug:
            raise
        click.echo(
            f"ortgpu: internal error: {type(exc).__name__}: {exc} (hint: re-run with --debug and report it)", err=True
        )
        return 70
    return int(rv or 0)


def _report_error(exc: OrtgpuError, as_json: bool) -> None:
    if as_json:
        from ortgpu.results import SCHEMA_VERSION

        click.echo(json.dumps({"schema": f"ortgpu.error/v{SCHEMA_VERSION}", "error": exc.to_dict()}, indent=2))
    click.echo(f"ortgpu: error: {exc.one_line()}", err=True)


def run() -> None:
    """Console-script wrapper: the only place that exits the process."""
    sys.exit(call_handling_sigterm(main))
