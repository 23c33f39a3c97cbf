"""`doctor --package` on simulated Windows hosts: the real wheels and a C/C++ release folder resolved against them."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from tests.support.realpackages import build_windows_wheel, real_wheel
from tests.support.winsim import (
    CUDNN_ROOT,
    SYSTEM32,
    extracted_wheel,
    install_cuda,
    install_cudnn,
    new_machine,
    ready_machine,
    release_folder,
)

from ortgpu.doctor.package import PackageReport, diagnose_package
from ortgpu.doctor.verdict import Status
from ortgpu.errors import ExitCode
from ortgpu.package.analysis import PackagePlatform


def check(report: PackageReport, check_id: str):
    return next(c for c in report.checks if c.id == check_id)


@pytest.mark.network
@pytest.mark.slow  # extracts the 0.6 GB provider DLL from the wheel
def test_real_wheel_on_a_ready_windows_host(tmp_path: Path) -> None:
    host, _ = ready_machine(tmp_path, "1.19.2")
    report = diagnose_package(real_wheel("1.19.2", "win_amd64"), windows=host)
    assert report.ready is True and report.exit_code == ExitCode.OK, report.verdict
    assert report.host == "win x64"
    assert report.verdict.startswith("ready: onnxruntime-gpu 1.19.2 (win x64, gpu) can load its CUDA EP")
    cudnn = check(report, "host.lib.cudnn64_9.dll")
    assert cudnn.status is Status.OK and cudnn.details["path"] == f"{CUDNN_ROOT}\\v9.4\\bin\\12.6\\cudnn64_9.dll"
    assert check(report, "host.vcruntime").status is Status.OK
    assert check(report, "host.python").status is Status.OK  # cp311 wheel, Python 3.11 host


@pytest.mark.network
def test_wheel_on_a_host_without_cudnn(tmp_path: Path) -> None:
    host = new_machine(tmp_path)
    install_cuda(host, "12.4")
    report = diagnose_package(extracted_wheel("1.19.2"), windows=host)
    assert report.ready is False and report.exit_code == ExitCode.ENVIRONMENT
    cudnn = check(report, "host.lib.cudnn64_9.dll")
    assert cudnn.status is Status.FAIL and cudnn.details["status"] == "missing"
    assert report.verdict.startswith("not ready: cudnn64_9.dll (cuDNN) missing")
    assert report.fix == cudnn.fix and "install cuDNN 9 for CUDA 12" in report.fix
    assert check(report, "host.lib.cudart64_12.dll").status is Status.OK
    assert check(report, "host.lib.cudnn_graph64_9.dll").details["lazy"] is True


@pytest.mark.network
def test_release_zip_folder_shadowed_by_system32_onnxruntime(tmp_path: Path) -> None:
    host, _ = ready_machine(tmp_path / "host", "1.19.2")
    host.dll(SYSTEM32, "onnxruntime.dll", imports=["kernel32.dll"], version="1.17.1.0")
    report = diagnose_package(release_folder(tmp_path), windows=host)
    shadow = check(report, "host.shadowing")
    assert shadow.status is Status.WARN
    assert "C:\\Windows\\System32\\onnxruntime.dll" in shadow.cause
    assert "The requested API version [19] is not available, only API versions [1, 17]" in shadow.cause
    assert "next to your .exe" in shadow.fix
    assert report.ready is True  # everything else is there: the warning says where to put the DLLs
    assert check(report, "host.lib.cudnn64_9.dll").status is Status.OK


@pytest.mark.network
def test_release_zip_folder_missing_cudnn_suggests_copying_next_to_the_exe(tmp_path: Path) -> None:
    host = new_machine(tmp_path / "host")
    install_cuda(host, "12.4")
    report = diagnose_package(release_folder(tmp_path), windows=host)
    assert report.ready is False
    cudnn = check(report, "host.lib.cudnn64_9.dll")
    assert "copy cudnn*.dll next to your .exe" in cudnn.fix
    assert "pip install" not in cudnn.fix  # a C/C++ app has no pip


@pytest.mark.network
def test_another_apps_onnxruntime_dll_earlier_on_path(tmp_path: Path) -> None:
    host, _ = ready_machine(tmp_path / "host", "1.19.2")
    host.dll("C:\\Program Files\\SomeApp", "onnxruntime.dll", imports=["kernel32.dll"], version="1.16.3.0")
    host.prepend_path("C:\\Program Files\\SomeApp")
    report = diagnose_package(release_folder(tmp_path), windows=host)
    shadow = check(report, "host.shadowing")
    assert "C:\\Program Files\\SomeApp\\onnxruntime.dll" in shadow.cause and "[1, 16]" in shadow.cause


def test_arm64_process_cannot_load_an_x64_package(tmp_path: Path) -> None:
    host = new_machine(tmp_path / "host")
    host.native_machine = host.process_machine = "arm64"
    report = diagnose_package(build_windows_wheel(tmp_path), windows=host)
    assert report.host == "win arm64"
    platform = check(report, "host.platform")
    assert platform.status is Status.FAIL and "error 193" in platform.cause
    assert report.ready is False and report.root_cause == platform.cause


def test_built_wheel_resolves_against_the_host(tmp_path: Path) -> None:
    host = new_machine(tmp_path / "host")
    install_cuda(host, "12.4")
    install_cudnn(host, 9, f"{CUDNN_ROOT}\\v9.4\\bin\\12.6")
    wheel = build_windows_wheel(tmp_path, cuda_imports=("cublasLt64_12.dll", "cudart64_12.dll", "cudnn64_9.dll"))
    report = diagnose_package(wheel, windows=host, host=PackagePlatform.WIN_X64)
    assert report.ready is True, report.verdict
    assert {c.id for c in report.checks} >= {
        "host.platform",
        "host.vcruntime",
        "host.driver",
        "host.lib.cudart64_12.dll",
    }


def test_render_shows_this_machine_and_the_fix(tmp_path: Path) -> None:
    from rich.console import Console

    from ortgpu.cli.doctor_package import render_package

    host = new_machine(tmp_path / "host")
    install_cuda(host, "12.4")
    wheel = build_windows_wheel(tmp_path, cuda_imports=("cudart64_12.dll", "cudnn64_9.dll"))
    report = diagnose_package(wheel, windows=host)
    out = io.StringIO()
    render_package(report, Console(file=out, width=240))
    text = out.getvalue()
    assert "This machine (win x64)" in text and "cudnn64_9.dll" in text
    assert "install cuDNN 9 for CUDA 12" in text
