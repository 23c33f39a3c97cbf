"""Opening ORT packages safely: unsafe or broken archives are refused before anything is extracted."""

from __future__ import annotations

import stat
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest
from tests.support.realpackages import build_so, have_gcc, tar_with, zip_folder

from ortgpu.cli.main import main
from ortgpu.errors import ExitCode
from ortgpu.package.archive import (
    OpenedPackage,
    PackageError,
    PackageKind,
    UnsafeArchiveError,
    is_ort_library,
    open_package,
)

ELF_STUB = b"\x7fELF" + b"\0" * 60  # enough to be listed; these tests never parse it
GOOD = ("pkg/lib/libonnxruntime_providers_cuda.so", ELF_STUB)


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point tempfile at a folder of our own, so the tests can see what extraction leaves behind."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _open(path: Path) -> tuple[OpenedPackage | None, list[str]]:
    messages: list[str] = []
    with open_package(path, lambda message, fraction=None: messages.append(message)) as opened:
        return opened, messages


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("libonnxruntime.so.1.20.1", True),
        ("onnxruntime.dll", True),
        ("onnxruntime_providers_cuda.dll", True),
        ("libonnxruntime_providers_tensorrt.so", True),
        ("onnxruntime_pybind11_state.cpython-311-x86_64-linux-gnu.so", True),
        ("onnxruntime_pybind11_state.pyd", True),
        ("libcublasLt.so.12", False),
        ("onnxruntime.lib", False),
        ("onnxruntime_c_api.h", False),
    ],
)
def test_ort_libraries_are_recognised_by_name(name: str, expected: bool) -> None:
    assert is_ort_library(name) is expected


def test_tgz_with_parent_member_is_refused_before_extracting(tmp_path: Path, private_tmp: Path) -> None:
    archive = tar_with(tmp_path / "evil.tgz", [GOOD, ("pkg/../../evil.so", b"owned")])
    messages: list[str] = []
    with (
        pytest.raises(UnsafeArchiveError, match=r"outside the archive.*nothing was extracted") as err,
        open_package(archive, lambda message, fraction=None: messages.append(message)),
    ):
        pass
    assert err.value.exit_code is ExitCode.BAD_INPUT
    assert not any(m.startswith("extracting") for m in messages)
    assert not (tmp_path / "evil.so").exists() and not (tmp_path.parent / "evil.so").exists()
    assert list(private_tmp.iterdir()) == []  # the temp folder is gone too


def test_tgz_with_absolute_member_is_refused(tmp_path: Path, private_tmp: Path) -> None:
    target = tmp_path / "outside" / "libonnxruntime.so"
    archive = tar_with(tmp_path / "abs.tgz", [GOOD, (str(target), b"owned")])
    with pytest.raises(UnsafeArchiveError, match="absolute path"):
        _open(archive)
    assert not target.exists()
    assert list(private_tmp.iterdir()) == []


@pytest.mark.parametrize(
    ("kind", "linkname"),
    [(tarfile.SYMTYPE, "../../../etc/passwd"), (tarfile.SYMTYPE, "/etc/passwd"), (tarfile.LNKTYPE, "../outside.so")],
)
def test_tgz_with_link_leaving_the_archive_is_refused(
    tmp_path: Path, private_tmp: Path, kind: bytes, linkname: str
) -> None:
    link = tarfile.TarInfo("pkg/lib/libonnxruntime.so")
    link.type, link.linkname = kind, linkname
    archive = tar_with(tmp_path / "link.tgz", [GOOD, link])
    with pytest.raises(UnsafeArchiveError, match="points outside the archive"):
        _open(archive)
    assert list(private_tmp.iterdir()) == []


def test_tgz_with_device_file_is_refused(tmp_path: Path) -> None:
    device = tarfile.TarInfo("pkg/lib/null")
    device.type, device.devmajor, device.devminor = tarfile.CHRTYPE, 1, 3
    archive = tar_with(tmp_path / "dev.tgz", [GOOD, device])
    with pytest.raises(UnsafeArchiveError, match="device or special file"):
        _open(archive)


