"""Would fixing the model's open dims move the nodes ORT keeps on the CPU onto the GPU? Placement with and without."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ortgpu.config import Config
from ortgpu.ep import ExecutionProvider
from ortgpu.model.free_dims import FixedDims, fixed_dims_for, input_dim_labels
from ortgpu.placement import PlacementReport

__all__ = ["FixedDimsProbe", "probe_fixed_dims"]


@dataclass(frozen=True)
class FixedDimsProbe:
    """Placement of the same session rebuilt with the open dims fixed to the checked shapes.

    ``off_before`` / ``off_after``: compute nodes off the requested EP without / with the overrides;
    ``settings``: the [session] lines that give the ``after`` placement.
    """

    settings: dict[str, dict[str, int]]
    off_before: int
    off_after: int
    memcpy_before: int
    memcpy_after: int
    unfixed: tuple[str, ...] = ()

    @property
    def moved(self) -> int:
        return self.off_before - self.off_after

    def message(self, provider: str) -> str:
        toml = "; ".join(
            f"{k} = {{ {', '.join(f'{n} = {v}' for n, v in d.items())} }}" for k, d in self.settings.items() if d
        )
        if self.moved <= 0:
            return (
                f"fixing the open dims ({toml}) leaves the {self.off_before} node(s) off {provider}: they are not "
                "shape computations ORT can fold"
            )
        rest = f", {self.off_after} stay off it" if self.off_after else ": every node then runs there"
        return (
            f"fixing the open dims moves {self.moved} of {self.off_before} CPU node(s) onto {provider}{rest} "
            f"(Memcpy {self.memcpy_before} -> {self.memcpy_after}); serve fixed shapes with [session] {toml} "
            "in an ortgpu.toml (what CUDA graphs need)"
        )


OpenSession = Callable[..., Any]


def probe_fixed_dims(
    model: Path,
    ep: ExecutionProvider,
    config: Config,
    shapes: Mapping[str, tuple[int, ...]],
    before: PlacementReport,
    open_session: OpenSession,
    *,
    device_id: int | None = None,
    ep_options: Mapping[str, str] | None = None,
    model_info: Any = None,
) -> FixedDimsProbe | None:
    """Rebuild the session with the model's open dims fixed to ``shapes`` and compare its placement with
    ``before``. None when there is nothing to fix (no open dim, or the config already fixes them all)."""
    fixed: FixedDims = fixed_dims_for(input_dim_labels(model), shapes)
    settings = fixed.session_settings(config.session)
    if fixed.empty or all(config.session_dims(k) == v for k, v in settings.items()):
        return None
    with open_session(
        model,
        ep,
        config.with_session(**settings),
        device_id,
        ep_options,
        collect_placement=True,
        model_info=model_info,
    ) as session:
        after = session.placement
    if after is None:
        return None
    return FixedDimsProbe(
        settings={k: v for k, v in settings.items() if v},
        off_before=before.off_requested_count,
        off_after=after.off_requested_count,
        memcpy_before=before.memcpy_count,
        memcpy_after=after.memcpy_count,
        unfixed=fixed.unfixed,
    )
