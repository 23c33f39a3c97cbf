"""What an ORT package requires from a machine: CUDA, cuDNN, glibc, VC++ runtime and Python, from its files and tags.

Each requirement says where it came from (a library it needs, a wheel tag, the version matrix).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from ortgpu.knowledge import matrix
from ortgpu.knowledge.matrix import OrtBuildRequirements
from ortgpu.package.libraries import (
    Component,
    LibraryRole,
    Need,
    NeedKind,
    PackageFlavour,
    PackageLibrary,
    PackagePlatform,
    Requirement,
    RequirementKind,
    classify_library,
    stack_major,
)
from ortgpu.versions import version_tuple


def major_from(libraries: Iterable[PackageLibrary], *components: Component) -> tuple[int | None, str | None]:
    """The major the libraries' needs pin for these components, and the need that says so."""
    for lib in libraries:
        for need in lib.needs:
            if need.component in components and need.kind in (NeedKind.LOAD_TIME, NeedKind.DELAY_LOAD):
                how = "DT_NEEDED" if lib.format == "elf" else "import"
                if need.kind is NeedKind.DELAY_LOAD:
                    how = "delay-load import"
                return need.major, f"{need.name} ({how} of {lib.name})"
    return None, None


def matrix_row(version: str | None, cuda_major: int | None) -> OrtBuildRequirements | None:
    if not version:
        return None

    return matrix.requirements_for(version, cuda_major)


def _row_label(row: OrtBuildRequirements) -> str:
    label = f"ORT {row.ort_version} (CUDA {row.cuda_major} build"
    if row.extrapolated:
        label += ", extrapolated: the package is newer than the matrix"
    elif not row.confirmed:
        label += ", unconfirmed row"
    return label + ")"


def with_lazy_needs(
    lib: PackageLibrary, row: OrtBuildRequirements, platform: PackagePlatform, bundled: set[str]
) -> PackageLibrary:
    """Add what is opened at run time (not in the import table) to the CUDA provider's needs, from the matrix."""
    if lib.role is not LibraryRole.CUDA:
        return lib
    if platform.is_windows:
        lists = ((row.lazy_libraries_windows, NeedKind.LAZY), (row.indirect_libraries_windows, NeedKind.INDIRECT))
    else:
        lists = ((row.lazy_libraries, NeedKind.LAZY), (row.indirect_libraries_linux, NeedKind.INDIRECT))
    have = {n.name.lower() for n in lib.needs}
    added = []
    for names, kind in lists:
        for name in names:
            if name.lower() in have:
                continue
            have.add(name.lower())
            component = classify_library(name)
            added.append(Need(name, component, kind, stack_major(name, component), name.lower() in bundled))
    return dataclasses.replace(lib, needs=lib.needs + tuple(added)) if added else lib


def cuda_requirement(
    cuda_major: int | None, evidence: str | None, build_info: dict[str, str], notes: list[str]
) -> Requirement:
    declared = build_info.get("cuda_version")
    if declared and cuda_major is not None and not declared.startswith(f"{cuda_major}."):
        notes.append(f"build_and_package_info.py says cuda_version {declared}, the libraries need CUDA {cuda_major}")
    if cuda_major is None:
        return Requirement(RequirementKind.CUDA, "unknown", "no CUDA library named by the provider libraries")
    text = evidence or ""
    if declared:
        text += f"; build_and_package_info.py: cuda_version {declared}"
    return Requirement(RequirementKind.CUDA, str(cuda_major), text)


