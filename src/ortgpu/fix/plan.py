"""The fix plan: from a doctor report, the exact `python -m pip` commands for problems that live in this environment.

Only what pip can repair inside this interpreter's environment is planned: no ORT, two ORT distributions
together, a CPU build where NVML sees a GPU, the nvidia-* CUDA/cuDNN wheels an onnxruntime-gpu build needs, a
broken install. A distribution outside the environment (user site, PYTHONPATH, the system's packages) or installed
by another tool (conda, the OS) gets a manual step naming it, never a command; drivers and system libraries are
never touched (the doctor's own fix says what to do about them).
"""

from __future__ import annotations

import shlex
import sys
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Literal

from ortgpu.doctor.cuda_fixes import component_of, pip_packages_for
from ortgpu.host.distributions import DistributionFlavour, OrtDistribution
from ortgpu.knowledge.matrix import BuildFlavour, all_builds, max_cuda_for_driver
from ortgpu.loader.linux import LibStatus
from ortgpu.versions import version_tuple

__all__ = ["FixPlan", "FixStep", "Problem", "gpu_requirement", "plan_fixes"]

_PIP_INSTALLERS = {"pip", "uv"}  # installers whose packages `python -m pip` may remove


class Problem(Enum):
    NO_ORT = "no-onnxruntime"  # nothing provides the onnxruntime module
    CONFLICT = "conflict"  # several distributions provide it
    CPU_WHERE_GPU = "cpu-build-with-gpu"  # only a CPU build, and NVML sees a GPU
    MISSING_CUDA_WHEELS = "missing-cuda-wheels"  # the onnxruntime-gpu build's CUDA/cuDNN libraries are nowhere
    BROKEN = "broken-install"  # installed, but `import onnxruntime` fails


@dataclass(frozen=True)
class FixStep:
    problem: Problem
    why: str  # one line: what is wrong and what this step does about it
    command: tuple[str, ...]  # argv for this interpreter's pip; empty for a manual step
    manual: str | None = None  # what the user must do instead, when ortgpu will not run anything

    @property
    def runnable(self) -> bool:
        return bool(self.command)

    def text(self) -> str:
        return shlex.join(self.command) if self.command else f"(by hand) {self.manual}"


@dataclass(frozen=True)
class FixPlan:
    python: str  # the interpreter every command is for
    environment: str  # its prefix (the venv / conda env / system Python)
    steps: tuple[FixStep, ...]
    blocked: str | None  # why the commands cannot run here (an externally managed Python); None: they can
    outside: str | None  # the doctor's root cause when it lies outside this environment (driver, system libraries)
    note: str  # one line summary

    @property
    def runnable(self) -> tuple[FixStep, ...]:
        return tuple(s for s in self.steps if s.runnable)


def _pip(python: str, *args: str) -> tuple[str, ...]:
    return (python, "-m", "pip", *args)


def gpu_requirement(driver: Any) -> tuple[str, str]:
    """(requirement, why) for onnxruntime-gpu on this driver: the newest PyPI build whose CUDA major it runs."""

    pypi = [b for b in all_builds() if b.flavour is BuildFlavour.DEFAULT]
    newest = max(pypi, key=lambda b: version_tuple(b.ort_version))
    version = driver.version if driver is not None else None
    supported = max_cuda_for_driver(version) if version else None
    if version and supported is None:
        return "onnxruntime-gpu", f"onnxruntime-gpu (driver {version} is older than every CUDA toolkit ortgpu knows)"
    major = version_tuple(supported)[0] if supported else None
    if major is None or major >= newest.cuda_major:
        why = f"driver {driver.version} runs CUDA {supported}" if supported else "driver version unknown"
        return "onnxruntime-gpu[cuda,cudnn]", f"the newest onnxruntime-gpu ({why})"
    fitting = [b for b in pypi if b.cuda_major <= major]
    if not fitting:
        return "onnxruntime-gpu", f"driver {driver.version} is older than every onnxruntime-gpu build needs"
    best = max(fitting, key=lambda b: version_tuple(b.ort_version))
    minor = ".".join(str(p) for p in version_tuple(best.ort_version)[:2])
    extras = "[cuda,cudnn]" if version_tuple(minor) >= (1, 21) else ""
    return (
        f"onnxruntime-gpu{extras}~={minor}.0",
        f"driver {driver.version} runs CUDA <= {supported}: onnxruntime-gpu {minor} is the newest CUDA "
        f"{best.cuda_major} build on PyPI",
    )


