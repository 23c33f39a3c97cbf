"""`doctor --package`: an ORT package's static analysis plus, when it is for this platform, its needs checked here.

`ortgpu.package.analysis` reads the package alone (platform-neutral: a Windows package analysed on Linux
gives the same answer); this module adds, when the package is for this machine's platform, the checks of each
need against this machine (Linux: :mod:`ortgpu.doctor.package_host`; Windows: the Windows checks), and the
verdict with the fix that matters most.
"""

from __future__ import annotations

import platform as platform_module
import posixpath
import sys
from dataclasses import dataclass
from pathlib import Path

from ortgpu.doctor.checks.windows import windows_package_checks
from ortgpu.doctor.package_host import linux_host_checks
from ortgpu.doctor.verdict import Check, Status, root_cause
from ortgpu.errors import ExitCode
from ortgpu.host.nvml import DriverInfo
from ortgpu.host.windows import RealWindowsHost, WindowsHost
from ortgpu.loader.linux import LoaderEnv
from ortgpu.package.analysis import (
    Component,
    Need,
    NeedKind,
    PackageAnalysis,
    PackageFlavour,
    PackagePlatform,
    RequirementKind,
    analyse_with_binaries,
    host_platform,
)
from ortgpu.package.archive import open_package
from ortgpu.progress import Progress, silent

__all__ = ["PackageReport", "diagnose_package"]


@dataclass(frozen=True)
class PackageReport:
    analysis: PackageAnalysis
    host: str  # this machine: "linux x86_64"
    checks: tuple[Check, ...]
    ready: bool | None  # None: the package is for another platform, analysed statically only
    verdict: str
    root_cause: str | None = None
    fix: str | None = None

    @property
    def exit_code(self) -> int:
        return int(ExitCode.ENVIRONMENT if self.ready is False else ExitCode.OK)


def diagnose_package(
    path: str | Path,
    progress: Progress | None = None,
    *,
    loader_env: LoaderEnv | None = None,
    driver: DriverInfo | None = None,
    host: PackagePlatform | None = None,
    windows: WindowsHost | None = None,
) -> PackageReport:
    """Analyse an ORT wheel, release archive or folder; check its needs on this machine when it is for it.

    `loader_env`, `driver`, `host` and `windows` (a WindowsHost) replace what is read from this machine
    (tests simulate others with them). A Windows package is resolved against a Windows host: this one
    when ortgpu runs on Windows, or the given `windows` host.
    """
    report = progress or silent
    with open_package(path, report) as opened:
        analysis, binaries = analyse_with_binaries(opened, report)
        if host is None and windows is not None:
            host = {"x64": PackagePlatform.WIN_X64, "arm64": PackagePlatform.WIN_ARM64}.get(windows.machines()[0])
        host = host or host_platform()
        static = _static_checks(analysis)
        if host is not None and host.is_windows and analysis.platform.is_windows:
            if windows is None and sys.platform == "win32":
                windows = RealWindowsHost()
            if windows is None:
                skip = Check(
                    id="host.match",
                    title="This machine",
                    status=Status.SKIP,
                    evidence="a Windows host was named but ortgpu runs elsewhere: no Windows machine to resolve the "
                    "DLL imports against; the needs above are what must be on PATH or next to the provider DLLs",
                )
                return _report(analysis, host.value, (*static, skip), ready=None)
            report("resolving the DLLs against this Windows machine", None)
            host_checks = windows_package_checks(analysis, opened, windows, driver=driver)
        elif host is not analysis.platform:
            here = host.value if host else _host_description()
            skip = Check(
                id="host.match",
                title="This machine",
                status=Status.SKIP,
                evidence=f"the package is for {analysis.platform.value}, this machine is {here}: analysed statically",
            )
            return _report(analysis, here, (*static, skip), ready=None)
        else:
            report("checking this machine", None)
            bundled = {posixpath.basename(m) for m in (*opened.members, *opened.links)}
            host_checks = linux_host_checks(analysis, binaries, bundled, env=loader_env, driver=driver)
    ready = not any(c.status is Status.FAIL for c in host_checks)
    return _report(analysis, host.value, (*static, *host_checks), ready=ready)


