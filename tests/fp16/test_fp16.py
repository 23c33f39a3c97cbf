"""`ortgpu fp16`: ORT's converter, the kept-chain repair, validation that really computes in fp16, and a
keep-list grown from measured ranges, layer-wise divergence and normalisation chains."""

from __future__ import annotations

import json
from pathlib import Path

import crafted
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx.reference import ReferenceEvaluator

from ortgpu.accuracy.graph import load_model
from ortgpu.cli.main import main
from ortgpu.config import ExecutionProvider
from ortgpu.fp16 import Fp16Error, Fp16Request, KeepRule, convert_to_fp16, run_fp16
from ortgpu.fp16.keeplist import chain_groups
from ortgpu.fp16.run import SOURCE_SHA_KEY
from ortgpu.model.inputs import InputSpec

CPU_ONLY_ORT = "CUDAExecutionProvider" not in ort.get_available_providers()


def _x(width: int, batch: int = 2) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(0).random((batch, width), dtype=np.float32)}


def _cpu(model: Path, out: Path, **fields: object) -> Fp16Request:
    return Fp16Request(model=model, output=out, ep=ExecutionProvider.CPU, samples=2, **fields)  # type: ignore[arg-type]


def _ref(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    with np.errstate(all="ignore"):
        return ReferenceEvaluator(model).run(None, feeds)[0]


# --------------------------------------------------------------------------------------------- the converter repair


def test_ort_converter_alone_overflows_between_two_kept_nodes_and_the_repair_fixes_it(tmp_path: Path) -> None:
    from onnxruntime.transformers.float16 import convert_float_to_float16

    from ortgpu.accuracy.graph import topological_order

    model = load_model(crafted.rss_chain(tmp_path / "rss.onnx"))
    feeds = _x(64)
    expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    keep = ["sum_squares", "norm"]
    raw = onnx.ModelProto()
    raw.CopyFrom(model)
    raw = convert_float_to_float16(raw, keep_io_types=True, node_block_list=keep)
    ordered = topological_order(list(raw.graph.node), {i.name for i in raw.graph.input} | {"scale"})
    del raw.graph.node[:]
    raw.graph.node.extend(ordered)
    sqrt = next(n for n in raw.graph.node if n.name == "norm")
    assert sqrt.input[0] == "ss_cast_to_fp32"  # ORT's converter: fp32 -> fp16 -> fp32 between the two kept nodes
    assert np.abs(_ref(raw, feeds) - expected).max() > 0.1  # the sum of squares (2e5) overflowed in between

    repaired = convert_to_fp16(model, keep)
    nodes = {n.name: n for n in repaired.model.graph.node}
    assert nodes["norm"].input[0] == nodes["sum_squares"].output[0] == "ss"  # read directly, in fp32
    assert repaired.casts_removed == 2
    assert np.abs(_ref(repaired.model, feeds) - expected).max() < 1e-3
    onnx.checker.check_model(repaired.model)


def test_chain_groups_are_found_from_the_graph_structure(tmp_path: Path) -> None:
    def ops(path: Path) -> list[tuple[str, ...]]:
        model = load_model(path)
        kinds = {n.name: n.op_type for n in model.graph.node}
        return [tuple(kinds[n] for n in g.nodes) for g in chain_groups(model)]

    assert ops(crafted.rss_chain(tmp_path / "a.onnx")) == [("ReduceSumSquare", "Sqrt", "Div")]
    assert ops(crafted.pow_chain(tmp_path / "b.onnx")) == [("Pow", "ReduceMean", "Add", "Sqrt", "Reciprocal", "Mul")]
    assert ops(crafted.layernorm_chain(tmp_path / "c.onnx")) == [
        ("ReduceMean", "Sub"),
        ("Pow", "ReduceMean", "Add", "Sqrt", "Div"),
    ]
    assert ops(crafted.small_cnn(tmp_path / "d.onnx")) == []


# --------------------------------------------------------------------------------------------- the loop


def test_reduce_sum_square_chain_gets_a_keep_list_from_measured_ranges(tmp_path: Path) -> None:
    model, out = crafted.rss_chain(tmp_path / "rss.onnx"), tmp_path / "rss.fp16.onnx"
    result = run_fp16(_cpu(model, out))
    assert result.passed and result.written and out.is_file()
    kept = {k.name: k for k in result.keep}
    assert kept["sum_squares"].rule is KeepRule.OVERFLOW and "makes 'ss', up to 2.339e+05" in kept["sum_squares"].reason
    assert kept["norm"].rule is KeepRule.OVERFLOW and kept["normalise"].rule is KeepRule.CHAIN
    assert [a.passed for a in result.attempts] == [False, True]
    assert "tensor 'ss' reaches 2.339e+05" in result.attempts[0].failures[0]
    assert result.engine.startswith("onnx reference evaluator") and "InsertCastTransformer" in result.engine_reason
    written = onnx.load(str(out))
    assert {p.key: p.value for p in written.metadata_props}[SOURCE_SHA_KEY] == __import__("hashlib").sha256(
        model.read_bytes()
    ).hexdigest()
    feeds = _x(64)
    expected = ort.InferenceSession(str(model)).run(None, feeds)[0]
    assert np.abs(_ref(written, feeds) - expected).max() < 1e-3


@pytest.mark.parametrize(
    ("builder", "must_keep"),
    [
        (crafted.pow_chain, {"square", "mean_square", "add_eps", "rms", "inv_rms", "normalise"}),
        (crafted.layernorm_chain, {"ln_pow", "ln_var", "ln_add_eps", "ln_sqrt", "ln_div"}),
    ],
)
def test_pow_and_layernorm_variance_overflow_pass_with_their_chain_kept(
    builder: object, must_keep: set[str], tmp_path: Path
) -> None:
    result = run_fp16(_cpu(builder(tmp_path / "m.onnx"), tmp_path / "m.fp16.onnx"))  # type: ignore[operator]
    assert result.passed, result.failures
    assert {k.name for k in result.keep} == must_keep
    assert not result.attempts[0].passed and result.attempts[-1].passed


def test_cancellation_is_found_by_layerwise_divergence_then_its_feeding_node(tmp_path: Path) -> None:
    result = run_fp16(_cpu(crafted.cancellation_model(tmp_path / "c.onnx"), tmp_path / "c.fp16.onnx"))
    assert result.passed, result.failures
    kept = {k.name: k.rule for k in result.keep}
    assert kept == {"drop": KeepRule.DIVERGENCE, "lift": KeepRule.FEEDS_DIVERGENCE}
    assert [a.added for a in result.attempts] == [("drop",), ("lift",), ()]
    assert result.layerwise is not None and result.layerwise.roots[0].node_name == "drop"


def test_cnn_and_transformer_pass_as_converted(tmp_path: Path) -> None:
    cnn = run_fp16(_cpu(crafted.small_cnn(tmp_path / "cnn.onnx"), tmp_path / "cnn.fp16.onnx"))
    assert cnn.passed and not cnn.keep and len(cnn.attempts) == 1
    assert cnn.sizes.fp16_bytes < 0.7 * cnn.sizes.fp32_bytes
    spec = InputSpec(dims={"batch": 2})
    bert = run_fp16(_cpu(crafted.small_transformer(tmp_path / "t.onnx"), tmp_path / "t.fp16.onnx", inputs=spec))
    assert bert.passed and bert.parity[0].cosine is not None and bert.parity[0].cosine > 0.999
    assert len(bert.chains) == 8  # two LayerNorms per layer: centring + variance chains


def test_without_auto_keep_it_fails_and_writes_nothing_unless_forced(tmp_path: Path) -> None:
    model, out = crafted.rss_chain(tmp_path / "rss.onnx"), tmp_path / "rss.fp16.onnx"
    failed = run_fp16(_cpu(model, out, auto_keep=False))
    assert not failed.passed and not failed.written and not out.exists()
    assert failed.verdict.startswith("FAIL: tensor 'ss' reaches") and failed.verdict.endswith("nothing written")
    forced = run_fp16(_cpu(model, out, auto_keep=False, force=True))
    assert not forced.passed and forced.written and forced.forced and out.is_file()


def test_bad_requests_are_refused_before_anything_runs(tmp_path: Path) -> None:
    model = crafted.rss_chain(tmp_path / "rss.onnx")
    with pytest.raises(Fp16Error, match=r"must end in \.onnx"):
        run_fp16(_cpu(model, tmp_path / "out.bin"))
    with pytest.raises(Fp16Error, match="is the input model itself"):
        run_fp16(_cpu(model, model))
    with pytest.raises(Fp16Error, match="no node of that name"):
        run_fp16(_cpu(model, tmp_path / "o.onnx", keep=("nope",)))
    with pytest.raises(Fp16Error, match="fp32 model itself gives NaN/Inf"):
        run_fp16(_cpu(crafted.nan_model(tmp_path / "nan.onnx"), tmp_path / "o.onnx"))
    assert not (tmp_path / "o.onnx").exists()


def test_cli_exit_codes_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = str(crafted.rss_chain(tmp_path / "rss.onnx"))
    out = str(tmp_path / "rss.fp16.onnx")
    assert main(["fp16", model, "-o", out, "--ep", "cpu", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "ortgpu.fp16/v1" and doc["result"]["passed"] is True
    assert {k["name"] for k in doc["result"]["keep"]} == {"sum_squares", "norm", "normalise"}
    assert main(["fp16", model, "-o", out, "--ep", "cpu", "--no-auto-keep"]) == 1
    text = capsys.readouterr().out
    assert "Attempts" in text and "FAIL" in text
    assert main(["fp16", model, "-o", str(tmp_path / "x.txt"), "--ep", "cpu"]) == 2
    assert main(["fp16", model, "-o", out, "--ep", "cpu", "--atol", "abc"]) == 2


@pytest.mark.skipif(not CPU_ONLY_ORT, reason="this onnxruntime has the CUDA provider")
def test_cuda_by_default_is_exit_3_without_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = str(crafted.rss_chain(tmp_path / "rss.onnx"))
    assert main(["fp16", model, "-o", str(tmp_path / "o.onnx")]) == 3
    assert "--ep cpu" in capsys.readouterr().err and not (tmp_path / "o.onnx").exists()


@pytest.mark.gpu
def test_on_cuda_it_validates_with_ort_and_times_both(tmp_path: Path) -> None:
    model = crafted.small_cnn(tmp_path / "cnn.onnx")
    result = run_fp16(
        Fp16Request(model=model, output=tmp_path / "o.onnx", ep=ExecutionProvider.CUDA, bench_duration_s=0.3)
    )
    assert result.passed and result.engine.startswith("CUDAExecutionProvider")
    assert result.speed.fp32_p50_ms is not None and result.speed.fp16_p50_ms is not None


def test_write_config_points_load_at_the_fp16_model_it_was_converted_from(tmp_path: Path) -> None:
    import ortgpu
    from ortgpu.config import ConfigError

    model, out, config = crafted.rss_chain(tmp_path / "rss.onnx"), tmp_path / "rss.fp16.onnx", tmp_path / "ortgpu.toml"
    result = run_fp16(_cpu(model, out, config_out=config))
    assert result.passed and result.config_written == config
    assert 'file = "rss.fp16.onnx"' in config.read_text() and 'precision = "fp16"' in config.read_text()
    with ortgpu.load(model, config=config, ep="cpu", warmup_runs=1) as session:
        assert session.run(_x(64))[0].shape == (2, 64)
        assert Path(session.ort._model_path) == out  # type: ignore[attr-defined]
    other = crafted.pow_chain(tmp_path / "other.onnx")
    with pytest.raises(ConfigError, match=r"derived from another model than other\.onnx"):
        ortgpu.load(other, config=config, ep="cpu")
    with pytest.raises(Fp16Error, match="exists"):
        run_fp16(_cpu(model, tmp_path / "again.onnx", config_out=config))
    failed = run_fp16(_cpu(model, tmp_path / "f.onnx", auto_keep=False, force=True))
    assert failed.config_section is None  # a model that did not pass is never proposed for load()


def test_a_kept_node_that_still_departs_keeps_the_nearest_fp16_nodes_above_it(tmp_path: Path) -> None:
    from ortgpu.accuracy.layerwise import TensorComparison, TensorStatus
    from ortgpu.fp16.keeplist import divergence_rule

    model = load_model(crafted.layernorm_chain(tmp_path / "ln.onnx"))
    root = TensorComparison(3, "var", "ReduceMean", "ln_var", TensorStatus.DIVERGED, max_abs=9.0, root=True)
    kept = {name: None for name in ("ln_var", "ln_pow", "ln_sub")}
    found = divergence_rule(model, [root], kept, 2)  # type: ignore[arg-type]
    # ln_var <- ln_pow (kept) <- ln_sub (kept) <- scale and ln_mean: the first nodes still in fp16
    assert set(found) == {"scale", "ln_mean"}
    assert all(k.rule is KeepRule.FEEDS_DIVERGENCE and "reaches kept node 'ln_var' in fp16" in k.reason
               for k in found.values())  # fmt: skip
