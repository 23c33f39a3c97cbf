"""Coverage of ONNX Runtime's own model/input error messages by `ortgpu explain`: template -> explain -> table.

Each row is a message template taken from ORT's sources (the file is named), with its placeholders filled with
plausible values, and the NG-* entry a user should see first. The script runs explain on every filled message and
writes a table: recognised (any entry), mapped to the expected family (the top id), and the verdict is "not a GPU
problem". The templates are the wordings of the sources, not pastes from issue threads.

    python benchmarks/explain_ort_messages.py --out benchmarks/results --stamp 2026-12-01
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import sys
from pathlib import Path

from ortgpu import __version__
from ortgpu.explain import explain

ORT = "onnxruntime/"
WRAP = "[ONNXRuntimeError] : {code} : {status} : {msg}"
RUN = "Non-zero status code returned while running {op} node. Name:'{node}' Status Message: {msg}"

# (source file, template, values, expected top id); {msg} templates are wrapped by WRAP or RUN below
TEMPLATES: list[tuple[str, str, dict[str, str], str]] = [
    # core/session/inference_session.cc: feed/fetch validation
    (
        "core/session/inference_session.cc",
        "Got invalid dimensions for input: {i} for the following indices\n"
        " index: 1 Got: 5 Expected: 3\n Please fix either the inputs/outputs or the model.",
        {"i": "pixels"},
        "NG-01",
    ),
    (
        "core/session/inference_session.cc",
        "Invalid rank for input: {i} Got: 3 Expected: 4 Please fix either the inputs/outputs or the model.",
        {"i": "pixels"},
        "NG-02",
    ),
    ("core/session/inference_session.cc", "Invalid rank for output: {i} Got: 1 Expected: 2", {"i": "scores"}, "NG-02"),
    (
        "core/session/inference_session.cc",
        "Unexpected input data type. Actual: (tensor(int32)) , expected: (tensor(int64))",
        {},
        "NG-04",
    ),
    ("core/session/inference_session.cc", "Invalid Feed Input Name:{i}", {"i": "tokens"}, "NG-05"),
    ("core/session/inference_session.cc", "Invalid input name: {i}", {"i": "tokens"}, "NG-05"),
    ("core/session/inference_session.cc", "Invalid Output Name:{i}", {"i": "embedding"}, "NG-05"),
    ("core/session/inference_session.cc", "Model requires 4 inputs. Input Feed contains 3", {}, "NG-03"),
    # python/onnxruntime_inference_collection.py, onnxruntime_pybind_state.cc, onnxruntime_pybind_mlvalue.cc
    (
        "python/onnxruntime_inference_collection.py",
        "ValueError: Required inputs (['{i}']) are missing from input feed (['input_ids']).",
        {"i": "attention_mask"},
        "NG-03",
    ),
    (
        "python/onnxruntime_pybind_mlvalue.cc",
        "RuntimeError: Unable to handle object of type <class '{t}'>",
        {"t": "list"},
        "NG-12",
    ),
    (
        "python/onnxruntime_pybind_state.cc",
        "RuntimeError: Input must be a list of dictionaries or a single numpy array for input '{i}'.",
        {"i": "audio"},
        "NG-12",
    ),
    (
        "python/onnxruntime_pybind_state.cc",
        "RuntimeError: Unable to cast Python instance of type <class '{t}'> to C++ type",
        {"t": "torch.Tensor"},
        "NG-12",
    ),
    (
        "pybind11 argument check on InferenceSession.run",
        "TypeError: run(): incompatible function arguments. The following argument types are supported:",
        {},
        "NG-12",
    ),
    (
        "python/onnxruntime_inference_collection.py",
        "TypeError: data must be a numpy.ndarray or an OrtValue.",
        {},
        "NG-12",
    ),
    ("python/onnxruntime_pybind_mlvalue.cc", "RuntimeError: Not a valid numpy type", {}, "NG-04"),
    (
        "csharp NativeOnnxValueHelper",
        "Tensor element data type discovered: {t} metadata expected: Float",
        {"t": "Double"},
        "NG-04",
    ),
    # core/graph/graph.cc, model.cc, model_load_utils.h: load time
    (
        "core/graph/graph.cc",
        "Type Error: Type parameter (T) bound to different types (tensor(float) and tensor({t}) in node ({n}).",
        {"t": "int64", "n": "/Mul_4"},
        "NG-11",
    ),
    (
        "core/graph/graph.cc",
        "Type Error: Type parameter (T) of Optype (Add) bound to different types "
        "(tensor(double) and tensor(float) in node ({n}).",
        {"n": "add_7"},
        "NG-11",
    ),
    (
        "core/graph/graph.cc",
        "This is an invalid model. Type Error: Type 'tensor({t})' of input parameter (x) of "
        "operator (Relu) in node ({n}) is invalid.",
        {"t": "int32", "n": "relu_1"},
        "NG-11",
    ),
    (
        "core/graph/graph.cc",
        "This is an invalid model. Error: two nodes with same node name ({n}).",
        {"n": "conv"},
        "NG-11",
    ),
    (
        "core/graph/graph.cc",
        "Invalid model. Node input '{i}' is not a graph input, initializer, or output of a previous node.",
        {"i": "h0"},
        "NG-11",
    ),
    (
        "core/graph/graph.cc",
        "Node ({n}) Op (Reshape) [ShapeInferenceError] Target shape may not have multiple -1 dimensions",
        {"n": "r1"},
        "NG-11",
    ),
    (
        "core/graph/graph.cc",
        'This is an invalid model. In Node, ("{n}", Foo, "", -1) : () -> () , Error No Op '
        "registered for Foo with domain_version of 17",
        {"n": "f0"},
        "NG-08",
    ),
    (
        "core/graph/graph.cc",
        "Fatal error: com.microsoft:{op}(-1) is not a registered function/op",
        {"op": "GridSampleX"},
        "NG-08",
    ),
    ("core/graph/model.cc", "Unsupported model IR version: 11, max supported IR version: 10", {}, "NG-06"),
    (
        "core/graph/model_load_utils.h",
        "ONNX Runtime only *guarantees* support for models stamped with official "
        "released onnx opset versions. Opset 24 is under development and support for this is limited.",
        {},
        "NG-07",
    ),
    (
        "core/graph/model.cc",
        "[ONNXRuntimeError] : 7 : INVALID_PROTOBUF : Load model from {p} failed:Protobuf parsing failed.",
        {"p": "net.onnx"},
        "NG-09",
    ),
    (
        "core/framework/tensorprotoutils.cc",
        "Deserialize tensor {t} failed.External data path does not exist: {p}",
        {"t": "w_1", "p": "net.onnx.data"},
        "NG-09",
    ),
    # core/framework: kernel lookup, execution frame
    (
        "core/framework/kernel_registry.cc",
        "Could not find an implementation for {op}(13) node with name '{n}'",
        {"op": "Round", "n": "round_1"},
        "NG-08",
    ),
    (
        "core/framework/execution_frame.cc",
        "Shape mismatch attempting to re-use buffer. {{1,8}} != {{1,9}}. "
        "Validate usage of dim_value and dim_param in shapes in the model.",
        {},
        "NG-10",
    ),
    # common op errors (run time), wrapped in ORT's "Non-zero status code returned while running" line
    (
        "core/providers/cpu/tensor/reshape_helper.h",
        "RUN:The input tensor cannot be reshaped to the requested shape. Input shape:{{1,6}}, requested shape:{{4,2}}",
        {"op": "Reshape"},
        "NG-10",
    ),
    (
        "core/providers/cpu/math/element_wise_ops.cc",
        "RUN:Attempting to broadcast an axis by a dimension other than 1. 3 by 5",
        {"op": "Add"},
        "NG-10",
    ),
    (
        "core/providers/cpu/tensor/concat.cc",
        "RUN:Non concat axis dimensions must match: Axis 1 has mismatched dimensions of 4 and 6",
        {"op": "Concat"},
        "NG-10",
    ),
    (
        "core/providers/cpu/tensor/gather.cc",
        "RUN:indices element out of data bounds, idx=512 must be within the inclusive range [-512,511]",
        {"op": "Gather"},
        "NG-10",
    ),
    ("core/providers/cpu/math/matmul_helper.h", "RUN:MatMul dimension mismatch", {"op": "MatMul"}, "NG-10"),
    (
        "core/providers/cpu/math/matmul_helper.h",
        "RUN:left operand cannot broadcast on dim 0",
        {"op": "MatMul"},
        "NG-10",
    ),
    ("core/providers/cpu/math/gemm_helper.h", "RUN:Gemm: Invalid bias shape for broadcast", {"op": "Gemm"}, "NG-10"),
    (
        "core/providers/cpu/nn/conv_attributes.h",
        "RUN:Input channels C is not equal to kernel channels * group. C: 1 kernel channels: 3 group: 1",
        {"op": "Conv"},
        "NG-10",
    ),
    (
        "core/providers/cpu/nn/conv_attributes.h",
        "RUN:X num_dims does not match W num_dims. X: {{1,3,224}} W: {{64,3,7,7}}",
        {"op": "Conv"},
        "NG-10",
    ),
    ("core/providers/cpu/tensor/expand.h", "RUN:invalid expand shape", {"op": "Expand"}, "NG-10"),
    (
        "core/providers/cpu/tensor/split.cc",
        "RUN:Cannot split using values in 'split' attribute. Axis=1 Input shape={{1,10}} NumOutputs=2",
        {"op": "Split"},
        "NG-10",
    ),
    (
        "core/providers/cpu/ml/tree_ensemble_common.h",
        "RUN:One path in the graph requests feature 30 but input tensor has 12 features.",
        {"op": "TreeEnsembleClassifier"},
        "NG-01",
    ),
    # op messages no entry names: recognised only by structure (knowledge/model_signals.py)
    ("core/providers/cpu/tensor/unsqueeze.cc", "RUN:'axes' has a duplicate axis value 1", {"op": "Unsqueeze"}, "NG-10"),
    ("core/providers/cpu/tensor/slice.cc", "RUN:'step' cannot be 0 for Slice axis 2", {"op": "Slice"}, "NG-10"),
    (
        "core/providers/cpu/math/top_k.cc",
        "RUN:k argument [10] should not be greater than specified axis dim value [4]",
        {"op": "TopK"},
        "NG-10",
    ),
    (
        "core/providers/cpu/rnn/rnn_helpers.cc",
        "RUN:Input X must have 3 dimensions only. Actual:{{1,20}}",
        {"op": "LSTM"},
        "NG-10",
    ),
    (
        "core/providers/cpu/nn/pool_base.h",
        "RUN:Input tensor must have at least 3 dimensions. Got: 2",
        {"op": "MaxPool"},
        "NG-10",
    ),
]

STATUS = {"NG-01": (2, "INVALID_ARGUMENT"), "NG-02": (2, "INVALID_ARGUMENT"), "NG-04": (2, "INVALID_ARGUMENT")}


def render(template: str, values: dict[str, str], expected: str) -> str:
    """The message a user would see: placeholders filled, wrapped the way ORT's status reaches Python."""
    filled = template.replace("RUN:", "", 1).format(**values)
    if template.startswith("RUN:"):
        msg = RUN.format(op=values.get("op", "Op"), node=f"/{values.get('op', 'op').lower()}_1", msg=filled)
        return WRAP.format(code=6, status="RUNTIME_EXCEPTION", msg=msg)
    if filled.startswith(("[ONNXRuntimeError]", "RuntimeError", "TypeError", "ValueError", "Tensor element")):
        return filled
    code, status = STATUS.get(expected, (1, "FAIL"))
    return WRAP.format(code=code, status=status, msg=filled)


