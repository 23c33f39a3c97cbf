"""How one timed run is done: an interface and one class per mode (numpy run, IO binding, CUDA graph replay)."""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar

from ortgpu.ep import ExecutionProvider
from ortgpu.errors import EnvironmentUnfitError
from ortgpu.runtime.guard import import_onnxruntime

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "BenchMode",
    "CudaGraphMode",
    "Device",
    "IoBindingMode",
    "ModeRefusedError",
    "ModeRunner",
    "OutputSpec",
    "RunMode",
    "device_for",
    "mode_class",
]


class BenchMode(Enum):
    """What one timed run does."""

    RUN = "run"  # numpy in, numpy out: what most code does
    IOBINDING = "iobinding"  # inputs and outputs stay on the device (OrtValue + IOBinding)
    CUDAGRAPH = "cudagraph"  # CUDA EP graph capture on fixed bound buffers, then replay

    @property
    def title(self) -> str:
        return {
            BenchMode.RUN: "run (numpy in/out)",
            BenchMode.IOBINDING: "IO binding",
            BenchMode.CUDAGRAPH: "CUDA graph",
        }[self]


class ModeRefusedError(EnvironmentUnfitError):
    """A mode the active execution provider cannot do, e.g. CUDA graphs on the CPU EP (exit 3)."""


@dataclass(frozen=True)
class Device:
    """Where bound inputs and outputs live: ORT's device name ("cpu", "cuda") and the device index."""

    type: str
    id: int = 0


@dataclass(frozen=True)
class OutputSpec:
    """A model output's concrete shape and numpy dtype for one input shape (CUDA graphs need fixed buffers)."""

    shape: tuple[int, ...]
    dtype: str


def device_for(ep: ExecutionProvider, device_id: int) -> Device:
    """The device an EP computes on: bound buffers go there."""

    if ep is ExecutionProvider.CPU:
        return Device("cpu", 0)
    if ep in (ExecutionProvider.CUDA, ExecutionProvider.TENSORRT):
        return Device("cuda", device_id)
    raise ValueError(f"no device known for {ep}")


class ModeRunner(ABC):
    """One mode on one session with one set of feeds.

    ``prepare()`` does everything that must not be timed (copies to the device, bindings, fixed buffers) and sets
    ``step``: a no-argument callable doing exactly one run that returns only when the device work is done, so the
    caller's clock can be read right after it. Use as a context manager so device buffers are released.
    """

    mode: ClassVar[BenchMode]

    def __init__(
        self,
        session: Any,
        feeds: Mapping[str, np.ndarray],
        device: Device,
        outputs: Mapping[str, OutputSpec] | None = None,
    ) -> None:
        self.session = session  # an onnxruntime.InferenceSession
        self.feeds = dict(feeds)
        self.device = device
        self.output_specs = dict(outputs) if outputs is not None else None
        self.output_names = [o.name for o in session.get_outputs()]
        self.step: Callable[[], Any] | None = None

    @classmethod
    def refusal(cls, ep: ExecutionProvider) -> str | None:
        """Why this mode cannot run on ``ep`` (None when it can)."""
        return None

    @classmethod
    def package_refusal(cls) -> str | None:
        """Why this mode cannot be timed through a package's C library (``--package``); None when it can.

        The C-API runner times ``Run`` with its outputs copied to the host, as a C/C++ application's Run does.
        """
        return (
            "a package's C library is timed in mode run only (Run with outputs copied to the host, as a C/C++ "
            f"application's Run); {cls.mode.value} is timed through the onnxruntime wheel"
        )

    @classmethod
    def provider_options(cls, ep: ExecutionProvider) -> dict[str, str]:
        """Provider options the session must be created with for this mode."""
        return {}

    @classmethod
    def needs_own_session(cls) -> bool:
        """True when a session cannot be shared with other modes or input shapes (CUDA graph capture)."""
        return False

    @classmethod
    def needs_output_specs(cls) -> bool:
        return False

    def prepare(self) -> Callable[[], Any]:
        """Set up the mode (untimed) and return ``step``."""
        if self.needs_output_specs() and not self.output_specs:
            raise ValueError(f"mode {self.mode.value} needs the concrete output shapes")
        self.step = self._prepare()
        return self.step

    @abstractmethod
    def _prepare(self) -> Callable[[], Any]: ...

    @abstractmethod
    def fetch_outputs(self) -> list[np.ndarray]:
        """Outputs of the last run, on the host (untimed)."""

    def close(self) -> None:
        """Release bound device buffers."""
        self.step = None

    def __enter__(self) -> ModeRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RunMode(ModeRunner):
    """``session.run(names, feeds)``: numpy in, numpy out; ORT copies to and from the device inside the run."""

    mode = BenchMode.RUN

    @classmethod
    def package_refusal(cls) -> str | None:
        return None

    def _prepare(self) -> Callable[[], Any]:
        # partial() is called in C: no extra Python frame inside the timed region.
        return functools.partial(self.session.run, self.output_names, self.feeds)

    def fetch_outputs(self) -> list[np.ndarray]:
        return list(self.session.run(self.output_names, self.feeds))


