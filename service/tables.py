"""The open tables as the layers below the features see them: the `Tables` protocol.

`service.play.manager.GameManager` is the one implementation. What is built beside it at start-up
and handed it at construction — a replica's leases (`service.replicas.Ownership`), the rooms with
friends (`service.play.rooms.Rooms`, through `service.play.room_tables.RoomTables`) — and what reads a
worker's load (`service.placement.weighted_load`) use only these members: none of them imports the
manager, and the manager imports them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from service.ratelimit import DecayingRate
from service.settings import Settings
from store import Store, StoredGame


class FencedLog(Protocol):
    """A table's move log, as a replica standing it down sees it (`service.play.journal.Journal`)."""

    writing: bool  # False: nothing more is written
    ended: bool  # True: its end is not this replica's to write


class Table(Protocol):
    """One open game (`service.play.table.GameSession`)."""

    moved: bool  # another replica took it over: this copy is dead

    @property
    def id(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def state(self) -> Any: ...

    @property
    def journal(self) -> FencedLog | None: ...

    @property
    def loop_used(self) -> DecayingRate: ...

    def now(self) -> float:
        """The game's clock."""
        ...


class Lobby(Protocol):
    """A room's lobby: a table to come (`service.play.rooms.Room`)."""

    @property
    def game(self) -> str: ...


class Lobbies(Protocol):
    """The lobbies of rooms with friends (`service.play.rooms.Rooms`)."""

    @property
    def lobbies(self) -> Mapping[str, Lobby]: ...

    def stand_down(self, code: str) -> None:
        """Let go of a lobby another replica took (its sockets reconnect, to the new holder)."""
        ...

    async def flush(self) -> None:
        """Wait for the lobby writes under way."""
        ...


class Tables(Protocol):
    """The open tables of one process (`service.play.manager.GameManager`)."""

    @property
    def games(self) -> Mapping[str, Table]: ...

    @property
    def store(self) -> Store | None: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def rooms(self) -> Lobbies: ...

    def forget(self, game_id: str) -> None:
        """Drop a game from memory, writing nothing."""
        ...

    def adopt(self, stored: StoredGame, game_clock: float = 0.0) -> Table | None:
        """Bring a stored game back from its log (None: it cannot be replayed)."""
        ...
