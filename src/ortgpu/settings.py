"""What a setting is (kind, default, bounds, help) and how a value of each kind is read and checked."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ortgpu.errors import ConfigError, quoted
from ortgpu.model.inputs import MAX_DIM


class Fallback(Enum):
    """What to do when the requested EP cannot be active: fail (default) or run on CPU and record it."""

    NONE = "none"
    CPU = "cpu"


class GraphOptimizationLevel(Enum):
    DISABLE = "disable"
    BASIC = "basic"
    EXTENDED = "extended"
    LAYOUT = "layout"
    ALL = "all"

    @property
    def ort_attr(self) -> str:
        """The member name in onnxruntime.GraphOptimizationLevel."""
        return {
            GraphOptimizationLevel.DISABLE: "ORT_DISABLE_ALL",
            GraphOptimizationLevel.BASIC: "ORT_ENABLE_BASIC",
            GraphOptimizationLevel.EXTENDED: "ORT_ENABLE_EXTENDED",
            GraphOptimizationLevel.LAYOUT: "ORT_ENABLE_LAYOUT",
            GraphOptimizationLevel.ALL: "ORT_ENABLE_ALL",
        }[self]


class ExecutionMode(Enum):
    SEQUENTIAL = "sequential"
    PARALLEL = "parallel"

    @property
    def ort_attr(self) -> str:
        return {ExecutionMode.SEQUENTIAL: "ORT_SEQUENTIAL", ExecutionMode.PARALLEL: "ORT_PARALLEL"}[self]


class Kind(Enum):
    """The type of a setting's value, as written in ortgpu.toml."""

    BOOL = "bool"
    INT = "int"
    BYTES = "bytes"  # an int, or a string with a unit: "8GB" (10^9), "512MiB" (2^20)
    CHOICE = "choice"
    STR = "string"
    SHAPES = "table of shapes"  # {name = "1x3x224x224"} or {name = [1, 3, 224, 224]}
    DIMS = "table of ints"  # {symbol = 8}
    RANGES = "table of [low, high]"
    PATH = "path"  # relative to the config file's folder


@dataclass(frozen=True)
class Setting:
    """One setting: its declaration is the single source for validation and for docs/config.md."""

    name: str
    kind: Kind
    help: str
    default: Any = None  # None: not passed to onnxruntime, which then uses its own default (`ort_default`)
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None
    ort_default: str | None = None  # what onnxruntime does when the setting is left out (docs only)

    def parse(self, value: Any, where: str) -> Any:
        """The validated Python value (str/int/bool/float, or an enum member's value for choices)."""
        return _PARSERS[self.kind](self, value, where)

    def to_provider_value(self, value: Any) -> str:
        """The string onnxruntime's provider-option parser expects."""
        if isinstance(value, bool):
            return "1" if value else "0"
        return str(value)


# ---------------------------------------------------------------------------------------------------------------
# Value parsing
# ---------------------------------------------------------------------------------------------------------------

