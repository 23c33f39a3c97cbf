"""``check --package`` / ``bench --package`` refuse a library that is not ONNX Runtime before loading it
(loading runs the library's constructors): the OrtGetApiBase export is read statically first (issue 17, item 10)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fake_libs import build_lib, needs_gcc

from ortgpu.capi.library_locator import exports_symbol

CONSTRUCTOR = r"""
#include <stdio.h>
__attribute__((constructor)) static void ran(void) {
    FILE* marker = fopen("%s", "w");
    if (marker) { fputs("the constructor ran\n", marker); fclose(marker); }
}
int not_onnxruntime(void) { return 0; }
"""

FAKE_ORT = r"""
static const void* base[2] = { 0, 0 };
const void* OrtGetApiBase(void) { return base; }
"""


@pytest.fixture
def impostor(tmp_path: Path) -> tuple[Path, Path]:
    """A libonnxruntime.so.1.20.0 whose constructor writes a marker file, and which is not ONNX Runtime."""
    marker = tmp_path / "constructor-ran.txt"
    library = build_lib(
        tmp_path / "pkg" / "lib" / "libonnxruntime.so.1.20.0",
        soname="libonnxruntime.so.1.20.0",
        source=CONSTRUCTOR % marker,
    )
    return library, marker


@needs_gcc
@pytest.mark.parametrize("command", ["check", "bench"])
@pytest.mark.parametrize("given", ["file", "folder"])
def test_an_impostor_library_is_refused_without_running_it(
    cli: Callable[..., object], tiny: Path, impostor: tuple[Path, Path], command: str, given: str
) -> None:
    library, marker = impostor
    package = library if given == "file" else library.parent.parent
    extra = ["--iterations", "3", "--warmup", "1"] if command == "bench" else []
    line = cli(command, str(tiny), "--ep", "cpu", "--package", str(package), *extra).assert_one_line_error(2)
    assert "does not export OrtGetApiBase" in line and "not loaded" in line
    assert not marker.exists(), "the library's constructor ran: it was loaded before the check"


@needs_gcc
def test_the_static_check_reads_exports(tmp_path: Path) -> None:
    real = build_lib(tmp_path / "libonnxruntime.so.1.20.0", source=FAKE_ORT)
    other = build_lib(tmp_path / "libother.so", source="int OrtGetApiBase_not(void) { return 0; }\n")
    importer = build_lib(  # uses OrtGetApiBase (undefined here) without defining it
        tmp_path / "libuser.so",
        source="const void* OrtGetApiBase(void);\nconst void* f(void) { return OrtGetApiBase(); }\n",
    )
    assert exports_symbol(real, "OrtGetApiBase")
    assert not exports_symbol(other, "OrtGetApiBase")
    assert not exports_symbol(importer, "OrtGetApiBase")


def test_the_installed_wheels_library_passes_the_static_check() -> None:
    import onnxruntime

    libraries = sorted((Path(onnxruntime.__file__).parent / "capi").glob("libonnxruntime.so*"))
    if not libraries:
        pytest.skip("this onnxruntime wheel ships no libonnxruntime.so")
    assert exports_symbol(libraries[0], "OrtGetApiBase")
