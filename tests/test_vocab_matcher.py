"""Answer matcher: a table of real cases, properties, and the exhaustive no-confusion test."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from vocab import (
    ACCEPT_REASONS,
    REASONS,
    AmbiguousAnswerError,
    Match,
    UnknownCategoryError,
    edit_budget,
    load_vocabulary,
    match,
    normalize,
)
from vocab import matcher as matcher_module
from vocab.inflections import read_links
from vocab.lexicon import Lexicon, dela_path
from vocab.normalize import normalize_reference

CASES_FILE = Path(__file__).parent / "data" / "vocab_matcher_cases.yaml"


def _load_cases() -> list:
    raw = yaml.safe_load(CASES_FILE.read_text(encoding="utf-8"))
    out = []
    for section, cases in raw.items():
        for c in cases:
            if isinstance(c, dict):
                a, g, t, r, k = c["answer"], c["guess"], c.get("table"), c["reason"], c.get("answer_kind")
            else:
                (a, g, r), t, k = c, None, None
            out.append(pytest.param(a, g, t, r, k, id=f"{section}:{a}|{g}|{t or ''}|{k or ''}"))
    return out


CASES = _load_cases()
CLASHES = set(load_vocabulary().key_form_clashes())


def test_case_table_is_large_and_balanced() -> None:
    reasons = [p.values[3] for p in CASES]
    accepted = sum(r in ACCEPT_REASONS for r in reasons)
    assert len(CASES) >= 250
    assert accepted >= 100 and len(CASES) - accepted >= 100
    assert set(reasons) <= set(REASONS)
    assert set(REASONS) <= set(reasons), "every documented reason has at least one real case"


@pytest.mark.parametrize(("answer", "guess", "table", "reason", "kind"), CASES)
def test_case(answer: str, guess: str, table: list[str] | None, reason: str, kind: str | None) -> None:
    m = match(answer, guess, table=table, answer_kind=kind)
    assert (m.reason, m.accepted) == (reason, reason in ACCEPT_REASONS), m


def test_match_is_a_frozen_value() -> None:
    m = match("médecin", "Docteur")
    assert m == Match(True, "synonym", None, "docteur")
    with pytest.raises(AttributeError):
        m.accepted = False  # type: ignore[misc]


def test_category_keys_and_french_words_are_interchangeable_answers() -> None:
    for answer in ("bicycle", "vélo", "Bicyclette", "le vélo"):
        m = match(answer, "velo")
        assert m.accepted and m.category == "bicycle"


def test_an_answer_that_is_a_key_and_another_french_word_must_say_which() -> None:
    vocab = load_vocabulary()
    for key, other in vocab.key_form_clashes().items():  # crayon → pencil, trombone → paper clip
        with pytest.raises(AmbiguousAnswerError, match="answer_kind='key' or 'word'"):
            match(key, "n'importe quoi")
        assert match(key, vocab.french(key), answer_kind="key").category == key
        assert match(key, key, answer_kind="word").category == other
    with pytest.raises(AmbiguousAnswerError):
        match("cat", "chat", table=["crayon"])  # a table entry is read the same way
    assert match("cat", "chat", table=["crayon"], answer_kind="key").accepted


def test_answer_kind_is_checked() -> None:
    with pytest.raises(UnknownCategoryError):
        match("chat", "chat", answer_kind="key")  # a French word is not a key
    with pytest.raises(ValueError, match="answer_kind"):
        match("cat", "chat", answer_kind="french")  # type: ignore[arg-type]
    assert match("chat", "chat", answer_kind="word").category == "cat"
    assert (
        match("cat", "chat", answer_kind="word").reason == "rejected_different_word"
    )  # « cat » is not French


def test_typo_distance_is_reported() -> None:
    m = match("crocodile", "crocodil")
    assert (m.reason, m.distance) == ("typo", 1)


@pytest.mark.parametrize(
    ("form", "budget"),
    [("chat", 1), ("lit", 0), ("pont", 1), ("bateaux", 1), ("elephant", 2), ("tour eiffel", 2), ("ours", 1)],
)
def test_edit_budget(form: str, budget: int) -> None:
    assert edit_budget(form) == budget


@pytest.mark.parametrize("bad", [None, 3, b"chat", ["chat"]])
def test_non_str_input_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError):
        match("chat", bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        match(bad, "chat")  # type: ignore[arg-type]


def test_table_must_be_a_sequence_of_str() -> None:
    with pytest.raises(TypeError):
        match("chat", "chat", table="chien")  # a bare str is a mistake, not 5 one-letter words
    with pytest.raises(TypeError):
        match("chat", "chat", table=["chien", 3])  # type: ignore[list-item]


@settings(max_examples=300, deadline=None)
@given(
    answer=st.text(max_size=30) | st.sampled_from(["crayon", "trombone", "cat", "Crayon"]),
    guess=st.text(max_size=60),
    table=st.none() | st.lists(st.text(max_size=15), max_size=4),
)
def test_match_never_raises_on_any_text(answer: str, guess: str, table: list[str] | None) -> None:
    if {answer, *(table or ())} & CLASHES:  # « crayon », « trombone »: the caller must say which
        with pytest.raises(AmbiguousAnswerError):
            match(answer, guess, table=table)
        return
    for kind in (None, "word"):
        m = match(answer, guess, table=table, answer_kind=kind)
        assert m.reason in REASONS
        assert m.accepted == (m.reason in ACCEPT_REASONS)


@settings(max_examples=300, deadline=None)
@given(
    guess=st.sampled_from(["chat", "Chats", "un chat", "chatt", "château", "chien"]),
    noise=st.text(alphabet=" '’.,!?-", max_size=4),
)
def test_punctuation_around_a_guess_does_not_change_the_verdict(guess: str, noise: str) -> None:
    assert match("cat", noise + guess + noise).reason == match("cat", guess).reason


# --- normalize -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("L’Œil", "oeil"),
        ("l'œil", "oeil"),
        ("ŒUF", "oeuf"),
        ("Ex æquo", "ex aequo"),
        ("des Arbres", "arbres"),
        ("de la crème", "creme"),
        ("de l'eau", "eau"),
        ("d’eau", "eau"),
        ("du pain", "pain"),
        ("une Étoile", "etoile"),
        ("Arc-en-ciel !", "arc en ciel"),
        ("  gâteau\t", "gateau"),
        ("la", "la"),
        ("les les chats", "chats"),
        ("ＣＨＡＴ", "chat"),
        ("ﬁlet", "filet"),
        ("", ""),
        ("?!", ""),
    ],
)
def test_normalize_examples(text: str, expected: str) -> None:
    assert normalize(text) == expected


@settings(max_examples=2000, deadline=None)
@given(st.text())
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="aàâbcçdeéèêëfghiîïjklmnoôœpqrstuùûüvwxyzAÉÈŒ '’-.", max_size=30))
def test_normalize_output_is_plain_lowercase_words(text: str) -> None:
    out = normalize(text)
    assert out == out.strip() and "  " not in out
    assert all(ch == " " or (ch.isascii() and ch.isalnum()) for ch in out)


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127)) | st.text())
def test_normalize_fast_path_equals_the_reference(text: str) -> None:
    assert normalize(text) == normalize_reference(text)


def test_normalize_rejects_non_str() -> None:
    with pytest.raises(TypeError):
        normalize(None)  # type: ignore[arg-type]


# --- no vocabulary word is accepted for another ------------------------------------------


def test_no_two_vocabulary_words_are_accepted_for_each_other() -> None:
    vocab = load_vocabulary()
    forms = [(w.category, f) for w in vocab for f in w.forms]
    wrong = []
    for answer in vocab:
        for owner, form in forms:
            m = match(answer.category, form, answer_kind="key")
            if m.accepted != (owner == answer.category):
                wrong.append((answer.category, form, m.reason))
    assert not wrong, wrong[:20]
    assert len(forms) >= 345


def test_every_vocabulary_word_accepts_its_plural_with_article() -> None:
    vocab = load_vocabulary()
    refused = [
        w.category for w in vocab if not match(w.category, f"les {w.word}s", answer_kind="key").accepted
    ]
    # a naive -s plural is wrong only for invariable words (bus, nez) and « chaîne hi-fi » (hi-fi is)
    assert sorted(refused) == ["bus", "nose", "stereo"], refused


def test_every_vocabulary_word_accepts_its_real_plural() -> None:
    plurals = {
        "bus": "bus",
        "nose": "nez",
        "stereo": "chaînes hi-fi",
        "animal migration": "migrations animales",
    }
    for key, plural in plurals.items():
        assert match(key, f"des {plural}", answer_kind="key").accepted, key


def test_gender_links_are_attested_by_the_lexicon() -> None:
    links = read_links()
    evidence = {line for section in (links.gender, links.number) for ln in section.values()
                if ln.source == "DELA" for line in ln.evidence}  # fmt: skip
    assert len(links.gender) >= 4 and evidence
    with dela_path().open(encoding="utf-8") as fh:
        found = evidence & {line.rstrip("\n") for line in fh}
    assert found == evidence, sorted(evidence - found)
    linked = {normalize(f) for sec in (links.gender, links.number) for ln in sec.values() for f in ln.forms}
    assert len(links.not_linked) >= 20 and not {normalize(f) for f in links.not_linked} & linked
    for base, link in links.gender.items():
        assert all(
            link.reason and match(base, f, answer_kind="word").reason == "inflection" for f in link.forms
        )


# --- speed and threads ---------------------------------------------------------------------


def test_repeated_matches_build_nothing_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """What keeps a match well under a millisecond: the index is built once, a target (a category's
    or a free French answer's) once, and a token's lemmas are read from the lexicon once."""
    answers = ["cat", "soupière"]  # a category key, and a French word outside the vocabulary
    guesses = ["chat", "chats", "château", "chatt", "un chat noir", "chien", "xqzj", "", "gâteau"]
    match("cat", "chat")  # the index, built once (or already there)
    index = matcher_module._index()
    builds, lookups = [], []
    real_build, lexicon = index._build, index.lex

    class CountingLexicon:
        def __getattr__(self, name: str):
            return getattr(lexicon, name)

        def lemma_set(self, token: str) -> frozenset[str]:
            lookups.append(token)
            return lexicon.lemma_set(token)

    monkeypatch.setattr(index, "_build", lambda *a, **k: builds.append(a[0]) or real_build(*a, **k))
    monkeypatch.setattr(index, "lex", CountingLexicon())
    monkeypatch.setattr(index, "_lemma_cache", {})
    monkeypatch.setattr(index, "_adhoc", {})
    indexes = []
    real_index = matcher_module._Index
    monkeypatch.setattr(matcher_module, "_Index", lambda *a, **k: indexes.append(1) or real_index(*a, **k))
    first = [match(a, g) for a in answers for g in guesses]
    assert builds and lookups  # the free answer's target and the new tokens: built on first use
    builds.clear(), lookups.clear()
    for _ in range(20):
        assert [match(a, g) for a in answers for g in guesses] == first
    assert builds == [] and lookups == [] and indexes == []  # nor the whole index again


def test_concurrent_first_use_builds_the_index_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight threads meet at a barrier, then all make their first match on a fresh index.

    The build is slowed down (the lexicon load sleeps) so that without the lock every thread
    would find no index and build its own; the index class is wrapped to count the builds.
    """
    match("cat", "chat")  # lexicon and vocabulary loaded once, outside the race
    real_lexicon = matcher_module.get_lexicon

    def slow_lexicon() -> Lexicon:
        time.sleep(0.05)
        return real_lexicon()

    real_index = matcher_module._Index
    builds: list[object] = []

    def counted_index(*args: object) -> object:
        builds.append(args)
        return real_index(*args)

    monkeypatch.setattr(matcher_module, "_INDEX", None)
    monkeypatch.setattr(matcher_module, "get_lexicon", slow_lexicon)
    monkeypatch.setattr(matcher_module, "_Index", counted_index)
    barrier = threading.Barrier(8)
    results: list[bool] = []

    def worker() -> None:
        barrier.wait()
        results.append(match("horse", "chevaux").accepted)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 8
    assert len(builds) == 1
