"""Readers for every official Quick, Draw! format, de-duplication, and the train/validation split.

Formats (Google's bucket layout under a data root):
- ``full/raw/<word>.ndjson[.gz]`` — strokes ``[[x], [y], [t]]`` in canvas pixels;
- ``full/simplified/<word>.ndjson[.gz]`` — strokes ``[[x], [y]]`` in 0–255;
- ``full/binary/<word>.bin`` — the packed binary form of the simplified drawings;
- ``sketchrnn/<word>.npz`` — sketch-rnn stroke-3 arrays (``train``/``valid``/``test``).

A corrupt line or record is skipped and counted (:class:`ReadStats`); a missing or unreadable file
raises :class:`DataError`.

The split is deterministic and depends only on each drawing's ``key_id``: a drawing is in the
validation split when its hash (the first 8 bytes of ``sha1(key_id)``, as a fraction of 2**64)
is below 0.10, or when it is among the three lowest hashes of its category (so every category
has at least three validation drawings). A drawing never moves between splits as long as its
category's file does not gain a drawing with a lower hash. The *dev* band is the part of the
training split whose hash fraction lies in [0.10, 0.20): experiments hold it out to compare settings
without touching validation.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import struct
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_ENV = "GRIFFON_DATA"
LOCAL_DATA = Path("data", "quickdraw")  # relative to the current folder
SHARED_DATA = REPO_ROOT.parent / "shared" / "data" / "quickdraw"  # beside the repository
VALIDATION_FRACTION = 0.10
MIN_VALIDATION_PER_CATEGORY = 3
DEV_BAND = (0.10, 0.20)  # hash-fraction band of the training split where settings are compared
SPLITS = ("train", "val", "dev", "all")


class DataError(RuntimeError):
    """A data file or folder is missing, unreadable, or inconsistent."""


class DataNotFound(DataError):
    """No Quick, Draw! folder is configured or present."""


@dataclass
class DrawingRecord:
    """One drawing: strokes as lists ``[[x...], [y...](, [t...])]`` plus the dataset's metadata.

    ``source`` is the format folder (``raw``, ``simplified``, ``binary``, ``sketchrnn``); ``file`` the
    file's path relative to the data folder when read by :func:`load_dataset`.
    """

    key_id: str
    word: str
    strokes: list
    recognized: bool = True
    countrycode: str = ""
    timestamp: str = ""
    source: str = ""
    file: str = ""


@dataclass
class FileSummary:
    """What :func:`load_dataset` found in one file."""

    path: str  # relative to the data folder
    format: str
    word: str
    records: int = 0
    corrupt: int = 0
    duplicates: int = 0  # records dropped because an earlier file had the same ``key_id``


@dataclass
class ReadStats:
    """What a read found: records per file, corrupt records skipped, duplicates dropped."""

    files: int = 0
    records: int = 0
    corrupt: int = 0
    duplicates: int = 0
    corrupt_by_file: dict[str, int] = field(default_factory=dict)
    per_file: list[FileSummary] = field(default_factory=list)

    def count_corrupt(self, path: Path) -> None:
        """Record one skipped record of ``path``."""
        self.corrupt += 1
        self.corrupt_by_file[path.name] = self.corrupt_by_file.get(path.name, 0) + 1


def holds_quickdraw(folder: Path) -> bool:
    """Whether ``folder`` has at least one of the official format folders (``full/…``, ``sketchrnn``)."""
    return any((folder / sub).is_dir() for sub, _ in FORMAT_FOLDERS.values())


def default_data_root(explicit: Path | str | None = None) -> Path:
    """The one rule for the Quick, Draw! folder (download, train, eval, prepare, the games' drawings).

    ``explicit`` (a ``--data`` option) when given, else ``$GRIFFON_DATA``, else ``./data/quickdraw``
    (in the current folder) when it holds Quick, Draw! files, else ``../shared/data/quickdraw``
    beside the repository when it does. Raises :class:`DataNotFound` when none applies.
    """
    if explicit:
        return Path(explicit)
    configured = os.environ.get(DATA_ENV)
    if configured:
        return Path(configured)
    candidates = (LOCAL_DATA.absolute(), SHARED_DATA)
    for candidate in candidates:
        if holds_quickdraw(candidate):
            return candidate
    raise DataNotFound(
        f"no Quick, Draw! folder found; pass --data DIR or set {DATA_ENV} "
        f"(looked in {', '.join(str(c) for c in candidates)}; `griffon data download` fills the first)"
    )


def download_root(explicit: Path | str | None = None) -> Path:
    """Where downloads go: the folder :func:`default_data_root` finds, else ``./data/quickdraw`` (so the
    next ``train`` or ``eval`` finds what was downloaded)."""
    try:
        return default_data_root(explicit)
    except DataNotFound:
        return LOCAL_DATA.absolute()


def _open_text(path: Path) -> io.TextIOBase:
    try:
        if path.suffix == ".gz":
            return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
        return open(path, encoding="utf-8")
    except OSError as error:
        raise DataError(f"cannot read {path}: {error}") from error


def _valid_strokes(strokes: object) -> bool:
    if not isinstance(strokes, list) or not strokes:
        return False
    for stroke in strokes:
        if not isinstance(stroke, list) or len(stroke) not in (2, 3):
            return False
        if any(not isinstance(axis, list) or len(axis) != len(stroke[0]) for axis in stroke):
            return False
        if not stroke[0]:
            return False
    return True


def read_ndjson(path: Path, stats: ReadStats | None = None) -> Iterator[DrawingRecord]:
    """Read a raw or simplified ``.ndjson`` / ``.ndjson.gz`` file."""
    stats = stats if stats is not None else ReadStats()
    path = Path(path)
    if not path.is_file():
        raise DataError(f"no such data file: {path}")
    stats.files += 1
    try:
        with _open_text(path) as handle:
            for line in handle:
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                    record = DrawingRecord(
                        key_id=str(item["key_id"]),
                        word=str(item["word"]),
                        strokes=item["drawing"],
                        recognized=bool(item.get("recognized", True)),
                        countrycode=str(item.get("countrycode", "")),
                        timestamp=str(item.get("timestamp", "")),
                        source=path.parent.name,
                    )
                except (ValueError, KeyError, TypeError):
                    stats.count_corrupt(path)
                    continue
                if not _valid_strokes(record.strokes):
                    stats.count_corrupt(path)
                    continue
                stats.records += 1
                yield record
    except (OSError, EOFError, UnicodeDecodeError) as error:
        raise DataError(f"cannot read {path}: {error}") from error


def read_binary(
    path: Path, word: str | None = None, stats: ReadStats | None = None
) -> Iterator[DrawingRecord]:
    """Read Google's packed binary format (``full/binary/<word>.bin``)."""
    stats = stats if stats is not None else ReadStats()
    path = Path(path)
    word = word or path.stem
    try:
        payload = path.read_bytes()
    except OSError as error:
        raise DataError(f"cannot read {path}: {error}") from error
    stats.files += 1
    offset, end = 0, len(payload)
    while offset < end:
        try:
            key_id, country, recognized, timestamp, n_strokes = struct.unpack_from("<Q2sBIH", payload, offset)
            offset += 17
            strokes = []
            for _ in range(n_strokes):
                (n_points,) = struct.unpack_from("<H", payload, offset)
                offset += 2
                xs = list(payload[offset : offset + n_points])
                ys = list(payload[offset + n_points : offset + 2 * n_points])
                if len(ys) != n_points:
                    raise struct.error("truncated stroke")
                offset += 2 * n_points
                strokes.append([xs, ys])
        except struct.error:
            stats.count_corrupt(path)  # a truncated tail cannot be resynchronised
            return
        if not _valid_strokes(strokes):
            stats.count_corrupt(path)
            continue
        stats.records += 1
        yield DrawingRecord(
            key_id=str(key_id),
            word=word,
            strokes=strokes,
            recognized=bool(recognized),
            countrycode=country.decode("ascii", "replace").strip("\x00"),
            timestamp=str(timestamp),
            source="binary",
        )


def stroke3_to_strokes(stroke3: np.ndarray) -> list:
    """Convert a sketch-rnn stroke-3 array ``(dx, dy, pen_lifted)`` to absolute Quick, Draw! strokes."""
    points = np.cumsum(np.asarray(stroke3[:, :2], dtype=np.float64), axis=0)
    lifts = np.flatnonzero(np.asarray(stroke3[:, 2]) > 0)
    strokes, start = [], 0
    for lift in list(lifts) + [len(points) - 1]:
        if lift >= start:
            piece = points[start : lift + 1]
            strokes.append([piece[:, 0].tolist(), piece[:, 1].tolist()])
        start = lift + 1
    return [s for s in strokes if s[0]]


def read_npz(path: Path, word: str | None = None, stats: ReadStats | None = None) -> Iterator[DrawingRecord]:
    """Read a sketch-rnn ``.npz`` file (all of its ``train``, ``valid`` and ``test`` arrays)."""
    stats = stats if stats is not None else ReadStats()
    path = Path(path)
    word = word or path.stem
    try:
        archive = np.load(path, allow_pickle=True, encoding="latin1")
    except (OSError, ValueError) as error:
        raise DataError(f"cannot read {path}: {error}") from error
    stats.files += 1
    for part in ("train", "valid", "test"):
        if part not in archive:
            continue
        for index, stroke3 in enumerate(archive[part]):
            try:
                strokes = stroke3_to_strokes(np.asarray(stroke3))
            except (ValueError, IndexError, TypeError):
                stats.count_corrupt(path)
                continue
            if not _valid_strokes(strokes):
                stats.count_corrupt(path)
                continue
            stats.records += 1
            yield DrawingRecord(f"sketchrnn:{word}:{part}:{index}", word, strokes, source="sketchrnn")


FORMAT_FOLDERS = {
    "raw": ("full/raw", (".ndjson", ".ndjson.gz")),
    "simplified": ("full/simplified", (".ndjson", ".ndjson.gz")),
    "binary": ("full/binary", (".bin",)),
    "sketchrnn": ("sketchrnn", (".npz",)),
}


def _word_of(path: Path, suffixes: tuple[str, ...]) -> str:
    name = path.name
    for suffix in suffixes:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def data_files(root: Path) -> list[tuple[str, str, Path]]:
    """Every data file under ``root`` as ``(format, word, path)``, formats in preference order."""
    root = Path(root)
    if not root.is_dir():
        raise DataError(f"data folder does not exist: {root}")
    found = []
    for fmt, (folder, suffixes) in FORMAT_FOLDERS.items():
        directory = root / folder
        if not directory.is_dir():
            continue
        for path in sorted(directory.iterdir()):
            if path.is_file() and path.name.endswith(suffixes):
                found.append((fmt, _word_of(path, suffixes), path))
    if not found:
        raise DataError(f"no Quick, Draw! files under {root} (expected full/raw, full/simplified, …)")
    return found


def read_file(fmt: str, word: str, path: Path, stats: ReadStats) -> Iterator[DrawingRecord]:
    """Read one file of a known format."""
    if fmt in ("raw", "simplified"):
        return read_ndjson(path, stats)
    if fmt == "binary":
        return read_binary(path, word, stats)
    return read_npz(path, word, stats)


def key_hash(key_id: str) -> int:
    """A stable 64-bit hash of a drawing's ``key_id`` (first 8 bytes of its sha1)."""
    return int.from_bytes(hashlib.sha1(key_id.encode("utf-8")).digest()[:8], "big")


def in_dev_band(key_id: str) -> bool:
    """Whether a drawing's hash falls in the dev band (a training drawing there is a *dev* drawing)."""
    fraction = key_hash(key_id) / 2**64
    return DEV_BAND[0] <= fraction < DEV_BAND[1]


def assign_splits(records: Iterable[DrawingRecord]) -> dict[str, str]:
    """Map each ``key_id`` to ``"train"`` or ``"val"`` (see the module docstring for the rule)."""
    by_word: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for record in records:
        by_word[record.word].append((key_hash(record.key_id), record.key_id))
    split = {}
    for entries in by_word.values():
        entries.sort()
        for rank, (hashed, key_id) in enumerate(entries):
            in_val = hashed < VALIDATION_FRACTION * 2**64 or rank < MIN_VALIDATION_PER_CATEGORY
            split[key_id] = "val" if in_val else "train"
    return split


def load_dataset(
    root: Path | str | None = None,
    split: str = "all",
    categories: Iterable[str] | None = None,
    stats: ReadStats | None = None,
) -> list[DrawingRecord]:
    """Load every drawing under a Quick, Draw! folder, de-duplicated by ``key_id``, for one split.

    ``split``: ``train`` (dev included), ``val``, ``dev`` or ``all``. ``root`` defaults to
    :func:`default_data_root`. ``categories`` restricts the words read; unknown
    words raise :class:`DataError`. ``stats`` receives the totals and a :class:`FileSummary` per file
    (a drawing read twice counts as a duplicate of the later file). Records come in file order.
    """
    if split not in SPLITS:
        raise DataError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
    root = default_data_root(root)
    stats = stats if stats is not None else ReadStats()
    files = data_files(root)
    if categories is not None:
        wanted = set(categories)
        missing = wanted - {word for _, word, _ in files}
        if missing:
            raise DataError(f"no data for categories: {', '.join(sorted(missing))}")
        files = [entry for entry in files if entry[1] in wanted]
    records: dict[str, DrawingRecord] = {}
    for fmt, word, path in files:
        summary = FileSummary(str(path.relative_to(root)), fmt, word)
        before = (stats.records, stats.corrupt)
        for record in read_file(fmt, word, path, stats):
            if record.key_id in records:
                summary.duplicates += 1
                continue
            record.file = summary.path
            records[record.key_id] = record
        summary.records, summary.corrupt = stats.records - before[0], stats.corrupt - before[1]
        stats.duplicates += summary.duplicates
        stats.per_file.append(summary)
    everything = list(records.values())
    if split == "all":
        return everything
    assignment = assign_splits(everything)
    if split == "dev":
        return [r for r in everything if assignment[r.key_id] == "train" and in_dev_band(r.key_id)]
    return [record for record in everything if assignment[record.key_id] == split]


def read_categories(root: Path | str | None = None) -> list[str]:
    """The official category list (``categories.txt`` of the data folder, else the file names)."""
    root = default_data_root(root)
    listing = root / "categories.txt"
    if listing.is_file():
        return [line.strip() for line in listing.read_text(encoding="utf-8").splitlines() if line.strip()]
    return sorted({word for _, word, _ in data_files(root)})
