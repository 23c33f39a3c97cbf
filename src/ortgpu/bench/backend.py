"""The interface of a `bench` backend: what measuring the planned cases one way gave (Measured), and the protocol.

One file per backend: :mod:`ortgpu.bench.wheel` (the onnxruntime wheel Python imports, in this process) and
:mod:`ortgpu.bench.package` (a package's own C library, one child process per case). :func:`ortgpu.bench.run_bench`
turns a Measured into a BenchResult (speed-ups, hints, baseline) the same way for every backend, so the next
backend is one new file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from ortgpu.bench.environment import Environment
from ortgpu.bench.plan import BenchRequest, Shapes
from ortgpu.bench.result import BenchCase
from ortgpu.capi.package_run import CApiLibrary
from ortgpu.config import Config
from ortgpu.ep import ExecutionProvider
from ortgpu.model.inspect import ModelInfo
from ortgpu.progress import Progress

__all__ = ["BenchBackend", "Measured"]


@dataclass(frozen=True)
class Measured:
    """What one way of running the model measured: the EP it ran on and why, the cases, the environment.

    Produced by a :class:`BenchBackend`; ``run_bench`` turns it into a BenchResult the same way for every one.
    """

    ep: ExecutionProvider
    ep_reason: str
    auto_ep: bool  # the EP was picked here, not asked for
    cases: tuple[BenchCase, ...]
    interrupted: bool
    environment: Environment
    package: CApiLibrary | None = None


class BenchBackend(Protocol):
    """Measures every planned case one way: refuses up front what it cannot time, then runs the cases."""

    def validate(self, request: BenchRequest) -> None:
        """Raise BenchInputError (exit 2) for a request this backend cannot time; nothing has run yet."""

    def measure(
        self,
        request: BenchRequest,
        config: Config,
        model: ModelInfo,
        by_batch: Mapping[int, Shapes],
        tell: Progress,
    ) -> Measured: ...
