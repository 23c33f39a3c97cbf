"""Resolve ORT's DLLs and everything they import the way the Windows loader will, without loading anything.

Three search orders matter (Microsoft's "Dynamic-link library search order" page):

* alternate -- ORT loads onnxruntime_providers_shared.dll and _cuda.dll itself with
  LoadLibraryExW(<absolute path>, NULL, LOAD_WITH_ALTERED_SEARCH_PATH). Every DLL that load pulls in
  (transitively) is searched in: the providers' own folder, System32, System, the Windows folder,
  the current folder, then each PATH entry in order.
* standard -- a DLL opened by name at run time (cuDNN's sub-libraries, nvcuda.dll, a delay-load)
  is searched from the application's folder (python.exe's, or the .exe's) instead of the provider's.
* Python extension module -- the .pyd and its imports (the VC++ runtime) are loaded by Python >= 3.8
  with LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | DLL_LOAD_DIR: its own folder, python.exe's folder, folders
  added with os.add_dll_directory(), System32; never PATH.

Before any folder: API sets (api-ms-win-*, ext-ms-*) and KnownDLLs are the system's own, and a name
already in the loaded-module list is reused whatever folder it came from. A packaged app (Microsoft
Store Python) searches only its folder and System32. Windows stops at the first file of a name, even
when that file is for another CPU (error 193).
"""

from __future__ import annotations

import dataclasses
import ntpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TypedDict

from ortgpu.host.windows import WindowsHost, same_dir
from ortgpu.host.windows_facts import (
    CudaFacts,
    DllFolder,
    HostFacts,
    VcRegistry,
    WindowsDriver,
    cuda_facts,
    vc_registry,
    windows_driver,
)
from ortgpu.package.analysis import Component, LibraryRole, NeedKind, PackageAnalysis, classify_library
from ortgpu.versions import version_tuple

__all__ = [
    "BuildNeeds",
    "DllCopy",
    "DllResolution",
    "DllResolver",
    "DllStatus",
    "LibraryImports",
    "LibraryToLoad",
    "LoadContext",
    "OrderKind",
    "SearchDir",
    "SearchOrder",
    "SearchStep",
    "VcRuntimeReport",
    "WindowsReport",
    "resolve_ort",
    "search_order",
    "survey",
]


class OrderKind(Enum):
    ALTERED = "alternate (LoadLibraryExW + LOAD_WITH_ALTERED_SEARCH_PATH)"
    STANDARD = "standard (opened by name)"
    EXTENSION = "Python extension module (LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | DLL_LOAD_DIR)"


class SearchStep(Enum):
    API_SET = "API set"
    KNOWN_DLL = "KnownDLLs"
    LOADED = "already loaded"
    FULL_PATH = "loaded by full path"
    DLL_DIR = "the loading DLL's folder"
    APP_DIR = "application folder"
    DLL_DIRECTORY = "SetDllDirectory folder"
    SYSTEM32 = "System32"
    SYSTEM16 = "16-bit System folder"
    WINDOWS = "Windows folder"
    CWD = "current folder"
    PATH = "PATH"


class DllStatus(Enum):
    FOUND = "found"
    SYSTEM = "system"  # API set or KnownDLL: the system's own, never looked up in a folder
    MISSING = "missing"
    BAD_IMAGE = "bad-image"  # the first file of that name is for another CPU or not a valid DLL (error 193)
    WRONG_MAJOR = "wrong-major"  # only other majors of the library exist (cudart64_110.dll for cudart64_12.dll)
    OFF_PATH = "off-path"  # installed (toolkit, cuDNN installer, pip package) in a folder the search does not reach


@dataclass(frozen=True)
class SearchDir:
    step: SearchStep
    directory: str
    note: str  # "PATH[3]", "System32"