_BYTE_UNITS = {
    "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}  # fmt: skip


def parse_bytes(value: Any, where: str = "value") -> int:
    """An int, or "8GB" / "512MiB" / "1.5 GiB" -> bytes. SI units are powers of 10, IEC units powers of 2."""
    if isinstance(value, bool):
        raise ConfigError(f"{where}: expected a byte count, got {value!r}", 'write e.g. 8589934592 or "8GiB"')
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if re.fullmatch(r"[0-9]{1,30}", text):
        return int(text)
    match = re.fullmatch(r"([0-9]{1,30}(?:\.[0-9]{1,30})?)\s*([A-Za-z]+)", text)
    unit = _BYTE_UNITS.get(match.group(2).lower()) if match else None
    if match is None or unit is None:
        raise ConfigError(
            f"{where}: cannot read {quoted(value)} as a byte count",
            "write bytes (8589934592) or a number with a unit: B, KB, MB, GB, TB (powers of 10), KiB, MiB, GiB, TiB",
        )
    return round(float(match.group(1)) * unit)


def _parse_bool(setting: Setting, value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{where}: expected true or false, got {value!r}", f"set {setting.name} = true or false")


def _parse_int(setting: Setting, value: Any, where: str) -> int:
    if isinstance(value, bool):
        raise ConfigError(f"{where}: expected an integer, got {value!r}", f"set {setting.name} to a whole number")
    if isinstance(value, int):
        number = value
    else:
        text = str(value).strip()
        if not re.fullmatch(r"[+-]?[0-9]{1,30}", text):
            raise ConfigError(
                f"{where}: expected an integer, got {quoted(value)}", f"set {setting.name} to a whole number"
            )
        number = int(text)
    return _check_bounds(setting, number, where)


def _parse_bytes_setting(setting: Setting, value: Any, where: str) -> int:
    return _check_bounds(setting, parse_bytes(value, where), where)


# onnxruntime takes whole-number settings as a C int and byte counts as a size_t: a value past those would
# only fail inside ORT's bindings (a multi-line pybind message), so the declaration's range is capped here.
INT_CEILING = 2**31 - 1
BYTES_CEILING = 2**63 - 1


def _check_bounds(setting: Setting, number: int, where: str) -> int:
    ceiling = BYTES_CEILING if setting.kind is Kind.BYTES else INT_CEILING
    low = setting.minimum if setting.minimum is not None else -ceiling - 1
    high = min(setting.maximum, ceiling) if setting.maximum is not None else ceiling
    if number < low or number > high:
        bounds = f">= {low}" if high == ceiling else f"between {low} and {high}"
        if high == ceiling:
            bounds += f" and at most {ceiling:,} ({'a 64-bit size' if setting.kind is Kind.BYTES else 'a C int'})"
        shown = str(number) if len(str(number)) <= 24 else f"a {len(str(abs(number)))}-digit number"
        raise ConfigError(f"{where}: {shown} is out of range", f"{setting.name} must be {bounds}")
    return number


def _parse_choice(setting: Setting, value: Any, where: str) -> str:
    text = str(value).strip()
    for choice in setting.choices:
        if text.lower() == choice.lower():
            return choice
    raise ConfigError(
        f"{where}: {value!r} is not one of {', '.join(setting.choices)}{did_you_mean(text, setting.choices)}",
        f"set {setting.name} to one of: {', '.join(setting.choices)}",
    )


def _parse_str(setting: Setting, value: Any, where: str) -> str:
    if isinstance(value, (dict, list)):
        raise ConfigError(
            f"{where}: expected a string, got {type(value).__name__}", f"quote the value of {setting.name}"
        )
    return str(value)


def _parse_shapes(setting: Setting, value: Any, where: str) -> dict[str, tuple[int, ...]]:
    table = expect_table(value, where)
    shapes: dict[str, tuple[int, ...]] = {}
    for name, shape in table.items():
        if isinstance(shape, str):
            text = shape.strip().lower()
            parts = [] if text in ("", "scalar", "[]") else re.split(r"[x,\s]+", text.strip("[]() "))
        elif isinstance(shape, list):
            parts = shape
        else:
            raise ConfigError(f'{where}.{name}: expected "1x3x224x224" or a list of ints', 'e.g. image = "1x3x224x224"')
        dims = []
        for part in parts:
            if isinstance(part, bool) or not re.fullmatch(r"[0-9]{1,19}", str(part).strip()):
                raise ConfigError(
                    f"{where}.{name}: {quoted(shape)} is not a shape of whole numbers", 'e.g. "1x3x224x224"'
                )
            dims.append(_dim_in_range(int(str(part).strip()), f"{where}.{name}"))
        shapes[str(name)] = tuple(dims)
    return shapes


def _parse_dims(setting: Setting, value: Any, where: str) -> dict[str, int]:
    table = expect_table(value, where)
    dims: dict[str, int] = {}
    for name, size in table.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(f"{where}.{name}: expected a positive integer, got {quoted(size)}", "e.g. batch = 8")
        dims[str(name)] = _dim_in_range(size, f"{where}.{name}")
    return dims


def _dim_in_range(value: int, where: str) -> int:
    if value > MAX_DIM:
        raise ConfigError(f"{where}: dim {value} is larger than ONNX allows ({MAX_DIM:,})", "use a realistic size")
    return value


def _parse_ranges(setting: Setting, value: Any, where: str) -> dict[str, tuple[float, float]]:
    table = expect_table(value, where)
    ranges: dict[str, tuple[float, float]] = {}
    for name, pair in table.items():
        ok = (
            isinstance(pair, list)
            and len(pair) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in pair)
        )
        if not ok or pair[0] > pair[1]:
            raise ConfigError(
                f"{where}.{name}: expected [low, high] with low <= high, got {pair!r}", "e.g. image = [0.0, 1.0]"
            )
        ranges[str(name)] = (float(pair[0]), float(pair[1]))
    return ranges


def _parse_path(setting: Setting, value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: expected a file path string, got {value!r}", 'e.g. npz = "inputs.npz"')
    return value


def expect_table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table, got {type(value).__name__}", "write it as { name = value }")
    return value


_PARSERS: dict[Kind, Callable[[Setting, Any, str], Any]] = {
    Kind.BOOL: _parse_bool,
    Kind.INT: _parse_int,
    Kind.BYTES: _parse_bytes_setting,
    Kind.CHOICE: _parse_choice,
    Kind.STR: _parse_str,
    Kind.SHAPES: _parse_shapes,
    Kind.DIMS: _parse_dims,
    Kind.RANGES: _parse_ranges,
    Kind.PATH: _parse_path,
}


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """ " (did you mean 'tensorrt'?)" for the closest candidate, or "" when none is close."""
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
