"""A tuned ortgpu.toml names a [model] file (the fp16 / fused copy) pinned by sha256. Swapped for another file, or
left unpinned, it must be refused by every command that reads the config (exit 2, one line), never run silently."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from ortgpu.cli.main import main
from ortgpu.model.zoo import build_demo_model, build_tiny_model


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def tuned(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(model, its tuned copy, the config pinning the copy), laid out as tune writes them."""
    model = build_tiny_model(tmp_path / "tiny.onnx")
    (tmp_path / "t" / "models").mkdir(parents=True)
    copy = Path(shutil.copy(model, tmp_path / "t" / "models" / "tiny.fused.onnx"))
    config = tmp_path / "t" / "ortgpu.toml"
    config.write_text(
        "# written by ortgpu tune\n[model]\n"
        f'file = "models/tiny.fused.onnx"\nsha256 = "{_sha(copy)}"\nsource_sha256 = "{_sha(model)}"\n'
    )
    return model, copy, config


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("ortgpu: error: ") and "(hint: " in lines[0], err
    return lines[0]


PROFILE = ["profile", "{model}", "--ep", "cpu", "--runs", "1", "--trace", "{trace}"]
COMMANDS = {
    "inspect": ["inspect", "{model}", "--no-kernels", "--config", "{config}"],
    "profile": [*PROFILE, "--config", "{config}"],
    "profile --compare": [*PROFILE, "--compare", "{config}"],  # the defaults profile first: nothing may run
    "check": ["check", "{model}", "--ep", "cpu", "--config", "{config}"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_swapped_model_file_is_refused_by_every_command(
    command: str, tuned: tuple[Path, Path, Path], tmp_path: Path, capsys
) -> None:
    model, copy, config = tuned
    shutil.copy(build_demo_model(tmp_path / "other.onnx"), copy)  # someone replaced the tuned file
    trace = tmp_path / "trace.json"
    args = [a.format(model=model, config=config, trace=trace) for a in COMMANDS[command]]
    code, out, err = _run(capsys, *args, "--json")
    assert code == 2, err
    assert "changed since its sha256 was written" in _one_line(err)
    assert json.loads(out)["error"]["exit_code"] == 2
    assert not trace.exists()


def test_inspect_describes_the_file_a_tuned_config_runs(tuned: tuple[Path, Path, Path], capsys) -> None:
    model, copy, config = tuned
    code, out, _ = _run(capsys, "inspect", str(model), "--no-kernels", "--config", str(config), "--json")
    assert code == 0
    result = json.loads(out)["result"]
    assert Path(result["path"]) == copy and "tiny.fused.onnx" in result["notes"][0]


def test_a_model_file_without_its_sha256_is_refused(tuned: tuple[Path, Path, Path], tmp_path: Path, capsys) -> None:
    """Unpinned, the [model] file would run in place of whatever model is given: nothing ties the two."""
    model, copy, config = tuned
    shutil.copy(build_demo_model(tmp_path / "other.onnx"), copy)
    config.write_text('[model]\nfile = "models/tiny.fused.onnx"\n')
    code, _, err = _run(capsys, "check", str(model), "--ep", "cpu", "--config", str(config))
    assert code == 2 and "sha256" in _one_line(err)
