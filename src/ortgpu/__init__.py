"""ortgpu: make ONNX Runtime GPU deployments work, provably and fast."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["__version__", "load"]

if TYPE_CHECKING:  # pragma: no cover
    from ortgpu.session import VerifiedSession


def load(model: Any, config: Any = None, **overrides: Any) -> VerifiedSession:
    """Open a verified, warmed-up ONNX Runtime session (see :func:`ortgpu.session.load`).

    Imported here, not at the top: this facade sits above every room, and ``import ortgpu`` (which every
    module's ``__version__`` lookup runs) must not pull the session stack in.
    """
    from ortgpu.session import load as _load

    return _load(model, config=config, **overrides)
