"""Small ONNX models built in code: the demo model, a one-op model, a CPU-only-op model and a test registry."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.atomic import atomic_write_bytes
from ortgpu.model.inputs import InputSpec

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import onnx

__all__ = [
    "CPU_ONLY_OP",
    "MODELS",
    "OPSET",
    "ZooModel",
    "build_all_dtypes_model",
    "build_cpu_only_op_model",
    "build_demo_model",
    "build_external_data_model",
    "build_old_style_model",
    "build_scalar_if_model",
    "build_symbolic_dims_model",
    "build_tiny_model",
    "build_token_model",
]

OPSET = 17  # LayerNormalization needs 17; every ORT since 1.14 runs it
# ORT registers no CUDA kernel for Det (docs/OperatorKernels.md, CUDAExecutionProvider list), so a CUDA session
# places it on CPU and inserts MemcpyToHost / MemcpyFromHost around it.
CPU_ONLY_OP = "Det"

_SEED = 0


def _model(
    nodes: list[Any], name: str, inputs: list[Any], outputs: list[Any], initializers: list[Any]
) -> onnx.ModelProto:
    from onnx import helper

    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=initializers)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="ortgpu.zoo", producer_version="1"
    )
    model.ir_version = 8  # IR 8 pairs with opset 17 and loads in every ORT from 1.14 on
    return model


def _save(model: onnx.ModelProto, path: Path) -> Path:
    import onnx

    onnx.checker.check_model(model)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, model.SerializeToString())
    return path


def _weight(rng: np.random.Generator, name: str, shape: tuple[int, ...], scale: float = 0.1) -> onnx.TensorProto:
    import numpy as np
    from onnx import numpy_helper

    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def _const(name: str, values: Any, dtype: str = "float32") -> onnx.TensorProto:
    import numpy as np
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def build_demo_model(path: Path) -> Path:
    """A small CNN + transformer block: ``image`` float32 [batch, 3, 32, 32] -> ``logits`` float32 [batch, 10].

    Conv/Relu/MaxPool twice, flatten to 64 tokens of width 32, then pre-norm attention (LayerNormalization,
    MatMul Q/K/V, Softmax) and an MLP with an Erf-form Gelu, both residual, mean-pooled into a linear head.
    Random weights from a fixed seed, so every build gives the same file.
    """
    import numpy as np
    from onnx import TensorProto, helper

    rng = np.random.default_rng(_SEED)
    width, tokens, hidden = 32, 64, 64
    inits = [
        _weight(rng, "conv1.w", (16, 3, 3, 3), 0.3),
        _weight(rng, "conv1.b", (16,)),
        _weight(rng, "conv2.w", (width, 16, 3, 3), 0.1),
        _weight(rng, "conv2.b", (width,)),
        _const("tokens.shape", [0, width, tokens], "int64"),
        _const("ln1.scale", np.ones(width)),
        _const("ln1.bias", np.zeros(width)),
        _weight(rng, "attn.q", (width, width), 0.2),
        _weight(rng, "attn.k", (width, width), 0.2),
        _weight(rng, "attn.v", (width, width), 0.2),
        _weight(rng, "attn.o", (width, width), 0.2),
        _const("attn.scale", 1.0 / np.sqrt(width)),
        _const("ln2.scale", np.ones(width)),
        _const("ln2.bias", np.zeros(width)),
        _weight(rng, "mlp.w1", (width, hidden), 0.2),
        _weight(rng, "mlp.b1", (hidden,)),
        _weight(rng, "mlp.w2", (hidden, width), 0.2),
        _weight(rng, "mlp.b2", (width,)),
        _const("gelu.sqrt2", np.sqrt(2.0)),
        _const("gelu.one", 1.0),
        _const("gelu.half", 0.5),
        _weight(rng, "head.w", (width, 10), 0.3),
        _weight(rng, "head.b", (10,)),
    ]
    n = helper.make_node
    nodes = [
        n("Conv", ["image", "conv1.w", "conv1.b"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        n("Relu", ["c1"], ["r1"], name="relu1"),
        n("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        n("Conv", ["p1", "conv2.w", "conv2.b"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        n("Relu", ["c2"], ["r2"], name="relu2"),
        n("MaxPool", ["r2"], ["p2"], name="pool2", kernel_shape=[2, 2], strides=[2, 2]),
        n("Reshape", ["p2", "tokens.shape"], ["flat"], name="to_tokens"),
        n("Transpose", ["flat"], ["x0"], name="tokens_last", perm=[0, 2, 1]),
        n("LayerNormalization", ["x0", "ln1.scale", "ln1.bias"], ["h1"], name="ln1", axis=-1),
        n("MatMul", ["h1", "attn.q"], ["q"], name="q_proj"),
        n("MatMul", ["h1", "attn.k"], ["k"], name="k_proj"),
        n("MatMul", ["h1", "attn.v"], ["v"], name="v_proj"),
        n("Transpose", ["k"], ["kt"], name="k_t", perm=[0, 2, 1]),
        n("MatMul", ["q", "kt"], ["scores_raw"], name="qk"),
        n("Mul", ["scores_raw", "attn.scale"], ["scores"], name="qk_scale"),
        n("Softmax", ["scores"], ["probs"], name="softmax", axis=-1),
        n("MatMul", ["probs", "v"], ["ctx"], name="attn_v"),
        n("MatMul", ["ctx", "attn.o"], ["attn_out"], name="o_proj"),
        n("Add", ["x0", "attn_out"], ["x1"], name="residual1"),
        n("LayerNormalization", ["x1", "ln2.scale", "ln2.bias"], ["h2"], name="ln2", axis=-1),
        n("MatMul", ["h2", "mlp.w1"], ["m1"], name="mlp_fc1"),
        n("Add", ["m1", "mlp.b1"], ["m1b"], name="mlp_fc1_bias"),
        n("Div", ["m1b", "gelu.sqrt2"], ["g0"], name="gelu_div"),
        n("Erf", ["g0"], ["g1"], name="gelu_erf"),
        n("Add", ["g1", "gelu.one"], ["g2"], name="gelu_add"),
        n("Mul", ["m1b", "g2"], ["g3"], name="gelu_mul"),
        n("Mul", ["g3", "gelu.half"], ["g4"], name="gelu_half"),
        n("MatMul", ["g4", "mlp.w2"], ["m2"], name="mlp_fc2"),
        n("Add", ["m2", "mlp.b2"], ["m2b"], name="mlp_fc2_bias"),
        n("Add", ["x1", "m2b"], ["x2"], name="residual2"),
        n("ReduceMean", ["x2"], ["pooled"], name="pool_tokens", axes=[1], keepdims=0),
        n("MatMul", ["pooled", "head.w"], ["h"], name="head"),
        n("Add", ["h", "head.b"], ["logits"], name="head_bias"),
    ]
    model = _model(
        nodes,
        "ortgpu_demo",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])],
        inits,
    )
    return _save(model, path)


def build_tiny_model(path: Path) -> Path:
    """One Add: ``x`` float32 [batch, 4] + a constant -> ``y`` float32 [batch, 4] (for overhead measurements)."""
    from onnx import TensorProto, helper

    model = _model(
        [helper.make_node("Add", ["x", "bias"], ["y"], name="add")],
        "ortgpu_tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [_const("bias", [1.0, 2.0, 3.0, 4.0])],
    )
    return _save(model, path)


def build_cpu_only_op_model(path: Path) -> Path:
    """``x`` float32 [batch, 3, 3] -> Mul -> Det -> Add -> ``y`` float32 [batch].

    Det has no CUDA kernel in ORT, so on the CUDA EP it runs on CPU between two CUDA nodes and ORT inserts
    Memcpy nodes around it. Its input depends on ``x``, so constant folding cannot remove it.
    """
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("Mul", ["x", "scale"], ["scaled"], name="scale"),
        helper.make_node(CPU_ONLY_OP, ["scaled"], ["det"], name="det"),
        helper.make_node("Add", ["det", "offset"], ["y"], name="offset"),
    ]
    model = _model(
        nodes,
        "ortgpu_cpu_only_op",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch"])],
        [_const("scale", 2.0), _const("offset", 1.0)],
    )
    return _save(model, path)


# ONNX type -> (input name suffix); one input and one output per tensor type ORT's Python API accepts.
_ALL_DTYPES = (
    "float16",
    "float",
    "double",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "string",
)


def build_all_dtypes_model(path: Path) -> Path:
    """One input ``x_<type>`` [batch, 3] per ONNX tensor type ORT's Python API takes, each copied to ``y_<type>``."""
    from onnx import TensorProto, helper

    inputs, outputs, nodes = [], [], []
    for name in _ALL_DTYPES:
        elem = getattr(TensorProto, name.upper())
        inputs.append(helper.make_tensor_value_info(f"x_{name}", elem, ["batch", 3]))
        outputs.append(helper.make_tensor_value_info(f"y_{name}", elem, ["batch", 3]))
        nodes.append(helper.make_node("Identity", [f"x_{name}"], [f"y_{name}"], name=f"copy_{name}"))
    return _save(_model(nodes, "ortgpu_all_dtypes", inputs, outputs, []), path)


