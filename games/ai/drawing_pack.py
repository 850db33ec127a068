"""The drawing pack shipped with Griffon: real Quick, Draw! drawings for the AI drawer.

``games/data/drawings/quickdraw-validation-pack.ndjson.gz`` holds simplified Quick, Draw!
drawings (strokes ``[[x...], [y...]]``, integers 0–255) of the **validation split** only — the
shipped recognizer never trained on them — for every word of the two real decks. One JSON object a
line, in the dataset's own simplified format: ``{"key_id", "word", "recognized", "drawing"}``.
It is built by ``griffon data pack`` (``training/pack.py``); licence and selection:
``games/data/drawings/ATTRIBUTION.md`` (Quick, Draw! Dataset by Google, CC BY 4.0).

`DrawingPack` is a `games.ai.drawer.DrawingSource`. The validation split has only a few drawings of
each word, so `vary` makes each meeting with a word different: a mild random affine transform and a
small per-stroke shift and per-point jitter, drawn from the caller's ``random.Random`` (pure, seeded).

This module imports nothing from ``training/`` or ``model/``.
"""

from __future__ import annotations

import gzip
import json
import math
import random
import zlib
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from games.ai.base import Drawing
from games.ai.levels import DATA_DIR

PACK_DIR = DATA_DIR / "drawings"
PACK_FILE = PACK_DIR / "quickdraw-validation-pack.ndjson.gz"
MAX_PACK_BYTES = 64 * 1024 * 1024  # decompressed; the shipped pack is far smaller
MAX_STROKES = 200
MAX_POINTS = 2000
COORD_MAX = 255


class DrawingPackError(ValueError):
    """A drawing pack that is missing, too large or malformed."""


@dataclass(frozen=True)
class PackedDrawing:
    """One drawing of the pack: its dataset ``key_id``, category key, ``recognized`` flag, strokes."""

    key_id: str
    word: str
    recognized: bool
    strokes: Drawing

    def as_json(self) -> dict:
        """The pack's line format (the dataset's simplified format, fewer fields)."""
        return {"key_id": self.key_id, "word": self.word, "recognized": self.recognized,
                "drawing": self.strokes}


def _check_strokes(strokes: object, where: str) -> Drawing:
    if not isinstance(strokes, list) or not strokes or len(strokes) > MAX_STROKES:
        raise DrawingPackError(f"{where}: 'drawing' must be a list of 1–{MAX_STROKES} strokes")
    points = 0
    for stroke in strokes:
        if not (isinstance(stroke, list) and len(stroke) == 2 and all(isinstance(a, list) for a in stroke)):
            raise DrawingPackError(f"{where}: a stroke must be [[x...], [y...]]")
        xs, ys = stroke
        if not xs or len(xs) != len(ys):
            raise DrawingPackError(f"{where}: a stroke has no points or unequal x and y lists")
        for value in (*xs, *ys):
            if type(value) is not int or not 0 <= value <= COORD_MAX:
                raise DrawingPackError(f"{where}: coordinates must be integers 0–{COORD_MAX}")
        points += len(xs)
    if points > MAX_POINTS:
        raise DrawingPackError(f"{where}: more than {MAX_POINTS} points")
    return strokes


def parse_line(line: str, where: str = "pack") -> PackedDrawing:
    """One pack line as a `PackedDrawing`; `DrawingPackError` if it is malformed."""
    try:
        item = json.loads(line)
    except ValueError as error:
        raise DrawingPackError(f"{where}: not JSON ({error})") from error
    if not isinstance(item, dict):
        raise DrawingPackError(f"{where}: expected a JSON object")
    key_id, word, recognized = item.get("key_id"), item.get("word"), item.get("recognized", True)
    if not isinstance(key_id, str) or not key_id or not isinstance(word, str) or not word:
        raise DrawingPackError(f"{where}: 'key_id' and 'word' must be non-empty strings")
    if not isinstance(recognized, bool):
        raise DrawingPackError(f"{where}: 'recognized' must be true or false")
    return PackedDrawing(key_id, word, recognized, _check_strokes(item.get("drawing"), where))


def read_pack(path: Path) -> list[PackedDrawing]:
    """Every drawing of a pack file (``.ndjson.gz`` or ``.ndjson``), in file order."""
    path = Path(path)
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as handle:
                raw = handle.read(MAX_PACK_BYTES + 1)
        else:
            with open(path, "rb") as handle:
                raw = handle.read(MAX_PACK_BYTES + 1)
    except (OSError, EOFError, zlib.error) as error:
        raise DrawingPackError(f"cannot read drawing pack {path}: {error}") from error
    if len(raw) > MAX_PACK_BYTES:
        raise DrawingPackError(f"{path}: larger than {MAX_PACK_BYTES} bytes once decompressed")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DrawingPackError(f"{path}: not UTF-8 text") from error
    drawings, seen = [], set()
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            drawing = parse_line(line, f"{path.name}:{number}")
            if drawing.key_id in seen:
                raise DrawingPackError(f"{path.name}:{number}: key_id {drawing.key_id} twice")
            seen.add(drawing.key_id)
            drawings.append(drawing)
    if not drawings:
        raise DrawingPackError(f"{path}: no drawings")
    return drawings


