"""`ortgpu bundle` (library): the exact files of a deployment, a manifest that proves them, nothing written outside."""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from ortgpu.bundle import BundleError, BundleRequest, FileKind, Target, create_bundle, providers_from_text
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import ExitCode
from tests.support.realpackages import (
    build_pe,
    build_release_folder,
    build_so,
    build_stubs,
    have_gcc,
    real_wheel,
    tar_folder,
)

linux_gcc = pytest.mark.skipif(not have_gcc() or not sys.platform.startswith("linux"), reason="needs gcc on Linux")

CUDA12 = ("libcublasLt.so.12", "libcublas.so.12", "libcudart.so.12", "libcudnn.so.9")  # as 1.20 links
CUDNN_SUBS = ("ops", "cnn", "adv", "graph", "heuristic", "engines_precompiled", "engines_runtime_compiled")


def cuda_folder(folder: Path, version: str, cuda_major: int, linked: tuple[str, ...]) -> Path:
    """Stub CUDA/cuDNN libraries for everything the matrix says this ORT needs, laid out like the nvidia wheels:
    cuBLAS needs cuBLASLt; libcudnn.so.9 is a link to the versioned file, its sub-libraries sit next to it."""
    from ortgpu.knowledge import matrix

    row = matrix.requirements_for(version, cuda_major)
    names = {*linked, *(row.all_libraries_linux if row else ())}
    names = {n for n in names if not n.startswith(("libcudnn", "libcuda.so"))}
    lt = f"libcublasLt.so.{cuda_major}"
    stubs = build_stubs(folder, sorted(names - {f"libcublas.so.{cuda_major}"}))
    build_so(folder / f"libcublas.so.{cuda_major}", soname=f"libcublas.so.{cuda_major}", needs=[stubs[lt]])
    build_so(folder / "libcudnn.so.9.8.0", soname="libcudnn.so.9")
    (folder / "libcudnn.so.9").symlink_to("libcudnn.so.9.8.0")
    for sub in CUDNN_SUBS:
        build_so(folder / f"libcudnn_{sub}.so.9.8.0", soname=f"libcudnn_{sub}.so.9", needs=[stubs[lt]])
        (folder / f"libcudnn_{sub}.so.9").symlink_to(f"libcudnn_{sub}.so.9.8.0")
    return folder


