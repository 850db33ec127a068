"""Vocabulary data: schema, coverage of the 345 categories, measured difficulty, lexicon."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from vocab import UnknownCategoryError, UnknownWordError, build_stats, category_for, french, load_vocabulary
from vocab.inflections import Link
from vocab.lexicon import load_lexicon, parse_dela
from vocab.normalize import normalize
from vocab.vocabulary import (
    DATA_DIR,
    VocabularyError,
    WordEntry,
    extra_everyday,
    extra_synonyms,
    read_vocabulary,
)

CATEGORIES_TXT = Path("/work/shared/data/quickdraw/categories.txt")
QUICKDRAW = CATEGORIES_TXT.parent


def _stats_keys() -> list[str]:
    with (DATA_DIR / "category_stats.csv").open(encoding="utf-8") as fh:
        return [r["category"] for r in csv.DictReader(fh)]


def test_every_category_has_an_entry() -> None:
    vocab = load_vocabulary()
    assert len(vocab) == 345
    assert set(vocab.words) == set(_stats_keys())
    if CATEGORIES_TXT.exists():
        official = [line.strip() for line in CATEGORIES_TXT.read_text().splitlines() if line.strip()]
        assert set(vocab.words) == set(official)


def test_every_entry_follows_the_schema() -> None:
    raw = yaml.safe_load((DATA_DIR / "words.yaml").read_text(encoding="utf-8"))
    for key, body in raw.items():
        entry = WordEntry.model_validate(body)
        assert len(entry.synonyms) <= 3, key


def test_non_drawable_entries_say_why_and_are_few() -> None:
    flagged = [w for w in load_vocabulary() if not w.drawable]
    assert 0 < len(flagged) <= 10
    assert all(w.reason and len(w.reason) > 20 for w in flagged)


@pytest.mark.parametrize(
    ("key", "shown"),
    [
        ("The Eiffel Tower", "la tour Eiffel"),
        ("flip flops", "les tongs"),
        ("hockey puck", "le palet"),
        ("cat", "le chat"),
        ("airplane", "l'avion"),
        ("eye", "l'œil"),
        ("bicycle", "le vélo"),
        ("chandelier", "le lustre"),
        ("The Mona Lisa", "la Joconde"),
        ("key", "la clé"),
    ],
)
def test_idiomatic_french(key: str, shown: str) -> None:
    assert load_vocabulary()[key].with_article == shown


def test_lookups_both_ways() -> None:
    assert french("cat") == "chat"
    assert category_for("Bicyclette") == "bicycle"
    assert category_for("l’œil") == "eye"
    assert category_for("clef") == "key"
    assert category_for("cat") == "cat"
    for w in load_vocabulary():
        assert category_for(w.word) == w.category
        assert category_for(w.with_article) == w.category
    # keys that are also another category's French word: French wins in category_for,
    # the key wins as a match() answer (games pass keys)
    assert load_vocabulary().key_form_clashes() == {"crayon": "pencil", "trombone": "paper clip"}
    assert category_for("crayon") == "pencil"
    with pytest.raises(UnknownCategoryError):
        french("dinosaur")
    with pytest.raises(UnknownWordError):
        category_for("dinosaure")


def test_no_form_is_shared_by_two_categories() -> None:
    seen: dict[str, str] = {}
    for w in load_vocabulary():
        for form in w.forms:
            assert seen.setdefault(normalize(form), w.category) == w.category, form


@pytest.mark.parametrize(
    "body",
    [
        {"word": "chat", "article": "la", "gender": "m"},
        {"word": "avion", "article": "le", "gender": "m"},
        {"word": "chat", "article": "le", "gender": "m", "synonyms": ["a", "b", "c", "d"]},
        {"word": "chat", "article": "le", "gender": "m", "synonyms": ["Chat"]},
        {"word": "chat", "article": "le", "gender": "m", "drawable": False},
        {"word": "chat", "article": "le", "gender": "m", "colour": "red"},
        {"word": " ", "article": "le", "gender": "m"},
        {"word": "chat", "article": "le", "gender": "m", "everyday": {"minou": ""}},  # no reason
        {"word": "chat", "article": "le", "gender": "m", "everyday": {"Chat": "the word itself again"}},
        {"word": "chat", "article": "le", "gender": "m", "everyday": ["minou"]},
    ],
)
def test_schema_rejects_bad_entries(body: dict) -> None:
    with pytest.raises(ValidationError):
        WordEntry.model_validate(body)


def test_homonyms_across_entries_are_refused(tmp_path: Path) -> None:
    (tmp_path / "words.yaml").write_text(
        "cat: {word: chat, article: le, gender: m}\n"
        "kitten: {word: chaton, article: le, gender: m, synonyms: [Chat]}\n",
        encoding="utf-8",
    )
    (tmp_path / "category_stats.csv").write_text(
        "category,n_drawings,n_recognized,recognized_rate,smoothed_rate,difficulty,model_accuracy\n"
        "cat,10,9,0.9,0.9,1,\nkitten,10,9,0.9,0.9,2,\n",
        encoding="utf-8",
    )
    with pytest.raises(VocabularyError, match="homonyms"):
        read_vocabulary(tmp_path)


# --- measured difficulty -------------------------------------------------------------------


def _write_ndjson(path: Path, word: str, flags: list[bool]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps({"word": word, "recognized": f, "drawing": [], "key_id": str(i)})
        for i, f in enumerate(flags)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_build_stats_on_a_small_dataset(tmp_path: Path) -> None:
    _write_ndjson(tmp_path / "full/raw/easy.ndjson", "easy", [True] * 20)
    _write_ndjson(tmp_path / "full/simplified/easy.ndjson", "easy", [True] * 5)
    _write_ndjson(tmp_path / "full/raw/mid.ndjson", "mid", [True] * 18 + [False] * 2)
    _write_ndjson(tmp_path / "full/raw/hard.ndjson", "hard", [True] * 10 + [False] * 10)
    _write_ndjson(tmp_path / "full/raw/worst.ndjson", "worst", [True] * 2 + [False] * 18)
    counts = build_stats.count_recognized(tmp_path)
    assert (counts["easy"].n_drawings, counts["easy"].n_recognized) == (25, 25)
    out = tmp_path / "stats.csv"
    build_stats.main(["--data", str(tmp_path), "--out", str(out)])
    rows = {r["category"]: r for r in csv.DictReader(out.open(encoding="utf-8"))}
    levels = [int(rows[k]["difficulty"]) for k in ("easy", "mid", "hard", "worst")]
    assert levels == [1, 2, 3, 4]
    assert rows["hard"]["recognized_rate"] == "0.5000"
    assert rows["easy"]["model_accuracy"] == ""


def test_build_stats_keeps_model_accuracy(tmp_path: Path) -> None:
    _write_ndjson(tmp_path / "full/raw/a.ndjson", "a", [True, False])
    out = tmp_path / "stats.csv"
    build_stats.main(["--data", str(tmp_path), "--out", str(out)])
    text = out.read_text(encoding="utf-8").replace("0.5000,1,\n", "0.5000,1,0.87\n")
    out.write_text(text, encoding="utf-8")
    build_stats.main(["--data", str(tmp_path), "--out", str(out)])
    assert out.read_text(encoding="utf-8").rstrip().endswith(",0.87")


def test_build_stats_refuses_an_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        build_stats.count_recognized(tmp_path)


@pytest.mark.skipif(not QUICKDRAW.exists(), reason="Quick, Draw! sample not on this machine")
def test_committed_stats_are_reproducible(tmp_path: Path) -> None:
    out = tmp_path / "stats.csv"
    build_stats.main(["--data", str(QUICKDRAW), "--out", str(out)])
    fresh = {r["category"]: r for r in csv.DictReader(out.open(encoding="utf-8"))}
    shipped = {r["category"]: r for r in csv.DictReader((DATA_DIR / "category_stats.csv").open())}
    for key, row in fresh.items():
        for col in ("n_drawings", "n_recognized", "recognized_rate", "difficulty"):
            assert row[col] == shipped[key][col], (key, col)


def test_difficulty_follows_recognition() -> None:
    words = list(load_vocabulary())
    by_level = {lvl: [w.recognized_rate for w in words if w.difficulty == lvl] for lvl in (1, 2, 3, 4)}
    assert all(len(v) >= 80 for v in by_level.values())
    means = [sum(v) / len(v) for v in by_level.values()]
    assert means == sorted(means, reverse=True), means


# --- lexicon -------------------------------------------------------------------------------


def test_parse_dela_sample(tmp_path: Path) -> None:
    src = tmp_path / "dela"
    src.write_text(
        "chevaux,cheval.N+z1:mp\ncheval,.N+z1:ms\nDanseuse,danseur.N+z1:fs\n"
        "chatte,chatter.V:P3s\npommes de terre,pomme de terre.N:fp\nF\\. Fellini,x.N:ms\n"
        "arc-en-ciel,.N:ms\n",
        encoding="utf-8",
    )
    lemmas, words = parse_dela(src)
    assert lemmas == {"chevaux": ("cheval",), "danseuse": ("danseur",)}
    assert {"chevaux", "cheval", "danseuse", "chatte"} <= words
    assert "pommes de terre" not in words


def test_lexicon_cache_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "dela"
    src.write_text("yeux,oeil.N+z1:mp\nœil,.N+z1:ms\n", encoding="utf-8")
    monkeypatch.setenv("GRIFFON_CACHE_DIR", str(tmp_path / "cache"))
    first = load_lexicon(src)
    second = load_lexicon(src)
    assert (first.from_cache, second.from_cache) == (False, True)
    assert first == second
    assert second.lemmas("yeux") == ("oeil",) and second.is_word("oeil")


def test_every_everyday_form_has_a_reason_and_is_a_form() -> None:
    raw = yaml.safe_load((DATA_DIR / "words.yaml").read_text(encoding="utf-8"))
    everyday = {k: v["everyday"] for k, v in raw.items() if isinstance(v, dict) and "everyday" in v}
    assert {"television", "laptop", "wine glass", "remote control"} <= set(everyday)
    for key, forms in everyday.items():
        for form, reason in forms.items():
            assert len(reason.split()) >= 5, (key, form)
            assert category_for(form) == key


@pytest.mark.parametrize(
    "link",
    [
        {"forms": ["louve"], "source": "DELA"},  # a lexicon link quotes its evidence
        {"forms": ["cheffe"], "source": "usage"},  # a usage link gives its reason
        {"forms": [], "source": "regular plural"},
        {"forms": ["louve"], "source": "Wiktionnaire", "evidence": ["louve"]},
    ],
)
def test_links_schema_refuses_unattested_links(link: dict) -> None:
    with pytest.raises(ValidationError):
        Link.model_validate(link)


def test_importing_the_package_loads_nothing_heavy() -> None:
    heavy = "('vocab.', 'pydantic', 'yaml')"
    code = f"import sys, vocab; print(sorted(m for m in sys.modules if m.startswith({heavy})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['vocab.normalize']"
    import vocab

    assert vocab.match is vocab.matcher.match and "match" in dir(vocab)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        vocab.nope  # noqa: B018 - the attribute access is the test


@pytest.mark.parametrize(
    "group",
    [
        "{word: réfrigérateur, everyday: {frigo: ''}}",  # no reason
        "{word: réfrigérateur, everyday: {frigo: yes}}",  # not a reason
        "{everyday: {frigo: the everyday word for it}}",  # no headword
        "{word: réfrigérateur, colour: blanc}",
        "[réfrigérateur]",  # a group of one
        "[chat, minou]",  # « chat » is a card word
    ],
)
def test_extra_synonym_groups_are_checked(tmp_path: Path, group: str) -> None:
    (tmp_path / "extra_synonyms.yaml").write_text(f"groups:\n  - {group}\n", encoding="utf-8")
    with pytest.raises(VocabularyError):
        extra_synonyms(tmp_path)


def test_extra_everyday_forms_are_read(tmp_path: Path) -> None:
    (tmp_path / "extra_synonyms.yaml").write_text(
        "groups:\n  - {word: réfrigérateur, synonyms: [frigidaire], everyday: {Frigo: the everyday word}}\n",
        encoding="utf-8",
    )
    assert extra_synonyms(tmp_path)["frigo"] == ("refrigerateur", "frigidaire", "frigo")
    assert extra_everyday(tmp_path) == {"frigo"}
    assert extra_everyday() == {"frigo", "frigidaire"}  # the shipped file
