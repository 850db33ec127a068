"""`griffon simulate`: AI-vs-AI games with the real recognizer (registered on the root `griffon` app).

This is a composition root: it loads the model (`model/`), the vocabulary adapter (`games.words`)
and the drawing pack, and hands them to the pure simulator (`games.simulator`), which imports
neither `model/` nor `training/`.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer


class GameName(StrEnum):
    kontour = "kontour"
    pictomania = "pictomania"


def simulate(
    game: Annotated[GameName, typer.Argument(help="kontour or pictomania")],
    games: Annotated[int, typer.Option("--games", "-n", min=1, help="number of games")] = 5,
    seed: Annotated[int, typer.Option("--seed", "-s", help="same seed, same games")] = 0,
    level: Annotated[str, typer.Option("--level", "-l", help="easy, normal, hard or all")] = (
        "normal"
    ),
    players: Annotated[int, typer.Option("--players", "-p", help="default 3 / 4")] = 0,
    pack: Annotated[
        Path | None, typer.Option("--pack", help="drawing pack file (default: the shipped pack)")
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
    person_line_s: Annotated[
        float | None,
        typer.Option("--person-line-s", help="Kontour: a scripted person draws a line every this many "
                     "seconds in one seat; only their turns are reported"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the full report as JSON")] = False,
    distributions: Annotated[
        bool, typer.Option("--distributions", help="also print the pacing quantiles")
    ] = False,
) -> None:
    """Play AI-vs-AI games headless with the real recognizer and print how the AI does."""
    from games.ai import AIKit, ShippedLineDrawings, default_source, level_names, load_level
    from games.ai.levels import AILevelError
    from games.simulator import SimulationError, simulate_kontour, simulate_pictomania
    from games.words import DeckSetupError, kontour_deck, load_game_words, pictomania_deck

    if person_line_s is not None and game is not GameName.kontour:
        raise typer.BadParameter("a scripted person draws in Kontour only", param_hint="--person-line-s")
    try:
        names = level_names() if level == "all" else [load_level(level).name]
    except AILevelError as error:
        raise typer.BadParameter(str(error), param_hint="--level") from error
    try:
        from model import Guesser
        from model.strokes import straight_lines

        guesser = Guesser.load(weights)
    except Exception as error:  # any load failure is reported the same way
        typer.echo(f"cannot load the recognizer: {error}", err=True)
        raise typer.Exit(2) from error
    words = load_game_words()
    if pack is not None and not pack.is_file():
        raise typer.BadParameter(f"{pack} is not a file", param_hint="--pack")
    source = ShippedLineDrawings() if lines_only else default_source(pack)
    # words the model knows and the vocabulary allows drawing
    source = _Restricted(source, set(guesser.labels) & words.drawable)
    drawable = {k for k in source.keys() if source.drawings(k)}
    kit = AIKit(source, straight_lines, words.french, words.related, words.key_for)
    reports = []
    try:
        for name in names:
            lvl = load_level(name)
            if game is GameName.kontour:
                from games.kontour import KontourConfig

                cards, half = kontour_deck(words.kontour_cards, drawable, seed)
                report = simulate_kontour(
                    guesser, kit, lvl, games=games, seed=seed, players=players or 3,
                    deck=cards, config=KontourConfig.load(half=half), judge=words.judge,
                    person_line_s=person_line_s,
                )
            else:
                from games.pictomania import PictomaniaConfig

                deck, config = pictomania_deck(words.picto_cards, drawable, PictomaniaConfig.load(), seed)
                report = simulate_pictomania(
                    guesser, kit, lvl, games=games, seed=seed, players=players or 4,
                    deck=deck, config=config, joint=not independent,
                )
            reports.append(report)
    except (SimulationError, DeckSetupError) as error:
        typer.echo(f"simulation impossible: {error}", err=True)
        raise typer.Exit(2) from error
    if as_json:
        payload = [r.to_dict() for r in reports]
        typer.echo(json.dumps(payload if len(payload) > 1 else payload[0], indent=2))
        return
    _print_table(game.value, [r.summary() for r in reports], seed)
    if distributions:
        typer.echo(json.dumps({r.level: r.distributions() for r in reports}, indent=2))


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
