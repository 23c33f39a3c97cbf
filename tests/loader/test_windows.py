"""The Windows search-order emulation on small simulated hosts (tiny PE files, no real wheels needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.winsim import CUDA_ROOT, CUDNN_ROOT, SYSTEM32, SimulatedWindows, build_dll, install_cuda, new_machine

from ortgpu.binfmt.binary import read_pe
from ortgpu.host.windows import SESSION_MANAGER_KEY
from ortgpu.host.windows_facts import cuda_facts, host_facts
from ortgpu.loader.windows import (
    DllResolver,
    DllStatus,
    LibraryToLoad,
    LoadContext,
    OrderKind,
    SearchStep,
    resolve_ort,
    search_order,
)
from ortgpu.package.analysis import Component, LibraryRole, NeedKind

CAPI = "C:\\Python311\\Lib\\site-packages\\onnxruntime\\capi"


def provider(
    host: SimulatedWindows, imports: list[str], delay: list[str] = (), name: str = "onnxruntime_providers_cuda.dll"
) -> str:
    return host.dll(CAPI, name, imports=imports, delay_imports=delay, version="1.19.24.903")


def resolve(host: SimulatedWindows, path: str, run_time=()) -> dict[str, object]:
    facts = host_facts(host)
    libraries, _ = resolve_ort(
        host,
        facts,
        [LibraryToLoad("onnxruntime_providers_cuda.dll", path, LibraryRole.CUDA, tuple(run_time))],
        LoadContext(True, facts.app_dir),
        cuda_facts(host, facts).folders,
    )
    return {n.name.lower(): n for n in libraries[0].needs}


def test_build_dll_round_trips_through_read_pe(tmp_path: Path) -> None:
    path = tmp_path / "x.dll"
    path.write_bytes(
        build_dll(["a.dll", "KERNEL32.dll"], delay_imports=["nvcuda.dll"], machine="arm64", version="14.40.33810.0")
    )
    info = read_pe(path)
    assert info.imports == ("a.dll", "KERNEL32.dll") and info.delay_imports == ("nvcuda.dll",)
    assert info.machine == "arm64" and info.file_version == "14.40.33810.0"


def test_alternate_order_starts_in_the_providers_folder(tmp_path: Path) -> None:
    host = new_machine(tmp_path)
    host.env["PATH"] = 'C:\\A;"C:\\B";%CUDA_HOME%\\bin;c:\\a\\'
    host.env["CUDA_HOME"] = "C:\\CUDA"
    order = search_order(OrderKind.ALTERED, host_facts(host), dll_dir=CAPI)
    steps = [d.step for d in order.dirs]
    assert steps[:5] == [
        SearchStep.DLL_DIR,
        SearchStep.SYSTEM32,
        SearchStep.SYSTEM16,
        SearchStep.WINDOWS,
        SearchStep.CWD,
    ]
    assert [d.directory for d in order.dirs if d.step is SearchStep.PATH] == ["C:\\A", "C:\\B", "C:\\CUDA\\bin"]
    assert order.dirs[0].directory == CAPI
    assert "PATH (3 entries)" in order.describe()


def test_standard_and_extension_orders(tmp_path: Path) -> None:
    facts = host_facts(new_machine(tmp_path))
    standard = search_order(OrderKind.STANDARD, facts)
    assert standard.dirs[0].step is SearchStep.APP_DIR and standard.dirs[0].directory == "C:\\Python311"
    extension = search_order(OrderKind.EXTENSION, facts, dll_dir=CAPI)
    assert [d.step for d in extension.dirs] == [SearchStep.DLL_DIR, SearchStep.APP_DIR, SearchStep.SYSTEM32]
    assert "os.add_dll_directory" in extension.describe()  # Python's own loads never search PATH


def test_safe_dll_search_mode_off_moves_the_current_folder_first(tmp_path: Path) -> None:
    host = new_machine(tmp_path)
    host.set_registry(SESSION_MANAGER_KEY, {"SafeDllSearchMode": 0})
    steps = [d.step for d in search_order(OrderKind.ALTERED, host_facts(host), dll_dir=CAPI).dirs]
    assert steps[:3] == [SearchStep.DLL_DIR, SearchStep.CWD, SearchStep.SYSTEM32]


def test_set_dll_directory_replaces_the_current_folder(tmp_path: Path) -> None:
    host = new_machine(tmp_path)
    host.set_dll_directory = "C:\\Extra"
    steps = [d.step for d in search_order(OrderKind.ALTERED, host_facts(host), dll_dir=CAPI).dirs]
    assert steps[1] is SearchStep.DLL_DIRECTORY and SearchStep.CWD not in steps


def test_packaged_python_searches_only_its_folder_and_system32(tmp_path: Path) -> None:
    facts = host_facts(new_machine(tmp_path))
    order = search_order(OrderKind.ALTERED, facts, dll_dir=CAPI, packaged=True)
    assert [d.step for d in order.dirs] == [SearchStep.DLL_DIR, SearchStep.SYSTEM32]


def test_imports_resolve_transitively_with_api_sets_and_known_dlls_as_system(tmp_path: Path) -> None:
    host = new_machine(tmp_path)
    install_cuda(host, "12.4")
    path = provider(
        host,
        ["cublas64_12.dll", "api-ms-win-crt-runtime-l1-1-0.dll", "KERNEL32.dll", "MSVCP140.dll"],
        delay=["nvcuda.dll"],
    )
    needs = resolve(host, path)
    assert needs["api-ms-win-crt-runtime-l1-1-0.dll"].chosen.step is SearchStep.API_SET
    assert needs["kernel32.dll"].status is DllStatus.SYSTEM and needs["kernel32.dll"].system
    blas = needs["cublas64_12.dll"]
    assert blas.chosen.step is SearchStep.PATH and blas.chosen.where == "PATH[0]"
    lt = needs["cublaslt64_12.dll"]  # imported by cublas64_12.dll, not by the provider
    assert lt.requested_by == "cublas64_12.dll" and lt.ok
    assert needs["msvcp140.dll"].chosen.path == f"{SYSTEM32}\\msvcp140.dll"
    nvcuda = needs["nvcuda.dll"]
    assert nvcuda.kind is NeedKind.DELAY_LOAD and nvcuda.order is OrderKind.STANDARD
    assert nvcuda.component is Component.CUDA_DRIVER and nvcuda.chosen.step is SearchStep.SYSTEM32


def test_a_copy_in_the_providers_folder_wins_over_path(tmp_path: Path) -> None:
    host = new_machine(tmp_path)
    install_cuda(host, "12.4")
    host.dll(CAPI, "cudart64_12.dll", imports=["kernel32.dll"], version="6.12.9.0")
    cudart = resolve(host, provider(host, ["cudart64_12.dll"]))["cudart64_12.dll"]
    assert cudart.chosen.step is SearchStep.DLL_DIR and cudart.chosen.file_version == "6.12.9.0"
    assert [c.where for c in cudart.later] == ["PATH[0]"]


def test_a_dll_already_loaded_is_reused_whatever_its_folder(tmp_path: Path) -> None:
    host = new_machine(tmp_path)
    install_cuda(host, "12.4")
    facts = host_facts(host)
    first = provider(host, ["cudart64_12.dll"], name="onnxruntime_providers_shared.dll")
    second = provider(host, ["cudart64_12.dll"])
    libraries, resolver = resolve_ort(
        host,
        facts,
        [
            LibraryToLoad("onnxruntime_providers_shared.dll", first, LibraryRole.PROVIDERS_SHARED),
            LibraryToLoad("onnxruntime_providers_cuda.dll", second, LibraryRole.CUDA),
        ],
        LoadContext(True, facts.app_dir),
    )
    again = next(n for n in libraries[1].needs if n.name == "cudart64_12.dll")
    assert again.chosen.step is SearchStep.LOADED and "onnxruntime_providers_shared.dll" in again.chosen.where
    assert "cudart64_12.dll" in resolver.loaded


def test_cudnn_sub_libraries_next_to_the_provider_are_not_on_the_standard_search(tmp_path: Path) -> None:
    host = new_machine(tmp_path)
    host.dll(CAPI, "cudnn64_9.dll", imports=["kernel32.dll"], version="6.14.9.0")
    host.dll(CAPI, "cudnn_graph64_9.dll", imports=["kernel32.dll"], version="6.14.9.0")
    needs = resolve(host, provider(host, ["cudnn64_9.dll"]), run_time=[("cudnn_graph64_9.dll", NeedKind.INDIRECT)])
    assert needs["cudnn64_9.dll"].chosen.step is SearchStep.DLL_DIR
    graph = needs["cudnn_graph64_9.dll"]
    assert graph.requested_by == "cudnn64_9.dll" and graph.status is DllStatus.OFF_PATH
    assert graph.off_path[0].path == f"{CAPI}\\cudnn_graph64_9.dll"
    assert "a folder this search does not include" in graph.off_path[0].where


def _scenario(host: SimulatedWindows, status: DllStatus) -> str:
    """Set the host up so that cudart64_12.dll resolves with `status`; return the name to look at."""
    if status is DllStatus.FOUND:
        install_cuda(host, "12.4")
    elif status is DllStatus.SYSTEM:
        return "api-ms-win-core-path-l1-1-0.dll"
    elif status is DllStatus.BAD_IMAGE:
        host.put("C:\\Broken\\cudart64_12.dll", b"MZ not really a DLL")
        host.prepend_path("C:\\Broken")
    elif status is DllStatus.WRONG_MAJOR:
        install_cuda(host, "11.8")
    elif status is DllStatus.OFF_PATH:
        install_cuda(host, "12.4", on_path=False)
    return "cudart64_12.dll"


@pytest.mark.parametrize("status", list(DllStatus))
def test_every_status_is_reachable(tmp_path: Path, status: DllStatus) -> None:
    host = new_machine(tmp_path)
    name = _scenario(host, status)
    found = resolve(host, provider(host, [name]))[name.lower()]
    assert found.status is status
    assert found.ok is (status in (DllStatus.FOUND, DllStatus.SYSTEM))
    if status is DllStatus.OFF_PATH:
        assert found.off_path[0].where == "CUDA 12.4.0 toolkit (CUDA_PATH, CUDA_PATH_V12_4), not searched"
    if status is DllStatus.WRONG_MAJOR:
        assert found.other_versions[0].path == f"{CUDA_ROOT}\\v11.8\\bin\\cudart64_110.dll"
    if status is DllStatus.BAD_IMAGE:
        assert found.chosen.machine is None


def test_cuda_13_runtime_in_bin_x64_and_a_cudnn_installer_folder(tmp_path: Path) -> None:
    host = new_machine(tmp_path)
    root = f"{CUDA_ROOT}\\v13.0"
    host.dll(f"{root}\\bin\\x64", "cudart64_13.dll", imports=["kernel32.dll"], version="6.13.0.0")
    host.env["CUDA_PATH_V13_0"] = root
    host.dll(f"{CUDNN_ROOT}\\v9.13\\bin\\13.0\\x64", "cudnn64_9.dll", imports=["kernel32.dll"], version="6.14.9.0")
    facts = host_facts(host)
    cuda = cuda_facts(host, facts)
    kit = cuda.toolkits[0]
    assert kit.version == "13.0" and kit.major == 13 and kit.bin_dirs == (f"{root}\\bin\\x64",) and not kit.bin_on_path
    labels = {f.label for f in cuda.folders}
    assert "cuDNN 9.13 for CUDA 13.0 (NVIDIA installer)" in labels
    needs = resolve(host, provider(host, ["cudart64_13.dll", "cudnn64_9.dll"]))
    assert needs["cudart64_13.dll"].status is DllStatus.OFF_PATH
    assert needs["cudnn64_9.dll"].off_path[0].path.endswith("v9.13\\bin\\13.0\\x64\\cudnn64_9.dll")


def test_resolver_alone_resolves_a_name_in_a_given_order(tmp_path: Path) -> None:
    host = new_machine(tmp_path)
    install_cuda(host, "12.4")
    facts = host_facts(host)
    resolver = DllResolver(host, facts)
    order = search_order(OrderKind.STANDARD, facts)
    found = resolver.resolve("CUDART64_12.DLL", "app.exe", NeedKind.LOAD_TIME, order)
    assert found.ok and found.chosen.path.endswith("cudart64_12.dll")  # names are case-insensitive
