"""The ONNX Runtime this Python would use: importing it (or naming the extra to install), its CUDA libraries, its name.

Nothing here imports onnxruntime at module level: ``guard`` imports it on request, ``identity`` names it from
distribution metadata only, ``preload`` decides how its CUDA/cuDNN libraries get loaded.
"""
