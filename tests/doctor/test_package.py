"""`doctor --package`: what an ORT package is and needs, and which needs this machine meets (real and built ones)."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest
from tests.support.realpackages import (
    LINUX_WHEEL,
    WINDOWS_WHEEL,
    build_release_folder,
    build_stubs,
    build_windows_wheel,
    have_gcc,
    real_wheel,
    tar_folder,
    zip_folder,
)

from ortgpu.binfmt.binary import read_elf
from ortgpu.cli.main import main
from ortgpu.doctor.package import PackageReport, diagnose_package
from ortgpu.doctor.verdict import Status
from ortgpu.errors import ExitCode
from ortgpu.host.nvml import DriverInfo
from ortgpu.loader.linux import LoaderEnv, is_system_library
from ortgpu.package.analysis import (
    Component,
    LibraryRole,
    NeedKind,
    PackageFlavour,
    PackagePlatform,
    RequirementKind,
    classify_library,
    host_platform,
)
from ortgpu.package.archive import PackageError, PackageKind
from ortgpu.results import envelope

needs_gcc = pytest.mark.skipif(not have_gcc(), reason="needs gcc to build shared libraries")
HOST = host_platform()
linux_host = pytest.mark.skipif(
    HOST not in (PackagePlatform.LINUX_X86_64, PackagePlatform.LINUX_AARCH64), reason="needs a Linux host"
)

DRIVER_13 = DriverInfo(present=True, version="580.95.05", cuda_driver_version="13.0", gpus=(), error=None)
NO_DRIVER = DriverInfo(present=False, version=None, cuda_driver_version=None, gpus=(), error="NVML not found")


def isolated_env(*dirs: Path, pip: tuple[Path, ...] = ()) -> LoaderEnv:
    """A loader that sees only `dirs` plus this system's C/C++ runtime: results do not depend on what CUDA is here."""
    real = LoaderEnv.from_system()
    system = {name: paths for name, paths in real.cache.items() if is_system_library(name)}
    return LoaderEnv(
        machine=real.machine,
        ld_library_path=tuple(str(d) for d in dirs),
        cache=system,
        default_dirs=(),
        pip_dirs=pip,
    )


def stub_every_need(report: PackageReport, folder: Path, leave_out: set[str] = frozenset()) -> Path:
    """Provide every library the package needs (lazy ones included), except `leave_out`."""
    names = {
        need.name
        for lib in report.analysis.libraries
        for need in lib.needs
        if not need.in_package and not is_system_library(need.name) and need.name not in leave_out
    }
    build_stubs(folder, names)
    return folder


def host_check(report: PackageReport, check_id: str):
    return next(c for c in report.checks if c.id == check_id)


# --- small packages built here -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not have_gcc():
        pytest.skip("needs gcc to build shared libraries")
    return build_release_folder(
        tmp_path_factory.mktemp("release"), trt_needs=("libnvinfer.so.10", "libnvonnxparser.so.10", "libcudart.so.12")
    )


@needs_gcc
def test_release_folder_is_read_from_its_files(release: Path) -> None:
    report = diagnose_package(release, loader_env=isolated_env(), driver=NO_DRIVER)
    analysis = report.analysis
    assert analysis.kind is PackageKind.FOLDER
    assert analysis.version == "1.20.1" and analysis.git_commit == "1f2e3d4c5b6a"
    assert "VERSION_NUMBER: 1.20.1" in analysis.version_evidence
    assert analysis.platform is HOST
    assert analysis.flavour is PackageFlavour.GPU and analysis.providers == ("cuda", "tensorrt")
    assert (analysis.cuda_major, analysis.cudnn_major, analysis.tensorrt_major) == (12, 9, 10)
    cudnn = analysis.requirement(RequirementKind.CUDNN)
    assert cudnn is not None and not cudnn.from_matrix and "libcudnn.so.9" in cudnn.evidence
    assert analysis.requirement(RequirementKind.TENSORRT).optional
    cuda = analysis.library(LibraryRole.CUDA)
    assert cuda is not None and cuda.member == "lib/libonnxruntime_providers_cuda.so"
    by_name = {n.name: n for n in cuda.needs}
    assert by_name["libcublasLt.so.12"].component is Component.CUBLAS
    assert by_name["libcublasLt.so.12"].major == 12 and by_name["libcublasLt.so.12"].kind is NeedKind.LOAD_TIME
    assert by_name["libonnxruntime_providers_shared.so"].in_package
    floors = [read_elf(p).glibc_floor for p in (release / "lib").glob("libonnxruntime*.so*") if not p.is_symlink()]
    assert analysis.glibc_floor == max((f for f in floors if f), key=lambda v: tuple(map(int, v.split("."))))


