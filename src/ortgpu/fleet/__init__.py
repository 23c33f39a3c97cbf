"""The doctor across a Ray cluster: one pinned task per node, one table, the drift between nodes highlighted."""

from __future__ import annotations

from ortgpu.fleet.doctor import FleetReport, NodeReport, node_facts, run_fleet_doctor

__all__ = ["FleetReport", "NodeReport", "node_facts", "run_fleet_doctor"]
