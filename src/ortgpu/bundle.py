"""`ortgpu bundle`: the exact set of files a C/C++ deployment of an ORT package needs, in one folder.

From a release archive, an extracted release, a wheel or the installed onnxruntime(-gpu) package: the ORT
libraries, the provider libraries asked for, and the CUDA / cuDNN / TensorRT libraries they need, found on this
machine (loader path, nvidia-* pip packages, ``--libs-from`` folders) and resolved transitively (cuDNN 9's
sub-libraries and NVRTC's builtins included: they are opened at run time, not linked). The folder gets a
manifest (every file with size, sha256 and why it is there; what the target system must provide; what is
missing and where to get it) and a README with the environment lines and a CMake snippet.

Nothing outside the output folder is written: the bundle is assembled in a temp folder next to it and renamed
into place. Archives are opened (checked, then extracted) by :mod:`ortgpu.env.archive`, the one reader of package
archives, in a private temp folder that is removed. Every name that comes out of the package (file names,
SONAME, DT_NEEDED, PE imports, VERSION_NUMBER) is untrusted: a bare file name or the bundle is refused; every
destination is checked to lie inside the bundle, with no link on the way and nothing there before it; files on
this machine are copied only when the loader search found them.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.errors import BadInputError
from ortgpu.untrusted import name_problem, printable, text_problem

if TYPE_CHECKING:  # pragma: no cover
    from ortgpu.config import ExecutionProvider
    from ortgpu.env.archive import OpenedPackage
    from ortgpu.env.package import PackageAnalysis, PackageLibrary

__all__ = [
    "BundleError",
    "BundleFile",
    "BundleManifest",
    "BundleRequest",
    "BundleResult",
    "FileKind",
    "MissingLibrary",
    "SystemRequirement",
    "Target",
    "create_bundle",
    "installed_wheel_folder",
    "providers_from_text",
    "readme_text",
]

Progress = Callable[[str, "float | None"], None]


class BundleError(BadInputError):
    """The bundle cannot be made from what was given (package, target, providers, output folder)."""


class Target(Enum):
    LINUX_X64 = "linux-x64"
    WIN_X64 = "win-x64"

    @property
    def is_windows(self) -> bool:
        return self is Target.WIN_X64


class FileKind(Enum):
    ORT_CORE = "ort core"
    ORT_PROVIDER = "ort provider"
    DEPENDENCY = "dependency"  # CUDA, cuDNN, TensorRT and what they need
    HEADER = "header"
    IMPORT_LIBRARY = "import library"  # onnxruntime.lib, to link on Windows
    LICENSE = "license"
    METADATA = "metadata"  # VERSION_NUMBER, GIT_COMMIT_ID


@dataclass(frozen=True)
class BundleFile:
    path: str  # relative to the bundle folder, posix separators
    size: int
    sha256: str | None  # None for a symbolic link
    kind: FileKind
    why: str
    origin: str  # package member, or the file on this machine it was copied from
    link_to: str | None = None  # a symbolic link (Linux sonames): the file it points at


@dataclass(frozen=True)
class MissingLibrary:
    name: str
    component: str  # "cuBLAS", "cuDNN", ...
    needed_by: str
    required: bool  # False: only some operators or an optional provider need it
    get_it: str


@dataclass(frozen=True)
class SystemRequirement:
    what: str  # "NVIDIA driver", "glibc", "VC++ runtime"
    minimum: str | None
    why: str


@dataclass(frozen=True)
class BundleManifest:
    ort_version: str | None
    source: str  # the package's file or folder name
    target: Target
    providers: tuple[str, ...]  # "cuda", "tensorrt"; empty: CPU EP only
    files: tuple[BundleFile, ...]
    missing: tuple[MissingLibrary, ...]
    system_requirements: tuple[SystemRequirement, ...]
    environment: dict[str, str]  # variable -> value to set (with <BUNDLE> for the bundle folder)
    complete: bool  # every required library is in the bundle
    loader_note: str = ""  # how the provider libraries find their CUDA libraries

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files if f.link_to is None)


@dataclass(frozen=True)
class BundleRequest:
    out: Path
    package: Path | None = None  # None: the installed onnxruntime(-gpu) wheel
    target: Target | None = None  # None: the package's own platform
    providers: tuple[ExecutionProvider, ...] | None = None  # None: every GPU provider the package has
    library_dirs: tuple[Path, ...] = ()  # searched first for CUDA/cuDNN/TensorRT libraries
    force: bool = False  # replace a non-empty output folder


@dataclass(frozen=True)
class BundleResult:
    out_dir: Path
    manifest: BundleManifest
    verification: str | None  # what the package analysis says of the bundle folder (same-platform only)
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def complete(self) -> bool:
        return self.manifest.complete


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
    from ortgpu.env.archive import open_package
    from ortgpu.env.package import analyse_package

    report = progress or (lambda message, fraction=None: None)
    out = Path(request.out)
    source = Path(request.package) if request.package is not None else installed_wheel_folder()
    _check_output(out, request.force, source, request.library_dirs)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    try:
        root = staging / "bundle"
        (root / "lib").mkdir(parents=True)
        with open_package(source, report, also=_is_extra_member) as opened:
            report("analysing the package", None)
            analysis = analyse_package(opened)
            target = _target(analysis, request.target)
            providers = _providers(analysis, request.providers)
            builder = _Builder(root, opened, analysis, target, providers, request.library_dirs, report)
            manifest, warnings = builder.build(source)
        _write_docs(root, manifest, out.name)
        final = _install(staging, root, out, request.force)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    verification = _verify(final, target)
    return BundleResult(out_dir=final, manifest=manifest, verification=verification, warnings=tuple(warnings))


def _check_output(out: Path, force: bool, source: Path, library_dirs: Sequence[Path]) -> None:
    """Refuse, before anything is read or written, an output folder that --force could not replace safely."""
    from ortgpu.output_paths import OutputPathError, check_writable_folder

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
    from ortgpu.env.package import PackagePlatform

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
    from ortgpu.config import ExecutionProvider

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


_SONAME_DEP = re.compile(r"^(?P<stem>.+?\.so)\.(?P<major>\d+)")
_CUDNN_SUB_LINUX = "libcudnn_*.so.{major}*"
_CUDNN_SUB_WINDOWS = "cudnn_*64_{major}.dll"
_EXTRA_MEMBER = re.compile(
    r"(?:[^/]+/)?(?:include/.+|LICENSE(?:\.txt)?|ThirdPartyNotices\.txt|lib/onnxruntime\.lib)", re.I
)
_UNTRUSTED_HINT = "a genuine ONNX Runtime package names only files: get the package from its official source"


def _is_extra_member(member: str) -> bool:
    """Headers, licences and onnxruntime.lib: what a bundle takes from a package besides the libraries."""
    return bool(_EXTRA_MEMBER.fullmatch(member))


def _refuse_unless_bare(name: str, what: str, where: object) -> None:
    """BundleError (exit 2) unless ``name`` is a bare file name; ``what`` says what it is ("SONAME of x")."""
    problem = name_problem(name)
    if problem is not None:
        raise BundleError(f"{where}: {what} {printable(name)} is not a bare file name ({problem})", _UNTRUSTED_HINT)


@dataclass
class _Dependency:
    name: str  # soname / DLL name the loader looks for
    source: Path | None  # where it is on this machine
    component: str
    needed_by: str
    why: str
    required: bool
    origin: str = ""


class _Builder:
    """Collects the files of one bundle into ``root``."""

    def __init__(
        self,
        root: Path,
        opened: OpenedPackage,
        analysis: PackageAnalysis,
        target: Target,
        providers: tuple[str, ...],
        library_dirs: Sequence[Path],
        report: Progress,
    ) -> None:
        self.root = root
        self.opened = opened
        self.analysis = analysis
        self.target = target
        self.providers = providers
        self.library_dirs = tuple(Path(d) for d in library_dirs)
        self.report = report
        self.files: list[BundleFile] = []
        self.warnings: list[str] = []
        self._names: set[str] = set()  # lower-case file names already in lib/

    # -- orchestration -------------------------------------------------------------------------------------------
    def build(self, source: Path) -> tuple[BundleManifest, list[str]]:
        from ortgpu.env.package import LibraryRole

        libraries = self._ort_libraries()
        self._check_names([lib for lib, _, _ in libraries])
        for index, (lib, why, kind) in enumerate(libraries):
            self.report(f"copying {lib.name}", index / max(len(libraries), 1) * 0.3)
            self._add_file(self.opened.files[lib.member], f"lib/{lib.name}", kind, why, f"package: {lib.member}")
        core = next(lib for lib, _, _ in libraries if lib.role is LibraryRole.CORE)
        if not self.target.is_windows:
            self._core_links(core)
        deps = self._dependencies([lib for lib, _, _ in libraries if lib.role is not LibraryRole.CORE])
        missing: list[MissingLibrary] = []
        for index, dep in enumerate(deps):
            if dep.source is None:
                missing.append(MissingLibrary(dep.name, dep.component, dep.needed_by, dep.required, self._get_it(dep)))
                continue
            self.report(f"copying {dep.name}", 0.3 + index / max(len(deps), 1) * 0.6)
            self._add_file(dep.source, f"lib/{dep.name}", FileKind.DEPENDENCY, dep.why, dep.origin)
        self._extras()
        self._metadata_files()
        requirements = self._system_requirements()
        manifest = BundleManifest(
            ort_version=self.analysis.version,
            source=source.name or str(source),
            target=self.target,
            providers=self.providers,
            files=tuple(sorted(self.files, key=lambda f: f.path)),
            missing=tuple(missing),
            system_requirements=requirements,
            environment=_environment(self.target),
            complete=not any(m.required for m in missing),
            loader_note=self._loader_note([lib for lib, _, _ in libraries]),
        )
        return manifest, self.warnings

    def _check_names(self, libraries: Sequence[PackageLibrary]) -> None:
        """Every name of the package the bundle would use, checked before one file is copied."""
        source = self.analysis.source
        for lib in libraries:
            _refuse_unless_bare(lib.name, "library file name", source)
            if lib.soname is not None:
                _refuse_unless_bare(lib.soname, f"SONAME of {lib.name}", source)
            for need in lib.needs:
                what = "DT_NEEDED entry" if lib.format == "elf" else "imported DLL"
                _refuse_unless_bare(need.name, f"{what} of {lib.name}", source)
        for value, what in ((self.analysis.version, "version"), (self.analysis.git_commit, "GIT_COMMIT_ID")):
            problem = text_problem(value, 64) if value else None
            if problem is not None:
                came_from = next(iter(self.analysis.version_evidence), "VERSION_NUMBER").split(":")[0]
                label = f"{what} (from {came_from})" if what == "version" else what
                raise BundleError(
                    f"{source}: the {label} {printable(value or '')} is unusable ({problem})",
                    "a genuine ONNX Runtime package states a plain version (1.20.1) and commit id: get the package "
                    "from its official source",
                )

    def _unusable_host_name(self, name: str, needer: str) -> bool:
        """True (with a warning) when a library found on this machine needs ``name`` that is not a bare file name."""
        problem = name_problem(name)
        if problem is None:
            return False
        self.warnings.append(
            f"{needer} (on this machine) asks for {printable(name)}, which is not a bare file name ({problem}): "
            "not copied; the target system must provide it"
        )
        return True

    def _destination(self, target: str) -> Path:
        """Where ``target`` (relative, posix) goes in the bundle: every part a bare name, no link on the way, inside
        the bundle folder, and nothing there yet (a file is never replaced)."""
        parts = target.split("/")
        for part in parts:
            problem = name_problem(part)
            if problem is not None:
                raise BundleError(f"cannot write {printable(target)} into the bundle ({problem})", _UNTRUSTED_HINT)
        folder = self.root
        for part in parts[:-1]:
            folder = folder / part
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                raise BundleError(
                    f"cannot write {printable(target)} into the bundle: {part} is not a folder", _UNTRUSTED_HINT
                )
            folder.mkdir(exist_ok=True)
        destination = folder / parts[-1]
        if not destination.parent.resolve().is_relative_to(self.root.resolve()):  # what the checks above rule out
            raise BundleError(f"{printable(target)} would be written outside the bundle", _UNTRUSTED_HINT)
        if os.path.lexists(destination):
            raise BundleError(
                f"{self.analysis.source}: two files of the bundle would be called {printable(target)}", _UNTRUSTED_HINT
            )
        return destination

    def _loader_note(self, libraries: Sequence[PackageLibrary]) -> str:
        if self.target.is_windows:
            return (
                "ORT finds its provider DLLs next to onnxruntime.dll; the CUDA DLLs must be on the DLL search path "
                "(PATH) or next to the executable."
            )
        providers = [lib for lib in libraries if lib.provider in ("cuda", "tensorrt")]
        if not providers:
            return "ORT's core library needs nothing beyond the C/C++ runtime."
        origin = [lib.name for lib in providers if any("$ORIGIN" in p for p in (*lib.runpath, *lib.rpath))]
        if len(origin) == len(providers):
            return (
                "The provider libraries carry RUNPATH $ORIGIN: they find the CUDA libraries next to them in lib/. "
                "Libraries opened at run time (cuDNN) follow the same rule; LD_LIBRARY_PATH makes it certain."
            )
        return (
            "ORT opens the provider libraries with dlopen and they carry no RUNPATH: their CUDA libraries must be on "
            "the loader path."
        )

    # -- ORT's own libraries ---------------------------------------------------------------------------------------
    def _ort_libraries(self) -> list[tuple[PackageLibrary, str, FileKind]]:
        from ortgpu.env.package import LibraryRole

        by_role: dict[LibraryRole, list[PackageLibrary]] = {}
        for lib in self.analysis.libraries:
            by_role.setdefault(lib.role, []).append(lib)
        cores = by_role.get(LibraryRole.CORE, [])
        if not cores:
            if LibraryRole.PYTHON_BINDING in by_role:
                raise BundleError(
                    f"{self.analysis.source}: this package has no C library (libonnxruntime / onnxruntime.dll): "
                    "its ORT is linked into the Python binding",
                    "give the C/C++ release archive of the same version (wheels ship the C library from 1.19 on "
                    "Windows and 1.31 on Linux)",
                )
            raise BundleError(f"{self.analysis.source}: no ONNX Runtime core library in it", "check the package")
        chosen: list[tuple[PackageLibrary, str, FileKind]] = [
            (_shallowest(cores), "ONNX Runtime core library: the C/C++ API your application links", FileKind.ORT_CORE)
        ]
        if self.providers and by_role.get(LibraryRole.PROVIDERS_SHARED):
            chosen.append(
                (
                    _shallowest(by_role[LibraryRole.PROVIDERS_SHARED]),
                    "bridge every provider library loads through (onnxruntime_providers_shared)",
                    FileKind.ORT_PROVIDER,
                )
            )
        wanted = {"cuda": LibraryRole.CUDA, "tensorrt": LibraryRole.TENSORRT}
        for name in self.providers:
            libs = by_role.get(wanted[name], [])
            if libs:
                what = "CUDA" if name == "cuda" else "TensorRT"
                chosen.append(
                    (
                        _shallowest(libs),
                        f"the {what} execution provider (loaded by ORT on demand)",
                        FileKind.ORT_PROVIDER,
                    )
                )
        if "tensorrt" in self.providers and "cuda" not in self.providers and by_role.get(LibraryRole.CUDA):
            chosen.append(
                (
                    _shallowest(by_role[LibraryRole.CUDA]),
                    "the CUDA execution provider: the TensorRT EP hands it the nodes TensorRT does not take",
                    FileKind.ORT_PROVIDER,
                )
            )
        return chosen

    def _core_links(self, core: PackageLibrary) -> None:
        """libonnxruntime.so.1 (its SONAME, what the loader looks for) and libonnxruntime.so (what -l links)."""
        names = [n for n in (core.soname, "libonnxruntime.so") if n and n != core.name]
        for name in dict.fromkeys(names):
            _refuse_unless_bare(name, f"SONAME of {core.name}", self.analysis.source)
            if name.lower() in self._names:
                raise BundleError(
                    f"{self.analysis.source}: the SONAME {printable(name)} of {core.name} names another library of the "
                    "bundle",
                    _UNTRUSTED_HINT,
                )
            link = self._destination(f"lib/{name}")
            try:
                link.symlink_to(core.name)
            except OSError:  # no symlinks here (Windows without the privilege): a copy serves the loader as well
                _copy_new(self.root / "lib" / core.name, link)
            self._names.add(name.lower())
            why = (
                "the SONAME the loader looks for" if name == core.soname else "the name the linker uses (-lonnxruntime)"
            )
            self.files.append(BundleFile(f"lib/{name}", 0, None, FileKind.ORT_CORE, why, "link", link_to=core.name))

    # -- dependencies --------------------------------------------------------------------------------------------
    def _dependencies(self, libraries: Sequence[PackageLibrary]) -> list[_Dependency]:
        if not self.target.is_windows and sys.platform.startswith("linux"):
            return self._linux_dependencies(libraries)
        return self._by_name_dependencies(libraries)

    def _linux_dependencies(self, libraries: Sequence[PackageLibrary]) -> list[_Dependency]:
        """Resolve the way ld.so would on this machine (plus --libs-from first), cuDNN/NVRTC run-time opens too."""
        from ortgpu.env.binary import read_elf
        from ortgpu.env.linux_loader import LibStatus, LoaderEnv, resolve_needs
        from ortgpu.env.package import NeedKind

        system = LoaderEnv.from_system()
        env = replace(system, ld_library_path=(*[str(d) for d in self.library_dirs], *system.ld_library_path))
        found: dict[str, _Dependency] = {}
        order: list[str] = []

        def take(results: Iterable[Any], needer: str, essential: bool) -> list[Path]:
            new_paths: list[Path] = []
            for result in results:
                # ld.so opens a DT_NEEDED that holds a '/' as a path (relative ones from the working folder): that is
                # not a loader search, and such a file is never copied. The package's own entries were refused by
                # _check_names; one of a library found on this machine is left to the target system, and said.
                if self._unusable_host_name(result.soname, result.requested_by):
                    continue
                if result.soname in found or self._skip(result.soname) or result.soname.lower() in self._names:
                    continue
                ok = result.status in (LibStatus.FOUND, LibStatus.PIP_ONLY) and result.path is not None
                component = self._component(result.soname)
                required = essential and (not result.lazy or component == "cuDNN")
                why = (
                    f"opened at run time by {needer}" if result.lazy else f"needed by {result.requested_by} (DT_NEEDED)"
                )
                dep = _Dependency(
                    name=result.soname,
                    source=Path(result.path).resolve() if ok else None,
                    component=component,
                    needed_by=needer if result.lazy else result.requested_by,
                    why=f"{component}: {why}",
                    required=required,
                    origin=_origin(result),
                )
                found[result.soname] = dep
                order.append(result.soname)
                if dep.source is not None:
                    new_paths.append(dep.source)
            return new_paths

        for lib in libraries:
            info = read_elf(self.opened.files[lib.member])
            # opened at run time: by ORT (lazy) or by another needed library (indirect: cuDNN's sub-libraries)
            lazy = [n.name for n in lib.needs if n.kind in (NeedKind.LAZY, NeedKind.INDIRECT)]
            take(resolve_needs(info, env, lazy=lazy, recursive=True), lib.name, True)
        # Libraries that others open at run time, next to the one that opens them: cuDNN 9's sub-libraries
        # (libcudnn.so.9 dlopens libcudnn_ops.so.9, ...) and NVRTC's builtins.
        for soname in list(order):
            dep = found[soname]
            if dep.source is None:
                continue
            for extra in _runtime_companions(soname, dep.source):
                if extra.name in found:
                    continue
                before = len(order)
                take(resolve_needs(read_elf(extra), env, recursive=True), extra.name, dep.required)
                found[extra.name] = _Dependency(
                    name=extra.name,
                    source=extra.resolve(),
                    component=dep.component,
                    needed_by=soname,
                    why=f"{dep.component}: opened at run time by {soname}",
                    required=dep.required,
                    origin=f"{extra.parent} (next to {soname})",
                )
                order.insert(before, extra.name)
        return [found[n] for n in order]

    def _by_name_dependencies(self, libraries: Sequence[PackageLibrary]) -> list[_Dependency]:
        """Another OS's libraries (or Windows): look each needed name up in --libs-from (and, on Windows, the DLL
        search folders), then what the found files import, transitively."""
        from ortgpu.env.binary import BinaryFormatError, ElfInfo, read_binary
        from ortgpu.env.package import NeedKind

        folders = list(self.library_dirs) + (_windows_dll_dirs() if sys.platform == "win32" else [])
        if not folders:
            self.warnings.append(
                f"no folder to take {self.target.value} CUDA libraries from on this machine: give them with --libs-from"
            )
        index = _name_index(folders)
        found: dict[str, _Dependency] = {}
        queue: list[tuple[str, str, bool, bool]] = []  # name, needed by, lazy, required
        for lib in libraries:
            for need in lib.needs:
                lazy = need.kind in (NeedKind.LAZY, NeedKind.INDIRECT)
                queue.append((need.name, lib.name, lazy, not lazy or need.component.value == "cuDNN"))
        while queue:
            name, needer, lazy, required = queue.pop(0)
            if self._unusable_host_name(name, needer):  # the package's own imports were checked by _check_names
                continue
            key = name.lower()
            if key in found or self._skip(name) or key in self._names:
                continue
            path = index.get(key)
            component = self._component(name)
            how = f"opened at run time by {needer}" if lazy else f"needed by {needer}"
            found[key] = _Dependency(
                name=path.name if path else name,
                source=path.resolve() if path else None,
                component=component,
                needed_by=needer,
                why=f"{component}: {how}",
                required=required,
                origin=str(path) if path else "",
            )
            if path is None:
                continue
            try:
                info = read_binary(path)
            except BinaryFormatError:
                continue
            needs = info.needed if isinstance(info, ElfInfo) else info.all_imports
            queue += [(n, path.name, False, required) for n in needs]
            for extra in _runtime_companions(name, path):
                queue.append((extra.name, path.name, True, required))
                index.setdefault(extra.name.lower(), extra)
        return list(found.values())

    def _skip(self, name: str) -> bool:
        """What the target system provides (C/C++ and VC++ runtimes, OS, the driver) and ORT's own files."""
        from ortgpu.env.package import Component, classify_library

        component = classify_library(name)
        return component in (
            Component.C_RUNTIME,
            Component.OS,
            Component.VC_RUNTIME,
            Component.CUDA_DRIVER,
            Component.ORT,
            Component.PYTHON,
        )

    @staticmethod
    def _component(name: str) -> str:
        from ortgpu.env.package import classify_library

        return classify_library(name).value

    def _get_it(self, dep: _Dependency) -> str:
        """Where to get a library that was not found (the bundle is then made again)."""
        cuda = self.analysis.cuda_major
        cudnn = self.analysis.cudnn_major
        trt = self.analysis.tensorrt_major
        pip = {
            "CUDA runtime": "nvidia-cuda-runtime",
            "cuBLAS": "nvidia-cublas",
            "cuFFT": "nvidia-cufft",
            "cuRAND": "nvidia-curand",
            "NVRTC": "nvidia-cuda-nvrtc",
        }
        if dep.component in pip and cuda:
            name = pip[dep.component] + (f"-cu{cuda}" if cuda < 13 else "")  # CUDA 13 wheels dropped the suffix
            return f"pip install {name}, or the CUDA {cuda}.x toolkit / redistributable"
        if dep.component == "cuDNN" and cuda:
            pin = f"=={cudnn}.*" if cudnn else ""
            return f"pip install 'nvidia-cudnn-cu{cuda}{pin}', or cuDNN {cudnn or ''} for CUDA {cuda} from NVIDIA"
        if dep.component == "TensorRT":
            which = f"TensorRT {trt}.x" if trt else "TensorRT"
            return f"{which} for CUDA {cuda or '?'} from NVIDIA (pip: tensorrt-cu{cuda or 'NN'}-libs)"
        return f"the package that ships {dep.name}"

    # -- headers, licences, metadata -----------------------------------------------------------------------------
    def _extras(self) -> None:
        """include/, the licences and onnxruntime.lib of a release archive or folder (not part of the analysis)."""
        members = [m for m in self.opened.members if _is_extra_member(m) and m in self.opened.files]
        if not any("include/" in m for m in members):
            self.warnings.append(
                "no include/ headers in this package: take them from the C/C++ release archive of the same version"
            )
        if not members:
            return
        prefix = _common_root(members)
        plan: dict[str, tuple[str, FileKind, str]] = {}
        for member in members:
            relative = member[len(prefix) :] if prefix else member
            if relative.lower().endswith(".lib"):
                plan[member] = (
                    f"lib/{posixpath.basename(relative)}",
                    FileKind.IMPORT_LIBRARY,
                    "import library to link onnxruntime.dll (MSVC)",
                )
            elif relative.startswith("include/"):
                plan[member] = (relative, FileKind.HEADER, "C/C++ API header")
            else:
                plan[member] = (relative, FileKind.LICENSE, "ONNX Runtime licence terms (ship them with the binaries)")
        # Extracted (archives) or found (folders) by open_package, the one checked reader; written to paths of our
        # own choosing under the bundle.
        for member, (target, kind, why) in plan.items():
            self._add_file(self.opened.files[member], target, kind, why, f"package: {member}")

    def _metadata_files(self) -> None:
        """VERSION_NUMBER / GIT_COMMIT_ID, so tools (and `ortgpu doctor --package`) know the version."""
        for name, value, why in (
            ("VERSION_NUMBER", self.analysis.version, "the ONNX Runtime version, as release archives state it"),
            ("GIT_COMMIT_ID", self.analysis.git_commit, "the ONNX Runtime commit the release was built from"),
        ):
            if not value:
                continue
            path = self._destination(name)
            with open(path, "x", encoding="utf-8") as handle:
                handle.write(f"{value}\n")
            self.files.append(_describe(path, name, FileKind.METADATA, why, "package"))

    def _add_file(self, source: Path, target: str, kind: FileKind, why: str, origin: str) -> None:
        destination = self._destination(target)
        try:
            _copy_new(source, destination)  # follows links: the bundle holds the real bytes
        except OSError as exc:
            raise BundleError(f"cannot copy {source}: {exc.strerror}", "check the file and its permissions") from None
        if target.startswith("lib/"):
            self._names.add(posixpath.basename(target).lower())
        self.files.append(_describe(destination, target, kind, why, origin))

    # -- what the target system must provide ---------------------------------------------------------------------
    def _system_requirements(self) -> tuple[SystemRequirement, ...]:
        from ortgpu.env.package import RequirementKind

        out: list[SystemRequirement] = []
        analysis = self.analysis
        if self.providers:
            driver = analysis.requirement(RequirementKind.DRIVER)
            cuda = f"CUDA {analysis.cuda_major}" if analysis.cuda_major else "CUDA"
            minimum = driver.value.removeprefix(">= ") if driver else None
            why = driver.evidence if driver else f"the {cuda} libraries need a driver that supports {cuda}"
            out.append(SystemRequirement("NVIDIA driver", minimum, f"libcuda / nvcuda.dll come with it; {why}"))
        if self.target.is_windows:
            vc = analysis.requirement(RequirementKind.VC_RUNTIME)
            minimum = analysis.vc_runtime if analysis.vc_runtime not in (None, "any") else None
            why = vc.evidence if vc else "ORT's DLLs import msvcp140.dll / vcruntime140*.dll"
            out.append(
                SystemRequirement(
                    "VC++ 2015-2022 redistributable (x64)",
                    minimum,
                    f"{why}; install https://aka.ms/vs/17/release/vc_redist.x64.exe",
                )
            )
        else:
            floor = _glibc_floor(self.root / "lib")
            out.append(
                SystemRequirement(
                    "glibc",
                    floor,
                    "the highest GLIBC_x.y symbol version any bundled library asks for"
                    if floor
                    else "no versioned glibc symbol found",
                )
            )
            out.append(SystemRequirement("libstdc++ / libgcc_s", None, "the C++ runtime of the distribution"))
        return tuple(out)


