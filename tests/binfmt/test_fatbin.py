"""Reading the GPU architectures a CUDA library carries, and the CUDA binary-compatibility rules."""

from __future__ import annotations

import _ctypes
from pathlib import Path

import pytest
from tests.support.fake_libs import build_lib, fatbin_source, needs_gcc

from ortgpu.binfmt.fatbin import KernelArchs, arch_support, read_kernel_archs
from ortgpu.gpu_arch import ArchSupport


@needs_gcc
def test_reads_sass_and_ptx_entries(tmp_path) -> None:
    lib = build_lib(tmp_path / "libkernels.so", source=fatbin_source([(2, 75), (2, 90), (2, 120), (1, 90), (2, 90)]))
    archs = read_kernel_archs(lib)
    assert archs == KernelArchs(sass=(75, 90, 120), ptx=(90,), containers=1)


@needs_gcc
def test_library_without_device_code(tmp_path) -> None:
    assert read_kernel_archs(build_lib(tmp_path / "libplain.so")) is None
    assert read_kernel_archs(Path(_ctypes.__file__)) is None
    assert read_kernel_archs(tmp_path / "absent.so") is None
    (tmp_path / "text.so").write_text("not an ELF file")
    assert read_kernel_archs(tmp_path / "text.so") is None


@pytest.mark.parametrize(
    ("sass", "ptx", "cc", "support"),
    [
        ((75, 80, 86, 89, 90, 120), (), (9, 0), ArchSupport.NATIVE),
        ((80,), (), (8, 6), ArchSupport.COMPATIBLE),  # same major, higher minor runs sm_80 SASS
        ((86,), (), (8, 0), ArchSupport.NONE),  # but not the other way round
        ((75, 80, 90), (), (10, 0), ArchSupport.NONE),  # Blackwell needs its own kernels or PTX
        ((75, 80), (80,), (9, 0), ArchSupport.PTX_JIT),
        ((90,), (90,), (8, 9), ArchSupport.NONE),  # PTX never JITs to an older arch
    ],
)
def test_arch_support_rules(sass, ptx, cc, support) -> None:
    assert arch_support(KernelArchs(sass=sass, ptx=ptx, containers=1), cc) is support


def test_every_support_value_is_reachable() -> None:
    archs = KernelArchs(sass=(80,), ptx=(75,), containers=1)
    seen = {arch_support(archs, cc) for cc in [(8, 0), (8, 6), (9, 0), (7, 0)]}
    assert seen == {ArchSupport.NATIVE, ArchSupport.COMPATIBLE, ArchSupport.PTX_JIT, ArchSupport.NONE}