@dataclass(frozen=True)
class SearchOrder:
    kind: OrderKind
    dirs: tuple[SearchDir, ...]
    packaged: bool  # Microsoft Store Python: no current folder, no PATH

    def describe(self) -> str:
        folders = [d for d in self.dirs if d.step is not SearchStep.PATH]
        text = " -> ".join(f"{d.directory} ({d.note})" if d.note != d.directory else d.directory for d in folders)
        path = sum(1 for d in self.dirs if d.step is SearchStep.PATH)
        if path:
            text += f" -> PATH ({path} entries)"
        if self.kind is OrderKind.EXTENSION:
            text += " (+ os.add_dll_directory() folders before System32)"
        return text


@dataclass(frozen=True)
class LoadContext:
    """Who loads ORT: a Python process (wheel) or a C/C++ application (release zip next to its .exe)."""

    python: bool
    app_dir: str  # python.exe's folder, or the folder the .exe is assumed to be in
    packaged: bool = False


def _tail(facts: HostFacts, packaged: bool) -> list[SearchDir]:
    """What follows the first folder: SetDllDirectory, System32, System, Windows, current folder, PATH."""
    if packaged:
        return [SearchDir(SearchStep.SYSTEM32, facts.system_dir, "System32")]
    dirs: list[SearchDir] = []
    if facts.dll_directory:
        dirs.append(SearchDir(SearchStep.DLL_DIRECTORY, facts.dll_directory, "SetDllDirectory"))
    cwd = [] if facts.dll_directory else [SearchDir(SearchStep.CWD, facts.cwd, "current folder")]
    if not facts.safe_dll_search_mode:
        dirs += cwd  # SafeDllSearchMode=0 moves the current folder before the system folders
    dirs += [
        SearchDir(SearchStep.SYSTEM32, facts.system_dir, "System32"),
        SearchDir(SearchStep.SYSTEM16, facts.system16_dir, "16-bit System"),
        SearchDir(SearchStep.WINDOWS, facts.windows_dir, "Windows"),
    ]
    if facts.safe_dll_search_mode:
        dirs += cwd
    dirs += [SearchDir(SearchStep.PATH, e.directory, f"PATH[{e.index}]") for e in facts.path if e.duplicate_of is None]
    return dirs


def search_order(
    kind: OrderKind, facts: HostFacts, *, dll_dir: str | None = None, app_dir: str | None = None, packaged: bool = False
) -> SearchOrder:
    """The folders one kind of load searches, in order (`dll_dir`: the loading DLL's folder)."""
    app = app_dir or facts.app_dir
    if kind is OrderKind.EXTENSION:
        dirs = [
            SearchDir(SearchStep.DLL_DIR, dll_dir or app, "the .pyd's folder"),
            SearchDir(SearchStep.APP_DIR, app, "python.exe's folder"),
            SearchDir(SearchStep.SYSTEM32, facts.system_dir, "System32"),
        ]
    elif kind is OrderKind.ALTERED:
        dirs = [SearchDir(SearchStep.DLL_DIR, dll_dir or app, "the provider's folder"), *_tail(facts, packaged)]
    else:
        dirs = [SearchDir(SearchStep.APP_DIR, app, "application folder"), *_tail(facts, packaged)]
    unique: list[SearchDir] = []
    for entry in dirs:
        if not any(same_dir(entry.directory, u.directory) for u in unique):
            unique.append(entry)
    return SearchOrder(kind, tuple(unique), packaged)


@dataclass(frozen=True)
class DllCopy:
    path: str
    step: SearchStep | None  # None: a folder the search does not reach
    where: str  # "PATH[3]", "System32", "cuDNN 9.7 for CUDA 12.8 (NVIDIA installer), not searched"
    machine: str | None  # "x64", "arm64", "x86"; None when the file is not a readable PE
    file_version: str | None


