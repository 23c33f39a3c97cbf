"""npz files in and out: damaged members are called damaged, special files are named, output names stay inside
the archive (issue 17, item 10)."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

CHECK = ["check", "--ep", "cpu", "--warm-runs", "1"]


def _npz_with_member(path: Path, member: str, data: bytes) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(member, data)
    return path


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("flag", "what"),
    [("--inputs", "inputs file"), ("--reference", "reference file")],
)
def test_a_damaged_member_is_called_damaged_not_pickled(
    cli: Callable[..., object], tiny: Path, tmp_path: Path, flag: str, what: str
) -> None:
    npy = _npy(np.ones((1, 4), np.float32))
    damaged = npy.replace(b"'descr': '<f4'", b"'descr': '<f4-").replace(b"(1, 4)", b"(1, 4")  # a mangled header
    bad = _npz_with_member(tmp_path / "bad.npz", "x.npy" if flag == "--inputs" else "y.npy", damaged)
    line = cli(*CHECK, str(tiny), flag, str(bad)).assert_one_line_error(2)
    assert "pickled" not in line
    assert "damaged" in line or "unreadable" in line
    truncated = _npz_with_member(tmp_path / "cut.npz", "x.npy" if flag == "--inputs" else "y.npy", npy[:-8])
    line = cli(*CHECK, str(tiny), flag, str(truncated)).assert_one_line_error(2)
    assert "pickled" not in line


def test_an_object_array_is_still_called_pickled(cli: Callable[..., object], tiny: Path, tmp_path: Path) -> None:
    path = tmp_path / "objects.npz"
    np.savez(path, x=np.array([[1, None, 2, 3]], dtype=object))
    line = cli(*CHECK, str(tiny), "--inputs", str(path)).assert_one_line_error(2)
    assert "pickled Python objects" in line


def test_a_member_that_is_not_npy_is_refused(cli: Callable[..., object], tiny: Path, tmp_path: Path) -> None:
    path = _npz_with_member(tmp_path / "text.npz", "x.npy", b"just some text, not an array")
    line = cli(*CHECK, str(tiny), "--inputs", str(path)).assert_one_line_error(2)
    assert "is not a .npy array" in line or "no valid .npy header" in line


@pytest.mark.parametrize("flag", ["--inputs", "--reference"])
def test_a_folder_or_device_is_named_as_such_not_not_found(
    cli: Callable[..., object], tiny: Path, tmp_path: Path, flag: str
) -> None:
    line = cli(*CHECK, str(tiny), flag, str(tmp_path)).assert_one_line_error(2)
    # --inputs takes a folder of .npz samples (a data set): an empty one is named as such
    expected = "holds no .npz file" if flag == "--inputs" else "is a directory"
    assert expected in line and "not found" not in line
    if Path("/dev/zero").exists():
        line = cli(*CHECK, str(tiny), flag, "/dev/zero").assert_one_line_error(2)
        assert "is a device" in line and "not found" not in line


@pytest.mark.parametrize("name", ["../../../../x", "/etc/x", "a/../../b", "C:\\\\x", "bad\x07name"])
def test_save_outputs_refuses_output_names_that_leave_the_archive(
    cli: Callable[..., object], model_with: Callable[..., Path], tmp_path: Path, name: str
) -> None:
    model = model_with([("x", [1, 4])], outputs=[name])
    target = tmp_path / "out.npz"
    line = cli(*CHECK, str(model), "--save-outputs", str(target)).assert_one_line_error(2)
    assert "cannot be an .npz member name" in line
    assert not target.exists()


@pytest.mark.parametrize("name", ["file", "allow_pickle", "a/b", "StatefulPartitionedCall:0", "日本"])
def test_save_outputs_keeps_ordinary_names_and_reads_them_back(
    cli: Callable[..., object], model_with: Callable[..., Path], tmp_path: Path, name: str
) -> None:
    """``file`` used to collide with numpy.savez's own parameter (exit 70); ``a/b`` stays inside the zip."""
    model = model_with([("x", [1, 4])], outputs=[name])
    target = tmp_path / "out.npz"
    outcome = cli(*CHECK, str(model), "--save-outputs", str(target))
    assert outcome.rc == 0, outcome.err
    with np.load(target, allow_pickle=False) as saved:
        assert saved.files == [name] and saved[name].shape == (1, 4)
    assert cli(*CHECK, str(model), "--reference", str(target)).rc == 0
