"""Library resolution the way ld.so does it: search order, $ORIGIN, the cache, pip packages, wrong majors."""

from __future__ import annotations

import _ctypes
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.support.fake_libs import build_lib, needs_gcc

from ortgpu.binfmt.binary import ElfInfo, read_elf
from ortgpu.loader.linux import (
    LibStatus,
    LoaderEnv,
    Source,
    is_system_library,
    nvidia_pip_dirs,
    parse_ld_so_cache,
    parse_ldconfig_output,
    resolve,
    resolve_needs,
    soname_major,
)

REAL_ELF = Path(_ctypes.__file__)  # an ELF shared object of this machine's architecture, always present
MACHINE = read_elf(REAL_ELF).machine


def _place(directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REAL_ELF, directory / name)
    return directory / name


def _env(tmp_path: Path, **kw) -> LoaderEnv:
    defaults = {
        "machine": MACHINE,
        "ld_library_path": (),
        "cache": {},
        "default_dirs": (),
        "pip_dirs": (),
        "cwd": tmp_path,
    }
    defaults.update(kw)
    return LoaderEnv(**defaults)


def _requester(tmp_path: Path, *, rpath=(), runpath=()) -> ElfInfo:
    path = tmp_path / "app" / "libprovider.so"
    return ElfInfo(
        path=path, machine=MACHINE, soname=None, needed=(), rpath=tuple(rpath), runpath=tuple(runpath), glibc_floor=None
    )


def test_search_order_ld_library_path_then_runpath_then_cache_then_default(tmp_path) -> None:
    ld = _place(tmp_path / "ld", "libdep.so.1")
    run = _place(tmp_path / "app" / "deps", "libdep.so.1")
    cached = _place(tmp_path / "cached", "libdep.so.1")
    default = _place(tmp_path / "default", "libdep.so.1")
    env = _env(
        tmp_path,
        ld_library_path=(str(tmp_path / "ld"),),
        cache={"libdep.so.1": (cached,)},
        default_dirs=(tmp_path / "default",),
    )
    requester = _requester(tmp_path, runpath=("$ORIGIN/deps",))
    result = resolve("libdep.so.1", requester, env)
    assert (result.status, result.path, result.source) == (LibStatus.FOUND, ld, Source.LD_LIBRARY_PATH)
    assert [(c.path, c.source) for c in result.also_at] == [
        (run, Source.RUNPATH),
        (cached, Source.LD_SO_CACHE),
        (default, Source.DEFAULT_DIR),
    ]
    assert result.also_at[0].directory == "$ORIGIN/deps"  # as written in the binary
    # without LD_LIBRARY_PATH, RUNPATH ($ORIGIN expanded) comes next
    env2 = _env(tmp_path, cache={"libdep.so.1": (cached,)}, default_dirs=(tmp_path / "default",))
    assert resolve("libdep.so.1", requester, env2).path == run
    assert resolve("libdep.so.1", None, env2).path == cached  # no requester: no RUNPATH
    assert resolve("libdep.so.1", None, _env(tmp_path, default_dirs=(tmp_path / "default",))).path == default


def test_rpath_comes_before_ld_library_path_but_only_without_runpath(tmp_path) -> None:
    rp = _place(tmp_path / "rp", "libdep.so.1")
    ld = _place(tmp_path / "ld", "libdep.so.1")
    env = _env(tmp_path, ld_library_path=(str(tmp_path / "ld"),))
    only_rpath = _requester(tmp_path, rpath=(str(tmp_path / "rp"),))
    result = resolve("libdep.so.1", only_rpath, env)
    assert (result.path, result.source) == (rp, Source.RPATH)
    both = _requester(tmp_path, rpath=(str(tmp_path / "rp"),), runpath=("${ORIGIN}/nothing",))
    assert resolve("libdep.so.1", both, env).path == ld  # DT_RPATH is ignored when DT_RUNPATH exists


def test_empty_ld_library_path_entry_is_the_working_directory(tmp_path) -> None:
    here = _place(tmp_path / "cwd", "libdep.so.1")
    env = _env(tmp_path, ld_library_path=("", "/nonexistent"), cwd=tmp_path / "cwd")
    result = resolve("libdep.so.1", None, env)
    assert (result.path, result.source) == (here, Source.LD_LIBRARY_PATH)