@dataclass(frozen=True)
class DllResolution:
    name: str  # as imported: "cudnn64_9.dll"
    requested_by: str  # the DLL that imports or opens it
    kind: NeedKind
    order: OrderKind
    component: Component
    status: DllStatus
    chosen: DllCopy | None  # what the loader maps (for BAD_IMAGE: the file it stops at)
    later: tuple[DllCopy, ...] = ()  # further copies on the same search path, never reached
    off_path: tuple[DllCopy, ...] = ()  # copies in installed folders the search does not reach
    other_versions: tuple[DllCopy, ...] = ()  # the same library in another major

    @property
    def ok(self) -> bool:
        return self.status in (DllStatus.FOUND, DllStatus.SYSTEM)

    @property
    def system(self) -> bool:
        """The operating system's or C runtime's own DLL: present on every Windows 10+."""
        return self.status is DllStatus.SYSTEM or self.component in (Component.OS, Component.C_RUNTIME)


@dataclass(frozen=True)
class LibraryToLoad:
    """One ORT library to load, and the DLLs ORT or its dependencies open by name at run time (from the matrix)."""

    name: str
    path: str  # Windows path
    role: LibraryRole
    run_time: tuple[tuple[str, NeedKind], ...] = ()


@dataclass(frozen=True)
class LibraryImports:
    name: str
    path: str
    role: LibraryRole
    order: OrderKind
    search: str  # the search order, described
    machine: str | None
    file_version: str | None
    needs: tuple[DllResolution, ...]  # every DLL this load brings in, transitively, in search order

    @property
    def unresolved(self) -> tuple[DllResolution, ...]:
        return tuple(n for n in self.needs if not n.ok)


_RUN_TIME = (NeedKind.LAZY, NeedKind.INDIRECT)
_NO_WALK = {Component.OS, Component.C_RUNTIME, Component.VC_RUNTIME, Component.PYTHON, Component.CUDA_DRIVER}
_VERSIONED = {
    Component.CUDA_RUNTIME,
    Component.CUBLAS,
    Component.CUFFT,
    Component.CURAND,
    Component.NVRTC,
    Component.CUDNN,
    Component.TENSORRT,
}


def _other_version_pattern(name: str) -> re.Pattern[str] | None:
    """cudart64_12.dll -> cudart64_<digits>.dll; nvrtc64_120_0.dll -> nvrtc64_<digits>_<digits>.dll."""
    match = re.match(r"^(.*?)(\d+)(?:_\d+)?\.dll$", name, re.IGNORECASE)
    if not match:
        return None
    return re.compile(re.escape(match.group(1)) + r"\d+(?:_\d+)?\.dll$", re.IGNORECASE)


class _Request(TypedDict):
    """What every resolution of one request carries, whatever the search finds."""

    name: str
    requested_by: str
    kind: NeedKind
    order: OrderKind
    component: Component


