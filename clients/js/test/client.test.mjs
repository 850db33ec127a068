// Unit tests of griffon-bot.js against a scripted in-memory server (no network): version
// negotiation, the y direction, resume and replay after a dropped socket, back-off, refusals and
// the client-side checks. Run: `node --test clients/js/test/` (Node >= 20).
import assert from "node:assert/strict";
import { test } from "node:test";
import { GriffonBot, GriffonBotError, connect } from "../griffon-bot.js";

const LIMITS = { max_points: 50, max_stroke_points: 10, max_strokes: 5, max_frame_bytes: 4096 };

/** A scripted bot server; `handle(frame, socket)` answers each frame the client sends. */
class FakeServer {
  constructor(handle, { version = 2 } = {}) {
    this.handle = handle ?? ((frame, socket) => this.standard(frame, socket));
    this.version = version;
    this.sockets = [];
    this.refuseConnections = 0; // connections that fail before opening
    this.session = "s1";
    const server = this;
    this.WebSocket = class {
      constructor(url) {
        this.url = url;
        this.sent = [];
        this.closed = false;
        server.sockets.push(this);
        setTimeout(() => {
          if (server.refuseConnections > 0) {
            server.refuseConnections -= 1;
            this.closeFromServer(1006);
          } else {
            this.onopen?.({});
          }
        }, 1);
      }
      send(text) {
        if (this.closed) return;
        const frame = JSON.parse(text);
        this.sent.push(frame);
        setTimeout(() => server.handle(frame, this), 0);
      }
      reply(frame) {
        if (!this.closed) this.onmessage?.({ data: JSON.stringify(frame) });
      }
      close(code = 1000, reason = "") {
        this.closeFromServer(code, reason);
      }
      closeFromServer(code, reason = "") {
        if (this.closed) return;
        this.closed = true;
        setTimeout(() => this.onclose?.({ code, reason }), 1);
      }
    };
  }

  welcome(extra = {}) {
    const v2 = this.version >= 2 ? { resume_token: "tok", resumed: false, y: "down", paces: ["instant", "human"] } : {};
    return { type: "welcome", protocol: "griffon-bot", version: this.version, session: this.session,
      transcript: "/t", transcript_key: "k", levels: ["easy"], limits: LIMITS, ...v2, ...extra };
  }

  standard(frame, socket) {
    if (frame.type === "hello") {
      const extras = ["key", "y", "resume"].some((field) => field in frame);
      if (this.version < 2 && extras) {
        socket.reply({ type: "error", code: "invalid_frame", message: "hello: extra fields" });
      } else {
        socket.reply(this.welcome(this.onHello?.(frame) ?? {}));
      }
    } else if (frame.type === "round_start") {
      socket.reply({ type: "round_ready", round: frame.round, difficulty: "normal", candidates: null, seed: 1 });
    } else if (frame.type === "round_end") {
      socket.reply({ type: "round_over", round: 1, said: [], strokes: 0, why: "round_end" });
    } else if (frame.type === "ping") {
      socket.reply({ type: "pong", ref: frame.id });
    } else if (frame.type === "bye") {
      socket.reply({ type: "bye" });
      socket.closeFromServer(1000, "bye");
    }
  }

  get last() {
    return this.sockets[this.sockets.length - 1];
  }

  sentOf(type, socket = this.last) {
    return socket.sent.filter((frame) => frame.type === type);
  }
}

const until = (bot, type) => new Promise((resolve) => bot.once(type, resolve));
const settle = () => new Promise((resolve) => setTimeout(resolve, 20));
const FAST = { retryDelayMs: 5, maxRetryDelayMs: 20 };

test("a v2 server: hello carries the v2 fields, pace is sent", async () => {
  const server = new FakeServer();
  const bot = await connect("ws://x/v1/bot", { WebSocket: server.WebSocket, key: "k1", room: "r", y: "down" });
  const [hello] = server.sentOf("hello");
  assert.deepEqual(hello.versions, [2, 1]);
  assert.equal(hello.key, "k1");
  assert.equal(hello.y, "down");
  assert.equal(bot.version, 2);
  await bot.startRound({ round: 1, pace: "instant" });
  assert.equal(server.sentOf("round_start")[0].pace, "instant");
  await bot.close();
});

