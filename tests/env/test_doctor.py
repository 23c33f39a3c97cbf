"""`diagnose()`: simulated machines (fake ORT installs, fake NVML, fake libraries) and this real one."""

from __future__ import annotations

import ctypes
import json
from dataclasses import replace
from pathlib import Path

import pytest
from fake_libs import FakeGpu, FakeNvml, build_lib, fake_ort, fatbin_source, install_dist, needs_gcc, package_info

from ortgpu.env.checks import Status
from ortgpu.env.doctor import DoctorReport, OrtBuild, Probes, diagnose
from ortgpu.env.linux_loader import LibStatus
from ortgpu.env.load_attempt import LoadAttempt, LoadOutcome
from ortgpu.env.nvml import NVML_LIBRARY_ENV
from ortgpu.results import to_jsonable

GPU_PROVIDERS = ("TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider")
NEEDS = ("libcublasLt.so.13", "libcublas.so.13", "libcudart.so.13", "libcuda.so.1")


def _lazy_libraries() -> tuple[str, ...]:
    from ortgpu.env.matrix import requirements_for

    requirements = requirements_for("1.31.1", 13)  # what the CUDA provider and cuDNN open at run time
    return tuple(requirements.lazy_libraries) + tuple(requirements.indirect_libraries_linux) if requirements else ()


def _ort(version: str = "1.31.1", providers: tuple[str, ...] = GPU_PROVIDERS, device: str = "GPU"):
    def query(module_dir: Path | None) -> OrtBuild:
        return OrtBuild(True, None, version, "ORT Build Info: fake", device, providers, str(module_dir))

    return query


def _loaded(mapped: list[Path]):
    """A load attempt that succeeded on the GPU (what the child reports on a real GPU machine)."""

    def load(libraries, *, session=False, **_kw) -> LoadAttempt:
        return LoadAttempt(
            outcome=LoadOutcome.LOADED,
            libraries=(),
            error=None,
            session_requested=session,
            session_providers=("CUDAExecutionProvider", "CPUExecutionProvider"),
            session_error=None,
            mapped=tuple(mapped),
            preload=False,
            ort_file=None,
            ort_version="1.31.1",
            returncode=0,
            stderr_tail="",
            duration_s=0.5,
        )

    return load


class Machine:
    """A simulated Linux machine: a site-packages folder, an LD_LIBRARY_PATH folder, an empty root."""

    def __init__(self, tmp_path: Path) -> None:
        self.site = tmp_path / "site"
        self.lib = tmp_path / "cuda" / "lib64"
        self.root = tmp_path / "root"
        self.root.mkdir()
        self.lib.mkdir(parents=True)

    def provide(self, *sonames: str, directory: Path | None = None) -> None:
        for soname in sonames:
            build_lib((directory or self.lib) / soname)

    def probes(self, nvml=None, environ=None, ort=None, load=None, ldconfig: str = "") -> Probes:
        env = {"LD_LIBRARY_PATH": str(self.lib)}
        env.update(environ or {})
        kwargs = {} if load is None else {"load": load}
        return Probes(
            environ=env,
            sys_path=[str(self.site)],
            ldconfig_text=ldconfig,
            loader_root=self.root,
            nvml=FakeNvml() if nvml is None else nvml,
            ort_query=ort or _ort(),
            proc_driver=self.root / "no-proc",
            sys_pci=self.root / "no-sys",
            load_timeout_s=60,
            **kwargs,
        )


def _check(report: DoctorReport, check_id: str):
    return next(c for c in report.checks if c.id == check_id)


def _ready_machine(tmp_path: Path) -> Machine:
    machine = Machine(tmp_path)
    fake_ort(machine.site, cuda_needs=NEEDS)
    machine.provide(*NEEDS, *_lazy_libraries())
    return machine


pytestmark = needs_gcc