def build_symbolic_dims_model(path: Path) -> Path:
    """Inputs whose dims take every form exporters write; each input goes through Relu to ``y_<name>``.

    ``named`` [N, height, width]; ``unnamed`` [N, <no value>, 4]; ``minus_one`` [-1, 3]; ``zero`` [0, 2]
    (a fixed, empty dim: ORT enforces 0); ``question`` [N, "?"]; ``expression`` [N, "seq*2"].
    """
    from onnx import TensorProto, helper

    dims: dict[str, list[Any]] = {
        "named": ["N", "height", "width"],
        "unnamed": ["N", None, 4],
        "minus_one": [-1, 3],
        "zero": [0, 2],
        "question": ["N", "?"],
        "expression": ["N", "seq*2"],
    }
    inputs, outputs, nodes = [], [], []
    for name, shape in dims.items():
        value_info = helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
        # make_tensor_value_info turns None into an empty dim (neither value nor param): the unnamed form.
        inputs.append(value_info)
        outputs.append(helper.make_tensor_value_info(f"y_{name}", TensorProto.FLOAT, shape))
        nodes.append(helper.make_node("Relu", [name], [f"y_{name}"], name=f"relu_{name}"))
    return _save(_model(nodes, "ortgpu_symbolic_dims", inputs, outputs, []), path)


