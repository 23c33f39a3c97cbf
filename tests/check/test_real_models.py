"""`ortgpu check` on real exported models that PyPI wheels ship (OCR, layout detector, VAD); network, cached."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from ortgpu.cli.main import main

_SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "real_models.py"
_spec = importlib.util.spec_from_file_location("real_models", _SCRIPT)
real_models = importlib.util.module_from_spec(_spec)
sys.modules["real_models"] = real_models  # dataclasses look their module up there
_spec.loader.exec_module(real_models)

pytestmark = pytest.mark.network


@pytest.mark.parametrize("model", real_models.REAL_MODELS, ids=lambda m: m.name)
def test_real_model_passes_with_only_the_flags_it_needs(model, capsys) -> None:
    try:
        path = real_models.fetch(model)
    except RuntimeError as exc:
        pytest.skip(str(exc))
    if model.flags:
        # an open dim is an error naming the input and the flag, never a guess
        assert main(["check", str(path), "--ep", "cpu"]) == 2
        err = capsys.readouterr().err
        assert "input 'x'" in err and "--shape" in err and "Traceback" not in err
    assert main(["check", str(path), "--ep", "cpu", *model.flags]) == 0
    assert "PASS" in capsys.readouterr().out
