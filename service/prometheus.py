"""What an operator watches: ``GET /metrics`` in the Prometheus text format (prometheus-client).

One :class:`Metrics` per app, on its own registry (several apps in one process stay apart):

- ``griffon_tables_open{game}``, ``griffon_bot_rooms_open``, ``griffon_sockets_open{kind}``:
  read from the live objects when scraped;
- ``griffon_strokes_total{source}`` (``play``: a person's stroke at a table, ``ai``: an AI
  player's, ``bot``: a room's), ``griffon_guesses_total{source}`` (recognitions);
- ``griffon_inference_queue`` (drawings waiting or being classified) and
  ``griffon_inference_batch_size`` (drawings per forward pass);
- latency histograms: ``griffon_stroke_ack_seconds{source}`` (a stroke frame received → its
  answer queued for the socket; with a database, once the stroke is stored), ``griffon_guess_seconds{source}``
  (a recognition asked → its probabilities back), ``griffon_store_write_seconds`` (a move applied →
  reported committed by the store's writer thread);
- ``griffon_store_background{what}``: the background writer of drawings, transcripts and bot
  rooms' memory (store/background.py) — ``pending`` (waiting now), ``retries`` (writes tried again
  after the database could not write), ``failed`` (refused for good), ``dropped`` (queue full);
- ``griffon_refusals_total{reason}``: requests, games, rooms and frames refused (the error code:
  ``rate_limited``, ``overloaded``, ``server_full``, ``server_busy``, ``bad_key``...);
- ``griffon_event_loop_lag_p99_seconds{worker}``: how late each worker's event loop ran its
  callbacks lately (p99 over 10 s; admission refuses new tables above ``capacity.lag_ms``:
  service/capacity.py);
- on a replica (service/replicas.py), ``griffon_replica{what}``: the ``tables`` and bot ``rooms``
  whose leases it holds now, the tables it ``taken_over`` and ``stood_down`` since it started, and
  the times it woke ``frozen`` past its leases (`griffon replicas status` shows every replica's);
- per API key of bot rooms (service/bot/keys.py), labelled by the key's name (never its secret):
  ``griffon_bot_key_rooms_open{key}``, ``griffon_bot_key_rooms_total{key}`` (rooms admitted),
  ``griffon_bot_key_strokes_total{key}`` (strokes counted against its quota) and
  ``griffon_bot_key_refusals_total{key,reason}`` (``quota_exceeded``, ``key_revoked``...).

With several worker processes (``griffon serve --workers N``), the worker a scrape reaches adds up
every worker's figures (:func:`merge`): one server, one set of metrics.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.parser import text_string_to_metric_families

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)

CONTENT_TYPE = CONTENT_TYPE_LATEST  # the exposition format's media type
disable_created_metrics()  # no ``*_created`` series: a scraper has its own clock


RECENT_S = 10.0  # the recent past `Recent` keeps
RECENT_MIN = 20  # fewer samples than this: no figure yet


class Recent:
    """Samples of the last ``window_s`` seconds and their 99th percentile (what admission reads:
    service/capacity.py)."""

    def __init__(self, window_s: float = RECENT_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s, self.clock = window_s, clock
        self.samples: deque[tuple[float, float]] = deque()  # (when, value)

    def add(self, value: float) -> None:
        """Record one sample, now (and forget those out of the window)."""
        now = self.clock()
        self.samples.append((now, value))
        while self.samples and self.samples[0][0] < now - self.window_s:
            self.samples.popleft()

    def p99(self) -> float | None:
        """The 99th percentile over the window (None: fewer than ``RECENT_MIN`` samples in it)."""
        now = self.clock()
        values = sorted(v for at, v in self.samples if at >= now - self.window_s)
        if len(values) < RECENT_MIN:
            return None
        return values[min(len(values) - 1, math.ceil(0.99 * len(values)) - 1)]


class _Kept:
    """A histogram (its ``labels(...).observe(v)``) whose every observation is also kept in a
    `Recent` window."""

    def __init__(self, histogram: Histogram, recent: Recent) -> None:
        self.histogram, self.recent = histogram, recent

    def labels(self, **labels: str) -> _Kept:
        return _Kept(self.histogram.labels(**labels), self.recent)

    def observe(self, value: float) -> None:
        self.histogram.observe(value)
        self.recent.add(value)


class Metrics:
    """The service's counters, gauges and histograms, on a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.tables = Gauge("griffon_tables_open", "Games open in the browser", ["game"], registry=r)
        self.rooms = Gauge("griffon_bot_rooms_open", "Bot rooms connected", registry=r)
        self.sockets = Gauge("griffon_sockets_open", "WebSockets open", ["kind"], registry=r)
        self.strokes = Counter("griffon_strokes", "Strokes received or drawn", ["source"], registry=r)
        self.guesses = Counter("griffon_guesses", "Recognitions made", ["source"], registry=r)
        self.queue = Gauge("griffon_inference_queue", "Drawings waiting for or in the network", registry=r)
        self.batch = Histogram("griffon_inference_batch_size", "Drawings per forward pass",
                               buckets=BATCH_BUCKETS, registry=r)
        self.recent_acks = Recent()  # the stroke acknowledgements of the last 10 s (admission)
        self.stroke_ack = _Kept(Histogram("griffon_stroke_ack_seconds", "A stroke frame received to its "
                                          "answer queued", ["source"], buckets=LATENCY_BUCKETS, registry=r),
                                self.recent_acks)
        self.guess_time = Histogram("griffon_guess_seconds", "A recognition asked to its probabilities",
                                    ["source"], buckets=LATENCY_BUCKETS, registry=r)
        self.store_write = Histogram("griffon_store_write_seconds", "A move applied to committed",
                                     buckets=LATENCY_BUCKETS, registry=r)
        self.background = Gauge("griffon_store_background", "The background writer (drawings, transcripts, "
                                "bot rooms): writes waiting, tried again, failed for good, dropped", ["what"],
                                registry=r)
        self.refusals = Counter("griffon_refusals", "Requests, games, rooms and frames refused",
                                ["reason"], registry=r)
        self.loop_lag = Gauge("griffon_event_loop_lag_p99_seconds", "The event loop's lag, p99 over the "
                              "last 10 s, per worker", ["worker"], registry=r)
        self.replica = Gauge("griffon_replica", "This replica: tables and bot rooms held, tables taken over "
                             "and stood down, wakes past its leases", ["what"], registry=r)
        self.key_rooms_open = Gauge("griffon_bot_key_rooms_open", "Bot rooms open per API key", ["key"],
                                    registry=r)
        self.key_rooms = Counter("griffon_bot_key_rooms", "Bot rooms admitted per API key", ["key"],
                                 registry=r)
        self.key_strokes = Counter("griffon_bot_key_strokes", "Strokes of bot rooms per API key", ["key"],
                                   registry=r)
        self.key_refusals = Counter("griffon_bot_key_refusals", "Bot rooms and strokes refused per API key",
                                    ["key", "reason"], registry=r)

    def watch(self, gauge: Gauge, read: Callable[[], float], **labels: str) -> None:
        """Let ``gauge`` (with ``labels``) be read from ``read()`` at each scrape."""
        (gauge.labels(**labels) if labels else gauge).set_function(read)

    def refused(self, reason: str) -> None:
        """Count one refusal (its error code)."""
        self.refusals.labels(reason=reason).inc()

    def render(self) -> bytes:
        """The text exposition of every metric."""
        return generate_latest(self.registry)


def merge(texts: list[str]) -> bytes:
    """Several processes' expositions as one: each sample (name and labels) summed."""
    families: dict[str, tuple[str, str, dict[tuple[str, tuple[tuple[str, str], ...]], float]]] = {}
    for text in texts:
        for family in text_string_to_metric_families(text):
            _, _, values = families.setdefault(family.name, (family.type, family.documentation, {}))
            for sample in family.samples:
                key = (sample.name, tuple(sample.labels.items()))
                values[key] = values.get(key, 0.0) + sample.value
    lines = []
    for name, (kind, documentation, values) in families.items():
        shown = f"{name}_total" if kind == "counter" else name
        lines += [f"# HELP {shown} {_escape(documentation, help_text=True)}", f"# TYPE {shown} {kind}"]
        for (sample, labels), value in values.items():
            inner = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
            lines.append(f"{sample}{{{inner}}} {value!r}" if inner else f"{sample} {value!r}")
    return ("\n".join(lines) + "\n").encode()


def _escape(text: str, help_text: bool = False) -> str:
    text = text.replace("\\", "\\\\").replace("\n", "\\n")
    return text if help_text else text.replace('"', '\\"')
