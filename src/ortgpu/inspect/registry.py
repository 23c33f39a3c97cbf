"""ORT's own kernel registry, read in a child process, and matched against a model's nodes.

``onnxruntime.capi._pybind_state.get_all_opkernel_def()`` instantiates every EP compiled into the build to read
its kernel registry. In a GPU build whose CUDA (or TensorRT) provider library cannot load it crashes the process
(seen with onnxruntime-gpu 1.31.1 and no CUDA libraries: SIGSEGV), so it only ever runs in a child.
Run as ``python -m ortgpu.inspect.registry PROVIDER`` with a JSON list of ``[domain, op_type]`` on stdin; prints
the matching kernel definitions and operator schemas as JSON.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ortgpu.runtime.guard import import_onnxruntime

__all__ = ["KernelDef", "OpSchema", "Registry", "RegistryError", "main", "match_node", "read_registry"]

_TIMEOUT_S = 120.0
_INT_MAX = 2**31 - 1


class RegistryError(Exception):
    """The child could not read the registry; the message says why in one line."""


@dataclass(frozen=True)
class KernelDef:
    domain: str  # "" for the default ONNX domain
    op_type: str
    since: int
    until: int  # inclusive; 2**31-1 for "and later"
    types: Mapping[str, tuple[str, ...]]  # type constraint -> allowed types, e.g. "T" -> ("tensor(float)",)


@dataclass(frozen=True)
class OpSchema:
    domain: str
    op_type: str
    since: int
    inputs: tuple[str, ...]  # the type string of each formal input ("T", or a concrete type)
    outputs: tuple[str, ...]
    variadic_input: bool  # the last formal input repeats
    variadic_output: bool


@dataclass(frozen=True)
class Registry:
    """What ORT registers for one provider, for the ops asked about."""

    provider: str
    ort_version: str
    kernels: tuple[KernelDef, ...]
    schemas: tuple[OpSchema, ...]

    def schema_for(self, domain: str, op_type: str, opset: int) -> OpSchema | None:
        """The schema version a node of ``opset`` resolves to: the newest one not after the opset."""
        found = [s for s in self.schemas if s.domain == domain and s.op_type == op_type and s.since <= opset]
        return max(found, key=lambda s: s.since) if found else None


def _norm(domain: str) -> str:
    return "" if domain in ("", "ai.onnx") else domain


def read_registry(provider: str, ops: Iterable[tuple[str, str]], timeout_s: float = _TIMEOUT_S) -> Registry:
    """Ask ORT, in a child process, for ``provider``'s kernels and the schemas of ``ops``; RegistryError if not."""
    payload = json.dumps(sorted({(_norm(d), op) for d, op in ops}))
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "ortgpu.inspect.registry", provider],
            input=payload,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise RegistryError(f"reading ORT's kernel registry took longer than {timeout_s:.0f} s") from None
    except OSError as exc:
        raise RegistryError(f"could not start a child Python to read ORT's kernel registry: {exc}") from None
    if proc.returncode != 0:
        raise RegistryError(_failure(proc.returncode, proc.stderr))
    try:
        doc = json.loads(proc.stdout)
        kernels = tuple(
            KernelDef(d, op, int(a), int(b), {k: tuple(v) for k, v in types.items()})
            for d, op, a, b, types in doc["kernels"]
        )
        schemas = tuple(
            OpSchema(d, op, int(since), tuple(ins), tuple(outs), bool(vi), bool(vo))
            for d, op, since, ins, outs, vi, vo in doc["schemas"]
        )
        total, version = int(doc["provider_kernels"]), str(doc["ort_version"])
    except (ValueError, KeyError, TypeError) as exc:
        raise RegistryError(f"the registry child answered something unreadable ({exc})") from None
    if total == 0:  # the EP is not compiled into this build, or registered nothing: no answer, not "no kernel"
        raise RegistryError(f"onnxruntime {version} registers no kernel at all for {provider}")
    return Registry(provider, version, kernels, schemas)


def _failure(returncode: int, stderr: str) -> str:
    from ortgpu.session.providers import cause_from_log

    cause = cause_from_log(stderr)
    if returncode < 0:
        try:
            how = f"crashed ({signal.Signals(-returncode).name})"
        except ValueError:
            how = f"crashed (signal {-returncode})"
    else:
        last = next((ln.strip() for ln in reversed(stderr.splitlines()) if ln.strip()), "")
        how = f"failed (exit {returncode}{': ' + last[-300:] if last else ''})"
    return f"{how}{'; ' + cause if cause else ''}"


