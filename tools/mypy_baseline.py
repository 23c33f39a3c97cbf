"""The mypy baseline that only shrinks: compare today's mypy errors over src/ with mypy-baseline.txt.

    python tools/mypy_baseline.py            # exit 1 when an error appears that the baseline does not list
    python tools/mypy_baseline.py --update   # rewrite the baseline after fixing errors (refuses to add any)

An error is recorded without its line number ("path: error: message  [code]"), so edits above it do not
move it; the same error twice in one file is counted twice. Code moved to another module keeps its errors:
an error whose message the baseline lists under the old path, now missing there, counts as moved, not new.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "mypy-baseline.txt"
_LINE = re.compile(r"^(?P<path>[^:]+\.py):\d+(?::\d+)?: error: (?P<rest>.*)$")


def current_errors() -> Counter[str]:
    """Today's mypy errors over src/, one normalised line each (the configuration is in pyproject.toml)."""
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-pretty", "--no-error-summary", "--hide-error-context"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode not in (0, 1):
        raise SystemExit(f"mypy could not run (exit {run.returncode}):\n{run.stderr or run.stdout}")
    errors: Counter[str] = Counter()
    for line in run.stdout.splitlines():
        match = _LINE.match(line.strip())
        if match:
            errors[f"{match['path'].replace(chr(92), '/')}: {match['rest']}"] += 1
    return errors


def recorded_errors() -> Counter[str]:
    """The baseline as recorded (empty when the file is missing)."""
    if not BASELINE.exists():
        return Counter()
    return Counter(line for line in BASELINE.read_text(encoding="utf-8").splitlines() if line.strip())


def _message(line: str) -> str:
    return line.split(": ", 1)[1]


def _truly_new(new: Counter[str], gone: Counter[str]) -> Counter[str]:
    """The new errors less those that only moved: same message, gone from the path the baseline had it under."""
    moved = Counter(_message(line) for line in gone.elements())
    out: Counter[str] = Counter()
    for line in sorted(new.elements()):
        if moved[_message(line)] > 0:
            moved[_message(line)] -= 1
        else:
            out[line] += 1
    return out


def _write(errors: Counter[str]) -> None:
    BASELINE.write_text("".join(f"{line}\n" for line in sorted(errors.elements())), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="rewrite the baseline; refuses to add errors")
    parser.add_argument("--init", action="store_true", help="record the baseline for the first time")
    args = parser.parse_args(argv)
    now, recorded = current_errors(), recorded_errors()
    new, fixed = _truly_new(now - recorded, recorded - now), recorded - now
    if args.init:
        _write(now)
        print(f"recorded {sum(now.values())} mypy errors in {BASELINE.name}")
        return 0
    if new:
        print(f"{sum(new.values())} mypy error(s) not in {BASELINE.name} (fix them; the baseline only shrinks):")
        for line in sorted(new.elements()):
            print(f"  {line}")
        return 1
    if args.update:
        _write(now)
        print(f"{BASELINE.name}: {sum(recorded.values())} -> {sum(now.values())} errors")
        return 0
    print(f"mypy: {sum(now.values())} errors, none new ({sum(recorded.values())} recorded)")
    if fixed:
        print(f"{sum(fixed.values())} recorded error(s) fixed or moved: `python tools/mypy_baseline.py --update`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
