"""Accuracy of `ortgpu explain` on real pastes it was not built from: the dev half and the held-out half.

The pastes, their sources and the expected diagnoses are in benchmarks/data/explain_pastes.json (labelled and split
before any development). A paste counts as diagnosed when explain's top match is one of its expected entries.

    python benchmarks/explain_heldout.py                 # the dev half only, one line per paste
    python benchmarks/explain_heldout.py --heldout --out benchmarks/results --stamp 2026-12-01
        # both halves (held-out as totals only), and <stamp>-cpu-explain-heldout.json and .md in that folder

Per-paste results of the held-out half are written to the JSON (for the record) but never printed: development
looks at the dev half only.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import Counter
from pathlib import Path

from ortgpu import __version__
from ortgpu.explain import explain

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "explain_pastes.json"

# Failure classes that had no knowledge-base entry when the pastes were labelled, and the entry that covers each now.
NEW_LABEL_ENTRIES: dict[str, str] = {
    "NEW:trt_profile": "FM-73",
    "NEW:trt_unsupported_op": "FM-74",
    "NEW:arena_shrink_device": "FM-81",
    "NEW:cuda_invalid_configuration": "FM-80",
    "NEW:directml_device_unsupported": "FM-83",
    "NEW:directml_graph_failure": "FM-84",
    "NEW:index_url_replaces_pypi": "FM-85",
    "NEW:provider_name_typo": "FM-86",
    "NEW:providers_not_a_list": "FM-86",
    "NEW:host_memory_exhausted": "FM-87",
    # entries added after the sixth measurement, for the problems its NEW labels named
    "NEW:web_wasm_init_failed": "FM-88",
    "NEW:cpu_provider_registered_first": "FM-89",
    "NEW:optimum_iobinding_unsupported": "FM-90",
    # entries added from the ninth set's dev half, for the problems its NEW labels named (only labels seen in that
    # half: a held-out paste with another NEW label stays a miss whatever explain says)
    "NEW:triton_image_without_onnxruntime_backend": "FM-92",
    "NEW:windows_too_old_for_onnxruntime": "FM-93",
    # entries added after the ninth held-out half was measured (for re-runs on seen sets only)
    "NEW:numpy2_abi_mismatch": "FM-94",
    "NEW:non_ascii_install_path": "FM-95",
    "NEW:optimum_provider_check_false_positive": "FM-96",
    "NEW:binding_environment_not_initialised": "FM-97",
    # entries added after the eleventh set was measured (for re-runs on seen sets only)
    "NEW:provider_bridge_loaded_local": "FM-99",
    "NEW:ortmodule_extensions_not_built": "FM-100",
    # entries added from the twelfth set's dev half (only labels seen in that half)
    "NEW:cuda_provider_on_non_nvidia_gpu": "FM-101",
    # entries added after the twelfth held-out half was measured (for re-runs on seen sets only)
    "NEW:triton_backend_api_mismatch": "FM-102",
    "NEW:provider_library_underlinked": "FM-103",
    # entries added after the thirteenth set was measured (for re-runs on seen sets only)
    "NEW:cpu_instruction_set_unsupported": "FM-104",
    "NEW:custom_op_library_load_failed": "FM-105",
    "NEW:custom_op_library_not_ort_custom_op": "FM-106",
    "NEW:musl_libc_not_supported": "FM-107",
    "NEW:binding_cannot_represent_empty_output": "FM-108",
    "NEW:genai_package_too_old_for_model": "FM-109",
    "NEW:ort_node_cuda_install_script_bug": "FM-110",
    "NEW:node_cuda_installer_paths": "FM-110",
    # entries added from the fourteenth set's dev half (only labels seen in that half)
    "NEW:custom_op_not_registered": "FM-131",
    "NEW:custom_op_library_built_for_newer_ort": "FM-132",
    "NEW:triton_config_shape_mismatch": "FM-133",
    # entries added after the fifteenth set's first run (for re-runs on seen sets only)
    "NEW:fp16_model_on_cpu_ep": "FM-141",
    "NEW:graph_optimizer_bug": "FM-142",
    "NEW:thread_affinity_setaffinity_failed": "FM-143",
    "NEW:onnxruntime_older_than_model": "FM-144",
    "NEW:onnxruntime_not_installed_in_env": "FM-111",
    "NEW:macos_libomp_missing": "FM-112",
    "NEW:wrapper_requires_gpu_libs_in_cpu_mode": "FM-113",
    "NEW:internal_cpp_api_not_exported": "FM-134",
    "NEW:cuda_runtime_older_than_build": "FM-135",
    "NEW:cpu_copy_tensor_async_missing": "FM-136",
    # entries added after the seventeenth set's run (for re-runs on seen sets only)
    "NEW:local_module_shadows_package": "FM-151",
    "NEW:cxx_api_used_during_static_init": "FM-152",
    "NEW:ort_format_model_version": "FM-159",
    "NEW:caller_stream_capture_with_ort_cuda_graph": "FM-160",
    "NEW:dynamic_dim_used_as_tensor_shape": "FM-161",
    "NEW:release_archive_header_missing": "FM-91",  # FM-91 covers a release header including a missing one
    # entries added from the eighteenth set's dev half (only labels seen in that half)
    "NEW:wrapper_uses_removed_genai_api": "FM-167",
    "NEW:concurrent_session_init_kernel_registry_race": "FM-168",
    "NEW:serving_app_dtype_unsupported_on_backend": "FM-169",
    # entries added after the eighteenth set's runs (for re-runs on seen sets only)
    "NEW:tensorrt_int8_not_enabled": "FM-177",
    "NEW:onnxruntime_regression_newer_version": "FM-178",
    "NEW:node_binding_float16_tensor_unsupported": "FM-179",
    "NEW:genai_config_wrong_model_type": "FM-180",
    "NEW:serving_backend_crash_after_failed_run": "FM-181",
    # entries added from the nineteenth set's dev half (only labels seen in that half)
    "NEW:cuda_ep_rank_limit_8": "FM-187",
    "NEW:ort_symbolic_shape_inference_tool_fails": "FM-188",
    # entries added after the nineteenth set's runs (for re-runs on seen sets only)
    "NEW:batchnorm_training_mode_model": "FM-197",
    "NEW:tensorrt_empty_data_dependent_output": "FM-198",
    "NEW:fp16_gemm_unsupported_on_gpu_arch": "FM-199",
    "NEW:non_tensor_output_unsupported": "FM-210",
    "NEW:ort_macos_mutex_abort_at_exit": "FM-211",
    "NEW:ort_env_release_order_at_shutdown": "FM-212",
    "NEW:binding_unknown_allocation_device": "FM-200",
    "NEW:openvino_device_not_selected": "FM-201",
    "NEW:function_body_opset_mismatch": "FM-202",
    "NEW:genai_wheel_native_library_not_loaded": "FM-203",
    "NEW:onnxruntime_python_api_too_old": "FM-204",
    "NEW:beamsearch_model_ort_version_mismatch": "FM-144",
}


def _accepted(expected: list[str]) -> set[str]:
    return {NEW_LABEL_ENTRIES.get(label, label) for label in expected}


def evaluate(pastes: list[dict], closest: bool = True) -> list[dict]:
    """Explain each paste; `closest=False` turns off the nearest-entry fallback for pastes no rule recognises."""
    rows = []
    for paste in pastes:
        start = time.perf_counter()
        result = explain(paste["text"], closest=closest)
        elapsed = time.perf_counter() - start
        top = result.matches[0].id if result.matches else None
        rows.append(
            {
                "id": paste["id"],
                "split": paste["split"],
                "class": paste["class"],
                "source": paste["source"],
                "expected": paste["expected"],
                "got": top,
                "all": [m.id for m in result.matches],
                "verdict": result.verdict.value,
                "correct": top in _accepted(paste["expected"]),
                "seconds": round(elapsed, 4),
            }
        )
    return rows


def summarise(rows: list[dict], splits: tuple[str, ...] = ("dev", "heldout")) -> dict:
    out: dict = {}
    for split in splits:
        part = [r for r in rows if r["split"] == split]
        right = sum(r["correct"] for r in part)
        by_class: dict[str, list[int]] = {}
        for r in part:
            c = by_class.setdefault(r["class"], [0, 0])
            c[0] += r["correct"]
            c[1] += 1
        out[split] = {
            "n": len(part),
            "correct": right,
            "accuracy": round(right / len(part), 4) if part else None,
            "not_recognised": sum(r["got"] is None for r in part),
            "by_class": {k: {"correct": v[0], "n": v[1]} for k, v in sorted(by_class.items())},
        }
    return out


def _markdown(doc: dict) -> str:
    s = doc["summary"]
    lines = [
        "# `ortgpu explain` on real pastes it was not built from",
        "",
        f"Command: `{doc['command']}`  ",
        f"ortgpu {doc['ortgpu_version']}, Python {doc['python']}; data: `benchmarks/data/explain_pastes.json` "
        f"({doc['pastes']} pastes from {doc['projects']} projects, split with seed {doc['seed']}).",
        "",
        *[f"- {note}" for note in doc.get("notes", [])],
        "",
        "Now (the code at this commit):",
        "",
        "| split | pastes | diagnosed | accuracy | not recognised |",
        "|---|---|---|---|---|",
    ]
    for split in ("dev", "heldout"):
        p = s[split]
        lines.append(f"| {split} | {p['n']} | {p['correct']} | {p['accuracy']:.1%} | {p['not_recognised']} |")
    looked = [r["id"] for r in doc["rows"] if r.get("looked_at")]
    if looked:
        p = s["heldout_never_looked_at"]
        lines.append(f"| held-out never looked at | {p['n']} | {p['correct']} | {p['accuracy']:.1%} | |")
        lines += ["", f"Held-out pastes looked at after a measurement (no longer unseen): {', '.join(looked)}."]
    lines += ["", "Held-out by class:", "", "| class | diagnosed / pastes |", "|---|---|"]
    for cls, v in s["heldout"]["by_class"].items():
        lines.append(f"| {cls} | {v['correct']} / {v['n']} |")
    return "\n".join(lines) + "\n"


def record_head(script: str, argv: list[str] | None) -> dict:
    """The fields every benchmark record starts with: schema, the command that made it, ortgpu and Python."""
    args_line = " ".join(argv if argv is not None else sys.argv[1:])
    return {
        "schema": 1,
        "command": f"python benchmarks/{script} {args_line}".rstrip(),
        "ortgpu": __version__,
        "python": platform.python_version(),
    }


def publish_record(out: Path, name: str, doc: dict, markdown: str) -> int:
    """Write a record (write_record), print its markdown and where it went; the exit code of a benchmark's main."""
    base = write_record(out, name, doc, markdown)
    print(markdown)
    print(f"wrote {base}.md and .json")
    return 0


