"""Atomic writes never replace a special file, write through a symbolic link, and fail as bad input (exit 2)."""

from __future__ import annotations

import os
import socket
import stat
import sys
from pathlib import Path

import pytest

from ortgpu.atomic import atomic_write_text
from ortgpu.errors import BadInputError, ExitCode
from ortgpu.output_paths import check_outputs, write_target

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux special files")


def test_a_fifo_is_refused_and_stays_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    with pytest.raises(BadInputError, match="FIFO") as caught:
        atomic_write_text(fifo, "x")
    assert caught.value.exit_code is ExitCode.BAD_INPUT
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temp file left


def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        with pytest.raises(BadInputError, match="socket"):
            atomic_write_text(path, "x")
        assert stat.S_ISSOCK(path.lstat().st_mode)
    finally:
        server.close()


@linux
def test_a_character_device_is_refused(tmp_path: Path) -> None:
    """A device node of our own (like /dev/null): root used to replace the real /dev/null with a file."""
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError):
        with pytest.raises(BadInputError, match="character device"):
            write_target(Path("/dev/null"))  # the check alone: never write to the real one
        return
    with pytest.raises(BadInputError, match="character device"):
        atomic_write_text(node, "x")
    assert stat.S_ISCHR(node.lstat().st_mode)


def test_a_directory_is_refused_as_bad_input(tmp_path: Path) -> None:
    folder = tmp_path / "out.json"
    folder.mkdir()
    with pytest.raises(BadInputError, match="is a directory"):
        atomic_write_text(folder, "x")
    assert folder.is_dir()


def test_a_symbolic_link_is_written_through_and_kept(tmp_path: Path) -> None:
    real = tmp_path / "data" / "result.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "latest.json"
    link.symlink_to(real)
    atomic_write_text(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new"
    assert sorted(p.name for p in real.parent.iterdir()) == ["result.json"]


def test_a_dangling_link_or_a_link_to_a_fifo_is_refused(tmp_path: Path) -> None:
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere.json")
    with pytest.raises(BadInputError, match="does not exist"):
        atomic_write_text(dangling, "x")
    assert dangling.is_symlink() and not (tmp_path / "nowhere.json").exists()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    to_fifo = tmp_path / "to-fifo.json"
    to_fifo.symlink_to(fifo)
    with pytest.raises(BadInputError, match="FIFO"):
        atomic_write_text(to_fifo, "x")
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and to_fifo.is_symlink()


@linux
def test_a_folder_that_takes_no_file_is_bad_input_not_a_crash() -> None:
    """/proc/self takes no new file, even for root (a read-only mount behaves the same)."""
    with pytest.raises(BadInputError) as caught:
        atomic_write_text(Path("/proc/self/ortgpu-out.json"), "x")
    assert caught.value.exit_code is ExitCode.BAD_INPUT


def test_preflight_refuses_an_input_an_output_twice_and_a_missing_folder(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(b"model")
    other_name = tmp_path / "hard.onnx"
    os.link(model, other_name)
    with pytest.raises(BadInputError, match="is the input"):
        check_outputs({"--save": model}, inputs=[model])
    with pytest.raises(BadInputError, match="is the input"):
        check_outputs({"--save": other_name}, inputs=[model])  # the same file by another name
    with pytest.raises(BadInputError, match="both write"):
        check_outputs({"--save": tmp_path / "a.json", "--report": tmp_path / "." / "a.json"})
    with pytest.raises(BadInputError, match="does not exist"):
        check_outputs({"--save": tmp_path / "missing" / "a.json"})
    assert check_outputs({"--save": tmp_path / "a.json", "--report": None}) == {"--save": tmp_path / "a.json"}
    assert model.read_bytes() == b"model"
