"""Consented drawings out of the database, in the official Quick, Draw! raw layout.

``export_quickdraw(store, out)`` writes ``out/full/raw/<word>.ndjson``: one JSON object per line with
the dataset's own fields (``word``, ``countrycode`` ``"ZZ"`` — unknown, by design —, ``timestamp``
cut to the day, ``recognized``, ``key_id``, ``drawing`` as ``[[x...], [y...], [t...]]``), so
``training.data`` and ``griffon train --data`` read it like Google's files. The game conditions
(Kontour lines or free drawing, timer...) go to a side file, ``griffon-conditions.ndjson``, and the
figures to ``griffon-export.json``.

With ``mix=DATASET`` the folder becomes the dataset plus the played drawings: every dataset file is
linked (not copied), except the raw files of words that have played drawings, which are written
as the dataset's lines followed by the played ones; ``categories.txt`` comes from the dataset and
played drawings of other words are left out (counted).

Drawings given by rooms (``game="room"``: ``WS /v1/bot`` round ends with ``drawing_consent``) come
from clients the server cannot check (any word, any strokes), so they are left out (counted)
unless ``include_rooms=True`` (``griffon db export --include-rooms``) after a look at them.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import BinaryIO

from store.drawings import DrawingRows
from store.errors import StoreError
from store.records import check_word

COUNTRY = "ZZ"  # ISO 3166 "unknown": nothing about the player is kept
RAW = Path("full") / "raw"
MANIFEST = "griffon-export.json"
CONDITIONS = "griffon-conditions.ndjson"


@dataclass
class ExportReport:
    """What an export wrote."""

    out: str
    drawings: int = 0
    words: dict[str, int] = field(default_factory=dict)
    conditions: dict[str, int] = field(default_factory=dict)
    mixed_with: str | None = None
    linked_files: int = 0
    skipped_unknown_words: int = 0
    skipped_room_drawings: int = 0

    def to_dict(self) -> dict[str, object]:
        """JSON-ready figures."""
        return asdict(self)


def day_stamp(t: float) -> str:
    """The dataset's timestamp format, cut to the day (``2026-12-01 00:00:00.00000 UTC``)."""
    return time.strftime("%Y-%m-%d 00:00:00.00000 UTC", time.gmtime(t))


def condition_name(game: str, conditions: dict[str, object]) -> str:
    """A short name for how a drawing was made: ``kontour/lines``, ``pictomania/free``..."""
    return f"{game}/{conditions.get('style', 'free')}"


def _dataset_words(mix: Path) -> set[str] | None:
    listing = mix / "categories.txt"
    if not listing.is_file():
        return None
    return {line.strip() for line in listing.read_text(encoding="utf-8").splitlines() if line.strip()}


def _link_dataset(mix: Path, out: Path, played_words: set[str]) -> int:
    """Link every file of the dataset into `out`, except the raw files rewritten with played lines."""
    linked = 0
    for source in sorted(mix.rglob("*")):
        if not source.is_file() or source.name.startswith("."):
            continue
        rel = source.relative_to(mix)
        if rel.parent == RAW and rel.name.removesuffix(".ndjson") in played_words:
            continue  # written with the played drawings appended
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.exists():
            target.unlink()
        target.symlink_to(source.resolve())
        linked += 1
    return linked


def _line(item: dict[str, object]) -> bytes:
    return (json.dumps(item, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")


def _copy_lines(source: Path, handle: BinaryIO) -> None:
    """Copy a dataset file, ending it with a newline if it lacks one."""
    with source.open("rb") as src:
        shutil.copyfileobj(src, handle)
        if src.tell() > 0:
            src.seek(-1, os.SEEK_END)
            if src.read(1) != b"\n":
                handle.write(b"\n")


ROOM = "room"  # the game kind of the drawings rooms give


def export_quickdraw(store: DrawingRows, out: Path | str, mix: Path | str | None = None,
                     include_rooms: bool = False) -> ExportReport:
    """Write the stored drawings under `out` in the Quick, Draw! raw layout (see the module doc);
    the rooms' drawings only with `include_rooms`."""
    out = Path(out)
    mix_dir = Path(mix) if mix is not None else None
    if mix_dir is not None:
        if not (mix_dir / "full").is_dir():
            raise StoreError(f"{mix_dir} is not a Quick, Draw! folder (no full/ inside)")
        if out.resolve() == mix_dir.resolve() or mix_dir.resolve() in out.resolve().parents:
            raise StoreError("export into a new folder, not into the dataset itself")
    known = _dataset_words(mix_dir) if mix_dir is not None else None
    report = ExportReport(out=str(out), mixed_with=None if mix_dir is None else str(mix_dir))
    skip = () if include_rooms else (ROOM,)
    counts = store.drawing_counts(skip)
    if not include_rooms:
        report.skipped_room_drawings = sum(store.drawing_counts().values()) - sum(counts.values())
    words = sorted(w for w in counts if known is None or w in known)
    report.skipped_unknown_words = sum(n for w, n in counts.items() if w not in words)
    (out / RAW).mkdir(parents=True, exist_ok=True)
    if mix_dir is not None:
        report.linked_files = _link_dataset(mix_dir, out, set(words))
    conditions = Counter[str]()
    side = (out / CONDITIONS).open("wb")
    with side:
        for word in words:
            check_word(word)
            target = out / RAW / f"{word}.ndjson"
            partial = target.with_name(f".{target.name}.partial")
            with partial.open("wb") as handle:
                original = mix_dir / RAW / target.name if mix_dir is not None else None
                if original is not None and original.is_file():
                    _copy_lines(original, handle)
                for d in store.iter_drawings(word, skip_games=skip):
                    line = {"word": word, "countrycode": COUNTRY, "timestamp": day_stamp(d.created_at),
                            "recognized": d.recognized, "key_id": d.key_id, "drawing": d.strokes}
                    handle.write(_line(line))
                    side.write(_line({"key_id": d.key_id, "word": word, "game": d.game,
                                      "conditions": d.conditions}))
                    conditions[condition_name(d.game, d.conditions)] += 1
                    report.words[word] = report.words.get(word, 0) + 1
                    report.drawings += 1
            if target.is_symlink():
                target.unlink()
            os.replace(partial, target)
    report.conditions = dict(sorted(conditions.items()))
    (out / MANIFEST).write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    return report
