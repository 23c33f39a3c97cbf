"""Where an fp16 model came from: the metadata `ortgpu fp16` stamps on it, and the [model] section of an
ortgpu.toml that makes `ortgpu.load`, `check` and `bench` run it for its fp32 model."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["KEEP_KEY", "SOURCE_SHA_KEY", "config_section", "sha256_file"]

SOURCE_SHA_KEY = "ortgpu.fp16.source_sha256"  # metadata `ortgpu fp16` writes: the fp32 model it came from
KEEP_KEY = "ortgpu.fp16.keep"  # and the nodes it kept in fp32


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def config_section(fp16: Path, fp16_sha256: str, source_sha256: str, config_folder: Path) -> str:
    """The [model] section (docs/config.md) that points ``ortgpu.load(fp32 model, config=...)`` at ``fp16``:
    the file relative to the config's folder, pinned by its sha256 and by the fp32 model's."""
    import json

    relative = os.path.relpath(Path(fp16).resolve(), Path(config_folder).resolve())
    return "\n".join(
        [
            "[model]",
            f"file = {json.dumps(Path(relative).as_posix())}",
            f'sha256 = "{fp16_sha256}"',
            f'source_sha256 = "{source_sha256}"',
            'precision = "fp16"',
            "",
        ]
    )
