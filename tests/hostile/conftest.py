"""Shared setup of the hostile-input suite: the CLI run in-process, and small models with hostile names and dims.

Every test here feeds ortgpu what an attacker (or an unlucky user) would and asserts what the user sees: the
documented exit code, one line on stderr, no traceback, nothing written where it must not be. The whole folder
runs in well under a minute; nothing here needs a GPU or the network.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hostile_models import save_model

from ortgpu.cli.main import main


@dataclass(frozen=True)
class Outcome:
    """What one in-process CLI run gave: exit code, stdout, stderr."""

    rc: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]

    def assert_one_line_error(self, rc: int | tuple[int, ...] = 2) -> str:
        """The run failed with ``rc`` and said so in exactly one line, with no traceback; returns that line."""
        wanted = rc if isinstance(rc, tuple) else (rc,)
        assert self.rc in wanted, f"exit {self.rc}, wanted {wanted}; stderr: {self.err[-2000:]!r}"
        assert "Traceback" not in self.err and "Traceback" not in self.out
        assert "internal error" not in self.err
        assert len(self.err_lines) == 1, f"expected one line on stderr, got: {self.err[-2000:]!r}"
        line = self.err_lines[0]
        assert line.startswith("ortgpu: error: "), line
        assert len(line) <= 1200, f"a one-line error of {len(line)} characters"
        assert "\x1b" not in line
        return line


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Outcome]:
    """Run ``ortgpu ARGV`` in-process; ``stdin`` (bytes) replaces standard input for that run."""

    def run(*argv: str, stdin: bytes | Any | None = None) -> Outcome:
        if stdin is not None:
            stream = stdin if not isinstance(stdin, bytes) else io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
            monkeypatch.setattr(sys, "stdin", stream)
        capsys.readouterr()
        rc = main(list(argv))
        captured = capsys.readouterr()
        return Outcome(rc, captured.out, captured.err)

    return run


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """``x`` float32 [batch, 4] + a constant -> ``y``."""
    from ortgpu.model.zoo import build_tiny_model

    return build_tiny_model(tmp_path / "tiny.onnx")


@pytest.fixture
def model_with(tmp_path: Path) -> Callable[..., Path]:
    """``model_with(inputs, outputs=None, name="m.onnx")``: :func:`save_model` into this test's folder."""

    def build(inputs: Sequence[tuple[str, Sequence[Any]]], outputs: Sequence[str] | None = None, name: str = "m.onnx"):
        return save_model(tmp_path / name, inputs, outputs)

    return build
