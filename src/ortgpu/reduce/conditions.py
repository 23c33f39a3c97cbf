"""What "still fails" means while a model is cut down: NaN/Inf appear, the EP's outputs leave the CPU EP's, or
the EP refuses to build a session. One class per condition behind one small interface."""

from __future__ import annotations

import re
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.config import Config, ExecutionProvider
from ortgpu.errors import OrtgpuError

if TYPE_CHECKING:  # pragma: no cover
    import onnx

__all__ = ["Condition", "ConditionKind", "Outcome", "condition_for"]


class ConditionKind(Enum):
    NONFINITE = "nan"  # an output of the (sub)model holds NaN or Inf on the EP
    CHECK = "check"  # an output on the EP is off the CPU EP's beyond tolerance (or NaN/Inf where CPU has numbers)
    REFUSE = "refuse"  # the EP cannot build a session for it


@dataclass(frozen=True)
class Outcome:
    fails: bool
    detail: str  # what was seen, one line
    failing_outputs: tuple[str, ...] = ()  # the outputs that show it (all of them for a refusal)


class Condition(ABC):
    """Runs a candidate model and says whether the failure is still there."""

    kind: ConditionKind

    def __init__(self, ep: ExecutionProvider, config: Config, device_id: int | None) -> None:
        self.ep = ep
        self.config = config
        self.device_id = device_id

    @property
    def needs_data(self) -> bool:
        """Whether the candidate must be run (a refusal shows at session creation)."""
        return True

    def _session(self, model: onnx.ModelProto, folder: Path, ep: ExecutionProvider) -> Any:
        import onnx

        from ortgpu.model.inspect import inspect_model
        from ortgpu.session import open_session

        path = folder / "candidate.onnx"
        onnx.save_model(model, str(path))
        info = inspect_model(path, check=False)
        return open_session(path, ep, self.config, self.device_id, model_info=info)

    def _outputs(self, model: onnx.ModelProto, feeds: Mapping[str, Any], ep: ExecutionProvider) -> dict[str, Any]:
        with (
            tempfile.TemporaryDirectory(prefix="ortgpu-reduce-") as folder,
            self._session(model, Path(folder), ep) as s,
        ):
            return dict(zip(s.output_names, s.run({k: feeds[k] for k in s.input_names}), strict=True))

    def check(self, model: onnx.ModelProto, feeds: Mapping[str, Any]) -> Outcome:
        """Whether ``model`` on ``feeds`` still fails; an error of another kind is "does not fail" with its text."""
        try:
            return self._check(model, feeds)
        except OrtgpuError as exc:
            return Outcome(False, f"another error: {exc.one_line()}")

    @abstractmethod
    def _check(self, model: onnx.ModelProto, feeds: Mapping[str, Any]) -> Outcome: ...


class NonFiniteCondition(Condition):
    kind = ConditionKind.NONFINITE

    def _check(self, model: onnx.ModelProto, feeds: Mapping[str, Any]) -> Outcome:
        from ortgpu.accuracy.nonfinite import scan_outputs

        found = scan_outputs(self._outputs(model, feeds, self.ep))
        if not found:
            return Outcome(False, "every output is finite")
        return Outcome(True, found[0].line(), tuple(f.name for f in found))


class CheckCondition(Condition):
    kind = ConditionKind.CHECK

    def __init__(self, ep: ExecutionProvider, config: Config, device_id: int | None, rtol: float, atol_scale: float):
        super().__init__(ep, config, device_id)
        self.rtol, self.atol_scale = rtol, atol_scale

    def _check(self, model: onnx.ModelProto, feeds: Mapping[str, Any]) -> Outcome:
        from ortgpu.check.parity import ParityStatus, Precision, compare_output

        got = self._outputs(model, feeds, self.ep)
        want = self._outputs(model, feeds, ExecutionProvider.CPU)
        bad = []
        for name, value in got.items():
            scale = 1.0
            reference = want[name]
            if getattr(reference, "dtype", None) is not None and reference.dtype.kind == "f" and reference.size:
                import numpy as np

                finite = reference[np.isfinite(reference)]
                scale = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
            parity = compare_output(
                name, value, reference, Precision.FP32, atol=self.atol_scale * scale, rtol=self.rtol
            )
            if parity.status is ParityStatus.FAIL:
                bad.append(parity)
        if not bad:
            return Outcome(False, f"every output matches the CPU EP on {self.ep.value}")
        return Outcome(True, bad[0].failure_line(), tuple(p.name for p in bad))


class RefuseCondition(Condition):
    kind = ConditionKind.REFUSE

    @property
    def needs_data(self) -> bool:
        return False

    def _check(self, model: onnx.ModelProto, feeds: Mapping[str, Any]) -> Outcome:
        from ortgpu.session.failures import ModelNotSupportedError, ProviderUnavailableError

        try:
            with (
                tempfile.TemporaryDirectory(prefix="ortgpu-reduce-") as folder,
                self._session(model, Path(folder), self.ep),
            ):
                pass
        except (ModelNotSupportedError, ProviderUnavailableError) as exc:
            message = re.sub(r"Load model from \S+ failed:\s*", "", exc.message)  # a temporary file's path
            return Outcome(True, f"{self.ep.ort_name} refuses it: {message}", tuple(o.name for o in model.graph.output))
        return Outcome(False, f"{self.ep.ort_name} builds a session for it")


def condition_for(
    kind: ConditionKind, ep: ExecutionProvider, config: Config, device_id: int | None, rtol: float, atol_scale: float
) -> Condition:
    if kind is ConditionKind.NONFINITE:
        return NonFiniteCondition(ep, config, device_id)
    if kind is ConditionKind.CHECK:
        return CheckCondition(ep, config, device_id, rtol, atol_scale)
    return RefuseCondition(ep, config, device_id)
