"""`doctor --fix` plans: simulated environments diagnosed by the real doctor, then the pip commands planned for them."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from fake_libs import FakeNvml, build_lib, fake_ort, install_dist, needs_gcc, package_info

from ortgpu.env.doctor import OrtBuild, Probes, diagnose
from ortgpu.fix import Problem, plan_fixes
from ortgpu.fix.plan import gpu_requirement

PY = "/env/bin/python"
GPU_PROVIDERS = ("TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider")
NEEDS = ("libcublasLt.so.13", "libcublas.so.13", "libcudart.so.13", "libcuda.so.1")
NO_GPU = FakeNvml(fail_init="NVML Shared Library Not Found")


def _everything(version: str = "1.31.1") -> tuple[str, ...]:
    """NEEDS plus what the CUDA provider and cuDNN open at run time (the matrix's lazy libraries)."""
    from ortgpu.env.matrix import requirements_for

    row = requirements_for(version, 13)
    return (*NEEDS, *row.lazy_libraries, *row.indirect_libraries_linux)


pytestmark = needs_gcc


def _ort(providers=GPU_PROVIDERS, version="1.31.1", importable=True):
    def query(module_dir):
        if module_dir is None:
            return OrtBuild(False, "no onnxruntime module on the Python path", None, None, None, (), None)
        if not importable:
            return OrtBuild(False, "ImportError: libonnxruntime.so.1: cannot open", None, None, None, (), None)
        return OrtBuild(True, None, version, "fake", "GPU", providers, str(module_dir))

    return query


def _report(tmp_path: Path, nvml=None, ort=None, lib_dirs=(), sys_path=None):
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    lib = tmp_path / "lib"
    lib.mkdir(exist_ok=True)
    for soname in lib_dirs:
        build_lib(lib / soname)

    def no_load(libraries, **_kw):
        from ortgpu.env.load_attempt import LoadAttempt, LoadOutcome

        return LoadAttempt(LoadOutcome.LIBRARY_FAILED, (), "not loaded (test)", False, (), None, (), False,
                           None, None, 0, "", 0.0)  # fmt: skip

    probes = Probes(
        environ={"LD_LIBRARY_PATH": str(lib)}, sys_path=sys_path or [str(tmp_path / "site")], ldconfig_text="",
        loader_root=root, nvml=nvml or FakeNvml(), ort_query=ort or _ort(), proc_driver=root / "x",
        sys_pci=root / "y", load=no_load,
    )  # fmt: skip
    return diagnose(probes=probes)


def _plan(report, tmp_path, **kw):
    return plan_fixes(report, python=PY, prefix=tmp_path, externally_managed=None, **kw)


def _cmds(plan) -> list[str]:
    return [step.text() for step in plan.steps]


def _cpu_over_gpu(site: Path) -> None:
    """`pip install onnxruntime` after onnxruntime-gpu: the CPU build's files land in the same folder."""
    fake_ort(site, cuda_needs=NEEDS)
    files = {
        "onnxruntime/__init__.py": b"",
        "onnxruntime/capi/build_and_package_info.py": package_info("onnxruntime", "1.32.0", None),
    }
    install_dist(site, "onnxruntime", "1.32.0", files)


def test_both_builds_in_one_folder(tmp_path) -> None:
    _cpu_over_gpu(tmp_path / "site")
    cpu = _ort(("AzureExecutionProvider", "CPUExecutionProvider"), "1.32.0")
    plan = _plan(_report(tmp_path, ort=cpu, lib_dirs=_everything("1.32.0")), tmp_path)
    assert _cmds(plan) == [
        f"{PY} -m pip uninstall -y onnxruntime",
        f"{PY} -m pip install --force-reinstall --no-deps onnxruntime-gpu==1.31.1",
    ]
    assert {s.problem for s in plan.steps} == {Problem.CONFLICT}
    assert "onnxruntime 1.32.0, onnxruntime-gpu 1.31.1 are installed together: remove onnxruntime" in plan.steps[0].why
    assert shlex.split(plan.steps[1].text())[:3] == [PY, "-m", "pip"]  # copyable as it is


def test_a_distribution_outside_the_environment_is_a_manual_step(tmp_path) -> None:
    env, user = tmp_path / "env", tmp_path / "user-site"
    fake_ort(env / "site", cuda_needs=NEEDS)
    install_dist(user, "onnxruntime", "1.32.0", {"onnxruntime/__init__.py": b""})
    report = _report(tmp_path, ort=_ort(("CPUExecutionProvider",)), sys_path=[str(user), str(env / "site")])
    plan = plan_fixes(report, python=PY, prefix=env, externally_managed=None)
    assert len(plan.steps) == 1 and not plan.steps[0].runnable
    assert f"onnxruntime 1.32.0 is in {user}, outside this environment ({env})" in plan.steps[0].manual
    assert plan.runnable == ()


def test_installed_by_conda_is_never_uninstalled_by_pip(tmp_path) -> None:
    site = tmp_path / "site"
    _cpu_over_gpu(site)
    (site / "onnxruntime-1.32.0.dist-info" / "INSTALLER").write_text("conda\n")
    plan = _plan(_report(tmp_path, lib_dirs=_everything()), tmp_path)
    assert not plan.steps[0].runnable and "installed by conda, not pip" in plan.steps[0].manual


@pytest.mark.parametrize(
    ("driver", "requirement"),
    [("580.95.05", "onnxruntime-gpu[cuda,cudnn]"), ("550.54.15", "onnxruntime-gpu[cuda,cudnn]~=1.26.0")],
)
def test_cpu_build_where_nvml_sees_a_gpu(tmp_path, driver, requirement) -> None:
    fake_ort(tmp_path / "site", name="onnxruntime", cuda_version=None, cuda_needs=None)
    report = _report(tmp_path, nvml=FakeNvml(driver=driver), ort=_ort(("CPUExecutionProvider",)))
    plan = _plan(report, tmp_path)
    assert _cmds(plan) == [f"{PY} -m pip uninstall -y onnxruntime", f"{PY} -m pip install {shlex.quote(requirement)}"]
    assert plan.steps[1].problem is Problem.CPU_WHERE_GPU


def test_cpu_build_without_a_gpu_is_fine(tmp_path) -> None:
    fake_ort(tmp_path / "site", name="onnxruntime", cuda_version=None, cuda_needs=None)
    plan = _plan(_report(tmp_path, nvml=NO_GPU, ort=_ort(("CPUExecutionProvider",))), tmp_path)
    assert plan.steps == () and "NVIDIA driver" in plan.outside


def test_nothing_installed(tmp_path) -> None:
    (tmp_path / "site").mkdir()
    plan = _plan(_report(tmp_path, nvml=NO_GPU), tmp_path)
    assert _cmds(plan) == [f"{PY} -m pip install onnxruntime"] and plan.steps[0].problem is Problem.NO_ORT
    plan = _plan(_report(tmp_path), tmp_path)
    assert _cmds(plan) == [f"{PY} -m pip install 'onnxruntime-gpu[cuda,cudnn]'"]


def test_missing_cuda_wheels_install_the_builds_extras(tmp_path) -> None:
    fake_ort(tmp_path / "site", cuda_needs=NEEDS)
    report = _report(tmp_path, lib_dirs=("libcudart.so.13", "libcuda.so.1"))  # cuBLAS is nowhere
    plan = _plan(report, tmp_path)
    assert _cmds(plan) == [f"{PY} -m pip install 'onnxruntime-gpu[cuda,cudnn]==1.31.1'"]
    assert "libcublasLt.so.13" in plan.steps[0].why and plan.steps[0].problem is Problem.MISSING_CUDA_WHEELS


def test_missing_cuda_wheels_before_the_extras_existed(tmp_path) -> None:
    needs = ("libcublasLt.so.12", "libcudart.so.12", "libcudnn.so.9", "libcuda.so.1")
    fake_ort(tmp_path / "site", cuda_needs=needs, version="1.20.1", cuda_version="12.4")
    report = _report(tmp_path, ort=_ort(version="1.20.1"), lib_dirs=("libcuda.so.1",))
    plan = _plan(report, tmp_path)
    (command,) = _cmds(plan)
    assert command == f"{PY} -m pip install nvidia-cublas-cu12 nvidia-cuda-runtime-cu12 'nvidia-cudnn-cu12==9.*'"
    assert "LD_LIBRARY_PATH" in plan.steps[0].why


def test_broken_install_is_reinstalled(tmp_path) -> None:
    fake_ort(tmp_path / "site", cuda_needs=NEEDS)
    plan = _plan(_report(tmp_path, ort=_ort(importable=False)), tmp_path)
    assert _cmds(plan)[0] == f"{PY} -m pip install --force-reinstall --no-deps onnxruntime-gpu==1.31.1"


def test_externally_managed_python_blocks_running(tmp_path) -> None:
    (tmp_path / "site").mkdir()
    plan = plan_fixes(_report(tmp_path, nvml=NO_GPU), python=PY, prefix=tmp_path, externally_managed="managed by apt")
    assert plan.steps and plan.blocked == "managed by apt" and "cannot run here" in plan.note


def test_gpu_requirement_for_old_drivers() -> None:
    from ortgpu.env.nvml import DriverInfo

    assert gpu_requirement(DriverInfo(True, "470.82.01", "11.4", (), None))[0] == "onnxruntime-gpu~=1.18.0"
    assert gpu_requirement(DriverInfo(True, "400.1", None, (), None))[0] == "onnxruntime-gpu"
