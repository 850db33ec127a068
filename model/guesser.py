"""The public recognizer: ``Guesser`` (drawings, batches) and ``GuessSession`` (live, stroke by stroke)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from model.bundle import Bundle, read_bundle
from model.checkpoint import (
    DEFAULT_VIEW_POOL,
    CheckpointError,
    read_checkpoint,
    sequence_members,
    unknown_view_pool,
)
from model.raster import RasterSpec, rasterize
from model.runtime import (
    CHUNK,
    BackendError,
    Runner,
    default_backend,
    onnx_runner,
    onnx_session,
    onnx_source,
    select_runner,
    torch_runner,
)
from model.sequence_view import FEATURES, MAX_STEPS, SequenceView, featurize
from model.strokes import (
    MAX_POINTS,
    MAX_STROKES,
    DrawingError,
    drawing_frame,
    simplify_drawing,
    validate_drawing,
    validate_stroke,
)

if TYPE_CHECKING:
    import torch

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
DEFAULT_WEIGHTS = WEIGHTS_DIR / "griffon-default.pt"
MAX_BATCH = 512
# prepared once by Guesser.load, so the first player does not wait for the simplification kernels to
# compile (about 8 s on a fresh install, then read from numba's on-disk cache in a fraction of a second)
WARM_UP_DRAWING = [[[0, 40, 80], [0, 30, 0]], [[10, 70], [50, 50]]]
# On the int8 back-end, an answer whose two best classes are closer than this (in log-probability)
# is computed again with the float raster network: int8 rounding flips only such near ties (on 9,000
# answers to training drawings outside the calibration sample, every flip was within 0.06 but one, 0.2)
NEAR_TIE = 0.1


@dataclass(frozen=True)
class Guess:
    """One guess: an official category label and its probability."""

    label: str
    prob: float


@dataclass(frozen=True)
class Views:
    """What the model reads of one drawing: its raster ``(channels, size, size)`` and, for a
    two-view model, its pen path (``model.sequence.featurize``; ``None`` otherwise)."""

    image: np.ndarray
    sequence: np.ndarray | None = None


class Guesser:
    """A trained sketch recognizer. Thread-safe; inference runs on the CPU.

    ``network`` is the float PyTorch module (the reference; ``None`` when served from a bundle,
    :mod:`model.bundle`); ``runner``, when given, computes the logits instead (e.g. ONNX Runtime, see
    :mod:`model.runtime`) and ``backend`` names it. With a ``member`` (a two-view model) the
    probabilities pool the raster network's and the stroke-sequence view's (itself the average of one
    or more members) as ``view_pool`` says (:func:`pool_views`). On the ``onnx-int8`` back-end a near
    tie (:data:`NEAR_TIE`) is settled by the float network (``exact_runner``, else ``network``)."""

    def __init__(
        self,
        network: torch.nn.Module | None,
        classes: list[str],
        spec: RasterSpec,
        temperature: float = 1.0,
        metadata: dict[str, Any] | None = None,
        flip_tta: bool = False,
        runner: Runner | None = None,
        backend: str = "torch",
        member: SequenceView | None = None,
        pair_temperature: float = 1.0,
        view_pool: str = DEFAULT_VIEW_POOL,
        exact_runner: Runner | None = None,
    ) -> None:
        if (problem := unknown_view_pool(view_pool)) is not None:
            raise ValueError(problem)
        if network is None and (runner is None or (backend == "onnx-int8" and exact_runner is None)):
            raise ValueError("a Guesser without a network needs a runner (on onnx-int8, an exact_runner too)")
        self.network = network.eval() if network is not None else None
        self.member = member
        self.pair_temperature = float(pair_temperature)  # softens the two views' pool
        self.view_pool = view_pool
        self.backend = backend if runner is not None else "torch"
        self._run = runner or torch_runner(network)
        # the float network, for the int8 back-end's near ties (its own lock: it may run beside it)
        self._exact = None
        if self.backend == "onnx-int8":
            self._exact = exact_runner or torch_runner(network)
        self._exact_lock = threading.Lock()
        self.near_tie = NEAR_TIE
        self.labels = list(classes)
        self.spec = spec
        self.temperature = float(temperature)
        self.metadata = metadata or {}
        self.flip_tta = flip_tta
        self._index = {label: i for i, label in enumerate(self.labels)}
        self._lock = threading.Lock()
        self._pipeline: ThreadPoolExecutor | None = None
        # the member runs on this thread beside the raster network (the thread starts on first use)
        self._member_thread: ThreadPoolExecutor | None = None
        if member is not None:
            self._member_thread = ThreadPoolExecutor(1, thread_name_prefix="griffon-member")

    @classmethod
    def load(
        cls,
        path: Path | str | None = None,
        expected_classes: list[str] | None = None,
        expected_raster: RasterSpec | None = None,
        flip_tta: bool | None = None,
        backend: str | None = None,
    ) -> Guesser:
        """Load a checkpoint (default: the shipped weights) and verify it; see ``read_checkpoint``.

        ``backend``: ``auto`` (default, or ``$GRIFFON_MODEL_BACKEND``), ``onnx-int8``, ``onnx`` or
        ``torch`` — see :mod:`model.runtime`; the one used is ``guesser.backend``. A back-end that
        cannot run as asked raises :class:`CheckpointError`. On the ONNX back-ends, a serving bundle
        made from this very file (:mod:`model.bundle`) is loaded instead of the checkpoint, without
        importing PyTorch; without one, the checkpoint loads through PyTorch."""
        path = Path(path or DEFAULT_WEIGHTS)
        try:
            requested = backend or default_backend()
        except BackendError as error:
            raise CheckpointError(str(error)) from error
        if requested in ("auto", "onnx-int8", "onnx"):
            bundle = read_bundle(path, expected_classes, expected_raster)
            if bundle is not None and (served := cls._from_bundle(bundle, requested, flip_tta)) is not None:
                return served
        return cls._from_checkpoint(path, expected_classes, expected_raster, flip_tta, requested)

    @classmethod
    def _from_bundle(cls, bundle: Bundle, requested: str, flip_tta: bool | None) -> Guesser | None:
        """A Guesser on ONNX Runtime from a verified bundle; ``None`` when the bundle cannot serve
        ``requested`` (no int8 copy for ``onnx-int8``, ONNX Runtime missing): the checkpoint then
        loads through PyTorch, which says why or falls back as ``auto`` does."""
        manifest, files = bundle.manifest, bundle.files
        if requested == "onnx-int8" and "raster_int8" not in files:
            return None
        try:
            import onnxruntime  # noqa: F401
        except ImportError:
            return None
        if "sequence" in manifest["input_contract"]:
            _check_sequence_form(bundle.path, manifest["input_contract"]["sequence"])
        int8 = requested != "onnx" and "raster_int8" in files
        try:
            exact = onnx_runner(onnx_session(files["raster_float"]))
            quantized = onnx_session(files["raster_int8"]) if int8 else None
            member = None
            if "members" in files:
                member = SequenceView.on_onnx(files["members"], len(manifest["classes"]), manifest["members"])
        except Exception as error:  # ONNX Runtime raises its own types
            raise CheckpointError(f"{bundle.path}: its ONNX files cannot run: {error}") from error
        if quantized is not None and onnx_source(quantized) != manifest.get("raster_weights_sha256"):
            raise CheckpointError(f"{files['raster_int8']} was not made from the weights of {bundle.path}")
        guesser = cls(
            None,
            manifest["classes"],
            bundle.spec,
            manifest.get("temperature", 1.0),
            manifest.get("metadata"),
            bool(manifest.get("flip_tta", False)) if flip_tta is None else flip_tta,
            runner=onnx_runner(quantized) if quantized is not None else exact,
            backend="onnx-int8" if quantized is not None else "onnx",
            member=member,
            pair_temperature=manifest.get("pair_temperature", 1.0),
            view_pool=manifest["view_pool"],
            exact_runner=exact if quantized is not None else None,
        )
        guesser.prepare_views(WARM_UP_DRAWING)  # compiles the preprocessing kernels (once per install)
        return guesser

    @classmethod
    def _from_checkpoint(
        cls,
        path: Path,
        expected_classes: list[str] | None,
        expected_raster: RasterSpec | None,
        flip_tta: bool | None,
        requested: str,
    ) -> Guesser:
        """A Guesser from the checkpoint itself, through PyTorch (exporting to ONNX at load)."""
        from model.network import create_model  # the PyTorch path only

        payload = read_checkpoint(path, expected_classes, expected_raster)
        arch = payload["architecture"]
        spec: RasterSpec = payload["raster_spec"]
        try:
            network = create_model(
                arch["name"],
                in_channels=len(spec.channels),
                num_classes=len(payload["classes"]),
                **arch["kwargs"],
            )
            network.load_state_dict({k: v.float() for k, v in payload["state_dict"].items()})
        except (RuntimeError, TypeError, ValueError, KeyError) as error:
            raise CheckpointError(f"weights do not fit architecture {arch}: {error}") from error
        metadata = {k: payload.get(k) for k in ("training", "metrics", "architecture", "input_contract")}
        if flip_tta is None:
            flip_tta = bool(payload.get("training", {}).get("flip_tta", False))
        try:
            used, runner = select_runner(requested, path, network.eval(), len(spec.channels), spec.size)
        except BackendError as error:
            raise CheckpointError(str(error)) from error
        exact = None  # near ties of the int8 path: the float network on ONNX Runtime, else PyTorch (cls)
        if used == "onnx-int8":
            with contextlib.suppress(BackendError):
                exact = select_runner("onnx", path, network, len(spec.channels), spec.size)[1]
        temperature = payload.get("temperature", 1.0)
        member = None
        if "sequence" in payload["input_contract"]:
            member = _sequence_member(path, payload, used, fallback=requested == "auto")
        guesser = cls(
            network, payload["classes"], spec, temperature, metadata, flip_tta, runner, used, member,
            payload.get("pair_temperature", 1.0), payload["view_pool"], exact,
        )
        guesser.prepare_views(WARM_UP_DRAWING)  # compiles the preprocessing kernels (once per install)
        return guesser

    # -- preprocessing -------------------------------------------------------------------------
    def prepare(self, drawing: Any) -> np.ndarray:
        """Validate, simplify and rasterize one drawing to a ``(channels, size, size)`` array."""
        return rasterize(simplify_drawing(validate_drawing(drawing)), self.spec)

    def views(self, simplified: Sequence[np.ndarray]) -> Views:
        """What the model reads of a simplified drawing: its raster, and its pen path when the model
        has a stroke-sequence member."""
        sequence = featurize(simplified) if self.member is not None else None
        return Views(rasterize(simplified, self.spec), sequence)

    def prepare_views(self, drawing: Any) -> Views:
        """Validate and simplify one drawing, then :meth:`views`."""
        return self.views(simplify_drawing(validate_drawing(drawing)))

    def candidate_indices(self, candidates: Iterable[str] | None) -> np.ndarray | None:
        """Class indices of ``candidates`` (``None`` = all classes); unknown or empty lists raise."""
        if candidates is None:
            return None
        names = list(dict.fromkeys(candidates))
        unknown = [name for name in names if name not in self._index]
        if unknown:
            raise ValueError(f"unknown candidate labels: {', '.join(unknown[:10])}")
        if not names:
            raise ValueError("the candidate list is empty")
        return np.array([self._index[name] for name in names])

    # -- inference -----------------------------------------------------------------------------
    def probabilities_from_views(self, views: Sequence[Views]) -> np.ndarray:
        """Class probabilities ``(batch, classes)`` for prepared drawings (:meth:`views`)."""
        images = np.stack([v.image for v in views])
        if self.member is None:
            return self._answer(images, None)
        if any(v.sequence is None for v in views):
            raise ValueError("this model also reads the pen's path: prepare the drawings with Guesser.views")
        # The two networks run at once, the member on its own thread (both release the GIL): on two
        # cores a drawing waits for the slower of the two, not for their sum.
        return self._answer(images, self._submit_member([v.sequence for v in views]))

    def _submit_member(self, sequences: list[np.ndarray]) -> Future:
        """The sequence view's probabilities, computed on the member's own thread (FIFO)."""
        assert self._member_thread is not None and self.member is not None  # made with the member
        return self._member_thread.submit(self.member.probabilities, sequences)

    def _answer(self, images: np.ndarray, member_future: Future | None) -> np.ndarray:
        """The model's answer for rasters ``images``: the raster network's probabilities, or for a
        two-view model those pooled with the sequence view's (``member_future``, :func:`pool_views`);
        on the int8 back-end the rows whose two best classes are within ``near_tie``
        (:data:`NEAR_TIE`) are answered again with the float raster network."""
        raster = self._raster_probabilities(images)
        member = None if member_future is None else member_future.result()
        answer = raster if member is None else self._pool(raster, member)
        if self._exact is None:
            return answer
        rows = np.flatnonzero(near_ties(answer, self.near_tie))
        if rows.size:
            exact = self._raster_probabilities(images[rows], exact=True)
            answer[rows] = exact if member is None else self._pool(exact, member[rows])
        return answer

    def _pool(self, raster: np.ndarray, member: np.ndarray) -> np.ndarray:
        return pool_views(raster, member, self.view_pool, self.pair_temperature)

    def probabilities_from_images(self, images: np.ndarray) -> np.ndarray:
        """Class probabilities ``(batch, classes)`` for rasters ``(batch, channels, size, size)``; a
        two-view model refuses (its answer needs the pen's path: :meth:`probabilities_from_views`)."""
        if self.member is not None:
            raise ValueError("this model also reads the pen's path: use Guesser.probabilities_from_views")
        return self._answer(images, None)

    def raster_probabilities(self, images: np.ndarray) -> np.ndarray:
        """The raster network's probabilities alone for rasters ``images`` (a two-view model's
        raster view, without its members: what the model card measures each part by)."""
        return self._raster_probabilities(images)

    def _raster_probabilities(self, images: np.ndarray, exact: bool = False) -> np.ndarray:
        """The raster network's probabilities (``exact``: the float network's, on the int8 back-end)."""
        images = np.ascontiguousarray(images, dtype=np.float32)
        run = self._exact if exact and self._exact else self._run
        with self._exact_lock if exact else self._lock:
            logits = run(images)
            if self.flip_tta:
                logits = (logits + run(np.ascontiguousarray(images[..., ::-1]))) / 2
        scaled = logits.astype(np.float32) / np.float32(self.temperature)
        scaled -= scaled.max(axis=1, keepdims=True)
        probs = np.exp(scaled)
        probs /= probs.sum(axis=1, keepdims=True)
        return probs

    def rank(self, probs: np.ndarray, top_k: int, candidates: np.ndarray | None) -> list[Guess]:
        """Best ``top_k`` guesses from a probability row, renormalised over candidate indices if given."""
        indices, sub = _restrict(probs, candidates)
        order = np.argsort(-sub, kind="stable")[:top_k]
        return [Guess(self.labels[indices[i]], float(sub[i])) for i in order]

    def as_dict(self, probs: np.ndarray, candidates: np.ndarray | None) -> dict[str, float]:
        """A probability row as ``{label: prob}``, renormalised over candidate indices if given."""
        indices, sub = _restrict(probs, candidates)
        return {self.labels[i]: float(p) for i, p in zip(indices, sub, strict=True)}

    def guess(self, drawing: Any, top_k: int = 3, candidates: Iterable[str] | None = None) -> list[Guess]:
        """Best ``top_k`` guesses for one drawing, optionally restricted to ``candidates`` (renormalised)."""
        return self.guess_batch([drawing], top_k, candidates)[0]

    def guess_batch(
        self, drawings: Sequence[Any], top_k: int = 3, candidates: Iterable[str] | None = None
    ) -> list[list[Guess]]:
        """Guesses for many drawings (at most ``MAX_BATCH``), ``CHUNK`` drawings per network call.

        The networks classify one chunk on background threads while this thread prepares the next
        (they and the compiled simplification release the GIL), so preprocessing and inference
        share the cores."""
        if top_k < 1:
            raise ValueError("top_k must be at least 1")
        if not 1 <= len(drawings) <= MAX_BATCH:
            raise ValueError(f"a batch holds 1 to {MAX_BATCH} drawings, got {len(drawings)}")
        chosen = self.candidate_indices(candidates)
        return [self.rank(row, top_k, chosen) for row in self._pipelined(drawings)]

    def _pipelined(self, drawings: Sequence[Any]) -> np.ndarray:
        """Probabilities of every drawing, each network starting as soon as its input is ready.

        A two-view model's member starts on its own thread once a chunk is simplified, while this
        thread rasterizes it; the raster network runs on a background thread (which then pools its
        answer with the member's and settles the near ties, :meth:`_answer`) while this thread
        prepares the next chunk. Each network's thread takes its chunks in order, so nothing waits
        until the last chunk is submitted."""
        answers: list[Future] = []
        for start in range(0, len(drawings), CHUNK):
            simplified = [simplify_drawing(validate_drawing(d)) for d in drawings[start : start + CHUNK]]
            member = None
            if self.member is not None:
                member = self._submit_member([featurize(s) for s in simplified])
            images = np.stack([rasterize(s, self.spec) for s in simplified])
            if len(drawings) <= CHUNK:  # one chunk: no next chunk to prepare, run it on this thread
                return self._answer(images, member)
            if self._pipeline is None:
                self._pipeline = ThreadPoolExecutor(1, thread_name_prefix="griffon-network")
            answers.append(self._pipeline.submit(self._answer, images, member))
        return np.concatenate([answer.result() for answer in answers])

    def probabilities(self, drawing: Any, candidates: Iterable[str] | None = None) -> dict[str, float]:
        """Probability of every label (or of each candidate, renormalised) for one drawing."""
        chosen = self.candidate_indices(candidates)
        return self.as_dict(self._pipelined([drawing])[0], chosen)

    def session(self, candidates: Iterable[str] | None = None, top_k: int = 5) -> GuessSession:
        """A live session that takes strokes one at a time."""
        return GuessSession(self, candidates, top_k)


class GuessSession:
    """Live guessing: strokes arrive one at a time; undo and clear are supported.

    Work already done is reused: each stroke is validated once; its simplified form is kept while
    the drawing's bounding box (hence the simplification frame) does not change; and the
    probabilities after every stroke are kept, so ``undo`` costs no inference at all.
    """

    def __init__(self, guesser: Guesser, candidates: Iterable[str] | None = None, top_k: int = 5) -> None:
        self.guesser = guesser
        self.top_k = top_k
        self.candidates = guesser.candidate_indices(candidates)
        self._strokes: list[np.ndarray] = []
        self._history: list[np.ndarray] = []  # probabilities after each stroke
        self._frame: tuple[float, float, float] | None = None
        self._simplified: list[np.ndarray] = []
        self.inferences = 0

    @property
    def stroke_count(self) -> int:
        """Number of strokes currently on the canvas."""
        return len(self._strokes)

    def add_stroke(self, stroke: Any) -> list[Guess]:
        """Add one stroke (``[[x...], [y...](, [t...])]``) and return the current guesses."""
        views = self.stage(stroke)
        probs = self.guesser.probabilities_from_views([views])[0] if views is not None else None
        return self.commit(probs)

    def stage(self, stroke: Any) -> Views | None:
        """First half of :meth:`add_stroke`: validate the stroke, add it, and return what the model
        reads (``None`` while the drawing has no extent). A caller that batches inference across
        sessions runs the model itself (``probabilities_from_views``), then calls :meth:`commit`."""
        if len(self._strokes) >= MAX_STROKES:
            raise DrawingError(f"too many strokes: more than {MAX_STROKES}")
        points = validate_stroke(stroke, len(self._strokes))
        if sum(len(s) for s in self._strokes) + len(points) > MAX_POINTS:
            raise DrawingError(f"too many points in this drawing: more than {MAX_POINTS}")
        self._strokes.append(points)
        frame = drawing_frame(self._strokes)
        if frame[2] < 1e-9:  # a lone dot so far: nothing to recognise yet
            return None
        if frame == self._frame and len(self._simplified) == len(self._strokes) - 1:
            self._simplified.append(simplify_drawing([points], frame=frame)[0])
        else:
            self._simplified = simplify_drawing(self._strokes)
        self._frame = frame
        return self.guesser.views(self._simplified)

    def commit(self, probs: np.ndarray | None) -> list[Guess]:
        """Second half of :meth:`add_stroke`: record the probabilities of the staged stroke."""
        if probs is None:
            probs = np.full(len(self.guesser.labels), 1.0 / len(self.guesser.labels))
        else:
            self.inferences += 1
        self._history.append(np.asarray(probs))
        return self._current()

    def undo(self) -> list[Guess]:
        """Remove the last stroke; returns the guesses as they were before it (no inference)."""
        if not self._strokes:
            return []
        self._strokes.pop()
        self._history.pop()
        self._frame = None
        self._simplified = []
        return self._current()

    def clear(self) -> None:
        """Remove every stroke."""
        self._strokes.clear()
        self._history.clear()
        self._frame = None
        self._simplified = []

    def guesses(self) -> list[Guess]:
        """The current guesses (empty before the first stroke)."""
        return self._current()

    def probabilities(self) -> dict[str, float]:
        """Current probability of every label (or candidate, renormalised); empty before any stroke."""
        if not self._history:
            return {}
        return self.guesser.as_dict(self._history[-1], self.candidates)

    def _current(self) -> list[Guess]:
        if not self._history:
            return []
        return self.guesser.rank(self._history[-1], self.top_k, self.candidates)


def near_ties(probs: np.ndarray, gap: float = NEAR_TIE) -> np.ndarray:
    """Which rows of ``(batch, classes)`` probabilities have their two best classes within ``gap`` in
    log-probability (an answer that rounding could flip)."""
    if probs.shape[1] < 2:
        return np.zeros(len(probs), dtype=bool)
    best = np.partition(probs, -2, axis=1)[:, -2:]
    tiny = np.finfo(np.float32).tiny
    return np.log(np.maximum(best[:, 1], tiny)) - np.log(np.maximum(best[:, 0], tiny)) < gap


def pool_views(
    raster: np.ndarray, sequence: np.ndarray, pool: str = DEFAULT_VIEW_POOL, temperature: float = 1.0
) -> np.ndarray:
    """Pool a two-view model's two probability rows ``(batch, classes)`` into its answer, with equal
    weights, softened at ``temperature``: ``log`` is their normalised geometric mean,
    ``softmax((log raster + log sequence) / 2T)`` (a class either view rules out stays unlikely);
    ``mean`` their average, ``softmax(log((raster + sequence) / 2) / T)``."""
    tiny = np.finfo(np.float32).tiny
    if pool == "log":
        scores = (np.log(np.maximum(raster, tiny)) + np.log(np.maximum(sequence, tiny))) / 2
    elif pool == "mean":
        average = (raster + sequence) / 2
        if temperature == 1.0:
            return average
        scores = np.log(np.maximum(average, tiny))
    else:
        raise ValueError(unknown_view_pool(pool))
    scores = scores / np.float32(temperature)
    scores -= scores.max(axis=1, keepdims=True)
    pooled = np.exp(scores)
    return pooled / pooled.sum(axis=1, keepdims=True)


def _restrict(probs: np.ndarray, candidates: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Label indices and their probabilities: all of them, or the candidates renormalised to sum 1."""
    if candidates is None:
        return np.arange(len(probs)), probs
    sub = probs[candidates]
    return candidates, sub / max(float(sub.sum()), 1e-12)


def _check_sequence_form(path: Path, form: object) -> None:
    """Refuse a stroke-sequence member that reads another sequence format than :func:`featurize`'s."""
    if form != {"features": FEATURES, "max_steps": MAX_STEPS}:
        expected = f"{FEATURES} features, {MAX_STEPS} steps"
        raise CheckpointError(f"{path}: its member reads sequences {form}, this version {expected}")


def _sequence_member(path: Path, payload: dict[str, Any], backend: str, fallback: bool) -> SequenceView:
    """The stroke-sequence view of a two-view checkpoint (its members, averaged), on ONNX Runtime
    unless ``backend`` is torch (``fallback``: on PyTorch when ONNX Runtime cannot run it, as the
    ``auto`` back-end does)."""
    from model.sequence import SequenceMember, member_network  # the PyTorch path only

    _check_sequence_form(path, payload["input_contract"]["sequence"])
    networks = []
    for weights in sequence_members(payload):
        try:
            network = member_network(len(payload["classes"]), weights)
        except (RuntimeError, TypeError, AttributeError, KeyError, IndexError) as error:
            message = f"{path}: the stroke-sequence member's weights do not fit: {error}"
            raise CheckpointError(message) from error
        networks.append(network)
    try:
        return SequenceMember(networks, "torch" if backend == "torch" else "onnx", fallback)
    except BackendError as error:
        raise CheckpointError(f"{path}: {error}") from error
