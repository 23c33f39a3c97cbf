"""Datasets: folders of .npz, one .npz of columns, Parquet; items, tasks, and what is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ortgpu.infer.dataset import InferInputError, ItemError, ItemReader, SourceKind, discover, plan_tasks


def test_folder_of_npz_one_item_per_file_other_files_ignored(tmp_path: Path) -> None:
    for name in ("b", "a", "c"):
        np.savez(tmp_path / f"{name}.npz", x=np.zeros((1, 4), np.float32))
    (tmp_path / "README.txt").write_text("not an input")
    data = discover(tmp_path, rows_per_item=10)
    assert data.kind is SourceKind.NPZ_FOLDER
    assert [i.name for i in data.items] == ["a", "b", "c"] and data.items[0].output_name == "a.npz"
    assert data.ignored == ("README.txt",)
    tasks = plan_tasks(data, items_per_task=2)
    assert [[i.name for i in t.items] for t in tasks] == [["a", "b"], ["c"]]
    assert plan_tasks(data, 2) == tasks  # the plan depends only on the data and the settings


def test_npz_of_columns_is_cut_into_row_items(tmp_path: Path) -> None:
    path = tmp_path / "cols.npz"
    np.savez(path, x=np.arange(50, dtype=np.float32).reshape(25, 2), id=np.arange(25))
    data = discover(path, rows_per_item=10)
    assert data.kind is SourceKind.NPZ_COLUMNS
    assert [(i.name, i.start, i.stop) for i in data.items] == [
        ("cols.000000", 0, 10),
        ("cols.000010", 10, 20),
        ("cols.000020", 20, 25),
    ]
    reader = ItemReader(data.kind)
    assert reader.read(data.items[2])["x"].tolist() == [[40, 41], [42, 43], [44, 45], [46, 47], [48, 49]]
    assert len(plan_tasks(data, 8)) == 3  # one item per task


def test_parquet_list_columns_become_trailing_dims(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    x = np.arange(24, dtype=np.float32).reshape(6, 2, 2)
    table = pa.table({"x": pa.array([[list(map(float, r)) for r in s] for s in x], pa.list_(pa.list_(pa.float32())))})
    pq.write_table(table, tmp_path / "part.parquet")
    data = discover(tmp_path, rows_per_item=4)
    assert data.kind is SourceKind.PARQUET and [i.name for i in data.items] == ["part.000000", "part.000004"]
    got = ItemReader(data.kind).read(data.items[1])["x"]
    assert got.dtype == np.float32 and np.array_equal(got, x[4:])


def test_ragged_parquet_lists_are_a_bad_item(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"x": pa.array([[1.0, 2.0], [3.0]], pa.list_(pa.float32()))}), tmp_path / "r.parquet")
    data = discover(tmp_path / "r.parquet", rows_per_item=10)
    with pytest.raises(ItemError, match="different lengths"):
        ItemReader(data.kind).read(data.items[0])


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda p: p / "missing", "no such file"),
        (lambda p: p, "no .npz or .parquet"),
        (lambda p: (p / "x.txt").write_text("x") and p / "x.txt", "not a .npz or .parquet"),
    ],
)
def test_sources_that_are_refused(tmp_path: Path, setup, message: str) -> None:
    with pytest.raises(InferInputError, match=message) as caught:
        discover(setup(tmp_path), 10)
    assert caught.value.exit_code == 2


def test_columns_with_different_row_counts_are_refused(tmp_path: Path) -> None:
    np.savez(tmp_path / "c.npz", a=np.zeros((3, 2)), b=np.zeros((4, 2)))
    with pytest.raises(InferInputError, match="different row counts"):
        discover(tmp_path / "c.npz", 10)


def test_a_damaged_npz_is_a_bad_item_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "broken.npz").write_bytes(b"PK\x03\x04 not really")
    data = discover(tmp_path, 10)
    with pytest.raises(ItemError, match=r"broken\.npz"):
        ItemReader(data.kind).read(data.items[0])
