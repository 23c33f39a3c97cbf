"""The fleet doctor's rows and drift, from node facts (no Ray needed)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

from ortgpu.fleet.doctor import FleetReport, NodeReport, find_drift, majority, node_facts

BASE = NodeReport(
    node_id="n1",
    host="gpu-a",
    address="10.0.0.1",
    gpus=("NVIDIA H200", "NVIDIA H200"),
    driver="580.95.05",
    cuda_driver="13.0",
    cuda_libraries=("cuDNN libcudnn.so.9.10.2",),
    ort_version="1.23.0",
    ort_distributions=("onnxruntime-gpu 1.23.0",),
    ready=True,
    verdict="GPU ready",
)


def test_no_drift_when_nodes_agree() -> None:
    nodes = (BASE, dataclasses.replace(BASE, node_id="n2", host="gpu-b"))
    assert find_drift(nodes) == ()
    report = FleetReport("10.0.0.1:6379", nodes, (), 1.0)
    assert report.ready and report.exit_code == 0


def test_a_node_with_another_driver_and_cudnn_drifts_and_is_named() -> None:
    odd = dataclasses.replace(
        BASE,
        node_id="n3",
        driver="550.54.15",
        cuda_libraries=("cuDNN libcudnn.so.8.9.7",),
        ready=False,
        verdict="not ready: cuDNN 8 found, this ORT needs cuDNN 9",
    )
    nodes = (BASE, dataclasses.replace(BASE, node_id="n2"), odd)
    assert find_drift(nodes) == ("driver", "cuda_libraries", "ready")
    assert majority(nodes, "driver") == "580.95.05"
    report = FleetReport(None, nodes, find_drift(nodes), 1.0)
    assert not report.ready and report.exit_code == 3


def test_a_node_whose_doctor_failed_is_not_ready_and_not_drift() -> None:
    failed = dataclasses.replace(BASE, node_id="n9", driver=None, ready=False, verdict="x", error="node died")
    nodes = (BASE, failed)
    assert find_drift(nodes) == ()  # only the nodes that answered are compared
    assert FleetReport(None, nodes, (), 0.1).exit_code == 3


def test_node_facts_from_a_doctor_report() -> None:
    gpu = SimpleNamespace(name="NVIDIA H200")
    report = SimpleNamespace(
        driver=SimpleNamespace(gpus=(gpu,), version="580.95.05", cuda_driver_version="13.0"),
        mapped=(
            SimpleNamespace(component="cuDNN", path=Path("/x/libcudnn.so.9.10.2")),
            SimpleNamespace(component="cuBLAS", path=Path("/x/libcublas.so.13.0.1")),
        ),
        distributions=SimpleNamespace(distributions=(SimpleNamespace(name="onnxruntime-gpu", version="1.23.0"),)),
        ort=SimpleNamespace(version="1.23.0"),
        ready=True,
        verdict="GPU ready",
        fix=None,
    )
    row = node_facts(report, "abc", "10.0.0.5")
    assert row.cuda_libraries == ("cuBLAS libcublas.so.13.0.1", "cuDNN libcudnn.so.9.10.2")
    assert (row.gpus, row.driver, row.ort_distributions) == (("NVIDIA H200",), "580.95.05", ("onnxruntime-gpu 1.23.0",))
