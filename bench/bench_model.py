"""Recognizer benchmarks: preprocessing (new and legacy), every inference back-end (batch-1 latency,
batched throughput, validation top-1), live-session cost per stroke, the worst drawings the
validator allows, and training samples/s. Run: ``python -m bench.bench_model``
(``--compare CHECKPOINT``: a second model timed beside the shipped one, back-end by back-end, in the
same run).

Uses validation drawings from the Quick, Draw! folder when present (raw canvas strokes, as a live
player sends them), else generated shapes (then top-1 is not measured).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from model import Guesser, Views
from model.guesser import CHUNK, near_ties
from model.raster import rasterize, rasterize_reference
from model.strokes import (
    MAX_POINTS,
    RDP_EPSILON,
    SIMPLIFIED_EXTENT,
    drawing_frame,
    resample,
    resample_corners,
    simplify_drawing,
    validate_drawing,
)

BACKENDS = ("torch", "onnx", "onnx-int8")


def validation_records() -> list[tuple[list, str, str]]:
    """``(strokes, word, source format)`` of every validation drawing, or ``[]`` without data."""
    try:
        from training.data import load_dataset

        return [(r.strokes, r.word, r.source) for r in load_dataset(split="val")]
    except Exception:  # no data folder: synthetic drawings instead
        return []


def sample_drawings(count: int, records: Sequence[tuple[list, str, str]] | None = None) -> list:
    """Raw drawings from the validation split, or generated ones without data."""
    records = validation_records() if records is None else records
    raw = [strokes for strokes, _, source in records if source == "raw"]
    if raw:
        return raw[:count]
    rng = np.random.default_rng(0)
    drawings = []
    for _ in range(count):
        angles = np.linspace(0, 2 * math.pi, 60)
        r = rng.uniform(50, 300)
        drawings.append([[(400 + r * np.cos(angles)).tolist(), (300 + r * np.sin(angles)).tolist()]])
    return drawings


def worst_drawings() -> dict[str, list]:
    """The costliest drawings the validator lets through (10,000 points, one stroke each).

    - ``zigzag_80kB``: 10,000 points, x alternating 0 / 1,000, y climbing 1 px a point (≈ 80 kB of
      JSON): 1-px resampling turned it into 255,000 points before simplification;
    - ``zigzag_canvas``: the same with every segment spanning the whole canvas (x alternating
      0 / 10,000): 2.5 million resampled points, more than 30 s of server CPU before the fix.
    """
    i = np.arange(MAX_POINTS)
    return {
        "zigzag_80kB": [[np.where(i % 2 == 0, 0, 1_000).tolist(), i.tolist()]],
        "zigzag_canvas": [[np.where(i % 2 == 0, 0, 10_000).tolist(), i.tolist()]],
    }


# -- the preprocessing as it was before the bounded resampling (for "before" figures only) ----------


def legacy_rdp(points: np.ndarray, epsilon: float = RDP_EPSILON) -> np.ndarray:
    """RDP as shipped before (one numpy pass per interval, whatever its length)."""
    n = len(points)
    if n < 3:
        return points.copy()
    keep = np.zeros(n, dtype=bool)
    keep[0] = keep[-1] = True
    stack = [(0, n - 1)]
    while stack:
        first, last = stack.pop()
        if last - first < 2:
            continue
        start, end = points[first, :2], points[last, :2]
        inner = points[first + 1 : last, :2]
        direction = end - start
        norm = math.hypot(direction[0], direction[1])
        if norm < 1e-12:
            distances = np.linalg.norm(inner - start, axis=1)
        else:
            distances = (
                np.abs(direction[0] * (inner[:, 1] - start[1]) - direction[1] * (inner[:, 0] - start[0]))
                / norm
            )
        index = int(np.argmax(distances))
        if distances[index] > epsilon:
            keep[first + 1 + index] = True
            stack.append((first, first + 1 + index))
            stack.append((first + 1 + index, last))
    return points[keep]


def legacy_simplify(strokes: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The simplification before: every stroke resampled at 1 px in full, then RDP."""
    min_x, min_y, extent = drawing_frame(strokes)
    scale = SIMPLIFIED_EXTENT / extent
    return [legacy_rdp(resample((s - np.array([min_x, min_y])) * scale, 1.0)) for s in strokes]


