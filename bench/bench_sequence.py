"""The stroke-sequence member beside the shipped raster model: would the pair fit the recognizer's
speed targets (batch-1 p50 ≤ 2 ms from raw strokes, ≥ 1,000 drawings/s)? Batch-1 latency, batched
throughput and validation top-1 of the raster model alone, the member alone (PyTorch and ONNX
Runtime) and the two averaged. Run: ``python -m bench.bench_sequence [--member PATH]``.

The member is an experiment (``python -m training.sequence``), not shipped: without its checkpoint
this benchmark says how to make one and stops.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bench.bench_model import percentile_ms, sample_drawings, timed, validation_records
from model import Guesser
from model.guesser import CHUNK
from model.raster import rasterize
from model.runtime import onnx_session
from model.sequence import export_member_onnx, featurize, load_member, pad_sequences
from model.strokes import simplify_drawing, validate_drawing

SEQUENCE_BATCH = 64  # drawings of similar length per member call (little padding)


def member_runner(path: Path, backend: str) -> Callable[[list[np.ndarray]], np.ndarray]:
    """Probabilities of the member for featurized drawings, in length-sorted groups."""
    network = load_member(path)
    if backend == "torch":

        def run_group(batch: torch.Tensor, lengths: torch.Tensor) -> np.ndarray:
            with torch.inference_mode():
                return torch.softmax(network(batch, lengths), dim=1).numpy()
    else:
        onnx_file = Path(tempfile.mkdtemp()) / "member.onnx"
        session = onnx_session(export_member_onnx(network, onnx_file))

        def run_group(batch: torch.Tensor, lengths: torch.Tensor) -> np.ndarray:
            return session.run(None, {"sequences": batch.numpy(), "lengths": lengths.numpy()})[0]

    def run(features: list[np.ndarray]) -> np.ndarray:
        order = np.argsort([len(f) for f in features], kind="stable")
        out = np.empty((len(features), len(network.head[-1].bias)), dtype=np.float32)
        for start in range(0, len(order), SEQUENCE_BATCH):
            rows = order[start : start + SEQUENCE_BATCH]
            batch, lengths = pad_sequences([features[i] for i in rows])
            out[rows] = run_group(batch, lengths)
        return out

    return run


def simplified(drawings: Sequence[Any]) -> list[list[np.ndarray]]:
    """Raw canvas drawings as the dataset's simplified strokes (what both models read)."""
    return [simplify_drawing(validate_drawing(d)) for d in drawings]


def main(argv: list[str] | None = None) -> dict:
    """Time and score the raster model, the member and their average; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--member", type=Path, default=Path("runs/sequence/sequence.pt"))
    parser.add_argument("--drawings", type=int, default=300)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args(argv)
    if not args.member.exists():
        print(f"no stroke-sequence member at {args.member}: make one with "
              "`python -m training.sequence --minutes 40 --out runs/sequence` (needs the data folder)")
        return {}
    torch.set_num_threads(1)
    guesser = Guesser.load()  # the shipped model on its default back-end
    spec = guesser.spec
    records = validation_records()
    drawings = sample_drawings(args.drawings, records)
    members = {backend: member_runner(args.member, backend) for backend in ("torch", "onnx")}
    results: dict[str, Any] = {"raster_backend": guesser.backend, "drawings": len(drawings),
                               "load_average_at_start": os.getloadavg()[0]}

    def raster_one(d: Any) -> np.ndarray:
        return guesser.probabilities_from_images(rasterize(simplify_drawing(validate_drawing(d)), spec)[None])

    def member_one(backend: str) -> Callable[[Any], np.ndarray]:
        return lambda d: members[backend]([featurize(simplify_drawing(validate_drawing(d)))])

    def pair_one(d: Any) -> np.ndarray:
        strokes = simplify_drawing(validate_drawing(d))  # simplified once, read by both
        image = guesser.probabilities_from_images(rasterize(strokes, spec)[None])
        return (image + members["onnx"]([featurize(strokes)])) / 2

    def raster_many(strokes: list) -> np.ndarray:
        images = np.stack([rasterize(s, spec) for s in strokes])
        return np.concatenate(
            [guesser.probabilities_from_images(images[i : i + CHUNK]) for i in range(0, len(images), CHUNK)]
        )

    def member_many(backend: str) -> Callable[[list], np.ndarray]:
        return lambda strokes: members[backend]([featurize(s) for s in strokes])

    def pair_many(strokes: list) -> np.ndarray:
        return (raster_many(strokes) + members["onnx"]([featurize(s) for s in strokes])) / 2

    pool = ThreadPoolExecutor(1)

    def both_networks(images: np.ndarray, features: list[np.ndarray]) -> np.ndarray:
        return (guesser.probabilities_from_images(images) + members["onnx"](features)) / 2

    def pair_pipelined(raw: Sequence[Any]) -> np.ndarray:
        """As ``Guesser.guess_batch``: this thread prepares chunk k + 1 (simplify, rasterize,
        featurize) while the other runs both networks on chunk k (ONNX Runtime releases the GIL)."""
        parts, running = [], None
        for start in range(0, len(raw), CHUNK):
            strokes = simplified(raw[start : start + CHUNK])
            images = np.stack([rasterize(s, spec) for s in strokes])
            features = [featurize(s) for s in strokes]
            if running is not None:
                parts.append(running.result())
            running = pool.submit(both_networks, images, features)
        parts.append(running.result())
        return np.concatenate(parts)

    single = {"raster": raster_one, "member_torch": member_one("torch"), "member_onnx": member_one("onnx"),
              "pair_onnx": pair_one}
    many = {"raster": raster_many, "member_torch": member_many("torch"), "member_onnx": member_many("onnx"),
            "pair_onnx": pair_many}
    chunk = (drawings * (args.batch // max(len(drawings), 1) + 1))[: args.batch]
    table: dict[str, dict[str, float]] = {}
    for name, one in single.items():
        for d in drawings[:20]:  # warm-up
            one(d)
        latencies = [timed(lambda d=d, one=one: one(d), 1)[0] for d in drawings]
        # batched from raw strokes: the simplification is part of the cost, once per drawing
        spent = min(timed(lambda name=name: many[name](simplified(chunk)), 3))
        table[name] = {"b1_p50_ms": percentile_ms(latencies, 50), "b1_p99_ms": percentile_ms(latencies, 99),
                       f"batch{args.batch}_per_s": len(chunk) / spent}
    pipelined = {"raster_guess_batch": guesser.guess_batch, "pair_onnx_pipelined": pair_pipelined}
    for name, run in pipelined.items():
        spent = min(timed(lambda run=run: run(chunk), 3))
        table[name] = {f"batch{args.batch}_per_s": len(chunk) / spent}
    if records:
        words = {w: i for i, w in enumerate(guesser.labels)}
        kept = [(s, words[w]) for s, w, _ in records if w in words]
        strokes = simplified([s for s, _ in kept])
        labels = np.array([label for _, label in kept])
        for name in ("raster", "member_onnx", "pair_onnx"):
            table[name]["val_top1"] = float((many[name](strokes).argmax(1) == labels).mean())
        results["val_drawings"] = len(kept)
    results["models"] = table
    results["load_average_at_end"] = os.getloadavg()[0]
    print(json.dumps(results, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
