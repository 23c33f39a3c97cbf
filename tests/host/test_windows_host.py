"""Windows host facts read through the WindowsHost interface (simulated), and the Win32-only module on this OS."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tests.support.winsim import CUDA_ROOT, CUDNN_ROOT, build_dll, install_cuda, new_machine

from ortgpu.host import winapi
from ortgpu.host.load_attempt import LoadOutcome
from ortgpu.host.windows import (
    VC_RUNTIMES_KEY,
    RealWindowsHost,
    RegistryView,
    expand_variables,
    load_attempt_from_child,
    same_dir,
    windows_error_code,
)
from ortgpu.host.windows_facts import (
    FolderKind,
    PythonFlavour,
    cuda_facts,
    driver_from_nvcuda_version,
    host_facts,
    vc_registry,
    windows_driver,
)

on_windows = pytest.mark.skipif(sys.platform != "win32", reason="calls the Win32 API")
off_windows = pytest.mark.skipif(sys.platform == "win32", reason="checks the behaviour away from Windows")


@pytest.mark.parametrize(
    ("file_version", "driver"),
    [("32.0.15.6094", "560.94"), ("31.0.15.3623", "536.23"), ("32.0.15.7283", "572.83"), ("1.2", None), (None, None)],
)
def test_driver_version_from_nvcuda_file_version(file_version: str | None, driver: str | None) -> None:
    assert driver_from_nvcuda_version(file_version) == driver


def test_variables_folders_and_error_codes() -> None:
    env = {"Cuda_Path": "C:\\CUDA", "X": "1"}
    assert expand_variables("%CUDA_PATH%\\bin;%UNSET%", env) == "C:\\CUDA\\bin;%UNSET%"
    assert same_dir('"C:\\Program Files\\X\\"', "c:\\program files\\x")
    assert not same_dir("C:\\A", "C:\\AB")
    assert windows_error_code("error 126: The specified module could not be found.") == 126
    assert windows_error_code("import onnxruntime: ImportError: ...") is None


def test_path_entries_are_expanded_dequoted_and_checked(tmp_path: Path) -> None:
    host = new_machine(tmp_path)
    host.env["CUDA_PATH"] = "C:\\CUDA"
    host.env["PATH"] = '"C:\\Windows";%CUDA_PATH%\\bin;C:\\Gone;c:\\windows\\;;C:\\Python311'
    entries = host_facts(host).path
    assert [e.directory for e in entries] == [
        "C:\\Windows",
        "C:\\CUDA\\bin",
        "C:\\Gone",
        "c:\\windows\\",
        "C:\\Python311",
    ]
    assert entries[0].quoted and entries[1].had_variables
    assert [e.exists for e in entries] == [True, False, False, True, True]
    assert entries[3].duplicate_of == 0


@pytest.mark.parametrize("flavour", list(PythonFlavour))
def test_every_python_flavour_is_recognised(tmp_path: Path, flavour: PythonFlavour) -> None:
    host = new_machine(tmp_path)
    if flavour is PythonFlavour.STORE:
        apps = "C:\\Users\\dev\\AppData\\Local\\Microsoft\\WindowsApps"
        host.python = f"{apps}\\PythonSoftwareFoundation.Python.3.11_qbz5n2kfra8p0\\python.exe"
    elif flavour is PythonFlavour.CONDA:
        host.path_of("C:\\Python311\\conda-meta").mkdir(parents=True)
    elif flavour is PythonFlavour.EMBEDDABLE:
        host.put("C:\\Python311\\python311._pth", b"python311.zip\n.\n")
    assert host_facts(host).python_flavour is flavour


def test_a_terminal_started_before_an_installer_changed_path(tmp_path: Path) -> None:
    host = new_machine(tmp_path)
    bin_dir = install_cuda(host, "12.4", on_path=False)
    host.set_registry(
        "HKLM\\SYSTEM\\CurrentControlSet\\Control\\Session Manager\\Environment",
        {"Path": f"%SystemRoot%\\system32;%SystemRoot%;{bin_dir}"},
    )
    assert host_facts(host).stale_path == (bin_dir,)


def test_cuda_facts_name_every_kind_of_folder(tmp_path: Path) -> None:
    host = new_machine(tmp_path)
    install_cuda(host, "12.4")
    host.env["CUDA_PATH_V11_8"] = f"{CUDA_ROOT}\\v11.8"  # uninstalled, variable left behind
    host.dll(f"{CUDNN_ROOT}\\v9.4\\bin\\12.6", "cudnn64_9.dll", imports=["kernel32.dll"])
    site = host.site
    host.dll(f"{site}\\nvidia\\cudnn\\bin", "cudnn64_9.dll", imports=["kernel32.dll"])
    host.dll(f"{site}\\torch\\lib", "cudnn64_9.dll", imports=["kernel32.dll"])
    host.dll(f"{site}\\tensorrt_libs", "nvinfer_10.dll", imports=["kernel32.dll"])
    host.dll("C:\\Python311\\Library\\bin", "cudart64_12.dll", imports=["kernel32.dll"])
    cuda = cuda_facts(host, host_facts(host))
    assert [(k.variable, k.exists, k.version) for k in cuda.toolkits] == [
        ("CUDA_PATH", True, "12.4.0"),
        ("CUDA_PATH_V11_8", False, "11.8"),
        ("CUDA_PATH_V12_4", True, "12.4.0"),
    ]
    assert {f.kind for f in cuda.folders} == set(FolderKind)
    assert cuda.cuda_path == f"{CUDA_ROOT}\\v12.4" and cuda.ort_cuda_unavailable is None


def test_vc_registry_reads_both_views_and_the_dword_form(tmp_path: Path) -> None:
    host = new_machine(tmp_path)  # writes v14.40.33810.0 into the 32-bit view (WOW6432Node)
    key = f"{VC_RUNTIMES_KEY}\\x64"
    host.set_registry(key, {"Major": 14, "Minor": 42, "Bld": 34433, "Rbld": 0}, bits="64")
    registry = vc_registry(host, "x64")
    assert registry.version == "14.42.34433.0" and "WOW6432Node" not in registry.key
    assert host.registry_value(key, "version", RegistryView.BITS32) == "v14.40.33810.0"


def test_driver_from_the_nvcuda_file_and_the_driver_model(tmp_path: Path) -> None:
    host = new_machine(tmp_path)
    host.set_registry("HKLM\\SYSTEM\\CurrentControlSet\\Control\\GraphicsDrivers", {"TdrDelay": 10})
    driver = windows_driver(host, host_facts(host))
    assert driver.nvcuda == "C:\\Windows\\System32\\nvcuda.dll"
    assert (driver.nvcuda_file_version, driver.version_from_file) == ("32.0.15.6094", "560.94")
    assert driver.driver_models == ((0, "WDDM"),) and driver.tdr_delay_s == 10.0


def test_child_records_become_a_load_attempt() -> None:
    failed = load_attempt_from_child(
        {
            "ort": {"file": None, "version": None, "error": "ImportError: DLL load failed while importing x: y"},
            "loads": [{"path": "C:\\a.dll", "ok": False, "code": 1114, "error": "A dynamic link ..."}],
            "mapped": [],
        },
        session=False, preload=False, returncode=0, stderr="", duration_s=0.1,
    )  # fmt: skip
    assert failed.outcome is LoadOutcome.LIBRARY_FAILED and failed.error.startswith("import onnxruntime: ImportError")
    missing = {"path": "C:\\p.dll", "ok": False, "code": 126, "error": "The specified module could not be found."}
    code = load_attempt_from_child(
        {"loads": [missing], "mapped": []},
        session=True, preload=False, returncode=0, stderr="", duration_s=0.1,
    )  # fmt: skip
    assert windows_error_code(code.error) == 126
    fallback = load_attempt_from_child(
        {"loads": [{"path": "C:\\p.dll", "ok": True, "code": 0, "error": None}],
         "session": {"providers": ["CPUExecutionProvider"], "error": None, "ran": True}, "mapped": ["C:\\x.dll"]},
        session=True, preload=False, returncode=0, stderr="", duration_s=0.1,
    )  # fmt: skip
    assert fallback.outcome is LoadOutcome.SESSION_FAILED and "instead of CUDAExecutionProvider" in fallback.error
    crashed = load_attempt_from_child({}, session=False, preload=False, returncode=-1073741819, stderr="", duration_s=1)
    assert crashed.outcome is LoadOutcome.CRASHED
    timeout = load_attempt_from_child(
        {}, session=False, preload=False, returncode=None, stderr="", duration_s=9, timed_out=True
    )
    assert timeout.outcome is LoadOutcome.TIMEOUT


@off_windows
def test_win32_module_imports_here_and_refuses_to_run() -> None:
    with pytest.raises(winapi.WinApiUnavailable):
        winapi.machines()
    with pytest.raises(winapi.WinApiUnavailable):
        winapi.registry_value("HKLM\\SOFTWARE", "x")
    with pytest.raises(winapi.WinApiUnavailable):
        RealWindowsHost().system_dir()


@on_windows
def test_real_host_reads_this_windows_machine() -> None:
    host = RealWindowsHost()
    facts = host_facts(host)
    assert Path(facts.system_dir).is_dir() and facts.process_machine in ("x64", "arm64", "x86")
    assert "kernel32.dll" in host.known_dlls()
    attempt = host.load([str(Path(facts.system_dir) / "version.dll")], session=False, module_parent=None)
    assert attempt.ok, attempt.error


def test_build_dll_marks_machine_for_the_fake_loader(tmp_path: Path) -> None:
    host = new_machine(tmp_path)
    host.put("C:\\x\\arm.dll", build_dll(["kernel32.dll"], machine="arm64"))
    attempt = host.load(["C:\\x\\arm.dll"], session=False, module_parent=None)
    assert attempt.libraries[0].error.startswith("error 193")
