"""On a local Ray cluster (2 CPUs): `infer --ray` equals the local run bit for bit; `doctor --ray` covers the node.

Skipped without Ray (the ortgpu[ray] extra). One cluster for the module: starting Ray is the slow part.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from ortgpu.cli.main import main  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster():
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield ray
    if started:
        ray.shutdown()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from ortgpu.model.zoo import build_demo_model

    root = tmp_path_factory.mktemp("ray")
    model = build_demo_model(root / "demo.onnx")
    inputs = root / "in"
    inputs.mkdir()
    rng = np.random.default_rng(3)
    for i in range(12):
        np.savez(inputs / f"s{i:02d}.npz", image=rng.standard_normal((3, 32, 32)).astype(np.float32))
    np.savez(inputs / "wrong.npz", image=np.zeros((3, 32, 32)))
    return model, inputs


def test_infer_on_ray_actors_equals_the_local_run(cluster, demo, tmp_path: Path, capsys) -> None:
    model, inputs = demo
    common = [str(model), "--inputs", str(inputs), "--ep", "cpu", "--batch", "4", "--json"]
    assert main(["infer", *common, "--out", str(tmp_path / "local"), "--devices", "cpu:1"]) == 1  # one bad input
    capsys.readouterr()
    assert main(["infer", *common, "--out", str(tmp_path / "ray"), "--ray", "--workers", "2"]) == 1
    doc = json.loads(capsys.readouterr().out)
    result = doc["result"]
    assert doc["schema"] == "ortgpu.infer/v1" and result["backend"] == "ray"
    assert result["written"] == 12 and [b["name"] for b in result["bad"]] == ["wrong"]
    assert all(w["pid"] > 0 and w["active_ep"] == "cpu" for w in result["workers"])
    for name in sorted(p.name for p in (tmp_path / "local").glob("*.npz")):
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "ray" / name).read_bytes(), name
    assert sorted(p.name for p in (tmp_path / "ray").glob("*.npz")) == sorted(
        p.name for p in (tmp_path / "local").glob("*.npz")
    )


def test_doctor_on_every_node(cluster, capsys) -> None:
    code = main(["doctor", "--ray", "--json"])
    doc = json.loads(capsys.readouterr().out)
    nodes = doc["result"]["nodes"]
    assert doc["schema"] == "ortgpu.doctor.fleet/v1" and len(nodes) == len([n for n in ray.nodes() if n["Alive"]])
    assert all(n["host"] and n["verdict"] for n in nodes)
    assert code == (0 if all(n["ready"] for n in nodes) else 3)
    assert main(["doctor", "--ray", "--package", "x.whl"]) == 2
