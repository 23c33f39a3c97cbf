"""The one root-cause ranking shared by `doctor` and `doctor --package`."""

from __future__ import annotations

from ortgpu.doctor.verdict import ROOT_CAUSE_ORDER, Check, Status, cause_rank, root_cause
from ortgpu.package.analysis import Component


def _failed(check_id: str, **details: object) -> Check:
    return Check(check_id, check_id, Status.FAIL, "evidence", cause="cause", fix="fix", details=dict(details))


def test_every_key_is_ranked_once() -> None:
    assert len(set(ROOT_CAUSE_ORDER)) == len(ROOT_CAUSE_ORDER)


def test_no_driver_beats_a_missing_provider_library_and_a_shadowing_cpu_build() -> None:
    checks = [_failed("ort.distributions"), _failed("ort.provider.cuda:libcudnn.so.9"), _failed("driver.present")]
    assert root_cause(checks).id == "driver.present"


def test_a_package_need_is_ranked_by_its_component_and_the_driver_comes_first() -> None:
    cudnn = _failed("package.need.libcudnn.so.9", component=Component.CUDNN.value)
    cublas = _failed("package.need.libcublas.so.12", component=Component.CUBLAS.value)
    assert root_cause([cudnn, cublas]) is cublas
    assert root_cause([cudnn, cublas, _failed("host.driver")]).id == "host.driver"


def test_unranked_failures_come_last_in_the_order_they_ran_and_passing_checks_never_count() -> None:
    first, second = _failed("something.new"), _failed("another.new")
    assert cause_rank(first) == len(ROOT_CAUSE_ORDER)
    assert root_cause([first, second]) is first
    assert root_cause([Check("driver.present", "Driver", Status.OK, "present")]) is None
