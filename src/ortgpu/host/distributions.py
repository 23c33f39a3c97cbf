"""Every installed distribution that provides the `onnxruntime` module, and which one `import onnxruntime` loads."""

from __future__ import annotations

import ast
import hashlib
import importlib.machinery
import importlib.metadata
import re
import sys
from base64 import urlsafe_b64encode
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

__all__ = [
    "DistributionFlavour",
    "DistributionsReport",
    "OrtDistribution",
    "PackageInfo",
    "find_distributions",
    "flavour_of",
    "read_package_info",
]

MODULE = "onnxruntime"


class DistributionFlavour(Enum):
    """What an ORT distribution is built for, from its name."""

    CPU = "cpu"
    CUDA = "cuda"  # onnxruntime-gpu, ort-nightly-gpu, onnxruntime-training (CUDA builds)
    DIRECTML = "directml"
    OPENVINO = "openvino"
    ROCM = "rocm"  # onnxruntime-rocm, -migraphx
    QNN = "qnn"
    OTHER = "other"

    @property
    def has_cuda(self) -> bool:
        return self is DistributionFlavour.CUDA


def flavour_of(name: str) -> DistributionFlavour:
    """Classify a distribution by its (normalised) name: "onnxruntime-gpu" -> CUDA, "onnxruntime" -> CPU."""
    name = re.sub(r"[-_.]+", "-", name).lower()
    for marker, flavour in (
        ("directml", DistributionFlavour.DIRECTML),
        ("openvino", DistributionFlavour.OPENVINO),
        ("rocm", DistributionFlavour.ROCM),
        ("migraphx", DistributionFlavour.ROCM),
        ("qnn", DistributionFlavour.QNN),
        ("cpu", DistributionFlavour.CPU),
        ("gpu", DistributionFlavour.CUDA),
        ("cuda", DistributionFlavour.CUDA),
        ("training", DistributionFlavour.CUDA),
    ):
        if marker in name:
            return flavour
    if name in ("onnxruntime", "ort-nightly"):
        return DistributionFlavour.CPU
    return DistributionFlavour.OTHER


@dataclass(frozen=True)
class OrtDistribution:
    name: str  # as in METADATA: "onnxruntime-gpu"
    version: str
    flavour: DistributionFlavour
    site_dir: Path  # the folder holding its dist-info (and normally the onnxruntime/ package)
    installer: str | None  # "pip", "uv", "conda"... from INSTALLER
    owns_loaded_files: bool | None  # its RECORD hash matches the files `import onnxruntime` would run (None: unknown)


@dataclass(frozen=True)
class PackageInfo:
    """onnxruntime/capi/build_and_package_info.py, read as text: it names the distribution that wrote the files."""

    package_name: str | None
    version: str | None
    cuda_version: str | None


@dataclass(frozen=True)
class DistributionsReport:
    distributions: tuple[OrtDistribution, ...]
    module_dir: Path | None  # the onnxruntime/ folder `import onnxruntime` would load (None: not importable)
    package_info: PackageInfo | None  # what that folder says it is
    loaded: str | None  # the distribution whose files `import onnxruntime` runs, best evidence first

    @property
    def conflict(self) -> bool:
        return len(self.distributions) > 1

    @property
    def loaded_distribution(self) -> OrtDistribution | None:
        return next((d for d in self.distributions if d.name == self.loaded), None)

    @property
    def shadowed(self) -> tuple[OrtDistribution, ...]:
        """Installed distributions that `import onnxruntime` does not load."""
        return tuple(d for d in self.distributions if d.name != self.loaded)


def read_package_info(module_dir: Path) -> PackageInfo | None:
    """Parse build_and_package_info.py without importing it (it is plain assignments)."""
    path = module_dir / "capi" / "build_and_package_info.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    values: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    values[target.id] = node.value.value
    return PackageInfo(
        package_name=values.get("package_name"),
        version=values.get("__version__"),
        cuda_version=values.get("cuda_version") or None,
    )


