"""Admit only what can be served: a budget of CPU for the tables and rooms of one process.

Each open table or bot room holds a share of a core, measured by ``python -m bench.bench_capacity``
(the server's CPU per table at the largest load that keeps the stroke acknowledgement's p99 under
100 ms: docs/BENCHMARKS.md). The budget is the cores this process may use times
``capacity.utilisation``; a new table or room whose share would overdraw it is refused at once
(HTTP 503 ``server_busy`` with ``Retry-After``, or an ``overloaded`` frame on the bot socket)
instead of slowing every table already playing.

The costs are measured on a quiet host; on a busy one (other processes on its cores) the same
tables take longer. So admission also reads what is measured over the last ``LAG_WINDOW_S`` (as
adaptive concurrency limiters do, by what is measured rather than by fixed costs alone):

- the **share of the CPU** the event loop's thread gets when it wants it (:class:`CpuShare`: the
  time it ran over the time it ran or waited to run, from Linux's ``schedstat``): the budget is
  scaled by the square of its ratio to what the loop gets on a quiet host (``QUIET_CPU_SHARE``,
  where the costs were measured), so a host whose other processes leave the loop 71 % of that admits
  half the tables (never less than half the budget; a loop that ran less than ``CpuShare.MIN_BUSY`` of the
  window is not judged) — measured from the first tables, before the load they bring shows in the
  lag;
- the event loop's lag (:class:`LoopLag`, what every table's frames wait for) and the stroke
  acknowledgements (``griffon_stroke_ack_seconds``, the promise itself): while either's p99 is
  above ``capacity.lag_ms`` (100 ms: the promise), no new table or room is admitted.

Those open play on, and a server with nothing open admits its first. ``capacity.lag_ms`` 0: the
measured costs only.

No one client (an address) may hold more than ``capacity.client_share`` of that budget (but its
first table or room, whatever its share), nor more
than ``bot.rooms_per_client`` bot rooms (those waiting for a resume included): a flood of idle rooms
from one address takes its share, never the house. Under ``griffon serve --workers N`` each worker
has its share of the budget, and a client's bot rooms and games are counted on every worker
(``elsewhere``: what the siblings publish, `service.placement`), so that one address gets its
share of the server, not N times it.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Container
from dataclasses import dataclass

from service.errors import Unavailable
from service.prometheus import Recent
from service.settings import Settings

RETRY_AFTER_S = 30.0
LAG_PERIOD_S = 0.05  # how often the loop's lag is sampled
LAG_WINDOW_S = 10.0  # the recent past its p99 is read over
MIN_CPU_SHARE = 0.5  # the budget is never scaled below half: a busy host costs at most half the tables
# The share the loop gets on a quiet host at the measured costs' load: its sibling workers and its own
# threads make it wait too (76 % with 48 Pictomania tables on 2 workers, load 0.6; 65-66 % beside two
# busy processes: `python -m bench.bench_capacity --admission --busy 2`, docs/BENCHMARKS.md). The
# costs were measured with that wait in them, so the budget is scaled by the share relative to it.
QUIET_CPU_SHARE = 0.75


def thread_schedstat(tid: int) -> tuple[float, float] | None:
    """Seconds thread ``tid`` of this process has run on a CPU and waited, runnable, for one
    (``/proc/self/task/TID/schedstat``); None where Linux does not say."""
    try:
        with open(f"/proc/self/task/{tid}/schedstat", encoding="ascii") as counters:
            ran, waited = counters.read().split()[:2]
        return int(ran) / 1e9, int(waited) / 1e9
    except (OSError, ValueError):
        return None


class CpuShare:
    """The share of the CPU a thread gets when it wants it, over the last ``window_s``: the time it
    ran over the time it ran or waited to run (1: it never waits; 0.5: the host's other processes
    make it wait as long as it runs). Read from ``read()`` (ran, waited), sampled by `sample`."""

    # A loop that ran less than this share of the window tells little: each of its short wakes waits
    # at least the host's wake-up latency, which weighs more the shorter the wakes are, whatever
    # CPU is left for tables.
    MIN_BUSY = 0.02

    def __init__(self, read: Callable[[], tuple[float, float] | None], window_s: float = LAG_WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.read, self.window_s, self.clock = read, window_s, clock
        self.samples: deque[tuple[float, float, float]] = deque()  # (when, ran, waited)

    def sample(self) -> None:
        """Read the thread's counters now (and forget the samples out of the window, but the
        newest one before it: the window's start)."""
        counters = self.read()
        if counters is None:
            return
        now = self.clock()
        self.samples.append((now, *counters))
        while len(self.samples) > 2 and self.samples[1][0] <= now - self.window_s:
            self.samples.popleft()

    def share(self) -> float | None:
        """The share over the window (None: nothing measured yet, or the thread hardly ran)."""
        if len(self.samples) < 2:
            return None
        (at0, ran0, waited0), (at1, ran1, waited1) = self.samples[0], self.samples[-1]
        ran, waited = ran1 - ran0, waited1 - waited0
        if at1 <= at0 or ran < self.MIN_BUSY * (at1 - at0):
            return None
        return ran / (ran + waited)