@needs_gcc
def test_lazily_loaded_cudnn_comes_from_the_matrix(tmp_path: Path) -> None:
    from ortgpu.knowledge import matrix

    release = build_release_folder(tmp_path, version="1.31.1", cuda_needs=("libcublasLt.so.13", "libcudart.so.13"))
    analysis = diagnose_package(release, loader_env=isolated_env(), driver=NO_DRIVER).analysis
    row = matrix.requirements_for("1.31.1", 13)
    assert row is not None and row.cudnn_major is not None
    cudnn = analysis.requirement(RequirementKind.CUDNN)
    assert analysis.cudnn_major == row.cudnn_major and cudnn.from_matrix
    assert "opens it at run time" in cudnn.evidence
    lazy = {n.name for n in analysis.library(LibraryRole.CUDA).needs if n.kind is NeedKind.LAZY}
    assert lazy == {name for name in row.lazy_libraries if name not in ("libcublasLt.so.13", "libcudart.so.13")}


@needs_gcc
def test_without_a_matrix_row_cudnn_is_unknown(tmp_path: Path) -> None:
    release = build_release_folder(tmp_path, version="1.2.0", cuda_needs=("libcublasLt.so.12", "libcudart.so.12"))
    analysis = diagnose_package(release, loader_env=isolated_env(), driver=NO_DRIVER).analysis
    cudnn = analysis.requirement(RequirementKind.CUDNN)
    assert analysis.cudnn_major is None and cudnn.value == "unknown"
    assert "no version-matrix row for ORT 1.2.0" in cudnn.evidence
    assert analysis.cuda_major == 12


@needs_gcc
@pytest.mark.parametrize("packer", [tar_folder, zip_folder])
def test_archives_of_the_folder_give_the_same_analysis(release: Path, tmp_path: Path, packer) -> None:
    archive = packer(release, tmp_path / ("release.tgz" if packer is tar_folder else "release.zip"))
    folder = diagnose_package(release, loader_env=isolated_env(), driver=NO_DRIVER).analysis
    packed = diagnose_package(archive, loader_env=isolated_env(), driver=NO_DRIVER).analysis
    assert packed.kind is not PackageKind.FOLDER
    assert dataclasses.replace(packed, source=folder.source, kind=folder.kind, libraries=()) == dataclasses.replace(
        folder, libraries=()
    )
    assert [(lib.name, lib.needs) for lib in packed.libraries] == [(lib.name, lib.needs) for lib in folder.libraries]


@needs_gcc
@linux_host
def test_ready_when_every_need_is_met(release: Path, tmp_path: Path) -> None:
    first = diagnose_package(release, loader_env=isolated_env(), driver=DRIVER_13)
    libs = stub_every_need(first, tmp_path / "libs")
    report = diagnose_package(release, loader_env=isolated_env(libs), driver=DRIVER_13)
    assert report.ready is True, report.verdict
    assert report.exit_code == ExitCode.OK
    assert report.verdict.startswith("ready: onnxruntime 1.20.1")
    found = host_check(report, "host.lib.libcublasLt.so.12")
    assert found.status is Status.OK and str(libs) in found.evidence


@needs_gcc
@linux_host
def test_one_missing_cuda_library_is_the_root_cause(release: Path, tmp_path: Path) -> None:
    first = diagnose_package(release, loader_env=isolated_env(), driver=DRIVER_13)
    libs = stub_every_need(first, tmp_path / "libs", leave_out={"libcublasLt.so.12"})
    report = diagnose_package(release, loader_env=isolated_env(libs), driver=DRIVER_13)
    failed = [c for c in report.checks if c.status is Status.FAIL]
    assert [c.id for c in failed] == ["host.lib.libcublasLt.so.12"]
    assert report.ready is False and report.exit_code == ExitCode.ENVIRONMENT
    assert "libcublasLt.so.12 (cuBLAS) not found" in report.verdict
    assert "nvidia-cublas-cu12" in (report.fix or "")


