"""Where a new table goes among the workers of ``griffon serve --workers N``: the least-loaded one.

Each worker publishes its **load** in the workers' private folder (``load-INDEX.json``, written
atomically every ``PUBLISH_EVERY_S`` and whenever it starts or ends making or sending a table): the
tables it holds weighted by the CPU a table of their kind takes (:data:`WEIGHTS`, measured by
``python -m bench.bench_capacity``; a table whose frames lately took more of the event loop, as one at
the maxima, by that: `table_weight`), its lobbies (each a table to come), its bot rooms and the tables
it is making; beside it, the tables it has sent each sibling and not had answered (``sending``), so
that a table in flight counts once, at its destination, for every worker (`Placement.counted`). A weighted
count rather than the event loop's measured CPU share: it moves the moment a table opens (a table
costs nothing until its people draw, so a burst of new tables would all go where the CPU looks
low), and the other processes of the host do not move it. The loop's share of a core over the last
period is published beside it, for the operator and the capacity benchmark.

On ``POST /v1/play`` and ``POST /v1/rooms`` the worker that received the request reads its
siblings' files (no round trip) and picks the least-loaded worker, itself when its own load is
within half a table of the lowest (`Placement.choose`). Another worker gets the request forwarded
over its private Unix socket with the workers' secret and the client's address and ``Host``
(``service.workers.RelayedClient`` restores them there, so its per-client limits see the real client);
it creates the game with an id it holds and its answer goes back to the client unchanged. A sibling
that cannot be reached, answers 5xx, or whose file is stale (a dead worker) is skipped: the game is
made where the request landed. A forwarded request is never forwarded again.

Each worker also publishes what each client (a short hash of its address) holds there: its lobbies,
its solo games (and of those, the ones its player left), its bot rooms and the solo games made for it
in the last hour (`CLIENT_COUNTS`). A client's holdings are counted on every worker
(`Placement.elsewhere`) against ``rooms_per_client`` (`Placement.check_lobbies`),
``play_limits.games_per_client`` (the game manager, through the capacity), ``bot.rooms_per_client``
(`service.capacity`) and ``play_limits.games_per_client_hour`` (`Placement.check_created`), so that each limit
holds across the workers, not per worker (a burst of requests at once may pass one more per
sibling: a worker publishes what it made as soon as it is made). A client at its games' limit who
left one of them on a sibling has its new game made there, where it replaces the one they left.
A room's games (its start, « Rejouer ») are made on the worker that holds the room, where the room
was placed; bot rooms live where their socket lands (relaying a bot's every frame would cost more
than it spreads), and count in the load.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import os
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
from starlette.requests import Request
from starlette.responses import Response

from service.errors import RateLimited
from service.tables import Table, Tables
from service.workers import CLIENT_HEADER, HOST_HEADER, RELAY_HEADER, RELAYED, Workers

log = logging.getLogger("griffon.service")
T = TypeVar("T")

# CPU a table takes, ms a second, with a person drawing (docs/BENCHMARKS.md, bench.bench_capacity):
# a Pictomania table with 5 AI players, a Kontour table with 3, a bot room streaming drawings.
WEIGHTS = {"pictomania": 18.0, "kontour": 10.0, "bot": 7.5}
PUBLISH_EVERY_S = 0.5
PUBLISH_SOON_S = 0.05  # a new bot room is published at once, or at least this long after the last write
SMALL_PUBLISH = 1_000  # clients (of every kind) in the last file below which a change is published at once
STALE_S = 5.0  # a file older than this is a worker that stopped publishing: never chosen
FORWARD_TIMEOUT = httpx.Timeout(15.0, connect=1.0)
MAX_PUBLISHED_CLIENTS = 10_000  # clients whose holdings of each kind one worker publishes, at most
# What a worker publishes of each client: its lobbies, its solo games, those of them its player left
# (a new game of theirs replaces one), its bot rooms, the solo games made for it in the last hour.
CLIENT_COUNTS = ("lobbies", "games", "left", "bots", "created")
CREATED_WINDOW_S = 3600.0  # play_limits.games_per_client_hour counts the solo games made over this window
Counts = dict[str, Counter[str]]
FORWARDED_HEADERS = ("content-type", "origin", "user-agent", "accept", "accept-language")
ANSWER_HEADERS = ("content-type", "retry-after", "x-griffon-game")


class Placement:
    """One worker's view of the workers' loads: it publishes its own, reads its siblings', picks
    where a new table goes and forwards the request there."""

    def __init__(
        self, workers: Workers, load: Callable[[], float], clock: Callable[[], float] = time.time,
        clients: Callable[[], Counts] = dict, placing: bool = True,
    ) -> None:
        """``load()``: this worker's weighted load now (`weighted_load`); ``clients()``: what each
        client holds here, by kind (`CLIENT_COUNTS`; a kind missing: none); ``placing``: false,
        every table is made where its request landed (the loads and holdings are still published)."""
        self.workers, self.load, self.clock, self.holdings = workers, load, clock, clients
        self.placing = placing
        self.created: dict[str, deque[float]] = {}  # client -> when its solo games were made here
        self.records: dict[int, tuple[bytes, dict[str, Any]]] = {}  # sibling -> its file, parsed
        self.published_at, self.publish_cost, self.published_clients = -PUBLISH_SOON_S, 0.0, 0
        self.deferred: asyncio.TimerHandle | None = None  # a publish_soon put off
        self.pending: dict[int, float] = {}  # worker -> weight of the tables being made there now
        self.clients: dict[int, httpx.AsyncClient] = {}
        self.publisher: asyncio.Task[None] | None = None
        self.loop_share = 0.0
        self._window = (time.monotonic(), time.thread_time())

    def load_path(self, index: int) -> Path:
        """The file where worker ``index`` publishes its load."""
        return self.workers.folder / f"load-{index}.json"

    # -- publishing -----------------------------------------------------------------------------------
    def start(self) -> None:
        """Publish now, then every ``PUBLISH_EVERY_S`` (on the event loop: `thread_time` is its CPU)."""
        self.publish()
        self.publisher = asyncio.create_task(self._publish_forever(), name="placement")

    async def _publish_forever(self) -> None:
        while True:
            await asyncio.sleep(PUBLISH_EVERY_S)
            wall, cpu = time.monotonic(), time.thread_time()
            started, spent = self._window
            self.loop_share = (cpu - spent) / max(1e-6, wall - started)
            self._window = (wall, cpu)
            self.publish()

    def publish(self) -> None:
        """Write this worker's load (atomically: a sibling never reads half a file)."""
        started = time.monotonic()
        path = self.load_path(self.workers.index)
        here = self.clients_here()
        clients = {what: {client_hash(c): n for c, n in here.get(what, Counter()).most_common(
            MAX_PUBLISHED_CLIENTS)} for what in CLIENT_COUNTS}
        record = {"load": round(self.own_load(), 3), "loop_share": round(self.loop_share, 3),
                  "sending": {str(index): weight for index, weight in self.sending().items()},
                  "clients": clients, "at": self.clock(), "pid": os.getpid()}
        temporary = path.with_suffix(".tmp")
        try:
            temporary.write_text(json.dumps(record))
            os.replace(temporary, path)
        except OSError as error:  # the folder went (shutdown): the siblings see a stale file
            log.debug("worker %d: load not published: %s", self.workers.index, error)
        self.published_at = time.monotonic()
        self.publish_cost = self.published_at - started
        self.published_clients = sum(len(counts) for counts in clients.values())

    def publish_soon(self) -> None:
        """Publish a change (a new bot room) now when the file is small (few clients), else at most
        once every ``PUBLISH_SOON_S`` or ten times what the last write took: a flood of new bot rooms
        from many addresses does not write a large file at each one (the siblings then see them that
        much later)."""
        spacing = max(PUBLISH_SOON_S, 10 * self.publish_cost)
        if self.published_clients < SMALL_PUBLISH or time.monotonic() - self.published_at >= spacing:
            self.publish()
        elif self.deferred is None:
            def publish() -> None:
                self.deferred = None
                self.publish()

            wait = self.published_at + spacing - time.monotonic()
            self.deferred = asyncio.get_running_loop().call_later(max(0.0, wait), publish)

    async def aclose(self) -> None:
        """Stop publishing, take this worker's file away, close the connections to the siblings."""
        if self.deferred is not None:
            self.deferred.cancel()
        if self.publisher is not None:
            self.publisher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.publisher
        self.load_path(self.workers.index).unlink(missing_ok=True)
        for client in self.clients.values():
            await client.aclose()
        self.clients.clear()

    # -- choosing -------------------------------------------------------------------------------------
    def read(self, index: int) -> dict[str, Any] | None:
        """Worker ``index``'s published record (``load``, ``sending``, ``clients``); None when
        missing, unreadable or stale. A file is parsed again only when its bytes changed (each
        request that counts a client reads every sibling's, of up to ``MAX_PUBLISHED_CLIENTS``
        clients a kind)."""
        path = self.load_path(index)
        try:
            data = path.read_bytes()
            cached = self.records.get(index)
            if cached is not None and cached[0] == data:
                record = cached[1]
            else:
                record = json.loads(data)
                record["at"] = float(record["at"])
                record["load"] = float(record["load"])
                record["sending"] = {int(k): float(v) for k, v in record.get("sending", {}).items()}
                self.records[index] = (data, record)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self.records.pop(index, None)
            return None
        return record if self.clock() - record["at"] <= STALE_S else None

    def sending(self) -> dict[int, float]:
        """The tables this worker has sent each sibling and not had answered yet (their weight)."""
        return {index: weight for index, weight in self.pending.items() if index != self.workers.index}

    def own_load(self) -> float:
        """This worker's load now, with the tables it is making after choosing itself."""
        return self.load() + self.pending.get(self.workers.index, 0.0)

    def loads(self) -> dict[int, float]:
        """Every reachable worker's load: this one's as it is now, the siblings' as published, plus
        the tables any worker (this one included) has sent it and not had answered yet."""
        own = self.workers.index
        records = {i: r for i in range(self.workers.count) if i != own and (r := self.read(i)) is not None}
        found = {own: self.own_load(), **{i: r["load"] for i, r in records.items()}}
        for sent in (self.sending(), *(r["sending"] for r in records.values())):
            for index, weight in sent.items():
                if index in found:
                    found[index] += weight
        return found

    def clients_here(self) -> Counts:
        """What each client holds on this worker (and the solo games made for it in the last hour)."""
        return {**self.holdings(), "created": self.created_counts()}

    def created_counts(self) -> Counter[str]:
        """The solo games made here for each client in the last ``CREATED_WINDOW_S`` (the older ones
        forgotten)."""
        since = self.clock() - CREATED_WINDOW_S
        for client in list(self.created):
            times = self.created[client]
            while times and times[0] < since:
                times.popleft()
            if not times:
                del self.created[client]
        return Counter({client: len(times) for client, times in self.created.items()})

    def made(self, client: str, limit: int) -> None:
        """A solo game was made here for ``client`` (at most ``limit`` kept per client, and
        ``MAX_PUBLISHED_CLIENTS`` clients: the one heard of longest ago is forgotten first)."""
        times = self.created.pop(client, None) or deque(maxlen=max(1, limit))
        times.append(self.clock())
        self.created[client] = times  # the most recent last
        while len(self.created) > MAX_PUBLISHED_CLIENTS:
            del self.created[next(iter(self.created))]
        self.publish()

    def check_created(self, client: str, limit: int) -> None:
        """Raise `RateLimited` when ``limit`` solo games were made for ``client`` in the last hour, on
        this worker and its siblings together (as published)."""
        made = self.held(client, "created")
        if made >= limit:
            wait = CREATED_WINDOW_S / limit  # about when one of them leaves the window
            raise RateLimited(f"at most {limit} new games per hour; retry in {wait:.0f} s", retry_after=wait)

    def siblings(self) -> Iterator[dict[str, Any]]:
        """The siblings' fresh records."""
        for index in range(self.workers.count):
            if index != self.workers.index and (record := self.read(index)) is not None:
                yield record

    def elsewhere(self, client: str, what: str) -> int:
        """What ``client`` holds of ``what`` (`CLIENT_COUNTS`) on the sibling workers, as published."""
        wanted = client_hash(client)
        return sum(_count(record, what, wanted) for record in self.siblings())

    def held(self, client: str, what: str) -> int:
        """What ``client`` holds of ``what`` on every worker: here now, at the siblings as published."""
        return self.clients_here().get(what, Counter())[client] + self.elsewhere(client, what)

    def check_lobbies(self, client: str, limit: int) -> None:
        """Raise `RateLimited` (``too_many_rooms``) when ``client`` holds ``limit`` lobbies already,
        on this worker and its siblings together (as published)."""
        mine = self.held(client, "lobbies")
        if mine >= limit:
            raise RateLimited(f"you already have {mine} rooms open (at most {limit})", code="too_many_rooms",
                              retry_after=60)

    def replacing(self, client: str, limit: int) -> int | None:
        """The sibling where ``client``'s new game goes to replace one they left there: when they hold
        ``limit`` games already, and left none on this worker but did on that sibling; else None."""
        if self.held(client, "games") < limit or self.clients_here().get("left", Counter())[client]:
            return None
        wanted = client_hash(client)
        for index in range(self.workers.count):
            if index != self.workers.index and (record := self.read(index)) is not None \
                    and _count(record, "left", wanted) > 0:
                return index
        return None

    def choose(self, kind: str) -> int:
        """The worker a new ``kind`` table goes to: the least-loaded, this one when within half a
        table of it."""
        loads = self.loads()
        own = self.workers.index
        best = min(loads, key=lambda index: (loads[index], index != own))
        return own if loads[own] - loads[best] <= WEIGHTS[kind] / 2 else best

    @contextlib.contextmanager
    def counted(self, target: int, kind: str) -> Iterator[None]:
        """Count a ``kind`` table this worker chose to make on worker ``target`` (itself or a
        sibling it forwards the request to) while it is being made, published at once: the requests
        that come meanwhile, here or at a sibling, see it. A sibling that makes a forwarded table
        does not count it: its sender does, until the answer (then it is in the sibling's load)."""
        self.pending[target] = self.pending.get(target, 0.0) + WEIGHTS[kind]
        self.publish()
        try:
            yield
        finally:
            self.pending[target] -= WEIGHTS[kind]
            if self.pending[target] <= 1e-9:
                del self.pending[target]
            self.publish()

    # -- forwarding -----------------------------------------------------------------------------------
    async def place(
        self, request: Request, kind: str, client: str, make: Callable[[], Awaitable[T]],
        games_limit: int | None = None,
    ) -> T | Response:
        """A new ``kind`` table asked by ``request``: forwarded to the worker `choose` picks (its
        answer), else made here by ``make()``; a solo game (``games_limit``: the client's bound) goes
        where it replaces one its player left (`replacing`). The load is published before the answer
        goes, so the next request sees the table. A request a sibling forwarded is made here."""
        own = self.workers.index
        if is_forwarded(request) or not self.placing:
            made = await make()
            self.publish()
            return made
        home = self.replacing(client, games_limit) if games_limit is not None else None
        target = home if home is not None else self.choose(kind)
        if target != own:
            with self.counted(target, kind):
                answer = await self.forward(request, target, await request.body(), client)
            if answer is not None:
                return answer
        with self.counted(own, kind):  # chosen, or the chosen sibling failed
            return await make()

    def _client(self, index: int) -> httpx.AsyncClient:
        if index not in self.clients:
            # A connection per request (a Unix socket's costs microseconds): one kept open would
            # outlive a sibling restarted on a new socket, or one taken away.
            transport = httpx.AsyncHTTPTransport(uds=str(self.workers.socket_path(index)),
                                                 limits=httpx.Limits(max_keepalive_connections=0))
            self.clients[index] = httpx.AsyncClient(transport=transport, timeout=FORWARD_TIMEOUT)
        return self.clients[index]

    async def forward(self, request: Request, target: int, body: bytes, client: str) -> Response | None:
        """``request`` (its ``body``) made on worker ``target`` as a sibling's: its answer, or None
        when the worker cannot be reached or failed (5xx): the caller then makes the table itself."""
        headers = {name: value for name, value in request.headers.items() if name in FORWARDED_HEADERS}
        headers |= {RELAY_HEADER: self.workers.secret, CLIENT_HEADER: client}
        if "host" in request.headers:
            headers[HOST_HEADER] = request.headers["host"]
        url = f"http://worker{request.url.path}"
        try:
            answer = await self._client(target).post(url, content=body, headers=headers)
        except httpx.HTTPError as error:
            log.warning("worker %d cannot be reached (%s): the new table is made here", target,
                        type(error).__name__)
            return None
        if answer.status_code >= 500:  # failed, full, or its database is down: this one may do better
            log.info("worker %d answered %d: the new table is made here", target, answer.status_code)
            return None
        kept = {name: answer.headers[name] for name in ANSWER_HEADERS if name in answer.headers}
        return Response(answer.content, status_code=answer.status_code, headers=kept)


