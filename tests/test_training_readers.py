"""Readers for every official Quick, Draw! format, de-duplication, corrupt lines, and the split."""

from __future__ import annotations

import gzip
import json
import struct
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from training.data import (
    DataError,
    ReadStats,
    assign_splits,
    load_dataset,
    read_binary,
    read_ndjson,
    read_npz,
    stroke3_to_strokes,
)

SQUARE = [[[0, 100, 100, 0, 0], [0, 0, 100, 100, 0]]]
TRIANGLE = [[[0, 50, 100, 0], [100, 0, 100, 100]], [[40, 60], [80, 80]]]


def line(word: str, key: str, drawing: list, recognized: bool = True) -> str:
    """One ndjson line as the dataset writes it."""
    return json.dumps(
        {
            "word": word,
            "countrycode": "FR",
            "timestamp": "2017-03-01 10:00:00.0 UTC",
            "recognized": recognized,
            "key_id": key,
            "drawing": drawing,
        }
    )


def write_binary(path: Path, items: list[tuple[int, list]]) -> None:
    """Google's packed binary format, as documented in the dataset README."""
    out = bytearray()
    for key_id, drawing in items:
        out += struct.pack("<Q2sBIH", key_id, b"FR", 1, 1490000000, len(drawing))
        for xs, ys in drawing:
            out += struct.pack("<H", len(xs)) + bytes(xs) + bytes(ys)
    path.write_bytes(bytes(out))


def test_ndjson_plain_and_gzip_read_the_same(tmp_path: Path) -> None:
    text = "\n".join([line("square", "1", SQUARE), line("square", "2", TRIANGLE, False)]) + "\n"
    plain = tmp_path / "square.ndjson"
    plain.write_text(text)
    packed = tmp_path / "square.ndjson.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    a, b = list(read_ndjson(plain)), list(read_ndjson(packed))
    assert [r.key_id for r in a] == ["1", "2"] == [r.key_id for r in b]
    assert a[0].strokes == SQUARE and a[1].recognized is False and a[0].countrycode == "FR"


def test_corrupt_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "square.ndjson"
    path.write_text(
        "\n".join(
            [
                line("square", "1", SQUARE),
                "{not json",
                json.dumps({"word": "square", "key_id": "3"}),  # no drawing
                line("square", "4", [[[1, 2], [3]]]),  # x and y lengths differ
                line("square", "5", TRIANGLE),
            ]
        )
    )
    stats = ReadStats()
    records = list(read_ndjson(path, stats))
    assert [r.key_id for r in records] == ["1", "5"]
    assert stats.corrupt == 3 and stats.corrupt_by_file == {"square.ndjson": 3}


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such data file"):
        list(read_ndjson(tmp_path / "nope.ndjson"))
    with pytest.raises(DataError, match="does not exist"):
        load_dataset(tmp_path / "nowhere")


def test_binary_format_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "square.bin"
    write_binary(path, [(11, SQUARE), (12, TRIANGLE)])
    records = list(read_binary(path))
    assert [r.key_id for r in records] == ["11", "12"]
    assert records[1].strokes == TRIANGLE and records[0].word == "square"


def test_truncated_binary_counts_one_corrupt_record(tmp_path: Path) -> None:
    path = tmp_path / "square.bin"
    write_binary(path, [(11, SQUARE), (12, TRIANGLE)])
    path.write_bytes(path.read_bytes()[:-3])
    stats = ReadStats()
    assert [r.key_id for r in read_binary(path, stats=stats)] == ["11"]
    assert stats.corrupt == 1


def test_stroke3_conversion_and_npz(tmp_path: Path) -> None:
    # stroke-3: offsets, pen lifted after the point: two strokes (0,0)->(10,0) and (10,10)->(20,10)
    stroke3 = np.array([[0, 0, 0], [10, 0, 1], [0, 10, 0], [10, 0, 1]], dtype=np.int16)
    assert stroke3_to_strokes(stroke3) == [[[0.0, 10.0], [0.0, 0.0]], [[10.0, 20.0], [10.0, 10.0]]]
    path = tmp_path / "cat.npz"
    items = np.empty(1, dtype=object)
    items[0] = stroke3
    np.savez(path, train=items, valid=items, test=items)
    records = list(read_npz(path))
    assert len(records) == 3 and {r.word for r in records} == {"cat"}


