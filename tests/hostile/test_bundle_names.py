"""`ortgpu bundle` against hostile packages: every name that comes out of a package is a bare file name or refused."""

from __future__ import annotations

import sys
import tarfile
from pathlib import Path

import pytest
from tests.support.realpackages import build_release_folder, build_so, have_gcc, tar_folder, tar_with

from ortgpu.cli.main import main

pytestmark = pytest.mark.skipif(not have_gcc() or not sys.platform.startswith("linux"), reason="needs gcc on Linux")


def tree(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder`` with its bytes (None for folders and links): what a run may not change."""
    out: dict[str, bytes | None] = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        out[rel] = path.read_bytes() if path.is_file() and not path.is_symlink() else None
    return out


def cpu_release(root: Path, core_soname: str) -> Path:
    """A CPU release folder whose core library carries ``core_soname``."""
    folder = build_release_folder(root, version="1.20.0", cuda_needs=None)
    core = folder / "lib" / "libonnxruntime.so.1.20.0"
    core.unlink()
    build_so(core, soname=core_soname)
    return folder


def run_bundle(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["bundle", *args])
    return code, capsys.readouterr().err


def assert_refused(code: int, err: str, *said: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ortgpu: error:"), err
    for text in said:
        assert text in err


@pytest.mark.parametrize("kind", ["folder", "tgz"])
def test_absolute_soname_cannot_overwrite_a_file(tmp_path: Path, capsys, kind: str) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    package = cpu_release(tmp_path / "pkg", core_soname=str(victim))
    if kind == "tgz":
        package = tar_folder(package, tmp_path / "pkg.tgz")
    before = tree(tmp_path)
    code, err = run_bundle(capsys, "--package", str(package), "--out", str(tmp_path / "out"))
    assert_refused(code, err, "SONAME", "not a bare file name")
    assert victim.read_text() == "precious\n"
    assert tree(tmp_path) == before  # not even the output folder


def test_relative_soname_cannot_write_outside_the_output(tmp_path: Path, capsys) -> None:
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    package = cpu_release(tmp_path / "pkg", core_soname="../../../../escaped.so")
    before = tree(tmp_path)
    code, err = run_bundle(capsys, "--package", str(package), "--out", str(work / "out"))
    assert_refused(code, err, "SONAME")
    assert tree(tmp_path) == before


def test_soname_naming_another_bundled_file_does_not_replace_it(tmp_path: Path, capsys) -> None:
    folder = build_release_folder(tmp_path / "gpu", version="1.20.0", cuda_needs=("libcudart.so.12",))
    core = folder / "lib" / "libonnxruntime.so.1.20.0"
    core.unlink()
    build_so(core, soname="libonnxruntime_providers_shared.so")
    code, err = run_bundle(capsys, "--package", str(folder), "--out", str(tmp_path / "out"))
    assert_refused(code, err, "libonnxruntime_providers_shared.so")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "bad",
    [
        "libonnxruntime.so.1\x1b]8;;http://x\x07",  # a control character
        "lib\\..\\..\\x.so",  # a Windows separator
        "..",
        "l" * 300,  # longer than any file system takes
    ],
)
def test_unusable_sonames_are_refused(tmp_path: Path, capsys, bad: str) -> None:
    package = cpu_release(tmp_path / "pkg", core_soname=bad)
    code, err = run_bundle(capsys, "--package", str(package), "--out", str(tmp_path / "out"))
    assert_refused(code, err, "SONAME")
    assert not (tmp_path / "out").exists()


def test_member_name_with_a_newline_is_not_taken_for_a_library(tmp_path: Path, capsys) -> None:
    """`$` in a regex matches before a final newline: 'libonnxruntime.so\\n' must not pass for ORT's library."""
    real = cpu_release(tmp_path / "pkg", core_soname="libonnxruntime.so.1")
    core = (real / "lib" / "libonnxruntime.so.1.20.0").read_bytes()
    archive = tar_with(
        tmp_path / "evil.tgz",
        [("r/VERSION_NUMBER", b"1.20.0\n"), ("r/lib/libonnxruntime.so\n", core), ("r/include/x\x1b[2J.h", b"/* */")],
    )
    code, err = run_bundle(capsys, "--package", str(archive), "--out", str(tmp_path / "out"))
    assert code == 2, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "version", ["1.20.0/../../../x", "1.20.0\x1b[31mred", "9" * 5000], ids=["slash", "escape", "long"]
)
def test_version_number_must_be_a_plain_version(tmp_path: Path, capsys, version: str) -> None:
    package = cpu_release(tmp_path / "pkg", core_soname="libonnxruntime.so.1")
    (package / "VERSION_NUMBER").write_text(version + "\n")
    (package / "lib" / "libonnxruntime.so.1.20.0").rename(package / "lib" / "libonnxruntime.so.1")
    (package / "lib" / "libonnxruntime.so").unlink()
    code, err = run_bundle(capsys, "--package", str(package), "--out", str(tmp_path / "out"))
    assert_refused(code, err, "VERSION_NUMBER")
    assert not (tmp_path / "out").exists()


def test_tar_with_a_control_character_member_is_refused_before_extracting(tmp_path: Path, capsys) -> None:
    real = cpu_release(tmp_path / "pkg", core_soname="libonnxruntime.so.1")
    archive = tmp_path / "evil.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(real / "lib" / "libonnxruntime.so.1.20.0", arcname="r/lib/libonnxruntime.so.1.20.0")
        tar.add(real / "VERSION_NUMBER", arcname="r/include/\x1b]0;pwned\x07.h")
    code, err = run_bundle(capsys, "--package", str(archive), "--out", str(tmp_path / "out"))
    assert_refused(code, err, "control character")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("imported", ["..\\..\\evil.dll", "C:/Windows/System32/evil.dll"])
def test_pe_import_that_is_a_path_is_refused(tmp_path: Path, capsys, imported: str) -> None:
    import zipfile

    from tests.support.realpackages import build_pe

    vc = ["VCRUNTIME140.dll", "KERNEL32.dll"]
    root = "onnxruntime-win-x64-gpu-1.20.1"
    package = tmp_path / f"{root}.zip"
    with zipfile.ZipFile(package, "w") as archive:
        archive.writestr(f"{root}/VERSION_NUMBER", "1.20.1\n")
        archive.writestr(f"{root}/lib/onnxruntime.dll", build_pe(vc))
        archive.writestr(f"{root}/lib/onnxruntime_providers_shared.dll", build_pe(vc))
        cuda = build_pe(["cudart64_12.dll", imported, "onnxruntime_providers_shared.dll", *vc])
        archive.writestr(f"{root}/lib/onnxruntime_providers_cuda.dll", cuda)
    libs = tmp_path / "dlls"
    libs.mkdir()
    (libs / "evil.dll").write_bytes(b"MZ")
    code, err = run_bundle(capsys, "--package", str(package), "--out", str(tmp_path / "out"), "--libs-from", str(libs))
    assert_refused(code, err, "imported DLL", "evil.dll")
    assert not (tmp_path / "out").exists()
