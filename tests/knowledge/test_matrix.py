"""The version matrix: every row is self-consistent, lookups pick the right flavour, library names parse."""

from __future__ import annotations

import dataclasses
import json
import zipfile
from importlib import resources
from pathlib import Path

import pytest

from ortgpu.gpu_arch import ArchSupport
from ortgpu.knowledge import matrix
from ortgpu.knowledge.matrix import (
    BuildFlavour,
    LibraryFamily,
    Platform,
    arch_support,
    cuda_major_from_libraries,
    cudnn_major_from_libraries,
    known_sm_archs,
    library_info,
    max_cuda_for_driver,
    min_driver_for_cuda,
    minor_compat_floor,
    requirements_for,
    tensorrt_major_from_libraries,
)

ROWS = matrix.all_builds()


def _raw_rows() -> list[dict]:
    text = resources.files("ortgpu").joinpath("data/ort_matrix.json").read_text(encoding="utf-8")
    return json.loads(text)["builds"]


def test_contract_fields_exist() -> None:
    names = {f.name for f in dataclasses.fields(matrix.OrtBuildRequirements)}
    for name in (
        "ort_version",
        "cuda_major",
        "cuda_build",
        "cudnn_major",
        "tensorrt_major",
        "min_driver_linux",
        "min_driver_windows",
        "glibc_floor",
        "lazy_libraries",
        "confirmed",
        "sources",
        "notes",
    ):
        assert name in names


def test_every_minor_from_1_14_to_the_newest_has_a_default_row() -> None:
    newest = int(matrix.newest_known_version().split(".")[1])
    assert newest >= 32
    for minor in range(14, newest + 1):
        build = requirements_for(f"1.{minor}.0")
        assert build is not None, f"1.{minor}"
        assert build.flavour is BuildFlavour.DEFAULT
        assert not build.extrapolated


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r.ort_version}-{r.flavour.value}")
def test_row_libraries_agree_with_its_majors(row: matrix.OrtBuildRequirements) -> None:
    assert row.sources, "every row names its sources"
    assert row.channel
    linux = row.all_libraries_linux
    windows = row.all_libraries_windows
    assert cuda_major_from_libraries(linux) == row.cuda_major
    assert cudnn_major_from_libraries(linux) == row.cudnn_major
    assert cudnn_major_from_libraries(windows) == row.cudnn_major
    # CUDA 13 Windows builds link the runtime statically; cuBLAS still pins the major
    assert cuda_major_from_libraries(windows) == row.cuda_major
    assert tensorrt_major_from_libraries(row.tensorrt_libraries_linux) == row.tensorrt_major
    assert tensorrt_major_from_libraries(row.tensorrt_libraries_windows) == row.tensorrt_major
    for name in linux + row.tensorrt_libraries_linux:
        info = library_info(name)
        assert info is not None and info.platform is Platform.LINUX, name
    for name in windows + row.tensorrt_libraries_windows:
        info = library_info(name)
        assert info is not None and info.platform is Platform.WINDOWS, name
    assert not set(row.lazy_libraries) & set(row.needed_libraries_linux), "a library is linked or lazy, not both"
    assert row.min_driver_linux == minor_compat_floor(row.cuda_major)


@pytest.mark.parametrize("raw", _raw_rows(), ids=lambda r: f"{r['ort']}-{r['flavour']}")
def test_rows_read_from_a_wheel_carry_its_gpu_architectures(raw: dict) -> None:
    wheels = [s for s in raw["sources"] if s.startswith("wheel ") and "manylinux" in s]
    if not wheels:
        assert raw["notes"], "a row not read from a wheel says where its data comes from"
        return
    archs = raw["sm_archs"]["linux"]
    assert archs["confirmed"] and archs["sass"]
    assert archs["source"].endswith(wheels[0].split()[1])


