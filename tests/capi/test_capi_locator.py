"""From what the user gives (file, folder, archive, wheel) to the libonnxruntime of this machine's platform."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from tests.support.realpackages import build_pe, tar_with

from ortgpu.capi.library_locator import (
    AmbiguousLibraryError,
    LibraryNotFoundError,
    LibraryPlatformError,
    SourceKind,
    host_platform,
    is_core_library,
    locate_library,
)
from ortgpu.errors import ExitCode
from ortgpu.package.archive import PackageError, UnsafeArchiveError

pytestmark = pytest.mark.skipif(host_platform() != "linux-x64", reason="the real libraries here are linux-x64")


@pytest.mark.parametrize(
    ("name", "core"),
    [
        ("libonnxruntime.so", True),
        ("libonnxruntime.so.1", True),
        ("libonnxruntime.so.1.31.1", True),
        ("onnxruntime.dll", True),
        ("libonnxruntime.1.14.0.dylib", True),
        ("libonnxruntime_providers_cuda.so", False),
        ("onnxruntime_pybind11_state.cpython-311-x86_64-linux-gnu.so", False),
        ("onnxruntime_providers_shared.dll", False),
    ],
)
def test_core_library_names(name: str, core: bool) -> None:
    assert is_core_library(name) is core


def test_the_library_file_itself(wheel_library: Path) -> None:
    with locate_library(wheel_library) as located:
        assert located.kind is SourceKind.FILE and located.path == wheel_library.absolute()
        assert located.platform == "linux-x64" and located.version == wheel_library.name.split(".so.")[1]


def test_a_wheel_folder_is_searched(wheel_library: Path) -> None:
    package = wheel_library.parent.parent  # site-packages/onnxruntime: the library sits in capi/
    with locate_library(package) as located:
        assert located.kind is SourceKind.FOLDER and located.member == f"capi/{wheel_library.name}"


@pytest.mark.network
def test_npm_archive_picks_this_platform_among_five(ort114_tgz: Path) -> None:
    with locate_library(ort114_tgz) as located:
        assert located.kind is SourceKind.ARCHIVE
        assert located.member == "package/bin/napi-v3/linux/x64/libonnxruntime.so.1.14.0"
        assert located.version == "1.14.0" and located.path.is_file()
    assert not located.path.exists()  # the extraction folder is gone after the block


@pytest.mark.network
@pytest.mark.parametrize(
    ("member", "said"),
    [
        ("package/bin/napi-v3/linux/arm64/libonnxruntime.so.1.14.0", "Linux arm64 library"),
        ("package/bin/napi-v3/win32/x64/onnxruntime.dll", "Windows x64 library"),
    ],
)
def test_wrong_architecture_or_platform_is_bad_input(ort114_tgz: Path, tmp_path: Path, member: str, said: str) -> None:
    with tarfile.open(ort114_tgz) as archive:
        data = archive.extractfile(member).read()
    path = tmp_path / Path(member).name
    path.write_bytes(data)
    with pytest.raises(LibraryPlatformError) as caught, locate_library(path):
        pass
    assert caught.value.exit_code is ExitCode.BAD_INPUT
    assert said in caught.value.message and "this machine is Linux x64" in caught.value.message


def test_a_folder_with_only_other_platforms_says_what_it_holds(tmp_path: Path) -> None:
    (tmp_path / "win").mkdir()
    (tmp_path / "win" / "onnxruntime.dll").write_bytes(build_pe(["KERNEL32.dll"]))
    with pytest.raises(LibraryPlatformError) as caught, locate_library(tmp_path):
        pass
    assert "win/onnxruntime.dll (Windows x64)" in caught.value.message


def test_a_folder_without_libonnxruntime_is_bad_input(tmp_path: Path, wheel_library: Path) -> None:
    (tmp_path / "README.md").write_text("no library here\n")
    with pytest.raises(PackageError) as caught, locate_library(tmp_path):
        pass
    assert caught.value.exit_code is ExitCode.BAD_INPUT
    # providers only: ORT files, but no core library
    only_providers = tmp_path / "providers"
    only_providers.mkdir()
    shared = wheel_library.parent / "libonnxruntime_providers_shared.so"
    (only_providers / shared.name).write_bytes(shared.read_bytes())
    with pytest.raises(LibraryNotFoundError) as missing, locate_library(only_providers):
        pass
    assert "no libonnxruntime.so* or onnxruntime.dll" in missing.value.message
    with pytest.raises(LibraryNotFoundError) as provider, locate_library(only_providers / shared.name):
        pass
    assert "core library" in (provider.value.hint or "")


def test_an_archive_with_path_traversal_is_refused_before_extraction(tmp_path: Path, wheel_library: Path) -> None:
    archive = tar_with(
        tmp_path / "evil.tgz",
        [("lib/libonnxruntime.so.1.32.0", wheel_library.read_bytes()[:4096]), ("../../escaped.txt", b"gotcha")],
    )
    with pytest.raises(UnsafeArchiveError) as caught, locate_library(archive):
        pass
    assert caught.value.exit_code is ExitCode.BAD_INPUT and "outside" in caught.value.message
    assert not (tmp_path.parent / "escaped.txt").exists()


def test_two_different_libraries_are_ambiguous(tmp_path: Path, wheel_library: Path) -> None:
    data = wheel_library.read_bytes()
    for sub, tail in (("a", b""), ("b", b"\0")):  # a trailing byte: another file, still a valid ELF
        (tmp_path / sub).mkdir()
        (tmp_path / sub / wheel_library.name).write_bytes(data + tail)
    with pytest.raises(AmbiguousLibraryError) as caught, locate_library(tmp_path):
        pass
    assert caught.value.exit_code is ExitCode.BAD_INPUT
    assert "2 different ONNX Runtime libraries" in caught.value.message
    (tmp_path / "b" / wheel_library.name).write_bytes(data)  # the same bytes twice: one library
    with locate_library(tmp_path) as located:
        assert located.member == f"a/{wheel_library.name}"
