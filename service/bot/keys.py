"""API keys of bot rooms: who may open a room, how many at once, how many strokes a minute.

A key is created by ``griffon keys create`` (store/cli.py) and kept in the database as the SHA-256
of its secret. A room gives the secret in ``hello.key`` or in the handshake's
``Authorization: Bearer`` header; :meth:`BotKeys.admit` checks it once, at ``hello``:

- no key: refused (``key_required``, close 4401) when ``bot.keys_required``, else a room without
  a key, as on a single machine (no database read);
- unknown key: ``bad_key`` (4401); revoked: ``key_revoked`` (4403);
- the key's rooms at once already open, on every server sharing the database: ``quota_exceeded``
  (4429). Each open room is a row of ``bot_key_rooms`` renewed every ``bot.keys_refresh_s``; the
  rooms of a process that died stop counting after :data:`STALE_PERIODS` periods (at least
  :data:`STALE_MIN_S` seconds).

Strokes per minute (:meth:`BotKeys.check_stroke`) are counted in a one-minute window per key and
process; with the key's rooms spread over several processes, each allows its share of the quota
(its rooms over the key's rooms everywhere, read at each refresh). A stroke over it is refused
(``quota_exceeded``, with ``retry_after`` in seconds); the connection stays open.

Every ``bot.keys_refresh_s`` each process re-reads the keys its rooms use (one query, however many
rooms): a revoked key's rooms get a ``key_revoked`` error frame and are closed (4403). Lookups are
cached as long (the newest ``MAX_CACHED`` secrets seen, unknown ones too). Per-key figures go to
``/metrics``, labelled by the key's name (never its secret).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from service.frames import FrameError
from service.prometheus import Metrics
from store import BotKey, Store, StoreError, hash_token

if TYPE_CHECKING:
    from service.bot.session import BotSession

log = logging.getLogger("griffon.bot")
CLOSE_BAD_KEY, CLOSE_REVOKED, CLOSE_QUOTA, CLOSE_TRY_LATER = 4401, 4403, 4429, 1013
MAX_CACHED = 1_024  # secrets whose lookup is remembered (known keys and unknown secrets)
MAX_SECRET_CHARS = 200
STALE_PERIODS = 3  # a room not renewed for this many refresh periods (and at least
STALE_MIN_S = 30.0  # this many seconds) no longer counts: its process died
MINUTE_S = 60.0

Revoked = Callable[[], Awaitable[None]]


class KeyRefused(Exception):
    """A room refused at ``hello``: the error frame's ``code`` and message, and the close code."""

    def __init__(self, code: str, message: str, close_code: int) -> None:
        super().__init__(message)
        self.code, self.message, self.close_code = code, message, close_code


def presented_key(hello_key: str | None, authorization: str | None) -> str | None:
    """The key a room gave: ``hello.key``, else the ``Authorization: Bearer`` header's."""
    if hello_key:
        return hello_key
    scheme, _, value = (authorization or "").strip().partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


@dataclass
class _Room:
    key: BotKey
    on_revoked: Revoked


@dataclass
class _Window:
    started: float
    strokes: int = 0


