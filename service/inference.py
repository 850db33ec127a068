"""Shared, non-blocking inference: one model, many rooms and games.

:class:`BatchInference` owns one worker thread that runs ``Guesser.probabilities_from_views``
on prepared drawings gathered from every concurrent caller (a micro-batcher): callers ``await
probabilities(views)`` and the event loop never waits on the network. The queue is bounded;
when it is full a caller gets :class:`Overloaded` at once (the HTTP layer turns it into 503)
instead of an ever-growing delay. CPU preprocessing (validation, simplification, rasterising:
``Guesser.prepare_views``, ``GuessSession.stage``) runs in a small thread pool via :meth:`run_cpu`,
shared fairly: each caller names a ``key`` (a client, a bot session); when every thread is busy,
waiting keys are served in turn (round robin) and no key holds every thread, so a key with a
long backlog delays another key by at most the jobs already running. Each key also has a budget
of CPU seconds (``cpu_share`` seconds per second, ``cpu_burst_s`` at once): a key in debt gets
:class:`service.errors.RateLimited` before any work.

>>> inference = BatchInference(guesser, max_batch=64, max_queue=512)
>>> inference.start()
>>> probs = await inference.recognize(session.stage, stroke, key=room)  # views off-loop, then
>>> session.commit(probs)                                             # one shared forward pass
>>> await inference.aclose()
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from service.errors import RateLimited
from service.ratelimit import Buckets

T = TypeVar("T")


class Overloaded(RuntimeError):
    """The inference queue is full: the caller should retry later (HTTP 503)."""


class InferenceClosed(RuntimeError):
    """The inference worker has stopped (the app is shutting down)."""


@dataclass
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


_STOP = object()


class BatchInference:
    """An async micro-batcher in front of one model, plus a thread pool for preprocessing."""

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
    ) -> None:
        """``on_batch(n)`` hears the size of each forward pass (from the worker thread)."""
        if max_batch < 1 or max_queue < 1:
            raise ValueError("max_batch and max_queue must be at least 1")
        self.source = source
        self.max_batch = max_batch
        self.max_queue = max_queue
        self.batch_wait_s = batch_wait_s
        self.stats = InferenceStats()
        self.on_batch = on_batch
        self._queue: queue.Queue[Any] = queue.Queue()
        self._pending = 0  # drawings queued or running
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(preprocess_threads, thread_name_prefix="griffon-prep")
        self._slots = preprocess_threads
        self._per_key = max(1, preprocess_threads - 1)  # one key never takes every thread
        self._busy = 0
        self._running: Counter[str] = Counter()
        self._waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()
        self.cpu = Buckets(cpu_share, cpu_burst_s)
        self._worker: threading.Thread | None = None
        self._closed = False

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
            self._queue.put(_STOP)
            await asyncio.to_thread(self._worker.join, 10.0)
            self._worker = None
        self._pool.shutdown(wait=False, cancel_futures=True)

    @property
    def pending(self) -> int:
        """Rasters waiting or being classified."""
        return self._pending

    # -- public API -----------------------------------------------------------------------------
    async def probabilities(self, views: list[Any]) -> np.ndarray:
        """Probabilities ``(n, classes)`` for prepared drawings (``model.Views``), batched with
        other callers.

        Raises :class:`Overloaded` when accepting them would exceed ``max_queue`` drawings.
        """
        if self._closed or self._worker is None:
            raise InferenceClosed("the inference worker is not running")
        views = list(views)
        if not views:
            raise ValueError("expected at least one prepared drawing")
        with self._lock:
            if self._pending + len(views) > self.max_queue:
                self.stats.rejected += 1
                raise Overloaded(
                    f"the recognizer is busy ({self._pending} drawings waiting); retry shortly"
                )
            self._pending += len(views)
            self.stats.requests += 1
        loop = asyncio.get_running_loop()
        future: asyncio.Future = loop.create_future()
        self._queue.put(_Job(views, future, loop))
        return await future

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
            return await self.probabilities(views)
        return (await self.probabilities([views]))[0]

    async def run_cpu(self, fn: Callable[..., T], *args: Any, key: str = "") -> T:
        """Run CPU-bound preprocessing (``prepare``, ``stage``...) in the thread pool.

        ``key`` names whose budget pays; raises :class:`RateLimited` when that key is in debt.
        """
        if self._closed:
            raise InferenceClosed("the inference worker is not running")
        budget = self.cpu[key]
        if not budget.allow(0.0):
            wait = budget.retry_after(0.0)
            raise RateLimited(f"too much drawing work from this client; retry in {wait:.1f} s",
                              retry_after=wait)
        await self._acquire(key)
        started = [0.0]

        def timed() -> T:
            started[0] = time.thread_time()
            try:
                return fn(*args)
            finally:
                budget.charge(time.thread_time() - started[0])

        loop = asyncio.get_running_loop()
        job = self._pool.submit(timed)
        job.add_done_callback(lambda _: loop.call_soon_threadsafe(self._release, key))
        return await asyncio.wrap_future(job)

    async def _acquire(self, key: str) -> None:
        if self._busy < self._slots and not self._waiting and self._running[key] < self._per_key:
            self._take(key)
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, deque()).append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self._release(key)  # the slot was handed over just as the caller left
            else:
                self._discard(key, turn)
            raise

    def _take(self, key: str) -> None:
        self._busy += 1
        self._running[key] += 1

    def _discard(self, key: str, turn: asyncio.Future[None]) -> None:
        waiters = self._waiting.get(key)
        if waiters is not None and turn in waiters:
            waiters.remove(turn)
            if not waiters:
                del self._waiting[key]

    def _release(self, key: str) -> None:
        """A slot is free: hand it to the next key in turn (round robin) that may take one more."""
        self._busy -= 1
        self._running[key] -= 1
        if self._running[key] <= 0:
            del self._running[key]
        while self._busy < self._slots:
            chosen = next((k for k in self._waiting if self._running[k] < self._per_key), None)
            if chosen is None:
                return
            waiters = self._waiting.pop(chosen)
            turn = waiters.popleft()
            if waiters:
                self._waiting[chosen] = waiters  # back of the line
            if not turn.done():
                self._take(chosen)
                turn.set_result(None)

    # -- worker ---------------------------------------------------------------------------------
    def _gather(self, first: _Job) -> tuple[list[_Job], bool]:
        """The first job plus whatever else arrives within ``batch_wait_s``, up to ``max_batch``."""
        jobs, size, stop = [first], len(first.views), False
        deadline = time.monotonic() + self.batch_wait_s
        while size < self.max_batch:
            timeout = deadline - time.monotonic()
            try:
                item = self._queue.get(timeout=timeout) if timeout > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                stop = True
                break
            jobs.append(item)
            size += len(item.views)
        return jobs, stop

    def _run(self) -> None:
        stop = False
        while not stop:
            first = self._queue.get()
            if first is _STOP:
                break
            jobs, stop = self._gather(first)
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
        with self._lock:
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
