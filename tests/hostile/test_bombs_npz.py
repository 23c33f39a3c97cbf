"""npz bombs: a header that declares more data than the member holds, or more than the limit, is refused before
numpy allocates the array."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from ortgpu.errors import BadInputError
from ortgpu.npz import load_npz


def npz_declaring(path: Path, shape: tuple[int, ...], dtype: str = "<f8", data: bytes = b"\0" * 8) -> Path:
    """An .npz whose member x.npy has a valid header for ``shape`` but only ``data`` after it."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": dtype, "fortran_order": False, "shape": shape})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("x.npy", header.getvalue() + data)
    return path


def load(path: Path) -> dict[str, np.ndarray]:
    return load_npz(path, what="inputs file", contents="inputs", error=BadInputError, hint="save it with numpy.savez")


@pytest.mark.parametrize("shape", [(10**12,), (2**28,), (1 << 20, 1 << 20, 1 << 20)])
def test_declared_shape_larger_than_the_member_is_refused_before_allocating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: tuple[int, ...]
) -> None:
    path = npz_declaring(tmp_path / "bomb.npz", shape)

    def no_allocation(*args: object, **kwargs: object) -> None:
        raise AssertionError("numpy was asked to read the array")

    monkeypatch.setattr(np.lib.format, "read_array", no_allocation)
    with pytest.raises(BadInputError) as caught:
        load(path)
    message = caught.value.one_line()
    assert "'x'" in message and "declares" in message and "pickle" not in message


def test_bomb_through_the_cli_is_exit_2(tmp_path: Path, capsys) -> None:
    from ortgpu.cli.main import main
    from ortgpu.model.zoo import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny.onnx")
    bomb = npz_declaring(tmp_path / "bomb.npz", (10**12,))
    code = main(["check", str(model), "--inputs", str(bomb)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "declares" in err and len(err.strip().splitlines()) == 1


def test_the_npz_limit_is_said_and_can_be_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.npz"
    np.savez(path, x=np.ones((256, 1024), "f4"))  # 1 MiB of data
    monkeypatch.setenv("ORTGPU_MAX_NPZ", "512K")
    with pytest.raises(BadInputError) as caught:
        load(path)
    assert "ORTGPU_MAX_NPZ" in caught.value.one_line()
    monkeypatch.setenv("ORTGPU_MAX_NPZ", "2M")
    assert load(path)["x"].shape == (256, 1024)


def test_compressed_member_declaring_too_much_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "z.npz"
    np.savez_compressed(path, x=np.zeros((2048, 1024), "f4"))  # 8 MiB of zeros in a few KiB
    monkeypatch.setenv("ORTGPU_MAX_NPZ", "4M")
    with pytest.raises(BadInputError) as caught:
        load(path)
    assert "8.0 MiB" in caught.value.message and "ORTGPU_MAX_NPZ=SIZE" in caught.value.one_line()


def test_truncated_member_is_called_damaged_not_pickled(tmp_path: Path) -> None:
    path = tmp_path / "t.npz"
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (4,)})
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("x.npy", header.getvalue() + b"\0" * 8)  # 8 of the 16 bytes
    with pytest.raises(BadInputError) as caught:
        load(path)
    assert "pickle" not in caught.value.one_line()


def test_ordinary_npz_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "ok.npz"
    np.savez_compressed(path, x=np.arange(12, dtype="f4").reshape(3, 4), s=np.array(["a", "bc"]))
    arrays = load(path)
    assert arrays["x"].tolist() == np.arange(12, dtype="f4").reshape(3, 4).tolist()
    assert arrays["s"].tolist() == ["a", "bc"]


def test_object_arrays_are_still_refused_as_pickled(tmp_path: Path) -> None:
    path = tmp_path / "p.npz"
    np.savez(path, x=np.array([{"a": 1}], dtype=object))
    with pytest.raises(BadInputError, match="pickled"):
        load(path)
