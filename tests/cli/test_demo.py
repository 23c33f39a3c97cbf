"""`ortgpu demo` end to end on the CPU EP: doctor, EP choice, check, bench, report, within a minute."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ortgpu.cli.main import main
from ortgpu.demo import DEMO_REPORT_NAME


def _best_ep() -> str:
    from ortgpu.session import best_available_ep

    return best_available_ep()[0].value


def test_demo_runs_end_to_end_and_writes_the_report_here(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    for step in ("1. doctor", "2. execution provider", "3. check", "4. bench", "report:"):
        assert step in out
    ep = _best_ep()
    assert f"{ep}/run" in out and f"{ep}/iobinding" in out
    if ep == "cpu":
        assert re.search(r"cpu/cudagraph \(batch 1, 8, 32\): skipped", out)
    else:
        assert f"{ep}/cudagraph" in out and "cpu/run" in out  # the CPU EP joins for comparison
    report = tmp_path / DEMO_REPORT_NAME
    assert str(report) in out.replace("\n", "")
    page = report.read_text(encoding="utf-8")
    for section in ("<h2>Doctor</h2>", "<h2>Execution provider</h2>", "<h2>Check</h2>", "<h2>Hints</h2>"):
        assert section in page
    assert page.count("data:image/png;base64,") >= 3
    seconds = float(re.search(r"done in ([\d.]+) s", out).group(1))
    assert seconds < 60  # the promise: under a minute on a 2-core CPU machine


def test_demo_json(tmp_path: Path, capsys) -> None:
    assert main(["demo", "--out-dir", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "ortgpu.demo/v1"
    result = doc["result"]
    assert result["ep"] in ("cpu", "cuda") and result["ep_reason"]
    assert result["doctor"]["verdict"] and result["check"]["passed"] is True
    assert {c["batch"] for c in result["bench"]["cases"]} == {1, 8, 32}
    assert Path(result["report"]) == (tmp_path / DEMO_REPORT_NAME).resolve()


def test_demo_out_dir_must_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--out-dir", str(tmp_path / "nope")]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert not (tmp_path / "nope").exists()
