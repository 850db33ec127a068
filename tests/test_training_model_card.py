"""`python -m training.model_card`: recompute a checkpoint's metrics and rewrite its card."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import torch

from training.model_card import refresh


def test_refresh_rewrites_the_card_and_leaves_the_checkpoint_alone(
    tiny_checkpoint: Path, fixture_data: Path, tmp_path: Path
) -> None:
    model = tmp_path / "model.pt"
    shutil.copy(tiny_checkpoint, model)
    before = hashlib.sha256(model.read_bytes()).hexdigest()
    metrics = refresh(model, fixture_data, cache=tmp_path / "cache")
    assert hashlib.sha256(model.read_bytes()).hexdigest() == before  # derived copies stay valid
    card = (tmp_path / "MODEL_CARD.md").read_text()
    deck = f"{100 * metrics['kontour_deck_top1']:.1f} %"
    assert "Kontour as played" in card and deck in card
    assert "**Training.** `griffon train --preset tiny --data " in card  # the command that made it
    assert "pictomania_top1" not in metrics  # four shapes: the Pictomania deck's words are unknown
    assert "| Pictomania as played: a dealt table, 6 cards × 7 related words | — | — |" in card
    stored = refresh(model, fixture_data, cache=tmp_path / "cache", store=True)
    assert torch.load(model, weights_only=True)["metrics"]["kontour_deck_top1"] == stored["kontour_deck_top1"]
