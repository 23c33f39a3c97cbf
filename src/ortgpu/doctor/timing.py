"""How long each of the doctor's probes took: perf_counter around each, in the thread that ran it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

__all__ = ["ProbeTimer"]


class ProbeTimer:
    """Runs a probe and keeps how long it took (time.perf_counter, in the thread that ran it), summed per name."""

    def __init__(self) -> None:
        self._seconds: dict[str, float] = {}

    def __call__(self, name: str, probe: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return probe(*args, **kwargs)
        finally:
            self._seconds[name] = self._seconds.get(name, 0.0) + time.perf_counter() - started

    def start(self, pool: Executor, name: str, probe: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        """Run the probe in ``pool``; return once a thread has begun it (so it is ahead of what is submitted next)."""
        begun = threading.Event()

        def run() -> Any:
            begun.set()
            return self(name, probe, *args, **kwargs)

        future = pool.submit(run)
        begun.wait(timeout=5.0)
        return future

    def wait(self, name: str, future: Future[Any]) -> Any:
        """The probe's result; how long this thread waited for it goes under "waited for <name>"."""
        started = time.perf_counter()
        try:
            return future.result()
        finally:
            waited = time.perf_counter() - started
            if waited >= 0.0005:
                self._seconds[f"waited for {name}"] = waited

    def seconds(self) -> dict[str, float]:
        return {name: round(value, 4) for name, value in self._seconds.items()}
