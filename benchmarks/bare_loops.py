"""Hand-written ONNX Runtime timing loops, the reference `ortgpu bench` is checked against.

Each loop does what a careful user would write by hand, with nothing from ortgpu: its own session, the same
warm-up count, then `perf_counter_ns` around every run, the clock read after the device finished (numpy outputs
on the host for `run`; `synchronize_outputs()` after `run_with_iobinding` for `iobinding` and `cudagraph`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import numpy as np
import onnxruntime as ort

__all__ = ["bare_session", "bare_times", "output_shapes"]


def bare_session(
    model: str, ep: str, cuda_graph: bool = False, intra_op_threads: int | None = None, device_id: int = 0
) -> ort.InferenceSession:
    """A plain session on "cpu" or "cuda" with ORT's default options (plus CUDA graph capture when asked)."""
    options = ort.SessionOptions()
    if intra_op_threads is not None:
        options.intra_op_num_threads = intra_op_threads
    if ep == "cpu":
        providers: list = ["CPUExecutionProvider"]
    else:
        # device_id only when not 0: ORT 1.31 logs a "No registered plugin EP device" warning for an explicit 0
        cuda = {"device_id": str(device_id)} if device_id else {}
        if cuda_graph:
            cuda["enable_cuda_graph"] = "1"
        providers = [("CUDAExecutionProvider", cuda), "CPUExecutionProvider"]
    session = ort.InferenceSession(model, options, providers=providers)
    if ep != "cpu" and session.get_providers()[0] != "CUDAExecutionProvider":
        raise RuntimeError(f"CUDA EP not active: {session.get_providers()}")
    return session


def output_shapes(session: ort.InferenceSession, feeds: Mapping[str, np.ndarray]) -> list[tuple[tuple[int, ...], str]]:
    """(shape, dtype) of each output for these feeds, from one plain run (to allocate fixed CUDA graph buffers)."""
    return [(tuple(a.shape), str(a.dtype)) for a in session.run(None, dict(feeds))]


def bare_times(
    session: ort.InferenceSession,
    mode: str,
    feeds: Mapping[str, np.ndarray],
    warmup: int,
    iterations: int | None = None,
    duration_s: float | None = None,
    device: str = "cpu",
    device_id: int = 0,
    outputs: list[tuple[tuple[int, ...], str]] | None = None,
) -> np.ndarray:
    """Latencies in ns of ``iterations`` runs (or of runs during ``duration_s``) after ``warmup`` untimed runs."""
    names = [o.name for o in session.get_outputs()]
    clock = time.perf_counter_ns
    feeds = dict(feeds)
    run = session.run
    if mode != "run":
        binding = session.io_binding()
        keep = []  # the OrtValues must outlive the binding
        for name, array in feeds.items():
            value = ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(array), device, device_id)
            keep.append(value)
            binding.bind_ortvalue_input(name, value)
        for i, name in enumerate(names):
            if mode == "cudagraph":
                shape, dtype = outputs[i]
                value = ort.OrtValue.ortvalue_from_shape_and_type(list(shape), np.dtype(dtype), device, device_id)
                keep.append(value)
                binding.bind_ortvalue_output(name, value)
            else:
                binding.bind_output(name, device, device_id)
        run_bound = session.run_with_iobinding
        sync = binding.synchronize_outputs
    # The loops are written out per mode, as a user would: no helper call inside the timed region.
    samples: list[int] = []
    if mode == "run":
        for _ in range(warmup):
            run(names, feeds)
        started = clock()
        deadline = started + int((duration_s or 0) * 1e9)
        count = 0
        while True:
            t0 = clock()
            run(names, feeds)
            t1 = clock()
            samples.append(t1 - t0)
            count += 1
            if (iterations is not None and count >= iterations) or (
                iterations is None and t1 >= deadline and count >= 10
            ):
                break
    else:
        for _ in range(warmup):
            run_bound(binding)
            sync()
        started = clock()
        deadline = started + int((duration_s or 0) * 1e9)
        count = 0
        while True:
            t0 = clock()
            run_bound(binding)
            sync()
            t1 = clock()
            samples.append(t1 - t0)
            count += 1
            if (iterations is not None and count >= iterations) or (
                iterations is None and t1 >= deadline and count >= 10
            ):
                break
    return np.array(samples, dtype=np.int64), clock() - started
