"""Status codes of CUDA libraries by number and by message: cuBLAS, cuDNN 8 and 9, and the CUDA runtime.

The enums are public (cublas_api.h `cublasStatus_t`, cudnn_graph.h / cudnn.h `cudnnStatus_t`, driver_types.h
`cudaError_t`). A message that gives only a number ("CUBLAS failure 14", "CUDNN failure 4", "CUDA failure 35") is
named here, so that the entries that claim a status by name also claim its number.
"""

from __future__ import annotations

__all__ = ["CUBLAS", "CUDA_MESSAGES", "CUDA_RUNTIME", "CUDNN", "cuda_name", "cudnn_name"]

# cublasStatus_t (cublas_api.h)
CUBLAS: dict[int, str] = {
    0: "SUCCESS",
    1: "NOT_INITIALIZED",
    3: "ALLOC_FAILED",
    7: "INVALID_VALUE",
    8: "ARCH_MISMATCH",
    11: "MAPPING_ERROR",
    13: "EXECUTION_FAILED",
    14: "INTERNAL_ERROR",
    15: "NOT_SUPPORTED",
    16: "LICENSE_ERROR",
}

# cudnnStatus_t: cuDNN 8 numbers 0-14 (cudnn_ops_infer.h / cudnn.h), cuDNN 9 hierarchical numbers from cudnn_graph.h
# (1xxx initialisation/version, 2xxx bad parameter, 3xxx not supported, 4xxx internal, 5xxx execution; there is no 1000)
CUDNN: dict[int, str] = {
    0: "SUCCESS",
    1: "NOT_INITIALIZED",
    2: "ALLOC_FAILED",
    3: "BAD_PARAM",
    4: "INTERNAL_ERROR",
    5: "INVALID_VALUE",
    6: "ARCH_MISMATCH",
    7: "MAPPING_ERROR",
    8: "EXECUTION_FAILED",
    9: "NOT_SUPPORTED",
    10: "LICENSE_ERROR",
    11: "RUNTIME_PREREQUISITE_MISSING",
    12: "RUNTIME_IN_PROGRESS",
    13: "RUNTIME_FP_OVERFLOW",
    14: "VERSION_MISMATCH",
    1001: "NOT_INITIALIZED",
    1002: "SUBLIBRARY_VERSION_MISMATCH",
    1003: "SERIALIZATION_VERSION_MISMATCH",
    1004: "DEPRECATED",
    1005: "LICENSE_ERROR",
    1006: "RUNTIME_IN_PROGRESS",
    1007: "RUNTIME_FP_OVERFLOW",
    1008: "SUBLIBRARY_LOADING_FAILED",
    2000: "BAD_PARAM",
    2001: "INVALID_VALUE",
    2002: "BAD_PARAM_NULL_POINTER",
    2003: "BAD_PARAM_MISALIGNED_POINTER",
    2004: "BAD_PARAM_NOT_FINALIZED",
    2005: "BAD_PARAM_OUT_OF_BOUND",
    2006: "BAD_PARAM_SIZE_INSUFFICIENT",
    2007: "BAD_PARAM_STREAM_MISMATCH",
    2008: "BAD_PARAM_SHAPE_MISMATCH",
    2009: "BAD_PARAM_DUPLICATED_ENTRIES",
    2010: "BAD_PARAM_ATTRIBUTE_TYPE",
    2011: "BAD_PARAM_CUDA_GRAPH_MISMATCH",
    2012: "BAD_PARAM_DESCRIPTOR_TYPE",
    3000: "NOT_SUPPORTED",
    3001: "NOT_SUPPORTED_GRAPH_PATTERN",
    3002: "NOT_SUPPORTED_SHAPE",
    3003: "NOT_SUPPORTED_DATA_TYPE",
    3004: "NOT_SUPPORTED_LAYOUT",
    3005: "NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER",
    3006: "NOT_SUPPORTED_INCOMPATIBLE_CUDART",
    3007: "NOT_SUPPORTED_ARCH_MISMATCH",
    3008: "NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING",
    3009: "NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE",
    3010: "NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT",
    3011: "NOT_SUPPORTED_PADDING",
    3012: "NOT_SUPPORTED_BAD_LAUNCH_PARAM",
    3013: "NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API",
    3014: "NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE",
    4000: "INTERNAL_ERROR",
    4001: "INTERNAL_ERROR_COMPILATION_FAILED",
    4002: "INTERNAL_ERROR_UNEXPECTED_VALUE",
    4003: "INTERNAL_ERROR_HOST_ALLOCATION_FAILED",
    4004: "INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED",
    4005: "INTERNAL_ERROR_BAD_LAUNCH_PARAM",
    4006: "INTERNAL_ERROR_TEXTURE_CREATION_FAILED",
    5000: "EXECUTION_FAILED",
    5001: "EXECUTION_FAILED_CUDA_DRIVER",
    5002: "EXECUTION_FAILED_CUBLAS",
    5003: "EXECUTION_FAILED_CUDART",
    5004: "EXECUTION_FAILED_CURAND",
}

