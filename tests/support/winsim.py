"""A simulated Windows host for the Windows doctor tests: a drive tree on disk, registry, environment, NVML, a loader.

The drive tree lives under a temp folder (C:\\ is <root>/C, and Z:\\ is this machine's /, as in Wine).
ORT's own DLLs are the REAL ones from the onnxruntime-gpu win_amd64 wheels (extracted once into the
test cache, hard-linked into each simulated tree); CUDA, cuDNN, VC++, driver and Python DLLs are
tiny PE files written here with the imports, machine and file version each scenario needs.

`SimulatedWindows.load` is an independent, deliberately simple implementation of the documented
search order (the provider's folder, System32, System, Windows, current folder, PATH; KnownDLLs and
API sets first; VC++ too old -> 1114; wrong CPU -> 193; missing -> 126): the doctor's own
emulation (ortgpu.loader.windows) is checked against it, never against itself.
"""

from __future__ import annotations

import json
import ntpath
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ortgpu.binfmt.binary import BinaryFormatError, read_pe
from ortgpu.doctor.checks.facts import OrtBuild
from ortgpu.host.load_attempt import LoadAttempt
from ortgpu.host.windows import (
    KNOWN_DLLS_KEY,
    VC_RUNTIMES_KEY,
    RegistryView,
    WindowsHost,
    load_attempt_from_child,
)
from tests.support.fake_libs import FakeGpu, FakeNvml
from tests.support.realpackages import build_dll, real_wheel, wheel_cache

KNOWN_DLLS = ("kernel32.dll", "advapi32.dll", "user32.dll", "gdi32.dll", "ole32.dll", "shell32.dll", "ws2_32.dll")

# --- the real ORT DLLs, extracted once -----------------------------------------------------------------------------


def extracted_wheel(version: str) -> Path:
    """The onnxruntime/ folder and dist-info of the real onnxruntime-gpu win_amd64 wheel, extracted into the cache."""
    wheel = real_wheel(version, "win_amd64")
    target = wheel_cache().parent / "extracted" / wheel.stem
    if (target / ".complete").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".extract-"))
    try:
        with zipfile.ZipFile(wheel) as archive:
            members = [m for m in archive.namelist() if m.startswith("onnxruntime/") or ".dist-info/" in m]
            archive.extractall(staging, members)
        (staging / ".complete").write_text("ok\n")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)  # a test run interrupted mid-extraction never leaves a half folder behind
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


_STORE: list[Path] = []  # one content-addressed folder per test process


def _stored(data: bytes) -> Path:
    import atexit
    import hashlib

    if not _STORE:
        _STORE.append(Path(tempfile.mkdtemp(prefix="ortgpu-winsim-")))
        atexit.register(shutil.rmtree, _STORE[0], True)
    path = _STORE[0] / hashlib.sha256(data).hexdigest()
    if not path.exists():
        path.write_bytes(data)
    return path