class DllResolver:
    """Resolves DLL names on one host, keeping the loaded-module list as the real process would."""

    def __init__(self, host: WindowsHost, facts: HostFacts, folders: Sequence[DllFolder] = ()) -> None:
        self.host, self.facts, self.folders = host, facts, tuple(folders)
        self.machine = facts.process_machine
        self.loaded: dict[str, DllResolution] = {}  # lower-case name -> how it was first loaded
        self._system_dirs = (facts.system_dir, facts.system16_dir, facts.windows_dir)

    # --- one name ---------------------------------------------------------------------------------------------
    def _copy(self, path: str, step: SearchStep | None, where: str) -> DllCopy:
        pe = self.host.pe(path)
        return DllCopy(path, step, where, pe.machine if pe else None, pe.file_version if pe else None)

    def resolve(self, name: str, requested_by: str, kind: NeedKind, order: SearchOrder) -> DllResolution:
        key = name.lower()
        component = classify_library(name)
        prior = self.loaded.get(key)
        if prior is not None:
            chosen = prior.chosen
            if chosen is not None and prior.status is DllStatus.FOUND:
                first = prior.requested_by
                chosen = dataclasses.replace(chosen, step=SearchStep.LOADED, where=f"already loaded (for {first})")
            return dataclasses.replace(
                prior, name=name, requested_by=requested_by, kind=kind, order=order.kind, chosen=chosen
            )
        base = _Request(name=name, requested_by=requested_by, kind=kind, order=order.kind, component=component)
        if key.startswith(("api-ms-win-", "ext-ms-")):
            result = DllResolution(
                **base, status=DllStatus.SYSTEM, chosen=DllCopy(name, SearchStep.API_SET, "API set", None, None)
            )
        elif key in self.host.known_dlls():
            where = ntpath.join(self.facts.system_dir, name)
            result = DllResolution(
                **base, status=DllStatus.SYSTEM, chosen=DllCopy(where, SearchStep.KNOWN_DLL, "KnownDLLs", None, None)
            )
        else:
            result = self._search(name, order, base)
        if result.status in (DllStatus.FOUND, DllStatus.SYSTEM):
            self.loaded[key] = result
        return result

    def _search(self, name: str, order: SearchOrder, base: _Request) -> DllResolution:
        hits: list[DllCopy] = []
        for entry in order.dirs:
            path = self.host.find(entry.directory, name)
            if path and not any(h.path.lower() == path.lower() for h in hits):
                hits.append(self._copy(path, entry.step, entry.note))
        component = base["component"]
        off = self._off_path(name, order)
        if hits:
            first = hits[0]
            status = DllStatus.FOUND if first.machine == self.machine else DllStatus.BAD_IMAGE
            return DllResolution(**base, status=status, chosen=first, later=tuple(hits[1:]), off_path=off)
        others = self._other_versions(name, order) if component in _VERSIONED else ()
        if off:
            status = DllStatus.OFF_PATH
        elif others:
            status = DllStatus.WRONG_MAJOR
        else:
            status = DllStatus.MISSING
        return DllResolution(**base, status=status, chosen=None, off_path=off, other_versions=others)

    def _unsearched(self, order: SearchOrder) -> list[DllFolder]:
        return [f for f in self.folders if not any(same_dir(f.path, d.directory) for d in order.dirs)]

    def _off_path(self, name: str, order: SearchOrder) -> tuple[DllCopy, ...]:
        """Copies the search does not reach: install folders off PATH, and folders of DLLs already loaded."""
        out: list[DllCopy] = []
        for folder in self._unsearched(order):
            path = self.host.find(folder.path, name)
            if path:
                out.append(self._copy(path, None, f"{folder.label}, not searched"))
        for loaded in list(self.loaded.values()):
            chosen = loaded.chosen
            if chosen is None or chosen.step in (SearchStep.API_SET, SearchStep.KNOWN_DLL):
                continue
            beside = ntpath.dirname(chosen.path)
            searched = [d.directory for d in order.dirs] + list(self._system_dirs)
            if any(same_dir(beside, d) for d in searched):
                continue
            path = self.host.find(beside, name)
            if path and not any(c.path.lower() == path.lower() for c in out):
                # e.g. cuDNN's sub-libraries copied next to the provider: cuDNN opens them by name, so the
                # standard search (python.exe's folder, System32, ..., PATH) decides, not cudnn64_9.dll's folder
                out.append(self._copy(path, None, f"next to {loaded.name}, a folder this search does not include"))
        return tuple(out)

    def _other_versions(self, name: str, order: SearchOrder) -> tuple[DllCopy, ...]:
        pattern = _other_version_pattern(name)
        if pattern is None:
            return ()
        out: list[DllCopy] = []
        places: list[tuple[str, SearchStep | None, str]] = [(d.directory, d.step, d.note) for d in order.dirs]
        places += [(f.path, None, f"{f.label}, not searched") for f in self._unsearched(order)]
        for directory, step, note in places:
            for entry in self.host.listdir(directory):
                if pattern.match(entry) and entry.lower() != name.lower():
                    path = ntpath.join(directory, entry)
                    if not any(o.path.lower() == path.lower() for o in out):
                        out.append(self._copy(path, step, note))
        return tuple(out)

    # --- whole loads --------------------------------------------------------------------------------------------
    def _walks_into(self, result: DllResolution) -> bool:
        chosen = result.chosen
        if result.status is not DllStatus.FOUND or chosen is None or chosen.step is SearchStep.LOADED:
            return False
        if result.component in _NO_WALK:
            return False
        return not any(same_dir(ntpath.dirname(chosen.path), d) for d in self._system_dirs)

    def closure(
        self, names: Sequence[tuple[str, str, NeedKind]], order: SearchOrder, standard: SearchOrder
    ) -> list[DllResolution]:
        """Resolve (name, requested_by, kind) and, transitively, what each found DLL imports (delay-loads: standard)."""
        out: dict[str, DllResolution] = {}
        queue = [(n, by, kind, standard if kind is NeedKind.DELAY_LOAD else order) for n, by, kind in names]
        while queue:
            name, by, kind, search = queue.pop(0)
            if name.lower() in out:
                continue
            result = self.resolve(name, by, kind, search)
            out[name.lower()] = result
            if self._walks_into(result) and result.chosen is not None:
                pe = self.host.pe(result.chosen.path)
                if pe is not None:
                    queue += [(n, name, NeedKind.LOAD_TIME, search) for n in pe.imports]
                    queue += [(n, name, NeedKind.DELAY_LOAD, standard) for n in pe.delay_imports]
        return list(out.values())

    def preload(self, name: str, path: str, why: str) -> None:
        """Record a DLL the process already holds (python3XX.dll, loaded by python.exe at start)."""
        pe = self.host.pe(path)
        copy = DllCopy(path, SearchStep.APP_DIR, why, pe.machine if pe else None, pe.file_version if pe else None)
        self.loaded[name.lower()] = DllResolution(
            name, "python.exe", NeedKind.LOAD_TIME, OrderKind.STANDARD, classify_library(name), DllStatus.FOUND, copy
        )

    def load_library(self, library: LibraryToLoad, order: SearchOrder, standard: SearchOrder) -> LibraryImports:
        """LoadLibrary(Ex) of one ORT library by full path, then what it opens by name at run time."""
        pe = self.host.pe(library.path)
        if pe is not None:
            self.loaded[library.name.lower()] = DllResolution(
                library.name,
                "ONNX Runtime",
                NeedKind.LOAD_TIME,
                order.kind,
                Component.ORT,
                DllStatus.FOUND if pe.machine == self.machine else DllStatus.BAD_IMAGE,
                DllCopy(library.path, SearchStep.FULL_PATH, "loaded by full path", pe.machine, pe.file_version),
            )
            names = [(n, library.name, NeedKind.LOAD_TIME) for n in pe.imports]
            names += [(n, library.name, NeedKind.DELAY_LOAD) for n in pe.delay_imports if n not in pe.imports]
            needs = self.closure(names, order, standard)
        else:
            needs = []
        opened = [(n, _opener(n, library.name, needs), kind) for n, kind in library.run_time]
        seen = {n.name.lower() for n in needs}
        needs += [r for r in self.closure(opened, standard, standard) if r.name.lower() not in seen]
        return LibraryImports(
            name=library.name,
            path=library.path,
            role=library.role,
            order=order.kind,
            search=order.describe(),
            machine=pe.machine if pe else None,
            file_version=pe.file_version if pe else None,
            needs=tuple(needs),
        )


