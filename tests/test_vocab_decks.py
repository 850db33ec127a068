"""Kontour and Pictomania decks: rules of the cards, measured colours, dealing a table."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from vocab import DeckError, deal_table, kontour_deck, load_vocabulary, pictomania_deck
from vocab.build_decks import build_kontour, too_close
from vocab.decks import PictomaniaDeckCard, read_kontour_deck


def test_kontour_deck_size_and_words() -> None:
    vocab = load_vocabulary()
    cards = kontour_deck()
    assert len(cards) >= 80
    for card in cards:
        assert len(set(card.words)) == 4, card
        assert all(vocab[k].drawable for k in card.words)
    uses = Counter(k for c in cards for k in c.words)
    assert max(uses.values()) == 1, "each word appears once in the deck"


def test_kontour_blue_is_easier_than_orange_by_measurement() -> None:
    vocab = load_vocabulary()
    for card in kontour_deck():
        for half in (card.top, card.bottom):
            blue, orange = vocab[half.blue], vocab[half.orange]
            assert blue.difficulty < orange.difficulty, (card.id, half)
            assert blue.recognized_rate >= orange.recognized_rate, (card.id, half)
    assert card.top.points("blue") == 1 and card.top.points("orange") == 2


def test_kontour_cards_never_pair_look_alikes() -> None:
    vocab = load_vocabulary()
    for card in kontour_deck():
        words = [vocab[k] for k in card.words]
        for i, a in enumerate(words):
            for b in words[i + 1 :]:
                assert not too_close(a, b), (card.id, a.word, b.word)


def test_kontour_generator_is_deterministic() -> None:
    vocab = load_vocabulary()
    assert build_kontour(vocab, 80, seed=7) == build_kontour(vocab, 80, seed=7)
    assert build_kontour(vocab, 80, seed=7) != build_kontour(vocab, 80, seed=8)


def test_kontour_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "deck.yaml"
    bad.write_text(
        "cards:\n  - {id: 1, top: {blue: cat, orange: cat}, bottom: {blue: dog, orange: toe}}\n",
        encoding="utf-8",
    )
    with pytest.raises(DeckError, match="twice"):
        read_kontour_deck(bad, load_vocabulary())
    bad.write_text(
        "cards:\n  - {id: 1, top: {blue: cat, orange: dinosaur}, bottom: {blue: dog, orange: toe}}\n",
        encoding="utf-8",
    )
    with pytest.raises(DeckError, match="dinosaur"):
        read_kontour_deck(bad, load_vocabulary())
    bad.write_text(
        "cards:\n  - {id: 1, top: {blue: cat, orange: trombone}, bottom: {blue: dog, orange: toe}}\n",
        encoding="utf-8",
    )
    with pytest.raises(DeckError, match="drawable"):
        read_kontour_deck(bad, load_vocabulary())


def test_pictomania_deck_shape() -> None:
    vocab = load_vocabulary()
    cards = pictomania_deck()
    sides = [s for c in cards for s in c.sides]
    assert len(sides) >= 60
    assert {c.level for c in cards} == {1, 2, 3, 4}
    for card in cards:
        assert len(card.sides) == 2
        for side in card.sides:
            assert side.theme and len(side.words) == 7 == len(set(side.words))
            assert side.level == card.level
            assert all(vocab[k].drawable for k in side.words)
            assert side.word(1) == side.words[0] and side.word(7) == side.words[6]
    assert len({c.id for c in cards}) == len(cards)
    with pytest.raises(DeckError):
        sides[0].word(8)


@pytest.mark.parametrize("levels", [1, 2, 3, 4, (1, 2), (1, 2, 3, 4)])
def test_deal_table_never_shows_a_word_twice(levels: int | tuple[int, ...]) -> None:
    wanted = {levels} if isinstance(levels, int) else set(levels)
    for seed in range(150):
        table = deal_table(levels, random.Random(seed))
        words = [w for side in table for w in side.words]
        assert len(table) == 6
        assert len(words) == len(set(words)) == 42
        assert {side.level for side in table} <= wanted


def test_deal_table_is_reproducible_and_varied() -> None:
    first = deal_table(2, random.Random(1))
    assert deal_table(2, random.Random(1)) == first
    themes = {tuple(s.theme for s in deal_table(2, random.Random(seed))) for seed in range(20)}
    assert len(themes) > 5


def test_deal_table_reports_impossible_tables() -> None:
    side = {"theme": "t", "words": ["cat", "dog", "cow", "pig", "hat", "sun", "eye"]}
    clones = [PictomaniaDeckCard.model_validate({"id": i, "level": 1, "sides": [side, side]})
              for i in range(6)]
    with pytest.raises(DeckError, match="repeated word"):
        deal_table(1, random.Random(0), cards=clones)
    with pytest.raises(DeckError):
        deal_table(5, random.Random(0))
    with pytest.raises(DeckError):
        deal_table(1, random.Random(0), n=0)
    with pytest.raises(DeckError):
        deal_table(1, random.Random(0), n=9)  # only 8 cards of level 1
