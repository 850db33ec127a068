"""Build the drawing pack the AI drawer ships with (``griffon data pack``).

Reads a Quick, Draw! folder through `training.data.load_dataset` with ``split="val"`` — the
validation split only, never a drawing the shipped recognizer trained on — keeps the words asked for
(default: every word of the two real decks), at most ``--per-word`` of each (32: recognized
drawings first, then by `training.data.key_hash`), and writes each drawing in the dataset's simplified
form (integers 0–255; raw drawings go through `model.strokes.simplify_drawing`, the dataset's own
simplification; drawings read from the simplified files are kept as they are) to a gzip'd ndjson
file read by `games.ai.drawing_pack.DrawingPack`. Sorted by word then key_id, gzip mtime 0 and no file name
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
    from games.ai.drawing_pack import PackedDrawing
    from training.data import DrawingRecord

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PACK = REPO_ROOT / "games" / "data" / "drawings" / "quickdraw-validation-pack.ndjson.gz"
DEFAULT_PER_WORD = 32  # bounds the pack when the data folder grows (the full dataset has ~10,000 a word)


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
    from vocab import kontour_deck, pictomania_deck  # only the default needs vocab

    words = {w for card in kontour_deck() for w in card.words}
    words |= {w for card in pictomania_deck() for side in card.sides for w in side.words}
    return sorted(words)


def simplified_strokes(record: DrawingRecord) -> list:
    """The record's strokes in the dataset's simplified form: ``[[x...], [y...]]``, integers 0–255."""
    from model.strokes import simplify_drawing, to_quickdraw, validate_drawing

    if record.source == "simplified":
        return [[[int(v) for v in stroke[0]], [int(v) for v in stroke[1]]] for stroke in record.strokes]
    return to_quickdraw(simplify_drawing(validate_drawing(record.strokes)), decimals=0)


def packed_drawings(records: Iterable[DrawingRecord]) -> tuple[list[PackedDrawing], int]:
    """The records in the pack's format (`games.ai.drawing_pack.PackedDrawing`), and how many were skipped
    as unusable: refused by the simplification or by the pack's own reader (too many strokes…)."""
    from games.ai.drawing_pack import DrawingPackError, PackedDrawing, parse_line
    from model.strokes import DrawingError

    out, skipped = [], 0
    for record in records:
        try:
            drawing = PackedDrawing(record.key_id, record.word, record.recognized, simplified_strokes(record))
            parse_line(pack_line(drawing))  # what DrawingPack.load would refuse is left out
        except (DrawingError, DrawingPackError):
            skipped += 1
            continue
        out.append(drawing)
    return out, skipped


def pack_line(drawing: PackedDrawing) -> str:
    """One line of the pack file (compact JSON)."""
    return json.dumps(drawing.as_json(), separators=(",", ":"), ensure_ascii=False)


def write_gzip(path: Path, text: str) -> None:
    """Write ``text`` gzip'd with a fixed header (mtime 0, no file name): same text, same bytes."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as handle:
        handle.write(text.encode("utf-8"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())


def keep_per_word(drawings: Iterable[PackedDrawing], per_word: int) -> list[PackedDrawing]:
    """At most ``per_word`` drawings of each word: recognized ones first, then by `key_hash` (stable
    whatever order the files list them in); sorted by word then key_id."""
    from training.data import key_hash

    by_word: dict[str, list[PackedDrawing]] = {}
    for drawing in drawings:
        by_word.setdefault(drawing.word, []).append(drawing)
    kept = []
    for found in by_word.values():
        found.sort(key=lambda d: (not d.recognized, key_hash(d.key_id), d.key_id))
        kept.extend(found[:per_word])
    return sorted(kept, key=lambda d: (d.word, d.key_id))


def build_pack(
    root: Path | str | None,
    out: Path = DEFAULT_PACK,
    words: Iterable[str] | None = None,
    per_word: int = DEFAULT_PER_WORD,
) -> PackSummary:
    """Write at most ``per_word`` validation drawings of each of ``words`` (default: both real decks)
    under ``root`` to ``out``. Words without a data file raise `training.data.DataError`."""
    from training.data import DataError, load_dataset

    wanted = sorted(set(words) if words is not None else deck_words())
    if not wanted:
        raise DataError("no words to pack")
    if per_word < 1:
        raise DataError(f"per_word must be at least 1, got {per_word}")
    usable, skipped = packed_drawings(load_dataset(root, split="val", categories=wanted))
    kept = keep_per_word(usable, per_word)
    write_gzip(Path(out), "".join(pack_line(drawing) + "\n" for drawing in kept))
    counts = Counter(drawing.word for drawing in kept)
    per_word = {word: counts.get(word, 0) for word in wanted}
    missing = [word for word, n in per_word.items() if n == 0]
    return PackSummary(Path(out), per_word, missing, skipped, Path(out).stat().st_size)


@dataclass
class Accuracy:
    """The shipped recognizer's top-1 / top-3 over all 345 labels, whole and Kontour-style drawings."""

    drawings: int
    top1: float
    top3: float
    kontour_top1: float


