"""`ortgpu explain`: argument or stdin, table or JSON, exit 0 / 1 / 2."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from ortgpu.cli.main import main

CUDNN8 = (
    "2024-02-23 12:12:19.240097373 [E:onnxruntime:Default, provider_bridge_ort.cc:1546 TryGetProviderInfo_CUDA] "
    "/onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1209 onnxruntime::Provider& "
    "onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library "
    "libonnxruntime_providers_cuda.so with error: libcudnn.so.8: cannot open shared object file: No such file or "
    "directory"
)


def _stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode("utf-8")), encoding="utf-8"))


def test_diagnosis_from_the_argument(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", CUDNN8]) == 0
    out = capsys.readouterr().out
    assert "FM-11" in out and "libcudnn.so.8" in out and "cuDNN 8" in out
    assert "Fix" in out and "Next" in out


def test_unquoted_words_are_joined(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "CUDA", "failure", "35:", "CUDA", "driver", "version", "is", "insufficient"]) == 0
    assert "FM-34" in capsys.readouterr().out


def test_stdin_with_dash(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _stdin(monkeypatch, 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n' + CUDNN8 + "\n")
    assert main(["explain", "-"]) == 0
    assert "FM-11" in capsys.readouterr().out


def test_stdin_with_invalid_utf8(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    garbled = (
        b'Error loading "D:\\AI\\venv\\Lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll" '
        b'which dep\xb5\xa5\xc1\xb4\xbd")Lt64_12.dll" which is missing. (Error 126: "\xd5\xd2\xb2\xbb\xb5\xbd'
    )
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(garbled), encoding="utf-8"))
    assert main(["explain", "-"]) == 0
    out = capsys.readouterr().out
    assert "FM-23" in out and "Lt64_12.dll" in out


def test_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--json", CUDNN8]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "ortgpu.explain/v1"
    result = doc["result"]
    assert result["verdict"] == "gpu_problem" and result["recognised"] is True
    top = result["matches"][0]
    assert top["id"] == "FM-11" and top["library"] == "libcudnn.so.8"
    assert top["severity"] == "error" and top["family"] == "linux_loader"


def test_not_gpu_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["explain", "--json", "ValueError: Required inputs (['x']) are missing from input feed (['y'])."])
    assert code == 0
    result = json.loads(capsys.readouterr().out)["result"]
    assert result["verdict"] == "not_gpu"


def test_not_recognised_exits_1_and_points_to_doctor(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "my model is sad"]) == 1
    out = capsys.readouterr().out
    assert "Not recognised" in out and "ortgpu doctor" in out


def test_not_recognised_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--json", "my model is sad"]) == 1
    assert json.loads(capsys.readouterr().out)["result"]["verdict"] == "not_recognised"


@pytest.mark.parametrize("argv", [["explain", ""], ["explain", "   "]])
def test_empty_text_exits_2_with_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1 and "empty" in captured.err
    assert "Traceback" not in captured.err


def test_empty_stdin_exits_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _stdin(monkeypatch, "\n\n")
    assert main(["explain", "-"]) == 2
    assert "empty" in capsys.readouterr().err


def test_missing_argument_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain"]) == 2


def test_user_text_is_not_rich_markup(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "[bold red]x[/] " + CUDNN8.replace("libonnxruntime", "[red]libonnxruntime")]) == 0
    assert "[red]libonnxruntime" in capsys.readouterr().out


def test_help_does_not_import_heavy_modules() -> None:
    code = (
        "import sys\nfrom ortgpu.cli.main import main\nmain(['explain', '--help'])\n"
        "print(sorted({'onnxruntime', 'onnx', 'numpy'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
    assert "stdin" in out.stdout


@pytest.mark.parametrize(
    ("text", "verdict", "opening", "top"),
    [
        (
            '[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Unknown provider option: "gpu_memory_limit".',
            "configuration",
            "Configuration problem:",
            "FM-81",
        ),
        (
            "session = ort.InferenceSession(p, providers=['CPUExecutionProvider', 'CUDAExecutionProvider'])",
            "configuration",
            "Configuration problem:",
            "FM-89",
        ),
        ("Load model from /data/big.onnx failed:std::bad_alloc", "host_memory", "Host memory:", "FM-87"),
        (CUDNN8, "gpu_problem", "GPU problem:", "FM-11"),
    ],
)
def test_problems_outside_the_gpu_setup_say_what_they_are(
    capsys: pytest.CaptureFixture[str], text: str, verdict: str, opening: str, top: str
) -> None:
    assert main(["explain", "--json", text]) == 0  # a diagnosis: exit 0 like every recognised verdict
    result = json.loads(capsys.readouterr().out)["result"]
    assert result["verdict"] == verdict and result["recognised"] is True
    assert result["summary"].startswith(opening) and result["matches"][0]["id"] == top
    assert main(["explain", text]) == 0
    assert capsys.readouterr().out.startswith(opening)
