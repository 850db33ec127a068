"""Recognizer benchmarks: rasterizer drawings/s, guess latency (batch 1, p50/p99), batched throughput,
live-session cost per stroke, and training samples/s. Run: ``python -m bench.bench_model``.

Uses validation drawings from the Quick, Draw! folder when present (raw canvas strokes, as a live
player sends them), else generated shapes.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch

from model import Guesser
from model.raster import rasterize, rasterize_reference
from model.strokes import simplify_drawing, validate_drawing


def sample_drawings(count: int) -> list:
    """Raw drawings from the validation split, or generated ones without data."""
    try:
        from training.data import load_dataset

        records = [r for r in load_dataset(split="val") if r.source == "raw"]
        return [r.strokes for r in records[:count]]
    except Exception:  # noqa: BLE001 - no data folder: fall back to synthetic drawings
        rng = np.random.default_rng(0)
        drawings = []
        for _ in range(count):
            angles = np.linspace(0, 2 * math.pi, 60)
            r = rng.uniform(50, 300)
            drawings.append([[(400 + r * np.cos(angles)).tolist(), (300 + r * np.sin(angles)).tolist()]])
        return drawings


def percentile_ms(samples: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples) * 1000, q))


def timed(fn, repeats: int) -> list[float]:  # noqa: ANN001
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def main(argv: list[str] | None = None) -> dict:
    """Run every recognizer benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drawings", type=int, default=300)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = default)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    guesser = Guesser.load()
    drawings = sample_drawings(args.drawings)
    simplified = [simplify_drawing(validate_drawing(d)) for d in drawings]
    results: dict[str, float] = {"drawings": len(drawings), "torch_threads": torch.get_num_threads()}

    start = time.perf_counter()
    for d in drawings:
        simplify_drawing(validate_drawing(d))
    results["simplify_per_s"] = len(drawings) / (time.perf_counter() - start)
    start = time.perf_counter()
    for s in simplified:
        rasterize(s, guesser.spec)
    results["raster_per_s"] = len(drawings) / (time.perf_counter() - start)
    start = time.perf_counter()
    for s in simplified[:100]:
        rasterize_reference(s, guesser.spec)
    results["raster_reference_per_s"] = min(100, len(drawings)) / (time.perf_counter() - start)

    for d in drawings[:20]:  # warm-up
        guesser.guess(d)
    latencies = [timed(lambda d=d: guesser.guess(d, top_k=3), 1)[0] for d in drawings]
    results["guess_b1_p50_ms"] = percentile_ms(latencies, 50)
    results["guess_b1_p99_ms"] = percentile_ms(latencies, 99)

    for batch in (32, 128):
        chunk = drawings[:batch]
        spent = sum(timed(lambda chunk=chunk: guesser.guess_batch(chunk), 3)) / 3
        results[f"batch{batch}_drawings_per_s"] = len(chunk) / spent

    per_stroke = []
    for d in drawings[:100]:
        session = guesser.session()
        for stroke in d:
            start = time.perf_counter()
            session.add_stroke(stroke)
            per_stroke.append(time.perf_counter() - start)
    results["session_stroke_p50_ms"] = percentile_ms(per_stroke, 50)
    results["session_stroke_p99_ms"] = percentile_ms(per_stroke, 99)
    results["train_samples_per_s"] = training_throughput(guesser)

    width = max(len(k) for k in results)
    for key, value in results.items():
        print(f"{key:<{width}}  {value:,.2f}" if isinstance(value, float) else f"{key:<{width}}  {value}")
    speedup = results["raster_per_s"] / results["raster_reference_per_s"]
    print(f"{'raster speed-up (OpenCV / reference)':<{width}}  {speedup:.1f}×")
    return results


def training_throughput(guesser: Guesser, steps: int = 8, batch: int = 128) -> float:
    """Samples/s of the shipped architecture's training step (augment + raster + forward/backward)."""
    from training.augment import AugmentConfig, augment
    from training.train import TrainConfig, use_bf16

    config = TrainConfig()
    arch = guesser.metadata["architecture"]
    from model.network import create_model

    network = create_model(
        arch["name"],
        in_channels=len(guesser.spec.channels),
        num_classes=len(guesser.labels),
        **arch["kwargs"],
    )
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
            loss = torch.nn.functional.cross_entropy(network(torch.from_numpy(images)), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step:  # the first step warms up
            spent += time.perf_counter() - start
    return steps * len(drawings) / spent


if __name__ == "__main__":
    main()
