"""`diagnose()` on simulated Windows hosts populated with the real 1.18.0 / 1.19.2 win_amd64 wheels' DLLs.

Each scenario is one that Windows users of the seed packages hit; the verdict, the root cause and the fix
must name it in Windows terms. The real load attempt is played by winsim's own loader (an independent
implementation of the documented search order), so the doctor's emulation is checked against it.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from tests.support.winsim import (
    CUDNN_ROOT,
    SYSTEM32,
    SimulatedWindows,
    build_dll,
    install_cuda,
    install_cudnn,
    new_machine,
    ready_machine,
)

from ortgpu.doctor.machine import DoctorReport, Probes, diagnose
from ortgpu.doctor.verdict import Status
from ortgpu.host.load_attempt import LoadOutcome
from ortgpu.loader.windows import DllStatus, SearchStep
from ortgpu.results import envelope

pytestmark = pytest.mark.network  # the real wheels come from PyPI once, then from the test cache


def run(host: SimulatedWindows) -> DoctorReport:
    return diagnose(probes=Probes(windows=host, ort_query=host.ort_query))


def check(report: DoctorReport, check_id: str):
    return next(c for c in report.checks if c.id == check_id)


def need(report: DoctorReport, name: str):
    return next(n for lib in report.windows.libraries for n in lib.needs if n.name.lower() == name.lower())


def test_ready_1_19_2_names_the_gpu_and_where_each_dll_comes_from(tmp_path: Path) -> None:
    host, _ = ready_machine(tmp_path, "1.19.2")
    report = run(host)
    assert report.ready, report.verdict
    assert report.verdict == "GPU ready: CUDA EP will load on GPU 0 (NVIDIA GeForce RTX 4090, sm_89)"
    assert report.exit_code == 0 and report.platform.os == "Windows"
    assert not [c for c in report.checks if c.status is Status.FAIL]
    cudnn = need(report, "cudnn64_9.dll")
    assert cudnn.chosen.path == f"{CUDNN_ROOT}\\v9.4\\bin\\12.6\\cudnn64_9.dll"
    assert cudnn.chosen.step is SearchStep.PATH and cudnn.chosen.file_version == "6.14.9.0"
    shared = need(report, "onnxruntime_providers_shared.dll")
    assert shared.chosen.step is SearchStep.LOADED  # ORT loaded it by full path just before
    # the sub-libraries cuDNN opens at run time come from the matrix and are searched from python.exe's folder
    graph = need(report, "cudnn_graph64_9.dll")
    assert graph.requested_by == "cudnn64_9.dll" and graph.ok
    assert "standard" in graph.order.value
    assert {m.component for m in report.mapped} >= {"cuDNN", "CUDA runtime", "VC++ runtime"}
    mapped = {str(m.path): m for m in report.mapped}
    assert mapped[f"{CUDNN_ROOT}\\v9.4\\bin\\12.6\\cudnn64_9.dll"].why.startswith("found in PATH[")
    assert check(report, "windows.vcruntime").status is Status.OK
    assert check(report, "matrix").evidence.startswith("ORT 1.19: CUDA 12.2, cuDNN 9")
    assert check(report, "gpu.arch:0").status is Status.OK  # sm_89 runs the build's sm_80 kernels
    json.dumps(envelope("doctor", report))


def test_ready_1_18_0_with_cudnn_8_and_zlib(tmp_path: Path) -> None:
    host, _ = ready_machine(tmp_path, "1.18.0")
    report = run(host)
    assert report.ready, report.verdict
    zlib = need(report, "zlibwapi.dll")
    assert zlib.ok and zlib.requested_by == "cudnn64_8.dll"
    assert "VC++" not in report.verdict
    assert check(report, "windows.vcruntime").details["required"] == "14.37"


def test_cudnn_9_missing_with_cuda_12_present(tmp_path: Path) -> None:
    host = new_machine(tmp_path)
    host.install_ort("1.19.2")
    install_cuda(host, "12.4")
    report = run(host)
    assert not report.ready and report.exit_code == 3
    provider = check(report, "ort.provider.cuda")
    assert provider.status is Status.FAIL
    assert report.root_cause == provider.cause
    assert "cudnn64_9.dll (cuDNN) is not found" in provider.cause and "error 126" in provider.cause
    assert "install cuDNN 9 for CUDA 12" in provider.fix and "PATH" in provider.fix
    assert need(report, "cublasLt64_12.dll").ok  # CUDA 12 itself is fine
    assert need(report, "cudnn64_9.dll").status is DllStatus.MISSING
    # the independent fake loader agrees: LoadLibraryExW fails with 126
    attempt = check(report, "load.attempt")
    assert attempt.status is Status.FAIL and attempt.details["code"] == 126
    assert "cudnn64_9.dll" in attempt.cause


def test_cudnn_9_installed_but_its_cuda_folder_not_on_path(tmp_path: Path) -> None:
    host = new_machine(tmp_path)
    host.install_ort("1.19.2")
    install_cuda(host, "12.4")
    folder = install_cudnn(host, 9, f"{CUDNN_ROOT}\\v9.4\\bin\\12.6", on_path=False)
    host.prepend_path(f"{CUDNN_ROOT}\\v9.4\\bin")  # what the installer adds: a folder without DLLs
    report = run(host)
    cudnn = need(report, "cudnn64_9.dll")
    assert cudnn.status is DllStatus.OFF_PATH
    assert cudnn.off_path[0].path == f"{folder}\\cudnn64_9.dll"
    provider = check(report, "ort.provider.cuda")
    assert "installed but not in any folder the Windows loader searches" in provider.cause
    assert f"add {folder} to PATH" in provider.fix and "SetEnvironmentVariable('Path'" in provider.fix


def test_only_cuda_11_for_a_cuda_12_build(tmp_path: Path) -> None:
    host = new_machine(tmp_path)
    host.install_ort("1.19.2")
    bin_dir = install_cuda(host, "11.8")
    install_cudnn(host, 8, bin_dir, on_path=False)
    report = run(host)
    assert not report.ready
    cudart = need(report, "cudart64_12.dll")
    assert cudart.status is DllStatus.WRONG_MAJOR
    assert [c.path for c in cudart.other_versions] == [f"{bin_dir}\\cudart64_110.dll"]
    provider = check(report, "ort.provider.cuda")
    assert "only CUDA runtime 11, this ORT needs 12" in provider.cause
    assert "install the CUDA 12.x toolkit" in provider.fix and "built for CUDA 11" in provider.fix
    cuda_path = check(report, "windows.cuda_path")
    assert cuda_path.status is Status.WARN and "CUDA_PATH is CUDA 11.8.0, this ORT needs CUDA 12" in cuda_path.cause


def test_zlibwapi_missing_for_cudnn_8(tmp_path: Path) -> None:
    host = new_machine(tmp_path)
    host.install_ort("1.18.0")
    bin_dir = install_cuda(host, "11.8")
    install_cudnn(host, 8, bin_dir, on_path=False, zlib=False)
    report = run(host)
    assert not report.ready
    zlib = need(report, "zlibwapi.dll")
    assert zlib.status is DllStatus.MISSING and zlib.requested_by == "cudnn64_8.dll"
    provider = check(report, "ort.provider.cuda")
    assert "zlibwapi.dll" in provider.cause and "first convolution" in provider.cause
    assert provider.fix.startswith("Put the x64 zlibwapi.dll on PATH")  # the knowledge base's FM-24 text
    # the provider DLLs themselves load: cuDNN only fails at the first convolution, as the fake loader shows
    attempt = report.load_attempt
    assert attempt.outcome is LoadOutcome.SESSION_FAILED
    assert "Could not locate zlibwapi.dll" in attempt.error


def test_vc_runtime_too_old(tmp_path: Path) -> None:
    host, _ = ready_machine(tmp_path, "1.19.2")
    for name in ("msvcp140.dll", "msvcp140_1.dll"):
        host.dll(SYSTEM32, name, imports=["kernel32.dll"], version="14.29.30133.0")
    host.set_registry(
        "HKLM\\SOFTWARE\\Microsoft\\VisualStudio\\14.0\\VC\\Runtimes\\x64", {"Version": "v14.29.30133.00"}, "32"
    )
    report = run(host)
    assert not report.ready
    vc = check(report, "windows.vcruntime")
    assert vc.status is Status.FAIL and report.root_cause == vc.cause
    assert "MSVCP140.dll 14.29.30133.0" in vc.cause and "14.40" in vc.cause and "1114" in vc.cause
    assert "winget install Microsoft.VCRedist.2015+.x64" in vc.fix
    assert vc.details["registry"] == "14.29.30133.00"
    # `import onnxruntime` itself fails in the fake loader (DLL initialisation), before any provider load
    assert check(report, "ort.installed").status is Status.FAIL
    assert "initialization routine failed" in report.load_attempt.error


def test_stale_vc_runtime_in_a_conda_environment_wins_over_system32(tmp_path: Path) -> None:
    host, _ = ready_machine(tmp_path, "1.19.2")
    host.path_of("C:\\Python311\\conda-meta").mkdir()
    host.dll("C:\\Python311", "msvcp140.dll", imports=["kernel32.dll"], version="14.36.32532.0")
    report = run(host)
    vc = check(report, "windows.vcruntime")
    assert vc.status is Status.FAIL
    assert "C:\\Python311\\msvcp140.dll" in vc.cause
    assert 'conda install -c conda-forge "vc14_runtime>=14.40"' in vc.fix
    assert "winget" not in vc.fix  # System32's copy and the registry are new enough


def test_system32_onnxruntime_dll_is_named_for_cpp_users_only(tmp_path: Path) -> None:
    host, _ = ready_machine(tmp_path, "1.19.2")
    host.dll(SYSTEM32, "onnxruntime.dll", imports=["kernel32.dll"], version="1.17.1.0")
    report = run(host)
    assert report.ready  # Python never loads onnxruntime.dll
    shadow = check(report, "windows.shadowing")
    assert shadow.status is Status.INFO and "C:\\Windows\\System32\\onnxruntime.dll 1.17.1.0" in shadow.evidence


def test_arm64_host_running_x64_python(tmp_path: Path) -> None:
    host, _ = ready_machine(tmp_path, "1.19.2")
    host.native_machine = "arm64"
    report = run(host)
    assert not report.ready
    platform = check(report, "platform.os")
    assert platform.status is Status.FAIL and report.root_cause == platform.cause
    assert "ARM64" in platform.cause and "emulation" in platform.cause
    assert "onnxruntime-directml" in platform.fix


def test_arm64_python_cannot_load_the_x64_dlls(tmp_path: Path) -> None:
    host, _ = ready_machine(tmp_path, "1.19.2")
    host.native_machine = host.process_machine = "arm64"
    report = run(host)
    assert check(report, "platform.os").status is Status.FAIL
    assert report.load_attempt.error.startswith("import onnxruntime")  # the x64 .pyd is error 193 here


def test_cuda_path_pointing_at_a_removed_toolkit(tmp_path: Path) -> None:
    host, _ = ready_machine(tmp_path, "1.18.0")
    host.remove("C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8")  # uninstalled; variables stay
    report = run(host)
    assert not report.ready
    cuda_path = check(report, "windows.cuda_path")
    assert cuda_path.status is Status.WARN
    assert "CUDA_PATH points at C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8, which does not exist" in (
        cuda_path.cause
    )
    assert "SetEnvironmentVariable('CUDA_PATH', $null, 'Machine')" in cuda_path.fix
    # 1.18.0 turns the failed CUDA EP into an exception when CUDA_PATH is set (the string is in its .pyd)
    assert "CUDA_PATH is set but CUDA wasn't able to be loaded" in cuda_path.cause
    assert need(report, "cudart64_110.dll").status is DllStatus.MISSING
    assert report.root_cause == check(report, "ort.provider.cuda").cause
    path = check(report, "windows.path")
    assert "v11.8\\bin" in path.evidence and "missing folders" in path.evidence


def test_nvidia_pip_wheels_are_not_searched_by_ort_before_1_21(tmp_path: Path) -> None:
    host = new_machine(tmp_path)
    host.install_ort("1.19.2")
    site = host.site
    for package, names in {
        "cuda_runtime": ["cudart64_12.dll"],
        "cublas": ["cublas64_12.dll", "cublasLt64_12.dll"],
        "cufft": ["cufft64_11.dll"],
        "cudnn": ["cudnn64_9.dll", "cudnn_graph64_9.dll", "cudnn_ops64_9.dll"],
    }.items():
        for name in names:
            host.dll(f"{site}\\nvidia\\{package}\\bin", name, imports=["kernel32.dll"], version="6.12.0.0")
    report = run(host)
    cudart = need(report, "cudart64_12.dll")
    assert cudart.status is DllStatus.OFF_PATH and "pip package nvidia\\cuda_runtime" in cudart.off_path[0].where
    provider = check(report, "ort.provider.cuda")
    assert "does not look in nvidia-* pip packages" in provider.fix
    assert "ctypes.CDLL(r'" in provider.fix and "os.add_dll_directory() does not reach" in provider.fix
    assert report.preload_attempt is None  # preload_dlls() does not exist before 1.21


def test_ort_cuda_unavailable_disables_the_ep(tmp_path: Path) -> None:
    host, _ = ready_machine(tmp_path, "1.19.2")
    host.env["ORT_CUDA_UNAVAILABLE"] = "1"
    report = run(host)
    assert not report.ready
    disabled = check(report, "windows.ort_cuda_unavailable")
    assert disabled.status is Status.FAIL and report.root_cause == disabled.cause
    assert "Remove-Item Env:ORT_CUDA_UNAVAILABLE" in disabled.fix


def test_store_python_never_searches_path(tmp_path: Path) -> None:
    host, _ = ready_machine(tmp_path, "1.19.2")
    store = "C:\\Program Files\\WindowsApps\\PythonSoftwareFoundation.Python.3.11_3.11.2544.0_x64__qbz5n2kfra8p0"
    host.put(f"{store}\\python.exe", build_dll(["python311.dll"]))
    host.dll(store, "python311.dll", imports=["kernel32.dll"], version="3.11.9150.1013")
    host.python = f"{store}\\python.exe"
    report = run(host)
    assert check(report, "windows.python").status is Status.WARN
    cudart = need(report, "cudart64_12.dll")
    assert cudart.status is DllStatus.OFF_PATH  # on PATH, but a packaged app's search skips PATH
    assert not report.ready


def test_an_x86_dll_earlier_on_path_stops_the_search(tmp_path: Path) -> None:
    host, _ = ready_machine(tmp_path, "1.19.2")
    host.dll("C:\\Tools\\old", "cudart64_12.dll", imports=["kernel32.dll"], machine="x86", version="6.12.0.0")
    host.prepend_path("C:\\Tools\\old")
    report = run(host)
    cudart = need(report, "cudart64_12.dll")
    assert cudart.status is DllStatus.BAD_IMAGE and cudart.chosen.machine == "x86"
    assert len(cudart.later) == 1  # the good copy exists, later on PATH, and is never reached
    provider = check(report, "ort.provider.cuda")
    assert "error 193" in provider.cause and "C:\\Tools\\old\\cudart64_12.dll" in provider.fix
    assert report.load_attempt.libraries[-1].error.startswith("error 193")


def test_no_nvidia_driver(tmp_path: Path) -> None:
    host = new_machine(tmp_path, gpu=False)
    host.install_ort("1.19.2")
    install_cuda(host, "12.4")
    install_cudnn(host, 9, f"{CUDNN_ROOT}\\v9.4\\bin\\12.6")
    report = run(host)
    driver = check(report, "driver.present")
    assert driver.status is Status.FAIL and report.root_cause == driver.cause
    assert "nvcuda.dll" in driver.cause and ">= 527.41" in driver.fix
    assert report.load_attempt.session_requested is False  # no GPU to run a session on


def test_table_rendering_shows_the_windows_dll_table(tmp_path: Path) -> None:
    from rich.console import Console

    from ortgpu.cli.doctor import render_doctor

    host = new_machine(tmp_path)
    host.install_ort("1.19.2")
    install_cuda(host, "12.4")
    report = run(host)
    out = io.StringIO()
    render_doctor(report, Console(file=out, width=220))
    text = out.getvalue()
    assert text.splitlines()[0] == report.verdict[: len(text.splitlines()[0])]
    assert "DLLs ORT's libraries need" in text and "cudnn64_9.dll" in text and "missing" in text
    assert "cublasLt64_12.dll" in text and "PATH[" in text


def test_the_real_load_wins_when_the_emulation_disagrees(tmp_path: Path) -> None:
    from ortgpu.host.load_attempt import LoadAttempt

    host = new_machine(tmp_path)
    host.install_ort("1.19.2")
    install_cuda(host, "12.4")  # no cuDNN anywhere the emulation looks

    def loaded(libraries, *, session, module_parent, preload=False, device_id=0, timeout_s=120.0) -> LoadAttempt:
        # e.g. cuDNN already loaded by another package, or a search ortgpu does not model
        return LoadAttempt(LoadOutcome.LOADED, (), None, session, ("CUDAExecutionProvider",), None, (), preload,
                           None, "1.19.2", 0, "", 0.1)  # fmt: skip

    host.load = loaded  # type: ignore[method-assign]
    report = run(host)
    provider = check(report, "ort.provider.cuda")
    assert provider.status is Status.WARN and "the real load attempt succeeded" in provider.cause
    assert check(report, "load.attempt").status is Status.OK
    assert report.ready  # the verdict trusts the real load over the emulated search


def test_cpu_and_gpu_distributions_in_one_site_packages(tmp_path: Path) -> None:
    host, _ = ready_machine(tmp_path, "1.19.2")
    info = host.path_of(f"{host.site}\\onnxruntime-1.19.2.dist-info")
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: onnxruntime\nVersion: 1.19.2\n")
    (info / "top_level.txt").write_text("onnxruntime\n")
    report = run(host)
    dists = check(report, "ort.distributions")
    assert dists.status is Status.FAIL and "files are mixed" in dists.cause
    assert "C:\\Python311\\Lib\\site-packages" in dists.evidence  # shown as the Windows path
    assert "pip uninstall -y onnxruntime onnxruntime-gpu" in dists.fix