def test_tgz_link_inside_the_archive_is_kept_as_an_alias(tmp_path: Path) -> None:
    link = tarfile.TarInfo("pkg/lib/libonnxruntime.so")
    link.type, link.linkname = tarfile.SYMTYPE, "libonnxruntime.so.1.20.1"
    archive = tar_with(tmp_path / "ok.tgz", [("pkg/lib/libonnxruntime.so.1.20.1", ELF_STUB), link])
    opened, messages = _open(archive)
    assert opened is not None and opened.kind is PackageKind.TARBALL
    assert opened.links == {"pkg/lib/libonnxruntime.so": "pkg/lib/libonnxruntime.so.1.20.1"}
    assert list(opened.files) == ["pkg/lib/libonnxruntime.so.1.20.1"]
    assert any(m.startswith("extracting") for m in messages)


def test_zip_with_parent_member_is_refused(tmp_path: Path, private_tmp: Path) -> None:
    path = tmp_path / "evil.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(*GOOD)
        archive.writestr("..\\..\\evil.dll", b"owned")  # Windows separators count too
    with pytest.raises(UnsafeArchiveError, match="outside the archive"):
        _open(path)
    assert list(private_tmp.iterdir()) == []


def test_zip_with_symlink_leaving_the_archive_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "link.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(*GOOD)
        info = zipfile.ZipInfo("onnxruntime/capi/libcudart.so.12")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(info, "/usr/local/cuda/lib64/libcudart.so.12")
    with pytest.raises(UnsafeArchiveError, match="points outside the archive"):
        _open(path)


def test_only_the_needed_members_are_extracted(tmp_path: Path) -> None:
    path = tmp_path / "onnxruntime_gpu-1.20.1-cp311-cp311-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("onnxruntime/capi/libonnxruntime_providers_cuda.so", ELF_STUB)
        archive.writestr("onnxruntime/capi/onnxruntime_inference_collection.py", "x = 1\n")
        archive.writestr("onnxruntime/transformers/models/big.bin", b"\0" * 100_000)
        archive.writestr("onnxruntime_gpu-1.20.1.dist-info/METADATA", "Name: onnxruntime-gpu\nVersion: 1.20.1\n")
    with open_package(path) as opened:
        extracted = {m: p for m, p in opened.files.items()}
        assert set(extracted) == {
            "onnxruntime/capi/libonnxruntime_providers_cuda.so",
            "onnxruntime_gpu-1.20.1.dist-info/METADATA",
        }
        assert len(opened.members) == 4
        assert all(p.is_file() for p in extracted.values())
    assert not any(p.exists() for p in extracted.values())  # removed with the temp folder


