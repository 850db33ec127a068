"""Every metric of one evaluated model (the ``metrics`` object of ``report.json``), game conditions
included: Kontour style restricted to the Kontour deck's words, and real Pictomania tables."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from training.eval_data import EvalData
from training.eval_models import ModelUnderTest
from training.eval_predict import ModelOutputs
from training.eval_settings import FULL, KONTOUR, EvalSettings
from training.metrics import (
    calibration,
    confused_pairs,
    map_at_k,
    per_class_counts,
    per_row_table_top1,
    restricted_topk,
    table_accuracies,
)

PICTOMANIA_DEALS = 200  # tables dealt per (level, seed) before each drawing picks one holding its word


def model_metrics(
    model: ModelUnderTest, out: ModelOutputs, data: EvalData, valid: np.ndarray, settings: EvalSettings
) -> dict[str, Any]:
    """Every metric of one model (the ``metrics`` object of ``report.json``)."""
    truth, probs = out.labels, out.full
    ranks = out.ranks[FULL]
    tables = table_accuracies(probs, truth, settings.table_size, settings.table_seeds)
    calib = calibration(probs, truth, settings.calibration_bins)
    games = {
        "kontour_deck": kontour_deck_metrics(model.labels, truth, out.kontour),
        "pictomania": pictomania_metrics(model.labels, truth, probs, settings),
    }
    headline = {
        "drawings": int(len(truth)),
        "top1": float((ranks == 1).mean()),
        "top3": float((ranks <= 3).mean()),
        "map3": map_at_k(probs, truth, 3),
        "kontour_top1": float((out.ranks[KONTOUR] == 1).mean()),
        "kontour_top3": float((out.ranks[KONTOUR] <= 3).mean()),
        "half_top1": float((out.ranks["f0.5"] == 1).mean()) if "f0.5" in out.ranks else None,
        f"table{settings.table_size}_top1": float(np.mean(list(tables.values()))),
        "kontour_deck_top1": games["kontour_deck"]["top1"],
        "kontour_deck_top3": games["kontour_deck"]["top3"],
        "pictomania_top1": games["pictomania"]["top1"],
        "ece": calib["ece"],
        "mean_confidence": float(probs.max(axis=1).mean()),
        "mean_true_probability": float(probs[np.arange(len(truth)), truth].mean()),
    }
    curve = [
        {
            "fraction": fraction,
            "top1": float((out.ranks[f"f{fraction:.1f}"] == 1).mean()),
            "top3": float((out.ranks[f"f{fraction:.1f}"] <= 3).mean()),
        }
        for fraction in settings.fractions
    ]
    counts = per_class_counts(probs, truth, len(model.labels), 3)
    per_category = {
        model.labels[c]: {
            "count": int(counts["count"][c]),
            "top1": counts["top1"][c] / counts["count"][c],
            "top3": counts["top3"][c] / counts["count"][c],
        }
        for c in sorted(set(truth.tolist()), key=lambda c: model.labels[c])
    }
    valid_keys = [key for key, ok in zip(data.key_ids, valid, strict=True) if ok]
    predicted = np.argmax(probs, axis=1)
    pairs = []
    for true, guess, count in confused_pairs(probs, truth, settings.top_pairs):
        where = np.flatnonzero((truth == true) & (predicted == guess))[: settings.examples_per_pair]
        pairs.append(
            {
                "true": model.labels[true],
                "predicted": model.labels[guess],
                "count": int(count),
                "share_of_true": count / int(counts["count"][true]),
                "examples": [valid_keys[i] for i in where],
            }
        )
    return {
        "headline": headline,
        "table_by_seed": {str(seed): value for seed, value in tables.items()},
        "game_conditions": games,
        "strokes_curve": curve,
        "per_category": per_category,
        "confused_pairs": pairs,
        "calibration": calib,
    }


# -- game conditions ------------------------------------------------------------------------------


def kontour_deck_metrics(labels: list[str], truth: np.ndarray, kontour_probs: np.ndarray) -> dict[str, Any]:
    """Kontour as the AI guesser plays it: Kontour-style drawings (≤ 15 straight lines), answers
    restricted to the Kontour deck's words, over the drawings of those words."""
    from vocab import kontour_deck

    deck = {word for card in kontour_deck() for word in card.words}
    index = {label: i for i, label in enumerate(labels)}
    candidates = np.array(sorted(index[w] for w in deck if w in index), dtype=np.int64)
    rows = np.isin(truth, candidates)
    return {
        "words": len(candidates),
        "deck_words_unknown_to_model": len(deck - index.keys()),
        "drawings": int(rows.sum()),
        "top1": restricted_topk(kontour_probs, truth, candidates, 1),
        "top3": restricted_topk(kontour_probs, truth, candidates, 3),
    }


