"""`ortgpu bundle` writes only inside --out, copies from this machine only what the loader search found, and
never deletes its own input with --force."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tests.support.realpackages import build_release_folder, build_so, have_gcc, tar_folder

from ortgpu.bundle import BundleError, BundleRequest, create_bundle
from ortgpu.cli.main import main

pytestmark = pytest.mark.skipif(not have_gcc() or not sys.platform.startswith("linux"), reason="needs gcc on Linux")


def tree(folder: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for path in sorted(folder.rglob("*")):
        out[str(path.relative_to(folder))] = path.read_bytes() if path.is_file() and not path.is_symlink() else None
    return out


def release_needing(root: Path, needed: str, at: Path) -> Path:
    """A GPU release whose CUDA provider has a DT_NEEDED entry ``needed``; a library with that SONAME is left at
    ``at`` (where the loader would open it, a path taken from the package rather than found by a search)."""
    folder = build_release_folder(root, version="1.20.0", cuda_needs=())
    stub = build_so(at, soname=needed)
    provider = folder / "lib" / "libonnxruntime_providers_cuda.so"
    provider.unlink()
    build_so(provider, needs=[stub, folder / "lib" / "libonnxruntime_providers_shared.so"])
    return folder


def test_absolute_dt_needed_does_not_copy_a_host_file(tmp_path: Path, capsys) -> None:
    secret = tmp_path / "host" / "libsecret.so"
    package = release_needing(tmp_path / "pkg", str(secret), secret)
    code = main(["bundle", "--package", str(package), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "DT_NEEDED" in err and "libsecret.so" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_relative_dt_needed_is_not_resolved_against_the_working_folder(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "w1" / "w2" / "w3"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    needed = "../../../x.so"
    package = release_needing(tmp_path / "pkg", needed, work / needed)
    before = tree(tmp_path)
    code = main(["bundle", "--package", str(package), "--out", str(work / "out")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "DT_NEEDED" in err
    assert tree(tmp_path) == before


@pytest.fixture
def cpu_release(tmp_path: Path) -> Path:
    return build_release_folder(tmp_path / "keep" / "pkg", version="1.20.0", cuda_needs=None)


@pytest.mark.parametrize("which", ["out-is-the-package", "out-above-the-package", "out-above-the-archive"])
def test_force_never_deletes_the_package(tmp_path: Path, capsys, cpu_release: Path, which: str) -> None:
    if which == "out-is-the-package":
        package, out = cpu_release, cpu_release
    elif which == "out-above-the-package":
        package, out = cpu_release, tmp_path / "keep"
    else:
        package, out = tar_folder(cpu_release, tmp_path / "keep" / "pkg.tgz"), tmp_path / "keep"
    before = tree(tmp_path)
    code = main(["bundle", "--package", str(package), "--out", str(out), "--force"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "--package" not in err or "inside" in err or "overlap" in err
    assert tree(tmp_path) == before


def test_out_inside_the_package_is_refused(tmp_path: Path, cpu_release: Path) -> None:
    before = tree(tmp_path)
    with pytest.raises(BundleError, match="inside"):
        create_bundle(BundleRequest(out=cpu_release / "lib" / "bundle", package=cpu_release))
    assert tree(tmp_path) == before


def test_force_never_deletes_a_libs_from_folder(tmp_path: Path, cpu_release: Path) -> None:
    libs = tmp_path / "out" / "cuda"
    build_so(libs / "libcudart.so.12", soname="libcudart.so.12")
    before = tree(tmp_path)
    with pytest.raises(BundleError, match="libs"):
        create_bundle(BundleRequest(out=tmp_path / "out", package=cpu_release, library_dirs=(libs,), force=True))
    assert tree(tmp_path) == before


def test_out_that_is_a_symbolic_link_is_refused(tmp_path: Path, cpu_release: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(BundleError, match="symbolic link"):
        create_bundle(BundleRequest(out=tmp_path / "link", package=cpu_release))
    assert list(real.iterdir()) == [] and (tmp_path / "link").is_symlink()


def test_a_found_library_that_needs_a_path_does_not_bring_that_file(tmp_path: Path) -> None:
    """A library of this machine (found by the loader search) with a DT_NEEDED path: that file stays out, said."""
    package = build_release_folder(tmp_path / "pkg", version="1.20.0", cuda_needs=("libcudart.so.12",))
    host_file = tmp_path / "host" / "libpathdep.so"
    stub = build_so(host_file, soname=str(host_file))
    libs = tmp_path / "cuda"
    build_so(libs / "libcudart.so.12", soname="libcudart.so.12", needs=[stub])
    out = tmp_path / "out"
    result = create_bundle(BundleRequest(out=out, package=package, library_dirs=(libs,)))
    names = {Path(f.path).name for f in result.manifest.files}
    assert "libcudart.so.12" in names and "libpathdep.so" not in names
    assert not any(p.name == "libpathdep.so" for p in out.rglob("*"))
    assert any("libpathdep.so" in w and "not a bare file name" in w for w in result.warnings)
