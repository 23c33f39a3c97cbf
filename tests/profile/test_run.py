"""run_profile on the CPU EP with built models of a known op mix: the tables, fusion, trace, report and compare."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from ortgpu.config import Config, load_config
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import ExitCode
from ortgpu.model.inputs import InputSpec
from ortgpu.model.inspect import ModelError
from ortgpu.profile import HintKind, OutputPathError, ProfileRequest, run_profile

CPU = "CPUExecutionProvider"


def _request(model: Path, **changes: object) -> ProfileRequest:
    values: dict[str, object] = {
        "model": model,
        "ep": ExecutionProvider.CPU,
        "inputs": InputSpec(dims={"batch": 64}),
        "runs": 4,
        "warmup": 2,
        "trace": model.with_suffix(".trace.json"),
    }
    values.update(changes)
    return ProfileRequest(**values)  # type: ignore[arg-type]


def test_matmul_dominates_a_matmul_heavy_model(tmp_path: Path, models: SimpleNamespace) -> None:
    model = models.matmul_heavy(tmp_path / "heavy.onnx")
    run = run_profile(_request(model)).main
    assert (run.runs_profiled, run.warmup_runs) == (4, 2)
    ops = {r.op_type: r for r in run.ops}
    assert set(ops) == {"MatMul", "Sigmoid"}
    assert (ops["MatMul"].nodes, ops["MatMul"].calls) == (4, 16)  # 4 nodes x 4 profiled runs, warm-up left out
    assert (ops["Sigmoid"].nodes, ops["Sigmoid"].calls) == (1, 4)
    assert ops["MatMul"].share > 0.6 and run.ops[0].op_type == "MatMul"
    assert sum(r.share for r in run.ops) == pytest.approx(1.0)
    assert run.provider_share == {CPU: pytest.approx(1.0)}
    assert run.node_count == 5 and {n.name for n in run.nodes} == {"mm0", "mm1", "mm2", "mm3", "out"}
    assert run.hints and run.hints[0].kind is HintKind.DOMINANT_OP and run.hints[0].message.startswith("MatMul is")
    assert run.gpu_timing is None and run.memcpy.nodes == 0 and run.cpu_in_gpu == ()
    assert run.kernels == () and run.kernels_note is None  # kernel events are a GPU matter
    assert run.input_shapes == {"x": (64, 256)}


def test_fusion_shows_conv_relu_and_matmul_add_fused(tmp_path: Path, models: SimpleNamespace) -> None:
    model = models.fusable(tmp_path / "fuse.onnx")
    config = Config().with_session(graph_optimization_level="extended")
    run = run_profile(_request(model, config=config, inputs=InputSpec(dims={"batch": 2}))).main
    fusion = run.fusion
    assert fusion.available and (fusion.original_nodes, fusion.optimized_nodes) == (5, 3)
    assert fusion.removed == {"Add": 1, "Conv": 1, "MatMul": 1, "Relu": 1}
    assert fusion.created == {"Gemm": 1, "com.microsoft:FusedConv": 1}
    assert {r.op_type for r in run.ops} == {"FusedConv", "Flatten", "Gemm"}  # the times are the fused nodes'
    assert all(h.kind is not HintKind.NO_FUSION for h in run.hints)


def test_trace_is_kept_where_asked_and_is_orts_chrome_trace(tmp_path: Path, models: SimpleNamespace) -> None:
    model = models.matmul_heavy(tmp_path / "heavy.onnx", width=32)
    trace = tmp_path / "kept.json"
    run = run_profile(_request(model, trace=trace)).main
    assert run.trace == trace
    events = json.loads(trace.read_text())
    assert sum(1 for e in events if e.get("name") == "model_run") == 6  # warm-up runs stay in the raw trace
    assert not list(tmp_path.glob("ortgpu-profile*"))


def test_compare_puts_two_configs_side_by_side(tmp_path: Path, models: SimpleNamespace) -> None:
    model = models.fusable(tmp_path / "fuse.onnx")
    toml = tmp_path / "plain.toml"
    toml.write_text('[session]\ngraph_optimization_level = "disable"\n')
    result = run_profile(
        _request(
            model,
            inputs=InputSpec(dims={"batch": 2}),
            compare=load_config(toml),
            compare_trace=tmp_path / "other.json",
            report=tmp_path / "report.html",
        )
    )
    base, other = result.runs
    assert (base.label, other.label) == ("defaults", "plain.toml")
    assert other.fusion.removed == {} and other.fusion.created == {}
    assert any(h.kind is HintKind.NO_FUSION for h in other.hints)
    rows = {r.op_type: r for r in result.comparison}
    assert rows["Relu"].base_per_run_us is None and rows["Relu"].other_per_run_us is not None  # fused away in base
    assert rows["Gemm"].other_per_run_us is None
    assert (tmp_path / "other.json").is_file() and other.trace == tmp_path / "other.json"
    page = (tmp_path / "report.html").read_text()
    assert page.count("<img") == 6 and 'id="compare"' in page and "plain.toml" in page
    assert 'id="ops-0"' in page and 'id="nodes-1"' in page and "chrome://tracing" in page


def test_control_flow_model_counts_the_branch_once(tmp_path: Path, models: SimpleNamespace) -> None:
    from ortgpu.model.zoo import build_scalar_if_model

    model = build_scalar_if_model(tmp_path / "if.onnx")
    run = run_profile(_request(model, inputs=InputSpec(dims={"batch": 2}))).main
    owner = next(r for r in run.ops if r.op_type == "If")
    assert owner.share is None and owner.contains_subgraph
    assert sum(r.share for r in run.ops if r.share is not None) == pytest.approx(1.0)


@pytest.mark.slow
def test_child_process_gives_the_same_tables(tmp_path: Path, models: SimpleNamespace) -> None:
    """The path a GPU run takes with synchronous launches (a child process), exercised on the CPU EP."""
    model = models.fusable(tmp_path / "fuse.onnx")
    config = Config().with_session(graph_optimization_level="extended")
    here = run_profile(_request(model, config=config, inputs=InputSpec(dims={"batch": 2}))).main
    child = run_profile(
        _request(model, config=config, inputs=InputSpec(dims={"batch": 2}), isolate=True, trace=tmp_path / "c.json")
    ).main
    assert {(r.op_type, r.calls) for r in child.ops} == {(r.op_type, r.calls) for r in here.ops}
    assert child.fusion.created == here.fusion.created and child.placement is not None


def test_corrupt_model_and_missing_external_data_are_exit_2(tmp_path: Path, models: SimpleNamespace) -> None:
    from ortgpu.model.zoo import build_external_data_model

    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"\x08\x07garbage" * 10)
    with pytest.raises(ModelError) as exc:
        run_profile(_request(corrupt))
    assert exc.value.exit_code == ExitCode.BAD_INPUT
    model = build_external_data_model(tmp_path / "ext.onnx")
    for data in tmp_path.glob("*.data"):
        data.unlink()
    with pytest.raises(ModelError, match="missing"):
        run_profile(_request(model))
    assert not list(tmp_path.glob("*.json"))


def test_output_paths_are_checked_before_anything_runs(tmp_path: Path, models: SimpleNamespace) -> None:
    model = models.matmul_heavy(tmp_path / "heavy.onnx", width=8)
    (tmp_path / "folder.json").mkdir()
    cases = {
        tmp_path / "folder.json": "is a directory",
        tmp_path / "missing" / "t.json": "does not exist",
        tmp_path / "trace.txt": r"must end in \.json",
    }
    for trace, words in cases.items():
        with pytest.raises(OutputPathError, match=words):
            run_profile(_request(model, trace=trace))
    with pytest.raises(OutputPathError, match=r"must end in \.html"):
        run_profile(_request(model, report=tmp_path / "r.txt"))
    toml = tmp_path / "c.json"
    toml.write_text("")
    with pytest.raises(OutputPathError, match="is the input"):
        run_profile(_request(model, config=Config(source=toml), trace=toml))
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "pipe.json"
        os.mkfifo(fifo)
        with pytest.raises(OutputPathError, match="FIFO"):
            run_profile(_request(model, trace=fifo))


def _tanh_copy(source: Path, target: Path) -> Path:
    """The same graph with its last op changed: what a tuned copy of a model looks like to the profile."""
    import onnx

    model = onnx.load(source)
    model.graph.node[-1].op_type = "Tanh"
    onnx.save(model, target)
    return target


def test_a_tuned_configs_model_file_is_what_runs_and_what_fusion_compares(
    tmp_path: Path, models: SimpleNamespace
) -> None:
    import hashlib

    model = models.matmul_heavy(tmp_path / "heavy.onnx", width=16)
    copy = _tanh_copy(model, tmp_path / "heavy_tuned.onnx")
    sha = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (model, copy)}
    toml = tmp_path / "tuned.toml"
    toml.write_text(f'[model]\nfile = "heavy_tuned.onnx"\nsha256 = "{sha[copy]}"\nsource_sha256 = "{sha[model]}"\n')
    result = run_profile(_request(model, compare=load_config(toml), compare_trace=tmp_path / "c.json"))
    base, tuned = result.runs
    assert {r.op_type for r in base.ops} == {"MatMul", "Sigmoid"}
    assert {r.op_type for r in tuned.ops} == {"MatMul", "Tanh"}
    assert tuned.fusion.removed == {} and tuned.fusion.created == {}  # compared with the file that ran
    assert tuned.notes[0] == "ran the config's [model] file heavy_tuned.onnx (a converted copy of heavy.onnx)"


def test_the_child_process_gets_the_whole_config(tmp_path: Path) -> None:
    from ortgpu.profile.execute import ExecuteSpec, _spec_from_json, _spec_to_json

    toml = tmp_path / "c.toml"
    (tmp_path / "m.onnx").write_bytes(b"")
    toml.write_text(
        '[session]\ngraph_optimization_level = "basic"\n[ep.cuda]\nprefer_nhwc = true\n'
        '[model]\nfile = "m.onnx"\nprecision = "fp16"\n[inputs]\nseed = 7\n'
    )
    config = load_config(toml)
    spec = ExecuteSpec(
        tmp_path / "x.onnx",
        ExecutionProvider.CUDA,
        config,
        {"device_id": "0"},
        1,
        InputSpec(dims={"b": 2}),
        1,
        2,
        tmp_path,
    )
    back = _spec_from_json(json.loads(json.dumps(_spec_to_json(spec))))
    assert back.config.session == config.session and back.config.ep_options == config.ep_options
    assert back.config.model == config.model and back.config.run == config.run
    assert back.config.source == toml and back.inputs == spec.inputs and back.ep_options == {"device_id": "0"}
