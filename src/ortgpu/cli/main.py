"""`ortgpu` entry point: builds the command group and turns errors into one line and an exit code."""

from __future__ import annotations

import contextlib
import errno
import json
import sys
from collections.abc import Sequence

import click

from ortgpu.cli.output import plain, silence_stdout
from ortgpu.cli.registry import LazyGroup
from ortgpu.cli.signals import call_handling_sigterm
from ortgpu.errors import BadInputError, EnvironmentUnfitError, ExitCode, InternalError, OrtgpuError
from ortgpu.results import SCHEMA_VERSION
from ortgpu.runtime.identity import version_info

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
    Exit codes: 0 ok, 1 the check failed, 2 bad input, 3 the environment cannot do it
    (70: an internal error, a bug in ortgpu: please report it).
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def _print_version(ctx: click.Context) -> None:
    """ortgpu, Python, and the ORT distribution `import onnxruntime` would load (read from metadata, not imported)."""

    for line in version_info().lines():
        click.echo(line)
    ctx.exit(0)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI in-process and return the exit code (tests call this).

    Every failure is one line on stderr (and, with ``--json``, an error envelope on stdout): ortgpu's own
    errors with their exit code; usage errors 2; a file-system or memory failure 2 or 3 with the file named;
    anything else is a bug in ortgpu: exit 70, "internal error — please report" (the traceback with --debug).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    as_json = "--json" in args
    try:
        rv = cli.main(args=args, prog_name="ortgpu", standalone_mode=False)
    except OrtgpuError as exc:
        _report_error(exc, as_json)
        return int(exc.exit_code)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("ortgpu: interrupted", err=True)
        return int(ExitCode.INTERRUPTED)
    except click.ClickException as exc:
        if as_json:
            _report_error(BadInputError(exc.format_message()), as_json=True, line=False)
        exc.show()
        return int(ExitCode.BAD_INPUT)
    except MemoryError:
        error: OrtgpuError = EnvironmentUnfitError(
            "ran out of memory", "free memory, or ask for less (smaller --shape / --batch, a smaller model)"
        )
        _report_error(error, as_json)
        return int(error.exit_code)
    except OSError as exc:
        # What is left of OSError here is the file system or a device refusing a path the user gave (a name
        # too long, a symlink loop, a read-only or full disk): not a bug, said in one line with the file.
        error = _os_error(exc)
        if debug:
            raise
        _report_error(error, as_json)
        return int(error.exit_code)
    except Exception as exc:  # a bug: one line unless --debug asks for the traceback
        if debug:
            raise
        error = InternalError(
            f"internal error: {type(exc).__name__}: {exc}",
            "this is a bug in ortgpu, please report it with the output of the same command run with --debug",
        )
        _report_error(error, as_json)
        return int(ExitCode.INTERNAL)
    return int(rv or 0)


_ENVIRONMENT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.ENOMEM, errno.EIO, errno.EROFS, errno.EMFILE, errno.ENFILE}


def _os_error(exc: OSError) -> OrtgpuError:
    name = exc.filename if exc.filename is not None else None
    what = f"{exc.strerror or type(exc).__name__}" + (f": {name}" if name is not None else "")
    if exc.errno in _ENVIRONMENT_ERRNOS:
        return EnvironmentUnfitError(what, "free space or fix the device, then run it again")
    hint = {
        errno.ENAMETOOLONG: "a file or folder name is limited to 255 bytes; use a shorter path",
        errno.ELOOP: "a symbolic link in the path points back at itself; fix or remove it",
        errno.EACCES: "check the permissions of the path",
        errno.EPERM: "check the permissions of the path",
        errno.EISDIR: "give a file path, not a folder",
    }.get(exc.errno or 0, "check the path")
    return BadInputError(what, hint)


def _report_error(exc: OrtgpuError, as_json: bool, line: bool = True) -> None:
    if as_json:
        document = json.dumps({"schema": f"ortgpu.error/v{SCHEMA_VERSION}", "error": exc.to_dict()}, indent=2)
        with contextlib.suppress(OSError):  # stdout may be what failed: the line on stderr still says why
            click.echo(document)
    if line:
        # messages quote names from models, packages and files: no escape sequence reaches the terminal
        click.echo(f"ortgpu: error: {plain(exc.one_line(), limit=1000)}", err=True)


def run() -> None:
    """Console-script wrapper: the only place that exits the process."""
    code = call_handling_sigterm(main)
    try:
        sys.stdout.flush()
    except OSError:  # a closed pipe or a full disk at the very end: already reported, nothing more to say
        silence_stdout()
    sys.exit(code)
