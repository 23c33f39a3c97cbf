"""Reads what a shared library needs: ELF (DT_NEEDED, RPATH/RUNPATH, glibc floor) and PE (imports, delay-loads)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ortgpu.errors import BadInputError

__all__ = ["BinaryFormatError", "ElfInfo", "PeInfo", "read_binary", "read_elf", "read_pe"]


class BinaryFormatError(BadInputError):
    """A file that should be a shared library is not one we can read."""


@dataclass(frozen=True)
class ElfInfo:
    path: Path
    machine: str  # e.g. "x86_64", "aarch64"
    soname: str | None
    needed: tuple[str, ...]
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]
    glibc_floor: str | None  # highest GLIBC_x.y version the library asks for
    format: str = field(default="elf")


@dataclass(frozen=True)
class PeInfo:
    path: Path
    machine: str  # "x64", "arm64", "x86"
    imports: tuple[str, ...]
    delay_imports: tuple[str, ...]
    file_version: str | None
    format: str = field(default="pe")

    @property
    def all_imports(self) -> tuple[str, ...]:
        return self.imports + tuple(d for d in self.delay_imports if d not in self.imports)


_ELF_MACHINES = {"EM_X86_64": "x86_64", "EM_AARCH64": "aarch64", "EM_386": "x86", "EM_PPC64": "ppc64le"}
_PE_MACHINES = {0x8664: "x64", 0xAA64: "arm64", 0x14C: "x86", 0xA641: "arm64ec"}
_GLIBC = re.compile(r"^GLIBC_(\d+)\.(\d+)(?:\.(\d+))?$")


def read_binary(path: Path) -> ElfInfo | PeInfo:
    """Dispatch on the file's magic bytes."""
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise BinaryFormatError(f"{path}: cannot read ({exc.strerror})", "check the path and permissions") from None
    if magic == b"\x7fELF":
        return read_elf(path)
    if magic[:2] == b"MZ":
        return read_pe(path)
    raise BinaryFormatError(f"{path}: not an ELF or PE shared library", "give the library file itself")


def read_elf(path: Path) -> ElfInfo:
    from elftools.common.exceptions import ELFError
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerNeedSection

    try:
        with open(path, "rb") as handle:
            elf = ELFFile(handle)
            machine = _ELF_MACHINES.get(elf["e_machine"], str(elf["e_machine"]))
            needed: list[str] = []
            rpath: list[str] = []
            runpath: list[str] = []
            soname = None
            glibc: tuple[int, ...] | None = None
            for section in elf.iter_sections():
                if isinstance(section, DynamicSection):
                    for tag in section.iter_tags():
                        if tag.entry.d_tag == "DT_NEEDED":
                            needed.append(_tag_text(tag, "needed"))
                        elif tag.entry.d_tag == "DT_RPATH":
                            rpath.extend(p for p in _tag_text(tag, "rpath").split(":") if p)
                        elif tag.entry.d_tag == "DT_RUNPATH":
                            runpath.extend(p for p in _tag_text(tag, "runpath").split(":") if p)
                        elif tag.entry.d_tag == "DT_SONAME":
                            soname = _tag_text(tag, "soname")
                elif isinstance(section, GNUVerNeedSection):
                    for _verneed, aux_iter in section.iter_versions():
                        for aux in aux_iter:
                            match = _GLIBC.match(aux.name)
                            if match:
                                version = tuple(int(g) for g in match.groups() if g is not None)
                                glibc = max(glibc, version) if glibc else version
    except (ELFError, ValueError, OSError) as exc:
        raise BinaryFormatError(f"{path}: corrupt ELF file ({exc})", "re-download or re-extract the package") from None
    return ElfInfo(
        path=Path(path),
        machine=machine,
        soname=soname,
        needed=tuple(needed),
        rpath=tuple(rpath),
        runpath=tuple(runpath),
        glibc_floor=".".join(map(str, glibc)) if glibc else None,
    )


def _tag_text(tag: object, name: str) -> str:
    """A string pyelftools sets on a DynamicTag at run time (needed, rpath, runpath, soname): its types lack them."""
    return str(getattr(tag, name))


def read_pe(path: Path) -> PeInfo:
    import pefile

    try:
        pe = pefile.PE(str(path), fast_load=True)
        pe.parse_data_directories(
            directories=[
                pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"],
                pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT"],
                pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_RESOURCE"],
            ]
        )
    except (pefile.PEFormatError, OSError) as exc:
        raise BinaryFormatError(f"{path}: corrupt PE file ({exc})", "re-download or re-extract the package") from None
    try:
        imports = tuple(e.dll.decode("ascii", "replace") for e in getattr(pe, "DIRECTORY_ENTRY_IMPORT", []))
        delay = tuple(e.dll.decode("ascii", "replace") for e in getattr(pe, "DIRECTORY_ENTRY_DELAY_IMPORT", []))
        return PeInfo(
            path=Path(path),
            machine=_PE_MACHINES.get(pe.FILE_HEADER.Machine, hex(pe.FILE_HEADER.Machine)),
            imports=imports,
            delay_imports=delay,
            file_version=_pe_file_version(pe),
        )
    finally:
        pe.close()


def _pe_file_version(pe: object) -> str | None:
    for info in getattr(pe, "VS_FIXEDFILEINFO", None) or []:
        ms, ls = info.FileVersionMS, info.FileVersionLS
        return f"{ms >> 16}.{ms & 0xFFFF}.{ls >> 16}.{ls & 0xFFFF}"
    return None