@needs_gcc
@linux_host
def test_wrong_major_is_named(release: Path, tmp_path: Path) -> None:
    first = diagnose_package(release, loader_env=isolated_env(), driver=DRIVER_13)
    libs = stub_every_need(first, tmp_path / "libs", leave_out={"libcudnn.so.9"})
    build_stubs(libs, ["libcudnn.so.8"])
    report = diagnose_package(release, loader_env=isolated_env(libs), driver=DRIVER_13)
    check = host_check(report, "host.lib.libcudnn.so.9")
    assert check.status is Status.FAIL
    assert "libcudnn.so.8" in check.evidence and "nvidia-cudnn-cu12==9.*" in (check.fix or "")


@needs_gcc
@linux_host
def test_missing_tensorrt_is_only_a_warning(release: Path, tmp_path: Path) -> None:
    first = diagnose_package(release, loader_env=isolated_env(), driver=DRIVER_13)
    libs = stub_every_need(first, tmp_path / "libs", leave_out={"libnvinfer.so.10"})
    report = diagnose_package(release, loader_env=isolated_env(libs), driver=DRIVER_13)
    check = host_check(report, "host.lib.libnvinfer.so.10")
    assert check.status is Status.WARN and "TensorRT" in check.evidence
    assert report.ready is True


@needs_gcc
@linux_host
@pytest.mark.parametrize(
    ("version", "status", "advice"),
    [("1.20.1", Status.FAIL, "does not preload"), ("1.22.0", Status.WARN, "onnxruntime.preload_dlls()")],
)
def test_library_only_in_a_pip_package(tmp_path: Path, version: str, status: Status, advice: str) -> None:
    release = build_release_folder(tmp_path / "pkg", version=version)
    first = diagnose_package(release, loader_env=isolated_env(), driver=DRIVER_13)
    libs = stub_every_need(first, tmp_path / "libs", leave_out={"libcudnn.so.9"})
    pip = tmp_path / "site-packages" / "nvidia" / "cudnn" / "lib"
    build_stubs(pip, ["libcudnn.so.9"])
    report = diagnose_package(release, loader_env=isolated_env(libs, pip=(pip,)), driver=DRIVER_13)
    check = host_check(report, "host.lib.libcudnn.so.9")
    assert check.status is status
    assert advice in (check.fix or "") and str(pip) in (check.fix or "")


@needs_gcc
@linux_host
def test_no_driver_is_the_root_cause_before_libraries(release: Path) -> None:
    report = diagnose_package(release, loader_env=isolated_env(), driver=NO_DRIVER)
    assert report.ready is False
    assert report.verdict.startswith("not ready: no NVIDIA driver")
    assert host_check(report, "host.driver").status is Status.FAIL
    assert host_check(report, "host.lib.libcudart.so.12").status is Status.FAIL


@needs_gcc
@linux_host
def test_driver_too_old_for_the_cuda_major(release: Path, tmp_path: Path) -> None:
    old = DriverInfo(present=True, version="520.61.05", cuda_driver_version="11.8", gpus=(), error=None)
    first = diagnose_package(release, loader_env=isolated_env(), driver=old)
    libs = stub_every_need(first, tmp_path / "libs")
    report = diagnose_package(release, loader_env=isolated_env(libs), driver=old)
    check = host_check(report, "host.driver")
    assert check.status is Status.FAIL and "CUDA 11.8" in (check.cause or "")
    assert report.ready is False


