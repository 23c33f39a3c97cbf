"""`ortgpu doctor --ray`: the doctor on every node of a Ray cluster, one task per node pinned by node affinity.

Each node runs :func:`ortgpu.doctor.machine.diagnose` (its real load attempt included) and sends back a few facts:
GPUs, driver, the CUDA / cuDNN files the CUDA session mapped, the ONNX Runtime version, the verdict. A column
drifts when the nodes do not all agree on it; a node whose task could not run is a node not ready.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from ortgpu.doctor.machine import diagnose
from ortgpu.errors import ExitCode
from ortgpu.progress import silent
from ortgpu.scale.ray_cluster import connect, import_ray

__all__ = ["DRIFT_FIELDS", "FleetReport", "NodeReport", "find_drift", "node_facts", "run_fleet_doctor"]

Progress = Callable[[str, "float | None"], None]
_NODE_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class NodeReport:
    """One node as its doctor saw it. ``cuda_libraries``: "component file" per CUDA/cuDNN library the session
    mapped (empty when it mapped none). ``error``: why the doctor could not run there (then not ready)."""

    node_id: str
    host: str
    address: str
    gpus: tuple[str, ...]
    driver: str | None
    cuda_driver: str | None
    cuda_libraries: tuple[str, ...]
    ort_version: str | None
    ort_distributions: tuple[str, ...]
    ready: bool
    verdict: str
    fix: str | None = None
    error: str | None = None


DRIFT_FIELDS = ("gpus", "driver", "cuda_driver", "cuda_libraries", "ort_version", "ort_distributions", "ready")


@dataclass(frozen=True)
class FleetReport:
    """Every node's row, which fields drift between nodes, and the cluster it came from."""

    address: str | None
    nodes: tuple[NodeReport, ...]
    drift: tuple[str, ...]
    duration_s: float

    @property
    def ready(self) -> bool:
        return bool(self.nodes) and all(n.ready for n in self.nodes)

    @property
    def exit_code(self) -> int:
        return int(ExitCode.OK if self.ready else ExitCode.ENVIRONMENT)


def node_facts(report: Any, node_id: str = "", address: str = "") -> NodeReport:
    """The row of one node from its DoctorReport."""
    import socket

    driver = report.driver
    libraries = tuple(sorted(f"{m.component} {m.path.name}" for m in report.mapped))
    dists = tuple(sorted(f"{d.name} {d.version}" for d in report.distributions.distributions))
    return NodeReport(
        node_id=node_id,
        host=socket.gethostname(),
        address=address,
        gpus=tuple(g.name for g in driver.gpus),
        driver=driver.version,
        cuda_driver=driver.cuda_driver_version,
        cuda_libraries=libraries,
        ort_version=report.ort.version,
        ort_distributions=dists,
        ready=bool(report.ready),
        verdict=report.verdict,
        fix=report.fix,
    )


def _doctor_here(node_id: str, address: str) -> dict[str, Any]:
    """The task each node runs (plain values back: the driver need not unpickle ortgpu classes)."""
    from dataclasses import asdict

    return asdict(node_facts(diagnose(), node_id, address))


def find_drift(nodes: Sequence[NodeReport]) -> tuple[str, ...]:
    """The fields on which the nodes that answered do not all agree."""
    answered = [n for n in nodes if n.error is None]
    return tuple(f for f in DRIFT_FIELDS if len({_key(getattr(n, f)) for n in answered}) > 1)


def majority(nodes: Sequence[NodeReport], name: str) -> Any:
    """The value most nodes have for ``name`` (what a drifting node differs from)."""
    counts = Counter(_key(getattr(n, name)) for n in nodes if n.error is None)
    return counts.most_common(1)[0][0] if counts else None


def _key(value: Any) -> Any:
    return tuple(value) if isinstance(value, (list, tuple)) else value


def run_fleet_doctor(address: str | None = None, progress: Progress | None = None) -> FleetReport:
    """Run the doctor on every alive node of the cluster at ``address`` (see :func:`ortgpu.scale.ray_cluster.connect`).

    Raises RayUnavailableError (exit 3) when Ray is missing or no cluster can be reached.
    """
    started = time.perf_counter()
    tell = progress or silent
    cluster = connect(address)
    ray = import_ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    remote = ray.remote(num_cpus=0, max_retries=0)(_doctor_here)
    pending = {}
    for node in nodes:
        node_id, ip = node["NodeID"], node.get("NodeManagerAddress", "")
        strategy = NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
        pending[remote.options(scheduling_strategy=strategy).remote(node_id, ip)] = node
    rows: dict[str, NodeReport] = {}
    tell(f"doctor on {len(nodes)} nodes", 0.0)
    deadline = time.monotonic() + _NODE_TIMEOUT_S
    while pending and time.monotonic() < deadline:
        done, _ = ray.wait(list(pending), num_returns=1, timeout=max(0.1, deadline - time.monotonic()))
        for ref in done:
            node = pending.pop(ref)
            try:
                rows[node["NodeID"]] = NodeReport(**_as_node(ray.get(ref)))
            except Exception as exc:  # Ray wraps whatever went wrong on that node
                rows[node["NodeID"]] = _failed(node, (str(exc).strip().splitlines() or [type(exc).__name__])[-1])
        tell(f"doctor: {len(rows)}/{len(nodes)} nodes answered", len(rows) / max(len(nodes), 1))
    for ref, node in pending.items():
        ray.cancel(ref, force=True)
        rows[node["NodeID"]] = _failed(node, f"no answer within {_NODE_TIMEOUT_S:.0f} s")
    ordered = tuple(sorted(rows.values(), key=lambda r: (r.address, r.host, r.node_id)))
    return FleetReport(cluster.address, ordered, find_drift(ordered), time.perf_counter() - started)


def _as_node(values: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(NodeReport)}
    return {k: tuple(v) if isinstance(v, list) else v for k, v in values.items() if k in names}


def _failed(node: Mapping[str, Any], why: str) -> NodeReport:
    return NodeReport(
        node_id=node["NodeID"],
        host=str(node.get("NodeManagerHostname", "?")),
        address=str(node.get("NodeManagerAddress", "")),
        gpus=(),
        driver=None,
        cuda_driver=None,
        cuda_libraries=(),
        ort_version=None,
        ort_distributions=(),
        ready=False,
        verdict=f"not ready: the doctor could not run on this node ({why})",
        error=why,
    )
