"""Which replica drives which game: leases in PostgreSQL, and a fence the database itself enforces.

Several ``griffon serve`` replicas share one PostgreSQL database (docs/DEPLOY.md). Each game is
driven by one replica at a time, its **holder**: a row of ``griffon_leases`` says who (``holder``:
the replica's name and a random suffix, new at every start), where the others reach it
(``address``, for the relay), until when (``expires_at``, on the database's clock: replicas on
several hosts never compare their own clocks), and the game clock at the last renewal
(``game_clock``: a game taken over goes on from there, its timers not restarted). ``fence`` grows
by one at every change of holder.

The holder renews its leases every second or so (`Leases.renew`); a lease left to expire (the
replica died, or was paused) is taken by another replica (`Leases.claim`), which loads the game from
its stored log. A clean shutdown gives the leases up at once (`Leases.release`).

**The fence.** Every connection of a replica names its holder (``griffon.holder``, set through the
connection URL's ``options``: `holder_url`), and a trigger on ``moves`` and ``games`` refuses a write
to a game whose lease another holder took: a replica paused past its lease, then resumed, cannot
append one move, not even one it had in flight (nor write or delete the memory of a bot room,
``bot_rooms``, whose lease ``bot:<session>`` another holder took, nor a lobby of ``rooms`` whose
lease ``room:<code>`` another holder took) — the check and the write are one
transaction, and the lease row is locked (``FOR SHARE``) so that a takeover waits for a write in
progress and the next write waits for the takeover. The refusal is SQLSTATE ``GF409``, which the
store raises as `store.MoveRejected` (refused for good: `is_lease_lost` tells it). Writers that
name no holder (``griffon db``, a single server) are not fenced.

**The replicas.** Each replica also has a row of ``griffon_replicas`` while it runs (`Leases.join`,
refreshed at every renewal, deleted when it stops cleanly): its name, holder, address, when it
started and was last seen, and a check of its replicas' secret (an HMAC, never the secret itself):
a replica whose secret differs from a live one's refuses to start (its relays would be served as
ordinary clients), and ``griffon replicas status`` reads who is up and holds what (`status`).

The tables and the trigger are PostgreSQL only (replicas need a shared server; SQLite is one
process) and installed by `Leases.install`, idempotent, under the migrations' advisory lock.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from store.database import Store
from store.errors import LEASE_LOST_STATE, StoreError
from store.postgres import MIGRATION_LOCK

HOLDER_SETTING = "griffon.holder"
NOW = "EXTRACT(EPOCH FROM clock_timestamp())"  # the database's clock, Unix seconds

FENCE = f"""
    DECLARE
        me TEXT := current_setting('{HOLDER_SETTING}', true);
        game TEXT;
        held TEXT;
    BEGIN
        IF me IS NULL OR me = '' THEN
            RETURN NEW;
        END IF;
        IF TG_TABLE_NAME = 'moves' THEN game := NEW.game_id; ELSE game := NEW.id; END IF;
        SELECT holder INTO held FROM griffon_leases WHERE game_id = game FOR SHARE;
        IF FOUND AND held <> me THEN
            RAISE EXCEPTION 'game % is driven by another replica (%): lease lost', game, held
                USING ERRCODE = '{LEASE_LOST_STATE}';
        END IF;
        RETURN NEW;
    END
    """  # the trigger's body: refuses a write to a game another replica holds
ROOM_FENCE = f"""
    DECLARE
        me TEXT := current_setting('{HOLDER_SETTING}', true);
        room TEXT;
        held TEXT;
    BEGIN
        IF TG_TABLE_NAME = 'rooms' THEN
            IF TG_OP = 'DELETE' THEN room := 'room:' || OLD.code; ELSE room := 'room:' || NEW.code; END IF;
        ELSIF TG_OP = 'DELETE' THEN room := 'bot:' || OLD.session; ELSE room := 'bot:' || NEW.session; END IF;
        IF me IS NOT NULL AND me <> '' THEN
            SELECT holder INTO held FROM griffon_leases WHERE game_id = room FOR SHARE;
            IF FOUND AND held <> me THEN
                RAISE EXCEPTION 'room % is driven by another replica (%): lease lost', room, held
                    USING ERRCODE = '{LEASE_LOST_STATE}';
            END IF;
        END IF;
        IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
        RETURN NEW;
    END
    """  # the same for a bot room's memory (lease "bot:<session>") and a lobby ("room:<code>"), deletions too
INSTALL = (
    "CREATE TABLE IF NOT EXISTS griffon_leases ("
    " game_id TEXT PRIMARY KEY, holder TEXT NOT NULL, address TEXT NOT NULL, fence BIGINT NOT NULL,"
    " expires_at DOUBLE PRECISION NOT NULL, game_clock DOUBLE PRECISION NOT NULL)",
    "CREATE INDEX IF NOT EXISTS griffon_leases_by_holder ON griffon_leases (holder)",
    "CREATE TABLE IF NOT EXISTS griffon_replicas ("
    " holder TEXT PRIMARY KEY, name TEXT NOT NULL, address TEXT NOT NULL, secret_check TEXT NOT NULL,"
    " started_at DOUBLE PRECISION NOT NULL, seen_at DOUBLE PRECISION NOT NULL)",
    f"CREATE OR REPLACE FUNCTION griffon_fence() RETURNS trigger LANGUAGE plpgsql AS $fence${FENCE}$fence$",
    "CREATE OR REPLACE TRIGGER griffon_fence_moves BEFORE INSERT ON moves "
    "FOR EACH ROW EXECUTE FUNCTION griffon_fence()",
    "CREATE OR REPLACE TRIGGER griffon_fence_games BEFORE UPDATE ON games "
    "FOR EACH ROW EXECUTE FUNCTION griffon_fence()",
    "CREATE OR REPLACE FUNCTION griffon_fence_room() RETURNS trigger LANGUAGE plpgsql "
    f"AS $fence${ROOM_FENCE}$fence$",
    "CREATE OR REPLACE TRIGGER griffon_fence_bot_rooms BEFORE INSERT OR UPDATE OR DELETE ON bot_rooms "
    "FOR EACH ROW EXECUTE FUNCTION griffon_fence_room()",
    "CREATE OR REPLACE TRIGGER griffon_fence_rooms BEFORE INSERT OR UPDATE OR DELETE ON rooms "
    "FOR EACH ROW EXECUTE FUNCTION griffon_fence_room()",
)


def is_lease_lost(error: BaseException) -> bool:
    """Whether a store error (or one of its causes) is the fence's refusal."""
    seen: BaseException | None = error
    while seen is not None:
        if getattr(seen, "sqlstate", None) == LEASE_LOST_STATE:
            return True
        seen = seen.__cause__
    return False