def _externally_managed() -> str | None:
    """PEP 668: pip refuses to install into a Python whose distributor manages it (outside any venv)."""
    if sys.prefix != sys.base_prefix:
        return None
    marker = Path(sysconfig.get_path("stdlib")) / "EXTERNALLY-MANAGED"
    if marker.is_file():
        return f"{sys.executable} is managed by the system ({marker}): create a venv and install there"
    return None


def _inside(dist: OrtDistribution, prefix: Path) -> bool:
    try:
        return dist.site_dir.resolve().is_relative_to(prefix.resolve())
    except OSError:
        return False


def _removable(dist: OrtDistribution, prefix: Path) -> str | None:
    """None when pip may uninstall it here; else why not."""
    if not _inside(dist, prefix):
        return f"{dist.name} {dist.version} is in {dist.site_dir}, outside this environment ({prefix})"
    if dist.installer and dist.installer.lower() not in _PIP_INSTALLERS:
        return f"{dist.name} {dist.version} was installed by {dist.installer}, not pip"
    return None


def _keep(found: Sequence[OrtDistribution], loaded: str | None) -> OrtDistribution:
    """Which distribution a conflict keeps: the CUDA build, else another accelerator build, else the one that loads."""
    rank = {DistributionFlavour.CUDA: 0, DistributionFlavour.CPU: 2}
    return min(found, key=lambda d: (rank.get(d.flavour, 1), d.name != loaded))


def _uninstall(dist: OrtDistribution, prefix: Path, python: str, problem: Problem, why: str) -> FixStep:
    refusal = _removable(dist, prefix)
    if refusal:
        return FixStep(problem, why, (), manual=f"uninstall {dist.name} yourself: {refusal}")
    return FixStep(problem, why, _pip(python, "uninstall", "-y", dist.name))


def _missing_cuda(report: Any) -> tuple[list[str], Any]:
    """Sonames the CUDA provider needs that exist nowhere (not even in pip folders), and that provider library."""

    cuda = next((p for p in report.providers if p.provider == "cuda" and not p.from_shadowed), None)
    if cuda is None:
        return [], None
    missing = [
        n.soname
        for n in cuda.needs
        if n.status in (LibStatus.MISSING, LibStatus.WRONG_MAJOR)
        and not n.system
        and component_of(n.soname) not in ("NVIDIA driver", "TensorRT")
    ]
    return list(dict.fromkeys(missing)), cuda


def _cuda_wheels_step(dist: OrtDistribution, report: Any, python: str) -> FixStep | None:
    missing, cuda = _missing_cuda(report)
    if not missing:
        return None
    names = ", ".join(missing)
    if version_tuple(dist.version) >= (1, 21):
        why = f"{dist.name} {dist.version} needs {names}: its [cuda,cudnn] extras install the matching nvidia-* wheels"
        return FixStep(
            Problem.MISSING_CUDA_WHEELS, why, _pip(python, "install", f"{dist.name}[cuda,cudnn]=={dist.version}")
        )
    packages = pip_packages_for(missing, cuda.cuda_major, cuda.cudnn_major)
    if not packages:
        return FixStep(
            Problem.MISSING_CUDA_WHEELS, f"{dist.name} {dist.version} needs {names}", (),
            manual=f"install CUDA {cuda.cuda_major} / cuDNN {cuda.cudnn_major} for this build from NVIDIA",
        )  # fmt: skip
    why = (
        f"{dist.name} {dist.version} needs {names}; it predates preload_dlls(), so after installing put "
        "site-packages/nvidia/*/lib on LD_LIBRARY_PATH"
    )
    return FixStep(Problem.MISSING_CUDA_WHEELS, why, _pip(python, "install", *packages))


