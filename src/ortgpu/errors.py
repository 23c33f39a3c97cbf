"""The user-facing error hierarchy: every error says what went wrong and what to do."""

from __future__ import annotations

from enum import IntEnum

__all__ = [
    "BadInputError",
    "CheckFailedError",
    "ConfigError",
    "EnvironmentUnfitError",
    "ExitCode",
    "InternalError",
    "OrtgpuError",
    "quoted",
]


def quoted(value: object, limit: int = 60) -> str:
    """``repr(value)`` for a message, cut in the middle when long: a 5,000-digit "dim" stays a one-line error."""
    text = repr(value) if isinstance(value, str) else repr(str(value))
    if len(text) <= limit:
        return text
    keep = max(limit - 24, 8)
    return f"{text[: keep // 2]}…{text[-(keep - keep // 2) :]} ({len(str(value)):,} characters)"


class ExitCode(IntEnum):
    """Process exit codes, as DESIGN.md defines them."""

    OK = 0
    CHECK_FAILED = 1  # the check ran and failed (EP not active, parity off, regression)
    BAD_INPUT = 2  # bad usage or bad input (missing file, corrupt model, wrong shape)
    ENVIRONMENT = 3  # the environment cannot do what was asked (e.g. no GPU)
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), what finished is kept
    INTERNAL = 70  # a bug in ortgpu (EX_SOFTWARE): never the answer to bad input; please report it


class OrtgpuError(Exception):
    """Base of all errors shown to users: a one-line message plus a hint."""

    exit_code: ExitCode = ExitCode.BAD_INPUT

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = " ".join(message.split())  # one line, whatever the source text was
        self.hint = " ".join(hint.split()) if hint else None

    def __str__(self) -> str:
        return self.message

    def one_line(self) -> str:
        return f"{self.message} (hint: {self.hint})" if self.hint else self.message

    def to_dict(self) -> dict[str, object]:
        return {
            "type": type(self).__name__,
            "message": self.message,
            "hint": self.hint,
            "exit_code": int(self.exit_code),
        }


class BadInputError(OrtgpuError):
    """A file, flag or value the user gave cannot be used (exit 2)."""

    exit_code = ExitCode.BAD_INPUT


class EnvironmentUnfitError(OrtgpuError):
    """This machine cannot do what was asked, e.g. no GPU or a provider that fails to load (exit 3)."""

    exit_code = ExitCode.ENVIRONMENT


class CheckFailedError(OrtgpuError):
    """The check ran and its verdict is negative (exit 1)."""

    exit_code = ExitCode.CHECK_FAILED


class InternalError(OrtgpuError):
    """A bug in ortgpu, not the user's input (exit 70): the one line asks for a report."""

    exit_code = ExitCode.INTERNAL


class ConfigError(BadInputError):
    """A config file, provider option or setting value that cannot be used (exit 2)."""