class IoBindingMode(ModeRunner):
    """Inputs copied to the device once (OrtValue); outputs bound to the device; ``run_with_iobinding`` + sync."""

    mode = BenchMode.IOBINDING

    def _prepare(self) -> Callable[[], Any]:
        import numpy as np

        ort = import_onnxruntime()

        self._inputs = {
            name: ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(array), self.device.type, self.device.id)
            for name, array in self.feeds.items()
        }
        self._binding = self.session.io_binding()
        for name, value in self._inputs.items():
            self._binding.bind_ortvalue_input(name, value)
        self._bind_outputs(self._binding)
        run = self.session.run_with_iobinding
        sync = self._binding.synchronize_outputs
        binding = self._binding

        def step() -> None:
            run(binding)
            sync()  # the clock is read after the device finished, whatever the EP's stream behaviour

        return step

    def _bind_outputs(self, binding: Any) -> None:
        # ORT allocates each output on the device (shapes may depend on the inputs).
        for name in self.output_names:
            binding.bind_output(name, self.device.type, self.device.id)

    def fetch_outputs(self) -> list[np.ndarray]:
        return list(self._binding.copy_outputs_to_cpu())

    def close(self) -> None:
        super().close()
        binding = getattr(self, "_binding", None)
        if binding is not None:
            binding.clear_binding_inputs()
            binding.clear_binding_outputs()
        self._binding = None
        self._inputs = {}


class CudaGraphMode(IoBindingMode):
    """CUDA graph capture and replay: the session is created with graph capture on, inputs and outputs are fixed
    device buffers bound once; ORT captures during the first runs and replays the graph afterwards."""

    mode = BenchMode.CUDAGRAPH

    @classmethod
    def refusal(cls, ep: ExecutionProvider) -> str | None:
        if ep is ExecutionProvider.CPU:
            return "CUDA graphs need a GPU execution provider (CUDA or TensorRT); the CPU EP has no graph capture"
        return None

    @classmethod
    def provider_options(cls, ep: ExecutionProvider) -> dict[str, str]:
        if ep is ExecutionProvider.CUDA:
            return {"enable_cuda_graph": "1"}
        if ep is ExecutionProvider.TENSORRT:
            return {"trt_cuda_graph_enable": "1"}
        raise ModeRefusedError(
            cls.refusal(ep) or f"CUDA graphs are not available on {ep.value}",
            "use --ep cuda on a machine with an NVIDIA GPU, or --mode run / iobinding",
        )

    @classmethod
    def needs_own_session(cls) -> bool:
        return True  # a captured graph is tied to the session and to the buffer addresses bound at capture

    @classmethod
    def needs_output_specs(cls) -> bool:
        return True

    def _bind_outputs(self, binding: Any) -> None:
        import numpy as np

        ort = import_onnxruntime()

        specs = self.output_specs or {}
        self._outputs = {
            name: ort.OrtValue.ortvalue_from_shape_and_type(
                list(specs[name].shape), np.dtype(specs[name].dtype), self.device.type, self.device.id
            )
            for name in self.output_names
        }
        for name, value in self._outputs.items():
            binding.bind_ortvalue_output(name, value)

    def close(self) -> None:
        super().close()
        self._outputs = {}


_MODES: dict[BenchMode, type[ModeRunner]] = {
    BenchMode.RUN: RunMode,
    BenchMode.IOBINDING: IoBindingMode,
    BenchMode.CUDAGRAPH: CudaGraphMode,
}


def mode_class(mode: BenchMode) -> type[ModeRunner]:
    """The implementation of ``mode``."""
    return _MODES[mode]
