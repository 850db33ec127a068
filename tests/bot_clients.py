"""The two bot clients behind one synchronous interface, for the conformance suite
(tests/test_bot_conformance.py): the JavaScript client (clients/js/griffon-bot.js) driven through
Node by clients/js/tools/drive.mjs, and the Python room client.

Operations are the contract's (docs/BOT_PROTOCOL.md) in snake_case: ``start_round``, ``stroke``,
``stroke_start``, ``points``, ``stroke_end``, ``undo``, ``clear``, ``player_guess``, ``verdict``,
``end_round``, ``ping``, ``raw``, ``drop``, ``close``; version 2: ``erase``, ``fill``, ``draw_turn``,
``draw_stop``. What the clients send back is one ordered log of events (``welcome``, ``round_ready``,
``guess``, ``analysis``, ``round_over``, ``error``, ``resumed``, ``reconnecting``, ``close``, and the
drawing turn's ``draw_start``, ``draw_points``, ``draw_stroke_end``, ``draw_done``, ``draw_declined``)
and replies; a refused operation raises `ClientError`.

`PythonClient` adapts the Python client class of ``examples/room_client.py`` when it has one
(`PY_CLIENT_NAMES`); until then it drives `StandInClient`, a minimal client kept here (no
automatic resume: `PythonClient.resumes` is False and the resume scenarios skip it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import websockets

from griffon.launch import patient

ROOT = Path(__file__).resolve().parent.parent
DRIVER = ROOT / "clients" / "js" / "tools" / "drive.mjs"
PY_CLIENT_NAMES = ("RoomClient", "BotClient", "GriffonBot")  # the class examples/room_client.py may export
Event = dict[str, Any]


class ClientError(Exception):
    """An operation the client or the bot refused: ``code`` as in the error frames."""

    def __init__(self, code: str, message: str = "", close_code: int | None = None,
                 local: bool = False) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.close_code, self.local = code, message, close_code, local


class BotClient:
    """What a scenario drives; `log` holds every event and reply in the order they came."""

    name = "?"
    resumes = True  # reconnects by itself after a dropped socket

    def __init__(self) -> None:
        self.log: list[Event] = []
        self.cursor = 0
        self.changed = threading.Condition()

    def record(self, entry: Event) -> None:
        with self.changed:
            self.log.append(entry)
            self.changed.notify_all()

    def wait(self, match: Callable[[Event], bool], timeout: float, what: str) -> Event:
        """The first entry of the log after the cursor that ``match``es (the cursor moves past it)."""
        deadline = time.monotonic() + patient(timeout)
        with self.changed:
            while True:
                for i in range(self.cursor, len(self.log)):
                    if match(self.log[i]):
                        self.cursor = i + 1
                        return self.log[i]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{self.name}: no {what} within {timeout} s; log: {self.log[-8:]}")
                self.changed.wait(left)

    def event(self, kind: str, timeout: float = 10.0, **fields: Any) -> dict[str, Any]:
        """The next event ``kind`` whose data has ``fields``."""
        def match(entry: Event) -> bool:
            data = entry.get("data") or {}
            return entry.get("event") == kind and all(data.get(k) == v for k, v in fields.items())

        return self.wait(match, timeout, f"{kind} event {fields or ''}")["data"]

    def position(self, match: Callable[[Event], bool]) -> int:
        """The index in the log of the first entry that ``match``es, or -1."""
        return next((i for i, entry in enumerate(self.log) if match(entry)), -1)

    # the operations, each implemented by a client
    def connect(self, url: str, **options: Any) -> dict[str, Any]: raise NotImplementedError
    def op(self, name: str, *args: Any, **fields: Any) -> Any: raise NotImplementedError
    def stop(self) -> None: raise NotImplementedError


# -- JavaScript ----------------------------------------------------------------------------------
def node_command() -> list[str] | None:
    """How to run the driver: Node 22+ has a WebSocket global; Node 20 needs a flag."""
    node = shutil.which("node")
    if node is None:
        return None
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    major = int(version.lstrip("v").split(".")[0] or 0)
    if major < 20:
        return None
    return [node, *([] if major >= 22 else ["--experimental-websocket"]), str(DRIVER)]


JS_OPS = {"start_round": "startRound", "stroke_start": "strokeStart", "stroke_end": "strokeEnd",
          "player_guess": "playerGuess", "end_round": "endRound", "draw_turn": "drawTurn",
          "draw_stop": "drawStop"}
JS_FIELDS = {"duration_s": "durationS", "drawing_consent": "drawingConsent", "reaction_s": "reactionS",
             "hold_s": "holdS"}
JS_EVENTS = {"roundReady": "round_ready", "roundOver": "round_over", "drawStart": "draw_start",
             "drawPoints": "draw_points", "drawStrokeEnd": "draw_stroke_end", "drawDone": "draw_done",
             "drawDeclined": "draw_declined"}


class JsClient(BotClient):
    """clients/js/griffon-bot.js in a Node process (tools/drive.mjs: JSON lines in and out)."""

    name = "js"

    def __init__(self) -> None:
        super().__init__()
        command = node_command()
        if command is None:
            raise RuntimeError("no Node >= 20 on PATH")
        self.process = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, bufsize=1)
        self.number = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            entry = json.loads(line)
            if "event" in entry:
                entry["event"] = JS_EVENTS.get(entry["event"], entry["event"])
            self.record(entry)

    def _call(self, op: str, args: list[Any], timeout: float = 15.0) -> Any:
        self.number += 1
        number = self.number
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"n": number, "op": op, "args": args}) + "\n")
        self.process.stdin.flush()
        deadline = time.monotonic() + patient(timeout)
        with self.changed:
            while True:
                reply = next((e for e in self.log if e.get("n") == number and "reply" in e), None)
                if reply is not None:
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"js: no reply to {op} within {timeout} s")
                self.changed.wait(0.2)
        if not reply["ok"]:
            error = reply["error"]
            raise ClientError(error["code"], error.get("message", ""), error.get("closeCode"),
                              error.get("local", False))
        return reply["value"]

    def connect(self, url: str, **options: Any) -> dict[str, Any]:
        return self._call("connect", [url, options], timeout=30)

    def op(self, name: str, *args: Any, **fields: Any) -> Any:
        if fields:
            args = (*args, {JS_FIELDS.get(k, k): v for k, v in fields.items()})
        if name == "start_round":
            args = ({JS_FIELDS.get(k, k): v for k, v in fields.items()},)
        return self._call(JS_OPS.get(name, name), list(args))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()  # type: ignore[union-attr]
            try:
                self.process.wait(patient(5))
            except subprocess.TimeoutExpired:
                self.process.kill()


# -- Python --------------------------------------------------------------------------------------
class StandInClient:
    """A minimal asyncio room client with the contract's snake_case operations (no resume), used
    while examples/room_client.py exports no client class."""

    def __init__(self, on_event: Callable[[str, Any], None]) -> None:
        self.on_event = on_event
        self.ws: Any = None
        self.welcome: dict[str, Any] = {}
        self.reader: asyncio.Task | None = None
        self.waiting: dict[str, tuple[str, asyncio.Future]] = {}  # frame id -> (reply type, its future)
        self.requests = 0

    async def connect(self, url: str, key: str | None = None, room: str | None = None,
                      name: str | None = None, y: str | None = None, analysis: bool = False) -> dict:
        self.ws = await websockets.connect(url, open_timeout=patient(10))
        hello = {"type": "hello", "versions": [2, 1], "room": room, "name": name, "key": key, "y": y}
        await self.ws.send(json.dumps({k: v for k, v in hello.items() if v is not None}
                                      | ({"analysis": True} if analysis else {})))
        while True:
            try:
                frame = json.loads(await self.ws.recv())
            except websockets.ConnectionClosed as closed:
                raise ClientError("connect_failed", "closed before welcome", closed.code) from None
            if frame["type"] == "welcome":
                break
            if frame["type"] == "error" and frame["code"] != "resume_failed":
                with contextlib.suppress(TimeoutError):  # the server closes with its code
                    await asyncio.wait_for(self.ws.wait_closed(), 1.0)
                await self.ws.close()
                raise ClientError(frame["code"], frame.get("message", ""), self.ws.close_code)
        self.welcome = frame
        self.on_event("welcome", frame)
        self.reader = asyncio.create_task(self._read())
        return frame

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                frame = json.loads(raw)
                kind = frame["type"]
                replaced = kind == "round_over" and frame.get("why") == "replaced"
                if kind == "error" and frame.get("ref") in self.waiting:
                    refused = ClientError(frame["code"], frame["message"])
                    self.waiting.pop(frame["ref"])[1].set_exception(refused)
                elif kind in ("round_ready", "pong", "round_over") and not replaced:
                    ref = next((r for r, (until, _) in self.waiting.items() if until == kind), None)
                    if ref is not None:
                        self.waiting.pop(ref)[1].set_result(frame)
                if kind != "pong":
                    self.on_event(kind, frame)
        except websockets.ConnectionClosed:
            pass
        self.on_event("close", {"code": self.ws.close_code or 1006, "reason": self.ws.close_reason or ""})

    async def _request(self, frame: dict, until: str) -> dict:
        self.requests += 1
        ref = f"py{self.requests}"
        future = asyncio.get_running_loop().create_future()
        self.waiting[ref] = (until, future)
        await self.send(frame | {"id": ref})
        return await future

    async def send(self, frame: dict | str) -> None:
        await self.ws.send(frame if isinstance(frame, str) else json.dumps(frame))

    async def start_round(self, **fields: Any) -> dict:
        if self.welcome.get("version", 1) < 2:
            fields.pop("pace", None)
        return await self._request({"type": "round_start"} | fields, "round_ready")

    async def stroke(self, xs: list, ys: list, ts: list | None = None) -> None:
        limit = self.welcome["limits"]["max_stroke_points"]
        if len(xs) > limit:
            raise ClientError("too_many_points", f"a stroke holds at most {limit} points", local=True)
        await self.send({"type": "stroke", "stroke": [xs, ys] + ([ts] if ts else [])})

    async def stroke_start(self, x: float, y: float) -> None:
        await self.send({"type": "stroke_start", "x": x, "y": y})

    async def points(self, xs: list, ys: list) -> None:
        await self.send({"type": "points", "x": xs, "y": ys})

    async def stroke_end(self) -> None:
        await self.send({"type": "stroke_end"})

    async def undo(self) -> None:
        await self.send({"type": "undo"})

    async def clear(self) -> None:
        await self.send({"type": "clear"})

    async def player_guess(self, text: str, correct: bool = False) -> None:
        await self.send({"type": "player_guess", "text": text, "correct": correct})

    async def verdict(self, guess_id: int, correct: bool = False, gesture: str | None = None) -> None:
        await self.send({"type": "verdict", "guess_id": guess_id, "correct": correct}
                        | ({"gesture": gesture} if gesture else {}))

    async def end_round(self, answer: str | None = None) -> dict:
        frame = {"type": "round_end"} | ({"answer": answer} if answer else {})
        return await self._request(frame, "round_over")

    async def ping(self) -> dict:
        return await self._request({"type": "ping"}, "pong")

    async def raw(self, frame: dict | str) -> None:
        await self.send(frame)

    async def drop(self) -> None:
        self.ws.transport.abort()

    async def close(self) -> dict:
        await self.send({"type": "bye"})
        await self.ws.wait_closed()
        if self.reader is not None:
            await self.reader
        return {"code": self.ws.close_code}


def python_client_class() -> Any:
    """examples/room_client.py's client class, when it has one; else `StandInClient`."""
    from examples import room_client

    return next((getattr(room_client, n) for n in PY_CLIENT_NAMES if hasattr(room_client, n)), StandInClient)