def make_folder(root: Path) -> None:
    """A tiny folder in the official layout: raw, simplified and binary files, with a duplicate."""
    (root / "full" / "raw").mkdir(parents=True)
    (root / "full" / "simplified").mkdir(parents=True)
    (root / "full" / "binary").mkdir(parents=True)
    raw = [line("square", f"{i}", [[[0, 5 * i + 9, 30], [0, 20, 3], [0, 10, 20]]]) for i in range(30)]
    (root / "full" / "raw" / "square.ndjson").write_text("\n".join(raw))
    simple = [line("triangle", f"t{i}", TRIANGLE) for i in range(10)] + [line("square", "3", SQUARE)]
    (root / "full" / "simplified" / "triangle.ndjson").write_text("\n".join(simple[:10]))
    (root / "full" / "simplified" / "square.ndjson").write_text(simple[10])  # duplicate key 3
    write_binary(root / "full" / "binary" / "circle.bin", [(100 + i, SQUARE) for i in range(5)])


def test_load_dataset_dedupes_and_reads_all_formats(tmp_path: Path) -> None:
    make_folder(tmp_path)
    stats = ReadStats()
    records = load_dataset(tmp_path, stats=stats)
    assert Counter(r.word for r in records) == {"square": 30, "triangle": 10, "circle": 5}
    assert stats.duplicates == 1
    with pytest.raises(DataError, match="no data for categories: dog"):
        load_dataset(tmp_path, categories=["dog"])
    with pytest.raises(DataError, match="unknown split"):
        load_dataset(tmp_path, split="test")


def test_split_is_deterministic_disjoint_and_has_three_per_category(tmp_path: Path) -> None:
    make_folder(tmp_path)
    train = load_dataset(tmp_path, "train")
    val = load_dataset(tmp_path, "val")
    assert {r.key_id for r in train}.isdisjoint({r.key_id for r in val})
    assert len(train) + len(val) == 45
    assert min(Counter(r.word for r in val).values()) >= 3
    again = assign_splits(load_dataset(tmp_path))
    assert all(again[r.key_id] == "val" for r in val)


def test_split_of_a_drawing_does_not_depend_on_unrelated_categories(tmp_path: Path) -> None:
    make_folder(tmp_path)
    everything = load_dataset(tmp_path)
    full = assign_splits(everything)
    only_square = assign_splits([r for r in everything if r.word == "square"])
    assert all(full[key] == split for key, split in only_square.items())


def test_dev_band_is_the_same_for_the_loader_and_prepared_data(fixture_data: Path, tmp_path: Path) -> None:
    from training.data import DEV_BAND, key_hash
    from training.prepare import SPLIT_CODES, prepare

    dev = load_dataset(fixture_data, "dev")
    train = {r.key_id for r in load_dataset(fixture_data, "train")}
    assert dev and {r.key_id for r in dev} < train  # dev is a part of train
    assert all(DEV_BAND[0] <= key_hash(r.key_id) / 2**64 < DEV_BAND[1] for r in dev)
    prepared = prepare(fixture_data, tmp_path / "prepared")
    assert int((prepared.splits == SPLIT_CODES["dev"]).sum()) == len(dev)


def test_runs_preparing_one_cache_at_once_leave_it_whole(fixture_data: Path, tmp_path: Path) -> None:
    """`make train` starts two runs at once on a fresh clone: both may prepare the same cache. Each
    file is written under a temporary name and renamed, so the cache ends whole and complete."""
    from concurrent.futures import ThreadPoolExecutor

    from training.prepare import load_prepared, prepare, prepare_cached

    cache = tmp_path / "cache"
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda _: prepare(fixture_data, cache), range(3)))
    assert sorted(p.name for p in cache.iterdir()) == ["drawings.npz", "meta.json"]  # no leftovers
    stored = load_prepared(cache)
    assert stored.meta == results[0].meta and len(stored) == len(results[0]) > 0
    assert np.array_equal(stored.points, results[0].points)
    assert prepare_cached(fixture_data, cache).meta["sha256"] == results[0].meta["sha256"]