def write_record(out: Path, name: str, doc: dict, markdown: str) -> Path:
    """Write a measurement's record as OUT/<name>.json and .md (the benchmarks' one record format); returns the
    path without its suffix."""
    out.mkdir(parents=True, exist_ok=True)
    base = out / name
    base.with_suffix(".json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    base.with_suffix(".md").write_text(markdown, encoding="utf-8")
    return base


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heldout", action="store_true", help="also score the held-out half (the final measurement)")
    parser.add_argument("--out", type=Path, help="folder for the JSON and markdown record (needs --heldout)")
    parser.add_argument("--stamp", default=time.strftime("%Y-%m-%d"))
    parser.add_argument("--note", action="append", default=[], help="a line for the record's notes (repeatable)")
    parser.add_argument(
        "--looked",
        default="",
        help="comma-separated held-out ids whose results were looked at (and acted on) after a measurement: "
        "they no longer count as unseen",
    )
    parser.add_argument("--no-closest", action="store_true", help="turn off the nearest-entry fallback")
    args = parser.parse_args(argv)

    data = json.loads(DATA.read_text(encoding="utf-8"))
    if args.out and not args.heldout:
        parser.error("--out records the final measurement: add --heldout")
    pastes = [p for p in data["pastes"] if args.heldout or p["split"] == "dev"]
    rows = evaluate(pastes, closest=not args.no_closest)
    looked = {i.strip() for i in args.looked.split(",") if i.strip()}
    for r in rows:
        r["looked_at"] = r["id"] in looked
    summary = summarise(rows)
    unseen = [r for r in rows if r["split"] == "heldout" and not r["looked_at"]]
    if unseen:
        right = sum(r["correct"] for r in unseen)
        summary["heldout_never_looked_at"] = {
            "n": len(unseen),
            "correct": right,
            "accuracy": round(right / len(unseen), 4),
        }
    for r in rows:
        if r["split"] == "dev":
            mark = "ok  " if r["correct"] else "MISS"
            print(f"{mark} {r['id']} {r['class']:<14} expected {','.join(r['expected']):<22} got {r['got']}")
    for split in ("dev", "heldout") if args.heldout else ("dev",):
        p = summary[split]
        print(f"{split}: {p['correct']}/{p['n']} = {p['accuracy']:.1%} (not recognised: {p['not_recognised']})")
    if looked and "heldout_never_looked_at" in summary:
        p = summary["heldout_never_looked_at"]
        print(f"heldout never looked at: {p['correct']}/{p['n']} = {p['accuracy']:.1%}")
    if args.out:
        doc = {
            "schema": "ortgpu.bench-explain-heldout/v1",
            "command": "python benchmarks/explain_heldout.py --heldout --out benchmarks/results",
            "ortgpu_version": __version__,
            "python": platform.python_version(),
            "seed": data["seed"],
            "pastes": len(data["pastes"]),
            "projects": len({p["project"] for p in data["pastes"]}),
            "new_label_entries": NEW_LABEL_ENTRIES,
            "summary": summary,
            "classes": dict(Counter(p["class"] for p in data["pastes"])),
            "notes": args.note,
            "rows": rows,
        }
        base = write_record(args.out, f"{args.stamp}-cpu-explain-heldout", doc, _markdown(doc))
        print(f"wrote {base}.json and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