@needs_gcc
@linux_host
def test_old_glibc_fails(release: Path) -> None:
    from ortgpu.binfmt.binary import read_binary
    from ortgpu.doctor.package_host import linux_host_checks
    from ortgpu.host.platform_probe import probe_platform
    from ortgpu.package.analysis import analyse_package
    from ortgpu.package.archive import open_package

    with open_package(release) as opened:
        analysis = analyse_package(opened)
        binaries = {lib.member: read_binary(opened.files[lib.member]) for lib in analysis.libraries}
        here = dataclasses.replace(probe_platform(), glibc_version="2.0")  # older than any x86_64/aarch64 floor
        checks = linux_host_checks(analysis, binaries, set(), env=isolated_env(), here=here, driver=DRIVER_13)
    glibc = next(c for c in checks if c.id == "host.glibc")
    assert glibc.status is Status.FAIL and f">= {analysis.glibc_floor}" in glibc.evidence


@needs_gcc
@linux_host
def test_cpu_release_needs_no_gpu(tmp_path: Path) -> None:
    release = build_release_folder(tmp_path, cuda_needs=None)
    report = diagnose_package(release, loader_env=isolated_env(), driver=NO_DRIVER)
    assert report.analysis.flavour is PackageFlavour.CPU and report.analysis.cuda_major is None
    assert report.analysis.requirement(RequirementKind.CUDA) is None
    assert not any(c.id == "host.driver" for c in report.checks)
    assert report.ready is True and "no CUDA provider" in report.verdict


@needs_gcc
def test_package_for_another_platform_is_analysed_statically(release: Path) -> None:
    other = PackagePlatform.WIN_X64 if HOST is not PackagePlatform.WIN_X64 else PackagePlatform.LINUX_X86_64
    report = diagnose_package(release, host=other)
    assert report.ready is None and report.exit_code == ExitCode.OK
    assert host_check(report, "host.match").status is Status.SKIP
    assert "analysed statically" in report.verdict


def test_corrupt_ort_library_is_bad_input(tmp_path: Path) -> None:
    folder = tmp_path / "release" / "lib"
    folder.mkdir(parents=True)
    (folder / "libonnxruntime_providers_cuda.so").write_text("not a library\n", encoding="utf-8")
    with pytest.raises(PackageError, match="not a readable ELF or PE library") as err:
        diagnose_package(tmp_path / "release")
    assert err.value.exit_code is ExitCode.BAD_INPUT


# --- Windows packages, built byte by byte --------------------------------------------------------------------------


def test_windows_wheel_needs_read_from_imports(tmp_path: Path) -> None:
    wheel = build_windows_wheel(tmp_path, version="1.19.2", delay_imports=("nvcuda.dll",))
    report = diagnose_package(wheel, host=PackagePlatform.LINUX_X86_64)
    analysis = report.analysis
    assert analysis.platform is PackagePlatform.WIN_X64 and "win_amd64" in analysis.platform_evidence
    assert (analysis.cuda_major, analysis.cudnn_major) == (12, 9)
    assert analysis.vc_runtime == "14.40"
    assert "VCRUNTIME140_1.dll" in analysis.requirement(RequirementKind.VC_RUNTIME).evidence
    assert analysis.glibc_floor is None
    cuda = analysis.library(LibraryRole.CUDA)
    kinds = {n.name: (n.kind, n.component) for n in cuda.needs}
    assert kinds["nvcuda.dll"] == (NeedKind.DELAY_LOAD, Component.CUDA_DRIVER)
    assert kinds["cudart64_12.dll"] == (NeedKind.LOAD_TIME, Component.CUDA_RUNTIME)
    assert kinds["MSVCP140.dll"][1] is Component.VC_RUNTIME
    assert next(n for n in cuda.needs if n.name == "onnxruntime_providers_shared.dll").in_package
    assert analysis.library(LibraryRole.PYTHON_BINDING).needs[0].component is Component.PYTHON
    assert report.ready is None and report.exit_code == ExitCode.OK
    assert "analysed statically" in report.verdict and "CUDA 12" in report.verdict


def test_windows_arm64_and_older_toolset(tmp_path: Path) -> None:
    wheel = build_windows_wheel(
        tmp_path,
        version="1.18.0",
        machine="arm64",
        cuda_imports=("cublasLt64_11.dll", "cudart64_110.dll", "cudnn64_8.dll"),
        linker=(14, 37),
    )
    analysis = diagnose_package(wheel, host=PackagePlatform.LINUX_X86_64).analysis
    assert analysis.platform is PackagePlatform.WIN_ARM64
    assert (analysis.cuda_major, analysis.cudnn_major, analysis.vc_runtime) == (11, 8, "14.37")
    assert {lib.machine for lib in analysis.libraries} == {"arm64"}


