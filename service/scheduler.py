"""Fair shares of the recognizer: who is served next when work waits.

Expensive work (preparing a drawing, a place in the model's forward pass) comes from *clients*: a
table (a game in the browser, key ``game:<id>``), a bot room (``bot:<id>``) or an anonymous HTTP client (its
address). Waiting work is served by start-time fair queuing on two levels (:class:`FairQueue`):

- **classes**: the *live* class (tables and rooms, someone plays now) and the *http* class (every
  anonymous ``/v1/guess`` client together), with weights ``1 - http_share`` and ``http_share``. A
  class's virtual time is the work it was given divided by its weight; the class behind is served
  first. So thirty addresses together get the http class's share, not thirty shares: a client
  cannot buy more of the machine with more addresses.
- **clients** inside a class: the client with the least work given so far (its virtual time) is
  served first; a client that comes back after a pause starts level with those served now (it
  keeps its debt, not its idleness).

Work is charged by its cost (CPU seconds of preparation, drawings in a forward pass), an estimate
when it starts, corrected when it ends: a client of heavy drawings is served less often than one
of light drawings. The queue is work-conserving: a class alone gets everything its owner lets it
take (``pop(eligible)``: :mod:`service.inference` caps the http class's threads and places in a pass).

>>> queue = FairQueue({"live": 0.75, "http": 0.25})
>>> queue.push("http", "10.0.0.1", "job a")
>>> queue.pop()
('http', '10.0.0.1', 'job a')
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")

LIVE, HTTP = "live", "http"
LIVE_PREFIXES = ("game:", "bot:")  # the keys of tables and rooms (service.play, service.bot)


def work_class(key: str) -> str:
    """The class of a client key: ``live`` for a table (``game:...``) or a room (``bot:...``),
    ``http`` for anything else (an anonymous client's address)."""
    return LIVE if key.startswith(LIVE_PREFIXES) else HTTP


def class_weights(http_share: float) -> dict[str, float]:
    """The weights of the two classes when ``http_share`` (0 < share < 1) is the http class's."""
    if not 0 < http_share < 1:
        raise ValueError(f"http_share must be between 0 and 1, got {http_share}")
    return {LIVE: 1.0 - http_share, HTTP: http_share}


@dataclass
class Flow(Generic[T]):
    """One client's waiting items and its account."""

    key: str
    vtime: float = 0.0  # work given so far (cost units), levelled up after a pause
    items: deque[T] = field(default_factory=deque)
    running: int = 0  # items popped and not yet finished
    estimate: float = 0.0  # the cost of its next item, from the last ones (0: the default)


class FairQueue(Generic[T]):
    """Items waiting per client and per class, popped by start-time fair queuing (not thread-safe:
    its owner serialises the calls)."""

    def __init__(self, weights: Mapping[str, float], max_flows: int = 10_000) -> None:
        if not weights or any(w <= 0 for w in weights.values()):
            raise ValueError("every class needs a positive weight")
        self.weights = dict(weights)
        self.max_flows = max_flows
        self.class_vtime = dict.fromkeys(self.weights, 0.0)
        self.floor = dict.fromkeys(self.weights, 0.0)  # the virtual time of the last client served
        self.global_floor = 0.0  # the virtual time of the last class served
        self.flows: dict[str, dict[str, Flow[T]]] = {c: {} for c in self.weights}
        self.active: dict[str, dict[str, Flow[T]]] = {c: {} for c in self.weights}  # with items
        self.running = dict.fromkeys(self.weights, 0)
        self.waiting = 0

    def __len__(self) -> int:
        return self.waiting

    def flow(self, cls: str, key: str) -> Flow[T]:
        """The account of ``key`` in ``cls`` (made, levelled with the class, when unknown)."""
        flows = self.flows[cls]
        found = flows.get(key)
        if found is None:
            if len(flows) >= self.max_flows:
                self._forget(cls)
            found = flows[key] = Flow(key, self.floor[cls])
        return found

    def push(self, cls: str, key: str, item: T) -> None:
        """``item`` waits at the back of ``key``'s line."""
        flow = self.flow(cls, key)
        if not flow.items:  # the client comes back: level with those served now, keep a debt
            flow.vtime = max(flow.vtime, self.floor[cls])
            if not self.active[cls] and not self.running[cls]:
                self.class_vtime[cls] = max(self.class_vtime[cls], self.global_floor)
            self.active[cls][key] = flow
        flow.items.append(item)
        self.waiting += 1

    def remove(self, cls: str, key: str, item: T) -> bool:
        """Take back an item still waiting (its caller left); False when it is not waiting."""
        flow = self.flows[cls].get(key)
        if flow is None or item not in flow.items:
            return False
        flow.items.remove(item)
        self.waiting -= 1
        if not flow.items:
            self.active[cls].pop(key, None)
        return True

    def pop(self, eligible: Callable[[str, Flow[T]], bool] | None = None) -> tuple[str, str, T] | None:
        """The next item: from the class with the least virtual time, then its client with the
        least, among those ``eligible(class, flow)`` allows (None: every one); None when no item
        may be served. The item's flow counts it as running until :meth:`finish`."""
        best: tuple[float, float, str, Flow[T]] | None = None
        for cls, flows in self.active.items():
            if not flows:
                continue
            chosen = None
            for flow in flows.values():  # insertion order breaks ties: the longest waiting first
                better = chosen is None or flow.vtime < chosen.vtime
                if better and (eligible is None or eligible(cls, flow)):
                    chosen = flow
            if chosen is not None and (best is None or self.class_vtime[cls] < best[0]):
                best = (self.class_vtime[cls], chosen.vtime, cls, chosen)
        if best is None:
            return None
        class_vtime, flow_vtime, cls, flow = best
        item = flow.items.popleft()
        self.waiting -= 1
        if not flow.items:
            del self.active[cls][flow.key]
        flow.running += 1
        self.running[cls] += 1
        self.floor[cls] = max(self.floor[cls], flow_vtime)
        self.global_floor = max(self.global_floor, class_vtime)
        return cls, flow.key, item

    def charge(self, cls: str, key: str, cost: float) -> None:
        """Count ``cost`` (negative: a correction) to ``key`` and to its class."""
        self.class_vtime[cls] += cost / self.weights[cls]
        flow = self.flows[cls].get(key)
        if flow is not None:
            flow.vtime += cost

    def finish(self, cls: str, key: str) -> None:
        """An item popped from ``key`` is done."""
        self.running[cls] -= 1
        flow = self.flows[cls].get(key)
        if flow is not None:
            flow.running -= 1

    def _forget(self, cls: str) -> None:
        """Make room: forget idle clients, those without a debt first (they would start level anyway)."""
        flows, floor = self.flows[cls], self.floor[cls]
        idle = [k for k, f in flows.items() if not f.items and not f.running]
        for key in sorted(idle, key=lambda k: flows[k].vtime > floor)[: max(1, self.max_flows // 10)]:
            del flows[key]
