"""Command-line commands of this package (registered on the root `griffon` app)."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer


class GameName(StrEnum):
    kontour = "kontour"
    pictomania = "pictomania"


class _Vocab:
    """What the simulation borrows from `vocab` when it is installed (else plain fallbacks)."""

    def __init__(self) -> None:
        from games.ai.base import identity_french, no_relations, relations_from_groups

        self.to_french, self.related, self.judge = identity_french, no_relations, None
        self.drawable: set[str] | None = None
        self.kontour: list[Any] = []
        self.pictomania: list[Any] = []
        try:
            import vocab

            vocabulary = vocab.load_vocabulary()
            sides = [side for card in vocab.pictomania_deck() for side in card.sides]
            kontour = vocab.kontour_deck()
        except (ImportError, AttributeError, ValueError, KeyError, TypeError):
            return
        from games.kontour import KontourCard, WordPair
        from games.pictomania import PictoCard

        self.to_french = vocabulary.french
        self.drawable = {w.category for w in vocabulary.drawable()}
        self.related = relations_from_groups(side.words for side in sides)
        self.judge = lambda key, text: vocab.match(key, text).accepted
        self.kontour = [
            KontourCard(
                top=WordPair(blue=c.top.blue, orange=c.top.orange),
                bottom=WordPair(blue=c.bottom.blue, orange=c.bottom.orange),
            )
            for c in kontour
        ]
        self.pictomania = [PictoCard(level=side.level, words=side.words) for side in sides]

    def kontour_deck(self, drawable: set[str]) -> list[Any] | None:
        """The real Kontour deck, keeping cards whose both halves have a drawable word (None:
        fewer than 10 such cards, use a synthetic deck)."""
        cards = [
            c
            for c in self.kontour
            if all(h.blue in drawable or h.orange in drawable for h in (c.top, c.bottom))
        ]
        return cards if len(cards) >= 10 else None

    def pictomania_deck(self, drawable: set[str]) -> list[Any] | None:
        """The real Pictomania deck when every word on it can be drawn (else None)."""
        if self.pictomania and all(w in drawable for c in self.pictomania for w in c.words):
            return self.pictomania
        return None


def simulate(
    game: Annotated[GameName, typer.Argument(help="kontour or pictomania")],
    games: Annotated[int, typer.Option("--games", "-n", min=1, help="number of games")] = 5,
    seed: Annotated[int, typer.Option("--seed", "-s", help="same seed, same games")] = 0,
    level: Annotated[str, typer.Option("--level", "-l", help="easy, normal, hard or all")] = (
        "normal"
    ),
    players: Annotated[int, typer.Option("--players", "-p", help="default 3 / 4")] = 0,
    data: Annotated[
        Path | None, typer.Option("--data", help="Quick, Draw! folder (validation drawings)")
    ] = None,
    lines_only: Annotated[
        bool, typer.Option("--lines-only", help="draw only the shipped line drawings")
    ] = False,
    weights: Annotated[
        Path | None, typer.Option("--weights", help="checkpoint (default: shipped)")
    ] = None,
    independent: Annotated[
        bool, typer.Option("--independent", help="Pictomania: no joint reasoning")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the full report as JSON")] = False,
) -> None:
    """Play AI-vs-AI games headless with the real recognizer and print how the AI does."""
    from games.ai import ShippedLineDrawings, default_source, level_names, load_level
    from games.ai.levels import AILevelError
    from games.simulate import SimulationError, simulate_kontour, simulate_pictomania

    try:
        names = level_names() if level == "all" else [load_level(level).name]
    except AILevelError as error:
        raise typer.BadParameter(str(error), param_hint="--level") from error
    try:
        from model import Guesser

        guesser = Guesser.load(weights)
    except Exception as error:  # noqa: BLE001 - any load failure is reported the same way
        typer.echo(f"cannot load the recognizer: {error}", err=True)
        raise typer.Exit(2) from error
    words = _Vocab()
    if lines_only:
        source = ShippedLineDrawings()
    else:
        if data is not None and not data.is_dir():
            raise typer.BadParameter(f"{data} is not a folder", param_hint="--data")
        source = default_source(data, categories=None)
    allowed = set(guesser.labels)
    if words.drawable is not None:
        allowed &= words.drawable
    source = _Restricted(source, allowed)  # words the model knows (and the vocabulary allows)
    drawable = {k for k in source.keys() if source.drawings(k)}
    reports = []
    try:
        for name in names:
            lvl = load_level(name)
            if game is GameName.kontour:
                report = simulate_kontour(
                    guesser, source, lvl, games=games, seed=seed, players=players or 3,
                    deck=words.kontour_deck(drawable), to_french=words.to_french,
                    related=words.related, judge=words.judge,
                )
            else:
                report = simulate_pictomania(
                    guesser, source, lvl, games=games, seed=seed, players=players or 4,
                    deck=words.pictomania_deck(drawable), joint=not independent,
                )
            reports.append(report)
    except SimulationError as error:
        typer.echo(f"simulation impossible: {error}", err=True)
        raise typer.Exit(2) from error
    if as_json:
        payload = [r.to_dict() for r in reports]
        typer.echo(json.dumps(payload if len(payload) > 1 else payload[0], indent=2))
        return
    _print_table(game.value, [r.summary() for r in reports], seed)


class _Restricted:
    """A drawing source limited to some words (the model's labels, the drawable vocabulary)."""

    def __init__(self, source: Any, allowed: set[str]) -> None:
        self.source, self.allowed = source, allowed

    def keys(self) -> set[str]:
        return {k for k in self.source.keys() if k in self.allowed}

    def drawings(self, key: str) -> list:
        return self.source.drawings(key) if key in self.allowed else []


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _print_table(game: str, summaries: list[dict[str, Any]], seed: int) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"griffon simulate {game} (seed {seed})")
    table.add_column("figure")
    for s in summaries:
        table.add_column(str(s["level"]), justify="right")
    for key in summaries[0]:
        if key == "level":
            continue
        table.add_row(key, *(_fmt(s[key]) for s in summaries))
    Console().print(table)


def register(app: typer.Typer) -> None:
    """Add this package's commands to the root `griffon` app."""
    app.command("simulate")(simulate)
