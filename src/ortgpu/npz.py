"""Named arrays from an .npz file, loaded without pickle: the one reader behind --inputs and --reference."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from ortgpu.errors import BadInputError
from ortgpu.limits import check_input_file
from ortgpu.untrusted import ByteLimit, human_bytes

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["NPZ_LIMIT", "load_npz", "member_name_problem", "save_npz"]

# Every array of one .npz together, checked on the sizes the file declares before numpy allocates anything.
NPZ_LIMIT = ByteLimit("ORTGPU_MAX_NPZ", 4 << 30, "array data in one .npz file")


def load_npz(path: Path, *, what: str, contents: str, error: type[BadInputError], hint: str) -> dict[str, np.ndarray]:
    """Every array in ``path``; any problem raises ``error`` with a one-line message.

    ``what`` names the file in messages ("inputs file"), ``contents`` what its arrays are ("inputs").
    Object arrays are refused: loading them would need pickle, which can run code. Each member's header is read
    first: the data it declares (shape x item size) must fit in the member and, summed over the file, in
    NPZ_LIMIT, before numpy allocates the array.
    """
    import tokenize
    import zipfile

    import numpy as np

    check_input_file(path, what, hint, error=error)  # missing, a folder, /dev/zero, a FIFO: said as such
    try:
        loaded = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise error(f"cannot read {what} {path}: {exc}", hint) from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise error(f"{path} is a single .npy array, not an .npz archive of named {contents}", hint)
    arrays: dict[str, np.ndarray] = {}
    with loaded:
        budget = NPZ_LIMIT.value()
        raw_names = set(loaded.zip.namelist())
        for name in loaded.files:
            member = name if name in raw_names else f"{name}.npy"
            declared = _declared_bytes(loaded.zip, member, what, path, name, error, hint)
            if declared is not None:
                if declared > budget:
                    raise error(
                        f"{what} {path}: array {name!r} declares {human_bytes(declared)}, more than ortgpu loads "
                        "from one .npz",
                        NPZ_LIMIT.hint(),
                    )
                budget -= declared
            try:
                arrays[name] = loaded[name]
            except ValueError as exc:
                if declared is None:  # numpy refuses object arrays without pickle: what we want, said plainly
                    raise error(
                        f"{what} {path}: array {name!r} holds pickled Python objects, which are not loaded",
                        "save plain numeric or string arrays (numpy.savez with dtype=str for text), not object arrays",
                    ) from None
                raise error(f"{what} {path}: array {name!r} is damaged ({exc})", hint) from None
            except (OSError, zipfile.BadZipFile, EOFError, SyntaxError, tokenize.TokenError) as exc:
                # numpy parses .npy headers with ast/tokenize: a mangled header raises their errors
                raise error(f"{what} {path}: array {name!r} is unreadable ({exc})", hint) from None
            if not isinstance(arrays[name], np.ndarray):  # numpy hands back the raw bytes of a non-.npy member
                raise error(f"{what} {path}: member {name!r} is not a .npy array", hint)
    return arrays


def _declared_bytes(
    archive: Any, member: str, what: str, path: Path, name: str, error: type[BadInputError], hint: str
) -> int | None:
    """The bytes member ``name`` declares in its .npy header; None for an object array (refused when loaded).

    Refuses a header whose data cannot be in the member: its declared size is larger than the member's.
    """
    import tokenize
    import zipfile
    import zlib

    import numpy as np

    fmt = np.lib.format
    try:
        info = archive.getinfo(member)
        with archive.open(info) as handle:
            major, _ = fmt.read_magic(handle)
            if major == 1:
                shape, _, dtype = fmt.read_array_header_1_0(handle)
            elif major in (2, 3):
                shape, _, dtype = fmt.read_array_header_2_0(handle)
            else:
                raise ValueError(f"unknown .npy format version {major}")
            header_bytes = handle.tell()
    except KeyError:
        return None  # not an .npy member: numpy reads it as raw bytes, bounded by the member itself
    except (ValueError, OSError, zipfile.BadZipFile, EOFError, zlib.error, SyntaxError, tokenize.TokenError) as exc:
        raise error(f"{what} {path}: array {name!r} has no valid .npy header ({exc})", hint) from None
    if dtype.hasobject:
        return None
    if any(int(dim) < 0 for dim in shape):
        raise error(f"{what} {path}: array {name!r} declares a negative dimension {shape}", hint)
    count = 1
    for dim in shape:
        count *= int(dim)
    declared = count * dtype.itemsize
    available = info.file_size - header_bytes
    if declared > available:
        dims = "x".join(str(d) for d in shape) or "scalar"
        raise error(
            f"{what} {path}: array {name!r} declares {dims} {dtype} ({human_bytes(declared)}) but the file holds "
            f"{human_bytes(max(available, 0))} of data: damaged or crafted",
            hint,
        )
    return declared


def member_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be an array (member) name in an .npz ortgpu writes; None when it can.

    Names come from the model's outputs. Inside a zip nothing is written outside it, but an unzip tool would
    follow ``../`` or an absolute name out of its folder: such names are refused, as are control characters.
    """
    if not name:
        return "it is empty"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "it holds control characters"
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "it is an absolute path"
    if ".." in parts:
        return "it climbs out of the archive's folder (..)"
    if len(name.encode("utf-8")) > 250:
        return "it is longer than a file name may be"
    return None


def save_npz(handle: BinaryIO, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` to ``handle`` as an .npz (one ``NAME.npy`` member each), refusing unsafe names.

    numpy.savez takes the names as keyword arguments, so an output called ``file`` would clash with its own
    parameter; this writes the same format directly.
    """
    import zipfile

    import numpy as np

    for name in arrays:
        problem = member_name_problem(name)
        if problem is not None:
            raise BadInputError(f"cannot save array {name!r} in an .npz: {problem}", "rename the model output")
    with zipfile.ZipFile(handle, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", mode="w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)