def build_scalar_if_model(path: Path) -> Path:
    """RNN/VAD-like: ``audio`` float32 [batch, 16], ``sr`` int64 0-d scalar, ``state`` float32 [2, batch, 8].

    ``sr > 8000`` picks an If branch (each branch a subgraph with its own nodes) that scales ``audio`` into
    ``prob`` [batch, 16]; ``state`` is updated into ``state_out`` [2, batch, 8].
    """
    from onnx import TensorProto, helper

    def branch(name: str, factor: float) -> Any:
        return helper.make_graph(
            [helper.make_node("Mul", ["audio", f"{name}.factor"], [f"{name}.out"], name=f"{name}_mul")],
            name,
            [],
            [helper.make_tensor_value_info(f"{name}.out", TensorProto.FLOAT, ["batch", 16])],
            initializer=[_const(f"{name}.factor", factor)],
        )

    nodes = [
        helper.make_node("Greater", ["sr", "sr.threshold"], ["is_wideband"], name="check_rate"),
        helper.make_node(
            "If",
            ["is_wideband"],
            ["scaled"],
            name="pick_branch",
            then_branch=branch("wide", 0.5),
            else_branch=branch("narrow", 2.0),
        ),
        helper.make_node("Sigmoid", ["scaled"], ["prob"], name="prob"),
        helper.make_node("Tanh", ["state"], ["state_out"], name="state_update"),
    ]
    model = _model(
        nodes,
        "ortgpu_scalar_if",
        [
            helper.make_tensor_value_info("audio", TensorProto.FLOAT, ["batch", 16]),
            helper.make_tensor_value_info("sr", TensorProto.INT64, []),
            helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, "batch", 8]),
        ],
        [
            helper.make_tensor_value_info("prob", TensorProto.FLOAT, ["batch", 16]),
            helper.make_tensor_value_info("state_out", TensorProto.FLOAT, [2, "batch", 8]),
        ],
        [_const("sr.threshold", 8000, "int64")],
    )
    return _save(model, path)