def test_missing_wrong_major_and_missing_link(tmp_path) -> None:
    _place(tmp_path / "cuda11", "libcublasLt.so.11")
    _place(tmp_path / "cudnn", "libcudnn.so.9.14.0")
    env = _env(tmp_path, ld_library_path=(str(tmp_path / "cuda11"), str(tmp_path / "cudnn")))
    wrong = resolve("libcublasLt.so.12", None, env)
    assert wrong.status is LibStatus.WRONG_MAJOR
    assert [p.name for p in wrong.other_versions] == ["libcublasLt.so.11"]
    link = resolve("libcudnn.so.9", None, env)
    assert link.status is LibStatus.MISSING  # same major present, only the soname link is absent
    assert [p.name for p in link.other_versions] == ["libcudnn.so.9.14.0"]
    nothing = resolve("libcufft.so.12", None, env)
    assert (nothing.status, nothing.path, nothing.other_versions) == (LibStatus.MISSING, None, ())


def test_pip_only_and_pip_copy_beside_a_loader_hit(tmp_path) -> None:
    site = tmp_path / "site"
    pip_cudnn = _place(site / "nvidia" / "cudnn" / "lib", "libcudnn.so.9")
    pip_cublas = _place(site / "nvidia" / "cu13" / "lib", "libcublasLt.so.13")
    _place(site / "tensorrt_libs", "libnvinfer.so.10")
    system = _place(tmp_path / "usr-local-cuda", "libcublasLt.so.13")
    dirs = nvidia_pip_dirs([str(site), str(tmp_path / "elsewhere")])
    assert dirs == (site / "nvidia" / "cu13" / "lib", site / "nvidia" / "cudnn" / "lib", site / "tensorrt_libs")
    env = _env(tmp_path, cache={"libcublasLt.so.13": (system,)}, pip_dirs=dirs)
    cudnn = resolve("libcudnn.so.9", None, env)
    assert (cudnn.status, cudnn.path, cudnn.source, cudnn.ok) == (
        LibStatus.PIP_ONLY,
        pip_cudnn,
        Source.NVIDIA_PIP,
        False,
    )
    cublas = resolve("libcublasLt.so.13", None, env)
    assert (cublas.status, cublas.path) == (LibStatus.FOUND, system)
    assert [(c.path, c.source) for c in cublas.also_at] == [(pip_cublas, Source.NVIDIA_PIP)]


def test_files_of_another_class_or_not_elf_are_skipped(tmp_path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "libdep.so.1").write_bytes(b"\x7fELF\x01\x01\x01" + b"\0" * 40)  # 32-bit ELF header
    (tmp_path / "text").mkdir()
    (tmp_path / "text" / "libdep.so.1").write_text("INPUT(-lfoo)\n")  # a linker script
    good = _place(tmp_path / "good", "libdep.so.1")
    env = _env(tmp_path, ld_library_path=(str(bad), str(tmp_path / "text"), str(tmp_path / "good")))
    result = resolve("libdep.so.1", None, env)
    assert result.path == good
    assert set(result.skipped) == {str(bad / "libdep.so.1"), str(tmp_path / "text" / "libdep.so.1")}


def test_ldconfig_output_keeps_only_this_abi() -> None:
    text = (
        "3 libs found in cache `/etc/ld.so.cache'\n"
        "\tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda/lib64/libcudart.so.12\n"
        "\tlibcudart.so.12 (libc6) => /usr/lib32/libcudart.so.12\n"
        "\tlibz.so.1 (libc6,AArch64) => /lib/aarch64-linux-gnu/libz.so.1\n"
        "\tlibcuda.so.1 (libc6,x86-64, OS ABI: Linux 3.2.0) => /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
    )
    x86 = parse_ldconfig_output(text, "x86_64")
    assert x86 == {
        "libcudart.so.12": (Path("/usr/local/cuda/lib64/libcudart.so.12"),),
        "libcuda.so.1": (Path("/usr/lib/x86_64-linux-gnu/libcuda.so.1"),),
    }
    assert parse_ldconfig_output(text, "aarch64") == {"libz.so.1": (Path("/lib/aarch64-linux-gnu/libz.so.1"),)}


