"""The public models as our own modules (`model.tfjs.PublicNetwork`, committed in model/public/), the
bitmap raster style they read, and committees of raster networks (`model.network.Committee`,
`griffon model committee`): checked against the public models' own answers on the drawings the
product ships, exportable to ONNX, trainable."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from model import Guesser
from model.bitmap import in_box, render
from model.checkpoint import CheckpointError, fingerprint, make_input_contract
from model.network import create_model
from model.raster import RasterSpec, rasterize
from model.runtime import export_onnx, onnx_session
from model.strokes import simplify_drawing, validate_drawing
from model.tfjs import PUBLIC_DIR, PUBLIC_MODELS, PublicModelError, public_folder, read_layers_model
from training.committee import write_committee
from training.teachers import Teacher, read_our_classes

PACK = Path(__file__).resolve().parent.parent / "games/data/drawings/quickdraw-validation-pack.ndjson.gz"
CLASSES = read_our_classes()


def pack_drawings(count: int = 200) -> tuple[list[list], np.ndarray]:
    """``count`` recognized drawings of the shipped drawing pack (validation-split Quick, Draw!
    drawings, in the product) spread over its words, and their class indices."""
    with gzip.open(PACK, "rt", encoding="utf-8") as lines:
        items = [json.loads(line) for line in lines]
    items = [item for item in items if item.get("recognized", True)]
    chosen = items[:: max(1, len(items) // count)][:count]
    return [item["drawing"] for item in chosen], np.array([CLASSES.index(item["word"]) for item in chosen])


def bitmaps(drawings: list[list]) -> np.ndarray:
    """The ``(n, 1, 28, 28)`` renders the public models read, through the live path's simplification."""
    spec = RasterSpec.bitmap()
    return np.stack([rasterize(simplify_drawing(validate_drawing(d)), spec) for d in drawings])


def test_the_weights_and_their_licences_are_committed() -> None:
    for name in PUBLIC_MODELS:
        folder = public_folder(name)
        assert (folder / "model.json").is_file() and (folder / "LICENSE").is_file()
        assert "MIT License" in (folder / "LICENSE").read_text(encoding="utf-8")
    with pytest.raises(PublicModelError, match="unknown public model"):
        public_folder("vgg")


@pytest.mark.parametrize("source", PUBLIC_MODELS)
def test_public_network_gives_the_public_models_answers_in_our_order(source: str) -> None:
    """Our module's softmax is the published graph's answer, its columns moved to our class order."""
    drawings, _ = pack_drawings(16)
    images = bitmaps(drawings)
    network = create_model("public", in_channels=1, num_classes=345, source=source, classes=CLASSES).eval()
    teacher = Teacher.load(PUBLIC_DIR / source)
    with torch.inference_mode():
        ours = torch.softmax(network(torch.from_numpy(images)), dim=1).numpy()
    np.testing.assert_allclose(ours, teacher.image_probabilities(images[:, 0]), atol=1e-5)


@pytest.mark.parametrize(("source", "floor"), [("quickdraw-resnet", 0.65), ("doodlenet", 0.6)])
def test_public_networks_read_the_shipped_drawings(source: str, floor: float) -> None:
    """Reference answers: on 200 validation drawings of the drawing pack the public models read about
    75 % (their published accuracy on the dataset is 85–90 %); a wrong layer, kernel order, padding or
    render reads a few per cent."""
    drawings, labels = pack_drawings(200)
    network = create_model("public", in_channels=1, num_classes=345, source=source, classes=CLASSES).eval()
    with torch.inference_mode():
        answers = network(torch.from_numpy(bitmaps(drawings))).argmax(dim=1).numpy()
    assert (answers == labels).mean() >= floor


def test_a_subset_of_classes_keeps_those_columns() -> None:
    drawings, _ = pack_drawings(8)
    images = torch.from_numpy(bitmaps(drawings))
    subset = ["cat", "house", "circle"]
    small = create_model("public", in_channels=1, num_classes=3, classes=subset).eval()
    whole = create_model("public", in_channels=1, num_classes=345, classes=CLASSES).eval()
    columns = [CLASSES.index(name) for name in subset]
    with torch.inference_mode():
        torch.testing.assert_close(small(images), whole(images)[:, columns])
    with pytest.raises(ValueError, match="class names"):
        create_model("public", in_channels=1, num_classes=4, classes=subset)
    with pytest.raises(ValueError, match="one channel"):
        create_model("public", in_channels=2, num_classes=3, classes=subset)


