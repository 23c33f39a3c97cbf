"""run_check: placement, parity with numbers, timings, memory; bad input refused before anything runs."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ortgpu.check import (
    CheckRequest,
    OutputFileError,
    ParityStatus,
    PlacementStatus,
    Precision,
    ReferenceFileError,
    ReferenceKind,
    ToleranceError,
    merge_input_spec,
    parse_tolerances,
    run_check,
)
from ortgpu.config import Config, Fallback
from ortgpu.ep import ExecutionProvider
from ortgpu.model.inputs import InputSpec
from ortgpu.model.zoo import MODELS, build_demo_model
from ortgpu.placement import PlacedNode, PlacementSource, build_report
from ortgpu.results import envelope
from ortgpu.session import verified as verified_module

CPU_ONLY_ORT = "CUDAExecutionProvider" not in __import__("onnxruntime").get_available_providers()
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_demo_model(tmp_path_factory.mktemp("demo") / "demo.onnx")


def _cpu(model: Path, **fields: Any) -> CheckRequest:
    return CheckRequest(model=model, ep=ExecutionProvider.CPU, warm_runs=2, **fields)


# --------------------------------------------------------------------------------------------- whole checks


def test_cpu_check_reports_placement_times_and_skips_parity_with_a_reason(demo: Path) -> None:
    messages: list[tuple[str, float | None]] = []
    result = run_check(_cpu(demo, inputs=InputSpec(dims={"batch": 2})), lambda m, f=None: messages.append((m, f)))
    assert result.passed and result.verdict.startswith("PASS")
    assert result.active_ep is ExecutionProvider.CPU and not result.fallback_used
    assert result.placement_status is PlacementStatus.ALL_ON_EP
    assert result.placement is not None and result.placement.compute_count > 0
    assert result.parity.status is ParityStatus.SKIPPED
    assert result.parity.reason is not None and result.parity.reason.startswith("same EP")
    assert result.timings.creation_s > 0 and result.timings.first_run_s > 0
    assert result.timings.warm_runs == 2 and result.timings.warm_median_s is not None
    assert result.gpu_memory.used_bytes is None and "CPU" in (result.gpu_memory.note or "")
    assert [(i.name, i.shape, i.source) for i in result.inputs] == [("image", (2, 3, 32, 32), "generated")]
    assert messages[0][0] == "reading the model" and messages[-1] == ("done", 1.0)
    doc = json.loads(json.dumps(envelope("check", result)))
    assert doc["result"]["passed"] is True and doc["result"]["placement"]["source"] == "log"


def test_saved_outputs_round_trip_as_a_reference(demo: Path, tmp_path: Path) -> None:
    saved = tmp_path / "outputs.npz"
    first = run_check(_cpu(demo, save_outputs=saved))
    assert first.saved_outputs == saved
    with np.load(saved, allow_pickle=False) as data:
        assert data.files == ["logits"]
    again = run_check(_cpu(demo, reference=saved))
    assert again.passed and again.parity.reference is ReferenceKind.FILE
    (logits,) = again.parity.outputs
    assert logits.status is ParityStatus.PASS and logits.max_abs == 0.0 and logits.cosine == pytest.approx(1.0)


def test_a_mismatch_fails_with_the_numbers(demo: Path, tmp_path: Path) -> None:
    saved = tmp_path / "outputs.npz"
    run_check(_cpu(demo, save_outputs=saved))
    with np.load(saved) as data:
        logits = data["logits"].copy()
    logits[0, 3] += 0.5
    np.savez(tmp_path / "off.npz", logits=logits, extra=np.zeros(2))
    result = run_check(_cpu(demo, reference=tmp_path / "off.npz"))
    assert not result.passed and result.verdict.startswith("FAIL")
    (out,) = result.parity.outputs
    assert out.status is ParityStatus.FAIL and out.mismatches == 1 and out.worst_index == (0, 3)
    assert out.max_abs == pytest.approx(0.5, rel=1e-5)
    assert "output 'logits': 1 of 10 values off" in result.failures[0] and "max abs 0.5" in result.failures[0]
    assert result.parity.extra_reference_names == ("extra",)
    loose = run_check(_cpu(demo, reference=tmp_path / "off.npz", atol=parse_tolerances(["logits:0.6"], "--atol")))
    assert loose.passed and loose.parity.outputs[0].tolerance_given


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_zoo_model_checks_and_round_trips_its_outputs(name: str, tmp_path: Path) -> None:
    entry = MODELS[name]
    path = entry.build(tmp_path)
    saved = tmp_path / "out.npz"
    first = run_check(_cpu(path, inputs=entry.spec(), save_outputs=saved))
    assert first.passed, first.failures
    assert first.placement_status is PlacementStatus.ALL_ON_EP
    again = run_check(_cpu(path, inputs=entry.spec(), reference=saved))
    assert again.passed and again.parity.status is ParityStatus.PASS, again.failures
    assert {o.name for o in again.parity.outputs} == set(entry.expected_output_shapes)


@pytest.mark.skipif(not CPU_ONLY_ORT, reason="this onnxruntime has the CUDA provider")
def test_allowed_fallback_is_recorded_in_the_result(demo: Path) -> None:
    request = CheckRequest(model=demo, ep=ExecutionProvider.CUDA, config=Config(fallback=Fallback.CPU), warm_runs=1)
    result = run_check(request)
    assert result.passed and result.fallback_used
    assert result.requested_ep is ExecutionProvider.CUDA and result.active_ep is ExecutionProvider.CPU
    assert "FALLBACK to cpu" in result.verdict
    assert "fell back" in (result.parity.reason or "")


def _fake_partial_placement(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stand in for ORT placing one node elsewhere (on this CPU-only machine everything lands on CPU)."""

    def fake(log_text: str, requested: str, logid: str | None = None) -> Any:
        nodes = [PlacedNode("conv1", "Conv", requested), PlacedNode("det", "Det", "OtherExecutionProvider")]
        return build_report(nodes, requested, PlacementSource.LOG)

    monkeypatch.setattr(verified_module, "parse_verbose_log", fake)