@pytest.mark.parametrize(
    ("version", "cuda", "cudnn", "trt"),
    [
        # the four real builds the issue names
        ("1.16.3", 11, 8, 8),
        ("1.18.0", 11, 8, 10),
        ("1.19.2", 12, 9, 10),
        ("1.31.1", 13, 9, 10),
    ],
)
def test_default_builds_of_the_issue(version: str, cuda: int, cudnn: int, trt: int) -> None:
    build = requirements_for(version)
    assert build is not None
    assert (build.cuda_major, build.cudnn_major, build.tensorrt_major) == (cuda, cudnn, trt)
    assert build.confirmed


def test_patch_rows_win_over_the_minor_row() -> None:
    alt_0 = requirements_for("1.18.0", cuda_major=12)
    alt_1 = requirements_for("1.18.1", cuda_major=12)
    assert alt_0 is not None and alt_1 is not None
    assert (alt_0.cudnn_major, alt_1.cudnn_major) == (8, 9)
    assert alt_1.flavour is BuildFlavour.ALT


def test_flavour_by_cuda_major() -> None:
    assert requirements_for("1.19.2", cuda_major=11).cudnn_major == 8
    assert requirements_for("1.24.4", cuda_major=13).cuda_major == 13
    assert requirements_for("1.22.0", cuda_major=11) is None  # "only CUDA 12 GPU packages are released"
    assert requirements_for("1.16.3", cuda_major=12) is None


def test_unknown_old_and_garbage_versions() -> None:
    assert requirements_for("1.13.1") is None
    assert requirements_for("not a version") is None
    assert requirements_for("") is None


def test_dev_and_local_versions_use_their_minor() -> None:
    assert requirements_for("1.24.0.dev20260127002").cuda_build == "12.8"
    assert requirements_for("1.21.0+cu118") == requirements_for("1.21.1")


def test_newer_than_the_matrix_is_extrapolated_and_unconfirmed() -> None:
    build = requirements_for("1.99.0")
    newest = requirements_for(matrix.newest_known_version() + ".0")
    assert build is not None and newest is not None
    assert build.extrapolated and not build.confirmed
    assert build.cuda_major == newest.cuda_major
    assert "newer than this matrix" in build.notes


def test_lazy_libraries_follow_the_builds() -> None:
    # 1.14/1.15 wheels strip CUDA from DT_NEEDED and preload it from _ld_preload.py
    early = requirements_for("1.14.1")
    assert early.needed_libraries_linux == ()
    assert "libcublasLt.so.11" in early.lazy_libraries
    # 1.16-1.27 link CUDA and cuDNN; only the driver is opened at run time (by cudart)
    assert requirements_for("1.19.2").lazy_libraries == ("libcuda.so.1",)
    # 1.28+ open cuDNN, cuFFT and NVRTC on demand
    late = requirements_for("1.31.1")
    assert {"libcudnn.so.9", "libcufft.so.12", "libnvrtc.so.13"} <= set(late.lazy_libraries)
    assert "libcudnn.so.9" not in late.needed_libraries_linux
    assert "cudnn64_9.dll" in late.lazy_libraries_windows
    # cuDNN 9's sub-libraries are loaded by libcudnn itself
    assert "libcudnn_adv.so.9" in late.indirect_libraries_linux


def test_glibc_floor_from_the_wheel_tags() -> None:
    assert requirements_for("1.16.3").glibc_floor == "2.17"
    assert requirements_for("1.17.1").glibc_floor == "2.28"
    assert requirements_for("1.19.2").glibc_floor == "2.27"
    assert requirements_for("1.31.1").glibc_floor == "2.28"


def test_unconfirmed_rows_are_marked() -> None:
    unconfirmed = {(b.ort_version, b.flavour) for b in ROWS if not b.confirmed}
    assert ("1.32", BuildFlavour.DEFAULT) in unconfirmed
    assert ("1.21", BuildFlavour.ALT) in unconfirmed
    assert ("1.19", BuildFlavour.DEFAULT) not in unconfirmed


def test_builds_for_cuda() -> None:
    cuda11 = {(b.ort_version, b.flavour) for b in matrix.builds_for_cuda(11)}
    assert ("1.16", BuildFlavour.DEFAULT) in cuda11
    assert ("1.19", BuildFlavour.ALT) in cuda11
    assert all(b.cuda_major == 13 for b in matrix.builds_for_cuda(13))


