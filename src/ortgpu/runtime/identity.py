"""Which ONNX Runtime `import onnxruntime` would load here, named from distribution metadata (nothing is imported)."""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass
from pathlib import Path

from ortgpu.env.distributions import find_distributions

__all__ = ["OrtIdentity", "VersionInfo", "version_info"]


@dataclass(frozen=True)
class OrtIdentity:
    distribution: str | None  # "onnxruntime-gpu"; None when the folder's owner is unknown or nothing is installed
    version: str | None
    module_dir: Path | None  # the onnxruntime/ folder `import onnxruntime` would run
    others: tuple[str, ...]  # other installed ORT distributions ("onnxruntime 1.32.0"): a conflict


@dataclass(frozen=True)
class VersionInfo:
    """What `ortgpu --version` says: ortgpu, the Python running it, and the ORT it would load."""

    ortgpu: str
    python: str  # "3.11.7"
    implementation: str  # "CPython"
    executable: str
    ort: OrtIdentity

    def lines(self) -> tuple[str, ...]:
        ort = self.ort
        if ort.module_dir is None:
            runtime = "onnxruntime: not installed (pip install 'ortgpu[cpu]' or 'ortgpu[gpu]'; see ortgpu doctor)"
        else:
            name = f"{ort.distribution} {ort.version}" if ort.distribution else f"onnxruntime {ort.version or '?'}"
            runtime = f"onnxruntime: {name} ({ort.module_dir})"
            if ort.others:
                runtime += f"; also installed: {', '.join(ort.others)} (conflict: ortgpu doctor --fix)"
        return (
            f"ortgpu {self.ortgpu}",
            f"Python {self.python} ({self.implementation}, {self.executable})",
            runtime,
        )


def version_info(sys_path: list[str] | None = None) -> VersionInfo:
    """Name ortgpu, Python and the ORT distribution whose files `import onnxruntime` would run, without importing it."""
    from ortgpu import __version__

    report = find_distributions(sys_path)
    loaded = report.loaded_distribution
    info = report.package_info
    version = loaded.version if loaded else (info.version if info else None)
    others = tuple(f"{d.name} {d.version}" for d in report.distributions if d is not loaded)
    identity = OrtIdentity(
        distribution=loaded.name if loaded else (info.package_name if info else None),
        version=version,
        module_dir=report.module_dir,
        others=others,
    )
    return VersionInfo(
        __version__, platform.python_version(), platform.python_implementation(), sys.executable, identity
    )