def accuracy(guesser: object, drawings: list, labels: list[str]) -> Accuracy:
    """Top-1 and top-3 of ``guesser`` (a `model.Guesser`) on ``drawings``, and top-1 on their Kontour
    form (at most 15 straight lines, `model.strokes.straight_lines`)."""
    from model.strokes import DrawingError, straight_lines, to_quickdraw, validate_drawing

    def lines(drawing: list) -> list:
        try:
            return to_quickdraw(straight_lines(validate_drawing(drawing), 15), decimals=3)
        except DrawingError:
            return drawing

    top1 = top3 = kontour = 0
    for start in range(0, len(drawings), 256):
        batch, truth = drawings[start : start + 256], labels[start : start + 256]
        whole = guesser.guess_batch(batch, top_k=3)
        lined = guesser.guess_batch([lines(d) for d in batch], top_k=1)
        for guesses, kontour_guesses, label in zip(whole, lined, truth, strict=True):
            top1 += guesses[0].label == label
            top3 += label in [g.label for g in guesses]
            kontour += kontour_guesses[0].label == label
    n = max(len(labels), 1)
    return Accuracy(len(labels), top1 / n, top3 / n, kontour / n)


def measure_pack(path: Path = DEFAULT_PACK, seeds: Iterable[int] = (0, 1, 2)) -> dict[str, Accuracy]:
    """The shipped recognizer on the pack: the recognized drawings (what the AI draws), the others,
    and one varied copy of each recognized drawing per seed (`games.ai.drawing_pack.vary`)."""
    import random

    from games.ai.drawing_pack import DrawingPack, read_pack, vary
    from model import Guesser

    guesser = Guesser.load()
    pack = DrawingPack(read_pack(path), recognized_only=False)
    records = [r for word in pack.keys() for r in pack.records(word)]
    shown = [r for r in records if r.recognized]
    others = [r for r in records if not r.recognized]
    out = {
        "recognized": accuracy(guesser, [r.strokes for r in shown], [r.word for r in shown]),
        "not recognized": accuracy(guesser, [r.strokes for r in others], [r.word for r in others]),
    }
    for seed in seeds:
        rng = random.Random(seed)
        varied = [vary(r.strokes, rng) for r in shown]
        out[f"varied (seed {seed})"] = accuracy(guesser, varied, [r.word for r in shown])
    return out


def pack_command(
    data: Path = typer.Option(None, help="Quick, Draw! folder (default: the configured one)"),
    out: Path = typer.Option(DEFAULT_PACK, help="pack file to write"),
    words: str = typer.Option(None, help="comma-separated category keys (default: both real decks)"),
    per_word: int = typer.Option(DEFAULT_PER_WORD, min=1, max=10_000, help="at most this many a word"),
    measure: bool = typer.Option(False, help="do not build: measure the shipped model on the pack at --out"),
) -> None:
    """Write the AI drawer's pack: validation-split drawings of the deck words, simplified, gzip'd."""
    from training.data import DataError, default_data_root

    if measure:
        for name, result in measure_pack(out).items():
            typer.echo(
                f"{name:>16}: {result.drawings:5d} drawings  top-1 {result.top1:.1%}  "
                f"top-3 {result.top3:.1%}  kontour top-1 {result.kontour_top1:.1%}"
            )
        return
    try:
        summary = build_pack(default_data_root(data), out, words.split(",") if words else None, per_word)
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
