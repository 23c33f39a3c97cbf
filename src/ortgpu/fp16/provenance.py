"""Which model `ortgpu.load` opens: the config's fp16 model, once it is proven to come from the model given."""

from __future__ import annotations

from pathlib import Path

from ortgpu.config import Config, ConfigError

__all__ = ["KEEP_KEY", "SOURCE_SHA_KEY", "model_to_open"]

SOURCE_SHA_KEY = "ortgpu.fp16.source_sha256"  # metadata `ortgpu fp16` writes: the fp32 model it came from
KEEP_KEY = "ortgpu.fp16.keep"  # and the nodes it kept in fp32


def model_to_open(model: str | Path, config: Config) -> Path:
    """``config.fp16_model`` when the config names one and it was converted from ``model``; else ``model``.

    Raises ConfigError (exit 2) when the fp16 file is missing, carries no provenance, or was converted from
    another model (a stale fp16 file next to a re-exported fp32 model would otherwise be served silently).
    """
    if config.fp16_model is None:
        return Path(model)
    import hashlib

    import onnx
    from google.protobuf.message import DecodeError

    fp16 = Path(config.fp16_model)
    where = config.source.name if config.source else "the config"
    if not fp16.is_file():
        raise ConfigError(
            f"{where}: fp16_model {fp16} does not exist", "write it with ortgpu fp16 MODEL -o FILE, or drop the key"
        )
    try:
        meta = {p.key: p.value for p in onnx.load(str(fp16), load_external_data=False).metadata_props}
    except (OSError, ValueError, RuntimeError, DecodeError) as exc:
        raise ConfigError(f"{where}: fp16_model {fp16} is not a readable ONNX model ({exc})", "re-create it") from None
    source = meta.get(SOURCE_SHA_KEY)
    if source is None:
        raise ConfigError(
            f"{where}: fp16_model {fp16.name} was not written by ortgpu fp16 (no {SOURCE_SHA_KEY} in its metadata)",
            "convert the model with ortgpu fp16 so its origin can be checked",
        )
    digest = hashlib.sha256(Path(model).read_bytes()).hexdigest()
    if digest != source:
        raise ConfigError(
            f"{where}: fp16_model {fp16.name} was converted from another model than {Path(model).name} "
            f"(sha256 {source[:12]} vs {digest[:12]})",
            f"re-run ortgpu fp16 {Path(model).name} -o {fp16.name}",
        )
    return fp16
