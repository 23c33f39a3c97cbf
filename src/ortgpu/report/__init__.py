"""Reports rendered from result objects: the self-contained HTML bench report."""

from __future__ import annotations

# matplotlib is imported inside the plotting functions: importing this package stays light.
__all__ = ["html"]
