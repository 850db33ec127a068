"""Admit only what can be served: a budget of CPU for the tables and rooms of one process.

Each open table or bot room holds a share of a core, measured by ``python -m bench.bench_capacity``
(the server's CPU per table at the largest load that keeps the stroke acknowledgement's p99 under
100 ms: docs/BENCHMARKS.md). The budget is the cores this process may use times
``capacity_utilisation``; a new table or room whose share would overdraw it is refused at once
(HTTP 503 ``server_busy`` with ``Retry-After``, or an ``overloaded`` frame on the bot socket)
instead of slowing every table already playing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from service.errors import Unavailable
from service.settings import Settings

RETRY_AFTER_S = 30.0


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


class Capacity:
    """The CPU budget of one process and what its open tables and rooms hold of it."""

    def __init__(self, costs: Costs, cores: float, utilisation: float,
                 open_count: Callable[[str], int]) -> None:
        """``open_count(kind)``: how many tables or rooms of that kind are open now."""
        self.costs, self.cores, self.utilisation, self.open_count = costs, cores, utilisation, open_count

    @classmethod
    def from_settings(
        cls, settings: Settings, open_count: Callable[[str], int], share: float = 1.0
    ) -> Capacity:
        """The budget the settings describe (``capacity_cores`` 0: the usable cores), of which this
        process has ``share`` (one worker of several: 1 / their count)."""
        costs = Costs(settings.pictomania_table_cost, settings.kontour_table_cost, settings.bot_room_cost)
        cores = (settings.capacity_cores or usable_cores()) * share
        return cls(costs, cores, settings.capacity_utilisation, open_count)

    @property
    def budget(self) -> float:
        """The cores tables and rooms may hold."""
        return self.cores * self.utilisation

    def held(self) -> float:
        """The cores held by what is open now."""
        return sum(self.costs.of(kind) * self.open_count(kind) for kind in ("pictomania", "kontour", "bot"))

    def admits(self, kind: str, freeing: str | None = None) -> bool:
        """Whether one more ``kind`` fits in the budget (once a ``freeing`` one is closed)."""
        freed = self.costs.of(freeing) if freeing is not None else 0.0
        return self.held() - freed + self.costs.of(kind) <= self.budget + 1e-9

    def admit(self, kind: str, freeing: str | None = None) -> None:
        """Raise :class:`service.errors.Unavailable` (``server_busy``) when one more ``kind`` does
        not fit."""
        if not self.admits(kind, freeing):
            raise Unavailable(
                f"the server is at capacity ({self.held():.2f} of {self.budget:.2f} cores held by open "
                f"tables and rooms); retry in a while",
                code="server_busy", retry_after=RETRY_AFTER_S,
            )
