"""What every part of the service shares, as one typed object and a FastAPI dependency.

``create_app`` builds one :class:`Shared` at start-up (the model, the vocabulary, the batched
inference, the per-client budgets) and puts it on ``app.state.shared``; routes and sockets take it
as a typed dependency (``shared: SharedDep``) instead of reading ``app.state`` untyped. The word
helpers here (candidates, French words) raise domain errors (:mod:`service.errors`), which the
HTTP layer and the bot protocol each render in their own way.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends
from starlette.requests import HTTPConnection

from service.errors import RateLimited, UnknownCandidate
from service.inference import BatchInference
from service.prometheus import Metrics
from service.ratelimit import Buckets
from service.settings import Settings

if TYPE_CHECKING:
    from model import Guesser
    from vocab import Vocabulary


@dataclass
class Shared:
    """The loaded model and vocabulary, the batched inference, the per-client budgets and the
    service's metrics."""

    settings: Settings
    guesser: Guesser
    vocabulary: Vocabulary
    inference: BatchInference
    started_at: float
    metrics: Metrics = field(default_factory=Metrics)
    points: Buckets = field(init=False)

    def __post_init__(self) -> None:
        self.points = Buckets(self.settings.client_points_per_s, self.settings.client_points_burst)

    def spend_points(self, client: str, points: int) -> None:
        """Take ``points`` from ``client``'s budget before any work; :class:`RateLimited` if short."""
        bucket = self.points[client]
        if not bucket.allow(points):
            wait = bucket.retry_after(points)
            rate = self.settings.client_points_per_s
            raise RateLimited(f"more than {rate:g} points per second from this client; retry in "
                              f"{wait:.1f} s", retry_after=wait)

    def key_for(self, text: str, labels: Collection[str] | None = None, language: str = "fr") -> str | None:
        """The model label a word stands for, by the one rule of ``vocab.lookup`` (a label as it
        is, else any French or English name of it), or None (none, or several: ``phone``)."""
        labels = labels if labels is not None else self.guesser.labels
        found = [k for k in self.vocabulary.lookup.categories(text, language) if k in labels]
        return found[0] if len(found) == 1 else None

    def resolve_candidates(self, candidates: Sequence[str] | None) -> list[str] | None:
        """Map candidate words (category keys or French words) to the model's labels.

        Raises :class:`UnknownCandidate` naming the words the model cannot guess.
        """
        if candidates is None:
            return None
        labels = set(self.guesser.labels)
        keys, unknown = [], []
        for text in candidates:
            key = self.key_for(text, labels)
            (keys if key in labels else unknown).append(key if key in labels else text)
        if unknown:
            shown = ", ".join(repr(u) for u in unknown[:10])
            raise UnknownCandidate(f"the model cannot guess these candidates: {shown}")
        return list(dict.fromkeys(keys))

    def french_word(self, label: str) -> str:
        """The French word for a model label (the label itself if the vocabulary lacks it)."""
        words = self.vocabulary.words
        return words[label].word if label in words else label


def get_shared(connection: HTTPConnection) -> Shared:
    """The app's :class:`Shared` (a FastAPI dependency, for HTTP routes and WebSockets alike)."""
    return connection.app.state.shared


def client_of(connection: HTTPConnection) -> str:
    """Who is asking, for per-client budgets: the peer address (the proxy's, unless trusted)."""
    return connection.client.host if connection.client else "?"


SharedDep = Annotated[Shared, Depends(get_shared)]
ClientDep = Annotated[str, Depends(client_of)]