def run() -> dict:
    rows = []
    for source, template, values, expected in TEMPLATES:
        text = render(template, values, expected)
        result = explain(text, closest=False)
        top = result.matches[0].id if result.matches else None
        rows.append(
            {
                "source": ORT + source if "/" in source else source,
                "message": text,
                "expected": expected,
                "top": top,
                "verdict": result.verdict.value,
                "recognised": top is not None,
                "mapped": top == expected,
                "not_gpu": result.verdict.value == "not_gpu",
            }
        )
    n = len(rows)
    return {
        "command": "python benchmarks/explain_ort_messages.py " + shlex.join(sys.argv[1:]),
        "ortgpu_version": __version__,
        "python": platform.python_version(),
        "n": n,
        "recognised": sum(r["recognised"] for r in rows),
        "mapped": sum(r["mapped"] for r in rows),
        "not_gpu": sum(r["not_gpu"] for r in rows),
        "rows": rows,
    }


def markdown(doc: dict) -> str:
    n = doc["n"]
    lines = [
        "# `ortgpu explain` on ONNX Runtime's own model/input error messages",
        "",
        f"Command: `{doc['command']}`  ",
        f"ortgpu {doc['ortgpu_version']}, Python {doc['python']}. Templates from ORT's sources (file named per row), "
        "placeholders filled; explain run without the nearest-entry fallback.",
        "",
        "- Not an unseen measurement: most rows' wordings were added to the NG-* entries with this table; the last "
        "rows (op messages no entry names) are recognised only by structure (knowledge/model_signals.py).",
        "",
        "| messages | recognised | mapped to the expected entry | verdict not a GPU problem |",
        "|---|---|---|---|",
        f"| {n} | {doc['recognised']} ({doc['recognised'] / n:.0%}) | {doc['mapped']} ({doc['mapped'] / n:.0%}) "
        f"| {doc['not_gpu']} ({doc['not_gpu'] / n:.0%}) |",
        "",
        "| source | message (first 90 chars) | expected | top | ok |",
        "|---|---|---|---|---|",
    ]
    for r in doc["rows"]:
        msg = r["message"].replace("\n", " ").replace("|", "\\|")[:90]
        lines.append(
            f"| {r['source']} | `{msg}` | {r['expected']} | {r['top'] or '-'} | {'yes' if r['mapped'] else 'NO'} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="folder for the .json and .md (printed when omitted)")
    parser.add_argument("--stamp", default="", help="date prefix of the file names")
    args = parser.parse_args()
    doc = run()
    text = markdown(doc)
    if args.out is None:
        print(text)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"{args.stamp}-cpu-explain-ort-messages" if args.stamp else "cpu-explain-ort-messages"
    (args.out / f"{stem}.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    (args.out / f"{stem}.md").write_text(text, encoding="utf-8")
    print(f"{doc['mapped']}/{doc['n']} mapped; wrote {args.out / stem}.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
