"""The real load attempt in a child process: the loader's own words, mapped files, crashes and hangs."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
from tests.support.fake_libs import build_lib, needs_gcc

from ortgpu.host.load_attempt import LoadOutcome, PrestartedChild, attempt_load, provider_libraries

pytestmark = needs_gcc


def _providers(tmp_path: Path, needed: list[str], source: str | None = None) -> tuple[Path, Path]:
    capi = tmp_path / "capi"
    build_lib(capi / "libonnxruntime_providers_shared.so")
    kwargs = {"source": source} if source else {}
    build_lib(capi / "libonnxruntime_providers_cuda.so", needed=needed, **kwargs)
    return provider_libraries(capi)


def test_missing_dependency_reports_the_loader_text(tmp_path) -> None:
    libs = _providers(tmp_path, ["libcublasLt.so.97"])
    result = attempt_load(libs, env={"PATH": os.environ.get("PATH", "")})
    assert result.outcome is LoadOutcome.LIBRARY_FAILED and not result.ok
    assert [lib.ok for lib in result.libraries] == [True, False]
    assert result.error == "libcublasLt.so.97: cannot open shared object file: No such file or directory"
    assert result.libraries[1].path == libs[1]


def test_dependency_on_ld_library_path_loads_and_shows_in_the_maps(tmp_path) -> None:
    libs = _providers(tmp_path, ["libcudart.so.97"])
    cuda_dir = tmp_path / "cuda" / "lib64"
    build_lib(cuda_dir / "libcudart.so.97")
    result = attempt_load(libs, env={"LD_LIBRARY_PATH": str(cuda_dir)})
    assert result.outcome is LoadOutcome.LOADED, result.error
    assert cuda_dir / "libcudart.so.97" in result.mapped  # exactly which copy the loader mapped
    assert set(libs) <= set(result.mapped)
    assert result.duration_s > 0


def test_a_library_that_aborts_while_loading_is_a_crash_not_a_hang(tmp_path) -> None:
    source = "#include <stdlib.h>\n__attribute__((constructor)) static void boom(void) { abort(); }\n"
    libs = _providers(tmp_path, [], source=source)
    result = attempt_load(libs)
    assert result.outcome is LoadOutcome.CRASHED
    assert result.returncode is not None and result.returncode < 0
    assert "before reporting" in result.error


def test_a_hanging_child_times_out(tmp_path) -> None:
    sleeper = tmp_path / "python"
    sleeper.write_text("#!/bin/sh\nsleep 30\n")
    sleeper.chmod(0o755)
    result = attempt_load(_providers(tmp_path, []), python=str(sleeper), timeout_s=0.5)
    assert result.outcome is LoadOutcome.TIMEOUT
    assert result.duration_s < 10


@pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None, reason="needs onnxruntime")
def test_session_on_a_cpu_build_is_reported_as_a_fallback(tmp_path) -> None:
    # The CPU wheel has only providers_shared: the session runs, but on the CPU EP, which the attempt must say.
    spec = importlib.util.find_spec("onnxruntime")
    capi = Path(spec.origin).parent / "capi"
    shared = capi / "libonnxruntime_providers_shared.so"
    if not shared.is_file():
        pytest.skip("this onnxruntime has no providers_shared library")
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("a CUDA build: the GPU test covers it")
    result = attempt_load([shared], session=True, module_parent=capi.parent.parent)
    assert result.outcome is LoadOutcome.SESSION_FAILED
    assert result.session_providers == ("CPUExecutionProvider",)
    assert "instead of CUDAExecutionProvider" in result.error
    assert result.ort_version == onnxruntime.__version__
    assert shared in result.mapped


def _fake_onnxruntime(site: Path, init: str) -> Path:
    package = site / "onnxruntime"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(init)
    return site


def _children() -> set[int]:
    """This process's live child processes (from /proc)."""
    out: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            out |= {int(pid) for pid in (task / "children").read_text().split()}
        except OSError:
            continue
    return out


def test_a_prestarted_child_answers_as_a_fresh_one(tmp_path) -> None:
    libs = _providers(tmp_path, ["libcublasLt.so.97"])
    site = _fake_onnxruntime(tmp_path / "site", "__version__ = '1.31.1'\n")
    env = {"PATH": os.environ.get("PATH", "")}
    fresh = attempt_load(libs, session=True, module_parent=site, env=env)
    child = PrestartedChild(site, env=env)
    warm = attempt_load(libs, session=True, module_parent=site, env=env, child=child)
    assert warm.outcome is fresh.outcome is LoadOutcome.LIBRARY_FAILED
    assert warm.error == fresh.error == "libcublasLt.so.97: cannot open shared object file: No such file or directory"
    assert warm.libraries == fresh.libraries


def test_a_prestarted_child_reports_the_genuine_import_error(tmp_path) -> None:
    # the pre-import fails first; the script's own import must fail the same way, not on a half-imported module
    libs = _providers(tmp_path, [])
    site = _fake_onnxruntime(tmp_path / "site", "raise ImportError('libonnxruntime.so.1: cannot open shared object')\n")
    env = {"PATH": os.environ.get("PATH", "")}
    fresh = attempt_load(libs, session=True, module_parent=site, env=env)
    warm = attempt_load(libs, session=True, module_parent=site, env=env, child=PrestartedChild(site, env=env))
    assert warm.session_error == fresh.session_error
    assert warm.session_error == "ImportError: libonnxruntime.so.1: cannot open shared object"


def test_a_prestarted_child_for_another_onnxruntime_is_ended_and_not_used(tmp_path) -> None:
    libs = _providers(tmp_path, [])
    env = {"PATH": os.environ.get("PATH", "")}
    other = _fake_onnxruntime(tmp_path / "other", "raise ImportError('the other copy')\n")
    site = _fake_onnxruntime(tmp_path / "site", "__version__ = '1.31.1'\n")
    before = _children()
    child = PrestartedChild(other, env=env)
    result = attempt_load(libs, session=True, module_parent=site, env=env, child=child)
    assert "the other copy" not in (result.session_error or "")
    assert _children() <= before  # the unused child is gone, not left running


def test_an_unused_prestarted_child_is_ended(tmp_path) -> None:
    before = _children()
    child = PrestartedChild(None, env={"PATH": os.environ.get("PATH", "")})
    assert _children() - before
    child.cancel()
    assert _children() <= before


_SLOW_TEARDOWN = "#include <unistd.h>\n__attribute__((destructor)) static void teardown(void) { sleep(5); }\n"


@pytest.mark.parametrize("prestarted", [False, True])
def test_the_child_ends_once_it_has_reported_without_the_libraries_teardown(tmp_path, prestarted) -> None:
    # a CUDA context and ORT's statics are torn down at a normal exit (a quarter second on the H200): the doctor must
    # not wait for what happens after the child has said all it has to say
    libs = _providers(tmp_path, [], source=_SLOW_TEARDOWN)
    env = {"PATH": os.environ.get("PATH", "")}
    child = {"child": PrestartedChild(None, env=env)} if prestarted else {}
    result = attempt_load(libs, env=env, **child)
    assert result.outcome is LoadOutcome.LOADED, result.error
    assert set(libs) <= set(result.mapped)
    assert result.duration_s < 4, f"{result.duration_s:.1f} s: the parent waited for the libraries' teardown"
