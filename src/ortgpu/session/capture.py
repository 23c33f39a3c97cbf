"""Capture what native code (ORT's logger) writes to file descriptor 2 while a session is built."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["CapturedLog", "capture_native_stderr"]

# fd 2 is process-wide: two captures at once would steal each other's lines, so they take turns.
_LOCK = threading.Lock()


@dataclass
class CapturedLog:
    """Filled in when the capture ends."""

    text: str = ""


@contextmanager
def capture_native_stderr() -> Iterator[CapturedLog]:
    """Redirect fd 2 to a temporary file for the duration of the block and keep what was written.

    ORT's default log sink writes to the C++ std::clog (fd 2), which Python's sys.stderr redirection cannot see.
    A file, not a pipe, so a very verbose build never blocks on a full pipe.
    """
    box = CapturedLog()
    with _LOCK, tempfile.TemporaryFile() as sink:
        with contextlib.suppress(OSError, ValueError):  # a closed sys.stderr does not stop the capture of fd 2
            sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            yield box
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            box.text = sink.read().decode("utf-8", errors="replace")