def test_truncated_wheel_is_bad_input(tmp_path: Path) -> None:
    whole = tmp_path / "whole.whl"
    with zipfile.ZipFile(whole, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("onnxruntime/capi/libonnxruntime_providers_cuda.so", bytes(range(256)) * 400)
    truncated = tmp_path / "onnxruntime_gpu-1.20.1-cp311-cp311-manylinux_2_28_x86_64.whl"
    truncated.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    with pytest.raises(PackageError, match="truncated or not a zip file"):
        _open(truncated)


def test_non_zip_file_named_whl_is_bad_input(tmp_path: Path) -> None:
    fake = tmp_path / "onnxruntime_gpu-1.20.1-cp311-cp311-win_amd64.whl"
    fake.write_text("<html>404 Not Found</html>", encoding="utf-8")
    with pytest.raises(PackageError, match="not a valid wheel"):
        _open(fake)


def test_truncated_tgz_is_bad_input(tmp_path: Path) -> None:
    whole = tar_with(tmp_path / "whole.tgz", [GOOD, ("pkg/VERSION_NUMBER", b"1.20.1\n" * 5000)])
    cut = tmp_path / "cut.tgz"
    cut.write_bytes(whole.read_bytes()[:-40])
    with pytest.raises(PackageError, match="tar archive"):
        _open(cut)


def test_unknown_file_type_is_bad_input(tmp_path: Path) -> None:
    other = tmp_path / "model.onnx"
    other.write_bytes(b"\x08\x07")
    with pytest.raises(PackageError, match="not an ONNX Runtime package"):
        _open(other)


def test_missing_path_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(PackageError, match="no such file or folder"):
        _open(tmp_path / "nope.whl")


def test_empty_folder_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(PackageError, match="folder is empty"):
        _open(tmp_path / "empty")


def test_folder_without_ort_library_is_bad_input(tmp_path: Path) -> None:
    folder = tmp_path / "not-ort"
    (folder / "lib").mkdir(parents=True)
    (folder / "README.md").write_text("hello\n", encoding="utf-8")
    (folder / "lib" / "libcublasLt.so.12").write_bytes(ELF_STUB)
    with pytest.raises(PackageError, match="no ONNX Runtime library"):
        _open(folder)


def test_archive_without_ort_library_is_bad_input(tmp_path: Path) -> None:
    archive = tar_with(tmp_path / "other.tgz", [("pkg/lib/libcudnn.so.9", ELF_STUB)])
    with pytest.raises(PackageError, match="no ONNX Runtime library"):
        _open(archive)


@pytest.mark.skipif(not have_gcc(), reason="needs gcc to build a shared library")
def test_folder_is_read_in_place_and_zip_of_it_gives_the_same_members(tmp_path: Path) -> None:
    folder = tmp_path / "release"
    build_so(folder / "lib" / "libonnxruntime.so.1.20.1", soname="libonnxruntime.so.1")
    (folder / "VERSION_NUMBER").write_text("1.20.1\n", encoding="utf-8")
    with open_package(folder) as opened:
        assert opened.kind is PackageKind.FOLDER
        assert opened.files["lib/libonnxruntime.so.1.20.1"] == folder / "lib" / "libonnxruntime.so.1.20.1"
        in_place = set(opened.members)
    with open_package(zip_folder(folder, tmp_path / "release.zip")) as opened:
        assert opened.kind is PackageKind.ZIP
        assert set(opened.members) == in_place


@pytest.mark.parametrize(
    ("builder", "expected"),
    [
        (lambda p: tar_with(p / "evil.tgz", [GOOD, ("../evil.so", b"x")]), "outside the archive"),
        (lambda p: (p / "x.whl").write_bytes(b"garbage") and p / "x.whl", "not a valid wheel"),
        (lambda p: p / "missing.tgz", "no such file"),
    ],
)
def test_cli_reports_bad_packages_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], builder: object, expected: str
) -> None:
    path = builder(tmp_path)  # type: ignore[operator]
    code = main(["doctor", "--package", str(path)])
    out, err = capsys.readouterr()
    assert code == ExitCode.BAD_INPUT
    assert expected in err
    assert "Traceback" not in err + out
    assert len(err.strip().splitlines()) == 1


def test_zip_member_read_error_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "bad-crc.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("onnxruntime/capi/libonnxruntime_providers_cuda.so", b"A" * 4096)
    data = bytearray(path.read_bytes())
    start = data.find(b"A" * 64)
    data[start : start + 64] = b"B" * 64  # damage the stored bytes: the CRC no longer matches
    path.write_bytes(bytes(data))
    with pytest.raises(PackageError, match="corrupt"):
        _open(path)


def test_opened_package_reads_text_members(tmp_path: Path) -> None:
    archive = tar_with(tmp_path / "v.tgz", [GOOD, ("pkg/VERSION_NUMBER", b"1.20.1\n"), ("pkg/GIT_COMMIT_ID", b"abc\n")])
    with open_package(archive) as opened:
        assert opened.find("VERSION_NUMBER") == ("pkg/VERSION_NUMBER",)
        assert opened.read_text("pkg/VERSION_NUMBER").strip() == "1.20.1"
        assert opened.read_text("pkg/GIT_COMMIT_ID").strip() == "abc"
