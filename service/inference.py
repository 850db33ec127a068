"""Shared, non-blocking inference: one model, many rooms and games, served fairly.

:class:`BatchInference` owns one worker thread that runs ``Guesser.probabilities_from_views``
on prepared drawings gathered from every concurrent caller (a micro-batcher): callers ``await
probabilities(views, key=...)`` and the event loop never waits on the network. The queue is
bounded; when it is full a caller gets :class:`Overloaded` at once (the HTTP layer turns it into
503) instead of an ever-growing delay. CPU preprocessing (validation, simplification,
rasterising: ``Guesser.prepare_views``, ``GuessSession.stage``) runs in a small thread pool via
:meth:`run_cpu`.

Both stages are shared fairly (:mod:`service.scheduler`): each caller names a ``key`` (a table
``game:<id>``, a bot room ``bot:<id>``, an HTTP client's address). Waiting work is served by fair
queuing between two classes, the live one (tables and rooms) and the anonymous HTTP clients
together (``http_share`` of the work when both wait; many addresses share that one share), and
between the keys of a class by the work each was given (CPU seconds of preparation, drawings in
forward passes). No key holds every preparation thread, the HTTP class holds at most
``http_share`` of them (one at least), and a forward pass carries at most ``http_share`` of
``max_batch`` HTTP drawings (one at least), so that a table's stroke never waits behind a long
pass of anonymous drawings. Each key also has a budget of CPU seconds (``cpu_share`` seconds per
second, ``cpu_burst_s`` at once): a key in debt gets :class:`service.errors.RateLimited` before
any work.

>>> inference = BatchInference(guesser, max_batch=64, max_queue=512)
>>> inference.start()
>>> probs = await inference.recognize(session.stage, stroke, key=room)  # views off-loop, then
>>> session.commit(probs)                                             # one shared forward pass
>>> await inference.aclose()
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from service.errors import RateLimited
from service.ratelimit import Buckets
from service.scheduler import HTTP, FairQueue, Flow, class_weights, work_class

T = TypeVar("T")
DEFAULT_PREP_S = 0.002  # the first preparation of a key is charged this much until measured


class Overloaded(RuntimeError):
    """The inference queue is full: the caller should retry later (HTTP 503)."""


class InferenceClosed(RuntimeError):
    """The inference worker has stopped (the app is shutting down)."""


@dataclass(eq=False)
class _Job:
    views: list[Any]  # model.Views
    future: asyncio.Future
    loop: asyncio.AbstractEventLoop


@dataclass
class InferenceStats:
    """Counters of the micro-batcher (read by ``/healthz`` and the benchmark)."""

    requests: int = 0
    images: int = 0
    batches: int = 0
    largest_batch: int = 0
    rejected: int = 0
    busy_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        mean = self.images / self.batches if self.batches else 0.0
        return {
            "requests": self.requests,
            "images": self.images,
            "batches": self.batches,
            "mean_batch": round(mean, 2),
            "largest_batch": self.largest_batch,
            "rejected": self.rejected,
            "busy_s": round(self.busy_s, 3),
        }


class BatchInference:
    """An async micro-batcher in front of one model, plus a thread pool for preprocessing, both
    shared fairly between keys (:mod:`service.scheduler`)."""

    def __init__(
        self,
        source: Any,  # anything with probabilities_from_views(views), e.g. model.Guesser
        max_batch: int = 64,
        max_queue: int = 512,
        batch_wait_s: float = 0.001,
        preprocess_threads: int = 2,
        cpu_share: float = 64.0,
        cpu_burst_s: float = 600.0,
        on_batch: Callable[[int], None] | None = None,
        http_share: float = 0.25,
    ) -> None:
        """``on_batch(n)`` hears the size of each forward pass (from the worker thread)."""
        if max_batch < 1 or max_queue < 1:
            raise ValueError("max_batch and max_queue must be at least 1")
        weights = class_weights(http_share)
        self.source = source
        self.max_batch = max_batch
        self.max_queue = max_queue
        self.batch_wait_s = batch_wait_s
        self.stats = InferenceStats()
        self.on_batch = on_batch
        # the model's stage: jobs wait per key, the worker thread fills each pass fairly
        self._jobs: FairQueue[_Job] = FairQueue(weights)
        self._ready = threading.Condition()
        self._pending = 0  # drawings queued or running
        self._http_per_pass = max(1, math.floor(max_batch * http_share))
        # the preparation stage: turns handed out on the event loop's thread
        self._pool = ThreadPoolExecutor(preprocess_threads, thread_name_prefix="griffon-prep")
        self._turns: FairQueue[asyncio.Future[float]] = FairQueue(weights)
        self._slots = preprocess_threads
        self._per_key = max(1, preprocess_threads - 1)  # one key never takes every thread
        self._http_slots = max(1, math.floor(preprocess_threads * http_share))
        self._busy = 0
        self.cpu = Buckets(cpu_share, cpu_burst_s)
        self._worker: threading.Thread | None = None
        self._closed = False
        self._stopping = False

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the worker thread (idempotent)."""
        if self._worker is None:
            self._worker = threading.Thread(target=self._run, name="griffon-infer", daemon=True)
            self._worker.start()

    async def aclose(self) -> None:
        """Stop the worker after the queued work, and the thread pool."""
        self._closed = True
        if self._worker is not None:
            with self._ready:
                self._stopping = True
                self._ready.notify()
            await asyncio.to_thread(self._worker.join, 10.0)
            self._worker = None
        self._pool.shutdown(wait=False, cancel_futures=True)

    @property
    def pending(self) -> int:
        """Rasters waiting or being classified."""
        return self._pending

    # -- public API -----------------------------------------------------------------------------
    def check_room(self, drawings: int) -> None:
        """Raise :class:`Overloaded` now when ``drawings`` more would not fit in the queue (a
        request that would be refused half-way is refused before any work)."""
        if self._pending + drawings > self.max_queue:
            self.stats.rejected += 1
            raise Overloaded(f"the recognizer is busy ({self._pending} drawings waiting); retry shortly")

    async def probabilities(self, views: list[Any], key: str = "") -> np.ndarray:
        """Probabilities ``(n, classes)`` for prepared drawings (``model.Views``), batched with
        other callers; ``key`` names whose turn it is (its class: :func:`service.scheduler.work_class`).

        Raises :class:`Overloaded` when accepting them would exceed ``max_queue`` drawings.
        """
        if self._closed or self._worker is None:
            raise InferenceClosed("the inference worker is not running")
        views = list(views)
        if not views:
            raise ValueError("expected at least one prepared drawing")
        loop = asyncio.get_running_loop()
        job = _Job(views, loop.create_future(), loop)
        cls = work_class(key)
        with self._ready:
            if self._pending + len(views) > self.max_queue:
                self.stats.rejected += 1
                raise Overloaded(
                    f"the recognizer is busy ({self._pending} drawings waiting); retry shortly"
                )
            self._pending += len(views)
            self.stats.requests += 1
            self._jobs.push(cls, key, job)
            self._ready.notify()
        try:
            return await job.future
        except asyncio.CancelledError:
            with self._ready:
                if self._jobs.remove(cls, key, job):
                    self._pending -= len(views)
            raise

    async def recognize(self, prepare: Callable[..., Any], *args: Any, key: str = "") -> np.ndarray | None:
        """Prepare drawings in the fair pool, then classify them in the shared batch.

        ``prepare(*args)`` returns the ``model.Views`` of one drawing, a list of them, or ``None``
        (nothing to classify); the answer is the probabilities ``(classes,)``, ``(n, classes)``
        or ``None`` accordingly. Raises what :meth:`run_cpu` and :meth:`probabilities` raise.
        """
        views = await self.run_cpu(prepare, *args, key=key)
        if views is None:
            return None
        if isinstance(views, list):
            return await self.probabilities(views, key=key)
        return (await self.probabilities([views], key=key))[0]

    async def run_cpu(self, fn: Callable[..., T], *args: Any, key: str = "") -> T:
        """Run CPU-bound preprocessing (``prepare``, ``stage``...) in the thread pool, when it is
        ``key``'s turn.

        ``key`` names whose budget pays; raises :class:`RateLimited` when that key is in debt.
        """
        if self._closed:
            raise InferenceClosed("the inference worker is not running")
        budget = self.cpu[key]
        if not budget.allow(0.0):
            wait = budget.retry_after(0.0)
            raise RateLimited(f"too much drawing work from this client; retry in {wait:.1f} s",
                              retry_after=wait)
        cls = work_class(key)
        estimate = await self._turn(cls, key)
        spent = [0.0]

        def timed() -> T:
            started = time.thread_time()
            try:
                return fn(*args)
            finally:
                spent[0] = time.thread_time() - started
                budget.charge(spent[0])

        loop = asyncio.get_running_loop()
        job = self._pool.submit(timed)
        job.add_done_callback(
            lambda _: loop.call_soon_threadsafe(self._release, cls, key, estimate, spent)
        )
        return await asyncio.wrap_future(job)

    # -- the preparation stage's turns (on the event loop's thread) -----------------------------
    async def _turn(self, cls: str, key: str) -> float:
        """Wait for a thread for ``key``; returns the cost it was charged in advance."""
        turn: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._turns.push(cls, key, turn)
        self._dispatch()
        try:
            return await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # the thread was handed over as the caller left
                self._release(cls, key, turn.result(), [turn.result()])
            else:
                self._turns.remove(cls, key, turn)
            raise

    def _may_prepare(self, cls: str, flow: Flow[Any]) -> bool:
        if flow.running >= self._per_key:
            return False
        return cls != HTTP or self._turns.running[HTTP] < self._http_slots

    def _dispatch(self) -> None:
        """Hand free threads to the next keys in fair order."""
        while self._busy < self._slots:
            chosen = self._turns.pop(self._may_prepare)
            if chosen is None:
                return
            cls, key, turn = chosen
            flow = self._turns.flow(cls, key)
            estimate = flow.estimate or DEFAULT_PREP_S
            self._turns.charge(cls, key, estimate)
            self._busy += 1
            turn.set_result(estimate)

    def _release(self, cls: str, key: str, estimate: float, spent: list[float]) -> None:
        """A preparation is over: correct its charge, free its thread, hand out the next turns."""
        self._turns.charge(cls, key, spent[0] - estimate)
        flow = self._turns.flow(cls, key)
        flow.estimate = spent[0] if not flow.estimate else 0.5 * flow.estimate + 0.5 * spent[0]
        self._turns.finish(cls, key)
        self._busy -= 1
        self._dispatch()

    # -- the model's stage (the worker thread) --------------------------------------------------
    def _gather(self) -> list[_Job] | None:
        """The next forward pass's jobs, in fair order (None: stop). Waits for a first job, then
        ``batch_wait_s`` for others, up to ``max_batch`` drawings (``http_share`` of them from the
        HTTP class)."""
        with self._ready:
            while not len(self._jobs):
                if self._stopping:
                    return None
                self._ready.wait()
        if self.batch_wait_s > 0:
            time.sleep(self.batch_wait_s)
        jobs: list[_Job] = []
        size, http = 0, 0

        def fits(cls: str, flow: Flow[_Job]) -> bool:
            n = len(flow.items[0].views)
            if cls == HTTP and jobs and http + n > self._http_per_pass:
                return False
            return not jobs or size + n <= self.max_batch

        with self._ready:
            while (chosen := self._jobs.pop(fits)) is not None:
                cls, key, job = chosen
                n = len(job.views)
                self._jobs.charge(cls, key, n)
                self._jobs.finish(cls, key)
                jobs.append(job)
                size += n
                http += n if cls == HTTP else 0
        return jobs

    def _run(self) -> None:
        while (jobs := self._gather()) is not None:
            if jobs:
                self._classify(jobs)

    def _classify(self, jobs: list[_Job]) -> None:
        views = [view for job in jobs for view in job.views]
        started = time.perf_counter()
        try:
            probs = np.concatenate(
                [
                    self.source.probabilities_from_views(views[i : i + self.max_batch])
                    for i in range(0, len(views), self.max_batch)
                ]
            )
            error: BaseException | None = None
        except Exception as exc:  # the model failed: every caller of this batch hears of it
            probs, error = None, exc
        self.stats.busy_s += time.perf_counter() - started
        self.stats.batches += 1
        self.stats.images += len(views)
        self.stats.largest_batch = max(self.stats.largest_batch, len(views))
        if self.on_batch is not None:
            self.on_batch(len(views))
        with self._ready:
            self._pending -= len(views)
        offset = 0
        for job in jobs:
            n = len(job.views)
            result = None if probs is None else probs[offset : offset + n]
            offset += n
            job.loop.call_soon_threadsafe(_settle, job.future, result, error)


def _settle(future: asyncio.Future, result: np.ndarray | None, error: BaseException | None) -> None:
    if future.done():  # the caller went away (cancelled)
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