@pytest.mark.skipif(HOST in (PackagePlatform.WIN_X64, PackagePlatform.WIN_ARM64), reason="this is a Windows host")
def test_windows_host_named_without_windows_facts_stays_static(tmp_path: Path) -> None:
    # tests/doctor/test_windows_package.py resolves Windows packages against simulated Windows hosts
    wheel = build_windows_wheel(tmp_path)
    report = diagnose_package(wheel, host=PackagePlatform.WIN_X64)
    assert report.ready is None
    assert "no Windows machine to resolve the DLL imports against" in host_check(report, "host.match").evidence


@pytest.mark.parametrize(
    ("name", "component"),
    [
        ("libonnxruntime_providers_shared.so", Component.ORT),
        ("libcuda.so.1", Component.CUDA_DRIVER),
        ("cudart64_110.dll", Component.CUDA_RUNTIME),
        ("libcublasLt.so.13", Component.CUBLAS),
        ("cufft64_11.dll", Component.CUFFT),
        ("libcurand.so.10", Component.CURAND),
        ("libnvrtc.so.13", Component.NVRTC),
        ("cudnn_ops64_9.dll", Component.CUDNN),
        ("nvinfer_10.dll", Component.TENSORRT),
        ("VCRUNTIME140_1.dll", Component.VC_RUNTIME),
        ("libstdc++.so.6", Component.C_RUNTIME),
        ("KERNEL32.dll", Component.OS),
        ("python311.dll", Component.PYTHON),
        ("libgomp-a34b3233.so.1", Component.OTHER),
    ],
)
def test_every_component_is_recognised(name: str, component: Component) -> None:
    assert classify_library(name) is component


def test_component_table_covers_every_member() -> None:
    named = {
        classify_library(n)
        for n in [
            "onnxruntime.dll",
            "libcuda.so.1",
            "libcudart.so.12",
            "cublas64_12.dll",
            "libcufft.so.11",
            "curand64_10.dll",
            "nvrtc64_120_0.dll",
            "libcudnn.so.9",
            "libnvonnxparser.so.10",
            "msvcp140.dll",
            "ld-linux-x86-64.so.2",
            "api-ms-win-core-path-l1-1-0.dll",
            "python3.dll",
            "libfoo.so.1",
        ]
    }
    assert named == set(Component)


@pytest.mark.parametrize(
    ("system", "machine", "expected"),
    [
        ("Linux", "x86_64", PackagePlatform.LINUX_X86_64),
        ("Linux", "aarch64", PackagePlatform.LINUX_AARCH64),
        ("Windows", "AMD64", PackagePlatform.WIN_X64),
        ("Windows", "ARM64", PackagePlatform.WIN_ARM64),
        ("Darwin", "arm64", None),
    ],
)
def test_host_platform(system: str, machine: str, expected: PackagePlatform | None) -> None:
    assert host_platform(system, machine) is expected


# --- CLI -------------------------------------------------------------------------------------------------------------


def test_cli_json_for_a_windows_wheel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheel = build_windows_wheel(tmp_path)
    code = main(["doctor", "--package", str(wheel), "--json"])
    doc = json.loads(capsys.readouterr().out)
    result = doc["result"]
    if HOST is PackagePlatform.WIN_X64:
        pytest.skip("on Windows the package matches the host")
    assert code == 0
    assert doc["schema"].startswith("ortgpu.doctor.package/")
    assert result["ready"] is None
    assert result["analysis"]["platform"] == "win x64"
    assert result["analysis"]["cuda_major"] == 12
    assert {r["kind"] for r in result["analysis"]["requirements"]} >= {"CUDA", "cuDNN", "VC++ runtime"}