# cudaError_t (driver_types.h, CUDA >= 10.1 numbering), without the "cudaError" prefix
CUDA_RUNTIME: dict[int, str] = {
    1: "InvalidValue",
    2: "MemoryAllocation",
    3: "InitializationError",
    4: "CudartUnloading",
    9: "InvalidConfiguration",
    34: "StubLibrary",
    35: "InsufficientDriver",
    36: "CallRequiresNewerDriver",
    46: "DevicesUnavailable",
    98: "InvalidDeviceFunction",
    100: "NoDevice",
    101: "InvalidDevice",
    200: "InvalidKernelImage",
    209: "NoKernelImageForDevice",
    218: "InvalidPtx",
    221: "JitCompilerNotFound",
    222: "UnsupportedPtxVersion",
    700: "IllegalAddress",
    701: "LaunchOutOfResources",
    702: "LaunchTimeout",
    710: "Assert",
    714: "HardwareStackError",
    715: "IllegalInstruction",
    716: "MisalignedAddress",
    717: "InvalidAddressSpace",
    718: "InvalidPc",
    719: "LaunchFailure",
    720: "CooperativeLaunchTooLarge",
    801: "NotSupported",
    802: "SystemNotReady",
    803: "SystemDriverMismatch",
    804: "CompatNotSupportedOnDevice",
    999: "Unknown",
}

# cudaGetErrorString texts (lower-case) -> name; the text outranks the number, which CUDA renumbered in 10.1
CUDA_MESSAGES: dict[str, str] = {
    "invalid argument": "InvalidValue",
    "out of memory": "MemoryAllocation",
    "initialization error": "InitializationError",
    "invalid configuration argument": "InvalidConfiguration",
    "cuda driver version is insufficient for cuda runtime version": "InsufficientDriver",
    "all cuda-capable devices are busy or unavailable": "DevicesUnavailable",
    "cuda-capable device(s) is/are busy or unavailable": "DevicesUnavailable",
    "invalid device function": "InvalidDeviceFunction",
    "no cuda-capable device is detected": "NoDevice",
    "invalid device ordinal": "InvalidDevice",
    "device kernel image is invalid": "InvalidKernelImage",
    "no kernel image is available for execution on the device": "NoKernelImageForDevice",
    "a ptx jit compilation failed": "InvalidPtx",
    "the provided ptx was compiled with an unsupported toolchain": "UnsupportedPtxVersion",
    "an illegal memory access was encountered": "IllegalAddress",
    "too many resources requested for launch": "LaunchOutOfResources",
    "the launch timed out and was terminated": "LaunchTimeout",
    "unspecified launch failure": "LaunchFailure",
    "device-side assert triggered": "Assert",
    "an illegal instruction was encountered": "IllegalInstruction",
    "misaligned address": "MisalignedAddress",
    "hardware stack error": "HardwareStackError",
    "operation not supported": "NotSupported",
    "system not yet initialized": "SystemNotReady",
    "system has unsupported display driver / cuda driver combination": "SystemDriverMismatch",
    "forward compatibility was attempted on non supported hw": "CompatNotSupportedOnDevice",
    "unknown error": "Unknown",
}


def cuda_name(code: int | None, message: str | None) -> str | None:
    """The cudaError_t name (without "cudaError") for a message text or, failing that, a number."""
    if message:
        low = message.strip().lower()
        for text, name in CUDA_MESSAGES.items():
            if low.startswith(text):
                return name
    return CUDA_RUNTIME.get(code) if code is not None else None


def cudnn_name(code: int) -> str | None:
    """The cudnnStatus_t name (without "CUDNN_STATUS_") for a cuDNN 8 or cuDNN 9 number."""
    return CUDNN.get(code)