class BotKeys:
    """The keys this process's rooms use, their quotas and counters (one per app)."""

    def __init__(self, store: Store, metrics: Metrics, required: bool, refresh_s: float,
                 clock: Callable[[], float] = time.time) -> None:
        self.store, self.metrics, self.required, self.refresh_s = store, metrics, required, refresh_s
        self.clock = clock
        self.holder = secrets.token_hex(6)  # this process, in bot_key_rooms
        self.cache: OrderedDict[str, tuple[BotKey | None, float]] = OrderedDict()
        self.rooms: dict[str, _Room] = {}  # session id -> its key
        self.windows: dict[str, _Window] = {}  # key id -> this minute's strokes
        self.everywhere: dict[str, int] = {}  # key id -> its rooms on every server (last refresh)
        self.pending: set[asyncio.Task[Any]] = set()

    # -- hello -----------------------------------------------------------------------------------
    async def admit(self, presented: str | None, session: str, on_revoked: Revoked) -> BotKey | None:
        """The key of a room saying hello (None: no key, allowed); raises :class:`KeyRefused`."""
        if not presented:
            if self.required:
                self._refused(None, "key_required")
                raise KeyRefused("key_required", "this server requires an API key: send it in hello.key "
                                 "or the header 'Authorization: Bearer KEY'", CLOSE_BAD_KEY)
            return None
        key = await self._lookup(presented)
        if key is None:
            self._refused(None, "bad_key")
            raise KeyRefused("bad_key", "unknown API key", CLOSE_BAD_KEY)
        if key.revoked:
            self._refused(key, "key_revoked")
            raise KeyRefused("key_revoked", f"the API key {key.name!r} was revoked", CLOSE_REVOKED)
        now = self.clock()
        try:
            held = await asyncio.to_thread(self.store.claim_key_room, key.id, session, self.holder,
                                           key.max_rooms, self._fresh_after(now), now)
        except StoreError as error:
            log.warning("bot key %s: room not counted: %s", key.name, error)
            self._refused(key, "keys_unavailable")
            raise KeyRefused("keys_unavailable", "the API key could not be checked now: retry in a while",
                             CLOSE_TRY_LATER) from None
        if held is None:
            self._refused(key, "quota_exceeded")
            raise KeyRefused("quota_exceeded", f"the API key {key.name!r} already holds its {key.max_rooms} "
                             "rooms at once: close one first", CLOSE_QUOTA)
        again = self.rooms.pop(session, None)  # a second hello (the first one failed afterwards)
        if again is not None:
            self.metrics.key_rooms_open.labels(key=again.key.name).dec()
        self.rooms[session] = _Room(key, on_revoked)
        self.everywhere[key.id] = max(self.everywhere.get(key.id, 0), held)
        self.metrics.key_rooms_open.labels(key=key.name).inc()
        if again is None or again.key.id != key.id:
            self.metrics.key_rooms.labels(key=key.name).inc()
        return key

    async def _lookup(self, presented: str) -> BotKey | None:
        if len(presented) > MAX_SECRET_CHARS:
            return None
        digest = hash_token(presented)
        now = self.clock()
        cached = self.cache.get(digest)
        if cached is not None and now - cached[1] < self.refresh_s:
            key = cached[0]
        else:
            try:
                key = await asyncio.to_thread(self.store.find_bot_key, digest)
            except StoreError as error:
                log.warning("bot keys: lookup failed: %s", error)
                self._refused(None, "keys_unavailable")
                raise KeyRefused("keys_unavailable", "the API key could not be checked now: retry in a "
                                 "while", CLOSE_TRY_LATER) from None
            self._remember(digest, key, now)
        # the database found the row by its hash; compare again in constant time all the same
        return key if key is not None and secrets.compare_digest(key.secret_hash, digest) else None

    def _remember(self, digest: str, key: BotKey | None, now: float) -> None:
        self.cache[digest] = (key, now)
        self.cache.move_to_end(digest)
        while len(self.cache) > MAX_CACHED:
            self.cache.popitem(last=False)

    # -- strokes ---------------------------------------------------------------------------------
    def check_stroke(self, session: BotSession, ref: Any, whole: bool) -> None:
        """Count a stroke of a keyed room (at ``stroke_end``, or a whole ``stroke``); over the
        key's strokes per minute the open stroke is dropped and :class:`FrameError`
        ``quota_exceeded`` raised. A frame the session refuses anyway (no round, no open stroke)
        is not counted."""
        room = self.rooms.get(session.id)
        rnd = session.round
        if room is None or rnd is None or (not whole and rnd.open_stroke is None):
            return
        key, now = room.key, self.clock()
        window = self.windows.get(key.id)
        if window is None or now - window.started >= MINUTE_S:
            window = self.windows[key.id] = _Window(now)
        allowed = self._stroke_share(key)
        if allowed is not None and window.strokes >= allowed:
            rnd.open_stroke = None
            wait = max(1, math.ceil(window.started + MINUTE_S - now))
            self._refused(key, "quota_exceeded")
            raise FrameError("quota_exceeded", f"the API key {key.name!r} allows {key.strokes_per_minute} "
                             f"strokes per minute: stroke dropped, retry in {wait} s", ref, retry_after=wait)
        window.strokes += 1
        self.metrics.key_strokes.labels(key=key.name).inc()

    def _stroke_share(self, key: BotKey) -> int | None:
        """This process's strokes per minute for `key` (None: no limit)."""
        if not key.strokes_per_minute:
            return None
        here = sum(1 for room in self.rooms.values() if room.key.id == key.id)
        everywhere = max(self.everywhere.get(key.id, 0), here, 1)
        return max(1, math.ceil(key.strokes_per_minute * here / everywhere))

    # -- end of a room ---------------------------------------------------------------------------
    def release(self, session: str, keep_row: bool = False) -> None:
        """A room closed: it no longer counts (its row is deleted off the event loop; kept when
        another replica took the room over and counts it now: ``keep_row``)."""
        room = self.rooms.pop(session, None)
        if room is None:
            return
        self.metrics.key_rooms_open.labels(key=room.key.name).dec()
        if not any(r.key.id == room.key.id for r in self.rooms.values()):
            self.windows.pop(room.key.id, None)
        if not keep_row:
            self._background(asyncio.to_thread(self._release_row, session))

    def _release_row(self, session: str) -> None:
        try:
            self.store.release_key_room(session)
        except StoreError as error:  # the row expires by itself
            log.warning("bot keys: room %s not released: %s", session, error)

    def _background(self, work: Awaitable[Any]) -> None:
        try:
            task = asyncio.get_running_loop().create_task(work)  # type: ignore[arg-type]
        except RuntimeError:  # no loop (shutdown): the row expires by itself
            if asyncio.iscoroutine(work):
                work.close()
            return
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    # -- revocations and renewals ----------------------------------------------------------------
    async def refresh(self) -> None:
        """Re-read the keys in use (revocations, quotas), renew this process's rooms and read how
        many rooms each key holds everywhere; close the rooms of revoked keys."""
        ids = sorted({room.key.id for room in self.rooms.values()})
        if not ids:
            return
        rooms = [(session, room.key.id) for session, room in self.rooms.items()]
        now = self.clock()
        keys, everywhere = await asyncio.to_thread(self._read, ids, rooms, now)
        self.everywhere = everywhere
        fresh = {key.id: key for key in keys}
        for session, room in list(self.rooms.items()):
            if room.key.id not in ids:  # admitted while the keys were being read: next time
                continue
            key = fresh.get(room.key.id)
            if key is None or key.revoked:  # revoked, or deleted from the database
                self.rooms.pop(session, None)
                self.metrics.key_rooms_open.labels(key=room.key.name).dec()
                self._refused(room.key, "key_revoked")
                self._background(self._close_revoked(session, room))
            else:
                room.key = key
        for digest, (key, _) in list(self.cache.items()):
            if key is not None and key.id in fresh:
                self.cache[digest] = (fresh[key.id], now)

    def _read(self, ids: list[str], rooms: list[tuple[str, str]],
              now: float) -> tuple[list[BotKey], dict[str, int]]:
        keys = self.store.bot_keys(ids)
        known = {key.id for key in keys}  # a key deleted from the database has no rooms to renew
        self.store.renew_key_rooms([r for r in rooms if r[1] in known], self.holder, now)
        return keys, self.store.key_rooms(ids, self._fresh_after(now))

    async def _close_revoked(self, session: str, room: _Room) -> None:
        try:
            await room.on_revoked()
        except Exception:  # a socket already gone: nothing to tell
            log.debug("bot room %s: closing after revocation failed", session, exc_info=True)
        await asyncio.to_thread(self._release_row, session)

    async def refresh_forever(self) -> None:
        """:meth:`refresh` every ``refresh_s`` (a failure is logged; the next one may pass)."""
        while True:
            await asyncio.sleep(self.refresh_s)
            try:
                await self.refresh()
            except StoreError as error:
                log.warning("bot keys: refresh failed: %s", error)
            except Exception:
                log.exception("bot keys: refresh failed")

    async def aclose(self) -> None:
        """Wait for the rows being released."""
        if self.pending:
            with contextlib.suppress(Exception):
                await asyncio.gather(*self.pending, return_exceptions=True)

    # -- helpers ---------------------------------------------------------------------------------
    def _fresh_after(self, now: float) -> float:
        return now - max(STALE_PERIODS * self.refresh_s, STALE_MIN_S)

    def _refused(self, key: BotKey | None, reason: str) -> None:
        self.metrics.refused(reason)
        if key is not None:
            self.metrics.key_refusals.labels(key=key.name, reason=reason).inc()
