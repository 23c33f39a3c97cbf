"""The user-facing error hierarchy: every error says what went wrong and what to do."""

from __future__ import annotations

from enum import IntEnum

__all__ = [
    "BadInputError",
    "CheckFailedError",
    "ConfigError",
    "EnvironmentUnfitError",
    "ExitCode",
    "OrtgpuError",
]


class ExitCode(IntEnum):
    """Process exit codes, as DESIGN.md defines them."""

    OK = 0
    CHECK_FAILED = 1  # the check ran and failed (EP not active, parity off, regression)
    BAD_INPUT = 2  # bad usage or bad input (missing file, corrupt model, wrong shape)
    ENVIRONMENT = 3  # the environment cannot do what was asked (e.g. no GPU)


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


class ConfigError(BadInputError):
    """A config file, provider option or setting value that cannot be used (exit 2)."""
