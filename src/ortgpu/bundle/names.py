"""Names in a bundle: patterns of libraries opened at run time; a package's names are bare file names or refused."""

from __future__ import annotations

import re

from ortgpu.bundle.model import (
    BundleError,
)
from ortgpu.untrusted import name_problem, printable

_SONAME_DEP = re.compile(r"^(?P<stem>.+?\.so)\.(?P<major>\d+)")
CUDNN_SUB_LINUX = "libcudnn_*.so.{major}*"
CUDNN_SUB_WINDOWS = "cudnn_*64_{major}.dll"
_EXTRA_MEMBER = re.compile(
    r"(?:[^/]+/)?(?:include/.+|LICENSE(?:\.txt)?|ThirdPartyNotices\.txt|lib/onnxruntime\.lib)", re.I
)
UNTRUSTED_HINT = "a genuine ONNX Runtime package names only files: get the package from its official source"


def is_extra_member(member: str) -> bool:
    """Headers, licences and onnxruntime.lib: what a bundle takes from a package besides the libraries."""
    return bool(_EXTRA_MEMBER.fullmatch(member))


def refuse_unless_bare(name: str, what: str, where: object) -> None:
    """BundleError (exit 2) unless ``name`` is a bare file name; ``what`` says what it is ("SONAME of x")."""
    problem = name_problem(name)
    if problem is not None:
        raise BundleError(f"{where}: {what} {printable(name)} is not a bare file name ({problem})", UNTRUSTED_HINT)
