"""The one word → category rule (vocab/lookup.py) on two skribbl-style word lists, English and
French, whose every word carries its expected categories, checked by hand
(tests/data/words/skribbl_en.csv, skribbl_fr.csv; an empty cell: no category is that thing);
the alias table's own checks; and the four callers that read words agreeing with it."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from vocab.lookup import read_aliases
from vocab.vocabulary import load_vocabulary

LISTS = Path(__file__).parent / "data" / "words"


def expected(language: str) -> dict[str, tuple[str, ...]]:
    with (LISTS / f"skribbl_{language}.csv").open(encoding="utf-8", newline="") as fh:
        return {row["word"]: tuple(filter(None, row["categories"].split("|"))) for row in csv.DictReader(fh)}


@pytest.mark.parametrize("language", ["en", "fr"])
def test_every_word_of_a_skribbl_list_is_read_as_checked_by_hand(language: str) -> None:
    words = expected(language)
    assert len(words) >= 200
    known = {w for w, cats in words.items() if cats}
    assert len(known) >= 150 and len(words) - len(known) >= 20  # both kinds are in the list
    lookup = load_vocabulary().lookup
    wrong = {w: lookup.categories(w, language) for w, cats in words.items()
             if lookup.categories(w, language) != cats}
    assert wrong == {}


def test_plurals_spacing_and_case_read_as_the_word_itself() -> None:
    lookup = load_vocabulary().lookup
    for text in ("icecream", "ice-cream", "Ice Creams", "icecreams", "an ice cream"):
        assert lookup.categories(text, "en") == ("ice cream",), text
    for text, key in (("mice", "mouse"), ("knives", "knife"), ("strawberries", "strawberry"),
                      ("teeth", "tooth"), ("burgers", "hamburger"), ("grape", "grapes"), ("buses", "bus"),
                      ("chevaux", "horse"), ("pommes de terre", "potato"), ("yeux", "eye"),
                      ("hot-dogs", "hot dog"), ("The Eiffel Towers", "The Eiffel Tower")):
        assert lookup.category(text, "en") == key and lookup.category(text, "fr") == key, text
    assert lookup.categories("phone") == ("cell phone", "telephone")
    assert lookup.categories("glass", "en") == () and lookup.categories("balloon", "en") == ()
    assert lookup.categories("x" * 10_000) == () and lookup.categories("  ") == ()


def test_the_alias_table_names_known_categories_and_nothing_twice() -> None:
    vocabulary = load_vocabulary()
    lookup = load_vocabulary().lookup
    for language, table in read_aliases().items():
        assert table, language
        for alias, categories in table.items():
            assert set(categories) <= set(vocabulary.words), alias
            # an alias the rule already reads otherwise (a key, a French form) is dead data
            form_table = lookup.english if language == "en" else lookup.french
            from vocab.lookup import comparison_form

            assert form_table.forms.get(comparison_form(alias)) == categories, (language, alias)


def test_every_caller_reads_words_by_the_one_rule() -> None:
    """Vocabulary.category_for / .resolve, the service's key_for and the bot's WordIndex give
    the rule's answer; they differ only where a caller passes keys (« crayon », the wax crayon)."""
    from service.bot.word_index import WordIndex

    vocabulary = load_vocabulary()
    lookup = vocabulary.lookup
    bot = WordIndex(vocabulary.words.keys(), lookup)
    for language in ("en", "fr"):
        for word in expected(language):
            rule = lookup.category(word, "fr", keys_first=False)
            if rule is not None:
                assert vocabulary.category_for(word) == rule
            keys_first = lookup.category(word, "fr")
            resolved = vocabulary.resolve(word)
            assert (resolved.category if resolved is not None else None) == keys_first
            assert bot.key(word, language) == lookup.category(word, language)
    assert vocabulary.category_for("crayon") == "pencil" and bot.key("crayon") == "crayon"
    assert bot.key("Crayon", "fr") == "pencil" and bot.key("Crayon", "en") == "crayon"


def test_a_round_reads_its_candidates_each_label_to_the_word_naming_it_best() -> None:
    from service.bot.word_index import WordIndex

    vocabulary = load_vocabulary()
    bot = WordIndex(vocabulary.words.keys(), vocabulary.lookup)
    read = bot.candidates(["boat", "Canoe", "phone", "phones", "burger", "xyzzy", "xyzzy", "chat"], "en")
    assert read.spelling["canoe"] == "Canoe" and read.spelling["sailboat"] == "boat"
    assert read.spelling["hamburger"] == "burger" and read.spelling["cat"] == "chat"
    assert read.spelling["cell phone"] == read.spelling["telephone"] == "phone"  # the first sent
    assert read.siblings["cell phone"] == ("cell phone", "telephone")
    assert read.siblings["sailboat"] == ("sailboat", "speedboat", "cruise ship")  # the canoe is Canoe's
    assert read.unknown == ["xyzzy"]
    assert set(read.labels) == {"sailboat", "speedboat", "cruise ship", "canoe", "cell phone", "telephone",
                                "hamburger", "cat"}


def test_a_players_wrong_word_naming_several_categories_rules_out_only_its_own_candidate() -> None:
    from types import SimpleNamespace

    from service.bot.session import BotSession
    from service.bot.word_index import WordIndex

    vocabulary = load_vocabulary()
    bot = SimpleNamespace(words=WordIndex(vocabulary.words.keys(), vocabulary.lookup))
    phone = bot.words.keys("phone", "en")
    apart = bot.words.candidates(["cell phone", "telephone", "cat"], "en")  # the answer may be either
    rnd = SimpleNamespace(spelling=apart.spelling, language="en")
    assert BotSession._wrong(bot, rnd, phone) == ()
    together = bot.words.candidates(["phones", "cat"], "en")  # the room's own « phones »: ruled out
    rnd = SimpleNamespace(spelling=together.spelling, language="en")
    assert BotSession._wrong(bot, rnd, phone) == ("cell phone", "telephone")
    assert BotSession._wrong(bot, rnd, ("cat",)) == ("cat",)
