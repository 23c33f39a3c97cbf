"""Simulated Linux machines for the doctor tests: fake ORT installs, NVML, libraries, and a load attempt."""

from __future__ import annotations

from pathlib import Path

from ortgpu.doctor.machine import DoctorReport, OrtBuild, Probes
from ortgpu.host.load_attempt import LoadAttempt, LoadOutcome
from tests.support.fake_libs import (
    FakeNvml,
    build_lib,
)

GPU_PROVIDERS = ("TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider")
NEEDS = ("libcublasLt.so.13", "libcublas.so.13", "libcudart.so.13", "libcuda.so.1")


def lazy_libraries() -> tuple[str, ...]:
    from ortgpu.knowledge.matrix import requirements_for

    requirements = requirements_for("1.31.1", 13)  # what the CUDA provider and cuDNN open at run time
    return tuple(requirements.lazy_libraries) + tuple(requirements.indirect_libraries_linux) if requirements else ()


def ort_query(version: str = "1.31.1", providers: tuple[str, ...] = GPU_PROVIDERS, device: str = "GPU"):
    def query(module_dir: Path | None) -> OrtBuild:
        return OrtBuild(True, None, version, "ORT Build Info: fake", device, providers, str(module_dir))

    return query


def loaded_attempt(mapped: list[Path]):
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
            ort_query=ort or ort_query(),
            proc_driver=self.root / "no-proc",
            sys_pci=self.root / "no-sys",
            load_timeout_s=60,
            **kwargs,
        )


def check_of(report: DoctorReport, check_id: str):
    return next(c for c in report.checks if c.id == check_id)
