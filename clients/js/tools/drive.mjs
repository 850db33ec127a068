// Drives griffon-bot.js from another process (the conformance tests): one JSON command a line on
// stdin, one JSON line on stdout per reply and per event.
//   in:  {"op": "connect", "args": ["ws://127.0.0.1:8000/v1/bot", {"room": "r"}]}
//        {"op": "startRound", "args": [{"round": 1, "candidates": ["chat"]}]}   (any GriffonBot method)
//   out: {"reply": "connect", "ok": true, "value": {...welcome...}}
//        {"reply": "stroke", "ok": false, "error": {"code": "too_many_points", "message": "...", "local": true}}
//        {"event": "guess", "data": {...}}
// Node 20 needs `node --experimental-websocket tools/drive.mjs`; Node >= 22 has a WebSocket global.
import { createInterface } from "node:readline";
import { GriffonBot } from "../griffon-bot.js";

const EVENTS = ["welcome", "roundReady", "guess", "analysis", "roundOver", "error", "close", "resumed",
  "reconnecting", "drawStart", "drawDeclined", "drawPoints", "drawStrokeEnd", "drawDone"];
const OPS = new Set(["startRound", "strokeStart", "points", "strokeEnd", "stroke", "undo", "clear",
  "playerGuess", "verdict", "endRound", "ping", "close", "drop", "raw", "erase", "fill", "drawTurn", "drawStop"]);
let bot = null;

const print = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);
const describe = (error) => ({ code: error?.code ?? "driver_error", message: String(error?.message ?? error),
  local: Boolean(error?.local), ref: error?.ref, closeCode: error?.closeCode });
const plain = (value) => (value instanceof Error ? describe(value) : value);

async function run(op, args) {
  if (op === "connect") {
    bot = new GriffonBot(args[0], args[1] ?? {});
    for (const type of EVENTS) bot.on(type, (data) => print({ event: type, data: plain(data) }));
    return bot.open();
  }
  if (op === "exit") process.exit(0);
  if (!OPS.has(op)) throw Object.assign(new Error(`unknown op ${op}`), { code: "driver_error" });
  if (!bot) throw Object.assign(new Error("connect first"), { code: "not_connected" });
  const value = await bot[op](...args);
  return value ?? null;
}

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  if (!line.trim()) return;
  let command;
  try {
    command = JSON.parse(line);
  } catch {
    print({ reply: null, ok: false, error: { code: "driver_error", message: "not JSON" } });
    return;
  }
  const { op, args = [], n } = command;
  Promise.resolve()
    .then(() => run(op, args))
    .then((value) => print({ reply: op, n, ok: true, value }), (error) => print({ reply: op, n, ok: false,
      error: describe(error) }));
});
lines.on("close", () => process.exit(0));