test("a v1 server: the client greets again in v1, drops pace and flips y itself for y up", async () => {
  const server = new FakeServer(null, { version: 1 });
  const errors = [];
  const bot = new GriffonBot("ws://x/v1/bot", { WebSocket: server.WebSocket, y: "up", key: "k" });
  bot.on("error", (error) => errors.push(error));
  await bot.open();
  const hellos = server.sentOf("hello");
  assert.equal(hellos.length, 2);
  assert.deepEqual(hellos[1], { type: "hello", versions: [1] });
  assert.equal(bot.version, 1);
  assert.deepEqual(errors, []); // the refused first hello is not the room's business
  await bot.startRound({ round: 1, pace: "instant" });
  assert.equal("pace" in server.sentOf("round_start")[0], false);
  bot.stroke([0, 10], [5, 20]);
  bot.strokeStart(1, 2);
  bot.points([3], [4]);
  assert.deepEqual(server.sentOf("stroke")[0].stroke, [[0, 10], [-5, -20]]);
  assert.equal(server.sentOf("stroke_start")[0].y, -2);
  assert.deepEqual(server.sentOf("points")[0].y, [-4]);
  await bot.close();
});

test("y up on a v2 server that says it flips: the client sends y as it is", async () => {
  const server = new FakeServer();
  server.onHello = (hello) => ({ y: hello.y });
  const bot = await connect("ws://x", { WebSocket: server.WebSocket, y: "up" });
  await bot.startRound({ round: 1 });
  bot.stroke([0, 1], [2, 3]);
  assert.deepEqual(server.sentOf("stroke")[0].stroke, [[0, 1], [2, 3]]);
  await bot.close();
});

test("every error frame is a typed error event; a refused startRound rejects", async () => {
  const server = new FakeServer((frame, socket) => {
    if (frame.type === "round_start") {
      socket.reply({ type: "error", code: "unknown_difficulty", message: "no level zz", ref: frame.id });
    } else {
      server.standard(frame, socket);
    }
  });
  const bot = await connect("ws://x", { WebSocket: server.WebSocket });
  const seen = [];
  bot.on("error", (error) => seen.push(error));
  await assert.rejects(bot.startRound({ round: 1, candidates: ["zz"] }),
    (error) => error instanceof GriffonBotError && error.code === "unknown_difficulty" && !error.local);
  server.last.reply({ type: "error", code: "rate_limited", message: "slow down" });
  assert.deepEqual(seen.map((error) => error.code), ["unknown_difficulty", "rate_limited"]);
  assert.equal(seen[0].ref, server.sentOf("round_start")[0].id);
  await bot.close();
});

test("the client refuses what the server would, before sending", async () => {
  const server = new FakeServer();
  const bot = await connect("ws://x", { WebSocket: server.WebSocket });
  const code = (fn) => { try { fn(); } catch (error) { return `${error.code}${error.local ? "" : "!"}`; } return "sent"; };
  assert.equal(code(() => bot.stroke([1], [1])), "no_round");
  await bot.startRound({ round: 1 });
  assert.equal(code(() => bot.stroke([1, 2], [1])), "invalid_frame");
  assert.equal(code(() => bot.stroke([1, NaN], [1, 2])), "invalid_frame");
  assert.equal(code(() => bot.stroke(Array(11).fill(1), Array(11).fill(1))), "too_many_points");
  assert.equal(code(() => bot.points([1], [1])), "no_stroke");
  assert.equal(code(() => bot.strokeStart(1, 1)), "sent");
  assert.equal(code(() => bot.strokeStart(1, 1)), "stroke_open");
  assert.equal(code(() => bot.points(Array(10).fill(1), Array(10).fill(1))), "too_many_points");
  bot.strokeEnd();
  for (let i = 0; i < 4; i += 1) bot.stroke(Array(10).fill(i), Array(10).fill(i));
  assert.equal(code(() => bot.stroke([1, 2], [1, 2])), "too_many_strokes"); // 5 strokes at most
  bot.undo();
  assert.equal(code(() => bot.stroke(Array(10).fill(1), Array(10).fill(1))), "sent");
  assert.equal(code(() => bot.stroke([1], [1])), "too_many_strokes");
  assert.equal(code(() => bot.verdict(0)), "invalid_frame");
  assert.equal(server.sentOf("stroke").length, 5);
  await bot.close();
});