def _opener(name: str, provider: str, needs: Sequence[DllResolution]) -> str:
    """Who opens a run-time DLL: cuDNN's main DLL opens its sub-libraries, zlibwapi (8) and NVRTC (9); cudart opens
    nvcuda.dll; the provider the rest."""
    lower = name.lower()
    if lower.startswith(("cudnn_", "nvrtc", "cublaslt")) or lower == "zlibwapi.dll":
        main = next((n.name for n in needs if re.match(r"^cudnn64_\d+\.dll$", n.name, re.IGNORECASE)), None)
        return main or provider
    if lower == "nvcuda.dll":
        return next((n.name for n in needs if n.component is Component.CUDA_RUNTIME), provider)
    return provider


_LOAD_ORDER = {
    LibraryRole.PYTHON_BINDING: 0,
    LibraryRole.CORE: 1,
    LibraryRole.PROVIDERS_SHARED: 2,
    LibraryRole.CUDA: 3,
    LibraryRole.TENSORRT: 4,
    LibraryRole.OTHER_PROVIDER: 5,
}


def resolve_ort(
    host: WindowsHost,
    facts: HostFacts,
    libraries: Sequence[LibraryToLoad],
    context: LoadContext,
    folders: Sequence[DllFolder] = (),
) -> tuple[tuple[LibraryImports, ...], DllResolver]:
    """Resolve ORT's libraries in the order a process loads them, sharing one loaded-module list.

    Python: the .pyd at `import onnxruntime` (extension-module order; python.exe has already loaded its
    python3XX.dll and vcruntime140.dll), then providers_shared, the CUDA provider and TensorRT (alternate
    order). A C/C++ app: onnxruntime.dll from the application folder, then the providers.
    A wheel's onnxruntime.dll (1.19+) is not loaded by Python at all and is left out.
    """
    resolver = DllResolver(host, facts, folders)
    standard = search_order(OrderKind.STANDARD, facts, app_dir=context.app_dir, packaged=context.packaged)
    if context.python:
        for name in (
            f"python{facts.python_version.split('.')[0]}{facts.python_version.split('.')[1]}.dll",
            "vcruntime140.dll",
        ):
            hit = next((host.find(d.directory, name) for d in standard.dirs if host.find(d.directory, name)), None)
            if hit:
                resolver.preload(name, hit, "loaded by python.exe at start")
    out: list[LibraryImports] = []
    for library in sorted(libraries, key=lambda lib: _LOAD_ORDER.get(lib.role, 9)):
        folder = ntpath.dirname(library.path)
        if library.role is LibraryRole.PYTHON_BINDING:
            order = search_order(OrderKind.EXTENSION, facts, dll_dir=folder, app_dir=context.app_dir)
        elif library.role is LibraryRole.CORE:
            if context.python:
                continue  # nothing in a wheel imports onnxruntime.dll: the core is linked into the .pyd
            order = standard
        else:
            order = search_order(
                OrderKind.ALTERED, facts, dll_dir=folder, app_dir=context.app_dir, packaged=context.packaged
            )
        out.append(resolver.load_library(library, order, standard))
    return tuple(out), resolver