def plan_fixes(
    report: Any,
    *,
    python: str | None = None,
    prefix: Path | None = None,
    externally_managed: str | Literal[False] | None = False,
) -> FixPlan:
    """The fix plan for a DoctorReport of this machine. ``python``/``prefix`` default to this interpreter's;
    ``externally_managed`` False asks PEP 668's marker, a string or None says it (tests)."""
    python = python or sys.executable
    prefix = Path(prefix or sys.prefix)
    blocked = _externally_managed() if externally_managed is False else externally_managed or None
    dists = report.distributions
    found = list(dists.distributions)
    gpu = bool(report.driver.present and report.driver.gpus)
    steps: list[FixStep] = []

    if not found and dists.module_dir is None:
        if gpu:
            requirement, why = gpu_requirement(report.driver)
            text = f"onnxruntime is not installed and NVML sees a GPU: install {why}"
        else:
            requirement, text = (
                "onnxruntime",
                "onnxruntime is not installed and NVML sees no GPU: install the CPU build",
            )
        steps.append(FixStep(Problem.NO_ORT, text, _pip(python, "install", requirement)))
    elif len(found) > 1:
        keep = _keep(found, dists.loaded)
        others = [d for d in found if d is not keep]
        shared = any(d.site_dir.resolve() == keep.site_dir.resolve() for d in others)
        listed = ", ".join(f"{d.name} {d.version}" for d in found)
        for other in others:
            why = f"{listed} are installed together: remove {other.name}, keep {keep.name}"
            steps.append(_uninstall(other, prefix, python, Problem.CONFLICT, why))
        if shared:
            why = f"{keep.name}'s files were overwritten by the other one: reinstall them (no dependency changes)"
            command = _pip(python, "install", "--force-reinstall", "--no-deps", f"{keep.name}=={keep.version}")
            steps.append(FixStep(Problem.CONFLICT, why, command))
        if keep.flavour is DistributionFlavour.CUDA:
            wheels = _cuda_wheels_step(keep, report, python)
            steps += [wheels] if wheels else []
    elif found and found[0].flavour is DistributionFlavour.CPU and gpu:
        cpu = found[0]
        requirement, why = gpu_requirement(report.driver)
        steps.append(
            _uninstall(
                cpu,
                prefix,
                python,
                Problem.CPU_WHERE_GPU,
                f"{cpu.name} {cpu.version} is the CPU build and NVML sees a GPU",
            )
        )
        steps.append(FixStep(Problem.CPU_WHERE_GPU, f"install {why}", _pip(python, "install", requirement)))
    elif found and not report.ort.importable:
        only = found[0]
        why = f"{only.name} {only.version} is installed but `import onnxruntime` fails: reinstall its files"
        refusal = _removable(only, prefix)
        command = _pip(python, "install", "--force-reinstall", "--no-deps", f"{only.name}=={only.version}")
        steps.append(FixStep(Problem.BROKEN, why, () if refusal else command, manual=refusal))
    elif found and found[0].flavour is DistributionFlavour.CUDA:
        wheels = _cuda_wheels_step(found[0], report, python)
        steps += [wheels] if wheels else []

    outside = None
    if not report.ready and report.root_cause and not steps:
        outside = report.root_cause
    if steps:
        note = f"{len(steps)} step(s) inside {prefix}" + (f"; cannot run here: {blocked}" if blocked else "")
    elif report.ready:
        note = "nothing to fix: the doctor says GPU ready"
    else:
        note = "nothing pip can fix inside this environment; the doctor's fix is the way"
    return FixPlan(python, str(prefix), tuple(steps), blocked, outside, note)
