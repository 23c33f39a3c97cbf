"""ONNX Runtime's C library driven through its C API (ctypes): the binding, the library locator, the runner.

Used for release archives (and wheels that ship libonnxruntime), so that what is checked and measured is the
very library a C/C++ application links. Import the submodules; nothing heavy is imported here.
"""

from __future__ import annotations

__all__: list[str] = []
