"""`ortgpu.toml` read and validated against the settings table: the Config every command uses."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, SupportsInt

from ortgpu.ep import ExecutionProvider
from ortgpu.errors import ConfigError
from ortgpu.limits import CONFIG_LIMIT, parse_nested, read_input_text
from ortgpu.model.inputs import InputSpec
from ortgpu.settings import (
    ExecutionMode,
    Fallback,
    GraphOptimizationLevel,
    Kind,
    Setting,
    did_you_mean,
    expect_table,
    parse_bytes,
)
from ortgpu.settings_table import (
    CUDA_OPTIONS,
    INPUT_SETTINGS,
    MODEL_SETTINGS,
    RUN_SETTINGS,
    SECTIONS,
    SESSION_SETTINGS,
    TENSORRT_OPTIONS,
    TOP_LEVEL_SETTINGS,
    config_reference_markdown,
    options_for,
)

__all__ = [
    "CUDA_OPTIONS",
    "INPUT_SETTINGS",
    "MODEL_SETTINGS",
    "RUN_SETTINGS",
    "SESSION_SETTINGS",
    "TENSORRT_OPTIONS",
    "TOP_LEVEL_SETTINGS",
    "Config",
    "ConfigError",
    "ExecutionMode",
    "ExecutionProvider",
    "Fallback",
    "GraphOptimizationLevel",
    "Kind",
    "Setting",
    "config_reference_markdown",
    "default_config",
    "load_config",
    "options_for",
    "parse_bytes",
    "validate_ep_options",
]


def _find(settings: Iterable[Setting], name: str) -> Setting | None:
    return next((s for s in settings if s.name == name), None)


def _unknown_key_error(key: str, where: str, settings: tuple[Setting, ...]) -> ConfigError:
    names = [s.name for s in settings]
    known = ", ".join(names) if len(names) <= 8 else ", ".join(names[:8]) + ", ..."
    hint = f"known keys: {known} (see docs/config.md)" if names else f"{where} takes no keys"
    return ConfigError(f"unknown key {key!r} in {where}{did_you_mean(key, names)}", hint)


# ---------------------------------------------------------------------------------------------------------------
# Provider options from the command line or from code
# ---------------------------------------------------------------------------------------------------------------


def validate_ep_options(ep: ExecutionProvider, options: Mapping[str, Any], where: str | None = None) -> dict[str, str]:
    """Check every key against the declaration for ``ep`` and return ORT-ready strings (bools as "1"/"0")."""
    settings = options_for(ep)
    section = where or f"[ep.{ep.value}]"
    result: dict[str, str] = {}
    for key, value in options.items():
        setting = _find(settings, key)
        if setting is None:
            if not settings:
                raise ConfigError(
                    f"the {ep.value} execution provider takes no provider options (got {key!r})",
                    "provider options apply to cuda and tensorrt; CPU settings live in [session]",
                )
            raise _unknown_key_error(key, section, settings)
        result[key] = setting.to_provider_value(setting.parse(value, f"{section} {key}"))
    return result


# ---------------------------------------------------------------------------------------------------------------
# The config object and the file reader
# ---------------------------------------------------------------------------------------------------------------


def _default_input_spec() -> InputSpec:
    return InputSpec()


def _default_session() -> dict[str, object]:
    return {s.name: s.default for s in SESSION_SETTINGS}


@dataclass(frozen=True)
class Config:
    """A validated ortgpu.toml. ``session`` holds every [session] setting (defaults filled in); ``ep_options``
    only the provider options the file sets, as the strings onnxruntime takes."""

    session: Mapping[str, object] = field(default_factory=_default_session)
    ep_options: Mapping[ExecutionProvider, Mapping[str, str]] = field(default_factory=dict)
    inputs: InputSpec = field(default_factory=_default_input_spec)
    fallback: Fallback = Fallback.NONE
    source: Path | None = None
    model: Mapping[str, object] = field(default_factory=dict)  # [model] as written (file resolved to a Path)
    run: Mapping[str, object] = field(default_factory=lambda: {s.name: s.default for s in RUN_SETTINGS})

    def options_for(self, ep: ExecutionProvider) -> dict[str, str]:
        return dict(self.ep_options.get(ep, {}))

    def session_int(self, name: str, default: int | None = None) -> int:
        """An integer [session] setting; KeyError when absent and no ``default`` is given."""
        value = self.session[name] if default is None else self.session.get(name, default)
        if isinstance(value, (str, bytes, SupportsInt)):
            return int(value)
        raise TypeError(f"[session] {name} is {type(value).__name__}, not an integer")

    def session_dims(self, name: str) -> dict[str, int]:
        """A [session] table of dimension name -> size (free_dims, free_dim_denotations); empty when unset."""
        value = self.session.get(name) or {}
        if not isinstance(value, Mapping):
            raise TypeError(f"[session] {name} is {type(value).__name__}, not a table")
        return {key: int(size) for key, size in value.items()}

    def model_file_for(self, given: Path, given_sha256: str) -> Path:
        """The model file to build sessions from: [model] file when set (checked against its sha256 and against
        the given model's), else ``given``."""
        file = self.model.get("file")
        if file is None:
            return Path(given)
        where = self.source.name if self.source else "[model]"
        if not self.model.get("sha256"):  # unpinned, any file would run in place of the given model
            raise ConfigError(
                f"{where}: [model] file {Path(str(file)).name} has no sha256",
                "add sha256 (and source_sha256, the model it came from), as ortgpu tune and ortgpu fp16 write them",
            )
        allowed = {self.model.get("source_sha256"), self.model.get("sha256")} - {None}
        if allowed and given_sha256 not in allowed:
            raise ConfigError(
                f"{where}: [model] file {Path(str(file)).name} was derived from another model than {Path(given).name} "
                f"(sha256 {given_sha256[:12]}... is not {str(self.model.get('source_sha256'))[:12]}...)",
                "use the config tune wrote for this model, or run ortgpu tune on it",
            )
        expected = self.model.get("sha256")
        if expected is not None and _sha256_of(Path(str(file))) != expected:
            raise ConfigError(
                f"{where}: [model] file {file} changed since its sha256 was written",
                "run ortgpu tune again, or restore the file",
            )
        return Path(str(file))

    def with_session(self, **values: Any) -> Config:
        """A copy with [session] settings replaced (validated like the file)."""
        session = dict(self.session)
        for key, value in values.items():
            setting = _find(SESSION_SETTINGS, key)
            if setting is None:
                raise _unknown_key_error(key, "[session]", SESSION_SETTINGS)
            session[key] = setting.parse(value, f"[session] {key}")
        return replace(self, session=session)


_HASHES: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256: a big model is hashed once


def _sha256_of(path: Path) -> str:
    import hashlib

    try:
        stat = path.stat()
    except OSError as exc:
        raise ConfigError(f"[model] file {path} cannot be read: {exc.strerror}", "check the path in [model]") from None
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _HASHES:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _HASHES[key] = digest.hexdigest()
    return _HASHES[key]


def default_config() -> Config:
    return Config()


def load_config(path: Path | str | None) -> Config:
    """Read and validate ``path``; None gives the defaults (./ortgpu.toml is never read implicitly)."""
    if path is None:
        return Config()
    path = Path(path)
    data = _read_toml(path)
    where = path.name
    fallback = Fallback.NONE
    session = _default_session()
    ep_options: dict[ExecutionProvider, dict[str, str]] = {}
    inputs_raw: dict[str, Any] = {}
    tables: dict[str, dict[str, Any]] = {"model": {}, "run": {s.name: s.default for s in RUN_SETTINGS}}
    for key, value in data.items():
        if key == "fallback":
            fallback = Fallback(TOP_LEVEL_SETTINGS[0].parse(value, f"{where}: fallback"))
        elif key == "session":
            for name, item in expect_table(value, f"{where}: [session]").items():
                setting = _find(SESSION_SETTINGS, name)
                if setting is None:
                    raise _unknown_key_error(name, f"{where}: [session]", SESSION_SETTINGS)
                session[name] = setting.parse(item, f"{where}: [session] {name}")
        elif key == "ep":
            for ep_name, table in expect_table(value, f"{where}: [ep]").items():
                ep = _section_ep(ep_name, where)
                ep_options[ep] = validate_ep_options(
                    ep, expect_table(table, f"{where}: [ep.{ep_name}]"), f"{where}: [ep.{ep.value}]"
                )
        elif key == "inputs":
            for name, item in expect_table(value, f"{where}: [inputs]").items():
                setting = _find(INPUT_SETTINGS, name)
                if setting is None:
                    raise _unknown_key_error(name, f"{where}: [inputs]", INPUT_SETTINGS)
                inputs_raw[name] = setting.parse(item, f"{where}: [inputs] {name}")
        elif key in tables:
            settings = SECTIONS[key]
            for name, item in expect_table(value, f"{where}: [{key}]").items():
                setting = _find(settings, name)
                if setting is None:
                    raise _unknown_key_error(name, f"{where}: [{key}]", settings)
                tables[key][name] = setting.parse(item, f"{where}: [{key}] {name}")
        else:
            candidates = ["fallback", "session", "inputs", "ep", "model", "run"]
            kind = "section" if isinstance(value, dict) else "key"
            raise ConfigError(
                f"unknown {kind} {key!r} in {where}{did_you_mean(key, candidates)}",
                "top level takes: fallback, [session], [ep.cuda], [ep.tensorrt], [inputs], [model], [run] "
                "(see docs/config.md)",
            )
    if "file" in tables["model"]:
        tables["model"]["file"] = path.parent / str(tables["model"]["file"])
    elif tables["model"]:
        raise ConfigError(f"{where}: [model] without file", 'add file = "model.onnx" or remove [model]')
    return Config(
        session=session,
        ep_options=ep_options,
        inputs=_input_spec(inputs_raw, path.parent),
        fallback=fallback,
        source=path,
        model=tables["model"],
        run=tables["run"],
    )


def _section_ep(name: str, where: str) -> ExecutionProvider:
    names = [ep.value for ep in ExecutionProvider]
    if name not in names:
        raise ConfigError(
            f"unknown section [ep.{name}] in {where}{did_you_mean(name, names)}",
            "provider sections are [ep.cuda] and [ep.tensorrt]",
        )
    return ExecutionProvider(name)


def _input_spec(values: Mapping[str, Any], folder: Path) -> InputSpec:
    npz = values.get("npz")
    return InputSpec(
        shapes=values.get("shapes", {}),
        dims=values.get("dims", {}),
        ranges=values.get("ranges", {}),
        npz=(folder / npz) if npz else None,
        seed=values.get("seed", 0),
    )


def toml_module() -> Any:
    """The TOML reader: the standard library's, or tomli on Python 3.10."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib
    return tomllib


def _read_toml(path: Path) -> dict[str, Any]:
    tomllib = toml_module()

    hint = "it must be a UTF-8 TOML file (see docs/config.md)"
    text = read_input_text(path, CONFIG_LIMIT, hint, what="config file", error=ConfigError)
    try:
        return parse_nested(tomllib.loads, text, f"config {path.name}", "see docs/config.md", ConfigError)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{path.name} is not valid TOML: {exc}", "fix the line it names (see docs/config.md)"
        ) from None


if __name__ == "__main__":  # regenerate the reference: python -m ortgpu.config > docs/config.md
    import sys

    sys.stdout.write(config_reference_markdown())
