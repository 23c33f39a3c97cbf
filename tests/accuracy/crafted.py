"""Small crafted models for the accuracy tests: NaN, Inf, fp16 overflow chains, a CNN and a transformer.

Each builder writes ``path`` and returns it; weights come from a fixed seed so every build is identical.
The fp16 keep-list rules were developed against these; benchmarks/fp16_heldout.py holds models they were not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
_n = helper.make_node


def _save(nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[Any], path: Path, name: str) -> Path:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="tests.crafted")
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = Path(path)
    path.write_bytes(model.SerializeToString())
    return path


def _f(name: str, shape: list[Any]) -> Any:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _c(name: str, value: Any, dtype: Any = np.float32) -> Any:
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def _w(rng: np.random.Generator, name: str, shape: tuple[int, ...], scale: float = 0.2) -> Any:
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def nan_model(path: Path) -> Path:
    """``x`` [batch, 8] in [0, 1): ``y`` = Log(x - 2) is NaN everywhere; ``ok`` = x + 1 stays finite."""
    nodes = [
        _n("Sub", ["x", "two"], ["shifted"], name="shift"),
        _n("Log", ["shifted"], ["y"], name="log"),
        _n("Add", ["x", "one"], ["ok"], name="plus_one"),
    ]
    return _save(
        nodes, [_f("x", ["batch", 8])], [_f("y", ["batch", 8]), _f("ok", ["batch", 8])],
        [_c("two", 2.0), _c("one", 1.0)], path, "nan",
    )  # fmt: skip


def inf_model(path: Path) -> Path:
    """``y`` = Exp(x * 1000): +Inf wherever x > 0.09, finite below."""
    nodes = [_n("Mul", ["x", "k"], ["big"], name="scale"), _n("Exp", ["big"], ["y"], name="exp")]
    return _save(nodes, [_f("x", ["batch", 8])], [_f("y", ["batch", 8])], [_c("k", 1000.0)], path, "inf")


def nan_deep_chain(path: Path, depth: int = 14, nan_at: int = 9) -> Path:
    """A chain of ``depth`` elementwise nodes (Mul, Add, Tanh...) where node ``nan_at`` is Sqrt(t - 5): NaN from
    there on. A side branch off node 2 gives a second, finite output ``side``."""
    nodes, inits = [], [_c("half", 0.5), _c("five", 5.0), _c("one", 1.0)]
    current = "x"
    for i in range(depth):
        out = f"t{i}"
        if i == nan_at:
            nodes.append(_n("Sub", [current, "five"], [f"{out}_low"], name=f"n{i}_sub"))
            nodes.append(_n("Sqrt", [f"{out}_low"], [out], name=f"n{i}_sqrt"))
        elif i % 3 == 0:
            nodes.append(_n("Mul", [current, "half"], [out], name=f"n{i}_mul"))
        elif i % 3 == 1:
            nodes.append(_n("Add", [current, "one"], [out], name=f"n{i}_add"))
        else:
            nodes.append(_n("Tanh", [current], [out], name=f"n{i}_tanh"))
        current = out
    nodes.append(_n("Identity", [current], ["y"], name="out"))
    nodes.append(_n("Neg", ["t2"], ["side"], name="side_branch"))
    return _save(nodes, [_f("x", ["batch", 8])], [_f("y", ["batch", 8]), _f("side", ["batch", 8])], inits, path, "deep")


def rss_chain(path: Path, scale: float = 100.0, width: int = 64) -> Path:
    """L2-normalise: ``y`` = xs / Sqrt(ReduceSumSquare(xs)), xs = x * scale. With x in [0, 1) and scale 100 the
    sum of squares (~2e5) overflows fp16 while every input and output fits."""
    nodes = [
        _n("Mul", ["x", "scale"], ["xs"], name="scale"),
        _n("ReduceSumSquare", ["xs"], ["ss"], name="sum_squares", axes=[-1], keepdims=1),
        _n("Sqrt", ["ss"], ["norm"], name="norm"),
        _n("Div", ["xs", "norm"], ["y"], name="normalise"),
    ]
    return _save(nodes, [_f("x", ["batch", width])], [_f("y", ["batch", width])], [_c("scale", scale)], path, "rss")


def pow_chain(path: Path, scale: float = 300.0, width: int = 32) -> Path:
    """RMSNorm: ``y`` = gamma * xs / Sqrt(ReduceMean(xs ** 2) + eps), xs = x * scale. xs ** 2 reaches 9e4."""
    nodes = [
        _n("Mul", ["x", "scale"], ["xs"], name="scale"),
        _n("Pow", ["xs", "two"], ["sq"], name="square"),
        _n("ReduceMean", ["sq"], ["ms"], name="mean_square", axes=[-1], keepdims=1),
        _n("Add", ["ms", "eps"], ["ms_eps"], name="add_eps"),
        _n("Sqrt", ["ms_eps"], ["rms"], name="rms"),
        _n("Reciprocal", ["rms"], ["inv"], name="inv_rms"),
        _n("Mul", ["xs", "inv"], ["normed"], name="normalise"),
        _n("Mul", ["normed", "gamma"], ["y"], name="gamma"),
    ]
    inits = [_c("scale", scale), _c("two", 2.0), _c("eps", 1e-6), _c("gamma", np.linspace(0.5, 1.5, width))]
    return _save(nodes, [_f("x", ["batch", width])], [_f("y", ["batch", width])], inits, path, "pow")


def layernorm_chain(path: Path, scale: float = 1000.0, width: int = 32) -> Path:
    """LayerNorm as exporters before opset 17 write it, then a small Gemm-like head. xs = x * 1000 is in range,
    (xs - mean) ** 2 reaches 2.5e5 and the variance ~8e4: both overflow fp16."""
    rng = np.random.default_rng(1)
    nodes = [
        _n("Mul", ["x", "scale"], ["xs"], name="scale"),
        _n("ReduceMean", ["xs"], ["mean"], name="ln_mean", axes=[-1], keepdims=1),
        _n("Sub", ["xs", "mean"], ["centred"], name="ln_sub"),
        _n("Pow", ["centred", "two"], ["sq"], name="ln_pow"),
        _n("ReduceMean", ["sq"], ["var"], name="ln_var", axes=[-1], keepdims=1),
        _n("Add", ["var", "eps"], ["var_eps"], name="ln_add_eps"),
        _n("Sqrt", ["var_eps"], ["std"], name="ln_sqrt"),
        _n("Div", ["centred", "std"], ["normed"], name="ln_div"),
        _n("Mul", ["normed", "gamma"], ["scaled"], name="ln_gamma"),
        _n("Add", ["scaled", "beta"], ["ln_out"], name="ln_beta"),
        _n("MatMul", ["ln_out", "w"], ["proj"], name="head"),
        _n("Relu", ["proj"], ["y"], name="head_relu"),
    ]
    inits = [
        _c("scale", scale),
        _c("two", 2.0),
        _c("eps", 1e-5),
        _c("gamma", np.ones(width)),
        _c("beta", np.zeros(width)),
        _w(rng, "w", (width, 16)),
    ]
    return _save(nodes, [_f("x", ["batch", width])], [_f("y", ["batch", 16])], inits, path, "layernorm")


def small_cnn(path: Path) -> Path:
    """A real-ish CNN: Conv-BatchNorm-Relu x2, MaxPool, GlobalAveragePool, Flatten, Gemm, Softmax.
    ``image`` [batch, 3, 16, 16] -> ``probs`` [batch, 10]."""
    rng = np.random.default_rng(2)
    inits = [
        _w(rng, "c1.w", (8, 3, 3, 3), 0.3),
        _w(rng, "c1.b", (8,)),
        _c("bn1.s", np.ones(8)),
        _c("bn1.b", np.zeros(8)),
        _c("bn1.m", rng.standard_normal(8) * 0.1),
        _c("bn1.v", np.ones(8) + rng.random(8)),
        _w(rng, "c2.w", (16, 8, 3, 3), 0.2),
        _w(rng, "c2.b", (16,)),
        _c("bn2.s", np.ones(16)),
        _c("bn2.b", np.zeros(16)),
        _c("bn2.m", rng.standard_normal(16) * 0.1),
        _c("bn2.v", np.ones(16) + rng.random(16)),
        _w(rng, "fc.w", (10, 16), 0.3),
        _w(rng, "fc.b", (10,)),
    ]
    nodes = [
        _n("Conv", ["image", "c1.w", "c1.b"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        _n("BatchNormalization", ["c1", "bn1.s", "bn1.b", "bn1.m", "bn1.v"], ["b1"], name="bn1"),
        _n("Relu", ["b1"], ["r1"], name="relu1"),
        _n("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        _n("Conv", ["p1", "c2.w", "c2.b"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        _n("BatchNormalization", ["c2", "bn2.s", "bn2.b", "bn2.m", "bn2.v"], ["b2"], name="bn2"),
        _n("Relu", ["b2"], ["r2"], name="relu2"),
        _n("GlobalAveragePool", ["r2"], ["gap"], name="gap"),
        _n("Flatten", ["gap"], ["flat"], name="flatten"),
        _n("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], name="fc", transB=1),
        _n("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    return _save(
        nodes, [_f("image", ["batch", 3, 16, 16])], [_f("probs", ["batch", 10])], inits, path, "cnn"
    )  # fmt: skip


def small_transformer(path: Path, layers: int = 2, hidden: int = 32, vocab: int = 50, seq: int = 8) -> Path:
    """A BERT-like encoder as exporters write it: token + position embeddings, per layer a decomposed LayerNorm,
    single-head attention (MatMul, scale, additive mask, Softmax) and an Erf-GELU MLP, residuals.
    ``input_ids`` int64 [batch, seq] -> ``hidden_states`` float32 [batch, seq, hidden]."""
    rng = np.random.default_rng(3)
    inits = [
        _w(rng, "tok", (vocab, hidden), 0.5),
        _w(rng, "pos", (seq, hidden), 0.1),
        _c("two", 2.0),
        _c("eps", 1e-5),
        _c("att_scale", 1.0 / np.sqrt(hidden)),
        _c("sqrt2", np.sqrt(2.0)),
        _c("one", 1.0),
        _c("half", 0.5),
    ]
    nodes = [
        _n("Gather", ["tok", "input_ids"], ["tok_emb"], name="embed_tokens"),
        _n("Add", ["tok_emb", "pos"], ["h0"], name="embed_positions"),
    ]

    def layernorm(prefix: str, x: str, out: str) -> None:
        inits.extend([_c(f"{prefix}.g", np.ones(hidden)), _c(f"{prefix}.b", np.zeros(hidden))])
        nodes.extend(
            [
                _n("ReduceMean", [x], [f"{prefix}.mean"], name=f"{prefix}/mean", axes=[-1], keepdims=1),
                _n("Sub", [x, f"{prefix}.mean"], [f"{prefix}.d"], name=f"{prefix}/sub"),
                _n("Pow", [f"{prefix}.d", "two"], [f"{prefix}.sq"], name=f"{prefix}/pow"),
                _n("ReduceMean", [f"{prefix}.sq"], [f"{prefix}.var"], name=f"{prefix}/var", axes=[-1], keepdims=1),
                _n("Add", [f"{prefix}.var", "eps"], [f"{prefix}.ve"], name=f"{prefix}/add_eps"),
                _n("Sqrt", [f"{prefix}.ve"], [f"{prefix}.std"], name=f"{prefix}/sqrt"),
                _n("Div", [f"{prefix}.d", f"{prefix}.std"], [f"{prefix}.n"], name=f"{prefix}/div"),
                _n("Mul", [f"{prefix}.n", f"{prefix}.g"], [f"{prefix}.ng"], name=f"{prefix}/gamma"),
                _n("Add", [f"{prefix}.ng", f"{prefix}.b"], [out], name=f"{prefix}/beta"),
            ]
        )

    current = "h0"
    for layer in range(layers):
        p = f"l{layer}"
        for w in ("q", "k", "v", "o"):
            inits.append(_w(rng, f"{p}.{w}", (hidden, hidden), 0.2))
        inits += [_w(rng, f"{p}.fc1", (hidden, 2 * hidden), 0.2), _w(rng, f"{p}.fc2", (2 * hidden, hidden), 0.2)]
        layernorm(f"{p}.ln1", current, f"{p}.x1")
        nodes += [
            _n("MatMul", [f"{p}.x1", f"{p}.q"], [f"{p}.Q"], name=f"{p}/q"),
            _n("MatMul", [f"{p}.x1", f"{p}.k"], [f"{p}.K"], name=f"{p}/k"),
            _n("MatMul", [f"{p}.x1", f"{p}.v"], [f"{p}.V"], name=f"{p}/v"),
            _n("Transpose", [f"{p}.K"], [f"{p}.Kt"], name=f"{p}/kt", perm=[0, 2, 1]),
            _n("MatMul", [f"{p}.Q", f"{p}.Kt"], [f"{p}.S"], name=f"{p}/qk"),
            _n("Mul", [f"{p}.S", "att_scale"], [f"{p}.Ss"], name=f"{p}/scale"),
            _n("Softmax", [f"{p}.Ss"], [f"{p}.P"], name=f"{p}/softmax", axis=-1),
            _n("MatMul", [f"{p}.P", f"{p}.V"], [f"{p}.C"], name=f"{p}/pv"),
            _n("MatMul", [f"{p}.C", f"{p}.o"], [f"{p}.A"], name=f"{p}/o"),
            _n("Add", [current, f"{p}.A"], [f"{p}.r1"], name=f"{p}/residual1"),
        ]
        layernorm(f"{p}.ln2", f"{p}.r1", f"{p}.x2")
        nodes += [
            _n("MatMul", [f"{p}.x2", f"{p}.fc1"], [f"{p}.m1"], name=f"{p}/fc1"),
            _n("Div", [f"{p}.m1", "sqrt2"], [f"{p}.g0"], name=f"{p}/gelu_div"),
            _n("Erf", [f"{p}.g0"], [f"{p}.g1"], name=f"{p}/gelu_erf"),
            _n("Add", [f"{p}.g1", "one"], [f"{p}.g2"], name=f"{p}/gelu_add"),
            _n("Mul", [f"{p}.m1", f"{p}.g2"], [f"{p}.g3"], name=f"{p}/gelu_mul"),
            _n("Mul", [f"{p}.g3", "half"], [f"{p}.g4"], name=f"{p}/gelu_half"),
            _n("MatMul", [f"{p}.g4", f"{p}.fc2"], [f"{p}.m2"], name=f"{p}/fc2"),
            _n("Add", [f"{p}.r1", f"{p}.m2"], [f"{p}.out"], name=f"{p}/residual2"),
        ]
        current = f"{p}.out"
    nodes.append(_n("Identity", [current], ["hidden_states"], name="output"))
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", seq])
    return _save(nodes, [ids], [_f("hidden_states", ["batch", seq, hidden])], inits, path, "transformer")


def refused_op_model(path: Path) -> Path:
    """Relu -> an op of a custom domain no EP has (ORT refuses the model) -> Relu -> ``y``."""
    nodes = [
        _n("Relu", ["x"], ["a"], name="first"),
        _n("Tanh", ["a"], ["b"], name="second"),
        _n("Mystery", ["b"], ["c"], name="mystery", domain="com.example"),
        _n("Relu", ["c"], ["y"], name="last"),
    ]
    graph = helper.make_graph(nodes, "refused", [_f("x", ["batch", 8])], [_f("y", ["batch", 8])])
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.example", 1)],
        producer_name="tests.crafted",
    )
    model.ir_version = 8
    Path(path).write_bytes(model.SerializeToString())
    return Path(path)


def cancellation_model(path: Path) -> Path:
    """``y`` = ((x + 1000) - 1000) * 1000: nothing near fp16's range limits, but fp16 holds 1000 + x only to 0.5,
    so the difference is 0 or 0.5 instead of x (catastrophic cancellation)."""
    nodes = [
        _n("Add", ["x", "big"], ["lifted"], name="lift"),
        _n("Sub", ["lifted", "big"], ["back"], name="drop"),
        _n("Mul", ["back", "gain"], ["y"], name="gain"),
    ]
    inits = [_c("big", 1000.0), _c("gain", 1000.0)]
    return _save(nodes, [_f("x", ["batch", 16])], [_f("y", ["batch", 16])], inits, path, "cancellation")
