"""`ortgpu bundle`: the exact set of files a C/C++ deployment of an ORT package needs, in one folder.

``create`` assembles it; ``builder`` resolves what it holds; ``files`` copies and checks; ``names`` refuses
untrusted names; ``readme`` writes the README; ``model`` holds the request and the result.
"""

from __future__ import annotations

from ortgpu.bundle.create import create_bundle, installed_wheel_folder
from ortgpu.bundle.model import (
    BundleError,
    BundleFile,
    BundleManifest,
    BundleRequest,
    BundleResult,
    FileKind,
    MissingLibrary,
    SystemRequirement,
    Target,
)
from ortgpu.bundle.readme import providers_from_text, readme_text

__all__ = [
    "BundleError",
    "BundleFile",
    "BundleManifest",
    "BundleRequest",
    "BundleResult",
    "FileKind",
    "MissingLibrary",
    "SystemRequirement",
    "Target",
    "create_bundle",
    "installed_wheel_folder",
    "providers_from_text",
    "readme_text",
]
