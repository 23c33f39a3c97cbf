"""Checks of the environment ORT reads on Windows: CUDA_PATH, PATH and ORT_CUDA_UNAVAILABLE."""

from __future__ import annotations

import re
from typing import Any

from ortgpu.doctor.checks.windows.fixes import FixEnv, install_cuda_fix, kb_fix
from ortgpu.doctor.verdict import Check, Status
from ortgpu.host.windows import WindowsHost
from ortgpu.host.windows_facts import HostFacts, PythonFlavour

__all__ = [
    "cuda_path_check",
    "disabled_check",
    "path_check",
]


def cuda_path_check(env: FixEnv, check_id: str, hard_error: bool, unresolved: bool) -> Check:
    """CUDA_PATH / CUDA_PATH_Vx_y: stale folders, the wrong major, and 1.18's hard error (W14)."""
    title = "CUDA_PATH and the CUDA toolkits"
    kits = env.cuda.toolkits
    want = env.build.cuda_major
    if not kits:
        return Check(
            check_id, title, Status.INFO, "CUDA_PATH is not set (ORT does not read it to find DLLs; PATH does)"
        )
    evidence = "; ".join(
        f"{k.variable}={k.root} ({'CUDA ' + k.version if k.version else 'version unknown'}, "
        + ("missing" if not k.exists else "bin on PATH" if k.bin_on_path else "bin not on PATH")
        + ")"
        for k in kits
    )
    details: dict[str, Any] = {"toolkits": {k.variable: k.root for k in kits}, "component": "CUDA runtime"}
    right = [k for k in kits if k.exists and k.major == want]
    problems, fixes = [], []
    for kit in (k for k in kits if not k.exists):
        problems.append(f"{kit.variable} points at {kit.root}, which does not exist (a removed toolkit)")
        if kit.variable == "CUDA_PATH" and right:
            fixes.append(
                f"point CUDA_PATH at {right[0].root} (admin PowerShell: "
                f"`[Environment]::SetEnvironmentVariable('CUDA_PATH', '{right[0].root}', 'Machine')`)"
            )
        else:
            fixes.append(
                f"remove the stale {kit.variable} (admin PowerShell: "
                f"`[Environment]::SetEnvironmentVariable('{kit.variable}', $null, 'Machine')`), or reinstall "
                "that toolkit"
            )
    main = next((k for k in kits if k.variable == "CUDA_PATH" and k.exists), None)
    if want and main is not None and main.major not in (None, want):
        problems.append(
            f"CUDA_PATH is CUDA {main.version}, this ORT needs CUDA {want}; the variable does not make ORT load "
            "anything, the DLL folder on PATH does"
        )
        if not right:
            fixes.append(install_cuda_fix(want, env))
    if hard_error and unresolved:
        problems.append(
            "with CUDA_PATH set and the CUDA EP unable to load, this ORT raises \"CUDA_PATH is set but CUDA wasn't "
            'able to be loaded" instead of falling back to CPU'
        )
        fixes.append("fix the DLLs the provider check names (" + kb_fix("FM-29") + ")")
    if not problems:
        return Check(check_id, title, Status.OK, evidence, details=details)
    details["problem"] = problems[0]
    return Check(
        check_id,
        title,
        Status.WARN,
        evidence,
        cause="; ".join(problems),
        fix="; ".join(dict.fromkeys(fixes)) or "keep CUDA_PATH at the toolkit whose bin folder is on PATH",
        details=details,
    )


_CUDA_NAMES = re.compile(r"^(cudart|cudnn|cublas|nvinfer|zlibwapi)", re.IGNORECASE)


def path_check(facts: HostFacts, check_id: str, host: WindowsHost) -> Check:
    """PATH hygiene: a shell older than the last installer, missing, quoted or %VAR% entries, CUDA bins (W15, W16)."""
    title = "PATH"
    entries = facts.path
    dead = [e for e in entries if not e.exists]
    odd = [e for e in entries if e.quoted or e.had_variables]
    bins = [e for e in entries if re.search(r"\\CUDA\\v\d+\.\d+\\bin", e.directory, re.IGNORECASE)]
    stale = [d for d in facts.stale_path if any(_CUDA_NAMES.match(n) for n in host.listdir(d))]
    evidence = f"{len(entries)} entries"
    if bins:
        evidence += "; CUDA bins in order: " + ", ".join(f"[{e.index}] {e.directory}" for e in bins)
    if dead:
        evidence += "; missing folders: " + ", ".join(f"[{e.index}] {e.directory}" for e in dead[:5])
    if odd:
        evidence += "; quoted or %VAR% entries: " + ", ".join(f"[{e.index}] {e.raw}" for e in odd[:5])
    if facts.python_flavour is PythonFlavour.STORE:
        evidence += "; Microsoft Store Python: PATH is not searched for DLLs"
    details = {"entries": [e.directory for e in entries], "stale": list(facts.stale_path)}
    if stale:
        return Check(
            check_id,
            title,
            Status.WARN,
            evidence + "; in the registry's PATH but not in this process's: " + ", ".join(stale),
            cause="this terminal or IDE was started before an installer added CUDA/cuDNN folders to PATH",
            fix="open a new terminal (restart the IDE, or sign out and in) so it gets the current PATH",
            details=details,
        )
    if odd:
        return Check(
            check_id,
            title,
            Status.WARN,
            evidence,
            cause="PATH entries with quotes or unexpanded %VAR% are taken literally by some loaders and tools "
            "(ortgpu strips and expands them; whether the Windows loader does is not verified)",
            fix="write those entries as plain folders without quotes (Settings > System > About > Advanced system "
            "settings > Environment Variables)",
            details=details,
        )
    return Check(check_id, title, Status.INFO if dead or len(bins) > 1 else Status.OK, evidence, details=details)


def disabled_check(value: str | None, reads_it: bool | None, check_id: str) -> Check | None:
    """ORT_CUDA_UNAVAILABLE silently disables the CUDA EP in the Python binding (W18)."""
    if not value:
        return None
    evidence = f"ORT_CUDA_UNAVAILABLE={value!r}"
    if reads_it is False:
        return Check(check_id, "ORT_CUDA_UNAVAILABLE", Status.INFO, evidence + "; this build does not read it")
    return Check(
        check_id,
        "ORT_CUDA_UNAVAILABLE",
        Status.FAIL,
        evidence,
        cause="ORT_CUDA_UNAVAILABLE is set: the Python binding never creates the CUDA EP and every session runs on CPU",
        fix="remove it: `Remove-Item Env:ORT_CUDA_UNAVAILABLE` (PowerShell) or `set ORT_CUDA_UNAVAILABLE=` (cmd), "
        "and delete it from the system environment variables",
        details={"problem": "ORT_CUDA_UNAVAILABLE is set", "component": "ONNX Runtime"},
    )
