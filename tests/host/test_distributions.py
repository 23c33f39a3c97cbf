"""Which distributions provide `onnxruntime`, and which one `import onnxruntime` really loads."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from tests.support.fake_libs import install_dist, package_info

from ortgpu.host.distributions import DistributionFlavour, find_distributions, flavour_of, read_package_info


def _ort_files(name: str, version: str, cuda: str | None) -> dict[str, bytes]:
    return {
        "onnxruntime/__init__.py": f"__version__ = '{version}'\n".encode(),
        "onnxruntime/capi/build_and_package_info.py": package_info(name, version, cuda),
    }


def test_single_gpu_distribution(tmp_path) -> None:
    install_dist(tmp_path, "onnxruntime-gpu", "1.31.1", _ort_files("onnxruntime-gpu", "1.31.1", "13.0"))
    report = find_distributions([str(tmp_path)])
    assert [(d.name, d.version, d.flavour) for d in report.distributions] == [
        ("onnxruntime-gpu", "1.31.1", DistributionFlavour.CUDA)
    ]
    assert report.module_dir == tmp_path / "onnxruntime"
    assert report.loaded == "onnxruntime-gpu"
    assert report.package_info.cuda_version == "13.0"
    assert not report.conflict
    assert report.distributions[0].installer == "pip"


@pytest.mark.parametrize("last", ["onnxruntime", "onnxruntime-gpu"])
def test_two_distributions_in_one_folder_the_last_installed_wins(tmp_path, last) -> None:
    # pip installs both into one site-packages: the second overwrites the shared files
    first = "onnxruntime-gpu" if last == "onnxruntime" else "onnxruntime"
    for name in (first, last):
        cuda = "13.0" if name == "onnxruntime-gpu" else None
        install_dist(tmp_path, name, "1.31.1", _ort_files(name, "1.31.1", cuda))
    report = find_distributions([str(tmp_path)])
    assert report.conflict
    assert report.loaded == last
    assert [d.name for d in report.shadowed] == [first]
    owners = {d.name: d.owns_loaded_files for d in report.distributions}
    assert owners == {last: True, first: False}


def test_cpu_build_in_an_earlier_path_entry_shadows_the_gpu_one(tmp_path) -> None:
    user, venv = tmp_path / "user-site", tmp_path / "venv-site"
    install_dist(user, "onnxruntime", "1.32.0", _ort_files("onnxruntime", "1.32.0", None))
    install_dist(venv, "onnxruntime-gpu", "1.31.1", _ort_files("onnxruntime-gpu", "1.31.1", "13.0"))
    report = find_distributions([str(user), str(venv)])
    assert report.module_dir == user / "onnxruntime"
    assert report.loaded == "onnxruntime"
    assert report.loaded_distribution.flavour is DistributionFlavour.CPU
    assert [(d.name, d.site_dir) for d in report.shadowed] == [("onnxruntime-gpu", venv)]


def test_nothing_installed(tmp_path) -> None:
    install_dist(tmp_path, "onnx", "1.17.0", {"onnx/__init__.py": b""}, top_level="onnx")
    report = find_distributions([str(tmp_path)])
    assert report.distributions == ()
    assert report.module_dir is None
    assert report.loaded is None


def test_files_without_dist_info_are_found_by_the_import_system(tmp_path) -> None:
    # e.g. PYTHONPATH pointing at an unpacked wheel without metadata
    (tmp_path / "onnxruntime" / "capi").mkdir(parents=True)
    (tmp_path / "onnxruntime" / "__init__.py").write_text("")
    (tmp_path / "onnxruntime" / "capi" / "build_and_package_info.py").write_bytes(
        package_info("onnxruntime-gpu", "1.24.1", "12.8")
    )
    report = find_distributions([str(tmp_path)])
    assert report.distributions == ()
    assert report.module_dir == tmp_path / "onnxruntime"
    assert report.package_info.package_name == "onnxruntime-gpu"


def test_read_package_info_ignores_code(tmp_path) -> None:
    capi = tmp_path / "capi"
    capi.mkdir()
    (capi / "build_and_package_info.py").write_text("import os\npackage_name = 'onnxruntime-gpu'\ncuda_version = ''\n")
    info = read_package_info(tmp_path)
    assert (info.package_name, info.version, info.cuda_version) == ("onnxruntime-gpu", None, None)
    assert read_package_info(tmp_path / "missing") is None


@pytest.mark.parametrize(
    ("name", "flavour"),
    [
        ("onnxruntime", DistributionFlavour.CPU),
        ("onnxruntime-gpu", DistributionFlavour.CUDA),
        ("onnxruntime_gpu", DistributionFlavour.CUDA),
        ("ort-nightly-gpu", DistributionFlavour.CUDA),
        ("ort-nightly", DistributionFlavour.CPU),
        ("onnxruntime-training", DistributionFlavour.CUDA),
        ("onnxruntime-training-cpu", DistributionFlavour.CPU),
        ("onnxruntime-directml", DistributionFlavour.DIRECTML),
        ("ort-nightly-directml", DistributionFlavour.DIRECTML),
        ("onnxruntime-openvino", DistributionFlavour.OPENVINO),
        ("onnxruntime-rocm", DistributionFlavour.ROCM),
        ("onnxruntime-migraphx", DistributionFlavour.ROCM),
        ("onnxruntime-qnn", DistributionFlavour.QNN),
        ("onnxruntime-extensions-something", DistributionFlavour.OTHER),
    ],
)
def test_flavour_of(name, flavour) -> None:
    assert flavour_of(name) is flavour


def test_every_flavour_is_reachable() -> None:
    names = [
        "onnxruntime",
        "onnxruntime-gpu",
        "onnxruntime-directml",
        "onnxruntime-openvino",
        "onnxruntime-rocm",
        "onnxruntime-qnn",
        "onnxruntime-foo",
    ]
    assert {flavour_of(n) for n in names} == set(DistributionFlavour)
    assert [f for f in DistributionFlavour if f.has_cuda] == [DistributionFlavour.CUDA]


def test_this_environment_matches_the_import_system() -> None:
    report = find_distributions()
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None:
        assert report.module_dir is None
        return
    assert report.module_dir == Path(spec.origin).parent
    assert report.loaded in {d.name for d in report.distributions}
    assert "onnxruntime" not in sys.modules or Path(sys.modules["onnxruntime"].__file__).parent == report.module_dir
