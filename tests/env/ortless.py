"""A Python path with this environment's packages but no onnxruntime: for child processes that must not see one.

`ortless_site(folder)` fills `folder` with links to every entry of this environment's site-packages except the
onnxruntime distributions (module folder and dist-info), ortgpu itself (the child gets ``src`` first on
PYTHONPATH) and pip/setuptools (a child venv keeps its own). Run the child with ``python -S`` (or from another
venv) and PYTHONPATH=src:folder: to ortgpu, importlib.metadata and the doctor it is a Python without onnxruntime.
"""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
_LEFT_OUT = ("onnxruntime-", "onnxruntime_", "ortgpu", "__editable__", "pip", "setuptools", "_distutils_hack")


def _left_out(name: str) -> bool:
    lowered = name.lower()
    return lowered == "onnxruntime" or lowered.startswith(_LEFT_OUT) or lowered.endswith(".pth")


def ortless_site(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not _left_out(entry.name):
            (folder / entry.name).symlink_to(entry)
    return folder


def ortless_env(folder: Path, **extra: str) -> dict[str, str]:
    """This process's environment for such a child: PYTHON* and LD_LIBRARY_PATH dropped, PYTHONPATH=src:folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "LD_LIBRARY_PATH"))}
    env.update(PYTHONPATH=f"{SRC}{os.pathsep}{folder}", **extra)
    return env