def _provides_module(dist: importlib.metadata.Distribution) -> bool:
    top_level = dist.read_text("top_level.txt")
    if top_level is not None:
        return MODULE in top_level.split()
    # RECORD as text, not dist.files: parsing every file of every distribution (a torch environment lists hundreds
    # of thousands) took most of a second of the doctor on a GPU host.
    record = dist.read_text("RECORD")
    if record is not None:
        entry = f"{MODULE}/__init__.py,"
        return record.startswith(entry) or f"\n{entry}" in record
    return any(f.parts[:1] == (MODULE,) and f.name == "__init__.py" for f in dist.files or ())


def _record_hash(dist: importlib.metadata.Distribution, relative: str) -> str | None:
    for entry in dist.files or ():
        if entry.as_posix() == relative and entry.hash is not None:
            return f"{entry.hash.mode}={entry.hash.value}"
    return None


def _file_hash(path: Path, mode: str) -> str | None:
    try:
        digest = hashlib.new(mode, path.read_bytes()).digest()
    except (OSError, ValueError):
        return None
    return f"{mode}={urlsafe_b64encode(digest).rstrip(b'=').decode()}"


def _owns(dist: importlib.metadata.Distribution, module_dir: Path | None, site_dir: Path) -> bool | None:
    """Does this distribution's RECORD match the files the import would run?

    Two distributions installed into one folder overwrite each other's files; the RECORD hash of
    build_and_package_info.py (different in every flavour) says whose copy is on disk.
    """
    if module_dir is None:
        return False
    if module_dir.parent.resolve() != site_dir.resolve():
        return False
    relative = f"{MODULE}/capi/build_and_package_info.py"
    recorded = _record_hash(dist, relative)
    if recorded is None:
        return None
    actual = _file_hash(module_dir / "capi" / "build_and_package_info.py", recorded.split("=", 1)[0])
    return None if actual is None else actual == recorded


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def find_distributions(paths: Sequence[str] | None = None) -> DistributionsReport:
    """List ORT distributions on `paths` (default sys.path) and find the one `import onnxruntime` loads.

    The module is located with PathFinder, never imported, so a broken install can still be diagnosed.
    """
    search = list(sys.path if paths is None else paths)
    spec = importlib.machinery.PathFinder.find_spec(MODULE, search)
    module_dir = None
    if spec is not None and spec.origin and spec.origin not in ("namespace", "built-in"):
        module_dir = Path(spec.origin).parent
    elif spec is not None and spec.submodule_search_locations:
        module_dir = Path(next(iter(spec.submodule_search_locations)))
    package_info = read_package_info(module_dir) if module_dir else None

    found: dict[str, OrtDistribution] = {}
    for dist in importlib.metadata.distributions(path=search):
        if not _provides_module(dist):  # first: cheaper than parsing every distribution's METADATA
            continue
        name = (dist.metadata.get_all("Name") or [""])[0]
        if not name or _normalise(name) in found:
            continue
        site_dir = Path(str(dist.locate_file("")))
        installer = (dist.read_text("INSTALLER") or "").strip() or None
        found[_normalise(name)] = OrtDistribution(
            name=name,
            version=dist.version,
            flavour=flavour_of(name),
            site_dir=site_dir,
            installer=installer,
            owns_loaded_files=_owns(dist, module_dir, site_dir),
        )
    distributions = tuple(sorted(found.values(), key=lambda d: _normalise(d.name)))
    return DistributionsReport(
        distributions=distributions,
        module_dir=module_dir,
        package_info=package_info,
        loaded=_which_is_loaded(distributions, module_dir, package_info),
    )


def _which_is_loaded(
    distributions: tuple[OrtDistribution, ...], module_dir: Path | None, info: PackageInfo | None
) -> str | None:
    if module_dir is None:
        return None
    beside = [d for d in distributions if d.site_dir.resolve() == module_dir.parent.resolve()]
    # Evidence in order: the RECORD hash of the file on disk, the package name the file itself
    # carries, then the only distribution installed beside the module.
    owners = [d for d in beside if d.owns_loaded_files]
    if len(owners) == 1:
        return owners[0].name
    if info and info.package_name:
        named = [d for d in beside if _normalise(d.name) == _normalise(info.package_name)]
        if named:
            return named[0].name
    if len(beside) == 1:
        return beside[0].name
    return None
