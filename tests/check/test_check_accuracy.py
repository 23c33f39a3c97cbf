"""check's accuracy holes closed: NaN/Inf fail by name, count and index; data sets; metrics; the HTML report."""

from __future__ import annotations

import json
from pathlib import Path

import crafted
import numpy as np
import pytest

from ortgpu.accuracy.dataset import DatasetError
from ortgpu.check import CheckRequest, ParityStatus, ReferenceFileError, run_check
from ortgpu.cli.main import main
from ortgpu.config import ExecutionProvider
from ortgpu.model.inputs import InputSpec
from ortgpu.model.zoo import build_tiny_model


def _cpu(model: Path, **fields: object) -> CheckRequest:
    return CheckRequest(model=model, ep=ExecutionProvider.CPU, warm_runs=0, **fields)  # type: ignore[arg-type]


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return build_tiny_model(tmp_path / "tiny.onnx")


def test_an_all_nan_output_fails_naming_output_count_and_first_index(tmp_path: Path) -> None:
    model = crafted.nan_model(tmp_path / "nan.onnx")
    result = run_check(_cpu(model, inputs=InputSpec(dims={"batch": 2})))
    assert not result.passed
    (item,) = result.nonfinite
    assert (item.name, item.nan_count, item.count, item.first_index, item.first_value) == ("y", 16, 16, (0, 0), "nan")
    assert result.failures[0].startswith("output 'y': 16 NaN of 16 values, first nan at [0, 0]")
    allowed = run_check(_cpu(model, allow_nonfinite=True))
    assert allowed.passed and allowed.nonfinite and allowed.allow_nonfinite


def test_nan_against_a_nan_reference_is_never_parity(tmp_path: Path) -> None:
    model = crafted.nan_model(tmp_path / "nan.onnx")
    saved = tmp_path / "ref.npz"
    run_check(_cpu(model, allow_nonfinite=True, save_outputs=saved))
    result = run_check(_cpu(model, allow_nonfinite=True, reference=saved))
    assert not result.passed
    y = next(o for o in result.parity.outputs if o.name == "y")
    assert y.status is ParityStatus.FAIL and y.mismatches == 8 and y.reference_nan_count == 8
    assert "the reference has 8 too (the model itself, not the EP)" in result.nonfinite[0].line()
    ok = next(o for o in result.parity.outputs if o.name == "ok")
    assert ok.status is ParityStatus.PASS


def test_inf_fails_unless_allowed_and_matching_infinities_are_parity(tmp_path: Path) -> None:
    model = crafted.inf_model(tmp_path / "inf.onnx")
    result = run_check(_cpu(model))
    assert not result.passed and result.nonfinite[0].posinf_count > 0
    assert "+Inf" in result.failures[0]
    saved = tmp_path / "ref.npz"
    run_check(_cpu(model, allow_nonfinite=True, save_outputs=saved))
    again = run_check(_cpu(model, allow_nonfinite=True, reference=saved))
    assert again.passed and again.parity.status is ParityStatus.PASS


def test_generated_samples_stack_and_the_worst_sample_is_named(tiny: Path, tmp_path: Path) -> None:
    saved = tmp_path / "ref.npz"
    first = run_check(_cpu(tiny, samples=3, save_outputs=saved))
    assert first.passed and first.samples == ("seed 0", "seed 1", "seed 2")
    with np.load(saved) as data:
        reference = data["y"].copy()
    assert reference.shape == (3, 1, 4)
    reference[2, 0, 1] += 1.0
    reference[1, 0, 0] += 0.01
    np.savez(tmp_path / "off.npz", y=reference)
    result = run_check(_cpu(tiny, samples=3, reference=tmp_path / "off.npz"))
    (y,) = result.parity.outputs
    assert not result.passed and y.sample == "seed 2" and y.samples == 3 and y.samples_failed == 2
    assert "worst of 3 samples: seed 2, 2 failed" in result.failures[0]


def test_a_folder_and_a_stacked_npz_are_data_sets(tiny: Path, tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(3):
        np.savez(folder / f"s{i}.npz", x=rng.random((2, 4), dtype=np.float32))
    (folder / "notes.txt").write_text("ignored")
    from_folder = run_check(_cpu(tiny, inputs=InputSpec(npz=folder)))
    assert from_folder.samples == ("s0.npz", "s1.npz", "s2.npz")
    assert "folder data (3 .npz files)" in (from_folder.dataset_source or "")
    np.savez(tmp_path / "stacked.npz", x=rng.random((5, 2, 4), dtype=np.float32))
    stacked = run_check(_cpu(tiny, inputs=InputSpec(npz=tmp_path / "stacked.npz"), samples=4))
    assert stacked.samples == tuple(f"stacked.npz[{i}]" for i in range(4))
    assert stacked.inputs[0].shape == (2, 4) and stacked.dataset_notes


def test_bad_data_sets_are_exit_2_before_anything_runs(tiny: Path, tmp_path: Path) -> None:
    np.savez(tmp_path / "one.npz", x=np.zeros((1, 4), np.float32))
    with pytest.raises(DatasetError, match="holds one sample"):
        run_check(_cpu(tiny, inputs=InputSpec(npz=tmp_path / "one.npz"), samples=3))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match=r"no \.npz file"):
        run_check(_cpu(tiny, inputs=InputSpec(npz=tmp_path / "empty")))
    with pytest.raises(DatasetError, match="1 or more"):
        run_check(_cpu(tiny, samples=0))
    np.savez(tmp_path / "ref.npz", y=np.zeros((1, 4), np.float32))
    with pytest.raises(ReferenceFileError, match="3 samples, the reference has no sample axis"):
        run_check(_cpu(tiny, samples=3, reference=tmp_path / "ref.npz"))


def test_cli_exit_codes_json_and_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = crafted.nan_model(tmp_path / "nan.onnx")
    assert main(["check", str(model), "--ep", "cpu", "--warm-runs", "0"]) == 1
    out = capsys.readouterr().out
    assert "NaN/Inf in the outputs" in out and "16 NaN" not in out and "8 NaN of 8 values" in out
    assert main(["check", str(model), "--ep", "cpu", "--allow-nonfinite", "--warm-runs", "0", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["result"]["nonfinite"][0]["name"] == "y" and doc["result"]["allow_nonfinite"] is True
    tiny = build_tiny_model(tmp_path / "tiny.onnx")
    assert main(["check", str(tiny), "--ep", "cpu", "--samples", "2", "--save-outputs", str(tmp_path / "r.npz")]) == 0
    report = tmp_path / "check.html"
    args = ["check", str(tiny), "--ep", "cpu", "--samples", "2", "--reference", str(tmp_path / "r.npz")]
    assert main([*args, "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert "SNR dB" in out and "exact" in out and "would pass with atol 0 or rtol 0" in out
    assert f"report written to {report}" in out.replace("\n", "")
    page = report.read_text()
    assert "Errors of y" in page and "<table class=parity>" in page
    assert main(["check", str(tiny), "--ep", "cpu", "--samples", "x"]) == 2
