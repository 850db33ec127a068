"""Build the drawing pack the AI drawer ships with (``griffon data pack``).

Reads a Quick, Draw! folder through `training.data.load_dataset` with ``split="val"`` — the
validation split only, never a drawing the shipped recognizer trained on — keeps the words asked for
(default: every word of the two real decks), and writes each drawing in the dataset's simplified
form (integers 0–255; raw drawings go through `model.strokes.simplify_drawing`, the dataset's own
simplification; drawings read from the simplified files are kept as they are) to a gzip'd ndjson
file read by `games.ai.pack.DrawingPack`. Sorted by word then key_id, gzip mtime 0 and no file name
in the header, so building twice gives identical bytes.
"""

from __future__ import annotations

import gzip
import io
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:  # the heavy imports wait for a build, so `griffon --help` stays quick
    from training.data import DrawingRecord

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PACK = REPO_ROOT / "games" / "data" / "drawings" / "quickdraw-validation-pack.ndjson.gz"
PACK_COMMAND = "griffon data pack"


@dataclass
class PackSummary:
    """What a build wrote: drawings per word, words with none, skipped drawings, file size."""

    path: Path
    per_word: dict[str, int]
    missing: list[str]
    skipped: int
    size: int

    @property
    def drawings(self) -> int:
        """Drawings in the pack."""
        return sum(self.per_word.values())


def deck_words() -> list[str]:
    """Every category key of the real Kontour and Pictomania decks, sorted."""
    from vocab import kontour_deck, pictomania_deck  # noqa: PLC0415 - only the default needs vocab

    words = {w for card in kontour_deck() for w in card.words}
    words |= {w for card in pictomania_deck() for side in card.sides for w in side.words}
    return sorted(words)


def simplified_strokes(record: DrawingRecord) -> list:
    """The record's strokes in the dataset's simplified form: ``[[x...], [y...]]``, integers 0–255."""
    from model.strokes import simplify_drawing, to_quickdraw, validate_drawing  # noqa: PLC0415

    if record.source == "simplified":
        return [[[int(v) for v in stroke[0]], [int(v) for v in stroke[1]]] for stroke in record.strokes]
    return to_quickdraw(simplify_drawing(validate_drawing(record.strokes)), decimals=0)


def pack_lines(records: Iterable[DrawingRecord]) -> tuple[list[tuple[str, str]], int]:
    """``(word, JSON line)`` per drawing, sorted by word then key_id, and the number skipped as
    unusable (a drawing the simplification refuses)."""
    from model.strokes import DrawingError  # noqa: PLC0415

    lines, skipped = [], 0
    for record in sorted(records, key=lambda r: (r.word, r.key_id)):
        try:
            strokes = simplified_strokes(record)
        except DrawingError:
            skipped += 1
            continue
        item = {"key_id": record.key_id, "word": record.word, "recognized": record.recognized,
                "drawing": strokes}
        lines.append((record.word, json.dumps(item, separators=(",", ":"), ensure_ascii=False)))
    return lines, skipped


def write_gzip(path: Path, text: str) -> None:
    """Write ``text`` gzip'd with a fixed header (mtime 0, no file name): same text, same bytes."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as handle:
        handle.write(text.encode("utf-8"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())


def build_pack(
    root: Path | str | None, out: Path = DEFAULT_PACK, words: Iterable[str] | None = None
) -> PackSummary:
    """Write the validation drawings of ``words`` (default: both real decks) under ``root`` to ``out``.

    Words without a data file raise `training.data.DataError`."""
    from training.data import DataError, load_dataset  # noqa: PLC0415

    wanted = sorted(set(words) if words is not None else deck_words())
    if not wanted:
        raise DataError("no words to pack")
    records = load_dataset(root, split="val", categories=wanted)
    lines, skipped = pack_lines(records)
    write_gzip(Path(out), "".join(line + "\n" for _, line in lines))
    counts = Counter(word for word, _ in lines)
    per_word = {word: counts.get(word, 0) for word in wanted}
    missing = [word for word, n in per_word.items() if n == 0]
    return PackSummary(Path(out), per_word, missing, skipped, Path(out).stat().st_size)


def pack_command(
    data: Path = typer.Option(None, help="Quick, Draw! folder (default: the configured one)"),
    out: Path = typer.Option(DEFAULT_PACK, help="pack file to write"),
    words: str = typer.Option(None, help="comma-separated category keys (default: both real decks)"),
) -> None:
    """Write the AI drawer's pack: validation-split drawings of the deck words, simplified, gzip'd."""
    from training.data import DataError, default_data_root  # noqa: PLC0415

    try:
        summary = build_pack(data or default_data_root(), out, words.split(",") if words else None)
    except DataError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from error
    counts = sorted(summary.per_word.values())
    typer.echo(
        f"{summary.drawings} drawings of {len(counts)} words → {summary.path} ({summary.size} bytes); "
        f"per word: min {counts[0]}, median {counts[len(counts) // 2]}, max {counts[-1]}; "
        f"skipped {summary.skipped}"
    )
    if summary.missing:
        typer.echo(f"no validation drawing for: {', '.join(summary.missing)}")