class PythonClient(BotClient):
    """The Python client on its own event loop thread, called synchronously.

    Two shapes are adapted: `StandInClient` (``StandInClient(on_event)``, ``connect(url, **options)``)
    and the example's class (``Client(url, **options)``, ``connect()``, ``on("*", callback)`` with the
    frames, ``start_round(round, candidates, **fields)``, a ``welcome`` frame again after a resume)."""

    name = "python"

    def __init__(self) -> None:
        super().__init__()
        self.cls = python_client_class()
        self.stand_in = self.cls is StandInClient
        self.resumes = not self.stand_in
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.client: Any = None
        self.greeted = False

    def _event(self, kind: str, data: Any) -> None:
        self.record({"event": kind, "data": data})

    def _frame(self, frame: dict[str, Any]) -> None:
        """A frame of the example's class: an event; a welcome after the first is a resume."""
        kind = frame.get("type")
        self._event(kind, frame)
        if kind == "welcome" and self.greeted:
            self._event("resumed", {"resumed": bool(frame.get("resumed")), "round": frame.get("round"),
                                    "welcome": frame})
        self.greeted = self.greeted or kind == "welcome"

    def _run(self, name: str, coroutine: Any, timeout: float = 15.0) -> Any:
        try:
            value = asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(patient(timeout))
        except ClientError:
            raise
        except Exception as error:  # a refusal of another client class: its code if it has one
            code = getattr(error, "code", None)
            if code is None:
                raise
            ws = getattr(self.client, "ws", None)
            close_code = getattr(error, "close_code", None) or getattr(ws, "close_code", None)
            raise ClientError(code, str(getattr(error, "message", error)), close_code) from error
        self.record({"reply": name, "ok": True, "value": value})
        return value

    def connect(self, url: str, **options: Any) -> dict[str, Any]:
        async def create() -> Any:
            if self.stand_in:
                return self.cls(self._event)
            client = self.cls(url, **options)
            client.on("*", self._frame)
            return client

        self.client = self._run("create", create())
        if self.stand_in:
            return self._run("connect", self.client.connect(url, **options), timeout=30)
        welcome = self._run("connect", self.client.connect(), timeout=30)
        if not self.greeted:  # the class dispatches no frame for its first welcome
            self._frame(welcome)
        return welcome

    def op(self, name: str, *args: Any, **fields: Any) -> Any:
        if self.stand_in:
            return self._run(name, getattr(self.client, name)(*args, **fields))
        if name == "start_round":
            fields = dict(fields)
            return self._run(name, self.client.start_round(fields.pop("round"), **fields))
        special = {"raw": self._raw, "ping": self._ping, "drop": self._drop, "close": self._close}
        if name in special:
            return self._run(name, special[name](*args))
        return self._run(name, getattr(self.client, name)(*args, **fields))

    async def _raw(self, frame: dict | str) -> None:
        await self.client.ws.send(frame if isinstance(frame, str) else json.dumps(frame))

    async def _ping(self) -> dict:
        """Send a ping; its pong (the class has no ping of its own)."""
        seen = len(self.log)
        await self.client.send({"type": "ping"})
        while True:
            pong = next((e["data"] for e in self.log[seen:] if e.get("event") == "pong"), None)
            if pong is not None:
                return pong
            await asyncio.sleep(0.02)

    async def _drop(self) -> None:
        self.client.ws.transport.abort()

    async def _close(self) -> dict:
        await self.client.close()
        closed = {"code": self.client.ws.close_code, "reason": self.client.ws.close_reason or ""}
        self._event("close", closed)
        return closed

    def stop(self) -> None:
        async def shut() -> None:
            ws = getattr(self.client, "ws", None)
            if ws is not None:
                await ws.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(shut(), self.loop).result(patient(5))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(patient(5))

CLIENTS: dict[str, Callable[[], BotClient]] = {"js": JsClient, "python": PythonClient}
