"""Which GPU architectures a CUDA library carries kernels for, read from its fatbin containers.

A CUDA library embeds "fatbinary" containers (ELF sections .nv_fatbin / __nv_relfatbin) holding
one entry per compiled architecture: SASS (cubin, runs on that arch and later minors of the same
major) or PTX (JIT-compiled by the driver for that arch or any later one). Reading the entry
headers is how `doctor` says whether the installed ORT build has kernels for this GPU, without a
version table and without a GPU.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

from ortgpu.gpu_arch import ArchSupport

__all__ = ["ArchSupport", "KernelArchs", "arch_support", "read_kernel_archs"]

_MAGIC = struct.pack("<I", 0xBA55ED50)
_SECTIONS = (".nv_fatbin", "__nv_relfatbin")
_KIND_PTX, _KIND_SASS = 1, 2


@dataclass(frozen=True)
class KernelArchs:
    sass: tuple[int, ...]  # e.g. (75, 80, 86, 89, 90, 120): sm_XY as X*10+Y
    ptx: tuple[int, ...]
    containers: int


def _fatbin_sections(path: Path) -> list[tuple[int, int]]:
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as handle:
        try:
            elf = ELFFile(handle)
            return [
                (s["sh_offset"], s["sh_size"])
                for s in elf.iter_sections()
                if s.name in _SECTIONS and s["sh_type"] != "SHT_NOBITS"
            ]
        except (ELFError, ValueError):
            return []


def read_kernel_archs(path: Path) -> KernelArchs | None:
    """The SASS and PTX architectures in `path`; None when it has no CUDA device code (or is unreadable)."""
    try:
        sections = _fatbin_sections(path)
    except OSError:
        return None
    if not sections:
        return None
    sass: set[int] = set()
    ptx: set[int] = set()
    containers = 0
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        for offset, size in sections:
            position, end = offset, min(offset + size, len(data))
            while position < end:
                start = data.find(_MAGIC, position, end)
                if start < 0 or start + 16 > end:
                    break
                _, _, header_size, body_size = struct.unpack_from("<IHHQ", data, start)
                entry, stop = start + header_size, min(start + header_size + body_size, end)
                containers += 1
                while entry + 32 <= stop:
                    kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, entry)
                    arch = struct.unpack_from("<I", data, entry + 28)[0]
                    if kind == _KIND_SASS:
                        sass.add(arch)
                    elif kind == _KIND_PTX:
                        ptx.add(arch)
                    if entry_header == 0:  # corrupt: stop rather than loop
                        break
                    entry += entry_header + payload
                position = max(stop, start + 4)
    if not containers:
        return None
    return KernelArchs(sass=tuple(sorted(sass)), ptx=tuple(sorted(ptx)), containers=containers)


def arch_support(archs: KernelArchs, compute_capability: tuple[int, int]) -> ArchSupport:
    """Can a GPU of this compute capability run kernels from these archs? (CUDA binary compatibility rules.)

    Arch-specific builds (sm_90a, sm_120a) run only on exactly that arch; their entries carry the
    plain number, so a same-major match on another minor is reported COMPATIBLE, not NATIVE.
    """
    major, minor = compute_capability
    target = major * 10 + minor
    if target in archs.sass:
        return ArchSupport.NATIVE
    if any(a // 10 == major and a % 10 <= minor for a in archs.sass):
        return ArchSupport.COMPATIBLE
    if any(a <= target for a in archs.ptx):
        return ArchSupport.PTX_JIT
    return ArchSupport.NONE