@pytest.mark.parametrize(
    ("names", "major"),
    [
        (["libcublasLt.so.12"], 12),
        (["cublas64_11.dll"], 11),
        (["cudart64_110.dll"], 11),
        (["libcudart.so.11.0"], 11),
        (["libcufft.so.10"], 11),
        (["cufft64_12.dll"], 13),
        (["nvrtc64_120_0.dll"], 12),
        (["libnvrtc.so.13"], 13),
        (["libcurand.so.10"], None),  # the same name in CUDA 11, 12 and 13
        ([], None),
        (["libc.so.6", "libstdc++.so.6"], None),
        (["libcufft.so.11", "libcudart.so.12", "libcurand.so.10"], 12),
        ([r"C:\x\site-packages\nvidia\cublas\bin\cublasLt64_13.dll"], 13),
    ],
)
def test_cuda_major_from_libraries(names: list[str], major: int | None) -> None:
    assert cuda_major_from_libraries(names) == major


@pytest.mark.parametrize(
    ("names", "major"),
    [
        (["libcudnn.so.9"], 9),
        (["cudnn64_8.dll"], 8),
        (["cudnn_ops_infer64_8.dll"], 8),
        (["libcudnn_adv.so.9"], 9),
        (["libcublas.so.12"], None),
    ],
)
def test_cudnn_major_from_libraries(names: list[str], major: int | None) -> None:
    assert cudnn_major_from_libraries(names) == major


@pytest.mark.parametrize(
    ("names", "major"),
    [
        (["libnvinfer.so.10"], 10),
        (["nvinfer_10.dll"], 10),
        (["nvinfer.dll"], 8),
        (["libnvonnxparser.so.8"], 8),
        (["libcudnn.so.9"], None),
    ],
)
def test_tensorrt_major_from_libraries(names: list[str], major: int | None) -> None:
    assert tensorrt_major_from_libraries(names) == major


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("libcudart.so.12", LibraryFamily.CUDA),
        ("cudnn64_9.dll", LibraryFamily.CUDNN),
        ("libnvinfer_plugin.so.10", LibraryFamily.TENSORRT),
        ("libcuda.so.1", LibraryFamily.DRIVER),
        ("nvcuda.dll", LibraryFamily.DRIVER),
        ("vcruntime140_1.dll", LibraryFamily.MSVC),
        ("zlibwapi.dll", LibraryFamily.ZLIB),
        ("libonnxruntime_providers_cuda.so", LibraryFamily.ORT),
    ],
)
def test_library_info_covers_every_family(name: str, family: LibraryFamily) -> None:
    info = library_info(name)
    assert info is not None and info.family is family


def test_every_library_family_is_covered_above() -> None:
    covered = {
        library_info(n).family
        for n in (
            "libcudart.so.12",
            "cudnn64_9.dll",
            "libnvinfer.so.10",
            "libcuda.so.1",
            "msvcp140.dll",
            "zlibwapi.dll",
            "onnxruntime.dll",
        )
    }
    assert covered == set(LibraryFamily)


def test_library_info_describes_and_rejects() -> None:
    assert library_info("libcublasLt.so.11").describe() == "cuBLASLt from CUDA 11"
    assert library_info("libcudnn.so.9").describe() == "cuDNN 9"
    assert library_info("libfoo.so.3") is None
    assert library_info("/usr/lib/x86_64-linux-gnu/libcufft.so.11.2.1").major == 12


@pytest.mark.parametrize(
    ("driver", "platform", "cuda"),
    [
        ("580.95", Platform.LINUX, "13.0"),
        ("580.95.05", Platform.LINUX, "13.0"),
        ("525.60.13", Platform.LINUX, "12.0"),
        ("535.104.05", Platform.LINUX, "12.2"),
        ("570.86.10", Platform.LINUX, "12.8"),
        ("595.58.03", Platform.LINUX, "13.2"),
        ("450.80.02", Platform.LINUX, "11.0"),
        ("400.10", Platform.LINUX, None),
        ("not-a-version", Platform.LINUX, None),
        ("536.25", Platform.WINDOWS, "12.2"),
        ("581.15", Platform.WINDOWS, "13.0"),
        ("999.1", Platform.LINUX, "13.3"),  # newer than the table: at least the newest known
    ],
)
def test_max_cuda_for_driver(driver: str, platform: Platform, cuda: str | None) -> None:
    assert max_cuda_for_driver(driver, platform) == cuda


