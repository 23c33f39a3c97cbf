"""Checks of the installed ONNX Runtime: distributions and shadowing, the build, each provider library's needs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ortgpu.doctor.checks.facts import OrtBuild, ProviderLibrary, pip
from ortgpu.doctor.cuda_fixes import component_of, library_fix
from ortgpu.doctor.verdict import Check, Status
from ortgpu.host.distributions import DistributionFlavour, DistributionsReport
from ortgpu.loader.linux import LibraryResolution, LibStatus

__all__ = ["distribution_checks", "ort_build_check", "provider_check", "unresolved_needs"]

_REQUIRED_LAZY = ("libcudnn",)  # lazily opened libraries the CUDA EP cannot run a Conv without


def _describe(dist: Any) -> str:
    return f"{dist.name} {dist.version} ({dist.flavour.value}) in {dist.site_dir}"


def distribution_checks(dists: DistributionsReport, ort: OrtBuild) -> list[Check]:
    found = dists.distributions
    details = {"distributions": [_describe(d) for d in found], "module_dir": str(dists.module_dir)}
    if not found and dists.module_dir is None:
        return [
            Check(
                "ort.installed",
                "ONNX Runtime installed",
                Status.FAIL,
                "no distribution provides the onnxruntime module on this Python's path",
                cause="onnxruntime is not installed for this Python",
                fix=f"{pip()} install 'onnxruntime-gpu[cuda,cudnn]' (what `pip install 'ortgpu[gpu]'` installs)",
                details=details,
            )
        ]
    out: list[Check] = []
    loaded = dists.loaded_distribution
    info = dists.package_info
    where = f"`import onnxruntime` loads {dists.module_dir}"
    if info and info.package_name:
        where += f" (files of {info.package_name} {info.version or ''}".rstrip()
        where += f", CUDA {info.cuda_version} build)" if info.cuda_version else ")"
    if len(found) > 1:
        out.append(_conflict_check(dists, where, details))
    elif found and found[0].flavour is not DistributionFlavour.CUDA:
        only = found[0]
        out.append(
            Check(
                "ort.distributions",
                "ONNX Runtime distributions",
                Status.FAIL,
                f"{_describe(only)}. {where}",
                cause=f"{only.name} is a {only.flavour.value} build: it has no CUDA execution provider",
                fix=f"{pip()} uninstall -y {only.name} && {pip()} install onnxruntime-gpu",
                details=details,
            )
        )
    else:
        evidence = (f"{_describe(found[0])}. " if found else "no dist-info found. ") + where
        out.append(Check("ort.distributions", "ONNX Runtime distributions", Status.OK, evidence, details=details))
    if not ort.importable:
        out.append(
            Check(
                "ort.installed",
                "ONNX Runtime imports",
                Status.FAIL,
                ort.error or "import failed",
                cause=f"`import onnxruntime` fails: {ort.error}",
                fix=f"{pip()} install --force-reinstall {loaded.name if loaded else 'onnxruntime-gpu'}; "
                "if the error names a library, `ortgpu explain` the message",
            )
        )
    return out


def _conflict_check(dists: DistributionsReport, where: str, details: dict[str, Any]) -> Check:
    """Several distributions provide `onnxruntime`. Sharing one folder mixes their files (always broken);
    in different folders the first on sys.path wins, which is fine only while that is the CUDA build."""
    found = dists.distributions
    loaded = dists.loaded_distribution
    gpu = next((d for d in found if d.flavour is DistributionFlavour.CUDA), None)
    evidence = "; ".join(_describe(d) for d in found) + f". {where}"
    title = "ONNX Runtime distributions"
    folders = {d.site_dir.resolve() for d in found}
    if len(folders) < len(found) or loaded is None:
        keep = gpu or found[0]
        shadow = (
            f"; the {loaded.flavour.value} build {loaded.name} shadows {gpu.name}"
            if loaded and gpu and loaded is not gpu
            else ""
        )
        names = " ".join(d.name for d in found)
        mixed = (
            "into one folder, so their files are mixed" if len(folders) < len(found) else "(which one loads is unclear)"
        )
        return Check(
            "ort.distributions",
            title,
            Status.FAIL,
            evidence,
            cause=f"{len(found)} distributions install the same onnxruntime module {mixed}{shadow}",
            fix=f"{pip()} uninstall -y {names} && {pip()} install {keep.name}=={keep.version}",
            details=details,
        )
    others = [d for d in found if d is not loaded]
    if gpu is not None and loaded.flavour is not DistributionFlavour.CUDA:
        return Check(
            "ort.distributions",
            title,
            Status.FAIL,
            evidence,
            cause=f"the {loaded.flavour.value} build {loaded.name} in {loaded.site_dir} shadows {gpu.name} in "
            f"{gpu.site_dir} (it comes first on sys.path)",
            fix=f"{pip()} uninstall -y {loaded.name} (the copy in {loaded.site_dir})",
            details=details,
        )
    return Check(
        "ort.distributions",
        title,
        Status.WARN,
        evidence,
        cause=f"{loaded.name} wins only because {loaded.site_dir} comes first on sys.path; with another path "
        f"order (no PYTHONPATH, another venv) {others[0].name} {others[0].version} loads instead",
        fix=f"{pip()} uninstall -y {' '.join(d.name for d in others)} (the copies in "
        f"{', '.join(sorted({str(d.site_dir) for d in others}))})",
        details=details,
    )


def ort_build_check(dists: DistributionsReport, ort: OrtBuild) -> Check:
    if not ort.importable:
        return Check("ort.build", "ONNX Runtime build", Status.SKIP, "onnxruntime does not import")
    providers = ", ".join(ort.available_providers) or "none"
    evidence = f"ORT {ort.version}, get_device()={ort.device}, providers compiled in: {providers}"
    if ort.build_info:
        evidence += f"; {ort.build_info}"
    details = {"build_info": ort.build_info, "available_providers": list(ort.available_providers)}
    if "CUDAExecutionProvider" in ort.available_providers:
        return Check("ort.build", "ONNX Runtime build", Status.OK, evidence, details=details)
    gpu = next((d for d in dists.distributions if d.flavour is DistributionFlavour.CUDA), None)
    if gpu is not None:
        return Check(
            "ort.build",
            "ONNX Runtime build",
            Status.FAIL,
            evidence,
            cause=f"{gpu.name} is installed but the onnxruntime that imports is not a CUDA build "
            "(another distribution's files replaced or shadow it)",
            fix=f"{pip()} uninstall -y {' '.join(d.name for d in dists.distributions)} && "
            f"{pip()} install {gpu.name}=={gpu.version}",
            details=details,
        )
    # No GPU distribution at all: the distributions check already names the fix; this one states facts.
    return Check("ort.build", "ONNX Runtime build", Status.INFO, evidence + " (no CUDA EP)", details=details)


def unresolved_needs(provider: ProviderLibrary) -> tuple[list[LibraryResolution], list[LibraryResolution]]:
    """(blocking, optional) unresolved needs. A missing lazy library blocks only when it is cuDNN."""
    blocking, optional = [], []
    for need in provider.needs:
        if need.ok or need.system or need.soname.startswith("libcuda.so"):
            continue  # the C runtime is judged by the load attempt, the driver library by the driver check
        if need.lazy and not need.soname.startswith(_REQUIRED_LAZY):
            optional.append(need)
        else:
            blocking.append(need)
    return blocking, optional


def _need_text(need: LibraryResolution) -> str:
    if need.status is LibStatus.WRONG_MAJOR:
        others = ", ".join(p.name for p in need.other_versions[:3])
        return f"{need.soname} (wrong major: only {others})"
    if need.status is LibStatus.PIP_ONLY:
        return f"{need.soname} (only in pip package {need.path.parent if need.path else '?'})"
    if need.other_versions:
        return f"{need.soname} (missing; {need.other_versions[0].name} exists without that link: run `sudo ldconfig`)"
    return f"{need.soname} (missing)"


def provider_check(
    provider: ProviderLibrary, dists: DistributionsReport, ort: OrtBuild, requirements: Any, preload: Any = None
) -> Check:
    """``preload``: the PreloadPlan of ortgpu's sessions; libraries only in pip folders it covers are a warning."""

    title = f"{provider.path.name} needs"
    check_id = f"ort.provider.{provider.provider}"
    blocking, optional = unresolved_needs(provider)
    relevant = [n for n in provider.needs if not n.system]
    found = [n for n in relevant if n.ok]
    evidence = f"{len(found)}/{len(relevant)} CUDA-side libraries resolve"
    if any(n.soname.startswith("libcuda.so") and not n.ok for n in relevant):
        evidence += " (libcuda.so.1 is missing: see the NVIDIA driver check)"
    if provider.cuda_major:
        evidence += f"; built for CUDA {provider.cuda_major}"
    if provider.cudnn_major:
        evidence += f", cuDNN {provider.cudnn_major}"
    if provider.tensorrt_major:
        evidence += f", TensorRT {provider.tensorrt_major}"
    if provider.from_shadowed:
        evidence += " (read from the shadowed GPU distribution)"
    if provider.provider == "cuda" and requirements is not None and not requirements.confirmed:
        evidence += "; lazily opened libraries come from an unconfirmed matrix row"
    details = {"path": str(provider.path), "needs": [n.soname for n in provider.needs]}
    gpu_dist = next((d for d in dists.distributions if d.flavour is DistributionFlavour.CUDA), None)
    ort_version = gpu_dist.version if gpu_dist else ort.version
    distribution = gpu_dist.name if gpu_dist else "onnxruntime-gpu"

    def fix_for(problems: Sequence[LibraryResolution]) -> str:
        return library_fix(
            problems,
            ort_version=ort_version,
            distribution=distribution,
            cuda_major=provider.cuda_major,
            cudnn_major=provider.cudnn_major,
        )

    if provider.provider == "tensorrt":
        problems = blocking + optional
        if not problems:
            return Check(check_id, title, Status.OK, evidence, details=details)
        trt = [n for n in problems if component_of(n.soname) == "TensorRT"]
        fix = fix_for(problems)
        if trt and provider.cuda_major:
            fix = (
                f"pip install tensorrt-cu{provider.cuda_major} and export "
                "LD_LIBRARY_PATH=<site-packages>/tensorrt_libs:$LD_LIBRARY_PATH, or install TensorRT "
                f"{provider.tensorrt_major or ''} from NVIDIA".rstrip()
            )
            if len(trt) < len(problems):
                fix += "; the CUDA libraries as for the CUDA EP"
        return Check(
            check_id,
            title,
            Status.WARN,
            evidence + ": " + "; ".join(_need_text(n) for n in problems),
            cause="the TensorRT EP cannot load (the CUDA EP does not need these)",
            fix=f"only if you use the TensorRT EP: {fix}",
            details=details,
        )
    if blocking:
        wrong = [n for n in blocking if n.status is LibStatus.WRONG_MAJOR]
        cause = "the CUDA EP cannot load: " + ", ".join(n.soname for n in blocking) + " not found by the loader"
        if wrong and provider.cuda_major:
            cause += f" (this machine has another CUDA major; this ORT needs CUDA {provider.cuda_major})"
        if all(n.status is LibStatus.PIP_ONLY for n in blocking):
            cause = (
                "the CUDA EP cannot load by itself: "
                + ", ".join(n.soname for n in blocking)
                + " are only in nvidia-* pip packages, which the loader does not search"
            )
            covered = preload is not None and all(n.path is not None and preload.covers(n.path) for n in blocking)
            if covered:
                return Check(
                    check_id,
                    title,
                    Status.WARN,
                    evidence + ": " + "; ".join(_need_text(n) for n in blocking),
                    cause=cause
                    + "; ortgpu loads them first with "
                    + "; ".join(preload.texts())
                    + " (ortgpu.load, check, bench), so only code of your own needs that call",
                    fix=fix_for(blocking),
                    details=details,
                )
        return Check(
            check_id,
            title,
            Status.FAIL,
            evidence + ": " + "; ".join(_need_text(n) for n in blocking),
            cause=cause,
            fix=fix_for(blocking),
            details=details,
        )
    if optional:
        return Check(
            check_id,
            title,
            Status.WARN,
            evidence + ": optional " + "; ".join(_need_text(n) for n in optional),
            cause="libraries the CUDA EP opens only for some operators (FFT, random, runtime compilation) are missing",
            fix=fix_for(optional),
            details=details,
        )
    return Check(check_id, title, Status.OK, evidence, details=details)