@pytest.mark.skipif(
    not Path("/etc/ld.so.cache").is_file() or not (shutil.which("ldconfig") or os.access("/sbin/ldconfig", os.X_OK)),
    reason="needs this machine's ld.so.cache and ldconfig",
)
def test_binary_cache_reader_agrees_with_ldconfig() -> None:
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    text = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, check=True).stdout
    from_text = parse_ldconfig_output(text, MACHINE)
    from_binary = parse_ld_so_cache(Path("/etc/ld.so.cache").read_bytes(), MACHINE)
    assert from_binary == from_text
    assert len(from_text) > 10


def test_soname_helpers() -> None:
    assert soname_major("libcublasLt.so.12") == ("libcublasLt.so", "12")
    assert soname_major("libcudart.so.11.0") == ("libcudart.so", "11")
    assert soname_major("libfoo.so") == ("libfoo.so", None)
    assert is_system_library("libc.so.6") and is_system_library("ld-linux-x86-64.so.2")
    assert is_system_library("libstdc++.so.6") and not is_system_library("libcudart.so.12")


def test_from_system_reads_the_environment(tmp_path) -> None:
    (tmp_path / "nvidia" / "cudnn" / "lib").mkdir(parents=True)
    env = LoaderEnv.from_system({"LD_LIBRARY_PATH": "/a:/b"}, cache_text="", sys_path=[str(tmp_path)])
    assert env.ld_library_path == ("/a", "/b")
    assert env.pip_dirs == (tmp_path / "nvidia" / "cudnn" / "lib",)
    assert env.cache == {}
    assert any(str(d).endswith("lib") for d in env.default_dirs)
    assert LoaderEnv.from_system({}, cache_text="").ld_library_path == ()


@needs_gcc
def test_transitive_needs_with_origin_runpath(tmp_path) -> None:
    app = tmp_path / "app"
    build_lib(app / "deps" / "libleaf.so.1")
    build_lib(app / "deps" / "libmid.so.1", needed=["libleaf.so.1"], runpath=["$ORIGIN"])
    top = build_lib(app / "libtop.so", needed=["libmid.so.1", "libabsent.so.3"], runpath=["$ORIGIN/deps"])
    results = {r.soname: r for r in resolve_needs(top, _env(tmp_path), lazy=["liblazy.so.2"])}
    assert results["libmid.so.1"].source is Source.RUNPATH
    assert results["libleaf.so.1"].path == app / "deps" / "libleaf.so.1"
    assert results["libleaf.so.1"].requested_by == "libmid.so.1"  # found through libmid's own RUNPATH
    assert results["libabsent.so.3"].status is LibStatus.MISSING
    assert results["liblazy.so.2"].lazy and not results["libmid.so.1"].lazy
    flat = {r.soname for r in resolve_needs(top, _env(tmp_path), recursive=False)}
    assert "libleaf.so.1" not in flat


@needs_gcc
def test_cudnn_sub_libraries_resolve_from_libcudnn_itself(tmp_path) -> None:
    site = tmp_path / "site"
    cudnn_dir = site / "nvidia" / "cudnn" / "lib"
    build_lib(cudnn_dir / "libcudnn.so.9", runpath=["$ORIGIN"])
    build_lib(cudnn_dir / "libcudnn_ops.so.9")
    provider = build_lib(tmp_path / "capi" / "libonnxruntime_providers_cuda.so")
    env = _env(tmp_path, pip_dirs=nvidia_pip_dirs([str(site)]))
    results = {r.soname: r for r in resolve_needs(provider, env, lazy=["libcudnn_ops.so.9", "libcudnn.so.9"])}
    assert results["libcudnn.so.9"].status is LibStatus.PIP_ONLY
    ops = results["libcudnn_ops.so.9"]
    assert (ops.status, ops.source, ops.requested_by) == (LibStatus.FOUND, Source.RUNPATH, "libcudnn.so.9")
