"""Model/input errors in ORT's own wordings (graph.cc, the Python feed path, op kernels): an NG-* entry, never the GPU.

Short messages in new words built from the families of ORT's sources; each asserts the first entry a user sees.
"""

from __future__ import annotations

import pytest

from ortgpu.explain import PasteKind, explain

RUN = "Non-zero status code returned while running {op} node. Name:'{node}' Status Message: {msg}"

CASES: list[tuple[str, str]] = [
    # graph.cc type checks at load
    (
        "Type Error: Type parameter (T) bound to different types (tensor(int32) and tensor(float16) in node (gate).",
        "NG-11",
    ),
    (
        "Type Error: Type parameter (T) of Optype (Sub) bound to different types (tensor(float) and tensor(double) "
        "in node (s2).",
        "NG-11",
    ),
    (
        "Type Error: Type (tensor(uint8)) of input parameter (pooled) of operator (GlobalAveragePool) in node (gap) "
        "is invalid.",
        "NG-11",
    ),
    ("Load model failed: This is an invalid model. Error: Duplicate definition of name (hidden).", "NG-11"),
    ("Node input 'enc_out' is not a graph input, initializer, or output of a previous node.", "NG-11"),
    (
        'In Node, ("q", WeirdOp, "", -1) : ("x",) -> ("y",) , Error No Op registered for WeirdOp with '
        "domain_version of 19",
        "NG-08",
    ),
    # the Python feed is not a dict of numpy arrays
    ("sess.run(None, {'x': 0.5})\nRuntimeError: Unable to handle object of type <class 'float'>", "NG-12"),
    ("RuntimeError: Input must be a list of dictionaries or a single numpy array for input 'mel'.", "NG-12"),
    ("TypeError: run(): incompatible function arguments. The following argument types are supported:", "NG-12"),
    # feed/fetch checks, older and C# wordings
    ("Model requires 2 inputs. Input Feed contains 1", "NG-03"),
    ("Tensor element data type discovered: Int32 metadata expected: Int64", "NG-04"),
    ("[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Invalid Output Name:probs", "NG-05"),
    # op kernels rejecting the data, by their own wording
    (
        RUN.format(
            op="TreeEnsembleRegressor",
            node="gbm",
            msg="One path in the graph requests feature 40 but input tensor has 10 features.",
        ),
        "NG-01",
    ),
    (
        RUN.format(
            op="Concat",
            node="cat",
            msg="Non concat axis dimensions must match: Axis 3 has mismatched dimensions of 9 and 8",
        ),
        "NG-10",
    ),
    (
        RUN.format(
            op="Gather",
            node="tok_emb",
            msg="indices element out of data bounds, idx=50300 must be within the inclusive range [-50257,50256]",
        ),
        "NG-10",
    ),
    ("Shape mismatch attempting to re-use buffer. {2,16} != {2,17}.", "NG-10"),
    ("Deserialize tensor proj.weight failed.External data path does not exist: weights.bin", "NG-09"),
    # any other kernel's shape complaint: by structure
    (RUN.format(op="SpaceToDepth", node="s2d", msg="Input tensor must be 4-dimensional"), "NG-10"),
    (RUN.format(op="OneHot", node="oh", msg="Invalid depth: the rank of indices is too large"), "NG-10"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_ort_model_messages_name_the_model_entry(text: str, expected: str) -> None:
    result = explain(text, closest=False)
    assert result.verdict is PasteKind.NOT_GPU
    assert result.matches[0].id == expected


def test_a_shape_complaint_next_to_a_gpu_library_is_not_claimed_as_a_model_error() -> None:
    text = RUN.format(op="Conv", node="c1", msg="cudnnConvolutionForward failed: shape of the workspace is wrong")
    result = explain(text, closest=False)
    assert all(m.matched_by != "structure" or m.id != "NG-10" for m in result.matches)
    assert result.verdict is not PasteKind.NOT_GPU


def test_a_kernel_message_without_shape_words_is_not_a_shape_error() -> None:
    text = RUN.format(op="CustomDecoder", node="d", msg="the plugin refused to start")
    assert all(m.id != "NG-10" for m in explain(text, closest=False).matches)


def test_the_python_feed_fix_says_to_feed_numpy_arrays() -> None:
    result = explain("RuntimeError: Unable to handle object of type <class 'torch.Tensor'>", closest=False)
    assert result.matches[0].id == "NG-12"
    assert "numpy" in (result.matches[0].fix or "")
