"""The signal extractors of the *_signals modules that run after signals.py's own, in order: one line to add one."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ortgpu.knowledge.anticipated_signals import anticipated_classes
from ortgpu.knowledge.binding_data_signals import binding_data
from ortgpu.knowledge.capability_signals import capability_gaps
from ortgpu.knowledge.contract_signals import component_contract
from ortgpu.knowledge.extension_signals import custom_op_library, empty_output
from ortgpu.knowledge.graph_family_signals import graph_family
from ortgpu.knowledge.host_load_signals import host_load
from ortgpu.knowledge.host_signals import cpu_instructions, old_windows
from ortgpu.knowledge.import_signals import device_says_cpu, env_not_initialised, wrapper_check
from ortgpu.knowledge.integration_signals import integration_signals
from ortgpu.knowledge.io_kind_signals import io_kinds
from ortgpu.knowledge.limit_signals import run_limits
from ortgpu.knowledge.loader_family_signals import loader_family
from ortgpu.knowledge.mismatch_signals import binding_mismatch
from ortgpu.knowledge.model_family_signals import model_family
from ortgpu.knowledge.pairing_signals import pairings
from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.shutdown_signals import shutdown_aborts
from ortgpu.knowledge.signal_kinds import Signal
from ortgpu.knowledge.version_signals import dll_init_failed, model_too_new, symbol_mismatch, two_runtimes

__all__ = ["LATE_EXTRACTORS"]

# Order matters where two extractors read the same line: an earlier one's signal is found first.
LATE_EXTRACTORS: tuple[Callable[[Paste], Iterable[Signal]], ...] = (
    device_says_cpu,
    wrapper_check,
    integration_signals,
    env_not_initialised,
    anticipated_classes,
    model_too_new,
    dll_init_failed,
    symbol_mismatch,
    two_runtimes,
    cpu_instructions,
    custom_op_library,
    empty_output,
    old_windows,
    graph_family,
    loader_family,
    binding_data,
    host_load,
    model_family,
    component_contract,
    binding_mismatch,
    run_limits,
    capability_gaps,
    io_kinds,
    shutdown_aborts,
    pairings,
)