class LoopLag(Recent):
    """The event loop's lag: a task sleeps ``period_s`` again and again and records how late it
    woke (what any callback waited then); `p99` over the last ``window_s``. Its ``cpu`` is the
    loop thread's `CpuShare`, sampled every ``CPU_EVERY`` wakes."""

    CPU_EVERY = 10

    def __init__(self, period_s: float = LAG_PERIOD_S, window_s: float = LAG_WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(window_s, clock)
        self.period_s = period_s
        self.tid = threading.get_native_id()  # set again by `run`, on the loop's thread
        self.cpu = CpuShare(lambda: thread_schedstat(self.tid), window_s, clock)

    async def run(self) -> None:
        """Sample until cancelled."""
        self.tid = threading.get_native_id()
        wakes = 0
        while True:
            started = self.clock()
            await asyncio.sleep(self.period_s)
            self.add(max(0.0, self.clock() - started - self.period_s))
            wakes += 1
            if wakes % self.CPU_EVERY == 0:
                self.cpu.sample()


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

    def __init__(self, live: Callable[[], Container[str]], changed: Callable[[], None] | None = None) -> None:
        """``changed()``: called when a room is added (under several workers: publish the counts)."""
        self.live, self.changed = live, changed
        self.clients: dict[str, str] = {}  # room (session) id -> client

    def add(self, room: str, client: str) -> None:
        """Room ``room`` was opened by ``client``."""
        self.clients[room] = client
        if self.changed is not None:
            self.changed()

    def counts(self) -> Counter[str]:
        """The rooms each client holds now (the ended ones are forgotten here)."""
        live = self.live()
        for room in [r for r in self.clients if r not in live]:
            del self.clients[room]
        return Counter(self.clients.values())

    def count(self, client: str) -> int:
        """The rooms ``client`` holds now."""
        return self.counts()[client]


class Capacity:
    """The CPU budget of one process and what its open tables and rooms hold of it, in all and
    per client."""

    def __init__(self, costs: Costs, cores: float, utilisation: float,
                 open_count: Callable[[str], int], client_share: float = 1.0,
                 held_by: Callable[[str], float] | None = None, rooms: ClientRooms | None = None,
                 rooms_per_client: int | None = None, lag: Callable[[], float | None] | None = None,
                 lag_limit_s: float = 0.0, acks: Callable[[], float | None] | None = None,
                 elsewhere: Callable[[str, str], int] | None = None,
                 cpu_share: Callable[[], float | None] | None = None) -> None:
        """``open_count(kind)``: how many tables or rooms of that kind are open now;
        ``held_by(client)``: the cores that client's tables and rooms hold; ``client_share``: the
        share of the budget one client may hold; ``rooms``: who opened each bot room, of which one
        client may hold ``rooms_per_client``; ``lag()``: the event loop's recent lag p99 (seconds),
        above ``lag_limit_s`` (0: never) nothing new is admitted; ``elsewhere(client, what)``: what
        that client holds on the other workers (``bots``, ``games``: `service.placement`);
        ``cpu_share()``: the share of the CPU the event loop gets when it wants it (`CpuShare`),
        which scales the budget (unless ``lag_limit_s`` is 0)."""
        self.costs, self.cores, self.utilisation, self.open_count = costs, cores, utilisation, open_count
        self.client_share, self.held_by = client_share, held_by
        self.rooms, self.rooms_per_client = rooms, rooms_per_client
        self.lag, self.lag_limit_s, self.acks = lag, lag_limit_s, acks
        self.elsewhere, self.cpu_share = elsewhere, cpu_share

    @classmethod
    def from_settings(
        cls, settings: Settings, open_count: Callable[[str], int], share: float = 1.0,
        held_by: Callable[[str], float] | None = None, rooms: ClientRooms | None = None,
        lag: Callable[[], float | None] | None = None, acks: Callable[[], float | None] | None = None,
        elsewhere: Callable[[str, str], int] | None = None,
        cpu_share: Callable[[], float | None] | None = None,
    ) -> Capacity:
        """The budget the settings describe (``capacity.cores`` 0: the usable cores), of which this
        process has ``share`` (one worker of several: 1 / their count)."""
        capacity = settings.capacity
        costs = Costs(capacity.pictomania_table_cost, capacity.kontour_table_cost, capacity.bot_room_cost)
        cores = (capacity.cores or usable_cores()) * share
        return cls(costs, cores, capacity.utilisation, open_count, capacity.client_share,
                   held_by, rooms, settings.bot.rooms_per_client, lag, settings.capacity.lag_ms / 1000, acks,
                   elsewhere, cpu_share)

    def held_elsewhere(self, client: str, what: str) -> int:
        """What ``client`` holds of ``what`` (``bots``, ``games``) on the other workers (0: one process)."""
        return self.elsewhere(client, what) if self.elsewhere is not None else 0

    @property
    def budget(self) -> float:
        """The cores tables and rooms may hold."""
        return self.cores * self.utilisation

    def share(self) -> float:
        """The share of the CPU the event loop gets when it wants it (1: unmeasured, or admission
        by the measured costs only)."""
        share = self.cpu_share() if self.cpu_share is not None and self.lag_limit_s > 0 else None
        # squared: a table's wait grows faster than the CPU it loses (a longer run queue, as in queueing)
        return 1.0 if share is None else min(1.0, max(MIN_CPU_SHARE, (share / QUIET_CPU_SHARE) ** 2))

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
        held, share = self.held(), self.share()
        scaled = held - freed > 1e-9  # the first table fits the whole budget, however busy the host
        if held - freed + cost > (self.budget * share if scaled else self.budget) + 1e-9:
            busy = f", the host's other work leaving it {share:.0%} of the CPU" if share < 1 else ""
            return (f"the server is at capacity ({held:.2f} of {self.budget * share:.2f} cores held by "
                    f"open tables and rooms{busy}); retry in a while")
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
            mine = self.rooms.count(client) + self.held_elsewhere(client, "bots")
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
