"""Measure per-category difficulty from the Quick, Draw! ``recognized`` flag.

Re-runnable data step: ``python -m vocab.build_stats --data /path/to/quickdraw``.
It reads every ``full/raw/*.ndjson`` and ``full/simplified/*.ndjson`` line, counts how many
drawings of each category the original game recognised, and writes
``vocab/data/category_stats.csv`` (derived numbers only).

Difficulty 1 (easy) … 4 (hard) is the quartile of the *smoothed* recognition rate, lower
recognition = harder. Smoothing (a Beta prior centred on the global rate, weight
``PRIOR_WEIGHT`` drawings) keeps a category with 20 drawings from landing at an extreme by chance.
Ties are broken by the raw count of unrecognised drawings, then by name, so the output is stable.
The ``model_accuracy`` column is left empty for the recognizer's per-category accuracy.
"""

from __future__ import annotations

import argparse
import csv
import json
from dataclasses import dataclass
from pathlib import Path

STATS_PATH = Path(__file__).parent / "data" / "category_stats.csv"
PRIOR_WEIGHT = 10.0
N_LEVELS = 4
COLUMNS = (
    "category",
    "n_drawings",
    "n_recognized",
    "recognized_rate",
    "smoothed_rate",
    "difficulty",
    "model_accuracy",
)


@dataclass(frozen=True)
class CategoryCount:
    """Drawings and recognised drawings of one category."""

    category: str
    n_drawings: int
    n_recognized: int


def count_recognized(data_dir: Path) -> dict[str, CategoryCount]:
    """Count drawings and recognised drawings per category under ``data_dir/full/{raw,simplified}``."""
    totals: dict[str, list[int]] = {}
    files = sorted((data_dir / "full" / "raw").glob("*.ndjson")) + sorted(
        (data_dir / "full" / "simplified").glob("*.ndjson")
    )
    if not files:
        raise FileNotFoundError(f"no full/raw or full/simplified *.ndjson files under {data_dir}")
    for path in files:
        with path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                    word, recognized = rec["word"], rec["recognized"]
                except (json.JSONDecodeError, KeyError) as exc:
                    raise ValueError(f"{path}:{lineno}: not a Quick, Draw! record ({exc})") from exc
                counts = totals.setdefault(word, [0, 0])
                counts[0] += 1
                counts[1] += bool(recognized)
    return {w: CategoryCount(w, n, k) for w, (n, k) in totals.items()}


def difficulty_table(counts: dict[str, CategoryCount]) -> list[dict[str, str]]:
    """Rows of the stats CSV: rates, smoothed rate, and a difficulty level 1–4 by quartile."""
    n_all = sum(c.n_drawings for c in counts.values())
    k_all = sum(c.n_recognized for c in counts.values())
    prior = k_all / n_all if n_all else 1.0
    smoothed = {
        c.category: (c.n_recognized + PRIOR_WEIGHT * prior) / (c.n_drawings + PRIOR_WEIGHT)
        for c in counts.values()
    }
    # Easiest first: highest smoothed rate, fewest failures, then name.
    order = sorted(
        counts.values(),
        key=lambda c: (-smoothed[c.category], c.n_drawings - c.n_recognized, c.category),
    )
    rows = []
    for rank, c in enumerate(order):
        level = 1 + rank * N_LEVELS // len(order)
        rows.append(
            {
                "category": c.category,
                "n_drawings": str(c.n_drawings),
                "n_recognized": str(c.n_recognized),
                "recognized_rate": f"{c.n_recognized / c.n_drawings:.4f}",
                "smoothed_rate": f"{smoothed[c.category]:.4f}",
                "difficulty": str(level),
                "model_accuracy": "",
            }
        )
    return sorted(rows, key=lambda r: r["category"])


def write_stats(rows: list[dict[str, str]], out: Path = STATS_PATH) -> None:
    """Write the stats rows as CSV, keeping an existing ``model_accuracy`` column's values."""
    previous: dict[str, str] = {}
    if out.exists():
        with out.open(encoding="utf-8", newline="") as fh:
            previous = {r["category"]: r.get("model_accuracy", "") for r in csv.DictReader(fh)}
    with out.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            row["model_accuracy"] = row["model_accuracy"] or previous.get(row["category"], "")
            writer.writerow(row)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry: count, rank, write the CSV, print a summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="Quick, Draw! folder (has full/)")
    parser.add_argument("--out", type=Path, default=STATS_PATH, help="CSV to write")
    args = parser.parse_args(argv)
    rows = difficulty_table(count_recognized(args.data))
    write_stats(rows, args.out)
    by_level: dict[str, int] = {}
    for r in rows:
        by_level[r["difficulty"]] = by_level.get(r["difficulty"], 0) + 1
    print(f"wrote {len(rows)} categories to {args.out}; per difficulty {dict(sorted(by_level.items()))}")


if __name__ == "__main__":
    main()
