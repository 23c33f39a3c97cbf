"""Structure in a paste: ORT's own warnings that normal, working runs log, shown without an error that needs a fix.

These messages come from ORT's source (execution_frame.cc, graph.cc, cpuid_info.cc, env.cc/threadpool, the device
discovery of ORT >= 1.22, the optimiser's serialisation) and do not stop a session: a model whose declared output
shape differs from what it produces, initializers left in the graph inputs or unused, an unknown CPU vendor, thread
affinity refused inside a CPU-limited container, no GPU found by the optional device discovery, an optimised model
saved with hardware-specific layouts. With no error of another kind in the paste, the answer is FM-65 (benign) and
the warning's own meaning.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal, SignalKind

__all__ = ["benign_warnings"]

# each ORT warning by its fixed words, with what it means (the signal's values)
_BENIGN: tuple[tuple[str, re.Pattern[str], str], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE), meaning)
    for name, pattern, meaning in (
        (
            "output_shape",
            r"Expected shape from model of \{[^}\n]{0,200}\} does not match actual shape of",
            "the model declares another output shape than the one it produces; the output is returned as computed",
        ),
        (
            "initializer_in_inputs",
            r"appears in graph inputs and will not be treated as constant",
            "an initializer is also a graph input, so constant folding skips it; the model still runs",
        ),
        (
            "unused_initializer",
            r"Removing initializer '[^'\n]{0,300}'\. It is not used by any node"
            r"|It is not used by any node and should be removed from the model",
            "ORT drops a weight no node uses; nothing is lost",
        ),
        (
            "cpu_vendor",
            r"Unknown CPU vendor\. cpuinfo_vendor value|cpuinfo_initialize failed\. May cause CPU EP performance",
            "ORT could not identify the CPU (a VM, an emulator, a new CPU); only CPU-kernel choices are affected",
        ),
        (
            "thread_affinity",
            r"pthread_setaffinity_np failed for thread",
            "the container or cgroup limits the CPUs, so ORT cannot pin its threads; set intra_op_num_threads to the "
            "CPUs you have to silence it",
        ),
        (
            "device_discovery",
            r"GPU device discovery failed",
            "ORT's optional device listing could not read /sys (a container or WSL); the CUDA provider does not use it",
        ),
        (
            "hardware_specific_model",
            r"Serializing optimized model with Graph Optimization level greater than ORT_ENABLE_EXTENDED",
            "the optimised model saved may only suit this machine; use it here or save at ORT_ENABLE_EXTENDED",
        ),
    )
)
# anything that is an error of another kind: then the paste is about that, not the warning
_ERROR = re.compile(
    r"\[[EF]:onnxruntime|Traceback \(most recent call last\)|\b\w{2,40}(?:Error|Exception)\b\s{0,2}:"
    r"|\[ONNXRuntimeError\]|Segmentation fault|core dumped|\bFAIL\b|\bfatal\b|\bAborted\b|\bterminate called",
    re.IGNORECASE,
)


# a word each warning above holds: a paste with none of them (most pastes, and any flood of other text) costs one
# scan of the lower-cased text instead of every pattern on every line
_WORDS = (
    "expected shape from model",
    "appears in graph inputs",
    "not used by any node",
    "cpuinfo",
    "pthread_setaffinity_np",
    "device discovery failed",
    "serializing optimized model",
)


def benign_warnings(paste: Paste) -> Iterator[Signal]:
    """The first benign ORT warning, when no other line of the paste is an error."""
    if not any(word in paste.lowered for word in _WORDS):
        return
    first: Signal | None = None
    for index, line in enumerate(paste.lines):
        hit = next(((name, m, meaning) for name, p, meaning in _BENIGN if (m := p.search(line)) is not None), None)
        if hit is None:
            if _ERROR.search(line) is not None:
                return
            continue
        name, m, meaning = hit
        if first is None:
            values = {"warning": m.group(0), "meaning": meaning}
            first = Signal(SignalKind.BENIGN_WARNING, index, paste.starts[index] + m.start(), {"name": name}, values)
    if first is not None:
        yield first
