"""`ortgpu bundle`: the exact set of files a C/C++ deployment of an ORT package needs, in one folder.

From a release archive, an extracted release, a wheel or the installed onnxruntime(-gpu) package: the ORT
libraries, the provider libraries asked for, and the CUDA / cuDNN / TensorRT libraries they need, found on this
machine (loader path, nvidia-* pip packages, ``--libs-from`` folders) and resolved transitively (cuDNN 9's
sub-libraries and NVRTC's builtins included: they are opened at run time, not linked). The folder gets a
manifest (every file with size, sha256 and why it is there; what the target system must provide; what is
missing and where to get it) and a README with the environment lines and a CMake snippet.

Nothing outside the output folder is written: the bundle is assembled in a temp folder next to it and renamed
into place. Archives are opened (checked, then extracted) by :mod:`ortgpu.package.archive`, the one reader of package
archives, in a private temp folder that is removed. Every name that comes out of the package (file names,
SONAME, DT_NEEDED, PE imports, VERSION_NUMBER) is untrusted: a bare file name or the bundle is refused; every
destination is checked to lie inside the bundle, with no link on the way and nothing there before it; files on
this machine are copied only when the loader search found them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ortgpu.bundle.builder import (
    BundleBuilder,
)
from ortgpu.bundle.files import (
    verify_bundle,
)
from ortgpu.bundle.model import (
    BundleError,
    BundleRequest,
    BundleResult,
    Target,
)
from ortgpu.bundle.names import (
    is_extra_member,
)
from ortgpu.bundle.readme import (
    write_docs,
)
from ortgpu.ep import ExecutionProvider
from ortgpu.output_paths import OutputPathError, check_writable_folder
from ortgpu.package.analysis import (
    PackageAnalysis,
    PackagePlatform,
    analyse_package,
)
from ortgpu.package.archive import open_package
from ortgpu.progress import Progress, silent

# ---------------------------------------------------------------------------------------------------------------


def installed_wheel_folder() -> Path:
    """The folder of the installed onnxruntime package (found without importing it)."""
    import importlib.util

    spec = importlib.util.find_spec("onnxruntime")
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise BundleError("no onnxruntime package is installed here", "give the package with --package PATH")
    return Path(locations[0])


def create_bundle(request: BundleRequest, progress: Progress | None = None) -> BundleResult:
    """Assemble the bundle in a temp folder beside ``request.out``, then rename it into place."""

    report = progress or silent
    out = Path(request.out)
    source = Path(request.package) if request.package is not None else installed_wheel_folder()
    _check_output(out, request.force, source, request.library_dirs)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    try:
        root = staging / "bundle"
        (root / "lib").mkdir(parents=True)
        with open_package(source, report, also=is_extra_member) as opened:
            report("analysing the package", None)
            analysis = analyse_package(opened)
            target = _target(analysis, request.target)
            providers = _providers(analysis, request.providers)
            builder = BundleBuilder(root, opened, analysis, target, providers, request.library_dirs, report)
            manifest, warnings = builder.build(source)
        write_docs(root, manifest, out.name)
        final = _install(staging, root, out, request.force)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    verification = verify_bundle(final, target)
    return BundleResult(out_dir=final, manifest=manifest, verification=verification, warnings=tuple(warnings))


def _check_output(out: Path, force: bool, source: Path, library_dirs: Sequence[Path]) -> None:
    """Refuse, before anything is read or written, an output folder that --force could not replace safely."""

    if out.is_symlink():
        raise BundleError(
            f"{out} is a symbolic link", "give the real folder: a bundle replaces its folder, never what a link names"
        )
    if out.exists() and not out.is_dir():
        raise BundleError(f"{out} exists and is not a folder", "give a folder path for --out")
    where, package = out.resolve(), source.resolve()
    if where == package or package.is_relative_to(where):
        said = "is" if where == package else "holds"
        raise BundleError(
            f"the output folder {out} {said} the package {source}",
            "give an output folder outside the package: replacing it would delete the package",
        )
    if where.is_relative_to(package):
        raise BundleError(f"the output folder {out} is inside the package {source}", "give a folder outside it")
    for folder in library_dirs:
        libs = Path(folder).resolve()
        if libs == where or libs.is_relative_to(where):
            raise BundleError(
                f"the output folder {out} holds the libs folder {folder}",
                "give an output folder that holds none of the inputs: replacing it would delete them",
            )
    if out.is_dir() and any(out.iterdir()) and not force:
        raise BundleError(f"{out} exists and is not empty", "give an empty or new folder, or --force to replace it")
    if not out.absolute().parent.is_dir():
        raise BundleError(f"{out.absolute().parent} does not exist", "create the parent folder first")
    try:
        check_writable_folder(out.absolute().parent)
    except OutputPathError as exc:
        raise BundleError(exc.message, exc.hint) from None


def _install(staging: Path, root: Path, out: Path, force: bool) -> Path:
    """Move the finished bundle into place; a replaced folder is removed only once the new one is there."""
    old = None
    if out.exists():
        if any(out.iterdir()) and not force:  # filled while we were working
            raise BundleError(f"{out} is not empty any more", "run again with --force to replace it")
        old = staging / "previous"
        os.replace(out, old)
    try:
        os.replace(root, out)
    except OSError:
        if old is not None:
            os.replace(old, out)
        raise
    return out.absolute()


def _target(analysis: PackageAnalysis, wanted: Target | None) -> Target:
    own = {PackagePlatform.LINUX_X86_64: Target.LINUX_X64, PackagePlatform.WIN_X64: Target.WIN_X64}.get(
        analysis.platform
    )
    if own is None:
        raise BundleError(
            f"{analysis.source}: a {analysis.platform.value} package; bundles are made for linux-x64 and win-x64",
            "give a linux-x64 or win-x64 package",
        )
    if wanted is not None and wanted is not own:
        raise BundleError(
            f"{analysis.source} is a {own.value} package; --target {wanted.value} needs the {wanted.value} package",
            f"give the {wanted.value} release archive or wheel of the same version",
        )
    return own


def _providers(analysis: PackageAnalysis, wanted: Sequence[ExecutionProvider] | None) -> tuple[str, ...]:
    have = [p for p in ("cuda", "tensorrt") if p in analysis.providers]
    if wanted is None:
        return tuple(have)
    chosen = [p.value for p in wanted if p is not ExecutionProvider.CPU]
    lacking = [p for p in chosen if p not in analysis.providers]
    if lacking:
        has = ", ".join(analysis.providers) or "none (a CPU build)"
        raise BundleError(
            f"{analysis.source} has no {', '.join(lacking)} provider library (it has: {has})",
            "choose --providers among the package's providers, or give a GPU package",
        )
    return tuple(dict.fromkeys(chosen))


# ---------------------------------------------------------------------------------------------------------------
# What goes in