# --- ORT on a Windows host: what its build needs, what every DLL resolves to ---------------------------------------


@dataclass(frozen=True)
class VcRuntimeReport:
    required: str | None  # the msvcp140 the build needs: "14.40"
    required_evidence: str
    registry: VcRegistry
    loads: tuple[DllResolution, ...]  # each VC++ DLL ORT imports, as the first load that needs it resolves it


@dataclass(frozen=True)
class WindowsReport:
    """What `doctor` read on a Windows host beyond the checks: the facts and every DLL resolution."""

    host: HostFacts
    context: LoadContext
    cuda: CudaFacts
    driver: WindowsDriver
    vc_runtime: VcRuntimeReport
    libraries: tuple[LibraryImports, ...]  # ORT's libraries in load order, each with every DLL it brings in
    onnxruntime_dlls: tuple[DllCopy, ...]  # onnxruntime.dll copies an .exe reaches when its folder has none


@dataclass(frozen=True)
class BuildNeeds:
    """What the ORT build needs from the host, read from its package analysis (PE imports, version matrix)."""

    version: str | None
    distribution: str
    cuda_major: int | None
    cudnn_major: int | None
    vc_required: str | None
    vc_evidence: str
    pyd: str | None  # the Python binding's Windows path: the messages and switches compiled into it are read there


def _ge(version: str | None, minimum: tuple[int, ...]) -> bool:
    return bool(version) and version_tuple(version)[: len(minimum)] >= minimum