# --------------------------------------------------------------------------------------------- matching


def _allowed(kernel: KernelDef, type_str: str, actual: str | None) -> bool:
    if actual is None or type_str not in kernel.types:
        return True  # unknown type, or a constraint the kernel does not narrow
    return actual in kernel.types[type_str]


def _formal(formals: tuple[str, ...], variadic: bool, index: int) -> str | None:
    if index < len(formals):
        return formals[index]
    return formals[-1] if variadic and formals else None


def match_node(
    registry: Registry,
    domain: str,
    op_type: str,
    opset: int,
    input_types: tuple[str | None, ...],
    output_types: tuple[str | None, ...],
) -> tuple[bool, str]:
    """Whether ``registry`` has a kernel for this node, the way ORT matches one: op and domain, the node's schema
    version inside the kernel's version range, every known input/output type allowed by the kernel's type
    constraints. (found, a one-line detail)."""
    domain = _norm(domain)
    candidates = [k for k in registry.kernels if k.domain == domain and k.op_type == op_type]
    short = registry.provider.removesuffix("ExecutionProvider")
    if not candidates:
        return False, f"{short} registers no kernel for {domain or 'ai.onnx'}::{op_type}"
    schema = registry.schema_for(domain, op_type, opset)
    if schema is None:
        return True, f"{short} has {op_type} kernels; no schema to check versions and types against"
    versioned = [k for k in candidates if k.since <= schema.since <= k.until]
    if not versioned:
        ranges = ", ".join(f"{k.since}-{'' if k.until >= _INT_MAX else k.until}" for k in candidates[:4])
        return False, f"{short} {op_type} kernels cover opset versions {ranges}; this node is version {schema.since}"
    for kernel in versioned:
        ins = all(
            _allowed(kernel, t, actual)
            for i, actual in enumerate(input_types)
            if (t := _formal(schema.inputs, schema.variadic_input, i)) is not None
        )
        outs = all(
            _allowed(kernel, t, actual)
            for i, actual in enumerate(output_types)
            if (t := _formal(schema.outputs, schema.variadic_output, i)) is not None
        )
        if ins and outs:
            return True, f"{short} kernel {op_type} (opset {kernel.since}+)"
    known = ", ".join(t for t in dict.fromkeys(input_types) if t) or "unknown"
    return False, f"{short} has {op_type} (version {schema.since}) but not for these types ({known})"


# --------------------------------------------------------------------------------------------- child


def _dump(provider: str, ops: set[tuple[str, str]]) -> dict[str, Any]:
    ort = import_onnxruntime("reading ORT's kernel registry")
    import onnxruntime.capi._pybind_state as C

    variadic = C.schemadef.OpSchema.FormalParameterOption.Variadic
    schemas = []
    for schema in C.get_all_operator_schema():
        if (schema.domain, schema.name) not in ops:
            continue
        ins, outs = list(schema.inputs), list(schema.outputs)
        schemas.append(
            [
                schema.domain,
                schema.name,
                int(schema.since_version),
                [p.typeStr for p in ins],
                [p.typeStr for p in outs],
                bool(ins) and ins[-1].option == variadic,
                bool(outs) and outs[-1].option == variadic,
            ]
        )
    registered = [k for k in C.get_all_opkernel_def() if k.provider == provider]
    kernels = [
        [k.domain, k.op_name, int(k.version_range[0]), int(k.version_range[1]), dict(k.type_constraints)]
        for k in registered
        if (k.domain, k.op_name) in ops
    ]
    return {
        "ort_version": ort.__version__,
        "provider_kernels": len(registered),
        "kernels": kernels,
        "schemas": schemas,
    }


def main(argv: list[str] | None = None) -> int:
    """The child: argv[0] is the provider, stdin the ops; stdout the answer as JSON."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m ortgpu.inspect.registry PROVIDER < ops.json\n")
        return 2
    ops = {(str(d), str(op)) for d, op in json.loads(sys.stdin.read() or "[]")}
    sys.stdout.write(json.dumps(_dump(args[0], ops)))
    return 0


if __name__ == "__main__":  # pragma: no cover - run as a child process
    sys.exit(main())
