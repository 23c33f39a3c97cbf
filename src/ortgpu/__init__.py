"""ortgpu: make ONNX Runtime GPU deployments work, provably and fast."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ortgpu.session import load as _load

__version__ = "0.1.0"

__all__ = ["__version__", "load"]

if TYPE_CHECKING:  # pragma: no cover
    from ortgpu.session import VerifiedSession


def load(model: Any, config: Any = None, **overrides: Any) -> VerifiedSession:
    """Open a verified, warmed-up ONNX Runtime session (see :func:`ortgpu.session.load`).

    Imported lazily so ``import ortgpu`` stays free of onnxruntime, onnx and numpy.
    """

    return _load(model, config=config, **overrides)