def resampled_points(drawing: list, corners: bool) -> int:
    """How many points the simplification hands to RDP (all 1-px samples, or the corner samples)."""
    strokes = validate_drawing(drawing)
    min_x, min_y, extent = drawing_frame(strokes)
    scaled = [(s - np.array([min_x, min_y])) * (SIMPLIFIED_EXTENT / extent) for s in strokes]
    return sum(len(resample_corners(s) if corners else resample(s)) for s in scaled)


# -- timing helpers -------------------------------------------------------------------------------


def percentile_ms(samples: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples) * 1000, q))


def timed(fn: Callable[[], Any], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def per_second(fn: Callable[[Any], Any], items: Sequence[Any]) -> float:
    start = time.perf_counter()
    for item in items:
        fn(item)
    return len(items) / (time.perf_counter() - start)


def top1(guesser: Guesser, views: list[Views], labels: np.ndarray) -> tuple[float, np.ndarray]:
    """Validation top-1 and the predicted classes, 256 prepared drawings at a time."""
    predicted = np.concatenate(
        [guesser.probabilities_from_views(views[i : i + 256]).argmax(1) for i in range(0, len(views), 256)]
    )
    return float((predicted == labels).mean()), predicted


def backend_figures(
    guesser: Guesser, drawings: list, val_views: list[Views] | None, labels: np.ndarray | None, batch: int
) -> dict[str, float]:
    """Batch-1 latency and batched throughput from raw strokes, and validation top-1, for one back-end."""
    out: dict[str, float] = {}
    for d in drawings[:20]:  # warm-up
        guesser.guess(d)
    latencies = [timed(lambda d=d: guesser.guess(d, top_k=3), 1)[0] for d in drawings]
    out["b1_p50_ms"] = percentile_ms(latencies, 50)
    out["b1_p99_ms"] = percentile_ms(latencies, 99)
    chunk = (drawings * math.ceil(batch / len(drawings)))[:batch]
    spent = min(timed(lambda: guesser.guess_batch(chunk), 3))
    out[f"batch{batch}_per_s"] = len(chunk) / spent
    if val_views is not None and labels is not None:
        out["val_top1"], _ = top1(guesser, val_views, labels)
    return out


def cpu_figures(guesser: Guesser, drawings: list) -> dict[str, float]:
    """CPU time per drawing (less sensitive to other load than wall time) of preprocessing and of the
    networks in chunks of ``CHUNK``; guess_batch runs the three at once (preprocessing, the raster
    network and a two-view model's members, each on its own thread), so on two free cores its
    throughput is bounded by their sum shared over the two."""
    start = time.process_time()
    views = [guesser.prepare_views(d) for d in drawings]
    prepare = (time.process_time() - start) / len(drawings)
    start = time.process_time()
    for i in range(0, len(views), CHUNK):
        guesser.probabilities_from_views(views[i : i + CHUNK])
    network = (time.process_time() - start) / len(drawings)
    return {
        "prepare_cpu_ms": prepare * 1000,
        "network_cpu_ms": network * 1000,
        "batched_ceiling_two_free_cores_per_s": 2 / (prepare + network),
    }


def main(argv: list[str] | None = None) -> dict:
    """Run every recognizer benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drawings", type=int, default=300)
    parser.add_argument("--batch", type=int, default=256, help="drawings per guess_batch call")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = default)")
    parser.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated back-ends to compare")
    parser.add_argument("--slow", action="store_true", help="also time the legacy path on the canvas zigzag")
    parser.add_argument("--skip-training", action="store_true")
    parser.add_argument("--json", type=str, default=None, help="also write the figures to this file")
    parser.add_argument("--compare", type=str, default=None,
                        help="a second checkpoint timed on the same drawings, back-end by back-end")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    records = validation_records()
    drawings = sample_drawings(args.drawings, records)
    guesser = Guesser.load(backend="torch")
    results: dict[str, Any] = {"drawings": len(drawings), "torch_threads": torch.get_num_threads()}
    results["load_average_at_start"] = os.getloadavg()[0]

    # preprocessing
    validated = [validate_drawing(d) for d in drawings]
    simplified = [simplify_drawing(v) for v in validated]
    results["simplify_per_s"] = per_second(lambda d: simplify_drawing(validate_drawing(d)), drawings)
    results["simplify_legacy_per_s"] = per_second(lambda d: legacy_simplify(validate_drawing(d)), drawings)
    results["raster_per_s"] = per_second(lambda s: rasterize(s, guesser.spec), simplified)
    results["raster_reference_per_s"] = per_second(
        lambda s: rasterize_reference(s, guesser.spec), simplified[:100]
    )
    same = sum(
        len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
        for a, b in zip(simplified, (legacy_simplify(v) for v in validated), strict=True)
    )
    results["simplified_same_as_legacy"] = f"{same}/{len(simplified)} drawings"

    # the back-ends
    val_views = labels = None
    if records:
        words = {w: i for i, w in enumerate(guesser.labels)}
        kept = [(s, w) for s, w, _ in records if w in words]
        val_views = [guesser.prepare_views(s) for s, _ in kept]
        labels = np.array([words[w] for _, w in kept])
        legacy_views = [guesser.views(legacy_simplify(validate_drawing(s))) for s, _ in kept]
        results["legacy_preprocessing_torch_val_top1"], _ = top1(guesser, legacy_views, labels)
        results["val_drawings"] = len(kept)
    table = {}
    other_views = None  # the compared model's own views: it may read another raster or the pen's path
    if args.compare and records:
        reader = Guesser.load(args.compare, expected_classes=guesser.labels, backend="torch")
        known = set(guesser.labels)
        other_views = [reader.prepare_views(s) for s, w, _ in records if w in known]
    for backend in args.backends.split(","):
        candidate = Guesser.load(backend=backend)
        table[backend] = backend_figures(candidate, drawings, val_views, labels, args.batch)
        if args.compare:  # the same drawings and back-end, one right after the other: hosts differ
            other = Guesser.load(args.compare, expected_classes=guesser.labels, backend=backend)
            table[f"{backend} (compare)"] = backend_figures(other, drawings, other_views, labels, args.batch)
            table[f"{backend} (ratio to compare)"] = {
                key: value / table[f"{backend} (compare)"][key]
                for key, value in table[backend].items() if table[f"{backend} (compare)"].get(key)
            }
        if backend == "onnx-int8":  # the same path without settling near ties in float: their cost
            candidate.near_tie = 0.0
            table["int8-raw"] = backend_figures(candidate, drawings, val_views, labels, args.batch)
            if val_views is not None:
                chunks = [val_views[i : i + 256] for i in range(0, len(val_views), 256)]
                rows = np.concatenate([candidate.probabilities_from_views(chunk) for chunk in chunks])
                settled = int(near_ties(rows).sum())
                results["val_near_ties_settled_in_float"] = f"{settled}/{len(val_views)} drawings"
    results["backends"] = table

    # before: torch with the legacy preprocessing, batch 1 from raw strokes
    def legacy_guess(d: list) -> None:
        views = guesser.views(legacy_simplify(validate_drawing(d)))
        guesser.rank(guesser.probabilities_from_views([views])[0], 3, None)

    for d in drawings[:20]:
        legacy_guess(d)
    legacy = [timed(lambda d=d: legacy_guess(d), 1)[0] for d in drawings]
    results["legacy_torch_b1_p50_ms"] = percentile_ms(legacy, 50)

    # live session, default back-end
    live = Guesser.load()
    per_stroke = []
    for d in drawings[:100]:
        session = live.session()
        for stroke in d:
            start = time.perf_counter()
            session.add_stroke(stroke)
            per_stroke.append(time.perf_counter() - start)
    results["default_backend"] = live.backend
    results.update(cpu_figures(live, drawings))
    results["session_stroke_p50_ms"] = percentile_ms(per_stroke, 50)
    results["session_stroke_p99_ms"] = percentile_ms(per_stroke, 99)

    # the worst drawings the validator allows
    worst = {}
    for name, drawing in worst_drawings().items():
        entry: dict[str, Any] = {"json_bytes": len(json.dumps(drawing, separators=(",", ":")))}
        entry["resampled_points_legacy"] = resampled_points(drawing, corners=False)
        entry["resampled_points_now"] = resampled_points(drawing, corners=True)
        entry["prepare_ms_now"] = min(timed(lambda d=drawing: live.prepare_views(d), 3)) * 1000
        if name != "zigzag_canvas" or args.slow:
            spent = timed(lambda d=drawing: rasterize(legacy_simplify(validate_drawing(d)), live.spec), 1)
            entry["prepare_ms_legacy"] = spent[0] * 1000
        else:
            entry["prepare_ms_legacy"] = "> 30,000 (--slow to measure)"
        worst[name] = entry
    results["worst"] = worst
    if not args.skip_training:
        results["train_samples_per_s"] = training_throughput(guesser)
    results["load_average_at_end"] = os.getloadavg()[0]
    report(results)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=2)
    return results


def report(results: dict[str, Any]) -> None:
    """Print the figures: plain ones, the back-end table, the worst drawings."""
    plain = {k: v for k, v in results.items() if not isinstance(v, dict)}
    width = max(len(k) for k in plain)
    for key, value in plain.items():
        if key.endswith("top1"):
            print(f"{key:<{width}}  {value * 100:.2f} %")
        else:
            print(f"{key:<{width}}  {value:,.2f}" if isinstance(value, float) else f"{key:<{width}}  {value}")
    print(f"{'raster speed-up (OpenCV / reference)':<{width}}  "
          f"{results['raster_per_s'] / results['raster_reference_per_s']:.1f}×")
    print(f"{'simplify speed-up (now / legacy)':<{width}}  "
          f"{results['simplify_per_s'] / results['simplify_legacy_per_s']:.1f}×")
    print("\nback-end               b1 p50 ms  b1 p99 ms  batched/s  val top-1")
    for name, row in results["backends"].items():
        batched = next(v for k, v in row.items() if k.startswith("batch"))
        top = f"{row['val_top1'] * 100:.2f} %" if "val_top1" in row else "—"
        print(f"{name:<21}  {row['b1_p50_ms']:9.2f}  {row['b1_p99_ms']:9.2f}  {batched:9,.0f}  {top:>9}")
    print("\nworst drawing   JSON bytes  points to RDP (legacy → now)  prepare ms (legacy → now)")
    for name, row in results["worst"].items():
        legacy = row["prepare_ms_legacy"]
        legacy_text = f"{legacy:,.0f}" if isinstance(legacy, float) else legacy
        print(f"{name:<14}  {row['json_bytes']:>10,}  {row['resampled_points_legacy']:>12,} → "
              f"{row['resampled_points_now']:<12,}  {legacy_text} → {row['prepare_ms_now']:,.0f}")


def training_throughput(guesser: Guesser, steps: int = 8, batch: int = 128) -> float:
    """Samples/s of the shipped architecture's training step (augment + raster + forward/backward)."""
    from training.augment import AugmentConfig, augment
    from training.train import TrainConfig, as_nhwc, use_bf16

    config = TrainConfig()
    arch = guesser.metadata["architecture"]
    from model.network import create_model

    network = create_model(
        arch["name"],
        in_channels=len(guesser.spec.channels),
        num_classes=len(guesser.labels),
        **arch["kwargs"],
    ).to(memory_format=torch.channels_last)  # as training.train lays it out
    optimizer = torch.optim.AdamW(network.parameters(), lr=1e-3)
    drawings = [simplify_drawing(validate_drawing(d)) for d in sample_drawings(batch)]
    rng = np.random.default_rng(0)
    bf16 = use_bf16(config.bf16, torch.device("cpu"))
    spent = 0.0
    for step in range(steps + 1):
        start = time.perf_counter()
        images = np.stack([rasterize(augment(d, rng, AugmentConfig()), guesser.spec) for d in drawings])
        labels = torch.from_numpy(rng.integers(0, len(guesser.labels), size=len(drawings)))
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = network(as_nhwc(torch.from_numpy(images), torch.device("cpu")))
            loss = torch.nn.functional.cross_entropy(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step:  # the first step warms up
            spent += time.perf_counter() - start
    return steps * len(drawings) / spent


if __name__ == "__main__":
    main()