def test_strict_placement_fails_when_a_compute_node_left_the_ep(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_partial_placement(monkeypatch)
    relaxed = run_check(_cpu(demo))
    assert relaxed.passed and relaxed.placement_status is PlacementStatus.PARTIAL
    strict = run_check(_cpu(demo, strict_placement=True))
    assert not strict.passed
    assert strict.failures == (
        "--strict-placement: 1 compute node(s) left CPUExecutionProvider: Det (det) on OtherExecutionProvider "
        "[unknown]",
    )


def test_placement_comes_from_profiling_when_the_log_has_none(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verified_module, "parse_verbose_log", lambda *args, **kwargs: None)
    result = run_check(_cpu(demo, strict_placement=True))
    assert result.passed
    assert result.placement is not None and result.placement.source is PlacementSource.PROFILE
    assert "profiling" in (result.placement_note or "")


# --------------------------------------------------------------------------------------------- bad input


def test_bad_requests_are_refused_before_anything_is_written(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.npz"
    with pytest.raises(ToleranceError, match="no output 'logitz'"):
        run_check(_cpu(demo, save_outputs=out, atol=parse_tolerances(["logitz:1"], "--atol")))
    with pytest.raises(OutputFileError, match=r"must end in \.npz"):
        run_check(_cpu(demo, save_outputs=tmp_path / "out.txt"))
    with pytest.raises(OutputFileError, match="does not exist"):
        run_check(_cpu(demo, save_outputs=tmp_path / "missing" / "out.npz"))
    assert not out.exists()


def test_bad_reference_files_are_refused(demo: Path, tmp_path: Path) -> None:
    np.savez(tmp_path / "pickled.npz", logits=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ReferenceFileError, match="pickled"):
        run_check(_cpu(demo, reference=tmp_path / "pickled.npz"))
    np.savez(tmp_path / "other.npz", something=np.zeros(3))
    with pytest.raises(ReferenceFileError, match="none of the model's outputs"):
        run_check(_cpu(demo, reference=tmp_path / "other.npz"))
    np.savez(tmp_path / "raw.npz", logits=np.zeros(10, dtype="V1"))
    with pytest.raises(ReferenceFileError, match="not numbers or text"):
        run_check(_cpu(demo, reference=tmp_path / "raw.npz"))
    with pytest.raises(ReferenceFileError, match="not found"):
        run_check(_cpu(demo, reference=tmp_path / "nope.npz"))


def test_command_line_inputs_override_the_config_name_by_name() -> None:
    base = InputSpec(shapes={"a": (1, 2)}, dims={"batch": 2, "seq": 8}, seed=3)
    merged = merge_input_spec(base, dims={"batch": 4}, shapes={"b": (3,)})
    assert merged.dims == {"batch": 4, "seq": 8}
    assert merged.shapes == {"a": (1, 2), "b": (3,)}
    assert merged.seed == 3 and merge_input_spec(base, seed=0).seed == 0


# --------------------------------------------------------------------------------------------- onnx corpus sample


def _corpus_module() -> Any:
    spec = importlib.util.spec_from_file_location("onnx_node_corpus", ROOT / "benchmarks" / "onnx_node_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


def test_a_sample_of_the_onnx_node_corpus_passes_mismatches_or_is_refused_in_one_line() -> None:
    corpus = _corpus_module()
    cases = corpus.load_cases()
    assert len(cases) > 1000
    sample = cases[:: len(cases) // 40][:40]
    results = [corpus.run_case(case) for case in sample]
    statuses = {r.status for r in results}
    assert statuses <= {"pass", "mismatch", "refused"}, [(r.name, r.reason) for r in results]
    assert sum(r.status == "pass" for r in results) >= 25
    for r in results:
        if r.status != "pass":
            assert r.reason and "\n" not in r.reason and "Traceback" not in r.reason
        if r.status == "mismatch":
            assert r.outputs and any(o["max_abs"] is not None for o in r.outputs)


# --------------------------------------------------------------------------------------------- GPU (H200)


@pytest.mark.gpu
def test_gpu_check_proves_cuda_placement_parity_and_measures_memory(demo: Path) -> None:
    result = run_check(CheckRequest(model=demo, ep=ExecutionProvider.CUDA, strict_placement=True, warm_runs=3))
    assert result.active_ep is ExecutionProvider.CUDA and result.providers[0] == "CUDAExecutionProvider"
    assert result.parity.reference is ReferenceKind.CPU_EP and result.parity.status is ParityStatus.PASS
    assert result.gpu_memory.used_bytes is not None and result.gpu_memory.nvml_index is not None
    assert result.device_id == 0
    assert result.passed, result.failures


@pytest.mark.gpu
def test_gpu_check_shows_the_cpu_only_op_and_fails_strict_placement(tmp_path: Path) -> None:
    model = MODELS["cpu_only_op"].build(tmp_path)
    relaxed = run_check(CheckRequest(model=model, ep=ExecutionProvider.CUDA, warm_runs=1))
    assert relaxed.passed and relaxed.placement_status is PlacementStatus.PARTIAL
    assert relaxed.placement is not None and relaxed.placement.memcpy_count > 0
    assert [n.op_type for n in relaxed.placement.off_requested] == ["Det"]
    strict = run_check(CheckRequest(model=model, ep=ExecutionProvider.CUDA, warm_runs=1, strict_placement=True))
    assert not strict.passed and "Det (det)" in strict.failures[0]


@pytest.mark.gpu
def test_gpu_tf32_off_uses_the_fp32_on_gpu_tolerances(demo: Path) -> None:
    result = run_check(CheckRequest(model=demo, ep=ExecutionProvider.CUDA, ep_options={"use_tf32": "0"}, warm_runs=1))
    assert result.provider_options["use_tf32"] == "0"
    assert {o.precision for o in result.parity.outputs} == {Precision.FP32_GPU}