def new_holder(name: str) -> str:
    """A holder name for one start of replica ``name``: its leases are its own, not those of the
    replica's previous run (which died with its games in memory)."""
    return f"{name}:{secrets.token_hex(4)}"


def holder_url(url: str, holder: str) -> str:
    """The database URL whose every connection names ``holder`` (libpq ``options``)."""
    if not holder.replace(":", "").replace("-", "").replace("_", "").isalnum():
        raise StoreError(f"a replica name is letters, digits, '-' and '_': {holder!r}")
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    option = f"-c {HOLDER_SETTING}={holder}"
    query["options"] = f"{query['options']} {option}" if query.get("options") else option
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


@dataclass(frozen=True)
class Lease:
    """One game's lease as stored."""

    game_id: str
    holder: str
    address: str
    fence: int
    expires_at: float
    game_clock: float
    expired: bool


class Leases:
    """The leases of one replica (``holder``, reachable at ``address``) over a PostgreSQL store."""

    def __init__(self, store: Store, holder: str, address: str, lease_s: float) -> None:
        if store.backend != "postgresql":
            raise StoreError("replicas share a PostgreSQL database: set GRIFFON_DB_URL=postgresql://...")
        self.store, self.holder, self.address, self.lease_s = store, holder, address, float(lease_s)

    def installed(self) -> bool:
        """Whether the lease table and this version's fence are in place (nothing to lock)."""
        found = self.store.rows(
            "SELECT to_regclass('griffon_leases') IS NOT NULL "
            "AND to_regclass('griffon_replicas') IS NOT NULL, "
            "(SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal AND tgname IN "
            "('griffon_fence_moves', 'griffon_fence_games', 'griffon_fence_bot_rooms', "
            "'griffon_fence_rooms') AND tgrelid IN ('moves'::regclass, 'games'::regclass, "
            "'bot_rooms'::regclass, 'rooms'::regclass)), "
            "(SELECT prosrc FROM pg_proc WHERE proname = 'griffon_fence' LIMIT 1), "
            "(SELECT prosrc FROM pg_proc WHERE proname = 'griffon_fence_room' LIMIT 1)"
        )
        table, triggers, body, room_body = found[0]
        return bool(table) and int(triggers) == 4 and body == FENCE and room_body == ROOM_FENCE

    def install(self) -> None:
        """Create the lease table and the fence when they are missing or older (idempotent; several
        replicas may start at once). A replica joining live ones finds them in place and changes
        nothing: a trigger created on a busy table would wait for its writers."""
        if self.installed():
            return
        with self.store.lock, self.store.write():
            self.store.run("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
            for statement in INSTALL:
                with self.store.guard():
                    self.store.conn.execute(statement)  # no parameters: the '%' of RAISE stays as is

    def join(self, name: str, secret_check: str) -> list[tuple[str, float]]:
        """Register this replica (``name``, its secret's ``secret_check``) as up; or, when live
        replicas (seen within twice the lease) run with another secret, register nothing and
        return them: (name, seconds since seen)."""
        with self.store.lock, self.store.write():
            others = self.store.run(
                f"SELECT name, {NOW} - seen_at FROM griffon_replicas WHERE holder <> ? AND secret_check <> ? "
                f"AND seen_at >= {NOW} - ? ORDER BY name", (self.holder, secret_check, 2 * self.lease_s),
            ).fetchall()
            if others:
                return [(str(n), float(ago)) for n, ago in others]
            self.store.run(f"DELETE FROM griffon_replicas WHERE seen_at < {NOW} - 86400")  # long gone
            self.store.run(
                "INSERT INTO griffon_replicas (holder, name, address, secret_check, started_at, seen_at) "
                f"VALUES (?, ?, ?, ?, {NOW}, {NOW}) ON CONFLICT (holder) DO UPDATE SET seen_at = {NOW}",
                (self.holder, name, self.address, secret_check),
            )
        return []

    def seen(self) -> None:
        """This replica is up (at every renewal)."""
        with self.store.lock, self.store.write():
            self.store.run(f"UPDATE griffon_replicas SET seen_at = {NOW} WHERE holder = ?", (self.holder,))

    def leave(self) -> None:
        """This replica stops (a clean shutdown): its row goes."""
        with self.store.lock, self.store.write():
            self.store.run("DELETE FROM griffon_replicas WHERE holder = ?", (self.holder,))

    def now(self) -> float:
        """The database's clock (Unix seconds)."""
        return float(self.store.rows(f"SELECT {NOW}")[0][0])

    def claim(self, game_id: str, game_clock: float = 0.0) -> Lease | None:
        """Take the game's lease if nobody holds it or it expired; None when another replica holds
        it. The returned ``game_clock`` is the previous holder's last (``game_clock`` for a new one)."""
        return self._one(
            "INSERT INTO griffon_leases AS l (game_id, holder, address, fence, expires_at, game_clock) "
            f"VALUES (?, ?, ?, 1, {NOW} + ?, ?) ON CONFLICT (game_id) "
            "DO UPDATE SET holder = excluded.holder, address = excluded.address, fence = l.fence + 1, "
            "expires_at = excluded.expires_at "
            f"WHERE l.expires_at < {NOW} OR l.holder = excluded.holder "
            "RETURNING l.game_id, l.holder, l.address, l.fence, l.expires_at, l.game_clock",
            (game_id, self.holder, self.address, self.lease_s, float(game_clock)),
        )

    def renew(self, held: dict[str, tuple[int, float]]) -> set[str]:
        """Extend the leases of ``held`` (game id -> (fence, game clock now)); returns the ids still
        held: a missing one was taken by another replica (stop driving it)."""
        if not held:
            return set()
        ids = list(held)
        found = self.store.rows(
            f"UPDATE griffon_leases AS l SET expires_at = {NOW} + ?, game_clock = d.clock "
            "FROM unnest(?::text[], ?::bigint[], ?::float8[]) AS d(id, fence, clock) "
            "WHERE l.game_id = d.id AND l.fence = d.fence AND l.holder = ? RETURNING l.game_id",
            (self.lease_s, ids, [held[i][0] for i in ids], [float(held[i][1]) for i in ids], self.holder),
        )
        return {row[0] for row in found}

    def release(self, clocks: dict[str, float] | None = None, forget: tuple[str, ...] = ()) -> None:
        """Give up leases now: those of ``clocks`` (game id -> game clock) expire at once, for another
        replica to take (all of this holder's when None: a clean shutdown); those of ``forget``
        (games over) are deleted."""
        with self.store.lock, self.store.write():
            if clocks is None:
                self.store.run("UPDATE griffon_leases SET expires_at = 0 WHERE holder = ?", (self.holder,))
            elif clocks:
                ids = list(clocks)
                self.store.run(
                    "UPDATE griffon_leases AS l SET expires_at = 0, game_clock = d.clock "
                    "FROM unnest(?::text[], ?::float8[]) AS d(id, clock) "
                    "WHERE l.game_id = d.id AND l.holder = ?",
                    (ids, [float(clocks[i]) for i in ids], self.holder),
                )
            if forget:
                self.store.run("DELETE FROM griffon_leases WHERE holder = ? AND game_id = ANY(?)",
                               (self.holder, list(forget)))

    def get(self, game_id: str) -> Lease | None:
        """A game's lease, held or not."""
        return self._one(
            "SELECT game_id, holder, address, fence, expires_at, game_clock FROM griffon_leases "
            "WHERE game_id = ?", (game_id,),
        )

    def orphans(self, limit: int) -> list[str]:
        """Games in play that no live replica drives (lease expired, or none), in random order: what
        the replicas take over."""
        found = self.store.rows(
            "SELECT g.id FROM games AS g LEFT JOIN griffon_leases AS l ON l.game_id = g.id "
            f"WHERE g.status = 'playing' AND (l.game_id IS NULL OR l.expires_at < {NOW}) "
            "ORDER BY random() LIMIT ?", (limit,),
        )
        return [row[0] for row in found]

    def holders(self) -> dict[str, int]:
        """Live leases per holder (for tests and ``/metrics``)."""
        found = self.store.rows(
            f"SELECT holder, COUNT(*) FROM griffon_leases WHERE expires_at >= {NOW} GROUP BY holder"
        )
        return {holder: int(count) for holder, count in found}

    def _one(self, text: str, params: tuple[Any, ...]) -> Lease | None:
        with self.store.lock, self.store.write():
            row = self.store.run(text, params).fetchone()
            now = float(self.store.run(f"SELECT {NOW}").fetchone()[0])
        if row is None:
            return None
        game_id, holder, address, fence, expires_at, game_clock = row
        return Lease(game_id, holder, address, int(fence), float(expires_at), float(game_clock),
                     float(expires_at) < now)


@dataclass(frozen=True)
class ReplicaStatus:
    """One replica as the database sees it (``griffon replicas status``)."""

    name: str
    holder: str
    address: str
    up: bool  # seen within twice the lease
    seen_s: float  # seconds since it was last seen
    started_s: float  # seconds since it started
    games: int  # live leases of tables
    rooms: int  # live leases of bot rooms


def status(store: Store, lease_s: float) -> tuple[list[ReplicaStatus], int]:
    """The replicas that ran in the last day, the live ones first, with the tables and bot rooms
    each holds now; and the tables in play that no live replica holds (waiting to be taken over)."""
    if store.backend != "postgresql":
        raise StoreError("replicas share a PostgreSQL database: set GRIFFON_DB_URL=postgresql://...")
    if not store.rows("SELECT to_regclass('griffon_replicas') IS NOT NULL")[0][0]:
        return [], 0
    rows = store.rows(
        f"SELECT r.name, r.holder, r.address, {NOW} - r.seen_at, {NOW} - r.started_at, "
        "COUNT(l.game_id) FILTER (WHERE left(l.game_id, 4) <> 'bot:' AND left(l.game_id, 5) <> 'room:'), "
        "COUNT(l.game_id) FILTER (WHERE left(l.game_id, 4) = 'bot:') "
        "FROM griffon_replicas AS r LEFT JOIN griffon_leases AS l "
        f"ON l.holder = r.holder AND l.expires_at >= {NOW} "
        "GROUP BY r.holder ORDER BY r.name, r.started_at DESC"
    )
    replicas = [ReplicaStatus(str(n), str(h), str(a), float(seen) <= 2 * lease_s, float(seen), float(started),
                              int(games), int(rooms)) for n, h, a, seen, started, games, rooms in rows]
    waiting = store.rows(
        "SELECT COUNT(*) FROM games AS g LEFT JOIN griffon_leases AS l ON l.game_id = g.id "
        f"WHERE g.status = 'playing' AND (l.game_id IS NULL OR l.expires_at < {NOW})"
    )[0][0]
    return sorted(replicas, key=lambda r: (not r.up, r.name)), int(waiting)
