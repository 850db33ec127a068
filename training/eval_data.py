"""The drawings an evaluation runs on: one split of a Quick, Draw! folder (read by
:func:`training.data.load_dataset`, the one loader), checked against the models' class lists."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from training.data import ReadStats, load_dataset
from training.eval_models import ModelUnderTest
from training.eval_settings import EvalError


@dataclass
class EvalData:
    """Drawings to evaluate (raw strokes as read) with their words, keys and source file."""

    root: Path
    split: str
    strokes: list[list]
    words: list[str]
    key_ids: list[str]
    file_of: list[int]
    files: list[dict[str, Any]]
    available: int = 0
    skipped_unknown: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.words)

    def subset(self, keep: Sequence[int]) -> EvalData:
        """The drawings at positions ``keep`` (file summaries are shared)."""
        return EvalData(
            self.root,
            self.split,
            [self.strokes[i] for i in keep],
            [self.words[i] for i in keep],
            [self.key_ids[i] for i in keep],
            [self.file_of[i] for i in keep],
            self.files,
            self.available,
            dict(self.skipped_unknown),
        )


def load_eval_data(root: Path | str, split: str = "val") -> EvalData:
    """Read every Quick, Draw! file under ``root`` and keep one split (``train``, ``val``, ``dev``, ``all``).

    Corrupt records are skipped and counted per file; a drawing read twice (same ``key_id``) is
    counted as a duplicate of the later file. Raises :class:`training.data.DataError` for an unknown
    split, a missing folder, a folder without Quick, Draw! files, or an unreadable file.
    """
    root = Path(root)
    stats = ReadStats()
    chosen = load_dataset(root, split, stats=stats)
    files = [
        {
            "path": f.path,
            "format": f.format,
            "word": f.word,
            "duplicates": f.duplicates,
            "records": f.records,
            "corrupt": f.corrupt,
            "rejected": 0,
            "evaluated": 0,
        }
        for f in stats.per_file
    ]
    index_of = {entry["path"]: i for i, entry in enumerate(files)}
    chosen.sort(key=lambda record: (record.word, record.key_id))
    return EvalData(
        root=root,
        split=split,
        strokes=[record.strokes for record in chosen],
        words=[record.word for record in chosen],
        key_ids=[record.key_id for record in chosen],
        file_of=[index_of[record.file] for record in chosen],
        files=files,
        available=len(chosen),
    )


def restrict(
    data: EvalData,
    models: Sequence[ModelUnderTest],
    skip_unknown: bool = False,
    limit: int | None = None,
    seed: int = 0,
) -> EvalData:
    """Check the data's categories against every model; optionally drop unknown ones and sample.

    Raises :class:`EvalError` listing the categories some model does not know (unless
    ``skip_unknown``), or when no drawing is left. ``limit`` keeps a seeded random sample.
    """
    known = set.intersection(*(set(m.labels) for m in models))
    unknown = sorted(set(data.words) - known)
    if unknown and not skip_unknown:
        shown = ", ".join(repr(word) for word in unknown[:20])
        more = f" and {len(unknown) - 20} more" if len(unknown) > 20 else ""
        which = " / ".join(f"{m.name} ({len(m.labels)} classes)" for m in models)
        raise EvalError(
            f"the data has {len(unknown)} categories the model does not know: {shown}{more} "
            f"[model: {which}]; pass --skip-unknown to leave them out"
        )
    keep = [i for i, word in enumerate(data.words) if word in known]
    skipped: dict[str, int] = {}
    for word in data.words:
        if word not in known:
            skipped[word] = skipped.get(word, 0) + 1
    if not keep:
        raise EvalError(
            f"no drawing of {data.root} ({data.split} split) belongs to a category the model knows"
        )
    if limit is not None and limit < len(keep):
        rng = np.random.default_rng(seed)
        keep = sorted(rng.choice(keep, size=limit, replace=False).tolist())
    out = data.subset(keep)
    out.skipped_unknown = skipped
    return out


def data_summary(data: EvalData, valid: np.ndarray) -> dict[str, Any]:
    """The ``data`` object of ``report.json``: files with corrupt/rejected counts, categories, totals."""
    files = [dict(entry) for entry in data.files]
    for file_index, ok in zip(data.file_of, valid, strict=True):
        files[file_index]["evaluated" if ok else "rejected"] += 1
    per_category: dict[str, int] = {}
    for word, ok in zip(data.words, valid, strict=True):
        if ok:
            per_category[word] = per_category.get(word, 0) + 1
    return {
        "root": str(data.root),
        "split": data.split,
        "available_in_split": data.available,
        "evaluated": int(valid.sum()),
        "rejected_drawings": int((~valid).sum()),
        "corrupt_records": sum(entry["corrupt"] for entry in files),
        "duplicates": sum(entry["duplicates"] for entry in files),
        "skipped_unknown": dict(sorted(data.skipped_unknown.items())),
        "categories": len(per_category),
        "per_category": dict(sorted(per_category.items())),
        "files_with_problems": [
            entry for entry in files if entry["corrupt"] or entry["rejected"] or entry["duplicates"]
        ],
        "files": len(files),
    }