def _place(target: Path, source: Path) -> None:
    """Hard-link (the 0.5 GB provider DLL must not be copied per test); copy when links are impossible."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


# --- the host -------------------------------------------------------------------------------------------------------


class SimNvml(FakeNvml):
    """FakeNvml plus the Windows driver model (0 WDDM, 1 TCC)."""

    def __init__(self, *args: Any, model: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.model = model

    def nvmlDeviceGetDriverModel(self, gpu: FakeGpu) -> list[int]:
        return [self.model, self.model]


@dataclass
class SimulatedWindows(WindowsHost):
    root: Path
    env: dict[str, str] = field(default_factory=dict)
    python: str = "C:\\Python311\\python.exe"
    version: str = "3.11.9"
    site: str = "C:\\Python311\\Lib\\site-packages"
    prefix: str = "C:\\Python311"
    process_machine: str = "x64"
    native_machine: str = "x64"
    working_dir: str = "C:\\Users\\dev"
    registry: dict[tuple[str, str], dict[str, str | int]] = field(default_factory=dict)
    nvml_object: Any = None
    session_ok: bool = True  # a GPU that really runs a session once every DLL is found
    set_dll_directory: str | None = None  # SetDllDirectory in the doctor's process

    # --- WindowsHost ---------------------------------------------------------------------------------------------
    def environ(self) -> Mapping[str, str]:
        return self.env

    def sys_path(self) -> tuple[str, ...]:
        return (ntpath.join(self.prefix, "python311.zip"), ntpath.join(self.prefix, "DLLs"), self.site)

    def executable(self) -> str:
        return self.python

    def launcher(self) -> str:
        return self.python

    def base_prefix(self) -> str:
        return self.prefix

    def python_version(self) -> str:
        return self.version

    def cwd(self) -> str:
        return self.working_dir

    def machines(self) -> tuple[str, str]:
        return self.process_machine, self.native_machine

    def windows_version(self) -> str:
        return "10.0.22631"

    def system_dir(self) -> str:
        return "C:\\Windows\\System32"

    def windows_dir(self) -> str:
        return "C:\\Windows"

    def dll_directory(self) -> str | None:
        return self.set_dll_directory

    def nvml(self) -> Any:
        return self.nvml_object

    def _drive(self, path: str) -> tuple[Path, list[str]] | None:
        drive, rest = ntpath.splitdrive(path)
        if not drive:
            return None
        base = Path("/") if drive.upper() == "Z:" else self.root / drive[0].upper()
        return base, [p for p in rest.replace("/", "\\").split("\\") if p]

    def local(self, path: str) -> Path | None:
        found = self._drive(path.strip().strip('"'))
        if found is None:
            return None
        current, parts = found
        for part in parts:
            if part == "..":
                current = current.parent
                continue
            exact = current / part
            if exact.exists():
                current = exact
                continue
            try:
                match = next((current / n for n in os.listdir(current) if n.lower() == part.lower()), None)
            except OSError:
                return None
            if match is None:
                return None
            current = match
        return current

    def display(self, local: Path) -> str:
        try:
            relative = local.relative_to(self.root)
        except ValueError:
            return "Z:" + str(local).replace("/", "\\")
        drive, *rest = relative.parts
        return f"{drive}:\\" + "\\".join(rest)

    def registry_value(self, key: str, name: str, view: RegistryView = RegistryView.NATIVE) -> str | int | None:
        values = self.registry_values(key, view)
        return next((v for k, v in values.items() if k.lower() == name.lower()), None)

    def registry_values(self, key: str, view: RegistryView = RegistryView.NATIVE) -> Mapping[str, str | int]:
        bits = "32" if view is RegistryView.BITS32 else "64"
        return self.registry.get((key.lower(), bits), {})

    # --- building the machine -------------------------------------------------------------------------------------
    def path_of(self, win_path: str) -> Path:
        found = self._drive(win_path)
        assert found is not None, win_path
        base, parts = found
        return base.joinpath(*parts)

    def put(self, win_path: str, data: bytes) -> str:
        """Write a file; identical contents share one stored file (hard links), so each DLL is parsed once."""
        target = self.path_of(win_path)
        if target.exists():
            target.unlink()  # never write through a link into the shared store
        _place(target, _stored(data))
        return win_path

    def dll(self, folder: str, name: str, **kwargs: Any) -> str:
        return self.put(ntpath.join(folder, name), build_dll(**kwargs))

    def remove(self, win_path: str) -> None:
        local = self.local(win_path)
        if local is not None:
            shutil.rmtree(local) if local.is_dir() else local.unlink()

    def set_registry(self, key: str, values: Mapping[str, str | int], bits: str = "64") -> None:
        self.registry.setdefault((key.lower(), bits), {}).update(values)

    def prepend_path(self, *folders: str) -> None:
        self.env["PATH"] = ";".join([*folders, self.env.get("PATH", "")]).rstrip(";")

    def install_ort(self, version: str) -> str:
        """The real onnxruntime-gpu wheel's files in site-packages; returns the capi folder."""
        source = extracted_wheel(version)
        site = self.path_of(self.site)
        for path in source.rglob("*"):
            if path.is_file() and path.name != ".complete":
                _place(site / path.relative_to(source), path)
        return ntpath.join(self.site, "onnxruntime", "capi")

    # --- the in-process import and the loader -------------------------------------------------------------------
    def ort_query(self, module_dir: Path | None) -> OrtBuild:
        """What `import onnxruntime` in the doctor's own process gives on this machine (Probes.ort_query)."""
        if module_dir is None:
            return OrtBuild(False, "no onnxruntime module on the Python path", None, None, None, (), None)
        folder = self.display(module_dir)
        attempt = self.load([], session=False, module_parent=ntpath.dirname(folder))
        if attempt.libraries and not attempt.libraries[0].ok:
            error = (attempt.libraries[0].error or "").removeprefix("import onnxruntime: ")
            return OrtBuild(False, error, None, None, None, (), None)
        dist = next(self.path_of(ntpath.dirname(folder)).glob("onnxruntime*.dist-info"), None)
        version = dist.name.removesuffix(".dist-info").split("-")[1] if dist else None
        providers = ("TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider")
        return OrtBuild(True, None, version, None, "GPU", providers, ntpath.join(folder, "__init__.py"))

    def load(
        self,
        libraries: Sequence[str],
        *,
        session: bool,
        module_parent: str | None,
        preload: bool = False,
        device_id: int = 0,
        timeout_s: float = 120.0,
    ) -> LoadAttempt:
        loader = _FakeLoader(self)
        stages: dict[str, Any] = {}
        if module_parent is not None:
            capi = ntpath.join(module_parent, "onnxruntime", "capi")
            pyd = ntpath.join(capi, "onnxruntime_pybind11_state.pyd")
            code, _culprit = loader.load(pyd, [capi, ntpath.dirname(self.python), self.system_dir()])
            texts = {126: "The specified module could not be found.", 1114: _DLL_INIT_TEXT}
            error = None if code == 0 else (
                "ImportError: DLL load failed while importing onnxruntime_pybind11_state: " + texts.get(code, str(code))
            )  # fmt: skip
            stages["ort"] = {
                "file": ntpath.join(module_parent, "onnxruntime", "__init__.py"),
                "version": None,
                "error": error,
            }
        loads, ok = [], True
        for path in libraries:
            code, _culprit = loader.load(path, [ntpath.dirname(path), *loader.tail()])
            loads.append({"path": path, "ok": code == 0, "code": code, "error": _TEXTS.get(code, "")})
            if code:
                ok = False
                break
        stages["loads"] = loads
        if ok and session:
            error = loader.session_error() if not stages.get("ort", {}).get("error") else "import failed"
            providers = ["CUDAExecutionProvider", "CPUExecutionProvider"] if not error and self.session_ok else [
                "CPUExecutionProvider"
            ]  # fmt: skip
            stages["session"] = {"providers": providers, "error": error, "ran": not error}
        stages["mapped"] = [p for p in loader.loaded.values() if ntpath.basename(p).lower().startswith(_MAPPED)]
        return load_attempt_from_child(
            stages, session=session, preload=preload, returncode=0, stderr="", duration_s=0.01
        )