TOKEN_VOCAB = 100
TOKEN_TYPES = 2


def build_token_model(path: Path) -> Path:
    """Transformer-like inputs: ``input_ids``, ``attention_mask``, ``token_type_ids`` int64 [batch, sequence].

    Ids index a [100, 16] embedding table (Gather on an initializer); token types go through a Cast to int32
    before a [2, 16] table; the mask weights a sum over the sequence -> ``pooled`` float32 [batch, 16].
    """
    import numpy as np
    from onnx import TensorProto, helper

    rng = np.random.default_rng(_SEED)
    n = helper.make_node
    nodes = [
        n("Gather", ["word_embeddings", "input_ids"], ["words"], name="word_lookup"),
        n("Cast", ["token_type_ids"], ["type_ids32"], name="type_cast", to=TensorProto.INT32),
        n("Gather", ["type_embeddings", "type_ids32"], ["types"], name="type_lookup"),
        n("Add", ["words", "types"], ["embedded"], name="embed_sum"),
        n("Cast", ["attention_mask"], ["mask_f"], name="mask_cast", to=TensorProto.FLOAT),
        n("Unsqueeze", ["mask_f", "mask.axes"], ["mask_3d"], name="mask_unsqueeze"),
        n("Mul", ["embedded", "mask_3d"], ["masked"], name="apply_mask"),
        n("ReduceSum", ["masked", "pool.axes"], ["pooled"], name="pool", keepdims=0),
    ]
    ids = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    model = _model(
        nodes,
        "ortgpu_tokens",
        ids,
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", 16])],
        [
            _weight(rng, "word_embeddings", (TOKEN_VOCAB, 16)),
            _weight(rng, "type_embeddings", (TOKEN_TYPES, 16)),
            _const("mask.axes", [-1], "int64"),
            _const("pool.axes", [1], "int64"),
        ],
    )
    return _save(model, path)


def build_old_style_model(path: Path) -> Path:
    """An IR 3 / opset 9 model that lists its initializers (``W``, ``B``) in graph.input, as old exporters did.

    The only real input is ``x`` float32 [1, 4]; ``y`` = Gemm(x, W, B) is float32 [1, 3].
    """
    import numpy as np
    from onnx import TensorProto, helper

    rng = np.random.default_rng(_SEED)
    weights = [_weight(rng, "W", (4, 3)), _weight(rng, "B", (3,))]
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "W", "B"], ["y"], name="gemm")],
        "ortgpu_old_style",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4]),
            helper.make_tensor_value_info("W", TensorProto.FLOAT, [4, 3]),
            helper.make_tensor_value_info("B", TensorProto.FLOAT, [3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
        initializer=weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)], producer_name="ortgpu.zoo")
    model.ir_version = 3
    return _save(model, path)