def listing(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The system temp folder, made visible: what archive extraction leaves there can be checked."""
    folder = tmp_path / "system-tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def release(tmp_path: Path) -> Path:
    if not have_gcc() or not sys.platform.startswith("linux"):
        pytest.skip("needs gcc on Linux")
    return build_release_folder(tmp_path / "pkg", version="1.20.1", cuda_needs=CUDA12)


def check_manifest(out: Path) -> dict:
    doc = json.loads((out / "manifest.json").read_text())
    assert doc["schema"] == "ortgpu.bundle-manifest/v1"
    manifest = doc["result"]
    for entry in manifest["files"]:
        path = out / entry["path"]
        if entry["link_to"]:
            assert path.is_symlink() and path.resolve() == (path.parent / entry["link_to"]).resolve()
            continue
        assert path.is_file() and not path.is_symlink(), entry["path"]
        assert entry["size"] == path.stat().st_size
        assert entry["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest(), entry["path"]
        assert entry["why"]
    on_disk = {p for p in listing(out) if (out / p).is_file() or (out / p).is_symlink()}
    assert on_disk - {"manifest.json", "README-bundle.md"} == {e["path"] for e in manifest["files"]}
    return manifest


def assert_complete_per_package_analysis(out: Path) -> None:
    """What `ortgpu doctor --package DIR` checks: every library found (the driver, libcuda, is the target's)."""
    from ortgpu.doctor.package import diagnose_package
    from ortgpu.doctor.verdict import Status

    report = diagnose_package(out)
    failed = [
        c.id
        for c in report.checks
        if c.status is Status.FAIL and c.id != "host.driver" and c.details.get("component") != "CUDA driver"
    ]
    assert failed == []
    assert report.analysis.version is not None


@linux_gcc
def test_release_folder_bundle_is_complete_and_self_describing(release: Path, tmp_path: Path) -> None:
    libs = cuda_folder(tmp_path / "cuda", "1.20.1", 12, CUDA12)
    before = listing(tmp_path)
    out = tmp_path / "bundle"
    result = create_bundle(BundleRequest(out=out, package=release, library_dirs=(libs,)))
    assert result.complete and result.manifest.target is Target.LINUX_X64
    assert result.verification and result.verification.startswith("complete")
    assert listing(tmp_path) - before == {"bundle", *(f"bundle/{p}" for p in listing(out))}  # only DIR written

    manifest = check_manifest(out)
    names = {Path(f["path"]).name: f for f in manifest["files"]}
    for name in ("libonnxruntime.so.1.20.1", "libonnxruntime_providers_cuda.so", "libonnxruntime_providers_shared.so"):
        assert name in names
    assert names["libonnxruntime.so.1"]["link_to"] == "libonnxruntime.so.1.20.1"
    assert "libcublasLt.so.12" in names and "DT_NEEDED" in names["libcublas.so.12"]["why"]
    # cuDNN 9's sub-libraries come along: libcudnn.so.9 opens them at run time
    for sub in CUDNN_SUBS:
        assert names[f"libcudnn_{sub}.so.9"]["why"] == "cuDNN: opened at run time by libcudnn.so.9"
    assert (out / "lib" / "libcudnn.so.9").read_bytes() == (libs / "libcudnn.so.9.8.0").read_bytes()
    assert "include/onnxruntime_c_api.h" in {f["path"] for f in manifest["files"]}
    requirements = {r["what"]: r for r in manifest["system_requirements"]}
    assert requirements["NVIDIA driver"]["minimum"] and requirements["glibc"]["minimum"]
    readme = (out / "README-bundle.md").read_text()
    assert 'LD_LIBRARY_PATH="$BUNDLE/lib' in readme and "add_library(onnxruntime SHARED IMPORTED)" in readme
    assert_complete_per_package_analysis(out)


@linux_gcc
def test_archive_bundle_takes_headers_from_the_archive_and_leaves_no_temp(
    release: Path, tmp_path: Path, private_tmp: Path
) -> None:
    libs = cuda_folder(tmp_path / "cuda", "1.20.1", 12, CUDA12)
    archive = tar_folder(release, tmp_path / "onnxruntime-linux-x64-gpu-1.20.1.tgz")
    result = create_bundle(BundleRequest(out=tmp_path / "b", package=archive, library_dirs=(libs,)))
    assert result.complete
    assert (tmp_path / "b" / "include" / "onnxruntime_c_api.h").read_text() == "/* header */\n"
    assert result.manifest.source == archive.name
    assert list(private_tmp.iterdir()) == []


@linux_gcc
def test_missing_libraries_make_an_incomplete_bundle_that_says_where_to_get_them(release: Path, tmp_path: Path) -> None:
    libs = tmp_path / "cuda"
    build_stubs(libs, ["libcudart.so.12"])
    result = create_bundle(BundleRequest(out=tmp_path / "b", package=release, library_dirs=(libs,)))
    assert not result.complete
    missing = {m.name: m for m in result.manifest.missing}
    assert (
        missing["libcublasLt.so.12"].required
        and "pip install nvidia-cublas-cu12" in missing["libcublasLt.so.12"].get_it
    )
    assert "lib/libcudart.so.12" in {f.path for f in result.manifest.files}
    assert "INCOMPLETE" in (tmp_path / "b" / "README-bundle.md").read_text()


@linux_gcc
def test_output_folder_rules(release: Path, tmp_path: Path) -> None:
    out = tmp_path / "b"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(BundleError) as caught:
        create_bundle(BundleRequest(out=out, package=release, providers=()))
    assert caught.value.exit_code is ExitCode.BAD_INPUT and "not empty" in caught.value.message
    assert listing(out) == {"keep.txt"} and sorted(p.name for p in tmp_path.iterdir()) == ["b", "pkg"]
    result = create_bundle(BundleRequest(out=out, package=release, providers=(), force=True))
    assert result.complete and not (out / "keep.txt").exists()
    assert {f.kind for f in result.manifest.files} >= {FileKind.ORT_CORE}
    assert not any("providers" in f.path for f in result.manifest.files)  # CPU only: no provider libraries
    with pytest.raises(BundleError):
        create_bundle(BundleRequest(out=tmp_path / "no" / "such" / "b", package=release))


@linux_gcc
def test_bad_targets_and_providers_are_bad_input(release: Path, tmp_path: Path) -> None:
    with pytest.raises(BundleError) as target:
        create_bundle(BundleRequest(out=tmp_path / "b", package=release, target=Target.WIN_X64))
    assert "linux-x64 package" in target.value.message
    with pytest.raises(BundleError) as provider:
        create_bundle(BundleRequest(out=tmp_path / "b", package=release, providers=(ExecutionProvider.TENSORRT,)))
    assert "no tensorrt provider" in provider.value.message
    assert not (tmp_path / "b").exists() and not any(p.name.endswith(".partial") for p in tmp_path.iterdir())
    with pytest.raises(BundleError):
        providers_from_text("cuda,rocm")
    assert providers_from_text("cpu") == (ExecutionProvider.CPU,)


def windows_release(tmp_path: Path, version: str = "1.20.1") -> Path:
    """A release zip shaped like onnxruntime-win-x64-gpu-X.zip, with hand-written DLLs."""
    vc = ["MSVCP140.dll", "VCRUNTIME140.dll", "VCRUNTIME140_1.dll", "KERNEL32.dll"]
    root = f"onnxruntime-win-x64-gpu-{version}"
    files = {
        f"{root}/lib/onnxruntime.dll": build_pe([*vc, "ADVAPI32.dll"]),
        f"{root}/lib/onnxruntime.lib": b"!<arch>\n",
        f"{root}/lib/onnxruntime_providers_shared.dll": build_pe(["VCRUNTIME140.dll", "KERNEL32.dll"]),
        f"{root}/lib/onnxruntime_providers_cuda.dll": build_pe(
            ["cublasLt64_12.dll", "cublas64_12.dll", "cudart64_12.dll", "cudnn64_9.dll",
             "onnxruntime_providers_shared.dll", *vc]
        ),
        f"{root}/include/onnxruntime_c_api.h": b"/* header */\n",
        f"{root}/LICENSE": b"MIT\n",
        f"{root}/VERSION_NUMBER": f"{version}\n".encode(),
    }  # fmt: skip
    path = tmp_path / f"{root}.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def test_windows_bundle_from_another_os_takes_dlls_from_libs_from(tmp_path: Path) -> None:
    from ortgpu.knowledge import matrix

    dlls = tmp_path / "cuda-win"
    dlls.mkdir()
    row = matrix.requirements_for("1.20.1", 12)
    names = {"cublasLt64_12.dll", "cudart64_12.dll", "cudnn64_9.dll", *(row.all_libraries_windows if row else ())}
    names |= {f"cudnn_{sub}64_9.dll" for sub in ("ops", "cnn", "graph")}
    for name in names - {"nvcuda.dll", "cublas64_12.dll"}:
        (dlls / name).write_bytes(
            build_pe(["cublasLt64_12.dll", "KERNEL32.dll"] if "cudnn_" in name else ["KERNEL32.dll"])
        )
    (dlls / "cublas64_12.dll").write_bytes(build_pe(["cublasLt64_12.dll", "KERNEL32.dll"]))
    out = tmp_path / "b"
    result = create_bundle(BundleRequest(out=out, package=windows_release(tmp_path), library_dirs=(dlls,)))
    paths = {f.path for f in result.manifest.files}
    assert {"lib/onnxruntime.dll", "lib/onnxruntime.lib", "lib/cudnn_ops64_9.dll", "LICENSE"} <= paths
    assert "include/onnxruntime_c_api.h" in paths
    assert not any(f.link_to for f in result.manifest.files)
    requirements = {r.what: r for r in result.manifest.system_requirements}
    assert requirements["VC++ 2015-2022 redistributable (x64)"].minimum == "14.40"
    assert result.manifest.environment == {"PATH": "<BUNDLE>\\lib;%PATH%"}
    assert "IMPORTED_IMPLIB" in (out / "README-bundle.md").read_text()
    check_manifest(out)
    # required DLLs found; anything still missing is optional (opened by ORT for some operators only)
    assert not [m.name for m in result.manifest.missing if m.required]
    assert result.complete


def test_installed_wheel_cpu_bundle(tmp_path: Path) -> None:
    from ortgpu.bundle import installed_wheel_folder

    capi = installed_wheel_folder() / "capi"
    if not list(capi.glob("libonnxruntime.so.*")) or not sys.platform.startswith("linux"):
        pytest.skip("the installed onnxruntime wheel ships no libonnxruntime.so")
    result = create_bundle(BundleRequest(out=tmp_path / "b"))
    assert result.complete
    kinds = {f.kind for f in result.manifest.files}
    assert FileKind.ORT_CORE in kinds and FileKind.DEPENDENCY not in kinds
    assert result.manifest.providers in ((), ("cuda",), ("cuda", "tensorrt"))
    check_manifest(tmp_path / "b")


@pytest.mark.network
@pytest.mark.slow
@linux_gcc
def test_real_gpu_wheel_bundle_passes_the_package_analysis(tmp_path: Path) -> None:
    wheel = real_wheel("1.31.1", "manylinux_2_28_x86_64")
    libs = cuda_folder(tmp_path / "cuda", "1.31.1", 13, ("libcublasLt.so.13", "libcublas.so.13", "libcudart.so.13",
                                                          "libcurand.so.10"))  # fmt: skip
    out = tmp_path / "bundle"
    result = create_bundle(
        BundleRequest(out=out, package=wheel, providers=(ExecutionProvider.CUDA,), library_dirs=(libs,))
    )
    assert result.complete, result.manifest.missing
    assert result.manifest.ort_version == "1.31.1"
    manifest = check_manifest(out)
    names = {Path(f["path"]).name for f in manifest["files"]}
    assert {"libonnxruntime.so.1.31.1", "libonnxruntime_providers_cuda.so", "libcublasLt.so.13"} <= names
    assert "libonnxruntime_providers_tensorrt.so" not in names
    assert any("headers" in w for w in result.warnings)  # a wheel has no include/
    assert_complete_per_package_analysis(out)
