"""`ortgpu bench` in-process: table and JSON, exit codes, save / baseline / report, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ortgpu.cli.main import main


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ortgpu.model.zoo import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("cli_bench") / "tiny.onnx")


QUICK = ["--ep", "cpu", "--iterations", "30", "--warmup", "3"]  # CPU tests, also on a GPU machine


def test_table_output(model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", str(model), "--batch", "1,4", "--mode", "run,iobinding", *QUICK]) == 0
    out = capsys.readouterr().out
    assert "tiny.onnx on cpu" in out
    for text in ("cpu/run", "cpu/iobinding", "p50 ms", "samples/s", "cold start"):
        assert text in out


def test_json_output(model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", str(model), "--mode", "all", "--concurrency", "1,2", "--json", *QUICK]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "ortgpu.bench/v1"
    cases = doc["result"]["cases"]
    statuses = {(c["mode"], c["concurrency"]): c["status"] for c in cases}
    assert statuses[("run", 2)] == "ok" and statuses[("cudagraph", 1)] == "skipped"
    run = next(c for c in cases if c["mode"] == "run" and c["concurrency"] == 1)
    assert run["stats"]["count"] == 30 and run["stats"]["p50_ms"] > 0


def test_save_then_compare_with_baseline(model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "base.json"
    assert main(["bench", str(model), "--save", str(saved), *QUICK]) == 0
    assert json.loads(saved.read_text())["result"]["model"]["sha256"]
    # an impossible baseline: ten times faster than anything measured, with no spread -> regression, exit 1
    doc = json.loads(saved.read_text())
    for case in doc["result"]["cases"]:
        for key in ("p50_ms", "p95_ms", "mad_ms"):
            case["stats"][key] = case["stats"][key] / 10 if key != "mad_ms" else 0.0
        case["stats"]["quantiles_ms"] = [q / 10 for q in case["stats"]["quantiles_ms"]]
        case["timeline_ms"] = [t / 10 for t in case["timeline_ms"]]  # the latencies the statistical test uses
        case["cpu_ms_per_run"] = [t / 10 for t in case["cpu_ms_per_run"]]  # and the CPU time per run (CPU EP)
    fast = tmp_path / "fast.json"
    fast.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["bench", str(model), "--baseline", str(fast), "--max-regression", "10%", *QUICK]) == 1
    out = capsys.readouterr().out
    assert "regressed" in out and "against" in out
    assert "confirmed by a re-measure" in out  # a regression is measured twice before it fails the run
    # a baseline measured ten times slower: no regression
    for case in doc["result"]["cases"]:
        for key in ("p50_ms", "p95_ms"):
            case["stats"][key] = case["stats"][key] * 1000
        case["stats"]["quantiles_ms"] = [q * 1000 for q in case["stats"]["quantiles_ms"]]
        case["timeline_ms"] = [t * 1000 for t in case["timeline_ms"]]
        case["cpu_ms_per_run"] = [t * 1000 for t in case["cpu_ms_per_run"]]
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps(doc))
    assert main(["bench", str(model), "--baseline", str(slow), *QUICK]) == 0
    assert "improved" in capsys.readouterr().out


def test_report_is_written(model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "r.html"
    assert main(["bench", str(model), "--report", str(report), *QUICK]) == 0
    assert f"report: {report}" in capsys.readouterr().out
    assert "<img" in report.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--batch", "0"], "--batch"),
        (["--batch", "one"], "--batch"),
        (["--concurrency", "4,-1"], "--concurrency"),
        (["--duration", "forever"], "--duration"),
        (["--duration", "0"], "--duration"),
        (["--iterations", "5", "--duration", "1"], "both given"),
        (["--mode", "turbo"], "--mode"),
        (["--warmup", "lots"], "--warmup"),
        (["--max-regression", "x"], "--max-regression"),
        (["--ep", "gpu"], "execution provider"),
        (["--shape", "x"], "shape"),
    ],
)
def test_nonsense_flags_exit_2_with_one_line(
    model: Path, tmp_path: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "never.json"
    assert main(["bench", str(model), "--save", str(saved), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err
    assert not saved.exists()


def test_bad_files_exit_2(model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", str(tmp_path / "missing.onnx")]) == 2
    foreign = tmp_path / "foreign.json"
    foreign.write_text('{"not": "ours"}')
    assert main(["bench", str(model), "--baseline", str(foreign), *QUICK]) == 2
    assert "not an ortgpu bench file" in capsys.readouterr().err


def test_baseline_from_another_model_exits_2(model: Path, tmp_path: Path, capsys) -> None:
    from ortgpu.model.zoo import build_demo_model

    other = build_demo_model(tmp_path / "demo.onnx")
    saved = tmp_path / "other.json"
    assert main(["bench", str(other), "--save", str(saved), *QUICK]) == 0
    capsys.readouterr()
    assert main(["bench", str(model), "--baseline", str(saved), *QUICK]) == 2
    assert "another model" in capsys.readouterr().err


def test_cudagraph_without_gpu_exits_3(model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", str(model), "--mode", "cudagraph", *QUICK]) == 3
    assert "CUDA graphs need a GPU" in capsys.readouterr().err


def test_a_failed_case_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor("shape", TensorProto.INT64, [2], [1, 4])],
    )
    path = tmp_path / "b1.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    assert main(["bench", str(path), "--batch", "1,3", *QUICK]) == 1
    assert "failed" in capsys.readouterr().out


def test_help_stays_light() -> None:
    import subprocess
    import sys

    code = (
        "from ortgpu.cli.main import main\n"
        "for argv in (['bench', '--help'], ['demo', '--help']):\n"
        "    main(argv)\n"
        "import sys, json; print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout.strip().splitlines()[-1]))
    assert not {"onnxruntime", "onnx", "numpy", "matplotlib"} & loaded
    assert "--max-regression" in out.stdout and "--out-dir" in out.stdout


# --------------------------------------------------------------------------------------------- --package


@pytest.fixture(scope="module")
def wheel_library() -> Path:
    """libonnxruntime.so of the installed onnxruntime wheel: a real C library (a CPU build) to time through."""
    import importlib.util
    import sys

    spec = importlib.util.find_spec("onnxruntime")
    folder = Path(next(iter(spec.submodule_search_locations)), "capi") if spec and spec.origin else None
    found = sorted(folder.glob("libonnxruntime.so.*")) if folder is not None else []
    if not found or not sys.platform.startswith("linux"):
        pytest.skip("the installed onnxruntime wheel ships no libonnxruntime.so (it does from 1.31 on Linux)")
    return found[0]


def test_package_table_and_json_name_the_library(
    model: Path, wheel_library: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", str(model), "--package", str(wheel_library), "--batch", "1,2", *QUICK]) == 0
    out = capsys.readouterr().out
    words = " ".join(out.split())  # rich wraps long lines at the console width
    assert "through the C library of ONNX Runtime" in words and wheel_library.name in out.replace("\n", "")
    assert "cpu/run" in out and "in a fresh process" in words
    assert main(["bench", str(model), "--package", str(wheel_library), "--json", *QUICK]) == 0
    result = json.loads(capsys.readouterr().out)["result"]
    assert result["package"]["library"] == str(wheel_library)
    assert result["environment"]["ort_version"] == result["package"]["ort_version"]
    assert result["cases"][0]["stats"]["count"] == 30


def test_package_cuda_on_a_cpu_build_exits_3_with_orts_text(
    model: Path, wheel_library: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["bench", str(model), "--package", str(wheel_library), "--ep", "cuda", "--iterations", "5"]
    assert main(args) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "CUDA execution provider is not enabled in this build" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mode", "iobinding"], "--mode iobinding with --package: a package's C library is timed in mode run only"),
        (["--mode", "cudagraph"], "--mode cudagraph with --package: a package's C library is timed in mode run only"),
        (["--concurrency", "1,2"], "--concurrency 2 with --package"),
        (["--sessions", "2"], "--sessions 2 with --package"),
    ],
)
def test_package_combinations_it_cannot_time_exit_2_with_one_line(
    model: Path, wheel_library: Path, tmp_path: Path, args: list[str], message: str, capsys
) -> None:
    saved = tmp_path / "never.json"
    assert main(["bench", str(model), "--package", str(wheel_library), "--save", str(saved), *args, *QUICK]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err
    assert not saved.exists()


def test_package_without_a_library_exits_2(model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("no library here\n", encoding="utf-8")
    assert main(["bench", str(model), "--package", str(tmp_path), *QUICK]) == 2
    assert "no ONNX Runtime library" in capsys.readouterr().err
