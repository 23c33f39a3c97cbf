"""ORT packages for the package tests: real onnxruntime-gpu wheels fetched with pip (cached), and small ones built here.

Real wheels are downloaded once into ``~/.cache/ortgpu-tests/wheels`` (or the folder named by the
environment variable ORTGPU_TEST_CACHE) and reused by later runs; without network the tests that
need them are skipped with pip's reason. The small packages are built in code: ELF libraries with
gcc (their DT_NEEDED come from stub libraries carrying the wanted sonames) and PE DLLs written byte
by byte (import and delay-import tables), so every Linux and Windows case runs without network.
"""

from __future__ import annotations

import io
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

# The two real wheels the suite uses: the smallest Linux and Windows GPU builds of the four checked by hand.
LINUX_WHEEL = ("1.16.3", "manylinux2014_x86_64")  # CUDA 11, cuDNN 8, TensorRT 8 (157 MB)
WINDOWS_WHEEL = ("1.18.0", "win_amd64")  # CUDA 11, cuDNN 8, TensorRT 10, VC++ 14.37 (158 MB)


def wheel_cache() -> Path:
    override = os.environ.get("ORTGPU_TEST_CACHE")
    return Path(override) if override else Path.home() / ".cache" / "ortgpu-tests" / "wheels"


def real_wheel(version: str, platform: str, python: str = "3.11", distribution: str = "onnxruntime-gpu") -> Path:
    """The cached wheel, downloaded with `pip download` on first use; skips the test when pip cannot fetch it."""
    cache = wheel_cache()
    pattern = f"{distribution.replace('-', '_')}-{version}-cp{python.replace('.', '')}-*.whl"
    platform_key = platform.split("_", 1)[-1]  # "x86_64" / "amd64": manylinux2014 also names manylinux_2_17
    for hit in sorted(cache.glob(pattern)):
        if platform_key in hit.name and (platform.startswith("win") == ("win" in hit.name)):
            return hit
    cache.mkdir(parents=True, exist_ok=True)
    # Download into a private folder, then move: an interrupted download never leaves a broken cached wheel.
    with tempfile.TemporaryDirectory(dir=cache, prefix=".download-") as tmp:
        command = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--platform", platform,
            "--python-version", python, f"{distribution}=={version}", "-d", tmp, "--quiet",
        ]  # fmt: skip
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"cannot download {distribution}=={version} ({platform}): {exc}")
        wheels = list(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or not wheels:
            reason = (done.stderr or done.stdout).strip().splitlines()
            pytest.skip(f"cannot download {distribution}=={version} ({platform}): {reason[-1] if reason else '?'}")
        target = cache / wheels[0].name
        os.replace(wheels[0], target)
    return target


# --- small ELF libraries built with gcc -------------------------------------------------------------------------------


def have_gcc() -> bool:
    return shutil.which("gcc") is not None


def build_so(path: Path, soname: str | None = None, needs: Sequence[Path] = ()) -> Path:
    """A shared library; each path in `needs` becomes a DT_NEEDED entry (its soname)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    source = path.parent / f".{path.name}.c"
    source.write_text("int ortgpu_test_symbol(void) { return 1; }\n", encoding="utf-8")
    command = ["gcc", "-shared", "-fPIC", "-o", str(path), str(source)]
    if soname:
        command.append(f"-Wl,-soname,{soname}")
    command += ["-Wl,--no-as-needed", *[str(n) for n in needs]]
    subprocess.run(command, check=True, capture_output=True)
    source.unlink()
    return path


def build_stubs(folder: Path, sonames: Iterable[str]) -> dict[str, Path]:
    """One tiny library per soname, each carrying that soname (for linking against, or for the loader to find)."""
    return {name: build_so(folder / name, soname=name) for name in sonames}


def build_release_folder(
    root: Path,
    version: str = "1.20.1",
    cuda_needs: Sequence[str] | None = ("libcublasLt.so.12", "libcublas.so.12", "libcudart.so.12", "libcudnn.so.9"),
    trt_needs: Sequence[str] = (),
    commit: str = "1f2e3d4c5b6a",
) -> Path:
    """An extracted C/C++ release like onnxruntime-linux-x64-gpu-X.tgz: VERSION_NUMBER, GIT_COMMIT_ID, lib/.

    `cuda_needs=None` builds a CPU release (no CUDA provider); `trt_needs` adds a TensorRT provider.
    """
    folder = root / f"onnxruntime-linux-x64-{'gpu' if cuda_needs is not None else 'cpu'}-{version}"
    lib = folder / "lib"
    stubs = build_stubs(root / ".stubs", {*(cuda_needs or ()), *trt_needs})
    (folder / "include").mkdir(parents=True)
    (folder / "include" / "onnxruntime_c_api.h").write_text("/* header */\n", encoding="utf-8")
    (folder / "VERSION_NUMBER").write_text(f"{version}\n", encoding="utf-8")
    (folder / "GIT_COMMIT_ID").write_text(f"{commit}\n", encoding="utf-8")
    build_so(lib / f"libonnxruntime.so.{version}", soname="libonnxruntime.so.1")
    (lib / "libonnxruntime.so").symlink_to(f"libonnxruntime.so.{version}")
    shared = build_so(lib / "libonnxruntime_providers_shared.so", soname="libonnxruntime_providers_shared.so")
    if cuda_needs is not None:
        build_so(lib / "libonnxruntime_providers_cuda.so", needs=[*(stubs[n] for n in cuda_needs), shared])
    if trt_needs:
        build_so(lib / "libonnxruntime_providers_tensorrt.so", needs=[*(stubs[n] for n in trt_needs), shared])
    shutil.rmtree(root / ".stubs", ignore_errors=True)  # no stubs for a CPU release
    return folder


def tar_folder(folder: Path, target: Path) -> Path:
    with tarfile.open(target, "w:gz") as archive:
        archive.add(folder, arcname=folder.name)
    return target


def zip_folder(folder: Path, target: Path, root_name: str | None = None) -> Path:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.is_symlink():
                name = path.relative_to(folder).as_posix()
                archive.write(path, f"{root_name}/{name}" if root_name else name)
    return target


def tar_with(target: Path, members: Sequence[tarfile.TarInfo | tuple[str, bytes]]) -> Path:
    """A .tgz with exactly these members: (name, content) for regular files, TarInfo for anything else."""
    with tarfile.open(target, "w:gz") as archive:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                archive.addfile(member)
            else:
                name, content = member
                info = tarfile.TarInfo(name)
                info.size = len(content)
                archive.addfile(info, io.BytesIO(content))
    return target


# --- small PE DLLs written byte by byte ----------------------------------------------------------------------------

PE_MACHINES = {"x64": 0x8664, "arm64": 0xAA64, "x86": 0x14C}


def _version_resource(rva: int, version: str) -> bytes:
    """A resource section holding one RT_VERSION entry (VS_VERSIONINFO with a VS_FIXEDFILEINFO)."""
    parts = [int(p) for p in [*version.split("."), "0", "0", "0"][:4]]
    ms, ls = (parts[0] << 16) | parts[1], (parts[2] << 16) | parts[3]
    key = "VS_VERSION_INFO\0".encode("utf-16-le")
    head = struct.pack("<HHH", 0, 52, 0) + key
    head += b"\0" * (-len(head) % 4)
    fixed = struct.pack("<13I", 0xFEEF04BD, 0x00010000, ms, ls, ms, ls, 0x3F, 0, 0x40004, 2, 0, 0, 0)
    blob = bytearray(head + fixed)
    struct.pack_into("<H", blob, 0, len(blob))
    # root dir -> type 16 -> name 1 -> language 0x409 -> data entry -> blob
    directory = bytearray()
    directory += struct.pack("<IIHHHH", 0, 0, 0, 0, 0, 1) + struct.pack("<II", 16, 0x80000000 | 24)
    directory += struct.pack("<IIHHHH", 0, 0, 0, 0, 0, 1) + struct.pack("<II", 1, 0x80000000 | 48)
    directory += struct.pack("<IIHHHH", 0, 0, 0, 0, 0, 1) + struct.pack("<II", 0x409, 72)
    directory += struct.pack("<IIII", rva + 88, len(blob), 0, 0)
    return bytes(directory) + bytes(blob)


def build_dll(
    imports: Sequence[str] = (),
    *,
    delay_imports: Sequence[str] = (),
    machine: str = "x64",
    version: str | None = None,
    linker: tuple[int, int] = (14, 40),
) -> bytes:
    """A minimal PE32+ DLL: its import and delay-import tables, and when `version` is given a VERSIONINFO."""
    section_rva = 0x1000
    data = bytearray()
    everything = [*imports, *delay_imports]
    names: dict[str, int] = {}
    for dll in everything:
        names[dll] = section_rva + len(data)
        data += dll.encode("ascii") + b"\0"
        data += b"\0" * (-len(data) % 8)
    thunks: dict[str, tuple[int, int]] = {}
    for dll in everything:
        thunks[dll] = (section_rva + len(data), section_rva + len(data) + 16)
        data += struct.pack("<QQ", 0x8000000000000001, 0) * 2
    module_handle = section_rva + len(data)
    data += b"\0" * 8
    import_rva = section_rva + len(data)
    for dll in imports:
        data += struct.pack("<IIIII", thunks[dll][0], 0, 0, names[dll], thunks[dll][1])
    data += b"\0" * 20
    import_size = section_rva + len(data) - import_rva
    delay_rva = section_rva + len(data)
    for dll in delay_imports:
        data += struct.pack("<8I", 1, names[dll], module_handle, thunks[dll][1], thunks[dll][0], 0, 0, 0)
    data += b"\0" * 32
    delay_size = section_rva + len(data) - delay_rva
    sections = [(b".rdata", bytes(data), section_rva)]
    rsrc_rva = section_rva + -(-len(data) // 0x1000) * 0x1000
    if version:
        sections.append((b".rsrc", _version_resource(rsrc_rva, version), rsrc_rva))
    directories = [(0, 0)] * 16
    directories[1] = (import_rva, import_size)
    if delay_imports:
        directories[13] = (delay_rva, delay_size)
    if version:
        directories[2] = (rsrc_rva, len(sections[1][1]))
    offset = 0x400
    headers, body = b"", b""
    for name, content, rva in sections:
        raw = content + b"\0" * (-len(content) % 0x200)
        headers += struct.pack("<8sIIIIIIHHI", name, len(content), rva, len(raw), offset, 0, 0, 0, 0, 0x40000040)
        body += raw
        offset += len(raw)
    image_size = sections[-1][2] + -(-len(sections[-1][1]) // 0x1000) * 0x1000
    dos = bytearray(0x40)
    dos[0:2] = b"MZ"
    struct.pack_into("<I", dos, 0x3C, 0x40)
    coff = struct.pack("<HHIIIHH", PE_MACHINES[machine], len(sections), 0, 0, 0, 240, 0x2022)
    optional = struct.pack("<HBBIIIII", 0x20B, linker[0], linker[1], 0, len(body), 0, 0, section_rva)
    optional += struct.pack("<QII", 0x180000000, 0x1000, 0x200)
    optional += struct.pack("<HHHHHHI", 6, 0, 0, 0, 6, 0, 0)
    optional += struct.pack("<IIIHH", image_size, 0x400, 0, 2, 0x160)
    optional += struct.pack("<QQQQII", 0x100000, 0x1000, 0x100000, 0x1000, 0, 16)
    optional += b"".join(struct.pack("<II", rva, size) for rva, size in directories)
    head = bytes(dos) + b"PE\0\0" + coff + optional + headers
    return head + b"\0" * (0x400 - len(head)) + body


def build_pe(
    imports: Sequence[str], delay_imports: Sequence[str] = (), machine: str = "x64", linker: tuple[int, int] = (14, 40)
) -> bytes:
    """A minimal PE32+ DLL with its import and delay-import tables (no version resource)."""
    return build_dll(imports, delay_imports=delay_imports, machine=machine, linker=linker)


def build_windows_wheel(
    target_dir: Path,
    version: str = "1.19.2",
    machine: str = "x64",
    cuda_imports: Sequence[str] = ("cublasLt64_12.dll", "cublas64_12.dll", "cudnn64_9.dll", "cudart64_12.dll"),
    delay_imports: Sequence[str] = (),
    linker: tuple[int, int] = (14, 40),
) -> Path:
    """A wheel shaped like onnxruntime-gpu for Windows, with hand-written DLLs."""
    tag = {"x64": "win_amd64", "arm64": "win_arm64"}[machine]
    name = f"onnxruntime_gpu-{version}"
    path = target_dir / f"{name}-cp311-cp311-{tag}.whl"
    vc = ["MSVCP140.dll", "VCRUNTIME140.dll", "VCRUNTIME140_1.dll", "KERNEL32.dll"]
    capi = "onnxruntime/capi"
    files = {
        f"{capi}/onnxruntime_pybind11_state.pyd": build_pe(["python311.dll", *vc], machine=machine, linker=linker),
        f"{capi}/onnxruntime_providers_shared.dll": build_pe(vc[1::2], machine=machine, linker=linker),
        f"{capi}/onnxruntime_providers_cuda.dll": build_pe(
            [*cuda_imports, "onnxruntime_providers_shared.dll", *vc], delay_imports, machine=machine, linker=linker
        ),
        "onnxruntime/__init__.py": b"",
        f"{name}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: onnxruntime-gpu\nVersion: {version}\n".encode(),
        f"{name}.dist-info/WHEEL": f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-{tag}\n".encode(),
    }  # fmt: skip
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, content in files.items():
            archive.writestr(member, content)
    return path
