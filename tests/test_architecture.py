"""The shape of the code, enforced: the room contract holds, mypy finds nothing new, every module says its room."""

from __future__ import annotations

import ast
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "ortgpu"


def _lint_imports() -> str | None:
    exe = Path(sys.executable).with_name("lint-imports")
    return str(exe) if exe.exists() else shutil.which("lint-imports")


@pytest.mark.skipif(_lint_imports() is None, reason="import-linter is not installed (pip install -e '.[test]')")
def test_room_contract_holds() -> None:
    run = subprocess.run([_lint_imports(), "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed (pip install -e '.[test]')")
def test_mypy_finds_no_error_the_baseline_does_not_list() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "mypy_baseline.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


def test_every_module_opens_with_a_docstring_saying_its_room() -> None:
    missing = [
        str(path.relative_to(ROOT))
        for path in sorted(SRC.rglob("*.py"))
        if not (ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "").strip()
    ]
    assert not missing, f"modules without a docstring: {missing}"


def test_the_package_says_it_is_typed() -> None:
    assert (SRC / "py.typed").is_file()


def test_ortgpus_own_imports_are_at_module_top() -> None:
    """Imports inside functions hide the graph (and the cycles): only the public facade imports lazily."""
    inside = []
    for path in sorted(SRC.rglob("*.py")):
        if path == SRC / "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            for node in ast.walk(function):
                module = node.module if isinstance(node, ast.ImportFrom) else None
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [module or ""]
                if isinstance(node, (ast.Import, ast.ImportFrom)) and any(n.split(".")[0] == "ortgpu" for n in names):
                    inside.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not inside, f"ortgpu imports inside functions: {sorted(set(inside))}"


def test_import_ortgpu_stays_light() -> None:
    code = "import ortgpu, sys; print(sorted(m for m in sys.modules if m.startswith('ortgpu')))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "['ortgpu']", run.stdout


@pytest.mark.skipif(_lint_imports() is None, reason="import-linter is not installed (pip install -e '.[test]')")
def test_the_contract_fails_on_a_room_importing_upwards(tmp_path: Path) -> None:
    shutil.copytree(SRC, tmp_path / "src" / "ortgpu", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    archive = tmp_path / "src" / "ortgpu" / "package" / "archive.py"
    archive.write_text(archive.read_text(encoding="utf-8") + "\nfrom ortgpu.doctor import verdict  # noqa\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src")}
    run = subprocess.run([_lint_imports(), "--no-cache"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 1, run.stdout[-3000:]
    assert "ortgpu.package is not allowed to import ortgpu.doctor" in run.stdout


# Modules a reader cannot take in at once get split by what a reader looks for (docs/architecture.md). A module may
# pass the limit only when it is a declarative table, named here with the reason.
MAX_MODULE_LINES = 650
LONG_TABLES: dict[str, str] = {}


def test_no_module_is_too_long_to_read() -> None:
    long = {
        str(path.relative_to(SRC)): lines
        for path in sorted(SRC.rglob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
        and str(path.relative_to(SRC)) not in LONG_TABLES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them, see docs/architecture.md): {long}"
