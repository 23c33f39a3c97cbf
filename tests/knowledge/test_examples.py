"""The fallback's labelled-paste examples and its trained model: tokens only (none from a single paste), used only
when no rule fires, an entry offered as a lead when a paste carries its labelled pastes' words, nothing for unrelated
words, and bounded."""

from __future__ import annotations

import importlib.util
import json
import random
import time
from pathlib import Path
from types import ModuleType

import pytest

from ortgpu.explain import PasteKind, explain
from ortgpu.knowledge import examples, linear, load_knowledge_base
from ortgpu.knowledge.examples import build_examples, features_of, load_examples
from ortgpu.knowledge.linear import LinearModel
from ortgpu.knowledge.nearest import closest_hit, tokens, vocabulary
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
def with_model(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Replace the packaged trained model (and the feature kinds its queries carry) for one test."""

    def use(model: LinearModel, kinds: tuple[str, ...] = examples.FEATURES) -> None:
        shipped = linear._Shipped(model, kinds, linear.P_MIN)
        monkeypatch.setattr(linear, "shipped_model", lambda: shipped)

    return use


def _taught(weights: dict[str, float], entry: str = "FM-21") -> LinearModel:
    """The shipped model, taught these (invented) terms for one entry, as fitting on pastes that carry them would."""
    shipped = linear.shipped_model().model
    i = shipped.classes.index(entry)
    idf = {**shipped.idf, **dict.fromkeys(weights, 5.0)}
    taught = {**shipped.weights, **{t: ((i, w),) for t, w in weights.items()}}
    return LinearModel(shipped.classes, shipped.intercepts, idf, taught)


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


def test_a_paste_of_the_eleventh_set_gets_its_labelled_entry_from_the_trained_fallback() -> None:
    # KA27: a Rust app linked against an older libonnxruntime than the container holds; BM25 offers no lead at its
    # point, the model trained on the labelled pastes offers FM-82 (the binding's library) with confidence
    paste = next(
        p
        for p in json.loads((DATA / "explain_pastes_eleventh_heldout.json").read_text(encoding="utf-8"))["pastes"]
        if p["id"] == "KA27"
    )
    kb = load_knowledge_base()
    text = prepare(paste["text"])
    more = examples.shipped_features(text)
    bm25 = closest_hit(text, kb, examples.shipped_documents(kb), examples.THRESHOLD, examples.MARGIN, more)
    assert bm25 is None or bm25.entry.id != "FM-82"
    hit = linear.closest_hit(text, kb)
    assert hit is not None and hit.entry.id == "FM-82" and hit.how == "closest"
    assert float(hit.groups["probability"]) >= linear.P_MIN


def test_the_shipped_threshold_and_margin_are_the_ones_the_committed_cross_validation_chose() -> None:
    record = ROOT / "benchmarks" / "results" / "2026-12-02-cpu-explain-examples-cv.json"
    doc = json.loads(record.read_text(encoding="utf-8"))
    chosen = doc["chosen"][doc["shipped"]]
    assert (chosen["threshold"], chosen["margin"]) == (examples.THRESHOLD, examples.MARGIN)
    assert chosen["precision"] >= 0.9
    assert load_examples().features == examples.FEATURES == tuple(doc["shipped_features"])
    # the BM25 ranking kept as the baseline has the most right leads at >= 90% of every BM25 ranking tried
    assert chosen["right"] == max(c.get("right", 0) for c in doc["chosen"].values())


def test_the_trained_fallback_is_what_the_committed_cross_validation_chose_over_the_bm25_one() -> None:
    record = ROOT / "benchmarks" / "results" / "2026-12-02-cpu-explain-examples-linear.json"
    doc = json.loads(record.read_text(encoding="utf-8"))
    chosen = doc["chosen"][doc["winner"]]
    # explain offers the model's lead at p >= P_MIN, else the BM25 ranking's at its CV point: the "chain" ranking
    assert doc["winner"] == "chain" and chosen["p"] == linear.P_MIN == linear.shipped_model().p_min
    assert (doc["baseline"]["threshold"], doc["baseline"]["margin"]) == (examples.THRESHOLD, examples.MARGIN)
    assert chosen["precision"] >= 0.9 and chosen["right"] > doc["baseline"]["right"]
    cv = json.loads((ROOT / "benchmarks" / "results" / "2026-12-02-cpu-explain-examples-cv.json").read_text("utf-8"))
    assert doc["baseline"]["right"] == cv["chosen"][cv["shipped"]]["right"]  # the same folds


def test_the_shipped_model_learns_from_every_seen_set_within_its_size_budget() -> None:
    path = ROOT / "src" / "ortgpu" / "data" / "explain_linear.json"
    assert path.stat().st_size < 1_000_000
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["built_from"] == _builder().seen_sets() and tuple(doc["features"]) == examples.FEATURES
    assert sum(len(ws) for ws in doc["weights"].values()) <= linear.MAX_WEIGHTS
    assert set(doc["classes"]) <= {e.id for e in load_knowledge_base().entries}


def test_the_trainer_fits_a_model_that_offers_the_entry_of_new_words() -> None:
    pytest.importorskip("sklearn")
    spec = importlib.util.spec_from_file_location("lin", ROOT / "benchmarks/explain_examples_linear.py")
    assert spec is not None and spec.loader is not None
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    trainer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(trainer)
    kb = load_knowledge_base()
    labelled = [("FM-21", f"Error: frobnicator glimmerstack case {i}") for i in range(6)]
    labelled += [("FM-01", f"Error: quuxdevice zentrailoader case {i}") for i in range(6)]
    model = trainer.export(*trainer._fit(labelled, kb), keep=5000)
    probs = model.probabilities(tokens("Exception: glimmerstack frobnicator"))
    assert max(probs, key=probs.__getitem__) == "FM-21"


def test_the_twelfth_set_is_learnt_from_once_its_held_out_half_was_measured() -> None:
    # the held-out half was marked "learn": false by explain_split.py until the protocol's run; released after it
    built_from = load_examples().built_from
    assert {"explain_pastes_twelfth_dev.json", "explain_pastes_twelfth_heldout.json"} <= set(built_from)


def test_a_library_named_in_another_form_gets_the_entry_its_labelled_pastes_named(with_model) -> None:  # type: ignore[no-untyped-def]
    # the labelled pastes said libzentrai.so.7 (the model learnt lib:zentrai@7); the user's paste says
    # zentrai64_7.dll: the words differ, the library and its major version are the same
    text = "Exception: zentrai64_7.dll went wrong at startup"
    with_model(_taught({"lib:zentrai@7": 20.0}), ())
    assert explain(text).verdict is PasteKind.NOT_RECOGNISED
    with_model(_taught({"lib:zentrai@7": 20.0}), ("sig:", "lib:"))
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


def test_a_paste_in_new_words_gets_the_entry_its_labelled_pastes_share(with_model) -> None:  # type: ignore[no-untyped-def]
    assert explain(NEW_WORDS_PASTE).verdict is PasteKind.NOT_RECOGNISED
    with_model(_taught(dict.fromkeys(INVENTED, 6.0)))
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
def test_a_paste_a_rule_recognises_keeps_its_answer(with_model, text: str) -> None:  # type: ignore[no-untyped-def]
    shipped = explain(text)
    before = explain(text, closest=False)
    with_model(_taught(dict.fromkeys(tokens(text), 30.0)))
    synthetic = explain(text)
    assert before.recognised and before.verdict is not PasteKind.CLOSEST
    for result in (shipped, synthetic):
        assert result.verdict is before.verdict
        assert [(m.id, m.matched_by) for m in result.matches] == [(m.id, m.matched_by) for m in before.matches]


def test_a_huge_hostile_paste_stays_quick() -> None:
    explain("warm the index up: Error")
    rng = random.Random(7)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(9)) for _ in range(4000)]
    shipped = sorted({t for e in load_examples().examples for t in e.tokens} | set(linear.shipped_model().model.idf))
    text = "Error: " + " ".join(words + shipped * 2)
    text = (text * (64_000 // len(text) + 1))[:900_000]
    start = time.perf_counter()
    result = explain(text)
    assert time.perf_counter() - start < 2.0
    assert result.verdict in (PasteKind.NOT_RECOGNISED, PasteKind.CLOSEST) or result.recognised
