"""Admit only what can be served: a budget of CPU for the tables and rooms of one process.

Each open table or bot room holds a share of a core, measured by ``python -m bench.bench_capacity``
(the server's CPU per table at the largest load that keeps the stroke acknowledgement's p99 under
100 ms: docs/BENCHMARKS.md). The budget is the cores this process may use times
``capacity_utilisation``; a new table or room whose share would overdraw it is refused at once
(HTTP 503 ``server_busy`` with ``Retry-After``, or an ``overloaded`` frame on the bot socket)
instead of slowing every table already playing.

The costs are measured on a quiet host; on a busy one (other processes on its cores) the same
tables take longer. So admission also reads what is measured over the last ``LAG_WINDOW_S``: the
event loop's lag (:class:`LoopLag`, what every table's frames wait for) and the stroke
acknowledgements (``griffon_stroke_ack_seconds``, the promise itself). While either's p99 is above
``capacity_lag_ms`` (100 ms: the promise), no new table or room is admitted; those open play on,
and a server with nothing open admits its first (as adaptive concurrency limiters do, by what is
measured rather than by fixed costs alone).

No one client (an address) may hold more than ``client_capacity_share`` of that budget (but its
first table or room, whatever its share), nor more
than ``bot_rooms_per_client`` bot rooms (those waiting for a resume included): a flood of idle rooms
from one address takes its share, never the house.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Container
from dataclasses import dataclass

from service.errors import Unavailable
from service.prometheus import Recent
from service.settings import Settings

RETRY_AFTER_S = 30.0
LAG_PERIOD_S = 0.05  # how often the loop's lag is sampled
LAG_WINDOW_S = 10.0  # the recent past its p99 is read over


class LoopLag(Recent):
    """The event loop's lag: a task sleeps ``period_s`` again and again and records how late it
    woke (what any callback waited then); `p99` over the last ``window_s``."""

    def __init__(self, period_s: float = LAG_PERIOD_S, window_s: float = LAG_WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(window_s, clock)
        self.period_s = period_s

    async def run(self) -> None:
        """Sample until cancelled."""
        while True:
            started = self.clock()
            await asyncio.sleep(self.period_s)
            self.add(max(0.0, self.clock() - started - self.period_s))


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Costs:
    """The share of one core that each kind of table or room holds."""

    pictomania: float
    kontour: float
    bot: float

    def of(self, kind: str) -> float:
        """The share of a core one ``kind`` (``pictomania``, ``kontour``, ``bot``) holds."""
        return float(getattr(self, kind))


class ClientRooms:
    """The client (address) that opened each bot room, while the room lives: attached, or waiting
    for its resume (``live``: the ids of the rooms alive now)."""

    def __init__(self, live: Callable[[], Container[str]]) -> None:
        self.live = live
        self.clients: dict[str, str] = {}  # room (session) id -> client

    def add(self, room: str, client: str) -> None:
        """Room ``room`` was opened by ``client``."""
        self.clients[room] = client

    def count(self, client: str) -> int:
        """The rooms ``client`` holds now (the ended ones are forgotten here)."""
        live = self.live()
        for room in [r for r in self.clients if r not in live]:
            del self.clients[room]
        return sum(1 for owner in self.clients.values() if owner == client)


class Capacity:
    """The CPU budget of one process and what its open tables and rooms hold of it, in all and
    per client."""

    def __init__(self, costs: Costs, cores: float, utilisation: float,
                 open_count: Callable[[str], int], client_share: float = 1.0,
                 held_by: Callable[[str], float] | None = None, rooms: ClientRooms | None = None,
                 rooms_per_client: int | None = None, lag: Callable[[], float | None] | None = None,
                 lag_limit_s: float = 0.0, acks: Callable[[], float | None] | None = None) -> None:
        """``open_count(kind)``: how many tables or rooms of that kind are open now;
        ``held_by(client)``: the cores that client's tables and rooms hold; ``client_share``: the
        share of the budget one client may hold; ``rooms``: who opened each bot room, of which one
        client may hold ``rooms_per_client``; ``lag()``: the event loop's recent lag p99 (seconds),
        above ``lag_limit_s`` (0: never) nothing new is admitted."""
        self.costs, self.cores, self.utilisation, self.open_count = costs, cores, utilisation, open_count
        self.client_share, self.held_by = client_share, held_by
        self.rooms, self.rooms_per_client = rooms, rooms_per_client
        self.lag, self.lag_limit_s, self.acks = lag, lag_limit_s, acks

    @classmethod
    def from_settings(
        cls, settings: Settings, open_count: Callable[[str], int], share: float = 1.0,
        held_by: Callable[[str], float] | None = None, rooms: ClientRooms | None = None,
        lag: Callable[[], float | None] | None = None, acks: Callable[[], float | None] | None = None,
    ) -> Capacity:
        """The budget the settings describe (``capacity_cores`` 0: the usable cores), of which this
        process has ``share`` (one worker of several: 1 / their count)."""
        costs = Costs(settings.pictomania_table_cost, settings.kontour_table_cost, settings.bot_room_cost)
        cores = (settings.capacity_cores or usable_cores()) * share
        return cls(costs, cores, settings.capacity_utilisation, open_count, settings.client_capacity_share,
                   held_by, rooms, settings.bot_rooms_per_client, lag, settings.capacity_lag_ms / 1000, acks)

    @property
    def budget(self) -> float:
        """The cores tables and rooms may hold."""
        return self.cores * self.utilisation

    def held(self) -> float:
        """The cores held by what is open now."""
        return sum(self.costs.of(kind) * self.open_count(kind) for kind in ("pictomania", "kontour", "bot"))

    def admits(self, kind: str, freeing: str | None = None, client: str | None = None) -> bool:
        """Whether one more ``kind`` fits in the budget (once a ``freeing`` one is closed), and in
        ``client``'s share of it."""
        return self.refusal(kind, freeing, client) is None

    def refusal(self, kind: str, freeing: str | None = None, client: str | None = None) -> str | None:
        """Why one more ``kind`` of ``client``'s is refused (None: admitted)."""
        freed = self.costs.of(freeing) if freeing is not None else 0.0
        cost = self.costs.of(kind)
        held = self.held()
        if held - freed + cost > self.budget + 1e-9:
            return (f"the server is at capacity ({held:.2f} of {self.budget:.2f} cores held by open "
                    f"tables and rooms); retry in a while")
        if self.lag_limit_s > 0 and held - freed > 1e-9:
            lag = self.lag() if self.lag is not None else None
            if lag is not None and lag > self.lag_limit_s:
                return (f"the server is slow now (its event loop lagged {lag * 1000:.0f} ms at p99 lately, "
                        f"more than {self.lag_limit_s * 1000:.0f} ms); retry in a while")
            acks = self.acks() if self.acks is not None else None
            if acks is not None and acks > self.lag_limit_s:
                return (f"the server is slow now (its strokes were acknowledged in {acks * 1000:.0f} ms at "
                        f"p99 lately, more than {self.lag_limit_s * 1000:.0f} ms); retry in a while")
        if client is None:
            return None
        if kind == "bot" and self.rooms is not None and self.rooms_per_client is not None:
            mine = self.rooms.count(client)
            if mine >= self.rooms_per_client:
                return (f"your address holds {mine} bot rooms already (at most {self.rooms_per_client}); "
                        f"retry once one has ended")
        if self.held_by is not None and self.client_share < 1:
            theirs, allowed = self.held_by(client), self.budget * self.client_share
            if theirs - freed > 1e-9 and theirs - freed + cost > allowed + 1e-9:  # a first one fits
                return (f"your address holds {theirs:.2f} of the {allowed:.2f} cores one client may "
                        f"hold; retry once one of your tables or rooms has ended")
        return None

    def admit(self, kind: str, freeing: str | None = None, client: str | None = None) -> None:
        """Raise :class:`service.errors.Unavailable` (``server_busy``) when one more ``kind`` does
        not fit, in all or in ``client``'s share."""
        refusal = self.refusal(kind, freeing, client)
        if refusal is not None:
            raise Unavailable(refusal, code="server_busy", retry_after=RETRY_AFTER_S)