def _host_description() -> str:
    return f"{platform_module.system().lower()} {platform_module.machine()}"


# --- checks -------------------------------------------------------------------------------------------------------


def _static_checks(analysis: PackageAnalysis) -> list[Check]:
    checks = [
        Check(
            id="package.version",
            title="Version",
            status=Status.INFO,
            evidence=f"{analysis.label}"
            + (f" ({'; '.join(analysis.version_evidence)})" if analysis.version_evidence else "")
            + (f", commit {analysis.git_commit}" if analysis.git_commit else ""),
            details={"version": analysis.version, "distribution": analysis.distribution, "commit": analysis.git_commit},
        ),
        Check(
            id="package.platform",
            title="Platform",
            status=Status.INFO,
            evidence=f"{analysis.platform.value} ({analysis.platform_evidence})",
        ),
        Check(
            id="package.flavour",
            title="PackageFlavour",
            status=Status.INFO,
            evidence=f"{analysis.flavour.value}; providers: {', '.join(analysis.providers) or 'none (CPU EP only)'}",
        ),
    ]
    for note in analysis.notes:
        checks.append(
            Check(
                id="package.note",
                title="Package",
                status=Status.WARN,
                evidence=note,
                cause=note,
                fix="re-download the package from its official source; mixed files give unreliable results",
            )
        )
    for req in analysis.requirements:
        tag = " (from the version matrix)" if req.from_matrix else ""
        checks.append(
            Check(
                id=f"package.requires.{req.kind.name.lower()}",
                title=f"Needs {req.kind.value}",
                status=Status.INFO,
                evidence=f"{req.value}{tag}: {req.evidence}",
                details={"value": req.value, "from_matrix": req.from_matrix, "optional": req.optional},
            )
        )
    for lib in analysis.libraries:
        shown = [n for n in lib.needs if n.component not in (Component.C_RUNTIME, Component.OS)]
        text = ", ".join(_need_text(n) for n in shown) or "only OS and C/C++ runtime libraries"
        checks.append(
            Check(
                id=f"package.library.{lib.name}",
                title=f"{lib.role.value}: {lib.name}",
                status=Status.INFO,
                evidence=f"needs {text}",
                details={"member": lib.member, "needs": [n.name for n in lib.needs]},
            )
        )
    return checks


def _need_text(need: Need) -> str:
    if need.kind in (NeedKind.LAZY, NeedKind.INDIRECT):
        return f"{need.name} ({need.kind.value})"
    if need.kind is NeedKind.DELAY_LOAD:
        return f"{need.name} (delay-load)"
    return need.name


# --- verdict ------------------------------------------------------------------------------------------------------


def _summary(analysis: PackageAnalysis) -> str:
    parts = []
    for req in analysis.requirements:
        if req.kind in (RequirementKind.PYTHON, RequirementKind.DRIVER):
            continue
        text = f"{req.kind.value} {req.value}"
        if req.optional:
            text += " (TensorRT EP)"
        parts.append(text)
    return ", ".join(parts) or "no GPU libraries"


def _report(analysis: PackageAnalysis, host: str, checks: tuple[Check, ...], ready: bool | None) -> PackageReport:
    what = f"{analysis.label} ({analysis.platform.value}, {analysis.flavour.value})"
    if ready is None:
        verdict = f"{what} needs {_summary(analysis)}; analysed statically, not checked on this machine ({host})"
        return PackageReport(analysis, host, checks, None, verdict)
    failed = [c for c in checks if c.status is Status.FAIL]
    root = root_cause(checks)
    target = "its CUDA EP" if analysis.flavour is PackageFlavour.GPU else "its libraries"
    if root is None:
        verdict = f"ready: {what} can load {target} on this machine ({_summary(analysis)})"
        if analysis.flavour is not PackageFlavour.GPU:
            verdict += "; it has no CUDA provider"
        return PackageReport(analysis, host, checks, True, verdict)
    more = f" (+{len(failed) - 1} more)" if len(failed) > 1 else ""
    problem = root.details.get("problem") or root.evidence
    verdict = f"not ready: {problem}; {analysis.label} cannot load {target} here{more}"
    return PackageReport(analysis, host, checks, False, verdict, root_cause=root.cause, fix=root.fix)
