"""The README written into a bundle: what it holds, what the target must provide, environment lines, CMake."""

from __future__ import annotations

from pathlib import Path

from ortgpu.bundle.model import (
    BundleError,
    BundleManifest,
    FileKind,
)
from ortgpu.ep import ExecutionProvider
from ortgpu.results import envelope

# ---------------------------------------------------------------------------------------------------------------
# README-bundle.md and manifest.json


def write_docs(root: Path, manifest: BundleManifest, folder_name: str) -> None:
    import json

    (root / "manifest.json").write_text(json.dumps(envelope("bundle-manifest", manifest), indent=2) + "\n", "utf-8")
    (root / "README-bundle.md").write_text(readme_text(manifest, folder_name), encoding="utf-8")


def readme_text(manifest: BundleManifest, folder_name: str = "ort-bundle") -> str:
    """The README written into the bundle: contents, system needs, environment lines, CMake snippet."""
    core = next((f for f in manifest.files if f.kind is FileKind.ORT_CORE and f.link_to is None), None)
    lines = [
        f"# ONNX Runtime {manifest.ort_version or ''} bundle ({manifest.target.value})",
        "",
        f"Made by `ortgpu bundle` from `{manifest.source}`; providers: "
        f"{', '.join(manifest.providers) or 'none (CPU EP only)'}. "
        f"{'Complete' if manifest.complete else 'INCOMPLETE: see Missing below'}. "
        "`manifest.json` lists every file with its size, sha256 and why it is here.",
        "",
        "## Files",
        "",
        "| file | size | why |",
        "|---|---|---|",
    ]
    for f in manifest.files:
        if f.kind in (FileKind.HEADER,):
            continue
        size = f"-> {f.link_to}" if f.link_to else _human(f.size)
        lines.append(f"| `{f.path}` | {size} | {f.why} |")
    headers = [f for f in manifest.files if f.kind is FileKind.HEADER]
    if headers:
        lines.append(f"| `include/` ({len(headers)} files) | {_human(sum(f.size for f in headers))} | C/C++ headers |")
    lines += ["", "## The target system must provide", ""]
    for req in manifest.system_requirements:
        at_least = f" >= {req.minimum}" if req.minimum else ""
        lines.append(f"- {req.what}{at_least}: {req.why}")
    if manifest.missing:
        lines += ["", "## Missing (not found on the machine that made the bundle)", ""]
        for m in manifest.missing:
            need = "required" if m.required else "optional"
            lines.append(f"- `{m.name}` ({m.component}, {need}, for {m.needed_by}): {m.get_it}")
    lines += ["", "## Environment", "", manifest.loader_note, ""]
    if manifest.target.is_windows:
        lines += ["```bat", "set PATH=%BUNDLE%\\lib;%PATH%", "```", ""]
    else:
        lines += ["```sh", 'export LD_LIBRARY_PATH="$BUNDLE/lib:$LD_LIBRARY_PATH"', "```", ""]
    lines += ["## CMake", "", "```cmake", f'set(ORT_BUNDLE "${{CMAKE_CURRENT_LIST_DIR}}/{folder_name}")']
    if manifest.target.is_windows:
        lines += [
            "add_library(onnxruntime SHARED IMPORTED)",
            "set_target_properties(onnxruntime PROPERTIES",
            '  IMPORTED_LOCATION "${ORT_BUNDLE}/lib/onnxruntime.dll"',
            '  IMPORTED_IMPLIB "${ORT_BUNDLE}/lib/onnxruntime.lib"',
            '  INTERFACE_INCLUDE_DIRECTORIES "${ORT_BUNDLE}/include")',
            "target_link_libraries(your_app PRIVATE onnxruntime)",
            "# the DLLs next to the executable (the Windows loader looks there first)",
            "add_custom_command(TARGET your_app POST_BUILD COMMAND ${CMAKE_COMMAND} -E copy_directory",
            '  "${ORT_BUNDLE}/lib" "$<TARGET_FILE_DIR:your_app>")',
        ]
    else:
        location = f"${{ORT_BUNDLE}}/lib/{core.path.split('/')[-1]}" if core else "${ORT_BUNDLE}/lib/libonnxruntime.so"
        lines += [
            "add_library(onnxruntime SHARED IMPORTED)",
            "set_target_properties(onnxruntime PROPERTIES",
            f'  IMPORTED_LOCATION "{location}"',
            '  IMPORTED_SONAME "libonnxruntime.so.1"',
            '  INTERFACE_INCLUDE_DIRECTORIES "${ORT_BUNDLE}/include")',
            "target_link_libraries(your_app PRIVATE onnxruntime)",
            "# Without LD_LIBRARY_PATH: an executable DT_RPATH (not RUNPATH) also serves the libraries ORT dlopens",
            'set_target_properties(your_app PROPERTIES BUILD_RPATH "${ORT_BUNDLE}/lib" INSTALL_RPATH "$ORIGIN/lib")',
            'target_link_options(your_app PRIVATE "LINKER:--disable-new-dtags")',
        ]
    lines += ["```", ""]
    if not any(f.kind is FileKind.HEADER for f in manifest.files):
        lines += [
            "The package had no `include/` folder (a wheel): take the headers from the C/C++ release archive of "
            "the same version.",
            "",
        ]
    lines += ["Check it on the target machine with `ortgpu doctor --package <this folder>`.", ""]
    return "\n".join(lines)


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def providers_from_text(text: str) -> tuple[ExecutionProvider, ...]:
    """`--providers cuda,tensorrt` -> ExecutionProviders ("cpu" or "none" alone: no provider)."""

    out: list[ExecutionProvider] = []
    for part in (p.strip().lower() for p in text.split(",")):
        if not part or part == "none":
            continue
        try:
            out.append(ExecutionProvider(part))
        except ValueError:
            choices = ", ".join(p.value for p in ExecutionProvider)
            raise BundleError(f"--providers: unknown provider {part!r}", f"choose among {choices}") from None
    return tuple(out)
