"""Structure in a paste where the process aborts while it tears down, after the work is done.

Classes, each told by who raises it and what it names, not by one wording:

- `mutex_abort_at_exit`: libc++'s `uncaught exception of type std::__1::system_error: mutex lock failed: Invalid
  argument`: a static mutex already destroyed when a thread (ORT's thread pool, a session released by a finaliser)
  locks it at exit, as in onnxruntime-node 1.21-1.23 on macOS (FM-211).
- `env_release_at_shutdown`: ORT's `OrtEnv::Release` check (`env_ptr == p_instance_.get() was false`) where the paste
  places it at shutdown (Ctrl+C, SIGINT/SIGTERM, exit, cleanup) and lists no second version of onnxruntime: sessions
  and the environment released out of order at teardown (FM-212). Without the shutdown context, or with two versions
  listed, it stays the two-copies reading (FM-72, version_signals).
Every whole-paste scan is gated by a cheap word test first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ortgpu.knowledge.evidence import first_evidence
from ortgpu.knowledge.paste import Paste
from ortgpu.knowledge.signal_kinds import Signal

__all__ = ["ENV_RELEASE", "released_at_shutdown", "shutdown_aborts"]

_MUTEX_ABORT = re.compile(
    r"\bsystem_error: mutex lock failed: Invalid argument\b|\bmutex lock failed: Invalid argument\b[^\n]{0,80}?\babort"
)
ENV_RELEASE = re.compile(r"OrtEnv::Release|env_ptr == p_instance_\.get\(\) was false", re.IGNORECASE)
_SHUTDOWN = re.compile(
    r"\bCtrl\s?[+-]\s?C\b|\^C\b|\bSIG(?:INT|TERM)\b|\bshut(?:ting)?\s?down\b|\bclean(?:ed)?\s?up\b"
    r"|\b(?:at|on|during|upon|before) (?:process |program |app |the )?(?:exit|shutdown|teardown|termination)\b"
    r"|\bexiting\b|\bprocess\.exit\b",
    re.IGNORECASE,
)
_TWO_VERSIONS = re.compile(r"@\d{1,2}\.\d{1,3}\.\d{1,3}[^\n]{0,200}?@\d{1,2}\.\d{1,3}\.\d{1,3}|[├└]")


def released_at_shutdown(paste: Paste) -> bool:
    """Whether the paste's OrtEnv::Release failure is placed at shutdown, with no second ORT version listed."""
    text = paste.joined[:200_000]
    return (
        ("ortenv" in paste.lowered or "p_instance_" in paste.lowered)
        and ENV_RELEASE.search(text) is not None
        and _SHUTDOWN.search(text) is not None
        and _TWO_VERSIONS.search(text) is None
    )


def shutdown_aborts(paste: Paste) -> Iterator[Signal]:
    """The first line of each teardown class the paste shows (see the module's docstring)."""
    if "mutex lock failed" in paste.lowered:
        yield from first_evidence(paste, _MUTEX_ABORT, "mutex_abort_at_exit")
    if released_at_shutdown(paste):
        yield from first_evidence(paste, ENV_RELEASE, "env_release_at_shutdown")
