"""The CLI shell: light start-up, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

from ortgpu.cli.main import main


def _modules_loaded_by(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_help_and_import_do_not_load_heavy_libraries() -> None:
    heavy = {"onnxruntime", "onnx", "numpy"}
    for code in (
        "import ortgpu",
        "from ortgpu.cli.main import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass",
        "from ortgpu.cli.main import main\nmain(['doctor', '--help'])",
    ):
        assert not heavy & _modules_loaded_by(code), code


def test_help_lists_every_command(capsys) -> None:
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    for name in ("doctor", "explain", "check", "bench", "demo"):
        assert name in text


def test_unknown_command_is_usage_error(capsys) -> None:
    assert main(["frobnicate"]) == 2
    assert "frobnicate" in capsys.readouterr().err


def test_version(capsys) -> None:
    assert main(["--version"]) == 0
    assert "ortgpu" in capsys.readouterr().out


def test_python_dash_m_runs() -> None:
    out = subprocess.run([sys.executable, "-m", "ortgpu", "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    assert "doctor" in out.stdout


def test_every_subcommand_help_stays_light() -> None:
    # rich, scipy, optuna and matplotlib are as slow to import as numpy: `ortgpu <command> --help` needs none
    heavy = {"onnxruntime", "onnx", "numpy", "rich", "scipy", "optuna", "matplotlib", "ray"}
    code = (
        "from ortgpu.cli.main import main\nfrom ortgpu.cli.registry import COMMANDS\n"
        "for name in COMMANDS:\n    main([name, '--help'])\n"
    )
    loaded = {name.split(".")[0] for name in _modules_loaded_by(code)}
    assert not heavy & loaded
