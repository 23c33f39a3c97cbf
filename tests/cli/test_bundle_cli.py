"""`ortgpu bundle` on the command line: exit codes 0 complete / 1 incomplete / 2 bad input, table and JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tests.support.realpackages import build_release_folder, build_stubs, have_gcc, tar_with

from ortgpu.cli.main import main

pytestmark = pytest.mark.skipif(not have_gcc() or not sys.platform.startswith("linux"), reason="needs gcc on Linux")


@pytest.fixture
def release(tmp_path: Path) -> Path:
    return build_release_folder(tmp_path / "pkg", version="1.20.1", cuda_needs=("libcudart.so.12",))


def test_cpu_only_bundle_prints_a_table_and_exits_0(release: Path, tmp_path: Path, capsys) -> None:
    code = main(["bundle", "--package", str(release), "--out", str(tmp_path / "b"), "--providers", "cpu"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("complete:") and "lib/libonnxruntime.so.1" in out and "LD_LIBRARY_PATH=" in out


def test_incomplete_bundle_exits_1_with_json(release: Path, tmp_path: Path, capsys) -> None:
    code = main(["bundle", "--package", str(release), "--out", str(tmp_path / "b"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    assert doc["schema"] == "ortgpu.bundle/v1"
    result = doc["result"]
    assert result["manifest"]["complete"] is False
    assert "libcudart.so.12" in {m["name"] for m in result["manifest"]["missing"]}
    assert (tmp_path / "b" / "manifest.json").is_file()  # written all the same, saying what is missing


def test_complete_with_libs_from_exits_0(release: Path, tmp_path: Path, capsys) -> None:
    libs = tmp_path / "cuda"
    build_stubs(libs, ["libcudart.so.12"])
    code = main(["bundle", "--package", str(release), "--out", str(tmp_path / "b"), "--libs-from", str(libs), "--json"])
    result = json.loads(capsys.readouterr().out)["result"]
    # complete unless the matrix names a cuDNN for this release that the stub folder lacks
    required = [m["name"] for m in result["manifest"]["missing"] if m["required"]]
    assert code == (0 if not required else 1)
    assert "lib/libcudart.so.12" in {f["path"] for f in result["manifest"]["files"]}


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--providers", "rocm"], "unknown provider 'rocm'"),
        (["--providers", "tensorrt"], "no tensorrt provider"),
        (["--target", "win-x64"], "--target win-x64"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(release: Path, tmp_path: Path, capsys, args, said) -> None:
    code = main(["bundle", "--package", str(release), "--out", str(tmp_path / "b"), *args])
    assert code == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "b").exists()


def test_non_empty_out_needs_force(release: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "b"
    out.mkdir()
    (out / "x").write_text("x")
    assert main(["bundle", "--package", str(release), "--out", str(out), "--providers", "cpu"]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["bundle", "--package", str(release), "--out", str(out), "--providers", "cpu", "--force"]) == 0
    assert not (out / "x").exists()


def test_unsafe_archive_exits_2(tmp_path: Path, capsys) -> None:
    archive = tar_with(tmp_path / "evil.tgz", [("lib/libonnxruntime.so.1.20.1", b"\x7fELF"), ("../evil", b"x")])
    assert main(["bundle", "--package", str(archive), "--out", str(tmp_path / "b")]) == 2
    assert "outside" in capsys.readouterr().err
    assert not (tmp_path / "b").exists() and not (tmp_path.parent / "evil").exists()
