"""Bad input never reaches exit 70: odd dims, huge numbers, deep nesting, odd paths and outputs (issue 17, item 9).

One table of cases, each run in-process twice: plain (exit 2 or 3, exactly one line on stderr, no traceback)
and with ``--json`` (the same exit code and a JSON error envelope on stdout).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

LONG_NAME = "c" * 300  # longer than NAME_MAX (255): every stat() of it fails with ENAMETOOLONG
DIGITS = "9" * 5000  # past Python's 4300-digit int() limit
SUM = "+".join(["1"] * 5000)  # an exporter's "dim expression" deep enough to exhaust the parser's recursion

Case = Callable[[Path, Path], list[str]]  # (folder, tiny model) -> argv


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _model(folder: Path, dims: list[object]) -> str:
    from hostile_models import save_model

    return str(save_model(folder / "odd.onnx", [("x", dims)]))


def _loop(folder: Path) -> Path:
    """A folder holding a symlink that points at itself."""
    loop = folder / "loop"
    loop.mkdir()
    os.symlink(loop / "self", loop / "self")
    return loop


CHECK = ["check", "--ep", "cpu", "--warm-runs", "1"]
BENCH = ["bench", "--ep", "cpu", "--iterations", "3", "--warmup", "1"]

CASES: dict[str, tuple[Case, int | tuple[int, ...]]] = {
    # --shape / --dim / --range values
    "shape superscript two": (lambda d, m: [*CHECK, str(m), "--shape", "x=²x4"], 2),
    "shape 5000 digits": (lambda d, m: [*CHECK, str(m), "--shape", f"x={DIGITS}x4"], 2),
    "dim 5000 digits": (lambda d, m: [*CHECK, str(m), "--dim", f"batch={DIGITS}"], 2),
    "dim past numpy's limit": (lambda d, m: [*CHECK, str(m), "--dim", "batch=99999999999999999999"], 2),
    "shape of 1.5 TiB": (lambda d, m: [*CHECK, str(m), "--shape", "x=99999999999x4"], 2),
    "shape at int64's limit": (lambda d, m: [*CHECK, str(m), "--shape", "x=9223372036854775807x4"], 2),
    "range 5000 digits": (lambda d, m: [*CHECK, str(m), "--range", f"x=1{DIGITS},2{DIGITS}"], 2),
    # dims written in the model by its exporter
    "model dim superscript": (lambda d, m: [*CHECK, _model(d, ["N", "²"])], 2),
    "model dim 5000 digits": (lambda d, m: [*CHECK, _model(d, ["N", DIGITS])], 2),
    "model dim 1+1+...": (lambda d, m: [*CHECK, _model(d, ["N", SUM])], 2),
    "model dim product overflows": (lambda d, m: [*CHECK, _model(d, ["N", "99999*99999*99999*9999999*999999"])], 2),
    "model dim expression times a huge --dim": (
        lambda d, m: [*CHECK, _model(d, ["N", "seq*99999"]), "--dim", "seq=99999999"],
        2,
    ),
    # config files
    "config threads 2**63": (
        lambda d, m: [
            *CHECK,
            str(m),
            "--config",
            str(_write(d / "c.toml", "[session]\nintra_op_num_threads = 9223372036854775807\n")),
        ],
        2,
    ),
    "config threads 2**31": (
        lambda d, m: [
            *CHECK,
            str(m),
            "--config",
            str(_write(d / "c.toml", "[session]\ninter_op_num_threads = 2147483648\n")),
        ],
        2,
    ),
    "config 10k-deep arrays": (
        lambda d, m: [*CHECK, str(m), "--config", str(_write(d / "c.toml", "a = " + "[" * 10000 + "]" * 10000))],
        2,
    ),
    "config 3k-deep inline tables": (
        lambda d, m: [*CHECK, str(m), "--config", str(_write(d / "c.toml", "a = " + "{b=" * 3000 + "1" + "}" * 3000))],
        2,
    ),
    "config shapes of 1.5 TiB": (
        lambda d, m: [
            *CHECK,
            str(m),
            "--config",
            str(_write(d / "c.toml", '[inputs]\nshapes = {x = "99999999999x4"}\n')),
        ],
        2,
    ),
    "config dims past numpy's limit": (
        lambda d, m: [
            *CHECK,
            str(m),
            "--config",
            str(_write(d / "c.toml", "[inputs]\ndims = {batch = 4611686018427387904}\n")),
        ],
        2,
    ),
    "config with a 300-character name": (lambda d, m: [*CHECK, str(m), "--config", str(d / f"{LONG_NAME}.toml")], 2),
    # baselines
    "baseline 10k-deep JSON": (
        lambda d, m: [*BENCH, str(m), "--baseline", str(_write(d / "b.json", "[" * 10000 + "]" * 10000))],
        2,
    ),
    # model, inputs and reference paths
    "model with a 300-character name": (lambda d, m: [*CHECK, str(d / f"{LONG_NAME}.onnx")], 2),
    "model is a symlink loop": (lambda d, m: [*CHECK, str(_loop(d) / "self")], 2),
    "inputs with a 300-character name": (lambda d, m: [*CHECK, str(m), "--inputs", str(d / f"{LONG_NAME}.npz")], 2),
    "reference with a 300-character name": (
        lambda d, m: [*CHECK, str(m), "--reference", str(d / f"{LONG_NAME}.npz")],
        2,
    ),
    # package folders
    "doctor package with a 300-character name": (lambda d, m: ["doctor", "--package", str(d / LONG_NAME)], 2),
    "doctor package holding a symlink loop": (lambda d, m: ["doctor", "--package", str(_loop(d))], 2),
    "bundle package holding a symlink loop": (
        lambda d, m: ["bundle", "--package", str(_loop(d)), "--out", str(d / "out")],
        2,
    ),
    "check package holding a symlink loop": (lambda d, m: [*CHECK, str(m), "--package", str(_loop(d))], 2),
    # outputs
    "bench save to a directory": (lambda d, m: [*BENCH, str(m), "--save", str(d)], 2),
    "bench save under /proc": (lambda d, m: [*BENCH, str(m), "--save", "/proc/self/ortgpu-bench.json"], 2),
    "bench save with a 300-character name": (lambda d, m: [*BENCH, str(m), "--save", str(d / f"{LONG_NAME}.json")], 2),
    "bench report under /proc": (lambda d, m: [*BENCH, str(m), "--report", "/proc/self/ortgpu-report.html"], 2),
    "bench report to a directory": (lambda d, m: [*BENCH, str(m), "--report", str(d)], 2),
    "check save-outputs under /proc": (lambda d, m: [*CHECK, str(m), "--save-outputs", "/proc/self/out.npz"], 2),
    "check save-outputs with a 300-character name": (
        lambda d, m: [*CHECK, str(m), "--save-outputs", str(d / f"{LONG_NAME}.npz")],
        2,
    ),
}


# What the one line must say, for cases whose cause is easy to misname.
SAID = {
    "shape superscript two": "is not a whole number",
    "dim past numpy's limit": "larger than ONNX allows",
    "shape of 1.5 TiB": "ORTGPU_MAX_INPUTS",
    "shape at int64's limit": "ORTGPU_MAX_INPUTS",
    "config threads 2**63": "a C int",
    "config 10k-deep arrays": "nested too deeply",
    "baseline 10k-deep JSON": "nested too deeply",
    "model with a 300-character name": "too long",
    "model is a symlink loop": "symbolic link loop",
    "bench save to a directory": "directory",
}


@pytest.mark.parametrize("as_json", [False, True], ids=["plain", "json"])
@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_one_line_and_a_documented_exit_code(
    name: str, as_json: bool, cli: Callable[..., object], tiny: Path, tmp_path: Path
) -> None:
    build, rc = CASES[name]
    folder = tmp_path / "case"
    folder.mkdir()
    argv = build(folder, tiny) + (["--json"] if as_json else [])
    outcome = cli(*argv)
    line = outcome.assert_one_line_error(rc)
    assert SAID.get(name, "") in line
    if as_json:
        doc = json.loads(outcome.out)
        assert doc["schema"] == "ortgpu.error/v1"
        assert doc["error"]["exit_code"] == outcome.rc
        assert doc["error"]["message"]


def test_a_hostile_leading_dim_is_a_symbol_that_defaults_to_one(cli: Callable[..., object], tmp_path: Path) -> None:
    """Not evaluated (too long to be an exporter's expression), not a crash: the leading dim defaults to 1."""
    outcome = cli(*CHECK, _model(tmp_path, [SUM, 4]), "--json")
    assert outcome.rc == 0, outcome.err
    result = json.loads(outcome.out)["result"]
    assert result["inputs"][0]["shape"] == [1, 4]
    assert any("defaulted to 1" in note for note in result["input_notes"])


def test_the_table_covers_at_least_the_33_reported_cases() -> None:
    assert len(CASES) >= 33
