"""Reading untrusted files and streams with limits: size caps (each says how to raise it) and input-path checks.

Everything ortgpu reads from a path the user gives (a model, config, baseline, npz) goes through
:func:`check_input_file` first: a missing path, a folder, a FIFO, a device (``/dev/zero``), a socket, a symlink
loop or a name longer than the file system allows is refused with one line (exit 2) before anything is read.
Then :func:`read_input_bytes` reads at most the limit of that kind of file; a bigger file is refused before it is
read, naming the limit and the environment variable that raises it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeVar

from ortgpu.errors import BadInputError, EnvironmentUnfitError, quoted
from ortgpu.untrusted import ByteLimit, human_bytes

__all__ = [
    "BASELINE_LIMIT",
    "CONFIG_LIMIT",
    "INPUT_DATA_LIMIT",
    "LIMITS",
    "MODEL_LIMIT",
    "PACKAGE_TEXT_LIMIT",
    "PROTOBUF_LIMIT",
    "InputTooLargeError",
    "ReadLimit",
    "UnreadableInputError",
    "check_input_file",
    "parse_nested",
    "read_input_bytes",
    "read_input_text",
    "read_stream",
]

T = TypeVar("T")

PROTOBUF_LIMIT = 2**31 - 1  # protobuf cannot parse a message of 2 GiB or more: bigger models keep external data


class UnreadableInputError(BadInputError):
    """An input path that cannot be read as a file: missing, a folder, a device or FIFO, a loop (exit 2)."""


class InputTooLargeError(BadInputError):
    """An input bigger than its limit (exit 2); the message names the limit and how to raise it."""


class ReadLimit(ByteLimit):
    """The most ortgpu reads of one kind of input, raised by an environment variable (``ORTGPU_MAX_CONFIG=4M``).

    ``ceiling`` is a hard limit the variable cannot raise (protobuf's 2 GiB for models), ``ceiling_reason`` why.
    """

    def __init__(
        self, variable: str, default: int, what: str, *, ceiling: int | None = None, ceiling_reason: str = ""
    ) -> None:
        super().__init__(variable, default, what)
        self.ceiling = ceiling
        self.ceiling_reason = ceiling_reason

    def value(self) -> int:
        value = super().value()
        if value < 1:
            raise BadInputError(f"{self.variable} must be at least 1 byte", f"unset {self.variable} for the default")
        return min(value, self.ceiling) if self.ceiling is not None else value

    def too_large(self, subject: str, size: int, *, at_least: bool = False) -> InputTooLargeError:
        """The error for ``subject`` (e.g. "config file x.toml") of ``size`` bytes (or more, ``at_least``)."""
        limit = self.value()
        over = "over " if at_least else ""
        if self.ceiling is not None and limit >= self.ceiling:
            return InputTooLargeError(
                f"{subject} is {over}{human_bytes(size)}: {self.ceiling_reason}",
                f"keep it under {human_bytes(self.ceiling)}",
            )
        return InputTooLargeError(
            f"{subject} is {over}{human_bytes(size)}, above the limit of {human_bytes(limit)}", self.hint()
        )


CONFIG_LIMIT = ReadLimit("ORTGPU_MAX_CONFIG", 1 << 20, "config file")
BASELINE_LIMIT = ReadLimit("ORTGPU_MAX_BASELINE", 64 << 20, "baseline file")
MODEL_LIMIT = ReadLimit(
    "ORTGPU_MAX_MODEL",
    PROTOBUF_LIMIT,
    "model file",
    ceiling=PROTOBUF_LIMIT,
    ceiling_reason="an ONNX file of 2 GiB or more cannot be parsed (protobuf's limit); save the weights as "
    "external data (onnx.save(model, path, save_as_external_data=True))",
)
INPUT_DATA_LIMIT = ReadLimit("ORTGPU_MAX_INPUTS", 16 << 30, "generated input data")
PACKAGE_TEXT_LIMIT = ReadLimit("ORTGPU_MAX_PACKAGE_TEXT", 1 << 20, "text file of a package")
LIMITS: tuple[ReadLimit, ...] = (MODEL_LIMIT, CONFIG_LIMIT, BASELINE_LIMIT, INPUT_DATA_LIMIT, PACKAGE_TEXT_LIMIT)


def check_input_file(
    path: Path | str,
    what: str,
    hint: str,
    *,
    error: type[BadInputError] = UnreadableInputError,
    directory_hint: str | None = None,
) -> os.stat_result:
    """The stat of ``path`` when it is a regular file ortgpu can read; otherwise ``error`` with one line.

    Refused: a missing path, a folder (``directory_hint`` then replaces ``hint``), a FIFO, character or block
    device, socket, a symlink loop, a path the file system cannot even look up (a name over 255 bytes).
    """
    try:
        info = os.stat(path)
    except OSError as exc:
        raise _stat_error(path, what, hint, exc, error) from None
    except ValueError:  # an embedded NUL byte
        raise error(f"{what} path {quoted(str(path))} contains a NUL character", hint) from None
    if stat.S_ISDIR(info.st_mode):
        raise error(f"{what} {path} is a directory, not a file", directory_hint or hint)
    if not stat.S_ISREG(info.st_mode):
        kind = (
            "a FIFO (named pipe)"
            if stat.S_ISFIFO(info.st_mode)
            else "a device"
            if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)
            else "a socket"
            if stat.S_ISSOCK(info.st_mode)
            else "a special file"
        )
        raise error(f"{what} {path} is {kind}, not a regular file: ortgpu reads only regular files", hint)
    return info


def _stat_error(path: Path | str, what: str, hint: str, exc: OSError, error: type[BadInputError]) -> BadInputError:
    if exc.errno == errno.ENOENT:
        return error(f"{what} not found: {path}", "check the path; " + hint)
    if exc.errno == errno.ENOTDIR:
        return error(f"{what} not found: {path} (a part of the path is a file, not a folder)", "check the path")
    if exc.errno == errno.ENAMETOOLONG:
        return error(
            f"{what} path is too long for the file system: {quoted(str(path), 120)}",
            "a file or folder name is limited to 255 bytes; use a shorter one",
        )
    if exc.errno == errno.ELOOP:
        return error(f"{what} {path} is a symbolic link loop", "fix the link so it ends at a file")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return error(f"cannot read {what} {path}: permission denied", "check the permissions of the file and folders")
    return error(f"cannot read {what} {path}: {exc.strerror or exc}", hint)


def read_input_bytes(
    path: Path | str,
    limit: ReadLimit,
    hint: str,
    *,
    what: str | None = None,
    error: type[BadInputError] = UnreadableInputError,
    directory_hint: str | None = None,
    shown: str | None = None,
) -> bytes:
    """The bytes of a regular file of at most ``limit``; refused (one line) before reading when it is bigger.

    The file is opened without blocking and checked again on the open descriptor, so a path swapped for a FIFO
    or device after the check is refused too; it is read no further than the limit even if it grows.
    ``what`` names the kind of file in messages (default: the limit's), ``shown`` the file (default: its path).
    """
    label = what or limit.what
    subject = f"{label} {shown or path}"
    info = check_input_file(path, label, hint, error=error, directory_hint=directory_hint)
    cap = limit.value()
    if info.st_size > cap:
        raise limit.too_large(subject, info.st_size)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise _stat_error(path, label, hint, exc, error) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise error(f"{subject} is not a regular file: ortgpu reads only regular files", hint)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = _read_at_most(handle, cap + 1)
    except MemoryError:
        raise EnvironmentUnfitError(
            f"not enough memory to read {subject} ({human_bytes(info.st_size)})", "free memory and retry"
        ) from None
    except OSError as exc:
        raise error(f"cannot read {subject}: {exc.strerror or exc}", hint) from None
    finally:
        os.close(fd)
    if len(data) > cap:
        raise limit.too_large(subject, cap, at_least=True)
    return data


def read_input_text(
    path: Path | str,
    limit: ReadLimit,
    hint: str,
    *,
    what: str | None = None,
    error: type[BadInputError] = UnreadableInputError,
) -> str:
    """:func:`read_input_bytes` decoded as UTF-8 (a BOM is dropped); undecodable bytes are refused."""
    data = read_input_bytes(path, limit, hint, what=what, error=error)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"{what or limit.what} {path} is not UTF-8 text (byte {exc.start}: {exc.reason})", hint) from None


def read_stream(stream: IO[bytes], max_bytes: int, what: str, hint: str) -> bytes:
    """At most ``max_bytes`` of a stream (stdin): more is refused, so ``< /dev/zero`` ends at once."""
    try:
        data = _read_at_most(stream, max_bytes + 1)
    except OSError as exc:
        raise UnreadableInputError(f"cannot read {what}: {exc.strerror or exc}", hint) from None
    if len(data) > max_bytes:
        raise InputTooLargeError(f"{what} is over {human_bytes(max_bytes)}", hint)
    return data


def _read_at_most(stream: IO[bytes], count: int) -> bytes:
    chunks: list[bytes] = []
    left = count
    while left > 0:
        chunk = stream.read(min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def parse_nested(parse: Callable[[str], T], text: str, what: str, hint: str, error: type[BadInputError]) -> T:
    """``parse(text)`` for JSON or TOML, with nesting too deep for the parser refused in one line (exit 2).

    Python's JSON and TOML parsers recurse once per level; thousands of ``[`` would end in RecursionError.
    """
    try:
        return parse(text)
    except RecursionError:
        raise error(f"{what} is nested too deeply to read (thousands of [ or {{ levels)", hint) from None
