"""NVML: driver and GPUs (through a fake NVML), a missing driver, and CUDA_VISIBLE_DEVICES renumbering."""

from __future__ import annotations

import ctypes

import pytest
from tests.support.fake_libs import FakeGpu, FakeNvml

from ortgpu.host.nvml import (
    NVML_LIBRARY_ENV,
    GpuInfo,
    device_memory_used_bytes,
    kernel_module_version,
    map_visible_devices,
    nvidia_pci_devices,
    query_driver,
)


def _gpu(index: int, name: str = "NVIDIA H200", uuid: str | None = None) -> GpuInfo:
    return GpuInfo(index, name, uuid or f"GPU-{index}aaa{index}-0000", 150 * 2**30, (9, 0), None)


def test_driver_and_gpus_from_nvml() -> None:
    nvml = FakeNvml([FakeGpu(), FakeGpu(name="NVIDIA A100-SXM4-80GB", cc=(8, 0), uuid="GPU-2222")], cuda=12040)
    info = query_driver(nvml, environ={})
    assert info.present and info.error is None
    assert (info.version, info.cuda_driver_version) == ("580.95.05", "12.4")
    assert [(g.index, g.name, g.compute_capability, g.sm) for g in info.gpus] == [
        (0, "NVIDIA H200", (9, 0), "sm_90"),
        (1, "NVIDIA A100-SXM4-80GB", (8, 0), "sm_80"),
    ]
    assert info.gpus[0].uuid.startswith("GPU-8a1f")
    assert info.gpus[0].pci_bus_id == "00000000:19:00.0"
    assert info.gpus[0].memory_total_bytes == 150_000_000_000
    assert nvml.shutdowns == 1  # NVML is shut down again


def test_cuda_version_encoding() -> None:
    assert query_driver(FakeNvml(cuda=13000), environ={}).cuda_driver_version == "13.0"
    assert query_driver(FakeNvml(cuda=12090), environ={}).cuda_driver_version == "12.9"


def test_missing_driver_is_a_result_not_an_error() -> None:
    info = query_driver(FakeNvml(fail_init="NVML Shared Library Not Found"), environ={})
    assert not info.present
    assert "NVML Shared Library Not Found" in info.error
    assert info.gpus == ()


def test_nvml_library_override_that_does_not_exist(tmp_path) -> None:
    missing = tmp_path / "libnvidia-ml.so.1"
    info = query_driver(environ={NVML_LIBRARY_ENV: str(missing)})
    assert not info.present
    assert str(missing) in info.error and NVML_LIBRARY_ENV in info.error
    assert info.library == str(missing)


def _nvml_loadable() -> bool:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


def test_this_machine_agrees_with_the_loader() -> None:
    info = query_driver()
    if not _nvml_loadable():
        assert not info.present and info.error
        assert device_memory_used_bytes(0) is None
    else:
        assert info.version
        if info.gpus:
            assert isinstance(device_memory_used_bytes(0), int)


def test_visible_devices_unset_maps_one_to_one() -> None:
    gpus = [_gpu(0), _gpu(1)]
    visible = map_visible_devices(gpus, None)
    assert [(d.device_id, d.gpu.index) for d in visible.devices] == [(0, 0), (1, 1)]
    assert visible.exact and visible.dropped == ()


def test_visible_devices_renumber() -> None:
    gpus = [_gpu(0), _gpu(1), _gpu(2)]
    visible = map_visible_devices(gpus, "1,0")
    assert [(d.device_id, d.gpu.index) for d in visible.devices] == [(0, 1), (1, 0)]
    by_uuid = map_visible_devices(gpus, "GPU-2aaa,0")  # a unique UUID prefix is enough
    assert [(d.device_id, d.gpu.index) for d in by_uuid.devices] == [(0, 2), (1, 0)]


@pytest.mark.parametrize(
    ("value", "kept", "dropped"),
    [
        ("", [], []),
        ("-1", [], ["-1"]),
        ("0,7,1", [0], ["7", "1"]),
        ("1,1", [1], ["1"]),
        ("GPU-ffff", [], ["GPU-ffff"]),
        ("GPU-", [], ["GPU-"]),
    ],
)
def test_visible_devices_stop_at_the_first_bad_entry(value, kept, dropped) -> None:
    visible = map_visible_devices([_gpu(0), _gpu(1)], value)
    assert [d.gpu.index for d in visible.devices] == kept
    assert list(visible.dropped) == dropped


def test_mixed_models_are_exact_only_in_pci_order() -> None:
    gpus = [_gpu(0, "NVIDIA A100"), _gpu(1, "NVIDIA H200")]
    assert not map_visible_devices(gpus, "0").exact
    assert "CUDA_DEVICE_ORDER" in map_visible_devices(gpus, None).note
    assert map_visible_devices(gpus, "0", "PCI_BUS_ID").exact


def test_mig_entries_are_not_mapped() -> None:
    visible = map_visible_devices([_gpu(0)], "MIG-3b0c0000-1111")
    assert visible.devices == () and not visible.exact and "MIG" in visible.note


def test_pci_scan_and_kernel_module(tmp_path) -> None:
    for name, vendor, klass in [
        ("0000:00:02.0", "0x8086", "0x030000"),
        ("0000:19:00.0", "0x10de", "0x030200"),
        ("0000:19:00.1", "0x10de", "0x040300"),
    ]:  # NVIDIA audio function: not a GPU
        device = tmp_path / "pci" / name
        device.mkdir(parents=True)
        (device / "vendor").write_text(vendor + "\n")
        (device / "class").write_text(klass + "\n")
    assert nvidia_pci_devices(tmp_path / "pci") == ("0000:19:00.0",)
    assert nvidia_pci_devices(tmp_path / "absent") == ()
    version = tmp_path / "version"
    version.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Tue Sep 23 2025\nGCC version: 12\n")
    assert kernel_module_version(version) == "NVRM version: NVIDIA UNIX x86_64 Kernel Module 580.95.05 Tue Sep 23 2025"
    assert kernel_module_version(tmp_path / "absent") is None