def test_min_driver_and_floors() -> None:
    assert min_driver_for_cuda("12.8") == "570.26"
    assert min_driver_for_cuda("12.8.1") == "570.124.06"
    assert min_driver_for_cuda("12.2", Platform.WINDOWS) == "536.25"
    assert min_driver_for_cuda("9.0") is None
    assert minor_compat_floor(12) == "525.60.13"
    assert minor_compat_floor(11, Platform.WINDOWS) == "452.39"
    assert minor_compat_floor(13, Platform.WINDOWS) is None  # NVIDIA publishes none
    assert minor_compat_floor(10) is None


@pytest.mark.parametrize(
    ("version", "platform", "cc", "support"),
    [
        ("1.24.4", Platform.LINUX, (9, 0), ArchSupport.NATIVE),  # sm_90a on an H100/H200
        ("1.24.4", Platform.LINUX, (8, 9), ArchSupport.NATIVE),  # sm_86 runs on 8.9
        ("1.19.2", Platform.LINUX, (9, 0), ArchSupport.PTX_JIT),  # only compute_80 PTX for Hopper
        ("1.23.2", Platform.LINUX, (12, 0), ArchSupport.PTX_JIT),  # Blackwell via compute_90
        ("1.27.0", Platform.LINUX, (10, 0), ArchSupport.NATIVE),  # sm_100a
        ("1.31.1", Platform.LINUX, (10, 0), ArchSupport.NONE),  # 1.29+ dropped sm_100 and PTX
        ("1.31.1", Platform.LINUX, (12, 0), ArchSupport.NATIVE),
        ("1.31.1", Platform.LINUX, (12, 1), ArchSupport.NONE),  # sm_120a is arch-specific
        ("1.31.1", Platform.WINDOWS, (12, 1), ArchSupport.PTX_JIT),  # the Windows build keeps compute_120
        ("1.27.0", Platform.LINUX, (6, 1), ArchSupport.NONE),  # CUDA 13 dropped Pascal
        ("1.18.0", Platform.LINUX, (6, 1), ArchSupport.NATIVE),
    ],
)
def test_arch_support(version: str, platform: Platform, cc: tuple[int, int], support: ArchSupport) -> None:
    archs = known_sm_archs(version, platform=platform)
    assert archs is not None and archs.confirmed
    assert arch_support(archs, cc) is support


def test_known_sm_archs_absent_for_unread_flavours() -> None:
    assert known_sm_archs("1.17.1", cuda_major=12) is None
    assert known_sm_archs("1.13.0") is None
    extrapolated = known_sm_archs("1.99.0")
    assert extrapolated is None or not extrapolated.confirmed


_WHEEL_CACHE = Path.home() / ".cache" / "ortgpu-tests" / "wheels"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("wheel", "version"),
    [
        ("onnxruntime_gpu-1.16.3-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", "1.16.3"),
        ("onnxruntime_gpu-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl", "1.31.1"),
    ],
)
def test_matrix_matches_a_real_wheel(tmp_path: Path, wheel: str, version: str) -> None:
    """Cross-check with a wheel the package tests already downloaded (skipped when it is not cached here)."""
    from ortgpu.binfmt.binary import read_elf

    path = _WHEEL_CACHE / wheel
    if not path.is_file():
        pytest.skip(f"{wheel} not in the local wheel cache")
    with zipfile.ZipFile(path) as zf:
        member = "onnxruntime/capi/libonnxruntime_providers_cuda.so"
        zf.extract(member, tmp_path)
    needed = read_elf(tmp_path / member).needed
    build = requirements_for(version)
    cuda_side = [n for n in needed if library_info(n) and library_info(n).family is not LibraryFamily.ORT]
    assert set(cuda_side) == set(build.needed_libraries_linux)