def test_ready_names_the_gpu_and_the_files_mapped(tmp_path) -> None:
    machine = _ready_machine(tmp_path)
    mapped = [machine.lib / "libcudart.so.13", machine.lib / "libcublasLt.so.13"]
    report = diagnose(probes=machine.probes(load=_loaded(mapped)))
    assert report.ready, report.verdict
    assert report.verdict == "GPU ready: CUDA EP will load on GPU 0 (NVIDIA H200, sm_90)"
    assert report.exit_code == 0 and report.root_cause is None
    assert not [c for c in report.checks if c.status is Status.FAIL]
    assert [m.path for m in report.mapped] == mapped
    assert report.mapped[0].component == "CUDA runtime"
    assert "LD_LIBRARY_PATH" in report.mapped[0].why
    # the simulated root has no C runtime: only the CUDA side is expected to resolve
    assert all(n.ok for n in report.libraries if not n.system)


def test_cuda_visible_devices_renumbers_device_id(tmp_path) -> None:
    machine = _ready_machine(tmp_path)
    gpus = [FakeGpu(), FakeGpu(name="NVIDIA A100-SXM4-80GB", cc=(8, 0), uuid="GPU-5e7a0000-aaaa")]
    probes = machine.probes(
        nvml=FakeNvml(gpus),
        environ={"CUDA_VISIBLE_DEVICES": "1,0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
        load=_loaded([]),
    )
    report = diagnose(probes=probes)
    assert report.verdict == "GPU ready: CUDA EP will load on GPU 0 (NVIDIA A100-SXM4-80GB, sm_80)"
    visible = _check(report, "gpu.visible")
    assert "device_id 0 -> GPU 1" in visible.evidence and "device_id 1 -> GPU 0" in visible.evidence
    assert visible.details["mapping"] == {0: 1, 1: 0}


def test_cuda_visible_devices_hiding_every_gpu(tmp_path) -> None:
    machine = _ready_machine(tmp_path)
    report = diagnose(probes=machine.probes(environ={"CUDA_VISIBLE_DEVICES": ""}, load=_loaded([])))
    assert not report.ready
    assert "hides every GPU" in report.root_cause
    assert "CUDA_VISIBLE_DEVICES" in report.fix


def test_failing_nvml_means_no_driver(tmp_path) -> None:
    machine = _ready_machine(tmp_path)
    report = diagnose(probes=machine.probes(nvml=FakeNvml(fail_init="NVML Shared Library Not Found")))
    assert not report.ready and report.exit_code == 3
    assert report.verdict.startswith("not ready: no NVIDIA driver")
    driver = _check(report, "driver.present")
    assert driver.status is Status.FAIL and "NVML Shared Library Not Found" in driver.evidence
    assert report.fix == driver.fix
    assert f"although libcuda.so.1 is at {machine.lib / 'libcuda.so.1'}" in report.root_cause
    # without a driver the child only dlopens (no session): the provider still loads here
    assert report.load_attempt is not None and not report.load_attempt.session_requested


def test_hidden_nvml_library_through_the_environment_variable(tmp_path) -> None:
    machine = _ready_machine(tmp_path)
    probes = machine.probes(environ={NVML_LIBRARY_ENV: str(tmp_path / "libnvidia-ml.so.1")})
    probes = Probes(**{**probes.__dict__, "nvml": None})  # the real pynvml, told to load a missing file
    report = diagnose(probes=probes)
    assert report.verdict.startswith("not ready: no NVIDIA driver")
    assert NVML_LIBRARY_ENV in _check(report, "driver.present").evidence


def test_no_driver_with_a_gpu_on_the_pci_bus(tmp_path) -> None:
    machine = Machine(tmp_path)
    fake_ort(machine.site, cuda_needs=NEEDS)
    machine.provide(*[n for n in NEEDS if n != "libcuda.so.1"], *_lazy_libraries())
    device = tmp_path / "pci" / "0000:19:00.0"
    device.mkdir(parents=True)
    (device / "vendor").write_text("0x10de\n")
    (device / "class").write_text("0x030200\n")
    probes = Probes(**{**machine.probes(nvml=FakeNvml(fail_init="not found")).__dict__, "sys_pci": tmp_path / "pci"})
    report = diagnose(probes=probes)
    assert "NVIDIA GPU is on the PCI bus (0000:19:00.0)" in report.root_cause
    assert "install the NVIDIA driver >=" in report.fix


def test_kernel_module_without_its_user_space_libraries(tmp_path) -> None:
    # a container started without --gpus, or the driver's folder hidden from the loader (the H200 run)
    machine = Machine(tmp_path)
    fake_ort(machine.site, cuda_needs=NEEDS)
    machine.provide(*[n for n in NEEDS if n != "libcuda.so.1"], *_lazy_libraries())
    proc = tmp_path / "proc-version"
    proc.write_text("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build\n")
    probes = Probes(
        **{**machine.probes(nvml=FakeNvml(fail_init="NVML Shared Library Not Found")).__dict__, "proc_driver": proc}
    )
    report = diagnose(probes=probes)
    assert report.root_cause == (
        "no NVIDIA driver user-space library: the NVIDIA kernel module 580.159.04 is loaded but "
        "libnvidia-ml.so.1 and libcuda.so.1 are not found"
    )
    assert "--gpus all" in report.fix
    load = _check(report, "load.attempt")
    assert "libcuda.so.1: cannot open shared object file" in load.evidence  # the loader agrees
    assert load.fix == "see the NVIDIA driver check"


def test_missing_cuda_library_is_the_root_cause_with_the_loader_text(tmp_path) -> None:
    machine = Machine(tmp_path)
    fake_ort(machine.site, cuda_needs=NEEDS)
    machine.provide("libcublas.so.13", "libcudart.so.13", "libcuda.so.1", *_lazy_libraries())
    report = diagnose(probes=machine.probes())
    assert not report.ready
    assert "libcublasLt.so.13" in report.root_cause
    provider = _check(report, "ort.provider.cuda")
    assert provider.status is Status.FAIL and "libcublasLt.so.13 (missing)" in provider.evidence
    assert "pip install" in report.fix and "onnxruntime-gpu" in report.fix
    load = _check(report, "load.attempt")
    assert "libcublasLt.so.13: cannot open shared object file" in load.evidence  # the loader's own words
    row = next(n for n in report.libraries if n.soname == "libcublasLt.so.13")
    assert row.status is LibStatus.MISSING


def test_wrong_major_is_named(tmp_path) -> None:
    machine = Machine(tmp_path)
    fake_ort(machine.site, cuda_needs=NEEDS)
    machine.provide("libcublasLt.so.12", "libcublas.so.13", "libcudart.so.13", "libcuda.so.1", *_lazy_libraries())
    report = diagnose(probes=machine.probes())
    row = next(n for n in report.libraries if n.soname == "libcublasLt.so.13")
    assert row.status is LibStatus.WRONG_MAJOR
    assert [p.name for p in row.other_versions] == ["libcublasLt.so.12"]
    assert "wrong major: only libcublasLt.so.12" in _check(report, "ort.provider.cuda").evidence
    assert "CUDA 13" in report.root_cause


# A fake onnxruntime whose preload_dlls() does what ORT's does on Linux: dlopen each library of a folder by full path.
_FAKE_ORT_INIT = b"""
import ctypes, os
__version__ = "1.31.1"
def set_default_logger_severity(level):
    pass
def preload_dlls(cuda=True, cudnn=True, msvc=True, directory=None):
    base = directory or os.path.join(os.path.dirname(__file__), "..", "nvidia", "cu13", "lib")
    for name in sorted(os.listdir(base)):
        if ".so" in name:
            ctypes.CDLL(os.path.join(base, name))
"""


def _pip_only_machine(tmp_path: Path, version: str = "1.31.1", ort_dir: Path | None = None) -> tuple[Machine, Path]:
    """CUDA 13's cuBLAS only in site-packages/nvidia/cu13/lib (what ortgpu[gpu] installs), the rest on the path.

    ``ort_dir``: onnxruntime unpacked there instead of beside nvidia/ (as on a PYTHONPATH).
    """
    machine = Machine(tmp_path)
    module = fake_ort(ort_dir or machine.site, cuda_needs=NEEDS, version=version)
    (module / "__init__.py").write_bytes(_FAKE_ORT_INIT)
    pip_dir = machine.site / "nvidia" / "cu13" / "lib"
    machine.provide("libcublasLt.so.13", "libcublas.so.13", directory=pip_dir)
    machine.provide("libcudart.so.13", "libcuda.so.1", *_lazy_libraries())
    return machine, pip_dir


def test_pip_only_libraries_load_through_preload_dlls(tmp_path) -> None:
    machine, pip_dir = _pip_only_machine(tmp_path)
    # no GPU: the real child loads the provider libraries (dlopen only) after the fake ORT's preload_dlls()
    report = diagnose(probes=machine.probes(nvml=FakeNvml(fail_init="NVML Shared Library Not Found")))
    expected = "onnxruntime.preload_dlls()"  # nvidia/ beside onnxruntime: ORT's own default finds the pip copies
    assert report.cuda_preload is not None and report.cuda_preload.texts() == (expected,)
    assert report.load_attempt.ok and report.load_attempt.preload_calls == (expected,)
    load = _check(report, "load.attempt")
    assert load.status is Status.OK and expected in load.evidence
    provider = _check(report, "ort.provider.cuda")  # the plain loader cannot find them: a warning, not the verdict
    assert provider.status is Status.WARN and "only in nvidia-* pip packages" in provider.cause
    assert "ortgpu loads them first with " + expected in provider.cause
    assert "preload_dlls()" in provider.fix and f"export LD_LIBRARY_PATH={pip_dir}:$LD_LIBRARY_PATH" in provider.fix
    assert "NVIDIA driver" in report.root_cause  # what is really missing here


def test_pip_only_libraries_gpu_ready_names_the_pip_copies(tmp_path) -> None:
    elsewhere = tmp_path / "unpacked"  # ORT away from nvidia/: preload_dlls() must be told the folder
    machine, pip_dir = _pip_only_machine(tmp_path, ort_dir=elsewhere)
    seen = {}

    def load(libraries, *, session=False, preload_calls=(), **kw):
        seen["calls"] = list(preload_calls)
        mapped = [pip_dir / "libcublasLt.so.13", machine.lib / "libcudart.so.13"]
        return replace(_loaded(mapped)(libraries, session=session), preload_calls=tuple(t for t, _ in preload_calls))

    report = diagnose(probes=replace(machine.probes(load=load), sys_path=[str(elsewhere), str(machine.site)]))
    assert seen["calls"] == [
        (f"onnxruntime.preload_dlls(cuda=True, cudnn=False, directory='{pip_dir}')",
         {"cuda": True, "cudnn": False, "directory": str(pip_dir)}),
    ]  # fmt: skip
    assert report.ready, report.verdict
    assert report.verdict.startswith("GPU ready: CUDA EP will load on GPU 0 (NVIDIA H200, sm_90); CUDA/cuDNN come")
    assert "onnxruntime.preload_dlls()" in report.verdict
    cublas = next(m for m in report.mapped if m.path.name == "libcublasLt.so.13")
    assert cublas.origin == "pip package" and "loaded by full path by onnxruntime.preload_dlls()" in cublas.why
    cudart = next(m for m in report.mapped if m.path.name == "libcudart.so.13")
    assert cudart.origin == "system" and "LD_LIBRARY_PATH" in cudart.why


def test_pip_only_libraries_without_preload_dlls(tmp_path) -> None:
    machine, pip_dir = _pip_only_machine(tmp_path, version="1.20.1")  # before preload_dlls() existed
    report = diagnose(probes=machine.probes(ort=_ort(version="1.20.1")))
    assert not report.ready
    assert report.cuda_preload is not None and not report.cuda_preload.calls
    assert "no preload_dlls()" in report.cuda_preload.reason
    assert "only in nvidia-* pip packages" in report.root_cause
    assert report.fix == f"export LD_LIBRARY_PATH={pip_dir}:$LD_LIBRARY_PATH"
    assert "libcublasLt.so.13: cannot open shared object file" in _check(report, "load.attempt").evidence


def test_cpu_build_shadowing_the_gpu_build(tmp_path) -> None:
    machine = _ready_machine(tmp_path)
    # `pip install onnxruntime` after onnxruntime-gpu: its files replace the GPU ones (providers_cuda stays)
    install_dist(
        machine.site,
        "onnxruntime",
        "1.31.1",
        {
            "onnxruntime/__init__.py": b"",
            "onnxruntime/capi/build_and_package_info.py": package_info("onnxruntime", "1.31.1", None),
        },
    )
    cpu = _ort(providers=("CPUExecutionProvider",), device="CPU")
    report = diagnose(probes=machine.probes(ort=cpu, load=_loaded([])))
    assert not report.ready
    dists = _check(report, "ort.distributions")
    assert dists.status is Status.FAIL
    assert "shadows onnxruntime-gpu" in dists.cause
    assert "uninstall -y onnxruntime onnxruntime-gpu" in dists.fix and "install onnxruntime-gpu==1.31.1" in dists.fix
    assert report.root_cause == dists.cause
    assert _check(report, "ort.build").status is Status.FAIL


def test_a_second_copy_in_another_folder(tmp_path) -> None:
    machine = _ready_machine(tmp_path)
    user_site = tmp_path / "user-site"
    install_dist(
        user_site,
        "onnxruntime",
        "1.30.0",
        {
            "onnxruntime/__init__.py": b"",
            "onnxruntime/capi/build_and_package_info.py": package_info("onnxruntime", "1.30.0", None),
        },
    )
    gpu_first = Probes(**{**machine.probes(load=_loaded([])).__dict__, "sys_path": [str(machine.site), str(user_site)]})
    report = diagnose(probes=gpu_first)
    assert report.ready  # the GPU build wins here...
    check = _check(report, "ort.distributions")
    assert check.status is Status.WARN  # ...but only through the path order
    assert "comes first on sys.path" in check.cause and "uninstall -y onnxruntime (the copies in" in check.fix
    cpu = _ort(version="1.30.0", providers=("CPUExecutionProvider",), device="CPU")
    cpu_first = Probes(
        **{**machine.probes(ort=cpu, load=_loaded([])).__dict__, "sys_path": [str(user_site), str(machine.site)]}
    )
    report = diagnose(probes=cpu_first)
    check = _check(report, "ort.distributions")
    assert check.status is Status.FAIL and "shadows onnxruntime-gpu" in check.cause
    assert report.root_cause == check.cause
    assert report.providers[0].from_shadowed  # the GPU build's needs are still analysed


def test_no_driver_beats_missing_libraries_which_beat_shadowing(tmp_path) -> None:
    machine = Machine(tmp_path)
    fake_ort(machine.site, cuda_needs=NEEDS)
    install_dist(
        machine.site,
        "onnxruntime",
        "1.31.1",
        {
            "onnxruntime/capi/build_and_package_info.py": package_info("onnxruntime", "1.31.1", None),
        },
    )
    machine.provide("libcuda.so.1")
    cpu = _ort(providers=("CPUExecutionProvider",), device="CPU")
    with_driver = diagnose(probes=machine.probes(ort=cpu))
    assert "libcublasLt.so.13" in with_driver.root_cause  # libraries first, shadowing listed too
    assert _check(with_driver, "ort.distributions").status is Status.FAIL
    no_driver = diagnose(probes=machine.probes(ort=cpu, nvml=FakeNvml(fail_init="missing")))
    assert no_driver.root_cause.startswith("no NVIDIA driver")


def test_driver_too_old_for_the_build(tmp_path) -> None:
    machine = _ready_machine(tmp_path)
    report = diagnose(probes=machine.probes(nvml=FakeNvml(driver="550.54.14", cuda=12040)))
    check = _check(report, "driver.cuda")
    assert check.status is Status.FAIL
    assert "CUDA 12.4" in check.cause and "CUDA 13" in check.cause
    assert report.root_cause == check.cause


def test_gpu_without_kernels_in_the_build(tmp_path) -> None:
    machine = Machine(tmp_path)
    fake_ort(machine.site, cuda_needs=NEEDS, cuda_source=fatbin_source([(2, 75), (2, 80), (2, 120)]))
    machine.provide(*NEEDS, *_lazy_libraries())
    report = diagnose(probes=machine.probes(nvml=FakeNvml([FakeGpu(cc=(9, 0))]), load=_loaded([])))
    check = _check(report, "gpu.arch:0")
    assert check.status is Status.FAIL
    assert "sm_75, sm_80, sm_120" in check.evidence and "sm_90" in check.cause
    assert report.root_cause == check.cause and not report.ready
    ok = diagnose(probes=machine.probes(nvml=FakeNvml([FakeGpu(cc=(8, 6))]), load=_loaded([])))
    assert _check(ok, "gpu.arch:0").status is Status.OK and ok.ready


def test_onnxruntime_not_installed(tmp_path) -> None:
    machine = Machine(tmp_path)
    machine.site.mkdir()
    machine.provide("libcuda.so.1")
    report = diagnose(
        probes=machine.probes(
            ort=lambda module_dir: OrtBuild(
                False, "no onnxruntime module on the Python path", None, None, None, (), None
            )
        )
    )
    assert not report.ready
    assert report.root_cause == "onnxruntime is not installed for this Python"
    assert report.fix.endswith("install 'onnxruntime-gpu[cuda,cudnn]' (what `pip install 'ortgpu[gpu]'` installs)")
    assert _check(report, "load.attempt").status is Status.SKIP


def test_report_is_json_and_progress_is_reported(tmp_path) -> None:
    machine = _ready_machine(tmp_path)
    seen: list[tuple[str, float | None]] = []
    report = diagnose(lambda message, fraction=None: seen.append((message, fraction)), probes=machine.probes())
    doc = json.loads(json.dumps(to_jsonable(report)))
    assert doc["verdict"] == report.verdict
    assert [c["id"] for c in doc["checks"]][:3] == ["platform.os", "python", "platform.glibc"]
    assert doc["providers"][0]["needs"][0]["soname"] == NEEDS[0]
    fractions = [f for _, f in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0


def _nvml_loadable() -> bool:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


@pytest.mark.skipif(_nvml_loadable(), reason="this machine has an NVIDIA driver")
def test_this_machine_without_a_driver_is_not_ready() -> None:
    report = diagnose()
    assert not report.ready and report.exit_code == 3
    assert report.verdict.startswith("not ready: no NVIDIA driver")
    assert report.fix
    for check in report.checks:
        if check.status in (Status.FAIL, Status.WARN):
            assert check.cause and check.fix, check.id
    import onnxruntime

    if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():
        assert _check(report, "ort.distributions").status is Status.FAIL  # the CPU-only build is named too


@pytest.mark.gpu
def test_gpu_machine_is_ready_and_names_the_mapped_files() -> None:
    import pynvml

    pynvml.nvmlInit()
    name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
    pynvml.nvmlShutdown()
    name = name.decode() if isinstance(name, bytes) else name
    report = diagnose()
    assert report.ready, report.verdict
    assert report.verdict.startswith("GPU ready: CUDA EP will load on GPU 0 (") and name in report.verdict
    components = {m.component for m in report.mapped}
    assert "CUDA runtime" in components, report.mapped
    if report.load_attempt is not None and report.load_attempt.conv:  # cuDNN is only loaded by the Conv session
        assert "cuDNN" in components, report.mapped
    assert all(m.path.is_file() for m in report.mapped)


def test_other_operating_systems_are_named_not_crashed_on(tmp_path) -> None:
    from ortgpu.env.platform_probe import probe_platform

    machine = _ready_machine(tmp_path)
    windows = probe_platform(system="Windows", machine="AMD64")
    report = diagnose(probes=Probes(**{**machine.probes().__dict__, "platform": windows}))
    assert not report.ready
    assert report.root_cause == "this-machine diagnosis covers Linux; this is Windows"
    assert "--package" in report.fix
    assert report.providers == () and report.load_attempt is None
