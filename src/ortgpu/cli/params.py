"""Command-line values: the parsers behind each flag and the click parameter types that use them.

Only the CLI names flags. Each type reads one kind of value (a list of whole numbers, a duration, a percentage,
a shape, a symbolic dim, a value range, a provider option, an EP name) and refuses a bad one with ortgpu's
one-line error and hint (exit 2), naming the flag it came from.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import click

from ortgpu.bench.modes import BenchMode
from ortgpu.bench.plan import BenchInputError
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import BadInputError, ConfigError, quoted
from ortgpu.model.inputs import MAX_DIM, InputError

__all__ = [
    "DIM",
    "DURATION",
    "EP",
    "EP_OPTION",
    "INT_LIST",
    "MODES",
    "PERCENT",
    "RANGE",
    "SHAPE",
    "WARMUP",
    "FlagError",
    "WholeNumber",
    "int_flag",
    "parse_dim",
    "parse_ep_option",
    "parse_int_list",
    "parse_modes",
    "parse_percent",
    "parse_range",
    "parse_seconds",
    "parse_shape",
    "parse_warmup",
]

T = TypeVar("T")


class FlagError(BadInputError):
    """A flag value that cannot be read (exit 2)."""


# ------------------------------------------------------------------------------------------------ parsers


def int_flag(text: str | None, flag: str, minimum: int = 0) -> int | None:
    """A whole-number flag given as text (None when absent): FlagError unless it is a whole number >= minimum."""
    if text is None:
        return None
    return WholeNumber(minimum).read(text, flag)


def parse_int_list(text: str, flag: str) -> tuple[int, ...]:
    """ "1,8,32" -> (1, 8, 32); anything that is not a list of positive whole numbers is a BenchInputError."""
    values = []
    for part in str(text).split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise BenchInputError(
                f"{flag} {text!r}: {part!r} is not a whole number of 1 or more",
                f"give a comma-separated list, e.g. {flag} 1,8,32",
            )
        values.append(int(part))
    return tuple(dict.fromkeys(values))


def parse_seconds(text: str, flag: str = "--duration") -> float:
    """ "5", "5s", "500ms", "1.5" -> seconds (positive, finite)."""
    raw = str(text).strip().lower()
    scale = 1.0
    if raw.endswith("ms"):
        raw, scale = raw[:-2], 1e-3
    elif raw.endswith("s"):
        raw = raw[:-1]
    try:
        value = float(raw) * scale
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value > 0):
        raise BenchInputError(f"{flag} {text!r}: not a positive time", f"e.g. {flag} 5 (seconds) or {flag} 500ms")
    return value


def parse_percent(text: str, flag: str = "--max-regression") -> float:
    """ "10%" or "10" -> 0.10 (a fraction)."""
    raw = str(text).strip().rstrip("%").strip()
    try:
        value = float(raw) / 100.0
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value >= 0):
        raise BenchInputError(f"{flag} {text!r}: not a percentage", f"e.g. {flag} 10%")
    return value


def parse_warmup(text: str) -> int | None:
    """ "auto" -> None (until stable); "20" -> 20 runs."""
    raw = str(text).strip().lower()
    if raw == "auto":
        return None
    if not raw.isdigit():
        raise BenchInputError(f"--warmup {text!r}: not a run count or 'auto'", "e.g. --warmup 50 or --warmup auto")
    return int(raw)


def parse_modes(text: str) -> tuple[tuple[BenchMode, ...], bool]:
    """ "run,iobinding" -> the modes; "all" -> every mode, with the flag that skips those the EP cannot do."""
    raw = [p.strip().lower() for p in str(text).split(",") if p.strip()]
    if raw == ["all"]:
        return tuple(BenchMode), True
    modes = []
    for part in raw:
        try:
            modes.append(BenchMode(part))
        except ValueError:
            raise BenchInputError(
                f"--mode {text!r}: unknown mode {part!r}", "use run, iobinding, cudagraph (comma-separated) or all"
            ) from None
    if not modes:
        raise BenchInputError("--mode: empty", "use run, iobinding, cudagraph or all")
    return tuple(dict.fromkeys(modes)), False


def _split_assignment(text: str, flag: str, example: str) -> tuple[str, str]:
    name, sep, value = text.rpartition("=")
    name = name.strip()
    if not sep or not name:
        raise InputError(f"{flag} {quoted(text)}: expected NAME=VALUE", f"e.g. {flag} {example}")
    return name, value.strip()


def _parse_int(text: str, what: str, flag: str, example: str) -> int:
    import re

    text = text.strip()
    if text.startswith("-") and text[1:].isascii() and text[1:].isdigit():
        raise InputError(f"{flag}: {what} {quoted(text)} is negative", f"e.g. {flag} {example}")
    if not re.fullmatch(r"\+?[0-9]+", text):  # ASCII digits only: int() would also take "²"-like look-alikes
        raise InputError(f"{flag}: {what} {quoted(text)} is not a whole number", f"e.g. {flag} {example}")
    if len(text.lstrip("+0")) > 19 or int(text) > MAX_DIM:
        raise InputError(
            f"{flag}: {what} {quoted(text)} is larger than ONNX allows ({MAX_DIM:,})", f"e.g. {flag} {example}"
        )
    return int(text)


def parse_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """``"x=1x3x224x224"`` -> ``("x", (1, 3, 224, 224))``. Commas also separate dims; ``"x="`` or
    ``"x=scalar"`` is a 0-d input."""
    example = "image=1x3x224x224"
    name, value = _split_assignment(text, "--shape", example)
    if value.lower() in ("", "scalar", "()", "[]"):
        return name, ()
    parts = value.strip("[]()").replace(",", "x").replace("X", "x").split("x")
    return name, tuple(_parse_int(p.strip(), "dim", "--shape", example) for p in parts)


def parse_dim(text: str) -> tuple[str, int]:
    """``"batch=8"`` -> ``("batch", 8)``: a value for a symbolic dim name, wherever it appears."""
    name, value = _split_assignment(text, "--dim", "batch=8")
    return name, _parse_int(value, "value", "--dim", "batch=8")


def parse_range(text: str) -> tuple[str, tuple[float, float]]:
    """``"x=-1,1"`` -> ``("x", (-1.0, 1.0))``; LOW <= HIGH, both finite."""
    import math

    example = "pixel_values=-1,1"
    name, value = _split_assignment(text, "--range", example)
    parts = value.split(",")
    if len(parts) != 2:
        raise InputError(f"--range {quoted(text)}: expected NAME=LOW,HIGH", f"e.g. --range {example}")
    try:
        low, high = float(parts[0]), float(parts[1])
    except ValueError:
        raise InputError(f"--range {quoted(text)}: LOW and HIGH must be numbers", f"e.g. --range {example}") from None
    if not (math.isfinite(low) and math.isfinite(high)):
        raise InputError(f"--range {quoted(text)}: LOW and HIGH must be finite", f"e.g. --range {example}")
    if low > high:
        raise InputError(
            f"--range {text!r}: LOW {low:g} is above HIGH {high:g}", f"e.g. --range {name}={high:g},{low:g}"
        )
    return name, (low, high)


def parse_ep_option(text: str) -> tuple[str, str]:
    """--ep-option KEY=VALUE -> (key, value); validation happens in validate_ep_options."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise ConfigError(
            f"--ep-option {text!r}: expected KEY=VALUE", "e.g. --ep-option cudnn_conv_algo_search=HEURISTIC"
        )
    return key.strip(), value.strip()


