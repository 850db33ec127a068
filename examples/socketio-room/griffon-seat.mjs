// Griffon seated in the Socket.IO room of room.mjs as one more player, through clients/js: the
// adapter a room's developer writes (docs/BOT_ROOMS.md). It joins the room as "Griffon", turns the
// room's segment events into strokes for the bot (pen-up by pause), passes the other players'
// guesses on, types the bot's guesses into the room's chat as they come (spelt as the room's word
// list spells them), and on Griffon's own turn streams the bot's drawing back as segments — or
// skips the turn at once when the bot cannot draw the word.
import { io } from "socket.io-client";
import { connect } from "../../clients/js/griffon-bot.js";

const WIDTH = 800;
const HEIGHT = 600;

/** Segments → strokes: a segment that starts where the last one ended continues the stroke; a
 * pause of `pauseMs` lifts the pen (the bot reads the drawing at each pen-up). */
export class SegmentPen {
  constructor(bot, { gapPx = 2, pauseMs = 250 } = {}) {
    Object.assign(this, { bot, gapPx, pauseMs, last: null, timer: null });
  }

  segment({ x1, y1, x2, y2 }) {
    const joined = this.last && Math.hypot(x1 - this.last[0], y1 - this.last[1]) <= this.gapPx;
    if (!joined) {
      this.lift();
      this.bot.strokeStart(x1, y1);
    }
    this.bot.points([x2], [y2]);
    this.last = [x2, y2];
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.lift(), this.pauseMs);
  }

  lift() {
    clearTimeout(this.timer);
    if (this.last) {
      this.last = null;
      this.bot.strokeEnd();
    }
  }
}

/** Seat Griffon in the room at `roomUrl`; `words`: the room's word list. Resolves once seated. */
export async function seatGriffon({ roomUrl, griffonUrl, words, language = "en", name = "Griffon",
  pace = { pace: "instant", reactionS: 0.5 } }) {
  const bot = await connect(griffonUrl, { room: "socketio-example", name });
  const socket = io(roomUrl, { transports: ["websocket"] });
  const pen = new SegmentPen(bot);
  const log = { unknown: [], declined: [], drawn: [] };
  let guessing = false;
  let drawing = null; // { turn, last: Map(stroke -> [x, y]) }

  socket.on("turn", async ({ turn, durationS }) => {
    guessing = true;
    const ready = await bot.startRound({ round: turn, candidates: words, language, durationS, ...pace });
    log.unknown = ready.unknown ?? [];
  });
  socket.on("draw", (segment) => { if (guessing) pen.segment(segment); });
  socket.on("clear", () => { if (guessing) { pen.lift(); bot.clear(); } });
  socket.on("chat", ({ player, text }) => { if (guessing && player !== name) bot.playerGuess(text, { player }); });
  socket.on("correct", ({ player }) => {
    if (guessing && player !== name) bot.playerGuess("(found)", { player, correct: true });
  });
  bot.on("guess", (guess) => { if (guessing) socket.emit("guess", { text: guess.text }); });
  socket.on("turn_end", async ({ word }) => {
    if (drawing) {
      bot.drawStop();
      drawing = null;
    }
    if (guessing) {
      guessing = false;
      pen.lift();
      await bot.endRound({ answer: word });
    }
  });

  socket.on("your_turn", async ({ turn, word, durationS }) => {
    drawing = { turn, last: new Map() };
    const start = await bot.drawTurn({ turn, word, language, width: WIDTH, height: HEIGHT, durationS });
    if (start.type === "draw_declined") {
      log.declined.push(word);
      drawing = null;
      socket.emit("skip");
    } else {
      log.drawn.push({ word, label: start.label, strokes: start.strokes });
    }
  });
  bot.on("drawPoints", ({ turn, stroke, x, y }) => {
    if (!drawing || drawing.turn !== turn) return;
    let last = drawing.last.get(stroke) ?? [x[0], y[0]];
    x.forEach((px, i) => {
      socket.emit("draw", { x1: last[0], y1: last[1], x2: px, y2: y[i], color: "#000000", size: 4 });
      last = [px, y[i]];
    });
    drawing.last.set(stroke, last);
  });

  await new Promise((resolve) => socket.on("connect", resolve));
  socket.emit("join", { name, isBot: true });
  return {
    bot, socket, log,
    close: async () => { socket.close(); await bot.close(); },
  };
}