_DLL_INIT_TEXT = "A dynamic link library (DLL) initialization routine failed."
_TEXTS = {
    126: "The specified module could not be found.",
    127: "The specified procedure could not be found.",
    193: "%1 is not a valid Win32 application.",
    1114: _DLL_INIT_TEXT,
}
_MAPPED = ("cudart", "cublas", "cudnn", "cufft", "curand", "nvcuda", "zlibwapi", "msvcp140", "vcruntime140")


class _FakeLoader:
    """LoadLibrary as documented, kept short: first folder, System32, System, Windows, current folder, PATH."""

    def __init__(self, host: SimulatedWindows) -> None:
        self.host = host
        self.loaded: dict[str, str] = {}  # lower name -> path
        known = host.registry_values(KNOWN_DLLS_KEY).values()
        self.known = {str(v).lower() for v in known}

    def tail(self) -> list[str]:
        h = self.host
        if "\\windowsapps\\" in h.python.lower():
            return [h.system_dir()]  # a packaged app (Store Python): no current folder, no PATH
        path = [p.strip().strip('"') for p in h.env.get("PATH", "").split(";") if p.strip()]
        return [h.system_dir(), ntpath.join(h.windows_dir(), "System"), h.windows_dir(), h.working_dir, *path]

    def _info(self, path: str) -> Any:
        local = self.host.local(path)
        return _pe(local) if local else None

    def load(self, path: str, folders: Sequence[str], linker_floor: tuple[int, int] | None = None) -> tuple[int, str]:
        """0, or (Windows error code, the DLL that caused it) for loading `path` and its imports from `folders`."""
        info = self._info(path)
        if info is None:
            return (126 if self.host.local(path) is None else 193), path
        if info.machine != self.host.process_machine:
            return 193, path
        self.loaded.setdefault(ntpath.basename(path).lower(), path)
        floor = _linker(self.host.local(path))
        for name in info.imports:
            code, culprit = self._need(name, folders, floor)
            if code:
                return code, culprit
        return 0, ""

    def _need(self, name: str, folders: Sequence[str], floor: tuple[int, int] | None) -> tuple[int, str]:
        lower = name.lower()
        if lower in self.loaded:
            return self._vc_check(lower, floor)
        if lower.startswith(("api-ms-", "ext-ms-")) or lower in self.known:
            return 0, ""
        for folder in folders:
            hit = self.host.find(folder, name)
            if hit:
                if lower.startswith(("msvcp140", "vcruntime140")) or lower.startswith("python3"):
                    info = self._info(hit)
                    if info is None or info.machine != self.host.process_machine:
                        return 193, hit
                    self.loaded[lower] = hit
                    return self._vc_check(lower, floor)
                return self.load(hit, folders)
        return 126, name

    def _vc_check(self, lower: str, floor: tuple[int, int] | None) -> tuple[int, str]:
        """msvcp140.dll older than the toolset that built its user: the static initialiser fails (1114)."""
        if floor is None or not lower.startswith("msvcp140"):
            return 0, ""
        info = self._info(self.loaded[lower])
        version = tuple(int(p) for p in (info.file_version or "0.0").split(".")[:2]) if info else (0, 0)
        return (1114, self.loaded[lower]) if version < floor else (0, "")

    def session_error(self) -> str | None:
        """cuDNN opens its sub-libraries (and cuDNN 8 zlibwapi) by name at the first convolution: standard order."""
        folders = [ntpath.dirname(self.host.python), *self.tail()]
        if "cudnn64_8.dll" in self.loaded:
            names = ["cudnn_ops_infer64_8.dll", "cudnn_cnn_infer64_8.dll"]
        elif "cudnn64_9.dll" in self.loaded:
            names = [
                "cudnn_graph64_9.dll",
                "cudnn_ops64_9.dll",
                "cudnn_cnn64_9.dll",
                "cudnn_engines_precompiled64_9.dll",
            ]
        else:
            return None
        for name in names:
            code, culprit = self._need(name, folders, None)
            if code and culprit.lower() == "zlibwapi.dll":
                return "Could not locate zlibwapi.dll. Please make sure it is in your library path!"
            if code:
                return f"Could not load library {name}. Error code {code}"
        return None


