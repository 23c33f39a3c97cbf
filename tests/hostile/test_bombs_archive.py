"""Decompression bombs: `doctor --package` and `bundle` check declared sizes and ratios before extracting a byte."""

from __future__ import annotations

import gzip
import io
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest

from ortgpu.cli.main import main
from ortgpu.package.archive import PackageError, open_package

LIB = "onnxruntime-linux-x64-1.20.0/lib/libonnxruntime.so.1.20.0"
ELF_HEAD = b"\x7fELF\x02\x01\x01" + b"\0" * 57  # enough of an ELF header to be taken for a library by name


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The system temp folder, made visible: what extraction writes (and leaves) there can be measured."""
    folder = tmp_path / "system-tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def sparse_tgz(path: Path, name: str, real_size: int) -> Path:
    """A .tgz whose one member is a GNU sparse file: a few hundred bytes that declare ``real_size`` bytes."""
    info = tarfile.TarInfo(name)
    info.size = 0
    header = bytearray(info.tobuf(format=tarfile.GNU_FORMAT))
    header[156:157] = tarfile.GNUTYPE_SPARSE
    header[483:495] = b"%011o\0" % real_size  # realsize: what extraction writes (zeros)
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(header[:512])
    path.write_bytes(gzip.compress(bytes(header) + b"\0" * 1024))
    return path


def zeros_zip(path: Path, size: int) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("onnxruntime-win-x64-1.20.0/VERSION_NUMBER", "1.20.0\n")
        with archive.open("onnxruntime-win-x64-1.20.0/lib/onnxruntime.dll", "w", force_zip64=True) as member:
            chunk = b"\0" * (1 << 20)
            for _ in range(size >> 20):
                member.write(chunk)
    return path


def zeros_tgz(path: Path, size: int) -> Path:
    with tarfile.open(path, "w:gz", compresslevel=1) as archive:
        info = tarfile.TarInfo(LIB)
        info.size = size

        class Zeros(io.RawIOBase):
            def readable(self) -> bool:
                return True

            def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
                buffer[:] = b"\0" * len(buffer)
                return len(buffer)

        archive.addfile(info, io.BufferedReader(Zeros()))
    return path


def doctor(capsys: pytest.CaptureFixture[str], package: Path) -> tuple[int, str]:
    code = main(["doctor", "--package", str(package)])
    return code, capsys.readouterr().err


def test_sparse_tar_member_is_refused_without_writing(tmp_path: Path, private_tmp: Path, capsys) -> None:
    bomb = sparse_tgz(tmp_path / "bomb.tgz", LIB, 512 << 20)
    assert bomb.stat().st_size < 1024
    code, err = doctor(capsys, bomb)
    assert code == 2, err
    assert "a sparse file" in err and len(err.strip().splitlines()) == 1
    assert list(private_tmp.iterdir()) == []


def test_high_ratio_zip_member_is_refused_before_extracting(tmp_path: Path, private_tmp: Path, capsys) -> None:
    bomb = zeros_zip(tmp_path / "bomb.zip", 64 << 20)
    assert bomb.stat().st_size < 1 << 20
    code, err = doctor(capsys, bomb)
    assert code == 2, err
    assert "expands" in err and "onnxruntime.dll" in err
    assert list(private_tmp.iterdir()) == []


def test_high_ratio_tgz_is_refused_before_extracting(tmp_path: Path, private_tmp: Path, capsys) -> None:
    bomb = zeros_tgz(tmp_path / "bomb.tgz", 64 << 20)
    code, err = doctor(capsys, bomb)
    assert code == 2, err
    assert "expands" in err
    assert list(private_tmp.iterdir()) == []


def test_the_extraction_limit_is_said_and_can_be_raised(
    tmp_path: Path, private_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = __import__("random").Random(1)
    body = ELF_HEAD + bytes(rng.getrandbits(8) for _ in range(300_000))  # does not compress: ratio ~1
    package = tmp_path / "pkg.zip"
    with zipfile.ZipFile(package, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("r/lib/onnxruntime.dll", body)
    monkeypatch.setenv("ORTGPU_MAX_EXTRACT", "100K")
    with pytest.raises(PackageError) as caught, open_package(package):
        pass
    assert "ORTGPU_MAX_EXTRACT" in caught.value.one_line() and "100.0 KiB" in caught.value.one_line()
    assert list(private_tmp.iterdir()) == []
    monkeypatch.setenv("ORTGPU_MAX_EXTRACT", "1M")
    with open_package(package) as opened:
        assert opened.files["r/lib/onnxruntime.dll"].read_bytes() == body


def test_a_bad_limit_value_is_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "pkg.zip"
    with zipfile.ZipFile(package, "w") as archive:
        archive.writestr("r/lib/onnxruntime.dll", ELF_HEAD)
    monkeypatch.setenv("ORTGPU_MAX_EXTRACT", "lots")
    with pytest.raises(Exception, match="ORTGPU_MAX_EXTRACT") as caught, open_package(package):
        pass
    assert getattr(caught.value, "exit_code", None) == 2


def test_a_fifo_package_is_refused_instead_of_blocking(tmp_path: Path, capsys) -> None:
    fifo = tmp_path / "pkg.tgz"
    __import__("os").mkfifo(fifo)
    code, err = doctor(capsys, fifo)
    assert code == 2, err
    assert "not a regular file" in err
