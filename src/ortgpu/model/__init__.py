"""The model room: inspect ONNX models, build inputs for any model, and the built-in model zoo."""

from __future__ import annotations

# Submodules import onnx / numpy inside their functions; importing the package stays light.
__all__ = ["inputs", "inspect", "zoo"]
