"""What a tune is asked to do (`TuneRequest`), its flag-free parsers and its input error."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ortgpu.config import parse_bytes
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import BadInputError
from ortgpu.tune.output import MARKER
from ortgpu.tune.result import Objective
from ortgpu.tune.trial import CHILD_COMMAND
from ortgpu.untrusted import printable

JOURNAL_NAME = "tune-journal.log"


CONFIG_NAME = "ortgpu.toml"


class TuneInputError(BadInputError):
    """A tune setting that cannot work (exit 2)."""


@dataclass(frozen=True)
class TuneRequest:
    """What to tune. ``batches``: one batch, or a sweep (throughput: the batch becomes a lever; a latency
    objective: the geometric mean over the batches, dims left open). ``budget_s``: wall time for the search;
    ``max_trials``: stop after this many trials too. ``out``: folder for ortgpu.toml, the model files and the
    journal (``resume`` continues the study in it). ``memory_budget``: bytes of peak memory a trial may use
    (NVML, device-wide, on a GPU; resident memory on the CPU EP). ``measure_s``: timed seconds per trial, in
    three stages the pruner looks at. ``seed``: the sampler's seed."""

    model: Path
    out: Path
    ep: ExecutionProvider | None = None
    objective: Objective = Objective.P50
    batches: tuple[int, ...] = ()
    budget_s: float = 600.0
    max_trials: int | None = None
    memory_budget: int | None = None
    resume: bool = False
    measure_s: float = 1.0
    max_warmup_s: float = 2.0
    trial_timeout_s: float = 300.0
    host_memory_limit: int | None = None
    device_id: int = 0
    seed: int = 0
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    dims: Mapping[str, int] = field(default_factory=dict)
    priors: bool = True  # start from ORT's defaults and the levers measured best on the H200, then let TPE search
    child_command: tuple[str, ...] = field(default=CHILD_COMMAND)

    def validate(self) -> None:
        """Refuse settings that cannot work, and an --out that is not ours to write, before anything runs."""
        if not (math.isfinite(self.budget_s) and self.budget_s > 0):
            raise TuneInputError(f"--budget {self.budget_s}: needs a positive time", "e.g. --budget 10m")
        if self.max_trials is not None and self.max_trials < 1:
            raise TuneInputError(f"--trials {self.max_trials}: needs 1 or more", "e.g. --trials 30")
        for batch in self.batches:
            if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
                raise TuneInputError(f"--batch {batch!r}: not a whole number of 1 or more", "e.g. --batch 1,32")
        if self.memory_budget is not None and self.memory_budget < 1:
            raise TuneInputError(f"--memory-budget {self.memory_budget}: needs bytes > 0", "e.g. --memory-budget 8GiB")
        if not (math.isfinite(self.measure_s) and self.measure_s > 0):
            raise TuneInputError(f"--measure {self.measure_s}: needs a positive number of seconds", "e.g. 1.0")
        longest = min(self.budget_s, self.trial_timeout_s / 2)
        if self.measure_s > longest:
            raise TuneInputError(
                f"--measure {self.measure_s:g} s: a trial may take at most {self.trial_timeout_s:g} s and the whole "
                f"tune {self.budget_s:g} s",
                f"time each trial for {longest:g} s or less (e.g. --measure 1)",
            )
        if isinstance(self.seed, bool) or not 0 <= self.seed <= _MAX_SEED:
            raise TuneInputError(f"--seed {self.seed}: not between 0 and {_MAX_SEED:,}", "e.g. --seed 0")
        if isinstance(self.device_id, bool) or not 0 <= self.device_id <= _MAX_DEVICE:
            raise TuneInputError(f"--device {self.device_id}: not a CUDA device id", "e.g. --device 0")
        self._validate_out()

    def _validate_out(self) -> None:
        out = self.out
        try:
            if out.is_symlink() and not out.exists():
                raise TuneInputError(f"--out {out} is a symbolic link to nothing", "give a folder (created if missing)")
            if out.exists() and not out.is_dir():
                raise TuneInputError(f"--out {out}: exists and is not a folder", "give a folder (created if missing)")
            journal, config = out / JOURNAL_NAME, out / CONFIG_NAME
            if self.resume:
                _check_journal_file(journal, out)
            elif os.path.lexists(journal):
                raise TuneInputError(
                    f"{out} already holds a tune ({JOURNAL_NAME})",
                    "add --resume to continue it, or give another --out",
                )
            if os.path.lexists(config) and not _ours(config):
                raise TuneInputError(f"{config} exists and was not written by ortgpu tune", "give another --out")
            if not self.resume and out.is_dir():
                others = sorted(entry.name for entry in out.iterdir() if entry.name != CONFIG_NAME)
                if others:
                    shown = ", ".join(printable(name, 40) for name in others[:3]) + (", ..." if len(others) > 3 else "")
                    raise TuneInputError(
                        f"--out {out} is not empty ({shown}): a new tune writes only into a new or empty folder, "
                        "so it never replaces a file it did not write",
                        "give a new folder, or add --resume to continue the tune in it",
                    )
        except OSError as exc:
            raise TuneInputError(f"--out {out}: {exc.strerror or exc}", "give a folder you can write to") from None


_MAX_SEED = 2**32 - 1  # what Optuna's samplers (numpy's RandomState) take


_MAX_DEVICE = 2**31 - 1


def parse_budget(text: str) -> float:
    """ "10m", "90s", "1h", "1h30m", "45" (seconds) -> seconds."""
    import re

    raw = str(text).strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", raw):
        value = float(raw)
    else:
        parts = re.findall(r"(\d+(?:\.\d+)?)\s*(h|m|s)", raw)
        if not parts or re.sub(r"\s+", "", "".join(a + b for a, b in parts)) != re.sub(r"\s+", "", raw):
            raise TuneInputError(f"--budget {text!r}: not a time", "e.g. --budget 10m, 90s or 1h30m")
        value = sum(float(a) * {"h": 3600, "m": 60, "s": 1}[b] for a, b in parts)
    if not (math.isfinite(value) and value > 0):
        raise TuneInputError(f"--budget {text!r}: needs a positive time", "e.g. --budget 10m")
    return value


def parse_memory_budget(text: str) -> int:
    try:
        return parse_bytes(text, "--memory-budget")
    except BadInputError as exc:
        raise TuneInputError(exc.message, exc.hint) from None


_MAX_JOURNAL_BYTES = 256 * 2**20  # a journal of thousands of trials is a few MB; more is not one tune wrote


def _check_journal_file(journal: Path, out: Path) -> None:
    if not os.path.lexists(journal):
        raise TuneInputError(f"--resume: no {JOURNAL_NAME} in {out}", "run without --resume to start a tune")
    if not journal.is_file():
        raise TuneInputError(
            f"--resume: {journal} is not a regular file", "start a new tune in another --out (nothing was changed)"
        )
    size = journal.stat().st_size
    if size > _MAX_JOURNAL_BYTES:
        raise TuneInputError(
            f"--resume: {journal} is {size / 2**20:,.0f} MiB, more than a tune journal holds "
            f"({_MAX_JOURNAL_BYTES // 2**20} MiB at most)",
            "start a new tune in another --out (nothing was changed)",
        )


def _ours(path: Path) -> bool:
    """A regular file whose first line is tune's marker (a FIFO or device is never opened)."""
    if not path.is_file():
        return False
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return handle.readline().startswith(MARKER)
    except OSError:
        return False