def _stamp(local: Path) -> tuple[str, int, int, int, int]:
    stat = local.stat()
    return str(local), stat.st_dev, stat.st_ino, stat.st_mtime_ns, stat.st_size


def _pe(local: Path) -> Any:
    path, *identity = _stamp(local)
    return _pe_cached(tuple(identity), path)


_PE: dict[tuple[int, ...], Any] = {}
_LINKER: dict[tuple[int, ...], tuple[int, int]] = {}


def _pe_cached(identity: tuple[int, ...], path: str) -> Any:
    if identity not in _PE:
        try:
            _PE[identity] = read_pe(Path(path))
        except BinaryFormatError:
            _PE[identity] = None
    return _PE[identity]


def _linker(local: Path | None) -> tuple[int, int] | None:
    """The MSVC toolset that linked a DLL (its msvcp140 must be at least that), read once per file."""
    import pefile

    if local is None:
        return None
    path, *identity = _stamp(local)
    key = tuple(identity)
    if key not in _LINKER:
        pe = pefile.PE(path, fast_load=True)
        try:
            _LINKER[key] = (pe.OPTIONAL_HEADER.MajorLinkerVersion, pe.OPTIONAL_HEADER.MinorLinkerVersion)
        finally:
            pe.close()
    return _LINKER[key]


