"""The serving bundle (`model.bundle`): the shipped model served without importing PyTorch, with the
answers of the checkpoint loaded through PyTorch; a bundle made from another file is ignored, a
changed one refused."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from model import CheckpointError, Guesser
from model.bundle import (
    file_sha256,
    float_path,
    manifest_digest,
    manifest_path,
    members_path,
    read_bundle,
)
from model.bundler import write_bundle
from model.guesser import DEFAULT_WEIGHTS
from model.runtime import int8_path
from tests.conftest import FIXTURE_WORDS, REPO, shape


def drawings(count: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    return [shape(FIXTURE_WORDS[i % len(FIXTURE_WORDS)], rng) for i in range(count)]


def copy_shipped(folder: Path, with_bundle: bool = True) -> Path:
    """The shipped checkpoint and its int8 copy copied into ``folder`` (as ``model.pt``), with the
    rest of its bundle or without."""
    target = folder / "model.pt"
    shutil.copy(DEFAULT_WEIGHTS, target)
    shutil.copy(int8_path(DEFAULT_WEIGHTS), int8_path(target))
    if with_bundle:
        for where in (float_path, members_path):
            if where(DEFAULT_WEIGHTS).is_file():  # a raster-only model has no members' graph
                shutil.copy(where(DEFAULT_WEIGHTS), where(target))
        manifest = json.loads(manifest_path(DEFAULT_WEIGHTS).read_text())
        for entry in manifest["files"].values():  # the ONNX files are named after the checkpoint
            entry["name"] = entry["name"].replace(DEFAULT_WEIGHTS.stem, target.stem)
        write_manifest(target, manifest)
    return target


def write_manifest(checkpoint: Path, manifest: dict, digest: bool = True) -> None:
    if digest:
        manifest["digest"] = manifest_digest(manifest)
    manifest_path(checkpoint).write_text(json.dumps(manifest))


def test_the_serving_path_never_imports_torch() -> None:
    code = (
        "import sys, service.app, model; from model import Guesser; g = Guesser.load(); "
        "g.guess([[[0, 40, 80], [0, 30, 0]], [[10, 70], [50, 50]]]); "
        "torch = sorted(m for m in sys.modules if m.split('.')[0] == 'torch'); "
        "print(g.backend, g.member and g.member.backend, g.network, torch)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.split() == ["onnx-int8", "None", "None", "[]"]  # the shipped model: raster only


def test_torch_is_imported_at_the_top_of_no_serving_module() -> None:
    """Only the PyTorch networks import torch at the top of a module; elsewhere in ``model`` it is
    imported where the PyTorch path needs it, and ``service``, ``games`` and ``vocab`` never do."""
    top_level, anywhere = set(), set()
    for package in ("model", "service", "games", "vocab"):
        for path in sorted((REPO / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            imports = {
                (node, name.split(".")[0])
                for node in ast.walk(tree)
                for name in (
                    [a.name for a in node.names] if isinstance(node, ast.Import)
                    else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                )
            }
            rel = path.relative_to(REPO).as_posix()
            anywhere |= {rel for _, name in imports if name == "torch"}
            top_level |= {rel for node, name in imports if name == "torch" and node in tree.body}
    assert top_level == {"model/network.py", "model/sequence.py", "model/tfjs.py"}
    assert all(rel.startswith("model/") for rel in anywhere)


def test_the_shipped_bundle_was_made_from_the_shipped_weights() -> None:
    bundle = read_bundle(DEFAULT_WEIGHTS)
    assert bundle is not None and sorted(bundle.files) == ["raster_float", "raster_int8"]  # raster only
    assert bundle.manifest["checkpoint_sha256"] == file_sha256(DEFAULT_WEIGHTS)
    assert sum(path.stat().st_size for path in bundle.files.values()) < 16 * 1024 * 1024


def test_the_bundle_answers_as_the_checkpoint_through_torch(tmp_path: Path) -> None:
    served = Guesser.load()
    assert served.network is None and served.backend == "onnx-int8"  # from the bundle
    alone = Guesser.load(copy_shipped(tmp_path, with_bundle=False))  # through PyTorch, int8 copy beside
    assert alone.network is not None and alone.backend == "onnx-int8"
    reference = Guesser.load(backend="torch")
    assert reference.network is not None
    assert served.labels == alone.labels and served.metadata == alone.metadata
    assert (served.temperature, served.pair_temperature, served.view_pool, served.flip_tta) == (
        alone.temperature, alone.pair_temperature, alone.view_pool, alone.flip_tta
    )
    views = [reference.prepare_views(d) for d in drawings(50, seed=11)]
    got, wanted = served.probabilities_from_views(views), alone.probabilities_from_views(views)
    assert np.array_equal(got.argmax(1), wanted.argmax(1))
    assert np.abs(got - wanted).max() < 1e-5  # the same ONNX graphs
    float_bundle = Guesser.load(backend="onnx")
    assert float_bundle.network is None and float_bundle.backend == "onnx"
    exact = reference.probabilities_from_views(views)
    assert np.abs(float_bundle.probabilities_from_views(views) - exact).max() < 1e-4
    served.near_tie = np.inf  # every answer settled by the float network: the reference's
    assert np.allclose(served.probabilities_from_views(views), exact, atol=1e-4)
    assert (got.argmax(1) == exact.argmax(1)).mean() >= 0.9


def test_a_changed_bundle_is_refused(tmp_path: Path) -> None:
    checkpoint = copy_shipped(tmp_path)
    assert Guesser.load(checkpoint).network is None  # the copy serves from its bundle
    manifest = json.loads(manifest_path(checkpoint).read_text())

    edited = {**manifest, "temperature": 0.3}
    write_manifest(checkpoint, edited, digest=False)
    with pytest.raises(CheckpointError, match="manifest was modified"):
        Guesser.load(checkpoint)
    write_manifest(checkpoint, {**manifest, "classes": manifest["classes"][::-1]})  # digest redone
    with pytest.raises(CheckpointError, match="fingerprint mismatch"):
        Guesser.load(checkpoint)
    write_manifest(checkpoint, dict(manifest))
    with pytest.raises(CheckpointError, match="class list does not match"):
        Guesser.load(checkpoint, expected_classes=manifest["classes"][:-1])

    graph = float_path(checkpoint).read_bytes()
    float_path(checkpoint).write_bytes(graph[:-1] + bytes([graph[-1] ^ 1]))
    with pytest.raises(CheckpointError, match="float.onnx is not the file it was made with"):
        Guesser.load(checkpoint, backend="onnx")
    float_path(checkpoint).unlink()
    with pytest.raises(CheckpointError, match="raster_float file .* is missing"):
        Guesser.load(checkpoint)
    manifest_path(checkpoint).write_text("{not json")
    with pytest.raises(CheckpointError, match="cannot read the serving manifest"):
        Guesser.load(checkpoint)
    assert Guesser.load(checkpoint, backend="torch").backend == "torch"  # the checkpoint itself


def test_a_bundle_of_another_checkpoint_is_ignored(tiny_checkpoint: Path, tmp_path: Path) -> None:
    checkpoint = copy_shipped(tmp_path)
    shutil.copy(tiny_checkpoint, checkpoint)  # other weights under the bundle's checkpoint name
    stale = Guesser.load(checkpoint)  # through PyTorch: the bundle's int8 copy is not of these weights
    assert stale.network is not None and stale.backend == "onnx" and stale.member is None
    assert len(stale.labels) != 345


def test_write_bundle_serves_a_two_view_checkpoint(two_view_checkpoint: Path, tmp_path: Path) -> None:
    checkpoint = tmp_path / "two-view.pt"
    shutil.copy(two_view_checkpoint, checkpoint)
    reference = Guesser.load(checkpoint)  # no bundle: the float ONNX export at load, no int8 copy
    written = write_bundle(checkpoint)
    assert [path.name for path in written] == [
        "two-view.float.onnx", "two-view.members.onnx", "two-view.serving.json"
    ]  # fmt: skip
    served = Guesser.load(checkpoint)
    assert served.network is None and served.backend == "onnx" and served.member is not None
    assert served.member.count == 1 and served.member.backend == "onnx"
    views = [reference.prepare_views(d) for d in drawings(20, seed=2)]
    got, wanted = served.probabilities_from_views(views), reference.probabilities_from_views(views)
    assert np.abs(got - wanted).max() < 1e-5
    with pytest.raises(CheckpointError, match="does not exist"):  # no int8 copy: the torch path says so
        Guesser.load(checkpoint, backend="onnx-int8")