test("a dropped socket resumes the v2 session and sends what the bot lacks", async () => {
  const server = new FakeServer();
  const bot = await connect("ws://x", { WebSocket: server.WebSocket, ...FAST });
  await bot.startRound({ round: "r1" });
  bot.stroke([1, 2], [1, 2]);
  bot.stroke([3, 4], [3, 4]);
  bot.strokeStart(5, 5);
  bot.points([6], [6]);
  server.onHello = (hello) => {
    assert.deepEqual(hello.resume, { session: "s1", token: "tok" });
    return { resumed: true, round: { round: "r1", strokes: 1, said: [], open_stroke: false } };
  };
  const first = server.last;
  const resumed = until(bot, "resumed");
  bot.drop();
  bot.points([7], [7]); // while the socket is down: queued
  const { resumed: same, round } = await resumed;
  assert.equal(same, true);
  assert.equal(round.strokes, 1);
  assert.notEqual(server.last, first);
  const after = server.last.sent.filter((frame) => frame.type !== "hello");
  assert.deepEqual(after, [
    { type: "stroke", stroke: [[3, 4], [3, 4]] }, // the stroke the server lacks
    { type: "stroke_start", x: 5, y: 5 }, // the open stroke, again
    { type: "points", x: [6], y: [6] },
    { type: "points", x: [7], y: [7] }, // what waited
  ]);
  await bot.close();
});

test("a failed resume (or a v1 server) gets the round sent again to the new session", async () => {
  const server = new FakeServer(null, { version: 1 });
  const bot = await connect("ws://x", { WebSocket: server.WebSocket, ...FAST });
  await bot.startRound({ round: 7, candidates: ["chat"] });
  bot.stroke([1, 2], [1, 2]);
  bot.stroke([3, 4], [3, 4]);
  bot.undo();
  server.session = "s2";
  const resumed = until(bot, "resumed");
  bot.drop();
  assert.equal((await resumed).resumed, false);
  const after = server.last.sent.filter((frame) => frame.type !== "hello");
  assert.equal(after[0].type, "round_start");
  assert.deepEqual(after[0].candidates, ["chat"]);
  assert.deepEqual(after.slice(1), [{ type: "stroke", stroke: [[1, 2], [1, 2]] }]);
  await bot.close();
});

test("reconnecting backs off and gives up after maxRetries", async () => {
  const server = new FakeServer();
  const bot = await connect("ws://x", { WebSocket: server.WebSocket, ...FAST, maxRetries: 3 });
  const delays = [];
  const errors = [];
  bot.on("reconnecting", ({ delayMs }) => delays.push(delayMs));
  bot.on("error", (error) => errors.push(error.code));
  server.refuseConnections = 10;
  const closed = until(bot, "close");
  bot.drop();
  await closed;
  assert.equal(delays.length, 3);
  assert.ok(delays.every((delay) => delay <= 20 * 1.2), delays);
  assert.deepEqual(errors, ["connect_failed"]);
  assert.equal(bot.state, "closed");
});

test("a refusal on connect rejects with its code and the close code; no reconnect", async () => {
  const server = new FakeServer((frame, socket) => {
    socket.reply({ type: "error", code: "key_required", message: "this server requires an API key" });
    socket.closeFromServer(4401, "key required");
  });
  await assert.rejects(connect("ws://x", { WebSocket: server.WebSocket }),
    (error) => error.code === "key_required" && error.closeCode === 4401);
  await settle();
  assert.equal(server.sockets.length, 1);
});

test("the server closing for good (idle, flooding, revoked key) ends the client", async () => {
  const server = new FakeServer();
  const bot = await connect("ws://x", { WebSocket: server.WebSocket, ...FAST });
  const closed = until(bot, "close");
  server.last.reply({ type: "error", code: "key_revoked", message: "revoked" });
  server.last.closeFromServer(4403, "key revoked");
  assert.equal((await closed).code, 4403);
  await settle();
  assert.equal(server.sockets.length, 1);
  assert.throws(() => bot.playerGuess("chat"), (error) => error.code === "not_connected");
});

