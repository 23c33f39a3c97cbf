"""Checks of a Windows host, for `doctor` and `doctor --package`: CPU, VC++ runtime, every DLL, CUDA_PATH, driver.

Each check judges facts from ortgpu.host.windows and the search-order emulation of
ortgpu.loader.windows: the CPU and emulation, the VC++ runtime that will load, each DLL ORT's
libraries need, CUDA_PATH and PATH, ORT_CUDA_UNAVAILABLE, the driver and its model, other
onnxruntime.dll copies, and a real LoadLibraryExW attempt. Fixes are written for PowerShell/cmd
users; fix texts the knowledge base already has (FM-24, FM-25, FM-28, FM-29, FM-31, FM-59, FM-70)
are reused by id.
"""

from ortgpu.doctor.checks.windows.diagnose import (
    WindowsDiagnosis,
    diagnose_windows,
    platform_info,
    windows_package_checks,
)

__all__ = [
    "WindowsDiagnosis",
    "diagnose_windows",
    "platform_info",
    "windows_package_checks",
]
