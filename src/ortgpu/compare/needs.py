"""What two ONNX Runtime builds need from the machine, side by side: the `doctor --package` analysis of each,
and what changed (CUDA / cuDNN / TensorRT majors, glibc floor, providers, libraries needed)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ortgpu.errors import OrtgpuError

__all__ = ["NeedsDiff", "PackageSource", "RequirementChange", "needs_diff"]


@dataclass(frozen=True)
class PackageSource:
    """A wheel, release archive or folder to analyse; ``metadata`` (distribution, version) for an installed
    onnxruntime folder, whose dist-info lies beside it."""

    path: Path
    metadata: tuple[str, str] | None = None


@dataclass(frozen=True)
class RequirementChange:
    kind: str  # "CUDA", "cuDNN", "glibc"...
    a: str | None
    b: str | None

    @property
    def changed(self) -> bool:
        return self.a != self.b


@dataclass(frozen=True)
class NeedsDiff:
    a: str  # "onnxruntime 1.30.0 (folder .../onnxruntime)"
    b: str
    requirements: tuple[RequirementChange, ...]
    providers_a: tuple[str, ...]
    providers_b: tuple[str, ...]
    needs_added: tuple[str, ...]  # libraries B needs from the machine that A does not
    needs_removed: tuple[str, ...]
    error: str | None = None  # why the analysis could not be made

    @property
    def changed(self) -> bool:
        return bool(
            any(r.changed for r in self.requirements)
            or set(self.providers_a) != set(self.providers_b)
            or self.needs_added
            or self.needs_removed
        )


def _analyse(source: PackageSource) -> tuple[str, dict[str, str], tuple[str, ...], set[str]]:
    from ortgpu.env.archive import open_package
    from ortgpu.env.package import analyse_package

    with open_package(source.path) as opened:
        analysis = analyse_package(opened, metadata=source.metadata)
    requirements = {r.kind.value: r.value + (" (optional)" if r.optional else "") for r in analysis.requirements}
    needs = {n.name for lib in analysis.libraries for n in lib.needs if not n.in_package}
    label = f"{analysis.label} ({analysis.kind.value} {source.path})"
    return label, requirements, tuple(analysis.providers), needs


def needs_diff(a: PackageSource, b: PackageSource) -> NeedsDiff:
    """The two analyses and their differences; an analysis that fails is reported in ``error``, not raised."""
    try:
        label_a, req_a, prov_a, needs_a = _analyse(a)
        label_b, req_b, prov_b, needs_b = _analyse(b)
    except OrtgpuError as exc:
        return NeedsDiff(str(a.path), str(b.path), (), (), (), (), (), error=exc.one_line())
    kinds = list(dict.fromkeys([*req_a, *req_b]))
    return NeedsDiff(
        a=label_a,
        b=label_b,
        requirements=tuple(RequirementChange(k, req_a.get(k), req_b.get(k)) for k in kinds),
        providers_a=prov_a,
        providers_b=prov_b,
        needs_added=tuple(sorted(needs_b - needs_a)),
        needs_removed=tuple(sorted(needs_a - needs_b)),
    )
