"""The datasets `ortgpu infer` reads, cut into items (one output file each) and tasks (the unit a worker runs).

Sources: a folder of ``.npz`` files (one item per file, named like it), one ``.npz`` of columns (arrays that
share their leading dim: one row per sample), or Parquet (a ``.parquet`` file or a folder of them, one column
per model input; list columns become the trailing dims). Columnar sources are cut into items of
``rows_per_item`` rows, named ``<file stem>.<first row>``. Tasks are consecutive items; the plan depends only on
the dataset and the settings, never on how many workers run it, so every run batches the same rows together.
"""

from __future__ import annotations

import enum
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.errors import BadInputError
from ortgpu.untrusted import name_problem

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "Dataset",
    "InferInputError",
    "Item",
    "ItemError",
    "ItemReader",
    "SourceKind",
    "Task",
    "discover",
    "plan_tasks",
]

OUTPUT_SUFFIX = ".npz"


class InferInputError(BadInputError):
    """A dataset, output folder or setting `ortgpu infer` cannot use (exit 2)."""


class ItemError(Exception):
    """One item cannot be run (unreadable, wrong inputs, ORT refused it): reported and skipped."""


class SourceKind(enum.Enum):
    NPZ_FOLDER = "npz-folder"
    NPZ_COLUMNS = "npz-columns"
    PARQUET = "parquet"


@dataclass(frozen=True)
class Item:
    """One unit of output: ``<name>.npz`` in the output folder, from ``source`` (rows ``start:stop`` of a
    columnar source; the whole file otherwise)."""

    name: str
    source: str
    start: int | None = None
    stop: int | None = None

    @property
    def output_name(self) -> str:
        return self.name + OUTPUT_SUFFIX


@dataclass(frozen=True)
class Task:
    """Consecutive items one worker runs together (their rows are batched together). ``record``: the names whose
    outputs are written and reported (None: all); the others are still run, so every run batches alike."""

    index: int
    items: tuple[Item, ...]
    record: frozenset[str] | None = None

    def records(self, name: str) -> bool:
        return self.record is None or name in self.record


@dataclass(frozen=True)
class Dataset:
    kind: SourceKind
    root: Path
    items: tuple[Item, ...]
    ignored: tuple[str, ...] = ()  # files in a source folder that are not of its kind


def discover(src: Path, rows_per_item: int) -> Dataset:
    """The items of ``src``; raises InferInputError (exit 2) for a source that is missing, empty or of no known
    kind."""
    src = Path(src)
    hint = "give a folder of .npz files, one .npz of columns, a .parquet file or a folder of .parquet files"
    if not src.exists():
        raise InferInputError(f"--inputs {src}: no such file or folder", hint)
    if src.is_dir():
        entries = sorted(p for p in src.iterdir() if p.is_file())
        npz = [p for p in entries if p.suffix.lower() == ".npz"]
        parquet = [p for p in entries if p.suffix.lower() == ".parquet"]
        if npz and parquet:
            raise InferInputError(f"--inputs {src}: holds both .npz and .parquet files", "give one kind per folder")
        if npz:
            ignored = tuple(p.name for p in entries if p not in npz)
            return Dataset(SourceKind.NPZ_FOLDER, src, tuple(Item(p.stem, str(p)) for p in npz), ignored)
        if parquet:
            items = tuple(i for p in parquet for i in _row_items(p, _parquet_rows(p), rows_per_item))
            return Dataset(SourceKind.PARQUET, src, items, tuple(p.name for p in entries if p not in parquet))
        raise InferInputError(f"--inputs {src}: no .npz or .parquet file in this folder", hint)
    suffix = src.suffix.lower()
    if suffix == ".npz":
        return Dataset(SourceKind.NPZ_COLUMNS, src.parent, _row_items(src, _npz_rows(src), rows_per_item))
    if suffix == ".parquet":
        return Dataset(SourceKind.PARQUET, src.parent, _row_items(src, _parquet_rows(src), rows_per_item))
    raise InferInputError(f"--inputs {src}: not a .npz or .parquet file", hint)


def _row_items(path: Path, rows: int, per_item: int) -> tuple[Item, ...]:
    width = max(len(str(max(rows - 1, 0))), 6)
    return tuple(
        Item(f"{path.stem}.{start:0{width}d}", str(path), start, min(start + per_item, rows))
        for start in range(0, rows, per_item)
    )


