"""The winning trial as an `ortgpu.toml` that `load()`, `check` and `bench` read as it is."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ortgpu.atomic import atomic_write_text
from ortgpu.config import load_config, toml_module
from ortgpu.ep import ExecutionProvider
from ortgpu.tune.space import LEVERS

__all__ = ["MARKER", "config_text", "write_config"]

MARKER = "# written by ortgpu tune"


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return _string(str(value))


_NAMED = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _string(text: str) -> str:
    """A TOML basic string. Not json.dumps: JSON writes a character outside the BMP (an emoji in an input name)
    as a surrogate pair, which TOML refuses, and leaves DEL raw, which TOML refuses too."""
    out = []
    for char in text:
        if char in _NAMED:
            out.append(_NAMED[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _comment(text: str) -> str:
    """A TOML comment takes no control character (a model file named with an escape sequence): shown escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _key(name: str) -> str:
    plain = name.isascii() and name.replace("_", "").replace("-", "").isalnum()
    return name if plain else _string(name)


def config_text(
    params: Mapping[str, Any],
    ep: ExecutionProvider,
    shapes: Mapping[str, tuple[int, ...]],
    free_dims: Mapping[str, Mapping[str, int]] | None,
    model: Mapping[str, str] | None,
    header: str,
) -> str:
    """The TOML of one trial's settings: [model] (a converted/fused file), [run] (io), [session], [ep.*],
    [inputs] (the tuned shapes)."""
    levers = {lever.name: lever for lever in LEVERS}
    session = {k: v for k, v in params.items() if k in levers and levers[k].where == "session"}
    ep_options = {k: v for k, v in params.items() if k in levers and levers[k].where == "ep"}
    if ep is ExecutionProvider.CUDA and params.get("precision") in ("fp32", "tf32"):
        ep_options["use_tf32"] = params["precision"] == "tf32"
    for key, value in (free_dims or {}).items():
        if value:
            session[key] = dict(value)
    comment = [f"# {_comment(line)}" for line in header.splitlines()]
    lines = [MARKER, *comment, 'fallback = "none"', ""]
    if model:
        lines += ["[model]", *(f"{k} = {_value(v)}" for k, v in model.items()), ""]
    lines += ["[run]", f"mode = {_value(params.get('io', 'run'))}", ""]
    if session:
        lines += ["[session]", *(f"{k} = {_value(v)}" for k, v in session.items()), ""]
    if ep.is_gpu and ep_options:
        lines += [f"[ep.{ep.value}]", *(f"{k} = {_value(v)}" for k, v in ep_options.items()), ""]
    if shapes:
        lines += ["[inputs]", f"shapes = {_value({k: 'x'.join(map(str, v)) for k, v in shapes.items()})}", ""]
    return "\n".join(lines)


def write_config(path: Path, text: str) -> Path:
    """Write atomically, then read it back through the one config reader (what load/check/bench will do)."""
    toml_module().loads(text)  # TOML tune cannot write is a bug: raise before anything replaces the file
    atomic_write_text(path, text)
    load_config(path)  # a config tune writes and ortgpu cannot read is a bug: fail here, loudly
    return path
