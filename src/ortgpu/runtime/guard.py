"""The one place ortgpu imports onnxruntime: when it is not installed, one error naming the extra to install and why.

ortgpu has no hard dependency on any ONNX Runtime distribution (installing it must never replace the user's
onnxruntime-gpu with the CPU build). Every library function that needs onnxruntime calls
:func:`import_onnxruntime`; ``doctor``, ``explain``, ``bundle --package`` never do, so they work without one.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass
from typing import Any

from ortgpu.errors import EnvironmentUnfitError

__all__ = ["InstallAdvice", "OrtImportError", "OrtNotInstalledError", "import_onnxruntime", "install_advice"]

# What each extra of ortgpu installs (pyproject.toml [project.optional-dependencies] says the same).
EXTRA_REQUIREMENTS = {
    "cpu": "onnxruntime",
    "gpu": "onnxruntime-gpu[cuda,cudnn]",
}

RUNNING_A_MODEL = "running a model (check, bench, demo, ortgpu.load())"


class OrtNotInstalledError(EnvironmentUnfitError):
    """No onnxruntime module on this Python's path (exit 3): the message names the extra to install and why."""


class OrtImportError(EnvironmentUnfitError):
    """onnxruntime is installed but `import onnxruntime` fails (exit 3): the doctor says why."""


@dataclass(frozen=True)
class InstallAdvice:
    """Which ortgpu extra this machine wants, why (what NVML says), and the pip lines for this interpreter."""

    extra: str  # "gpu" or "cpu"
    reason: str  # "NVML sees 1 NVIDIA GPU (NVIDIA H200, driver 580.95.05)" / "no NVIDIA GPU: <NVML's error>"
    requirement: str  # what the extra installs: "onnxruntime-gpu[cuda,cudnn]"
    python: str  # the interpreter the commands are for

    @property
    def extra_command(self) -> str:
        return f"pip install 'ortgpu[{self.extra}]'"

    @property
    def direct_command(self) -> str:
        return f"{self.python} -m pip install '{self.requirement}'"


def install_advice(driver: Any = None) -> InstallAdvice:
    """The extra to install here: `gpu` when NVML sees an NVIDIA GPU, else `cpu`. ``driver``: a DriverInfo (tests)."""
    if driver is None:
        from ortgpu.env.nvml import query_driver

        driver = query_driver()
    if driver.present and driver.gpus:
        names = ", ".join(sorted({g.name for g in driver.gpus}))
        count = len(driver.gpus)
        reason = f"NVML sees {count} NVIDIA GPU{'s' if count > 1 else ''} ({names}, driver {driver.version})"
        extra = "gpu"
    elif driver.present:
        reason = f"the NVIDIA driver {driver.version} answers but sees no GPU"
        extra = "cpu"
    else:
        reason = f"no NVIDIA GPU answers ({driver.error or 'NVML unavailable'})"
        extra = "cpu"
    return InstallAdvice(extra, reason, EXTRA_REQUIREMENTS[extra], sys.executable)


def not_installed_error(what: str = RUNNING_A_MODEL, driver: Any = None) -> OrtNotInstalledError:
    advice = install_advice(driver)
    return OrtNotInstalledError(
        f"onnxruntime is not installed for {advice.python}: {what} needs an ONNX Runtime; {advice.reason}, "
        f"so install the `{advice.extra}` extra",
        f"{advice.extra_command} (it installs {advice.requirement}; or `{advice.direct_command}`); "
        "`ortgpu doctor` works without it",
    )


def import_onnxruntime(what: str = RUNNING_A_MODEL) -> Any:
    """``import onnxruntime`` for a library function; raise OrtNotInstalledError / OrtImportError (exit 3) instead.

    ``what`` says in the message what needed it.
    """
    module = sys.modules.get("onnxruntime")
    if module is not None:
        return module
    if importlib.util.find_spec("onnxruntime") is None:
        raise not_installed_error(what)
    try:
        return importlib.import_module("onnxruntime")
    except (ImportError, OSError) as exc:
        raise OrtImportError(
            f"onnxruntime is installed but does not import: {type(exc).__name__}: {exc}",
            "run `ortgpu doctor`: it says which library or file is at fault",
        ) from None