def pictomania_tables(
    words: Sequence[str], level: int, seed: int, deals: int = PICTOMANIA_DEALS, cards: Sequence | None = None
) -> list[tuple[str, ...] | None]:
    """One real Pictomania table (6 dealt card sides of one level, 7 related words each:
    ``vocab.deal_table``) holding each word, or ``None`` for a word not on that level's cards.

    At least ``deals`` tables are dealt (more until every word of the level is on one); each word
    then gets one of the tables that hold it, picked at random. Fixed by ``(level, seed)``.
    """
    from vocab import deal_table, pictomania_deck

    cards = cards if cards is not None else pictomania_deck()
    on_level = {w for card in cards if card.level == level for side in card.sides for w in side.words}
    rng = random.Random(f"pictomania:{level}:{seed}")
    holding: dict[str, list[tuple[str, ...]]] = {}
    dealt = 0
    while dealt < deals or (on_level - holding.keys() and dealt < 50 * deals):
        table = tuple(word for side in deal_table(level, rng, cards=cards) for word in side.words)
        for word in table:
            holding.setdefault(word, []).append(table)
        dealt += 1
    return [rng.choice(holding[w]) if w in holding else None for w in words]


def pictomania_metrics(
    labels: list[str], truth: np.ndarray, probs: np.ndarray, settings: EvalSettings
) -> dict[str, Any]:
    """Pictomania as it is played: top-1 among the 42 words of a dealt table (6 cards of 7 related
    words, one level), for the drawings whose word is on that level's cards; every level and seed of
    ``settings``. ``top1`` pools every (level, seed, drawing). ``None`` when the model lacks a deck word."""
    from vocab import pictomania_deck

    index = {label: i for i, label in enumerate(labels)}
    deck_words = {w for card in pictomania_deck() for side in card.sides for w in side.words}
    unknown = sorted(deck_words - index.keys())
    if unknown:
        return {"top1": None, "unknown_deck_words": len(unknown), "levels": {}, "by_seed": {}}
    names = [labels[i] for i in truth]
    by_level, by_seed = {}, {str(seed): [0, 0] for seed in settings.pictomania_seeds}
    hits = total = 0
    for level in settings.pictomania_levels:
        level_hits = level_total = 0
        for seed in settings.pictomania_seeds:
            tables = pictomania_tables(names, level, seed)
            rows = np.array([t is not None for t in tables], dtype=bool)
            chosen = [np.array([index[w] for w in t]) for t in tables if t is not None]
            right = int(per_row_table_top1(probs[rows], truth[rows], chosen).sum())
            level_hits, level_total = level_hits + right, level_total + int(rows.sum())
            by_seed[str(seed)][0] += right
            by_seed[str(seed)][1] += int(rows.sum())
        by_level[str(level)] = {
            "drawings": level_total // len(settings.pictomania_seeds),
            "top1": level_hits / level_total if level_total else None,
        }
        hits, total = hits + level_hits, total + level_total
    return {
        "table_size": 42,
        "top1": hits / total if total else None,
        "levels": by_level,
        "by_seed": {seed: (h / n if n else None) for seed, (h, n) in by_seed.items()},
    }