def build_external_data_model(path: Path, location: str | None = None) -> Path:
    """``x`` float32 [batch, 8] -> MatMul with an [8, 8] weight kept in an external data file -> ``y``.

    The weight goes to ``location`` (default ``<model file name>.data``, next to the model) through onnx's
    ``save_as_external_data``; tests pass other locations to build models whose data escapes the folder.
    """
    import numpy as np
    from onnx import TensorProto, external_data_helper, helper

    path = Path(path)
    rng = np.random.default_rng(_SEED)
    model = _model(
        [helper.make_node("MatMul", ["x", "W"], ["y"], name="matmul")],
        "ortgpu_external_data",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
        [_weight(rng, "W", (8, 8))],
    )
    import onnx

    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    location = location or f"{path.name}.data"
    weight = model.graph.initializer[0]
    raw = weight.raw_data or np.asarray(weight.float_data, dtype=np.float32).tobytes()
    data_path = path.parent / location
    if ".." not in Path(location).parts and not Path(location).is_absolute():
        data_path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(data_path, raw)
    # Point the tensor at the data file ourselves: onnx's writer would follow an escaping location.
    weight.ClearField("float_data")
    weight.raw_data = raw
    external_data_helper.set_external_data(weight, location=location, offset=0, length=len(raw))
    weight.ClearField("raw_data")
    weight.data_location = TensorProto.EXTERNAL
    atomic_write_bytes(path, model.SerializeToString())
    return path


@dataclass(frozen=True)
class ZooModel:
    """One registry model: how to build it, the flags it needs, and the output shapes those flags give."""

    name: str
    description: str
    builder: Callable[[Path], Path]
    expected_output_shapes: Mapping[str, tuple[int, ...]]
    dims: Mapping[str, int] = field(default_factory=dict)
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    def build(self, folder: Path) -> Path:
        """Write the model as ``folder/<name>.onnx`` (plus any data file) and return its path."""
        return self.builder(Path(folder) / f"{self.name}.onnx")

    def spec(self, **overrides: Any) -> InputSpec:
        """The InputSpec that fixes every dim this model leaves open (``--dim`` / ``--shape`` equivalents)."""

        values: dict[str, Any] = {"dims": dict(self.dims), "shapes": dict(self.shapes)}
        values.update(overrides)
        return InputSpec(**values)


MODELS: dict[str, ZooModel] = {
    m.name: m
    for m in (
        ZooModel("demo", "CNN + transformer block, dynamic batch", build_demo_model, {"logits": (1, 10)}),
        ZooModel("tiny", "one Add, dynamic batch", build_tiny_model, {"y": (1, 4)}),
        ZooModel("cpu_only_op", f"{CPU_ONLY_OP} between CUDA-capable ops", build_cpu_only_op_model, {"y": (1,)}),
        ZooModel(
            "all_dtypes",
            "one input per tensor type ORT's Python API accepts",
            build_all_dtypes_model,
            {f"y_{t}": (1, 3) for t in _ALL_DTYPES},
        ),
        ZooModel(
            "symbolic_dims",
            "named, unnamed, -1, 0, '?' and expression dims",
            build_symbolic_dims_model,
            {
                "y_named": (1, 5, 6),
                "y_unnamed": (1, 2, 4),
                "y_minus_one": (1, 3),
                "y_zero": (0, 2),
                "y_question": (1, 7),
                "y_expression": (1, 8),
            },
            dims={"height": 5, "width": 6, "seq": 4},
            shapes={"unnamed": (1, 2, 4), "question": (1, 7)},
        ),
        ZooModel(
            "scalar_if",
            "0-d int64 scalar input choosing an If branch, state with batch in second place",
            build_scalar_if_model,
            {"prob": (1, 16), "state_out": (2, 1, 8)},
        ),
        ZooModel(
            "tokens",
            "int64 token ids into embedding tables, attention mask",
            build_token_model,
            {"pooled": (2, 16)},
            dims={"batch": 2, "sequence": 8},
        ),
        ZooModel("old_style", "IR 3 model listing initializers in graph.input", build_old_style_model, {"y": (1, 3)}),
        ZooModel("external_data", "weight in an external data file", build_external_data_model, {"y": (1, 8)}),
    )
}
