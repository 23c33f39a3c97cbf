"""With no ONNX Runtime installed: the diagnosis commands work fully, the model commands exit 3 naming the extra.

The child Python sees this environment's packages through a folder of links that leaves out every onnxruntime
distribution (module folder and dist-info), with `-S` so no site-packages is added: to ortgpu, to
importlib.metadata and to the doctor's path search it is a Python where onnxruntime was never installed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from ortless import ortless_env, ortless_site

_DRIVER = r"""
import contextlib, io, json, sys
from ortgpu.cli.main import main
out = {}
for name, argv in json.loads(sys.argv[1]).items():
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            rc = main(argv)
        except SystemExit as exc:  # never expected: main() returns its exit code
            rc = f"SystemExit {exc.code}"
    out[name] = {"rc": rc, "out": stdout.getvalue(), "err": stderr.getvalue()}
if "--load" in sys.argv:
    import ortgpu
    try:
        ortgpu.load(sys.argv[-1])
        out["load"] = {"error": None}
    except Exception as exc:
        code = int(getattr(exc, "exit_code", -1))
        out["load"] = {"error": type(exc).__name__, "message": str(exc), "exit_code": code}
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def no_ort_path(tmp_path_factory) -> Path:
    return ortless_site(tmp_path_factory.mktemp("no-ort-site"))


def _run(no_ort_path: Path, commands: dict[str, list[str]], *extra: str, cwd: Path) -> dict:
    env = ortless_env(no_ort_path, ORTGPU_NVML_LIBRARY="/nonexistent/libnvidia-ml.so.1")
    done = subprocess.run(
        [sys.executable, "-S", "-c", _DRIVER, json.dumps(commands), *extra],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=120, check=False,
    )  # fmt: skip
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(line[len("RESULT ") :])


def _no_traceback(result: dict) -> None:
    assert "Traceback" not in result["err"] and "internal error" not in result["err"], result["err"]


def test_the_child_really_has_no_onnxruntime(no_ort_path, tmp_path) -> None:
    code = (
        "import importlib.util, importlib.metadata as m; print(importlib.util.find_spec('onnxruntime'), "
        "[d.metadata['Name'] for d in m.distributions() if 'onnxruntime' in (d.metadata['Name'] or '')])"
    )
    env = ortless_env(no_ort_path)
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == "None []"


def test_diagnosis_commands_work_without_onnxruntime(no_ort_path, tmp_path) -> None:
    from realpackages import build_release_folder, have_gcc

    if not have_gcc():
        pytest.skip("needs gcc to build a small release folder")
    release = build_release_folder(tmp_path / "pkg")
    results = _run(
        no_ort_path,
        {
            "help": ["--help"],
            "version": ["--version"],
            "doctor": ["doctor", "--json"],
            "package": ["doctor", "--package", str(release), "--json"],
            "explain": ["explain", "libcudnn.so.9: cannot open shared object file: No such file or directory"],
            "bundle": ["bundle", "--package", str(release), "--out", str(tmp_path / "bundle"), "--json"],
        },
        cwd=tmp_path,
    )
    for result in results.values():
        _no_traceback(result)
    assert results["help"]["rc"] == 0 and "doctor" in results["help"]["out"]
    assert results["version"]["rc"] == 0
    assert "onnxruntime: not installed" in results["version"]["out"]
    # the doctor diagnoses the absence itself: verdict, cause and the fix naming the GPU build to install
    doctor = json.loads(results["doctor"]["out"])["result"]
    assert results["doctor"]["rc"] == 3 and not doctor["ready"]
    installed = next(c for c in doctor["checks"] if c["id"] == "ort.installed")
    assert installed["status"] == "fail" and "onnxruntime is not installed" in installed["cause"]
    assert "onnxruntime-gpu[cuda,cudnn]" in installed["fix"]
    assert doctor["distributions"]["module_dir"] is None
    package = json.loads(results["package"]["out"])["result"]
    assert results["package"]["rc"] == 3 and package["analysis"]["version"] == "1.20.1"  # its CUDA libs are absent
    assert results["explain"]["rc"] == 0 and "cuDNN" in results["explain"]["out"]
    bundle = json.loads(results["bundle"]["out"])["result"]
    # exit 1: the small release needs CUDA libraries this machine lacks; the bundle and its manifest are written
    assert results["bundle"]["rc"] == 1 and (tmp_path / "bundle" / "manifest.json").is_file(), bundle


@pytest.mark.slow  # ~4 s: three commands and ortgpu.load() in one child, each importing onnx and numpy
def test_model_commands_exit_3_naming_the_extra(no_ort_path, tmp_path) -> None:
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )  # fmt: skip
    model = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    results = _run(
        no_ort_path,
        {"check": ["check", str(model)], "bench": ["bench", str(model)], "demo": ["demo"]},
        "--load",
        str(model),
        cwd=tmp_path,
    )
    for name in ("check", "bench", "demo"):
        result = results[name]
        _no_traceback(result)
        assert result["rc"] == 3, (name, result)
        lines = result["err"].strip().splitlines()
        assert len(lines) == 1, (name, lines)  # one line: what, why (no GPU per NVML) and the extra to install
        assert "onnxruntime is not installed" in lines[0] and "`cpu` extra" in lines[0], lines[0]
        assert "no NVIDIA GPU answers" in lines[0] and "pip install 'ortgpu[cpu]'" in lines[0]
    assert not (tmp_path / "ortgpu-demo-report.html").exists()
    load = results["load"]
    assert load["error"] == "OrtNotInstalledError" and load["exit_code"] == 3
    assert re.search(r"install the `cpu` extra", load["message"])