test("erase cuts the room's own copy of the drawing as the server does, and is sent in v2", async () => {
  const server = new FakeServer();
  const bot = await connect("ws://x/v1/bot", { WebSocket: server.WebSocket });
  await bot.startRound({ round: 1, holdS: 4, reactionS: 0.5 });
  const start = server.sentOf("round_start")[0];
  assert.equal(start.hold_s, 4);
  assert.equal(start.reaction_s, 0.5);
  bot.stroke([0, 10, 20, 30], [0, 0, 0, 0]);
  bot.stroke([0, 0], [5, 9]);
  bot.erase({ region: { x: 9, y: -1, w: 2, h: 2 } }); // the point (10, 0): the first stroke cut in two
  assert.deepEqual(bot.round.strokes, [[[0], [0]], [[20, 30], [0, 0]], [[0, 0], [5, 9]]]);
  bot.erase({ stroke: 2 });
  assert.deepEqual(bot.round.strokes.length, 2);
  assert.deepEqual(server.sentOf("erase").map(({ id, ...f }) => f), [
    { type: "erase", region: { x: 9, y: -1, w: 2, h: 2 } }, { type: "erase", stroke: 2 }]);
  assert.throws(() => bot.erase({ stroke: 5 }), (error) => error.code === "no_stroke" && error.local);
  assert.throws(() => bot.erase({}), (error) => error.code === "invalid_frame");
  bot.fill({ x: 1, y: 1, color: "red" });
  assert.deepEqual(server.sentOf("fill")[0], { type: "fill", x: 1, y: 1, color: "red" });
  await bot.close();
});

test("drawTurn resolves with draw_start or draw_declined, and the drawing comes as events", async () => {
  const server = new FakeServer((frame, socket) => {
    if (frame.type === "draw_turn" && frame.word === "xyzzy") {
      socket.reply({ type: "draw_declined", turn: frame.turn, word: frame.word, reason: "unknown_word", message: "no" });
    } else if (frame.type === "draw_turn") {
      socket.reply({ type: "draw_start", turn: frame.turn, word: frame.word, label: "cat", strokes: 1, width: 255,
        height: 255, duration_s: 1 });
      socket.reply({ type: "draw_points", turn: frame.turn, stroke: 0, x: [1, 2], y: [3, 4], t: [0, 50] });
      socket.reply({ type: "draw_stroke_end", turn: frame.turn, stroke: 0 });
      socket.reply({ type: "draw_done", turn: frame.turn, strokes: 1, stopped: false });
    } else {
      server.standard(frame, socket);
    }
  });
  const bot = await connect("ws://x/v1/bot", { WebSocket: server.WebSocket });
  const points = [];
  bot.on("drawPoints", (frame) => points.push(frame));
  const done = until(bot, "drawDone");
  const declined = await bot.drawTurn({ turn: "a", word: "xyzzy" });
  assert.equal(declined.type, "draw_declined");
  assert.equal(declined.reason, "unknown_word");
  const start = await bot.drawTurn({ turn: "b", word: "chat", width: 255 });
  assert.equal(start.type, "draw_start");
  assert.equal((await done).strokes, 1);
  assert.deepEqual(points.map((p) => p.x), [[1, 2]]);
  await bot.close();
});

test("the CommonJS build is griffon-bot.js as it is now, and require() loads it", async () => {
  const { execFileSync } = await import("node:child_process");
  const { createRequire } = await import("node:module");
  const { fileURLToPath } = await import("node:url");
  execFileSync(process.execPath, [fileURLToPath(new URL("../tools/build-cjs.mjs", import.meta.url)), "--check"]);
  const cjs = createRequire(import.meta.url)("../griffon-bot.cjs");
  const esm = await import("../griffon-bot.js");
  assert.deepEqual(Object.keys(cjs).sort(), Object.keys(esm).sort());
  assert.equal(typeof cjs.connect, "function");
});
