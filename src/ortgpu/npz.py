"""Named arrays from an .npz file, loaded without pickle: the one reader behind --inputs and --reference."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ortgpu.errors import BadInputError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["load_npz"]


def load_npz(path: Path, *, what: str, contents: str, error: type[BadInputError], hint: str) -> dict[str, np.ndarray]:
    """Every array in ``path``; any problem raises ``error`` with a one-line message.

    ``what`` names the file in messages ("inputs file"), ``contents`` what its arrays are ("inputs").
    Object arrays are refused: loading them would need pickle, which can run code.
    """
    import zipfile

    import numpy as np

    if not path.is_file():
        raise error(f"{what} not found: {path}", "check the path; " + hint)
    try:
        loaded = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise error(f"cannot read {what} {path}: {exc}", hint) from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise error(f"{path} is a single .npy array, not an .npz archive of named {contents}", hint)
    arrays: dict[str, np.ndarray] = {}
    with loaded:
        for name in loaded.files:
            try:
                arrays[name] = loaded[name]
            except ValueError:  # numpy refuses object arrays without pickle: exactly what we want, said plainly
                raise error(
                    f"{what} {path}: array {name!r} holds pickled Python objects, which are not loaded",
                    "save plain numeric or string arrays (numpy.savez with dtype=str for text), not object arrays",
                ) from None
            except (OSError, zipfile.BadZipFile, EOFError) as exc:
                raise error(f"{what} {path}: array {name!r} is unreadable ({exc})", hint) from None
    return arrays