# --- a complete machine --------------------------------------------------------------------------------------------

CUDA_ROOT = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA"
CUDNN_ROOT = "C:\\Program Files\\NVIDIA\\CUDNN"
SYSTEM32 = "C:\\Windows\\System32"
VC = ("msvcp140.dll", "msvcp140_1.dll", "vcruntime140.dll", "vcruntime140_1.dll")
# file name -> what it imports besides KERNEL32 (cuBLAS imports cuBLASLt)
CUDA_DLLS = {
    11: {"cudart64_110.dll": (), "cublas64_11.dll": ("cublasLt64_11.dll",), "cublasLt64_11.dll": (),
         "cufft64_10.dll": (), "curand64_10.dll": (), "nvrtc64_112_0.dll": ()},
    12: {"cudart64_12.dll": (), "cublas64_12.dll": ("cublasLt64_12.dll",), "cublasLt64_12.dll": (),
         "cufft64_11.dll": (), "curand64_10.dll": (), "nvrtc64_120_0.dll": ()},
}  # fmt: skip
CUDNN_DLLS = {
    8: ["cudnn64_8.dll", "cudnn_ops_infer64_8.dll", "cudnn_ops_train64_8.dll", "cudnn_cnn_infer64_8.dll",
        "cudnn_cnn_train64_8.dll", "cudnn_adv_infer64_8.dll", "cudnn_adv_train64_8.dll"],
    9: ["cudnn64_9.dll", "cudnn_graph64_9.dll", "cudnn_ops64_9.dll", "cudnn_cnn64_9.dll", "cudnn_adv64_9.dll",
        "cudnn_engines_precompiled64_9.dll", "cudnn_engines_runtime_compiled64_9.dll", "cudnn_heuristic64_9.dll"],
}  # fmt: skip


def new_machine(root: Path, *, vc_version: str = "14.40.33810.0", gpu: bool = True) -> SimulatedWindows:
    """A Windows 11 x64 PC: python.org Python 3.11, VC++ redistributable, NVIDIA driver 560.94 (CUDA 12.6), no CUDA."""
    host = SimulatedWindows(root)
    host.env = {
        "PATH": "C:\\Windows\\system32;C:\\Windows;C:\\Python311\\Scripts\\;C:\\Python311\\",
        "SystemRoot": "C:\\Windows",
        "ProgramFiles": "C:\\Program Files",
        "USERPROFILE": "C:\\Users\\dev",
    }
    for folder in (host.working_dir, host.site, "C:\\Windows\\System", "C:\\Python311\\Scripts"):
        host.path_of(folder).mkdir(parents=True, exist_ok=True)
    host.put(host.python, build_dll(["python311.dll", "vcruntime140.dll", "kernel32.dll"]))
    host.dll("C:\\Python311", "python311.dll", imports=["vcruntime140.dll", "kernel32.dll"], version="3.11.9150.1013")
    host.dll("C:\\Python311", "vcruntime140.dll", imports=["kernel32.dll"], version="14.38.33130.0")
    for name in VC:
        host.dll(SYSTEM32, name, imports=["kernel32.dll"], version=vc_version)
    host.set_registry(KNOWN_DLLS_KEY, {n.split(".")[0]: n for n in KNOWN_DLLS})
    host.set_registry(f"{VC_RUNTIMES_KEY}\\x64", {"Version": f"v{vc_version}", "Installed": 1}, bits="32")
    host.set_registry(
        "HKLM\\SYSTEM\\CurrentControlSet\\Control\\Session Manager\\Environment",
        {"Path": "%SystemRoot%\\system32;%SystemRoot%"},
    )
    if gpu:
        host.dll(SYSTEM32, "nvcuda.dll", imports=["kernel32.dll"], version="32.0.15.6094")
        host.dll(SYSTEM32, "nvml.dll", imports=["kernel32.dll"], version="8.17.15.6094")
        host.nvml_object = SimNvml([FakeGpu(name="NVIDIA GeForce RTX 4090", cc=(8, 9))], driver="560.94", cuda=12060)
    else:
        host.nvml_object = SimNvml(fail_init="NVML Shared Library Not Found")
    return host


