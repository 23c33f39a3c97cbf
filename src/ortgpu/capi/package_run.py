"""What `check --package` and `bench --package` share: the default EP, the [session] settings, the library record.

Both commands run the model through a package's own ONNX Runtime C library (:mod:`ortgpu.capi.runner`); this
module holds the choices they make the same way, so neither command imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ortgpu.capi import runner as capi_runner
from ortgpu.config import Config
from ortgpu.ep import ExecutionProvider
from ortgpu.host import nvml

__all__ = ["CApiLibrary", "default_gpu_reason", "default_package_ep", "package_session_settings"]

# [session] settings the C-API runner has no use for: runs already log at warning only (RunOptions).
_NOT_FOR_THE_RUNNER = frozenset({"run_log_severity_level"})


@dataclass(frozen=True)
class CApiLibrary:
    """The ONNX Runtime C library a ``--package`` run went through (its C API, in a child process).

    Not :class:`ortgpu.package.analysis.PackageLibrary`, which is one library file inside a package and its needs.
    """

    source: Path  # what was given: archive, folder, wheel or the library file
    library: Path  # the libonnxruntime used, as found in ``source`` (inside an archive: source/member)
    ort_version: str  # the library's own answer (OrtGetApiBase()->GetVersionString())
    api_version: int  # the C API version negotiated with it
    build_info: str | None  # the library's build string (git commit, build type), when it has GetBuildInfoString
    compiled_providers: tuple[str, ...]  # EPs compiled into the build: not proof they can load
    provider_setup_s: float  # loading the provider libraries: part of ``Timings.creation_s``

    @classmethod
    def from_run(cls, source: Path, run: capi_runner.PackageRunResult) -> CApiLibrary:
        """The library as a child run through it answered (its own version, API, build and providers)."""
        return cls(
            source=source,
            library=run.library,
            ort_version=run.ort_version,
            api_version=run.api_version,
            build_info=run.build_info,
            compiled_providers=run.compiled_providers,
            provider_setup_s=run.provider_setup_s,
        )


def package_session_settings(config: Config) -> dict[str, object]:
    """The config's [session] settings for the C-API runner, checked now: exit 2 for one the C API cannot set."""
    settings = {k: v for k, v in config.session.items() if k not in _NOT_FOR_THE_RUNNER}
    capi_runner.normalize_session_settings(settings)  # refuses before anything runs; the runner applies the result
    return settings


def default_package_ep() -> tuple[ExecutionProvider, str | None]:
    """CUDA when a driver sees a GPU (the library then has to prove it can enable it), else CPU and why."""
    driver = nvml.query_driver()
    if not driver.present:
        return ExecutionProvider.CPU, f"CPU: no NVIDIA driver answers ({driver.error})"
    if not driver.gpus:
        return ExecutionProvider.CPU, f"CPU: the NVIDIA driver {driver.version} sees no GPU"
    return ExecutionProvider.CUDA, None


def default_gpu_reason(member: str, refusal: str | None = None) -> str:
    """Why the default EP of a GPU host ended as it did: the library's CUDA EP loaded, or `refusal` is why not."""
    if refusal is None:
        return f"CUDA: a driver sees a GPU and {member} enables its CUDA EP"
    return f"CPU: {member} cannot enable the CUDA EP here: {refusal}"
