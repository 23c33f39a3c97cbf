"""Result objects to JSON and back: one versioned envelope for every command."""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ortgpu.limits import ReadLimit

__all__ = ["SCHEMA_VERSION", "envelope", "read_envelope", "to_jsonable"]

SCHEMA_VERSION = 1


def to_jsonable(obj: Any) -> Any:
    """Turn dataclasses, enums, paths, tuples and numpy scalars into plain JSON values.

    Non-finite floats become strings ("nan", "inf") so the JSON stays standard.
    """
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, PurePath):
        return str(obj)
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else str(obj)
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalar
        return to_jsonable(obj.item())
    return obj


def envelope(command: str, result: Any) -> dict[str, Any]:
    """The versioned JSON document every ``--json`` output and saved file uses."""
    from ortgpu import __version__

    return {
        "schema": f"ortgpu.{command}/v{SCHEMA_VERSION}",
        "ortgpu_version": __version__,
        "result": to_jsonable(result),
    }


def read_envelope(path: Path, command: str, limit: ReadLimit | None = None) -> dict[str, Any]:
    """Read a document written by :func:`envelope`; raise BadInputError when it is not ours.

    The file is read only when it is a regular file within ``limit`` (default: the baseline limit, 64 MiB).
    """
    from ortgpu.errors import BadInputError
    from ortgpu.limits import BASELINE_LIMIT, parse_nested, read_input_text

    hint = f"give a file written by ortgpu {command} --save"
    text = read_input_text(path, limit or BASELINE_LIMIT, hint, error=BadInputError)
    try:
        doc = parse_nested(json.loads, text, f"{path}", hint, BadInputError)
    except json.JSONDecodeError as exc:
        raise BadInputError(f"{path}: not a JSON file ({exc})", hint) from None
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if not isinstance(schema, str) or not schema.startswith(f"ortgpu.{command}/v"):
        raise BadInputError(
            f"{path}: not an ortgpu {command} file (schema {schema!r})",
            f"give a file written by ortgpu {command} --save",
        )
    version = schema.rsplit("/v", 1)[-1]
    if version != str(SCHEMA_VERSION):
        raise BadInputError(
            f"{path}: written with schema v{version}, this ortgpu reads v{SCHEMA_VERSION}",
            "re-create it with this ortgpu version",
        )
    return doc