class DrawingPack:
    """Drawings grouped by category key; a `DrawingSource` for the AI drawer.

    ``recognized_only`` (the default) keeps, for each word, only the drawings that the Quick, Draw!
    game itself recognized — unless a word has none, then all of its drawings are kept. The others
    are mostly unfinished or off-topic: the shipped recognizer finds 6.9 % of them against 59.9 % of
    the recognized ones (`griffon data pack --measure`).
    """

    def __init__(self, drawings: Iterable[PackedDrawing], recognized_only: bool = True) -> None:
        grouped: dict[str, list[PackedDrawing]] = {}
        for drawing in drawings:
            grouped.setdefault(drawing.word, []).append(drawing)
        self._records: dict[str, tuple[PackedDrawing, ...]] = {}
        for word, found in sorted(grouped.items()):
            found.sort(key=lambda d: d.key_id)
            kept = [d for d in found if d.recognized] if recognized_only else found
            self._records[word] = tuple(kept or found)

    @classmethod
    def load(cls, path: Path | None = None, recognized_only: bool = True) -> DrawingPack:
        """The pack at ``path`` (default: the shipped file), read once per process."""
        return _load(str(Path(path) if path is not None else PACK_FILE), recognized_only)

    def keys(self) -> Collection[str]:
        """The category keys with at least one drawing."""
        return self._records.keys()

    def drawings(self, key: str) -> list[Drawing]:
        """The drawings of ``key`` (sorted by key_id; empty if none). Shared: do not mutate them."""
        return [d.strokes for d in self._records.get(key, ())]

    def records(self, key: str) -> tuple[PackedDrawing, ...]:
        """The drawings of ``key`` with their key_id and recognized flag."""
        return self._records.get(key, ())

    def __len__(self) -> int:
        return sum(len(found) for found in self._records.values())


@cache
def _load(path: str, recognized_only: bool) -> DrawingPack:
    return DrawingPack(read_pack(Path(path)), recognized_only=recognized_only)


@dataclass(frozen=True)
class Variation:
    """How much `vary` changes a drawing (angles in degrees, the rest as fractions of its size)."""

    rotate_deg: float = 8.0
    scale: float = 0.12
    shear: float = 0.10
    stroke_shift: float = 0.02
    point_jitter: float = 0.008


MILD = Variation()


def vary(drawing: Sequence[Sequence[Sequence[float]]], rng: random.Random,
         variation: Variation = MILD) -> Drawing:
    """A slightly different copy of ``drawing``: a random rotation, anisotropic scale and shear about
    its centre, then each stroke shifted a little and each point jittered a little (uniform draws
    from ``rng``; a time axis, if any, is kept). Pure: the input is not changed."""
    xs = [x for s in drawing for x in s[0]]
    ys = [y for s in drawing for y in s[1]]
    if not xs:
        return []
    cx, cy = (min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2
    size = max(max(xs) - min(xs), max(ys) - min(ys), 1.0)
    angle = math.radians(rng.uniform(-variation.rotate_deg, variation.rotate_deg))
    sx = 1 + rng.uniform(-variation.scale, variation.scale)
    sy = 1 + rng.uniform(-variation.scale, variation.scale)
    shear = rng.uniform(-variation.shear, variation.shear)
    cos, sin = math.cos(angle), math.sin(angle)
    # rotation · shear · scale, about the centre
    a, b = cos * sx, (cos * shear - sin) * sy
    c, d = sin * sx, (sin * shear + cos) * sy
    out: Drawing = []
    for stroke in drawing:
        shift = variation.stroke_shift * size
        dx, dy = rng.uniform(-shift, shift), rng.uniform(-shift, shift)
        jitter = variation.point_jitter * size
        new_x, new_y = [], []
        for x, y in zip(stroke[0], stroke[1], strict=True):
            u, v = x - cx, y - cy
            new_x.append(cx + a * u + b * v + dx + rng.uniform(-jitter, jitter))
            new_y.append(cy + c * u + d * v + dy + rng.uniform(-jitter, jitter))
        out.append([new_x, new_y, *[list(axis) for axis in stroke[2:]]])
    return out