def install_cuda(host: SimulatedWindows, version: str, *, on_path: bool = True, set_cuda_path: bool = True) -> str:
    """The CUDA toolkit's runtime DLLs in ...\\CUDA\\vX.Y\\bin, CUDA_PATH(_VX_Y), version.json; returns bin."""
    major, minor = (int(p) for p in version.split(".")[:2])
    root = f"{CUDA_ROOT}\\v{major}.{minor}"
    bin_dir = f"{root}\\bin"
    for name, imports in CUDA_DLLS[major].items():
        host.dll(bin_dir, name, imports=[*imports, "kernel32.dll"], version=f"6.{major}.{minor}.0")
    host.put(f"{root}\\version.json", json.dumps({"cuda": {"name": "CUDA SDK", "version": f"{version}.0"}}).encode())
    if set_cuda_path:
        host.env["CUDA_PATH"] = root
        host.env[f"CUDA_PATH_V{major}_{minor}"] = root
    if on_path:
        host.prepend_path(bin_dir, f"{root}\\libnvvp")
    return bin_dir


def install_cudnn(
    host: SimulatedWindows,
    major: int,
    folder: str,
    *,
    on_path: bool = True,
    zlib: bool = True,
    leave_out: Iterable[str] = (),
) -> str:
    """cuDNN's DLLs in `folder` (cuDNN 8 sub-libraries import zlibwapi.dll; `zlib` puts one there too)."""
    for name in CUDNN_DLLS[major]:
        if name in leave_out:
            continue
        imports = ["kernel32.dll"] + (["zlibwapi.dll"] if major == 8 and name != "cudnn64_8.dll" else [])
        host.dll(folder, name, imports=imports, version=f"6.14.{major}.0")
    if major == 8 and zlib:
        host.dll(folder, "zlibwapi.dll", imports=["kernel32.dll"], version="1.2.3.0")
    if on_path:
        host.prepend_path(folder)
    return folder


def ready_machine(root: Path, ort: str = "1.19.2") -> tuple[SimulatedWindows, str]:
    """Everything an ORT build needs, on PATH: (host, capi folder)."""
    host = new_machine(root)
    capi = host.install_ort(ort)
    if ort.startswith("1.18"):
        bin_dir = install_cuda(host, "11.8")
        install_cudnn(host, 8, bin_dir, on_path=False)  # the classic cuDNN 8 install: copied into CUDA's bin
    else:
        install_cuda(host, "12.4")
        install_cudnn(host, 9, f"{CUDNN_ROOT}\\v9.4\\bin\\12.6")
    return host, capi


def release_folder(root: Path, version: str = "1.19.2") -> Path:
    """An extracted C/C++ release (onnxruntime-win-x64-gpu-X.zip): lib\\ with the real DLLs, include\\, VERSION_NUMBER.

    Built from the wheel's capi\\ DLLs, which are the zip's lib\\ DLLs; only 1.19+ wheels ship onnxruntime.dll.
    """
    source = extracted_wheel(version) / "onnxruntime" / "capi"
    folder = root / f"onnxruntime-win-x64-gpu-{version}"
    for name in ("onnxruntime.dll", *(f"onnxruntime_providers_{p}.dll" for p in ("shared", "cuda", "tensorrt"))):
        _place(folder / "lib" / name, source / name)
    (folder / "include").mkdir(parents=True, exist_ok=True)
    (folder / "include" / "onnxruntime_c_api.h").write_text("/* header */\n", encoding="utf-8")
    (folder / "VERSION_NUMBER").write_text(f"{version}\n", encoding="utf-8")
    return folder