# ------------------------------------------------------------------------------------------------ click types


class Parsed(click.ParamType, Generic[T]):
    """A click type read by ``parse(text, flag)``; its errors are ortgpu's own one-line errors, not click's."""

    def __init__(self, name: str, parse: Callable[[str, str], T]) -> None:
        self.name = name
        self._parse = parse

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> T:
        if not isinstance(value, str):
            return value  # already converted (a default given as a value)
        flag = param.opts[0] if param is not None and param.opts else self.name
        return self._parse(value, flag)


class WholeNumber(click.ParamType):
    """A whole number of at least ``minimum``: "--seed 'x' is not a whole number" rather than a usage error."""

    name = "integer"

    def __init__(self, minimum: int = 0) -> None:
        self.minimum = minimum

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        return self.read(value, param.opts[0] if param is not None and param.opts else "value")

    def read(self, value: str, flag: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise FlagError(f"{flag} {value!r} is not a whole number", f"e.g. {flag} {max(self.minimum, 0)}") from None
        if number < self.minimum:
            raise FlagError(f"{flag} {number} is below {self.minimum}", f"use {flag} {self.minimum} or more")
        return number


INT_LIST = Parsed("N,N", parse_int_list)
DURATION = Parsed("seconds", parse_seconds)
PERCENT = Parsed("percent", parse_percent)
WARMUP = Parsed("N|auto", lambda text, flag: parse_warmup(text))
MODES = Parsed("modes", lambda text, flag: parse_modes(text))
SHAPE = Parsed("NAME=SHAPE", lambda text, flag: parse_shape(text))
DIM = Parsed("SYMBOL=N", lambda text, flag: parse_dim(text))
RANGE = Parsed("NAME=LOW,HIGH", lambda text, flag: parse_range(text))
EP_OPTION = Parsed("KEY=VALUE", lambda text, flag: parse_ep_option(text))
EP = Parsed("EP", lambda text, flag: ExecutionProvider.parse(text))