def test_public_network_trains_and_exports_to_onnx() -> None:
    network = create_model("public", in_channels=1, num_classes=345, source="doodlenet", classes=CLASSES)
    images = torch.rand(4, 1, 28, 28)
    loss = torch.nn.functional.cross_entropy(network(images), torch.tensor([0, 1, 2, 3]))
    loss.backward()
    trainable = [p for p in network.parameters() if p.requires_grad]
    assert trainable and all(p.grad is not None for p in trainable)
    network.eval()
    session = onnx_session(export_onnx(network, 1, 28))
    with torch.inference_mode():
        expected = network(images).numpy()
    np.testing.assert_allclose(session.run(None, {"images": images.numpy()})[0], expected, atol=1e-4)


def test_bitmap_style_is_the_public_render_of_the_simplified_drawing() -> None:
    drawings, _ = pack_drawings(4)
    spec = RasterSpec.bitmap()
    for drawing in drawings:
        simplified = in_box(simplify_drawing(validate_drawing(drawing)))  # top-left 0, longer side 255
        np.testing.assert_allclose(rasterize(simplified, spec)[0], render(simplified), atol=1e-6)
        moved = [stroke * 0.5 + 300 for stroke in simplified]  # any frame: placed in the 256 box first
        np.testing.assert_allclose(rasterize(moved, spec), rasterize(simplified, spec), atol=1e-5)
    assert RasterSpec.from_dict(spec.to_dict()) == spec
    with pytest.raises(ValueError, match="one channel"):
        RasterSpec(28, 16.0, 16.0, ("ink", "order"), "bitmap")
    with pytest.raises(ValueError, match="unknown raster style"):
        RasterSpec(style="svg")


def test_fit_style_contracts_are_unchanged() -> None:
    """A spec of the default style stores no style: checkpoints written before styles keep their
    fingerprint."""
    spec = RasterSpec(size=48, line_width=1.6, channels=("ink", "order"))
    assert "style" not in spec.to_dict()
    contract = {"preprocessing": "quickdraw-simplified/1", "raster": {"size": 48, "line_width": 1.6,
                "margin": 2.0, "channels": ["ink", "order"]}}
    assert fingerprint(["a"], make_input_contract(spec)) == fingerprint(["a"], contract)


def test_committee_is_the_geometric_mean_of_its_members_at_their_temperatures() -> None:
    members = [{"name": "public", "kwargs": {"source": name, "classes": CLASSES}} for name in PUBLIC_MODELS]
    committee = create_model("committee", in_channels=1, num_classes=345, members=members,
                             temperatures=[2.0, 1.0]).eval()
    images = torch.from_numpy(bitmaps(pack_drawings(6)[0]))
    with torch.inference_mode():
        pooled = torch.softmax(committee(images), dim=1)
        logs = [
            torch.log_softmax(m(images) / t, dim=1)
            for m, t in zip(committee.members, [2.0, 1.0], strict=True)
        ]
        expected = torch.softmax(torch.stack(logs).mean(dim=0), dim=1)
    torch.testing.assert_close(pooled, expected)
    with pytest.raises(ValueError, match="at least one member"):
        create_model("committee", members=[])
    with pytest.raises(ValueError, match="temperature"):
        create_model("committee", in_channels=1, members=members, temperatures=[1.0])


def test_committee_command_writes_a_checkpoint_the_guesser_serves(tmp_path: Path) -> None:
    """`griffon model committee public:quickdraw-resnet public:doodlenet` → a raster checkpoint that
    `Guesser.load` reads on PyTorch and ONNX Runtime alike, reading the pack as well as its members."""
    out = write_committee(["public:quickdraw-resnet", "public:doodlenet"], tmp_path / "both.pt")
    drawings, labels = pack_drawings(60)
    reference = Guesser.load(out, backend="torch")
    served = Guesser.load(out, backend="onnx")
    assert reference.spec == RasterSpec.bitmap()
    answers = reference.guess_batch(drawings, top_k=1)
    top1 = np.array([CLASSES.index(guesses[0].label) for guesses in answers])
    assert (top1 == labels).mean() >= 0.65
    np.testing.assert_allclose(
        served.probabilities_from_views([served.prepare_views(d) for d in drawings[:8]]),
        reference.probabilities_from_views([reference.prepare_views(d) for d in drawings[:8]]),
        atol=1e-4,
    )
    assert reference.metadata["training"]["holdout"] == ""  # no member of ours held anything out
    with pytest.raises(CheckpointError, match="would write over"):
        write_committee([str(out), "public:doodlenet"], out)


def test_committee_refuses_members_that_read_another_raster(tiny_checkpoint: Path, tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="classes differ|raster spec differs"):
        write_committee([str(tiny_checkpoint), "public:doodlenet"], tmp_path / "mixed.pt")


def test_a_layers_folder_without_weights_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "model.json").write_text(json.dumps({"format": "layers-model"}))
    with pytest.raises(PublicModelError, match="not a TensorFlow.js layers model"):
        read_layers_model(tmp_path)
