"""Data sets of inputs: a folder of .npz files, one .npz whose arrays carry a leading sample axis, or N
generated samples (one seed each)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ortgpu.errors import BadInputError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ortgpu.model.inputs import InputSpec, ResolvedInputs
    from ortgpu.model.inspect import ModelInfo

__all__ = ["MAX_SAMPLES", "Dataset", "DatasetError", "Sample", "load_dataset", "split_stacked", "stack_outputs"]

MAX_SAMPLES = 10_000


class DatasetError(BadInputError):
    """A data set that cannot be used (exit 2)."""


@dataclass(frozen=True)
class Sample:
    """One set of feeds, and what to call it in messages ("seed 3", "img_007.npz", "data.npz[12]")."""

    label: str
    inputs: ResolvedInputs


@dataclass(frozen=True)
class Dataset:
    samples: tuple[Sample, ...]
    source: str  # what the samples are, in words
    notes: tuple[str, ...] = ()

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(s.label for s in self.samples)


def _count(samples: int | None) -> int | None:
    if samples is None:
        return None
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise DatasetError(f"--samples {samples!r}: needs a whole number of 1 or more", "e.g. --samples 8")
    if samples > MAX_SAMPLES:
        raise DatasetError(f"--samples {samples}: over {MAX_SAMPLES}", f"use at most {MAX_SAMPLES} samples")
    return samples


def split_stacked(
    arrays: Mapping[str, np.ndarray], ranks: Mapping[str, int | None], source: str
) -> list[dict[str, np.ndarray]] | None:
    """Per-sample arrays when every array has one axis more than the model gives its input (a leading sample
    axis), None when none does; a mix, or sample axes of different lengths, is an error."""
    stacked, plain = [], []
    for name, array in arrays.items():
        rank = ranks.get(name)
        if rank is None:
            continue
        if array.ndim == rank + 1:
            stacked.append(name)
        elif array.ndim == rank:
            plain.append(name)
    if not stacked:
        return None
    if plain:
        raise DatasetError(
            f"{source}: {', '.join(repr(n) for n in stacked)} carry a leading sample axis but "
            f"{', '.join(repr(n) for n in plain)} do not",
            "give every array the sample axis (shape [samples, ...]) or none",
        )
    unknown = [n for n in arrays if ranks.get(n) is None]
    lengths = {int(arrays[n].shape[0]) for n in stacked} | {int(arrays[n].shape[0]) for n in unknown}
    if len(lengths) != 1:
        raise DatasetError(
            f"{source}: the sample axes differ in length ({', '.join(str(v) for v in sorted(lengths))})",
            "every array needs the same number of samples along its first axis",
        )
    (count,) = lengths
    if count < 1:
        raise DatasetError(f"{source}: the sample axis is empty", "store at least one sample")
    if count > MAX_SAMPLES:
        raise DatasetError(f"{source}: {count} samples, over {MAX_SAMPLES}", "split the data set")
    return [{name: array[index] for name, array in arrays.items()} for index in range(count)]


def load_dataset(model: ModelInfo, spec: InputSpec, samples: int | None = None) -> Dataset:
    """The samples to run: from ``spec.npz`` (a folder of .npz, or one .npz, maybe with a leading sample axis),
    or ``samples`` generated ones (seeds ``spec.seed``, ``spec.seed + 1``...). Errors are DatasetError or
    InputError (exit 2)."""
    from ortgpu.model.inputs import make_inputs

    count = _count(samples)
    if spec.npz is None:
        total = count or 1
        found = tuple(
            Sample(f"seed {spec.seed + i}", make_inputs(model, replace(spec, seed=spec.seed + i))) for i in range(total)
        )
        source = (
            "generated" if total == 1 else f"{total} generated samples (seeds {spec.seed}..{spec.seed + total - 1})"
        )
        return Dataset(found, source)
    path = Path(spec.npz)
    if path.is_dir():
        return _folder(model, spec, path, count)
    from ortgpu.model.inputs import InputError
    from ortgpu.npz import load_npz

    hint = "save it with numpy.savez(path, name=array, ...) using the model's input names"
    arrays = load_npz(path, what="inputs file", contents="inputs", error=InputError, hint=hint)
    ranks = {info.name: info.rank for info in model.inputs}
    split = split_stacked(arrays, ranks, path.name)
    if split is None:
        if count not in (None, 1):
            raise DatasetError(
                f"--samples {count} with {path.name}, which holds one sample (no leading sample axis)",
                "drop --samples, or give a folder of .npz files or arrays shaped [samples, ...]",
            )
        return Dataset((Sample(path.name, make_inputs(model, spec)),), path.name)
    notes: list[str] = []
    if count is not None and count < len(split):
        notes.append(f"the first {count} of {len(split)} samples in {path.name} (--samples)")
        split = split[:count]
    found = tuple(
        Sample(f"{path.name}[{i}]", make_inputs(model, spec, arrays=one, source=f"{path.name}[{i}]"))
        for i, one in enumerate(split)
    )
    return Dataset(found, f"{path.name} ({len(found)} samples along the leading axis)", tuple(notes))


def _folder(model: ModelInfo, spec: InputSpec, folder: Path, count: int | None) -> Dataset:
    from ortgpu.model.inputs import make_inputs

    files = sorted(p for p in folder.iterdir() if p.suffix == ".npz" and p.is_file())
    if not files:
        raise DatasetError(f"--inputs {folder}: the folder holds no .npz file", "put one .npz per sample in it")
    notes: list[str] = []
    limit = min(count or MAX_SAMPLES, MAX_SAMPLES)
    if len(files) > limit:
        notes.append(f"the first {limit} of {len(files)} files in {folder.name} (sorted by name)")
        files = files[:limit]
    found = tuple(Sample(f.name, make_inputs(model, replace(spec, npz=f))) for f in files)
    return Dataset(found, f"folder {folder.name} ({len(found)} .npz files)", tuple(notes))


def stack_outputs(per_sample: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Outputs of several samples as one array each with a leading sample axis (what --save-outputs writes)."""
    import numpy as np

    names = list(per_sample[0])
    stacked: dict[str, np.ndarray] = {}
    for name in names:
        values = [np.asarray(s[name]) for s in per_sample if name in s]
        shapes = {v.shape for v in values}
        if len(shapes) != 1:
            raise DatasetError(
                f"output {name!r} has different shapes across samples ({len(shapes)} shapes): they cannot be "
                "stacked into one .npz",
                "save outputs of one sample at a time",
            )
        stacked[name] = np.stack(values)
    return stacked
