"""The tune's Optuna journal: opened or resumed, checked as the untrusted file it is (identity, every trial)."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ortgpu.errors import EnvironmentUnfitError
from ortgpu.tune.request import (
    TuneInputError,
    TuneRequest,
)
from ortgpu.tune.result import TrialStatus
from ortgpu.tune.space import (
    LEVERS,
)
from ortgpu.untrusted import printable

_STUDY = "ortgpu-tune"


_NEW_TUNE_HINT = "start a new tune in another --out (the journal was left as it is)"


@contextlib.contextmanager
def quiet_optuna(optuna: Any) -> Iterator[None]:
    """Optuna logs a failed trial (a Ctrl-C included) with its traceback on stderr: the library never prints."""
    before = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.CRITICAL)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(before)


def open_study(optuna: Any, request: TuneRequest, journal: Path, sampler: Any, pruner: Any) -> Any:
    """A new study in a new journal, or (``resume``) the tune's study in the journal, with every trial checked by
    :func:`check_trials` later. The journal is an untrusted file: whatever Optuna raises reading it is bad input."""
    direction = "maximize" if request.objective.maximize else "minimize"
    if not request.resume:
        storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(journal)))
        return optuna.create_study(
            study_name=_STUDY, storage=storage, sampler=sampler, pruner=pruner, direction=direction
        )
    hint = _NEW_TUNE_HINT
    try:
        storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(journal)))
        names = [summary.study_name for summary in optuna.get_all_study_summaries(storage, include_best_trial=False)]
        if _STUDY not in names:
            raise TuneInputError(f"--resume: {journal} holds no ortgpu tune", hint)
        study = optuna.load_study(study_name=_STUDY, storage=storage, sampler=sampler, pruner=pruner)
        study.trials, study.user_attrs, study.direction  # noqa: B018 -- read it all here, where errors are caught
    except TuneInputError:
        raise
    except Exception as exc:  # Optuna replays any text it is given; a bad file raises anything from json to KeyError
        raise TuneInputError(
            f"--resume: {journal} cannot be read as a tune journal ({type(exc).__name__}: {str(exc)[:120]})", hint
        ) from None
    if study.direction.name.lower() != direction:
        raise TuneInputError(f"--resume: {journal} was a tune that {study.direction.name.lower()}s", hint)
    return study


def check_identity(study: Any, identity: Mapping[str, Any], request: TuneRequest, journal: Path) -> None:
    seen = {key: study.user_attrs.get(key) for key in identity}
    if all(value is None for value in seen.values()):
        raise TuneInputError(f"--resume: {journal} holds no ortgpu tune", _NEW_TUNE_HINT)
    what = {
        "model_sha256": "model",
        "ep": "--ep",
        "objective": "--objective",
        "batches": "--batch",
        "shapes": "input shapes (--shape, --dim)",
    }
    differs = []
    for key, value in identity.items():
        if seen[key] != value:
            if seen[key] is None:
                differs.append(f"no record of its {what[key]}")
            elif key == "model_sha256":
                differs.append(f"another model (sha256 {str(seen[key])[:12]}..., this one {str(value)[:12]}...)")
            else:
                differs.append(f"{what[key]} {printable(json.dumps(seen[key]), 80)}, not {json.dumps(value)}")
    if differs:
        raise TuneInputError(
            f"--resume: the tune in {request.out} was for {'; '.join(differs)}",
            "resume with the same model, --ep, --objective, --batch and shapes, or give another --out",
        )


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _attr_problem(attrs: Mapping[str, Any], choices: Mapping[str, tuple[Any, ...]]) -> str | None:
    """What in one trial's user attributes tune never writes (None: all of it could be tune's)."""
    status = attrs.get("status")
    if status is not None and status not in {s.value for s in TrialStatus}:
        return f"status {printable(str(status), 40)}"
    params = attrs.get("params")
    if params is not None:
        if not isinstance(params, dict):
            return "params that are not a table"
        for name, value in params.items():
            if name not in choices:
                return f"the setting {printable(str(name), 40)}"
            if value not in choices[name] or isinstance(value, bool) != isinstance(choices[name][0], bool):
                return f"{name} = {printable(repr(value), 40)}"
    if status == TrialStatus.OK.value and not _number(attrs.get("value")):
        return f"a measured value of {printable(repr(attrs.get('value')), 40)}"
    for key in ("value", "seconds", "max_abs_error", "gpu_memory_peak_bytes", "host_memory_peak_bytes", "sm_clock_mhz"):
        if attrs.get(key) is not None and not _number(attrs[key]):
            return f"{key} = {printable(repr(attrs[key]), 40)}"
    for key in ("reason", "signature", "variant", "learned_key"):
        if attrs.get(key) is not None and not isinstance(attrs[key], str):
            return f"{key} that is not text"
    number = attrs.get("number")
    if number is not None and (isinstance(number, bool) or not isinstance(number, int)):
        return "a trial number that is not a whole number"
    if attrs.get("per_batch") is not None and not isinstance(attrs["per_batch"], dict):
        return "per-batch results that are not a table"
    return None


def check_trials(study: Any, prep: Any, journal: Path) -> None:
    """Every trial of a resumed journal holds only what tune writes: its settings feed the sampler, the table and
    the ortgpu.toml written at the end. A journal made on another machine (other thread counts) is refused too:
    Optuna cannot continue a search whose choices changed."""

    choices = {lever.name: tuple(lever.choices(prep.ctx)) for lever in LEVERS}
    choices["batch"] = prep.batches
    for trial in study.trials:
        problem = _attr_problem(trial.user_attrs, choices)
        for name, distribution in trial.distributions.items():
            offered = tuple(getattr(distribution, "choices", ()) or ())
            if problem is None and (name not in choices or offered != choices[name]):
                problem = f"{printable(str(name), 40)} searched over {printable(repr(offered), 60)}"
                if name in choices:
                    problem += f", here it is {choices[name]!r} (another machine?)"
        if problem is not None:
            raise TuneInputError(
                f"--resume: {journal}, trial {trial.number}: {problem}, which ortgpu tune does not write here",
                _NEW_TUNE_HINT,
            )


def import_optuna() -> Any:
    try:
        import optuna
    except ImportError:
        raise EnvironmentUnfitError(
            "ortgpu tune needs Optuna, which is not installed", "pip install 'ortgpu[tune]' (optuna, sympy)"
        ) from None
    return optuna