def _build(analysis: PackageAnalysis | None, paths: Mapping[str, str]) -> BuildNeeds:
    if analysis is None:
        return BuildNeeds(None, "onnxruntime-gpu", None, None, None, "no ORT libraries to read", None)
    required = analysis.vc_runtime if analysis.vc_runtime not in (None, "any") else None
    evidence = (
        f"ORT's DLLs were linked with MSVC {required}: the redistributable must be at least that toolset"
        if required
        else "ORT's DLLs do not say which toolset built them"
    )
    if _ge(analysis.version, (1, 21)) and version_tuple(required) < (14, 40):
        required, evidence = "14.40", "ORT >= 1.21 release notes: prebuilt Windows packages need VC++ >= 14.40"
    pyd = next((paths[lib.member] for lib in analysis.libraries if lib.role is LibraryRole.PYTHON_BINDING), None)
    return BuildNeeds(
        version=analysis.version,
        distribution=analysis.distribution or "onnxruntime-gpu",
        cuda_major=analysis.cuda_major,
        cudnn_major=analysis.cudnn_major,
        vc_required=required,
        vc_evidence=evidence,
        pyd=pyd,
    )


def _ort_libraries(analysis: PackageAnalysis, paths: Mapping[str, str]) -> list[LibraryToLoad]:
    nvrtc = {12: "nvrtc64_120_0.dll", 13: "nvrtc64_130_0.dll"}.get(analysis.cuda_major or 0)
    out = []
    for lib in analysis.libraries:
        if lib.format != "pe" or lib.member not in paths:
            continue
        run_time = [(n.name, n.kind) for n in lib.needs if n.kind in _RUN_TIME]
        if lib.role is LibraryRole.CUDA and (analysis.cudnn_major or 0) >= 9 and nvrtc:
            # cuDNN 9 LoadLibraryA()s NVRTC for its runtime-compiled engines (NVIDIA's cuDNN install guide)
            run_time.append((nvrtc, NeedKind.INDIRECT))
        out.append(LibraryToLoad(lib.name, paths[lib.member], lib.role, tuple(dict.fromkeys(run_time))))
    return out


def _vc_loads(libraries: Sequence[LibraryImports], resolver: DllResolver) -> tuple[DllResolution, ...]:
    """The VC++ DLLs ORT imports, each as first resolved: that copy is the one every later import reuses."""
    out: dict[str, DllResolution] = {}
    for library in libraries:
        for need in library.needs:
            if need.component is Component.VC_RUNTIME and need.name.lower() not in out:
                out[need.name.lower()] = resolver.loaded.get(need.name.lower(), need)
    return tuple(out.values())


def _onnxruntime_copies(host: WindowsHost, facts: HostFacts) -> tuple[DllCopy, ...]:
    """Every onnxruntime.dll an .exe reaches when its own folder has none (Windows 11 ships one in System32)."""
    order = search_order(OrderKind.STANDARD, facts, app_dir="<the .exe's folder>")
    out: list[DllCopy] = []
    for entry in order.dirs:
        path = host.find(entry.directory, "onnxruntime.dll") if entry.step is not SearchStep.APP_DIR else None
        if path and not any(c.path.lower() == path.lower() for c in out):
            pe = host.pe(path)
            machine, version = (pe.machine, pe.file_version) if pe else (None, None)
            out.append(DllCopy(path, entry.step, entry.note, machine, version))
    return tuple(out)


def survey(
    host: WindowsHost,
    facts: HostFacts,
    analysis: PackageAnalysis | None,
    paths: Mapping[str, str],
    context: LoadContext,
) -> tuple[WindowsReport, BuildNeeds, DllResolver]:
    cuda = cuda_facts(host, facts)
    libraries: tuple[LibraryImports, ...] = ()
    resolver = DllResolver(host, facts, cuda.folders)
    if analysis is not None:
        libraries, resolver = resolve_ort(host, facts, _ort_libraries(analysis, paths), context, cuda.folders)
    build = _build(analysis, paths)
    vc = VcRuntimeReport(
        build.vc_required, build.vc_evidence, vc_registry(host, facts.process_machine), _vc_loads(libraries, resolver)
    )
    report = WindowsReport(
        host=facts,
        context=context,
        cuda=cuda,
        driver=windows_driver(host, facts),
        vc_runtime=vc,
        libraries=libraries,
        onnxruntime_dlls=_onnxruntime_copies(host, facts),
    )
    return report, build, resolver
