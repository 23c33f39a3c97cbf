"""Accuracy you can trust: error metrics, NaN/Inf, data sets and the layer-wise engine that check, fp16,
compare and debug reduce share."""

from __future__ import annotations

from ortgpu.accuracy.dataset import Dataset, DatasetError, Sample, load_dataset
from ortgpu.accuracy.layerwise import LayerwiseReport, TensorComparison, TensorStatus, compare_layers
from ortgpu.accuracy.metrics import ErrorHistogram, ErrorMetrics, error_metrics
from ortgpu.accuracy.nonfinite import NonFinite, find_nonfinite, scan_outputs

__all__ = [
    "Dataset",
    "DatasetError",
    "ErrorHistogram",
    "ErrorMetrics",
    "LayerwiseReport",
    "NonFinite",
    "Sample",
    "TensorComparison",
    "TensorStatus",
    "compare_layers",
    "error_metrics",
    "find_nonfinite",
    "load_dataset",
    "scan_outputs",
]