def cudnn_requirement(
    libraries: list[PackageLibrary], row: OrtBuildRequirements | None, version: str | None, flavour: PackageFlavour
) -> tuple[int | None, Requirement | None]:
    cuda = [lib for lib in libraries if lib.role is LibraryRole.CUDA]
    trt = [lib for lib in libraries if lib.role is LibraryRole.TENSORRT]
    major, evidence = major_from(cuda, Component.CUDNN)
    if evidence:
        return major, Requirement(RequirementKind.CUDNN, str(major) if major is not None else "unknown", evidence)
    if flavour is not PackageFlavour.GPU:
        return None, None
    trt_major, trt_evidence = major_from(trt, Component.CUDNN)
    parts = []
    if trt_evidence:
        parts.append(trt_evidence)
    lazy = "the CUDA provider does not import cuDNN: ORT opens it at run time"
    if row is not None and row.cudnn_major is not None:
        parts.append(f"{lazy}; version matrix, {_row_label(row)}: cuDNN {row.cudnn_major}")
        if trt_major is not None and trt_major != row.cudnn_major:
            parts.append(f"the TensorRT provider asks for cuDNN {trt_major}")
        return row.cudnn_major, Requirement(
            RequirementKind.CUDNN, str(row.cudnn_major), "; ".join(parts), from_matrix=trt_major is None
        )
    if trt_major is not None:
        parts.append(lazy)
        return trt_major, Requirement(RequirementKind.CUDNN, str(trt_major), "; ".join(parts))
    why = f"no version-matrix row for ORT {version}" if version else "the package version is unknown"
    return None, Requirement(RequirementKind.CUDNN, "unknown", f"{lazy}; {why}", from_matrix=True)


_MANYLINUX = re.compile(r"^manylinux_(\d+)_(\d+)_")


_LEGACY_MANYLINUX = {"manylinux1": "2.5", "manylinux2010": "2.12", "manylinux2014": "2.17"}


def glibc_requirement(
    libraries: list[PackageLibrary], tags: tuple[str, ...], platform: PackagePlatform
) -> tuple[str | None, Requirement | None]:
    if platform.is_windows:
        return None, None
    floors = [(lib.glibc_floor, lib.name) for lib in libraries if lib.glibc_floor]
    binary_floor, binary_lib = max(floors, key=lambda f: version_tuple(f[0])) if floors else (None, None)
    tag_floor, tag_text = None, None
    for tag in tags:
        plat = tag.rsplit("-", 1)[-1]
        match = _MANYLINUX.match(plat)
        floor = f"{match.group(1)}.{match.group(2)}" if match else _LEGACY_MANYLINUX.get(plat.split("_")[0])
        if floor and (tag_floor is None or version_tuple(floor) < version_tuple(tag_floor)):
            tag_floor, tag_text = floor, plat  # a wheel with several tags installs where the lowest one does
    candidates = [f for f in (binary_floor, tag_floor) if f]
    if not candidates:
        return None, None
    floor = max(candidates, key=version_tuple)
    parts = []
    if binary_floor:
        parts.append(f"GLIBC_{binary_floor} asked by {binary_lib} (highest over the package's libraries)")
    if tag_floor:
        parts.append(f"wheel tag {tag_text}")
    return floor, Requirement(RequirementKind.GLIBC, f">= {floor}", "; ".join(parts))


def vc_requirement(libraries: list[PackageLibrary]) -> tuple[str | None, Requirement | None]:
    dlls = sorted(
        {n.name for lib in libraries for n in lib.needs if n.component is Component.VC_RUNTIME}, key=str.lower
    )
    if not dlls:
        return None, None
    linkers = [lib.linker_version for lib in libraries if lib.format == "pe" and lib.linker_version]
    if linkers:
        minimum = max(linkers, key=version_tuple)
        evidence = (
            f"{', '.join(dlls)} imported; linked with MSVC {minimum}: the VC++ 2015-2022 redistributable must be "
            "at least the toolset that built it"
        )
        return minimum, Requirement(RequirementKind.VC_RUNTIME, f">= {minimum}", evidence)
    return "any", Requirement(RequirementKind.VC_RUNTIME, "2015-2022", f"{', '.join(dlls)} imported")


def python_requirement(tags: tuple[str, ...]) -> Requirement | None:
    pythons = sorted({t.split("-")[0] for t in tags if t.count("-") == 2})
    if not pythons:
        return None
    return Requirement(RequirementKind.PYTHON, ", ".join(pythons), f"wheel tags {', '.join(tags)}")
