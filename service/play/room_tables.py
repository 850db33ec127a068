"""What the rooms with friends use of the game manager: `RoomTables`, the core's `service.tables.Tables`
and the members that open a room's game. `service.play.manager.GameManager` implements it and builds
its `service.play.rooms.Rooms` with itself, so the rooms never import the manager."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from service.play.settings import PlaySettings
from service.play.table import GameSession
from service.tables import Tables
from service.workers import Workers


class RoomTables(Tables, Protocol):
    """The tables as a room sees them: the games it starts are ordinary games of the manager."""

    clock: Callable[[], float]  # the games' monotonic clock
    owners: dict[str, str]  # game id -> the client that created it

    @property
    def games(self) -> Mapping[str, GameSession]: ...

    @property
    def play(self) -> PlaySettings: ...

    @property
    def workers(self) -> Workers | None: ...

    @property
    def ownership(self) -> object | None:
        """A replica's leases (`service.replicas.Ownership`; None: one server alone)."""
        ...

    def open(
        self, game: str, names: dict[str, str], level: str, seed: int | None, client: str, learn: bool,
        host_hash: str, friends: dict[str, str] | None = None, room: str | None = None,
        withdraw_key: str | None = None, levels: dict[str, str] | None = None,
    ) -> GameSession:
        """A new game of these seats, stored on the caller's thread and started."""
        ...

    async def open_async(
        self, game: str, names: dict[str, str], level: str, seed: int | None, client: str, learn: bool,
        host_hash: str, friends: dict[str, str] | None = None, room: str | None = None,
        withdraw_key: str | None = None, levels: dict[str, str] | None = None,
    ) -> GameSession:
        """`open`, the database write in a thread."""
        ...