def _shallowest(libs: Sequence[PackageLibrary]) -> PackageLibrary:
    return min(libs, key=lambda lib: (lib.member.count("/"), lib.member))


def _origin(result: Any) -> str:
    where = f"{result.path}" if result.path else ""
    source = result.source.value if result.source else "?"
    return f"{where} (found via {source})"


def _runtime_companions(name: str, path: Path) -> list[Path]:
    """Files a library opens at run time from its own folder: cuDNN 9's sub-libraries, NVRTC's builtins."""
    folder = path.parent
    lower = name.lower()
    patterns: list[str] = []
    match = re.match(r"^libcudnn\.so\.(\d+)$", name)
    if match:
        patterns.append(_CUDNN_SUB_LINUX.format(major=match.group(1)))
    match = re.match(r"^cudnn64_(\d+)\.dll$", lower)
    if match:
        patterns.append(_CUDNN_SUB_WINDOWS.format(major=match.group(1)))
    if lower.startswith("libnvrtc.so."):
        patterns.append("libnvrtc-builtins.so*")
    if lower.startswith("nvrtc64_"):
        patterns.append("nvrtc-builtins64_*.dll")
    out: dict[str, Path] = {}
    for pattern in patterns:
        for hit in sorted(folder.glob(pattern)):
            if not hit.is_file():
                continue
            key = _soname_or_name(hit)
            if name_problem(key) is not None:  # a file of this machine with a SONAME no loader would ask for
                continue
            out.setdefault(key, hit.parent / key if (hit.parent / key).is_file() else hit)
    return list(out.values())


