"""--devices values and the GPU each worker is pinned to (CUDA_VISIBLE_DEVICES renumbering through a fake NVML)."""

from __future__ import annotations

import pytest

from ortgpu.env.nvml import DriverInfo, GpuInfo
from ortgpu.errors import ExitCode
from ortgpu.scale.devices import (
    DeviceKind,
    DevicesError,
    DevicesUnavailableError,
    parse_devices,
    plan_slots,
)


def _driver(*names: str) -> DriverInfo:
    gpus = tuple(
        GpuInfo(i, name, f"GPU-{i}{i}{i}{i}-aaaa", 140 << 30, (9, 0), f"00000000:{0x19 + i:02X}:00.0")
        for i, name in enumerate(names)
    )
    return DriverInfo(True, "580.95.05", "13.0", gpus, None)


TWO = _driver("NVIDIA H200", "NVIDIA H200")


def test_parse_values() -> None:
    assert parse_devices("0,1").ids == (0, 1)
    assert parse_devices(" 3 ").ids == (3,)
    assert parse_devices("all").all_gpus
    assert parse_devices("cpu:4").cpu_workers == 4 and parse_devices("cpu:4").kind is DeviceKind.CPU
    assert parse_devices("cpu").cpu_workers == 1
    assert parse_devices("cpu:2").text == "cpu:2" and parse_devices("1,0").text == "1,0"


@pytest.mark.parametrize("text", ["", "a", "0,,1", "-1", "cpu:0", "cpu:x", "cpu:9999", "0,0", "gpu0"])
def test_bad_values_are_exit_2(text: str) -> None:
    with pytest.raises(DevicesError) as caught:
        parse_devices(text)
    assert caught.value.exit_code == ExitCode.BAD_INPUT and caught.value.hint


def test_each_worker_pinned_to_the_uuid_of_the_gpu_named() -> None:
    slots = plan_slots(parse_devices("0,1"), gpu_ep=True, driver=TWO, environ={})
    assert [(s.label, s.device_id, s.cuda_visible_devices) for s in slots] == [
        ("gpu0", 0, "GPU-0000-aaaa"),
        ("gpu1", 0, "GPU-1111-aaaa"),
    ]
    assert slots[1].gpu.pci_bus_id == "00000000:1A:00.0"
    assert slots[0].environment() == {"CUDA_VISIBLE_DEVICES": "GPU-0000-aaaa"}


def test_ids_count_in_this_process_cuda_visible_devices() -> None:
    # CUDA_VISIBLE_DEVICES=1,0: device 0 of this process is physical GPU 1
    slots = plan_slots(parse_devices("0"), gpu_ep=True, driver=TWO, environ={"CUDA_VISIBLE_DEVICES": "1,0"})
    assert slots[0].gpu.index == 1 and slots[0].cuda_visible_devices == "GPU-1111-aaaa"
    every = plan_slots(parse_devices("all"), gpu_ep=True, driver=TWO, environ={"CUDA_VISIBLE_DEVICES": "1"})
    assert [s.gpu.index for s in every] == [1]


def test_a_gpu_not_here_is_exit_3_naming_the_visible_ones() -> None:
    with pytest.raises(DevicesUnavailableError) as caught:
        plan_slots(parse_devices("0,1"), gpu_ep=True, driver=TWO, environ={"CUDA_VISIBLE_DEVICES": "1"})
    assert caught.value.exit_code == ExitCode.ENVIRONMENT
    assert "no CUDA device 1" in caught.value.message and "GPU-1111-aaaa" in caught.value.message


def test_no_driver_is_exit_3() -> None:
    gone = DriverInfo(False, None, None, (), "NVML Shared Library Not Found")
    with pytest.raises(DevicesUnavailableError, match="NVML Shared Library Not Found"):
        plan_slots(parse_devices("0"), gpu_ep=True, driver=gone, environ={})


def test_devices_must_fit_the_ep() -> None:
    with pytest.raises(DevicesError) as caught:
        plan_slots(parse_devices("0,1"), gpu_ep=False, driver=TWO, environ={})
    assert "names GPUs" in caught.value.message and "--devices cpu:2" in caught.value.one_line()
    with pytest.raises(DevicesError, match="GPU execution provider"):
        plan_slots(parse_devices("cpu:2"), gpu_ep=True, driver=TWO, environ={})
    cpu = plan_slots(parse_devices("cpu:3"), gpu_ep=False)
    assert [(s.label, s.cuda_visible_devices, s.environment()) for s in cpu] == [
        ("cpu0", None, {}),
        ("cpu1", None, {}),
        ("cpu2", None, {}),
    ]
