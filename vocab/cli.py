"""Command-line commands of this package (registered on the root `griffon` app).

- ``griffon match ANSWER GUESS [--table W1,W2] [--as key|word] [--json]``: the matcher's verdict.
- ``griffon vocab [words|kontour|pictomania] [--format table|json|csv]``: list or export.

Imports of the vocabulary and the lexicon stay inside the commands, so registering is cheap.
"""

from __future__ import annotations

import csv
import io
import json
from enum import StrEnum
from typing import Annotated

import typer


class What(StrEnum):
    """What ``griffon vocab`` lists."""

    words = "words"
    kontour = "kontour"
    pictomania = "pictomania"


class AnswerAs(StrEnum):
    """How ``griffon match`` reads ANSWER (see ``vocab.match``'s ``answer_kind``)."""

    key = "key"
    word = "word"


class Format(StrEnum):
    """Output format of ``griffon vocab``."""

    table = "table"
    json = "json"
    csv = "csv"


def _rows(what: What) -> tuple[list[str], list[dict[str, object]]]:
    from vocab.decks import kontour_deck, pictomania_deck
    from vocab.vocabulary import load_vocabulary

    vocab = load_vocabulary()
    if what is What.words:
        cols = [
            "category",
            "french",
            "gender",
            "synonyms",
            "variants",
            "everyday",
            "difficulty",
            "recognized_rate",
            "drawable",
        ]
        rows = [
            {
                "category": w.category,
                "french": w.with_article,
                "gender": w.gender,
                "synonyms": "|".join(w.synonyms),
                "variants": "|".join(w.variants),
                "everyday": "|".join(w.everyday),
                "difficulty": w.difficulty,
                "recognized_rate": w.recognized_rate,
                "drawable": w.drawable,
            }
            for w in vocab
        ]
        return cols, rows
    if what is What.kontour:
        cols = ["id", "top_blue", "top_orange", "bottom_blue", "bottom_orange"]
        rows = []
        for c in kontour_deck():
            row: dict[str, object] = {"id": c.id}
            for half in ("top", "bottom"):
                for colour in ("blue", "orange"):
                    row[f"{half}_{colour}"] = vocab.french(getattr(c.half(half), colour))
            rows.append(row)
        return cols, rows
    cols = ["card", "side", "level", "theme", *[str(i) for i in range(1, 8)]]
    rows = []
    for c in pictomania_deck():
        for s_i, side in enumerate(c.sides):
            row = {"card": c.id, "side": "AB"[s_i], "level": c.level, "theme": side.theme}
            row.update({str(i + 1): vocab.french(k) for i, k in enumerate(side.words)})
            rows.append(row)
    return cols, rows


def _render(cols: list[str], rows: list[dict[str, object]], fmt: Format) -> str:
    if fmt is Format.json:
        return json.dumps(rows, ensure_ascii=False, indent=1)
    if fmt is Format.csv:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return buf.getvalue().rstrip("\n")
    cells = [[str(r[c]) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(line.rstrip() for line in lines)


def register(app: typer.Typer) -> None:
    """Add this package's commands to the root `griffon` app."""

    @app.command("match")
    def match_cmd(
        answer: Annotated[str, typer.Argument(help="The word drawn: French word or category key.")],
        guess: Annotated[str, typer.Argument(help="What a player said or typed.")],
        table: Annotated[str, typer.Option(help="Other words on the table, comma-separated.")] = "",
        as_json: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")] = False,
        answer_as: Annotated[
            AnswerAs | None,
            typer.Option("--as", help="Read ANSWER (and the table) as a category key or a French word."),
        ] = None,
    ) -> None:
        """Say whether GUESS is an accepted answer for ANSWER, and why."""
        from vocab.matcher import REASONS, AmbiguousAnswerError, match
        from vocab.vocabulary import UnknownCategoryError

        others = [t.strip() for t in table.split(",") if t.strip()] or None
        try:
            m = match(answer, guess, table=others, answer_kind=answer_as.value if answer_as else None)
        except (AmbiguousAnswerError, UnknownCategoryError) as exc:
            typer.echo(f"error: {exc.args[0]}", err=True)
            raise typer.Exit(2) from None
        if as_json:
            typer.echo(
                json.dumps(
                    {
                        "answer": answer,
                        "guess": guess,
                        "accepted": m.accepted,
                        "reason": m.reason,
                        "category": m.category,
                        "normalized_guess": m.guess,
                        "other": m.other,
                        "distance": m.distance,
                    },
                    ensure_ascii=False,
                )
            )
            return
        verdict = "accepted" if m.accepted else "rejected"
        extra = f" (vs {m.other})" if m.other else ""
        typer.echo(f"{verdict}: {m.reason}{extra} — {REASONS[m.reason]}")

    @app.command("vocab")
    def vocab_cmd(
        what: Annotated[What, typer.Argument(help="What to list.")] = What.words,
        fmt: Annotated[Format, typer.Option("--format", help="Output format.")] = Format.table,
    ) -> None:
        """List the vocabulary or export a game deck."""
        cols, rows = _rows(what)
        typer.echo(_render(cols, rows, fmt))
