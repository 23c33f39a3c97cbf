"""GPU architectures as ortgpu judges them: whether a build carries code a compute capability can run (ArchSupport).

Shared by the fatbin reader (what a library file really carries) and the version matrix (what a release was
built for); the values are the ones `doctor --json` shows.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["ArchSupport"]


class ArchSupport(Enum):
    """Whether a build has GPU code for a compute capability."""

    NATIVE = "native"  # SASS built for exactly this architecture: runs as compiled
    COMPATIBLE = "compatible"  # SASS for an earlier minor of the same major (binary compatible)
    PTX_JIT = "ptx-jit"  # only PTX for an earlier arch: the driver JIT-compiles it on first use (slow start)
    NONE = "none"  # "no kernel image is available for execution on the device"
