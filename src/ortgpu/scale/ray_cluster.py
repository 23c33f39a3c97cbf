"""Joining a Ray cluster (or starting one here) for `infer --ray` and `doctor --ray`; Ray is the optional extra."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ortgpu.errors import EnvironmentUnfitError

__all__ = ["Cluster", "RayUnavailableError", "connect", "import_ray"]


class RayUnavailableError(EnvironmentUnfitError):
    """Ray is not installed, no cluster can be reached, or it lacks what the run needs (exit 3)."""


@dataclass(frozen=True)
class Cluster:
    address: str | None
    nodes: int
    gpus: int
    cpus: int


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailableError(
            "--ray needs Ray, which is not installed here", "pip install 'ortgpu[ray]' (Ray Data)"
        ) from None
    return ray


def connect(address: str | None) -> Cluster:
    """Join the Ray cluster at ``address`` (None: RAY_ADDRESS, or start one on this machine); reuses a connection
    this process already has."""
    ray = import_ray()
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"address": address, "log_to_driver": False, "logging_level": "ERROR"}
        if address is None and not os.environ.get("RAY_ADDRESS"):
            kwargs["include_dashboard"] = False  # a local cluster for this run only
        try:
            ray.init(**kwargs)
        except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
            where = address or os.environ.get("RAY_ADDRESS") or "a new local cluster"
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise RayUnavailableError(
                f"cannot reach the Ray cluster at {where}: {why}",
                "start it with `ray start --head`, or give its address with --ray-address HOST:6379",
            ) from None
    resources = ray.cluster_resources()
    alive = [n for n in ray.nodes() if n.get("Alive")]
    context = ray.get_runtime_context()
    return Cluster(
        address=getattr(context, "gcs_address", None) or address,
        nodes=len(alive),
        gpus=int(resources.get("GPU", 0)),
        cpus=int(resources.get("CPU", 0)),
    )
