"""Concrete fixes for missing CUDA-side libraries: which pip package or install step provides each soname."""

from __future__ import annotations

from collections.abc import Sequence

from ortgpu.loader.linux import LibraryResolution, LibStatus, soname_major
from ortgpu.versions import version_tuple

__all__ = ["component_of", "library_fix", "pip_packages_for"]

# soname stem -> (component name, pip package base); CUDA >= 13 drops the "-cuNN" suffix (cuDNN keeps it).
_COMPONENTS = {
    "libcudart.so": ("CUDA runtime", "nvidia-cuda-runtime"),
    "libcublas.so": ("cuBLAS", "nvidia-cublas"),
    "libcublasLt.so": ("cuBLAS", "nvidia-cublas"),
    "libcufft.so": ("cuFFT", "nvidia-cufft"),
    "libcurand.so": ("cuRAND", "nvidia-curand"),
    "libnvrtc.so": ("NVRTC", "nvidia-cuda-nvrtc"),
    "libnvJitLink.so": ("nvJitLink", "nvidia-nvjitlink"),
    "libcudnn.so": ("cuDNN", "nvidia-cudnn"),
    "libnvinfer.so": ("TensorRT", "tensorrt"),
    "libnvinfer_plugin.so": ("TensorRT", "tensorrt"),
    "libnvonnxparser.so": ("TensorRT", "tensorrt"),
    "libcuda.so": ("NVIDIA driver", None),
}


def component_of(soname: str) -> str:
    """Name a soname's component: "libcudnn_ops.so.9" -> "cuDNN"; unknown names give the soname stem."""
    stem, _ = soname_major(soname)
    if stem.startswith("libcudnn"):
        stem = "libcudnn.so"
    return _COMPONENTS.get(stem, (stem, None))[0]


def pip_packages_for(sonames: Sequence[str], cuda_major: int | None, cudnn_major: int | None) -> tuple[str, ...]:
    """The nvidia-* pip requirement strings that ship these sonames for a CUDA major."""
    out: list[str] = []
    for soname in sonames:
        stem, _ = soname_major(soname)
        if stem.startswith("libcudnn"):
            stem = "libcudnn.so"
        base = _COMPONENTS.get(stem, (None, None))[1]
        if base is None or cuda_major is None:
            continue
        if base == "nvidia-cudnn":
            spec = f"nvidia-cudnn-cu{cuda_major}"
            spec += f"=={cudnn_major}.*" if cudnn_major else ""
        elif base == "tensorrt":
            spec = f"tensorrt-cu{cuda_major}"
        elif cuda_major >= 13:
            spec = base
        else:
            spec = f"{base}-cu{cuda_major}"
        if spec not in out:
            out.append(spec)
    return tuple(out)


def library_fix(
    problems: Sequence[LibraryResolution],
    *,
    ort_version: str | None,
    distribution: str,
    cuda_major: int | None,
    cudnn_major: int | None,
) -> str:
    """One fix line for a set of unresolved needs of one provider library."""
    pip_only = [p for p in problems if p.status is LibStatus.PIP_ONLY and p.path is not None]
    if pip_only and len(pip_only) == len(problems):
        dirs = sorted({str(p.path.parent) for p in pip_only if p.path})
        preload = "call onnxruntime.preload_dlls() before creating the session (ORT >= 1.21), or "
        if version_tuple(ort_version) < (1, 21):
            preload = ""
        return f"{preload}export LD_LIBRARY_PATH={':'.join(dirs)}:$LD_LIBRARY_PATH"
    names = [p.soname for p in problems]
    packages = pip_packages_for(names, cuda_major, cudnn_major)
    components = sorted({component_of(n) for n in names})
    cuda = f"CUDA {cuda_major}" if cuda_major else "the CUDA version this ORT build needs"
    system_install = f"or install {', '.join(components)} for {cuda} from NVIDIA and run `sudo ldconfig`"
    if cuda_major and cuda_major >= 12 and version_tuple(ort_version) >= (1, 21) and ort_version:
        extras = "cuda,cudnn" if cudnn_major else "cuda"
        return (
            f'pip install "{distribution}[{extras}]=={ort_version}" then call onnxruntime.preload_dlls() '
            f"before creating the session; {system_install}"
        )
    if packages:
        dirs_hint = "site-packages/nvidia/*/lib"
        return (
            f"pip install {' '.join(packages)} and export LD_LIBRARY_PATH=<{dirs_hint}>:$LD_LIBRARY_PATH; "
            f"{system_install}"
        )
    return system_install.removeprefix("or ")
