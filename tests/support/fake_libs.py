"""Builders for the doctor tests: tiny shared libraries (gcc), fake ORT installs with dist-info, a fake NVML."""

from __future__ import annotations

import base64
import hashlib
import shutil
import struct
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

GCC = shutil.which("gcc") or shutil.which("cc")
needs_gcc = pytest.mark.skipif(GCC is None, reason="gcc is needed to build test libraries")

_BODY = "int ortgpu_fake_symbol(void) { return 1; }\n"


def _compile(path: Path, soname: str, source: str, extra: Sequence[str] = ()) -> None:
    assert GCC is not None
    args = [GCC, "-shared", "-fPIC", "-o", str(path), "-x", "c", "-", f"-Wl,-soname,{soname}", *extra]
    subprocess.run(args, input=source, text=True, check=True, capture_output=True)


def build_lib(
    path: Path,
    *,
    soname: str | None = None,
    needed: Iterable[str] = (),
    rpath: Sequence[str] = (),
    runpath: Sequence[str] = (),
    source: str = _BODY,
) -> Path:
    """Compile a shared library with the given DT_NEEDED / DT_RPATH / DT_RUNPATH.

    Each needed soname is satisfied at link time by a throw-away stub, so it stays absent at run time
    unless the test puts it somewhere.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    extra: list[str] = []
    needed = list(needed)
    stubs = path.parent / f".stubs-{path.name}"
    if needed:
        stubs.mkdir(exist_ok=True)
        extra += ["-Wl,--no-as-needed", f"-L{stubs}"]
        for name in needed:
            _compile(stubs / name, name, "int ortgpu_stub(void) { return 0; }\n")
            extra.append(f"-l:{name}")
    if rpath:
        extra += ["-Wl,--disable-new-dtags", "-Wl,-rpath," + ":".join(rpath)]
    if runpath:
        extra += ["-Wl,--enable-new-dtags", "-Wl,-rpath," + ":".join(runpath)]
    _compile(path, soname or path.name, source, extra)
    shutil.rmtree(stubs, ignore_errors=True)
    return path


def fatbin_source(entries: Sequence[tuple[int, int]]) -> str:
    """C source of a library whose .nv_fatbin section holds one container with (kind, arch) entries."""
    payload = b"\0" * 16
    body = b""
    for kind, arch in entries:
        header = bytearray(64)
        struct.pack_into("<HHIQ", header, 0, kind, 0x0101, 64, len(payload))
        struct.pack_into("<I", header, 28, arch)
        body += bytes(header) + payload
    blob = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body
    values = ", ".join(str(b) for b in blob)
    return (
        f'__attribute__((used, section(".nv_fatbin"))) const unsigned char ortgpu_fatbin[{len(blob)}] = {{{values}}};\n'
        + _BODY
    )


def _record_line(relative: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{relative},sha256={digest},{len(data)}"


def install_dist(
    site: Path, name: str, version: str, files: Mapping[str, bytes], top_level: str = "onnxruntime"
) -> Path:
    """Write `files` under `site` plus a pip-style dist-info: METADATA, top_level.txt, INSTALLER, hashed RECORD."""
    for relative, data in files.items():
        target = site / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "top_level.txt").write_text(top_level + "\n")
    (info / "INSTALLER").write_text("pip\n")
    lines = [_record_line(rel, data) for rel, data in files.items()]
    lines.append(f"{info.name}/RECORD,,")
    (info / "RECORD").write_text("\n".join(lines) + "\n")
    return info


def package_info(name: str, version: str, cuda_version: str | None) -> bytes:
    text = f"package_name = '{name}'\n__version__ = '{version}'\n"
    if cuda_version:
        text += f"cuda_version = '{cuda_version}'\n"
    return text.encode()


def fake_ort(
    site: Path,
    *,
    name: str = "onnxruntime-gpu",
    version: str = "1.31.1",
    cuda_version: str | None = "13.0",
    cuda_needs: Sequence[str] | None = ("libcublasLt.so.13", "libcudart.so.13", "libcuda.so.1"),
    cuda_source: str = _BODY,
) -> Path:
    """An onnxruntime package in `site` whose provider libraries are real ELF files with the given needs.

    `cuda_needs=None` makes a CPU build (no CUDA provider library).
    """
    build = site / ".build"
    files = {
        "onnxruntime/__init__.py": b"",
        "onnxruntime/capi/__init__.py": b"",
        "onnxruntime/capi/build_and_package_info.py": package_info(name, version, cuda_version),
    }
    shared = build_lib(build / "libonnxruntime_providers_shared.so")
    files["onnxruntime/capi/libonnxruntime_providers_shared.so"] = shared.read_bytes()
    if cuda_needs is not None:
        cuda = build_lib(build / "libonnxruntime_providers_cuda.so", needed=cuda_needs, source=cuda_source)
        files["onnxruntime/capi/libonnxruntime_providers_cuda.so"] = cuda.read_bytes()
    install_dist(site, name, version, files)
    shutil.rmtree(build)
    for lib in (site / "onnxruntime" / "capi").glob("*.so"):
        lib.chmod(0o755)
    return site / "onnxruntime"


class NvmlFailure(Exception):
    """Stands in for pynvml.NVMLError."""


@dataclass
class FakeGpu:
    name: str = "NVIDIA H200"
    cc: tuple[int, int] = (9, 0)
    uuid: str = "GPU-8a1f0000-1111-2222-3333-444455556666"
    memory: int = 150_000_000_000
    bus: bytes = b"00000000:19:00.0"


class FakeNvml:
    """A pynvml look-alike: a driver with GPUs, or one whose init fails like a missing libnvidia-ml."""

    NVMLError = NvmlFailure

    def __init__(
        self,
        gpus: Sequence[FakeGpu] = (FakeGpu(),),
        driver: str = "580.95.05",
        cuda: int = 13000,
        fail_init: str | None = None,
    ) -> None:
        self.gpus, self.driver, self.cuda, self.fail_init = list(gpus), driver, cuda, fail_init
        self.shutdowns = 0

    def nvmlInit(self) -> None:
        if self.fail_init:
            raise NvmlFailure(self.fail_init)

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.driver

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return self.cuda

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:
        return self.gpus[index]

    def nvmlDeviceGetName(self, gpu: FakeGpu) -> bytes:
        return gpu.name.encode()  # old pynvml versions return bytes

    def nvmlDeviceGetUUID(self, gpu: FakeGpu) -> str:
        return gpu.uuid

    def nvmlDeviceGetMemoryInfo(self, gpu: FakeGpu) -> object:
        return type("Memory", (), {"total": gpu.memory, "used": 1 << 20})()

    def nvmlDeviceGetCudaComputeCapability(self, gpu: FakeGpu) -> tuple[int, int]:
        return gpu.cc

    def nvmlDeviceGetPciInfo(self, gpu: FakeGpu) -> object:
        return type("Pci", (), {"busId": gpu.bus})()
