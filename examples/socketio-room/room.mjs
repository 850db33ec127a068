// A small skribbl-style room of our own, on Socket.IO: players join, take turns drawing a word as
// line segments ({x1, y1, x2, y2, color, size}, the way many web rooms send a drawing), the others
// type guesses judged by exact match. Nothing in it knows about Griffon: Griffon joins as a
// player through the adapter of griffon-seat.mjs.
//
//   const room = await startRoom({ words, turns: [{ drawer: "Ana", word: "cat" }, ...], turnS: 20 });
//   room.port, room.record (what happened, turn by turn), await room.finished, await room.close()
import { createServer } from "node:http";
import { Server } from "socket.io";

/** Start the room on 127.0.0.1 (a free port unless `port` is given). `turns`: who draws which
 * word, in order (the game starts once every drawer named there has joined); `turnS`: a turn's
 * length; a turn also ends when every guesser found the word, or at once when the drawer skips. */
export async function startRoom({ words, turns, turnS = 30, port = 0 }) {
  const http = createServer();
  const io = new Server(http);
  const players = new Map(); // socket id -> { name, isBot, score }
  const record = { words: words.length, turns: [], scores: {} };
  let turn = null;
  let finish;
  const finished = new Promise((resolve) => { finish = resolve; });

  const byName = (name) => [...players.entries()].find(([, p]) => p.name === name);
  const normalised = (text) => text.trim().toLowerCase();

  function endTurn(why) {
    if (!turn || turn.over) return;
    turn.over = true;
    clearTimeout(turn.timer);
    record.turns.push({ number: turn.number, drawer: turn.drawer, word: turn.word, why, segments: turn.segments,
      found: turn.found, guesses: turn.guesses });
    io.emit("turn_end", { turn: turn.number, word: turn.word, why });
    setTimeout(nextTurn, 200);
  }

  function nextTurn() {
    const index = turn ? turn.number : 0;
    if (index >= turns.length) {
      for (const p of players.values()) record.scores[p.name] = p.score;
      io.emit("game_over", record);
      finish(record);
      return;
    }
    const { drawer, word } = turns[index];
    const [drawerId] = byName(drawer);
    turn = { number: index + 1, drawer, drawerId, word, segments: 0, found: [], guesses: [], over: false };
    turn.timer = setTimeout(() => endTurn("time"), turnS * 1000);
    io.except(drawerId).emit("turn", { turn: turn.number, drawer, letters: word.length, durationS: turnS });
    io.to(drawerId).emit("your_turn", { turn: turn.number, word, durationS: turnS });
  }

  io.on("connection", (socket) => {
    socket.on("join", ({ name, isBot = false }) => {
      players.set(socket.id, { name, isBot, score: 0 });
      io.emit("joined", { name, isBot });
      const ready = turns.every(({ drawer }) => byName(drawer));
      if (ready && !turn) setTimeout(nextTurn, 300);
    });
    socket.on("draw", (segment) => {
      if (!turn || turn.over || socket.id !== turn.drawerId) return;
      turn.segments += 1;
      socket.broadcast.emit("draw", segment);
    });
    socket.on("clear", () => {
      if (turn && socket.id === turn.drawerId) socket.broadcast.emit("clear");
    });
    socket.on("skip", () => {
      if (turn && socket.id === turn.drawerId) endTurn("skipped");
    });
    socket.on("guess", ({ text }) => {
      const player = players.get(socket.id);
      if (!turn || turn.over || !player || socket.id === turn.drawerId || turn.found.includes(player.name)) return;
      const correct = normalised(text) === normalised(turn.word);
      turn.guesses.push({ player: player.name, text, correct });
      if (correct) {
        turn.found.push(player.name);
        player.score += 100 - 10 * (turn.found.length - 1);
        io.emit("correct", { player: player.name });
        if (turn.found.length >= players.size - 1) endTurn("found");
      } else {
        io.emit("chat", { player: player.name, text });
      }
    });
    socket.on("disconnect", () => players.delete(socket.id));
  });

  await new Promise((resolve) => http.listen(port, "127.0.0.1", resolve));
  return {
    port: http.address().port, record, finished,
    close: () => new Promise((resolve) => io.close(() => resolve())),
  };
}