def _npz_rows(path: Path) -> int:
    """The leading dim the columns of an .npz share, read from the .npy headers (nothing is loaded)."""
    import numpy as np

    fmt = np.lib.format
    try:
        with zipfile.ZipFile(path) as archive:
            rows: dict[str, int] = {}
            for info in archive.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                with archive.open(info) as handle:
                    major, _ = fmt.read_magic(handle)
                    reader = fmt.read_array_header_1_0 if major == 1 else fmt.read_array_header_2_0
                    shape, _, _ = reader(handle)
                if not shape:
                    raise InferInputError(
                        f"--inputs {path}: column {info.filename[:-4]!r} is a scalar, not one value per row",
                        "save arrays whose first dim is the sample",
                    )
                rows[info.filename[:-4]] = int(shape[0])
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, SyntaxError) as exc:
        raise InferInputError(f"--inputs {path}: cannot read ({exc})", "give an .npz written by numpy.savez") from None
    if not rows:
        raise InferInputError(f"--inputs {path}: no arrays in it", "give an .npz written by numpy.savez")
    if len(set(rows.values())) > 1:
        shown = ", ".join(f"{k}: {v}" for k, v in rows.items())
        raise InferInputError(
            f"--inputs {path}: the columns have different row counts ({shown})",
            "one .npz of columns needs one row per sample in every array; or give a folder of .npz files",
        )
    return next(iter(rows.values()))


def _pyarrow() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        from ortgpu.errors import EnvironmentUnfitError

        raise EnvironmentUnfitError(
            "reading Parquet needs pyarrow, which is not installed", "pip install pyarrow (or 'ortgpu[ray]')"
        ) from None
    return pq


def _parquet_rows(path: Path) -> int:
    pq = _pyarrow()
    try:
        return int(pq.ParquetFile(path).metadata.num_rows)
    except Exception as exc:  # pyarrow raises its own ArrowInvalid / OSError family for a damaged file
        raise InferInputError(f"--inputs {path}: not a readable Parquet file ({exc})", "check the file") from None


def plan_tasks(dataset: Dataset, items_per_task: int) -> tuple[Task, ...]:
    """Consecutive items, ``items_per_task`` at a time (a columnar source: one item per task)."""
    per = 1 if dataset.kind is not SourceKind.NPZ_FOLDER else max(1, items_per_task)
    items = dataset.items
    return tuple(Task(n, items[i : i + per]) for n, i in enumerate(range(0, len(items), per)))


class ItemReader:
    """Reads items' arrays, keeping the last columnar file loaded (a task's items usually share it)."""

    def __init__(self, kind: SourceKind) -> None:
        self.kind = kind
        self._cached: tuple[str, dict[str, np.ndarray]] | None = None

    def read(self, item: Item) -> dict[str, np.ndarray]:
        """The item's named arrays; ItemError with a one-line reason when it cannot be read."""
        problem = name_problem(item.name)
        if problem:
            raise ItemError(f"its name cannot be an output file name: {problem}")
        if self.kind is SourceKind.NPZ_FOLDER:
            return self._npz(item.source)
        arrays = self._columns(item.source)
        return {name: array[item.start : item.stop] for name, array in arrays.items()}

    def _npz(self, source: str) -> dict[str, np.ndarray]:
        from ortgpu.npz import load_npz

        try:
            return load_npz(
                Path(source), what="input file", contents="inputs", error=InferInputError, hint="fix or remove it"
            )
        except InferInputError as exc:
            raise ItemError(exc.message) from None

    def _columns(self, source: str) -> dict[str, np.ndarray]:
        if self._cached is not None and self._cached[0] == source:
            return self._cached[1]
        arrays = self._npz(source) if self.kind is SourceKind.NPZ_COLUMNS else _read_parquet(Path(source))
        self._cached = (source, arrays)
        return arrays


def _read_parquet(path: Path) -> dict[str, np.ndarray]:
    pq = _pyarrow()
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow's own error family
        raise ItemError(f"cannot read {path.name} ({exc})") from None
    return {name: _column(table.column(name), name) for name in table.column_names}


def _column(column: Any, name: str) -> np.ndarray:
    """A Parquet column as one array: nested lists of one length per level become trailing dims."""
    import pyarrow as pa

    array = column.combine_chunks()
    shape = [len(array)]
    while pa.types.is_list(array.type) or pa.types.is_large_list(array.type) or pa.types.is_fixed_size_list(array.type):
        if array.null_count:
            raise ItemError(f"column {name!r} has empty (null) cells")
        if pa.types.is_fixed_size_list(array.type):
            width = array.type.list_size
        else:
            lengths = set(pa.compute.list_value_length(array).to_pylist())
            if len(lengths) > 1:
                raise ItemError(f"column {name!r} holds lists of different lengths: not one tensor shape")
            width = lengths.pop() if lengths else 0
        array = array.flatten()
        shape.append(width)
    if array.null_count:
        raise ItemError(f"column {name!r} has empty (null) values")
    try:
        values = array.to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ItemError(f"column {name!r} is not numeric ({exc})") from None
    return values.reshape(shape)
