"""Atomic writes: all or nothing, with ordinary file permissions."""

from __future__ import annotations

import os
import stat

import pytest

from ortgpu.atomic import atomic_write, atomic_write_text
from ortgpu.errors import BadInputError


def test_write_replaces_and_uses_umask_mode(tmp_path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    old = os.umask(0o022)
    try:
        atomic_write_text(target, "new")
    finally:
        os.umask(old)
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_failed_writer_keeps_old_file_and_leaves_no_temp(tmp_path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")

    def broken(handle) -> None:
        handle.write(b"half")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        atomic_write(target, broken)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_missing_folder_is_bad_input(tmp_path) -> None:
    with pytest.raises(BadInputError, match="does not exist"):
        atomic_write_text(tmp_path / "nope" / "out.json", "x")
