// A whole game in the room of room.mjs: Griffon seated through griffon-seat.mjs and a scripted
// person, "Ana", who draws real drawings segment by segment, as a mouse would. Prints what the
// room recorded (every turn, the guesses, the scores) and the seat's log as one JSON line.
//
//   node play.mjs game.json     (game.json: {"griffon": "ws://127.0.0.1:8000/v1/bot", "words": [...],
//                                 "turnS": 10, "turns": [{"drawer": "Ana", "word": "cat",
//                                 "drawing": [[[x...], [y...]], ...]}, {"drawer": "Griffon", "word": "plane"}]})
import { readFileSync } from "node:fs";
import { io } from "socket.io-client";
import { seatGriffon } from "./griffon-seat.mjs";
import { startRoom } from "./room.mjs";

const SEGMENT_MS = 12; // a mouse-move event every 12 ms while the pen is down
const PEN_UP_MS = 400; // between two strokes

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Ana: joins, and on her turn draws the turn's drawing (0-255 units) on the 800 × 600 canvas. */
async function person(roomUrl, turns) {
  const socket = io(roomUrl, { transports: ["websocket"] });
  socket.on("your_turn", async ({ turn }) => {
    const drawing = turns[turn - 1].drawing;
    const place = (v, axis) => (axis === 0 ? 100 + v * (600 / 255) : v * (600 / 255));
    for (const [xs, ys] of drawing) {
      for (let i = 1; i < xs.length; i += 1) {
        socket.emit("draw", { x1: place(xs[i - 1], 0), y1: place(ys[i - 1], 1), x2: place(xs[i], 0),
          y2: place(ys[i], 1), color: "#1d2433", size: 4 });
        await sleep(SEGMENT_MS);
      }
      await sleep(PEN_UP_MS);
    }
  });
  await new Promise((resolve) => socket.on("connect", resolve));
  socket.emit("join", { name: "Ana" });
  return socket;
}

const game = JSON.parse(readFileSync(process.argv[2], "utf8"));
const room = await startRoom({ words: game.words, turns: game.turns, turnS: game.turnS ?? 20 });
const url = `http://127.0.0.1:${room.port}`;
const seat = await seatGriffon({ roomUrl: url, griffonUrl: game.griffon, words: game.words });
const ana = await person(url, game.turns);
const record = await room.finished;
process.stdout.write(`${JSON.stringify({ record, seat: seat.log })}\n`);
ana.close();
await seat.close();
await room.close();