def test_cli_table_names_the_libraries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rich.console import Console

    from ortgpu.cli.doctor_package import render_package

    wheel = build_windows_wheel(tmp_path)
    report = diagnose_package(wheel, host=PackagePlatform.LINUX_X86_64)
    out = io.StringIO()
    render_package(report, Console(file=out, width=200))
    text = out.getvalue()
    assert report.verdict.split(";")[0] in text
    assert "cudnn64_9.dll" in text and "VC++ runtime" in text and ">= 14.40" in text


@needs_gcc
@linux_host
def test_cli_exit_code_follows_the_verdict(release: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", "--package", str(release)])
    out = capsys.readouterr().out
    report = diagnose_package(release)
    assert code == report.exit_code
    assert report.verdict.split(";")[0] in " ".join(out.split())


# --- real wheels from PyPI (cached) --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def linux_wheel_report(tmp_path_factory: pytest.TempPathFactory) -> PackageReport:
    wheel = real_wheel(*LINUX_WHEEL)
    return diagnose_package(wheel, loader_env=isolated_env(tmp_path_factory.mktemp("empty")), driver=NO_DRIVER)


@pytest.fixture(scope="module")
def windows_wheel_report() -> PackageReport:
    return diagnose_package(real_wheel(*WINDOWS_WHEEL), host=PackagePlatform.LINUX_X86_64)


@pytest.mark.network
def test_real_linux_wheel_1_16_3(linux_wheel_report: PackageReport) -> None:
    analysis = linux_wheel_report.analysis
    assert (analysis.distribution, analysis.version) == ("onnxruntime-gpu", "1.16.3")
    assert analysis.platform is PackagePlatform.LINUX_X86_64 and analysis.flavour is PackageFlavour.GPU
    assert (analysis.cuda_major, analysis.cudnn_major, analysis.tensorrt_major) == (11, 8, 8)
    assert analysis.glibc_floor == "2.17"  # manylinux2014 tag; the binaries ask for GLIBC_2.16 at most
    assert not analysis.requirement(RequirementKind.CUDNN).from_matrix
    cuda = {n.name for n in analysis.library(LibraryRole.CUDA).needs}
    assert {"libcublasLt.so.11", "libcublas.so.11", "libcudnn.so.8", "libcudart.so.11.0", "libcufft.so.10"} <= cuda
    trt = {n.name for n in analysis.library(LibraryRole.TENSORRT).needs}
    assert {"libnvinfer.so.8", "libnvonnxparser.so.8"} <= trt


@pytest.mark.network
@linux_host
def test_real_linux_wheel_on_a_machine_without_cuda(linux_wheel_report: PackageReport) -> None:
    if linux_wheel_report.analysis.platform is not HOST:
        pytest.skip("the wheel is for x86_64")
    report = linux_wheel_report
    assert report.ready is False and report.exit_code == ExitCode.ENVIRONMENT
    assert report.verdict.startswith("not ready: no NVIDIA driver")
    failed = {c.id for c in report.checks if c.status is Status.FAIL}
    assert {"host.lib.libcublasLt.so.11", "host.lib.libcudnn.so.8", "host.lib.libcudart.so.11.0"} <= failed
    assert host_check(report, "host.lib.libnvinfer.so.8").status is Status.WARN
    assert host_check(report, "host.glibc").status is Status.OK


@pytest.mark.network
def test_real_windows_wheel_1_18_0(windows_wheel_report: PackageReport) -> None:
    analysis = windows_wheel_report.analysis
    assert (analysis.distribution, analysis.version) == ("onnxruntime-gpu", "1.18.0")
    assert analysis.platform is PackagePlatform.WIN_X64
    assert (analysis.cuda_major, analysis.cudnn_major, analysis.tensorrt_major) == (11, 8, 10)
    assert analysis.vc_runtime == "14.37"
    cuda = [n.name for n in analysis.library(LibraryRole.CUDA).needs]
    assert {"cublasLt64_11.dll", "cudnn64_8.dll", "cudart64_110.dll", "cufft64_10.dll"} <= set(cuda)
    assert windows_wheel_report.ready is None and windows_wheel_report.exit_code == ExitCode.OK
    json.dumps(envelope("doctor.package", windows_wheel_report))  # serialisable as is
