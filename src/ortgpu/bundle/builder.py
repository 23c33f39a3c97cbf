"""Resolving what a bundle holds: the package's libraries and, transitively, every CUDA/cuDNN library they need."""

from __future__ import annotations

import os
import posixpath
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ortgpu.binfmt.binary import BinaryFormatError, ElfInfo, read_binary, read_elf
from ortgpu.bundle.files import (
    common_root,
    copy_new,
    describe_file,
    environment_lines,
    glibc_floor,
    name_index,
    origin_of,
    runtime_companions,
    shallowest,
    windows_dll_dirs,
)
from ortgpu.bundle.model import (
    BundleError,
    BundleFile,
    BundleManifest,
    FileKind,
    MissingLibrary,
    SystemRequirement,
    Target,
)
from ortgpu.bundle.names import (
    UNTRUSTED_HINT,
    is_extra_member,
    refuse_unless_bare,
)
from ortgpu.loader.linux import LibStatus, LoaderEnv, resolve_needs
from ortgpu.package.analysis import (
    Component,
    LibraryRole,
    NeedKind,
    PackageAnalysis,
    PackageLibrary,
    RequirementKind,
    classify_library,
)
from ortgpu.package.archive import OpenedPackage
from ortgpu.progress import Progress
from ortgpu.untrusted import name_problem, printable, text_problem


@dataclass
class _Dependency:
    name: str  # soname / DLL name the loader looks for
    source: Path | None  # where it is on this machine
    component: str
    needed_by: str
    why: str
    required: bool
    origin: str = ""


class BundleBuilder:
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
            environment=environment_lines(self.target),
            complete=not any(m.required for m in missing),
            loader_note=self._loader_note([lib for lib, _, _ in libraries]),
        )
        return manifest, self.warnings

    def _check_names(self, libraries: Sequence[PackageLibrary]) -> None:
        """Every name of the package the bundle would use, checked before one file is copied."""
        source = self.analysis.source
        for lib in libraries:
            refuse_unless_bare(lib.name, "library file name", source)
            if lib.soname is not None:
                refuse_unless_bare(lib.soname, f"SONAME of {lib.name}", source)
            for need in lib.needs:
                what = "DT_NEEDED entry" if lib.format == "elf" else "imported DLL"
                refuse_unless_bare(need.name, f"{what} of {lib.name}", source)
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
                raise BundleError(f"cannot write {printable(target)} into the bundle ({problem})", UNTRUSTED_HINT)
        folder = self.root
        for part in parts[:-1]:
            folder = folder / part
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                raise BundleError(
                    f"cannot write {printable(target)} into the bundle: {part} is not a folder", UNTRUSTED_HINT
                )
            folder.mkdir(exist_ok=True)
        destination = folder / parts[-1]
        if not destination.parent.resolve().is_relative_to(self.root.resolve()):  # what the checks above rule out
            raise BundleError(f"{printable(target)} would be written outside the bundle", UNTRUSTED_HINT)
        if os.path.lexists(destination):
            raise BundleError(
                f"{self.analysis.source}: two files of the bundle would be called {printable(target)}", UNTRUSTED_HINT
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
            (shallowest(cores), "ONNX Runtime core library: the C/C++ API your application links", FileKind.ORT_CORE)
        ]
        if self.providers and by_role.get(LibraryRole.PROVIDERS_SHARED):
            chosen.append(
                (
                    shallowest(by_role[LibraryRole.PROVIDERS_SHARED]),
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
                        shallowest(libs),
                        f"the {what} execution provider (loaded by ORT on demand)",
                        FileKind.ORT_PROVIDER,
                    )
                )
        if "tensorrt" in self.providers and "cuda" not in self.providers and by_role.get(LibraryRole.CUDA):
            chosen.append(
                (
                    shallowest(by_role[LibraryRole.CUDA]),
                    "the CUDA execution provider: the TensorRT EP hands it the nodes TensorRT does not take",
                    FileKind.ORT_PROVIDER,
                )
            )
        return chosen

    def _core_links(self, core: PackageLibrary) -> None:
        """libonnxruntime.so.1 (its SONAME, what the loader looks for) and libonnxruntime.so (what -l links)."""
        names = [n for n in (core.soname, "libonnxruntime.so") if n and n != core.name]
        for name in dict.fromkeys(names):
            refuse_unless_bare(name, f"SONAME of {core.name}", self.analysis.source)
            if name.lower() in self._names:
                raise BundleError(
                    f"{self.analysis.source}: the SONAME {printable(name)} of {core.name} names another library of the "
                    "bundle",
                    UNTRUSTED_HINT,
                )
            link = self._destination(f"lib/{name}")
            try:
                link.symlink_to(core.name)
            except OSError:  # no symlinks here (Windows without the privilege): a copy serves the loader as well
                copy_new(self.root / "lib" / core.name, link)
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
                    origin=origin_of(result),
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
            for extra in runtime_companions(soname, dep.source):
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

        folders = list(self.library_dirs) + (windows_dll_dirs() if sys.platform == "win32" else [])
        if not folders:
            self.warnings.append(
                f"no folder to take {self.target.value} CUDA libraries from on this machine: give them with --libs-from"
            )
        index = name_index(folders)
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
            for extra in runtime_companions(name, path):
                queue.append((extra.name, path.name, True, required))
                index.setdefault(extra.name.lower(), extra)
        return list(found.values())

    def _skip(self, name: str) -> bool:
        """What the target system provides (C/C++ and VC++ runtimes, OS, the driver) and ORT's own files."""

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
        members = [m for m in self.opened.members if is_extra_member(m) and m in self.opened.files]
        if not any("include/" in m for m in members):
            self.warnings.append(
                "no include/ headers in this package: take them from the C/C++ release archive of the same version"
            )
        if not members:
            return
        prefix = common_root(members)
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
            self.files.append(describe_file(path, name, FileKind.METADATA, why, "package"))

    def _add_file(self, source: Path, target: str, kind: FileKind, why: str, origin: str) -> None:
        destination = self._destination(target)
        try:
            copy_new(source, destination)  # follows links: the bundle holds the real bytes
        except OSError as exc:
            raise BundleError(f"cannot copy {source}: {exc.strerror}", "check the file and its permissions") from None
        if target.startswith("lib/"):
            self._names.add(posixpath.basename(target).lower())
        self.files.append(describe_file(destination, target, kind, why, origin))

    # -- what the target system must provide ---------------------------------------------------------------------
    def _system_requirements(self) -> tuple[SystemRequirement, ...]:
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
            floor = glibc_floor(self.root / "lib")
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
