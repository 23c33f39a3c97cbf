"""The fallback's labelled-paste examples: tokens only (none from a single paste), used only when no rule fires, an
entry offered as a lead when a paste shares its labelled pastes' words, nothing for unrelated words, and bounded."""

from __future__ import annotations

import importlib.util
import json
import random
import time
from pathlib import Path
from types import ModuleType

import pytest

from ortgpu.explain import PasteKind, explain
from ortgpu.knowledge import examples, load_knowledge_base
from ortgpu.knowledge.examples import Example, Examples, build_examples, features_of, load_examples
from ortgpu.knowledge.nearest import nearest, tokens, vocabulary
from ortgpu.knowledge.paste import prepare

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data"

# invented words: no rule and no knowledge-base entry knows them
INVENTED = ("frobnicator", "glimmerstack", "quuxdevice", "zentrailoader")
NEW_WORDS_PASTE = "Exception: frobnicator glimmerstack quuxdevice zentrailoader went wrong at startup"


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_explain_examples", ROOT / "tools/build_explain_examples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def with_examples(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Replace the packaged examples for one test (the per-process cache is cleared before and after)."""

    def use(found: Examples) -> None:
        examples._SHIPPED.clear()
        monkeypatch.setattr(examples, "load_examples", lambda path=None: found)

    yield use
    examples._SHIPPED.clear()


def _synthetic(entry: str) -> Examples:
    return Examples(
        ("synthetic",), tuple(Example(entry, tuple(sorted((*INVENTED[i % 2 :], "cuda")))) for i in range(10))
    )


def test_the_shipped_examples_load_and_hold_no_token_from_a_single_paste() -> None:
    shipped = load_examples()
    assert len(shipped.examples) > 300
    assert shipped.built_from
    df: dict[str, int] = {}
    for name in shipped.built_from:
        for paste in json.loads((DATA / name).read_text(encoding="utf-8"))["pastes"]:
            prepared = prepare(paste["text"])
            for token in set(tokens(prepared.joined) + features_of(prepared, shipped.features)):
                df[token] = df.get(token, 0) + 1
    known = vocabulary(load_knowledge_base())
    single = {t for e in shipped.examples for t in e.tokens if df.get(t, 0) < 2 and t not in known}
    assert single == set()
    ids = {e.id for e in load_knowledge_base().entries}
    assert {e.entry for e in shipped.examples} <= ids


def test_the_shipped_examples_are_what_the_builder_makes_from_their_sets() -> None:
    shipped = load_examples()
    assert _builder().build(list(shipped.built_from)) == shipped


def test_the_shipped_examples_learn_from_every_seen_set_the_eleventh_included() -> None:
    shipped = load_examples()
    assert list(shipped.built_from) == _builder().seen_sets()
    assert {"explain_pastes_eleventh_dev.json", "explain_pastes_eleventh_heldout.json"} <= set(shipped.built_from)


def test_a_paste_of_the_eleventh_set_now_gets_its_labelled_entry_from_the_fallback() -> None:
    # KA24: onnxruntime.dll cannot load its dependencies on a Windows Server too old for the build; examples without
    # the eleventh set lead the fallback to FM-82 (the binding's library), the eleventh set's labels teach it FM-93
    # (the fallback alone, with its features, as when no rule fires)
    kb = load_knowledge_base()
    paste = next(
        p
        for p in json.loads((DATA / "explain_pastes_eleventh_heldout.json").read_text(encoding="utf-8"))["pastes"]
        if p["id"] == "KA24"
    )
    prepared = prepare(paste["text"])
    more = examples.features_of(prepared, examples.FEATURES)
    builder = _builder()
    without = [n for n in builder.seen_sets() if "eleventh" not in n]
    before = build_examples(builder.labelled(without, kb), kb, [], examples.FEATURES)
    point = (examples.THRESHOLD, examples.MARGIN)
    old = nearest(prepared.joined, kb, *point, examples.entry_documents(before, kb), more)
    new = nearest(prepared.joined, kb, *point, examples.shipped_documents(kb), more)
    assert old is not None and old.entry.id == "FM-82"
    assert new is not None and new.entry.id == "FM-93"


def test_the_shipped_threshold_and_margin_are_the_ones_the_committed_cross_validation_chose() -> None:
    record = ROOT / "benchmarks" / "results" / "2026-12-01-cpu-explain-examples-cv.json"
    doc = json.loads(record.read_text(encoding="utf-8"))
    chosen = doc["chosen"][doc["shipped"]]
    assert (chosen["threshold"], chosen["margin"]) == (examples.THRESHOLD, examples.MARGIN)
    assert chosen["precision"] >= 0.9
    assert load_examples().features == examples.FEATURES == tuple(doc["shipped_features"])
    # the shipped ranking has the most right leads at >= 90% of every ranking tried
    assert chosen["right"] == max(c.get("right", 0) for c in doc["chosen"].values())


def test_the_twelfth_set_is_learnt_from_once_its_held_out_half_was_measured() -> None:
    # the held-out half was marked "learn": false by explain_split.py until the protocol's run; released after it
    built_from = load_examples().built_from
    assert {"explain_pastes_twelfth_dev.json", "explain_pastes_twelfth_heldout.json"} <= set(built_from)


def _library_examples(kinds: tuple[str, ...]) -> Examples:
    # eight pastes labelled FM-21 that named the (invented) library libzentrai.so.7
    return Examples(
        ("synthetic",),
        tuple(Example("FM-21", ("lib:zentrai", "lib:zentrai@7", "startup", "went", f"startupx{i}")) for i in range(8)),
        kinds,
    )


def test_a_library_named_in_another_form_gets_the_entry_its_labelled_pastes_named(with_examples) -> None:  # type: ignore[no-untyped-def]
    # the labelled pastes said libzentrai.so.7; the user's paste says zentrai64_7.dll: the words differ, the library
    # and its major version are the same
    text = "Exception: zentrai64_7.dll went wrong at startup"
    with_examples(_library_examples(()))
    assert explain(text).verdict is PasteKind.NOT_RECOGNISED
    with_examples(_library_examples(("sig:", "lib:")))
    result = explain(text)
    assert result.verdict is PasteKind.CLOSEST
    assert result.matches[0].id == "FM-21" and result.matches[0].matched_by == "closest"


def test_a_set_kept_as_an_unseen_test_is_never_learnt_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    builder = _builder()
    paste = {"id": "X1", "expected": ["FM-21"], "text": "LoadLibrary failed with error 126"}
    (tmp_path / "explain_pastes_open.json").write_text(json.dumps({"pastes": [paste]}))
    (tmp_path / "explain_pastes_kept.json").write_text(json.dumps({"learn": False, "pastes": [paste]}))
    monkeypatch.setattr(builder, "DATA", tmp_path)
    assert builder.seen_sets() == ["explain_pastes_open.json"]
    with pytest.raises(SystemExit, match="unseen test"):
        builder.labelled(["explain_pastes_kept.json"], load_knowledge_base())
    shipped = load_examples()
    assert not any(json.loads((DATA / n).read_text(encoding="utf-8")).get("learn") is False for n in shipped.built_from)


def test_the_builder_is_deterministic_and_drops_single_paste_tokens() -> None:
    kb = load_knowledge_base()
    labelled = [
        ("FM-21", "Error: shared frobnicator appears twice userjohnsmith"),
        ("FM-01", "Error: shared frobnicator again with randomid8723xq"),
        ("FM-01", "cudnn failed here"),
    ]
    first = build_examples(labelled, kb, ["b.json", "a.json"])
    again = build_examples(list(reversed(labelled)), kb, ["a.json", "b.json"])
    assert first == again and first.built_from == ("a.json", "b.json")
    kept = {t for e in first.examples for t in e.tokens}
    assert {"frobnicator", "shared", "cudnn"} <= kept
    assert not kept & {"userjohnsmith", "randomid8723xq"}


def test_a_paste_in_new_words_gets_the_entry_its_labelled_pastes_share(with_examples) -> None:  # type: ignore[no-untyped-def]
    with_examples(Examples((), ()))
    assert explain(NEW_WORDS_PASTE).verdict is PasteKind.NOT_RECOGNISED
    with_examples(_synthetic("FM-21"))
    result = explain(NEW_WORDS_PASTE)
    assert result.verdict is PasteKind.CLOSEST and not result.recognised
    assert result.matches[0].id == "FM-21" and result.matches[0].matched_by == "closest"
    assert "not a certain diagnosis" in result.summary


def test_a_paste_of_unrelated_words_gets_nothing_from_the_shipped_examples() -> None:
    result = explain("Exception: the zebra painted a violin beside the quasar after lunch")
    assert result.verdict is PasteKind.NOT_RECOGNISED and result.matches == ()


@pytest.mark.parametrize(
    "text",
    [
        "libcublasLt.so.11: cannot open shared object file: No such file or directory",
        "[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Got invalid dimensions for input: images for the following "
        "indices\n index: 2 Got: 320 Expected: 640",
    ],
)
def test_a_paste_a_rule_recognises_keeps_its_answer(with_examples, text: str) -> None:  # type: ignore[no-untyped-def]
    shipped = explain(text)
    with_examples(Examples((), ()))
    before = explain(text)
    with_examples(_synthetic("FM-21"))
    synthetic = explain(text)
    assert before.recognised and before.verdict is not PasteKind.CLOSEST
    for result in (shipped, synthetic):
        assert result.verdict is before.verdict
        assert [(m.id, m.matched_by) for m in result.matches] == [(m.id, m.matched_by) for m in before.matches]


def test_a_huge_hostile_paste_stays_quick() -> None:
    explain("warm the index up: Error")
    rng = random.Random(7)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(9)) for _ in range(4000)]
    shipped = sorted({t for e in load_examples().examples for t in e.tokens})
    text = "Error: " + " ".join(words + shipped * 2)
    text = (text * (64_000 // len(text) + 1))[:900_000]
    start = time.perf_counter()
    result = explain(text)
    assert time.perf_counter() - start < 2.0
    assert result.verdict in (PasteKind.NOT_RECOGNISED, PasteKind.CLOSEST) or result.recognised
