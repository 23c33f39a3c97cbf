"""`ortgpu doctor --fix`: the pip commands that repair ONNX Runtime inside this Python environment, and running them."""

from ortgpu.fix.apply import DoctorState, FixResult, StepRun, fix_environment
from ortgpu.fix.plan import FixPlan, FixStep, Problem, plan_fixes

__all__ = [
    "DoctorState",
    "FixPlan",
    "FixResult",
    "FixStep",
    "Problem",
    "StepRun",
    "fix_environment",
    "plan_fixes",
]