def _soname_or_name(path: Path) -> str:
    """The name the loader asks for: an ELF file's SONAME (libcudnn_ops.so.9 for libcudnn_ops.so.9.14.0)."""
    if path.suffix.lower() == ".dll":
        return path.name
    from ortgpu.env.binary import BinaryFormatError, read_elf

    try:
        return read_elf(path).soname or path.name
    except BinaryFormatError:
        return path.name


def _name_index(folders: Sequence[Path]) -> dict[str, Path]:
    index: dict[str, Path] = {}
    for folder in folders:
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_file():
                index.setdefault(entry.name.lower(), entry)
    return index


def _windows_dll_dirs() -> list[Path]:
    """Where a Windows process finds the CUDA DLLs: PATH, CUDA_PATH, the nvidia-* pip packages."""
    dirs = [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    cuda = os.environ.get("CUDA_PATH")
    if cuda:
        dirs += [Path(cuda) / "bin", Path(cuda) / "bin" / "x64"]
    for entry in sys.path:
        nvidia = Path(entry or ".") / "nvidia"
        if nvidia.is_dir():
            dirs += sorted(p for p in nvidia.glob("*/bin") if p.is_dir())
            dirs += sorted(p for p in nvidia.glob("*/bin/x86_64") if p.is_dir())
    return dirs


def _common_root(members: Sequence[str]) -> str:
    """The single top folder of a release archive ("onnxruntime-linux-x64-gpu-1.31.1/"), or ""."""
    tops = {m.split("/", 1)[0] for m in members if "/" in m}
    if len(tops) == 1 and all("/" in m for m in members):
        top = next(iter(tops))
        if not top.lower().startswith(("include", "lib")):
            return top + "/"
    return ""


def _copy_new(source: Path, destination: Path) -> None:
    """Copy the bytes of ``source`` to ``destination``, which must not exist (never replaced, never a link)."""
    with open(source, "rb") as src, open(destination, "xb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)


def _describe(path: Path, target: str, kind: FileKind, why: str, origin: str) -> BundleFile:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return BundleFile(target, path.stat().st_size, digest.hexdigest(), kind, why, origin)


def _glibc_floor(folder: Path) -> str | None:
    from ortgpu.env.binary import BinaryFormatError, read_elf
    from ortgpu.env.platform_probe import version_tuple

    floors = []
    for path in folder.iterdir():
        if path.is_symlink() or not path.is_file():
            continue
        try:
            floor = read_elf(path).glibc_floor
        except BinaryFormatError:
            continue
        if floor:
            floors.append(floor)
    return max(floors, key=version_tuple) if floors else None


def _environment(target: Target) -> dict[str, str]:
    if target.is_windows:
        return {"PATH": "<BUNDLE>\\lib;%PATH%"}
    return {"LD_LIBRARY_PATH": "<BUNDLE>/lib:$LD_LIBRARY_PATH"}


def _verify(folder: Path, target: Target) -> str | None:
    """What the package analysis says of the bundle on this machine; None when it is for another platform.

    The NVIDIA driver (and libcuda, which comes with it) is the target system's: left out of the verdict here.
    """
    from ortgpu.env.checks import Status
    from ortgpu.env.package import diagnose_package
    from ortgpu.errors import OrtgpuError

    try:
        report = diagnose_package(folder)
    except OrtgpuError as exc:  # the bundle is written; say why it could not be checked
        return f"not verified: {exc.one_line()}"
    if report.ready is None:
        return f"analysed statically: {report.verdict}"
    failed = [
        c
        for c in report.checks
        if c.status is Status.FAIL and c.id != "host.driver" and c.details.get("component") != "CUDA driver"
    ]
    if failed:
        return "incomplete: " + "; ".join(str(c.details.get("problem") or c.evidence) for c in failed)
    return f"complete: every library the package analysis asks for is in the bundle ({report.analysis.label})"


# ---------------------------------------------------------------------------------------------------------------
# README-bundle.md and manifest.json


def _write_docs(root: Path, manifest: BundleManifest, folder_name: str) -> None:
    import json

    from ortgpu.results import envelope

    (root / "manifest.json").write_text(json.dumps(envelope("bundle-manifest", manifest), indent=2) + "\n", "utf-8")
    (root / "README-bundle.md").write_text(readme_text(manifest, folder_name), encoding="utf-8")


def readme_text(manifest: BundleManifest, folder_name: str = "ort-bundle") -> str:
    """The README written into the bundle: contents, system needs, environment lines, CMake snippet."""
    core = next((f for f in manifest.files if f.kind is FileKind.ORT_CORE and f.link_to is None), None)
    lines = [
        f"# ONNX Runtime {manifest.ort_version or ''} bundle ({manifest.target.value})",
        "",
        f"Made by `ortgpu bundle` from `{manifest.source}`; providers: "
        f"{', '.join(manifest.providers) or 'none (CPU EP only)'}. "
        f"{'Complete' if manifest.complete else 'INCOMPLETE: see Missing below'}. "
        "`manifest.json` lists every file with its size, sha256 and why it is here.",
        "",
        "## Files",
        "",
        "| file | size | why |",
        "|---|---|---|",
    ]
    for f in manifest.files:
        if f.kind in (FileKind.HEADER,):
            continue
        size = f"-> {f.link_to}" if f.link_to else _human(f.size)
        lines.append(f"| `{f.path}` | {size} | {f.why} |")
    headers = [f for f in manifest.files if f.kind is FileKind.HEADER]
    if headers:
        lines.append(f"| `include/` ({len(headers)} files) | {_human(sum(f.size for f in headers))} | C/C++ headers |")
    lines += ["", "## The target system must provide", ""]
    for req in manifest.system_requirements:
        at_least = f" >= {req.minimum}" if req.minimum else ""
        lines.append(f"- {req.what}{at_least}: {req.why}")
    if manifest.missing:
        lines += ["", "## Missing (not found on the machine that made the bundle)", ""]
        for m in manifest.missing:
            need = "required" if m.required else "optional"
            lines.append(f"- `{m.name}` ({m.component}, {need}, for {m.needed_by}): {m.get_it}")
    lines += ["", "## Environment", "", manifest.loader_note, ""]
    if manifest.target.is_windows:
        lines += ["```bat", "set PATH=%BUNDLE%\\lib;%PATH%", "```", ""]
    else:
        lines += ["```sh", 'export LD_LIBRARY_PATH="$BUNDLE/lib:$LD_LIBRARY_PATH"', "```", ""]
    lines += ["## CMake", "", "```cmake", f'set(ORT_BUNDLE "${{CMAKE_CURRENT_LIST_DIR}}/{folder_name}")']
    if manifest.target.is_windows:
        lines += [
            "add_library(onnxruntime SHARED IMPORTED)",
            "set_target_properties(onnxruntime PROPERTIES",
            '  IMPORTED_LOCATION "${ORT_BUNDLE}/lib/onnxruntime.dll"',
            '  IMPORTED_IMPLIB "${ORT_BUNDLE}/lib/onnxruntime.lib"',
            '  INTERFACE_INCLUDE_DIRECTORIES "${ORT_BUNDLE}/include")',
            "target_link_libraries(your_app PRIVATE onnxruntime)",
            "# the DLLs next to the executable (the Windows loader looks there first)",
            "add_custom_command(TARGET your_app POST_BUILD COMMAND ${CMAKE_COMMAND} -E copy_directory",
            '  "${ORT_BUNDLE}/lib" "$<TARGET_FILE_DIR:your_app>")',
        ]
    else:
        location = f"${{ORT_BUNDLE}}/lib/{core.path.split('/')[-1]}" if core else "${ORT_BUNDLE}/lib/libonnxruntime.so"
        lines += [
            "add_library(onnxruntime SHARED IMPORTED)",
            "set_target_properties(onnxruntime PROPERTIES",
            f'  IMPORTED_LOCATION "{location}"',
            '  IMPORTED_SONAME "libonnxruntime.so.1"',
            '  INTERFACE_INCLUDE_DIRECTORIES "${ORT_BUNDLE}/include")',
            "target_link_libraries(your_app PRIVATE onnxruntime)",
            "# Without LD_LIBRARY_PATH: an executable DT_RPATH (not RUNPATH) also serves the libraries ORT dlopens",
            'set_target_properties(your_app PROPERTIES BUILD_RPATH "${ORT_BUNDLE}/lib" INSTALL_RPATH "$ORIGIN/lib")',
            'target_link_options(your_app PRIVATE "LINKER:--disable-new-dtags")',
        ]
    lines += ["```", ""]
    if not any(f.kind is FileKind.HEADER for f in manifest.files):
        lines += [
            "The package had no `include/` folder (a wheel): take the headers from the C/C++ release archive of "
            "the same version.",
            "",
        ]
    lines += ["Check it on the target machine with `ortgpu doctor --package <this folder>`.", ""]
    return "\n".join(lines)


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def providers_from_text(text: str) -> tuple[ExecutionProvider, ...]:
    """`--providers cuda,tensorrt` -> ExecutionProviders ("cpu" or "none" alone: no provider)."""
    from ortgpu.config import ExecutionProvider

    out: list[ExecutionProvider] = []
    for part in (p.strip().lower() for p in text.split(",")):
        if not part or part == "none":
            continue
        try:
            out.append(ExecutionProvider(part))
        except ValueError:
            choices = ", ".join(p.value for p in ExecutionProvider)
            raise BundleError(f"--providers: unknown provider {part!r}", f"choose among {choices}") from None
    return tuple(out)
