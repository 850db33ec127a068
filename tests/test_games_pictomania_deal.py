"""The Pictomania deal with the real double-sided cards (RULES.md "Round setup").

Tables are laid from whole cards (one side each, never both sides of one card), with no word
shown twice, of the level of each round (config ``levels_per_round``, default 1, 2, 2, 3, 4), and
every player gets a distinct symbol and number, hence a distinct word, for 3 to 6 players.
"""

from __future__ import annotations

import pytest

from games.core import BadSetup
from games.pictomania import PictomaniaConfig, PictomaniaRules
from games.words import load_game_words, pictomania_deck
from vocab import PictomaniaDeckCard
from vocab import pictomania_deck as real_deck

SEEDS = range(40)


def card_of(words: tuple[str, ...], deck: tuple[PictomaniaDeckCard, ...]) -> int:
    """The id of the physical card one of whose sides lists `words`."""
    (found,) = [c.id for c in deck for s in c.sides if s.words == words]
    return found


@pytest.mark.parametrize("players", [3, 4, 5, 6])
def test_tables_are_whole_cards_with_no_word_twice_and_distinct_words_per_player(players: int) -> None:
    deck = real_deck()
    rules = PictomaniaRules()
    config = rules.config
    ids = [f"p{i}" for i in range(players)]
    for seed in SEEDS:
        state, _ = rules.setup(players=ids, deck=list(deck), seed=seed)
        assert len(state.round_cards) == config.rounds
        for number, cards in enumerate(state.round_cards, start=1):
            level = config.levels_per_round[number - 1]
            assert len(cards) == config.cards_per_round
            assert {c.level for c in cards} == {level}, (seed, number)
            physical = [card_of(c.words, deck) for c in cards]
            assert len(set(physical)) == len(physical), f"both faces of one card (seed {seed})"
            words = [w for c in cards for w in c.words]
            assert len(set(words)) == len(words), f"a word twice on a table (seed {seed})"
            assert all(c.theme for c in cards)  # real sides keep their theme
        dealt = [state.round.word(p) for p in ids]
        assert len(set(dealt)) == players


def test_levels_per_round_come_from_the_config() -> None:
    rules = PictomaniaRules(PictomaniaConfig.load(rounds=3, levels_per_round=[4, 3, 1]))
    state, _ = rules.setup(players=["a", "b", "c"], deck=list(real_deck()), seed=1)
    assert [cards[0].level for cards in state.round_cards] == [4, 3, 1]


def test_a_level_played_twice_prefers_cards_not_shown_yet() -> None:
    deck = real_deck()
    per_level = sum(1 for c in deck if c.level == 2)
    rules = PictomaniaRules()  # rounds 2 and 3 are both level 2
    for seed in SEEDS:
        state, _ = rules.setup(players=["a", "b", "c"], deck=list(deck), seed=seed)
        second = {card_of(c.words, deck) for c in state.round_cards[1]}
        third = {card_of(c.words, deck) for c in state.round_cards[2]}
        assert len(second & third) <= max(0, 2 * rules.config.cards_per_round - per_level)


def test_a_card_that_comes_back_shows_its_other_side() -> None:
    """Rounds 2 and 3 are both level 2: a card laid again is flipped to its side not seen yet."""
    deck = real_deck()
    rules = PictomaniaRules()
    came_back = 0
    for seed in SEEDS:
        state, _ = rules.setup(players=["a", "b", "c"], deck=list(deck), seed=seed)
        shown: set[tuple[str, ...]] = set()
        for cards in state.round_cards:
            again = [c.words for c in cards if card_of(c.words, deck) in {card_of(w, deck) for w in shown}]
            came_back += len(again)
            assert not shown & set(again), f"a side shown twice (seed {seed})"
            shown |= {c.words for c in cards}
    assert came_back > 0  # the level-2 cards are too few for two rounds: some do come back


def test_same_seed_same_tables_and_a_level_without_enough_cards_is_refused() -> None:
    rules = PictomaniaRules()
    a, _ = rules.setup(players=["a", "b", "c"], deck=list(real_deck()), seed=9)
    b, _ = rules.setup(players=["a", "b", "c"], deck=list(real_deck()), seed=9)
    assert a.round_cards == b.round_cards
    few = [c for c in real_deck() if c.level != 4]
    with pytest.raises(BadSetup, match="level-4"):
        rules.setup(players=["a", "b", "c"], deck=few, seed=9)


def test_the_adapter_gives_the_engine_the_real_cards_when_every_word_is_drawable() -> None:
    words = load_game_words()
    everything = {w for c in words.picto_cards for s in c.sides for w in s.words}
    deck, config = pictomania_deck(words.picto_cards, everything, PictomaniaConfig.load(), seed=3)
    assert deck == list(real_deck()) and config == PictomaniaConfig.load()
    missing_one = everything - {"tree"}
    synthetic, config = pictomania_deck(words.picto_cards, missing_one, PictomaniaConfig.load(), 3)
    assert all("tree" not in c.words for c in synthetic)
    assert config.levels_per_round == (1, 2, 3, 4, 5)