@functools.lru_cache(maxsize=4 * MAX_PUBLISHED_CLIENTS)
def client_hash(client: str) -> str:
    """What a worker publishes of a client's address (in a folder only the server's user reads)."""
    return hashlib.blake2b(client.encode(), digest_size=8).hexdigest()


def _count(record: dict[str, Any], what: str, wanted: str) -> int:
    """What a published ``record`` says the client hashed ``wanted`` holds of ``what`` (0 when
    unreadable)."""
    try:
        return max(0, int(record.get("clients", {}).get(what, {}).get(wanted, 0)))
    except (AttributeError, TypeError, ValueError):
        return 0


def is_forwarded(request: Request) -> bool:
    """Whether a sibling forwarded this request (then it is made here, never sent on)."""
    return bool(request.scope.get(RELAYED))


def table_weight(session: Table) -> float:
    """What a table still played weighs: its kind's `WEIGHTS`, or more when its frames and AI players
    lately took more of the event loop than that (a table at the maxima weighs up to its share of the
    loop, over ten tables' worth: new tables go elsewhere)."""
    return max(WEIGHTS.get(session.kind, 0.0), 1000.0 * session.loop_used.rate())


def weighted_load(games: Tables, bots_live: int) -> float:
    """The load of one worker: its tables still played (a finished one waits for its people at
    no cost), its lobbies (tables to come) and its bot rooms, each weighted by `WEIGHTS` (a table
    by `table_weight`)."""
    tables = sum(table_weight(session) for session in games.games.values()
                 if getattr(session.state, "phase", "") != "game_over")
    lobbies = sum(WEIGHTS.get(room.game, 0.0) for room in games.rooms.lobbies.values())
    return tables + lobbies + WEIGHTS["bot"] * bots_live
