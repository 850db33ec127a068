// The demo room: a person draws a word on the canvas, Griffon's bot plays as a guesser through
// griffon-bot.js. Served by `griffon serve` at /demo/bot. The players' text is French.
import { connect } from "../griffon-bot.js";

const WORDS = ["maison", "chat", "chien", "arbre", "voiture", "soleil", "poisson", "vélo", "fleur", "avion",
  "lune", "étoile", "montagne", "parapluie", "guitare", "horloge", "pomme", "banane", "oiseau", "lunettes",
  "ciseaux", "clé", "téléphone", "camion"];
const SIDE = 255; // the canvas's units, as in Quick, Draw!: x to the right, y downward
const SEND_EVERY_MS = 50; // points are sent in batches, as a room's canvas would

const $ = (selector) => document.querySelector(selector);
const canvas = $("#canvas");
const pen = canvas.getContext("2d");
const demo = { bot: null, round: 0, answer: null, open: false, pending: [], found: false };
window.griffonDemo = demo; // for the browser tests and the curious

function status(text, down = false) {
  $("#status").textContent = text;
  $("#status").classList.toggle("down", down);
}

function note(text, kind = "error") {
  const item = document.createElement("li");
  item.textContent = text;
  item.className = kind;
  item.dataset.code = kind === "error" ? text.split(" ")[0] : "";
  $("#errors").prepend(item);
}

function addWord(word, checked = true) {
  const label = document.createElement("label");
  const box = document.createElement("input");
  Object.assign(box, { type: "checkbox", name: "word", value: word, checked });
  label.append(box, ` ${word}`);
  $("#words").append(label);
}

function chosenWords() {
  return [...document.querySelectorAll("input[name=word]:checked")].map((box) => box.value);
}

function playing(on) {
  for (const id of ["#undo", "#clear", "#end"]) $(id).disabled = !on;
  $("#start").disabled = on || !demo.bot;
}

// -- drawing ------------------------------------------------------------------------------------
const strokes = [];

function toUnits(event) {
  const box = canvas.getBoundingClientRect();
  const unit = (value) => Math.round(Math.min(SIDE, Math.max(0, value)) * 10) / 10;
  return [unit(((event.clientX - box.left) / box.width) * SIDE), unit(((event.clientY - box.top) / box.height) * SIDE)];
}

function paint() {
  const scale = canvas.width / SIDE;
  pen.clearRect(0, 0, canvas.width, canvas.height);
  Object.assign(pen, { lineWidth: 3, lineCap: "round", lineJoin: "round", strokeStyle: "#1d2433" });
  for (const [xs, ys] of strokes) {
    pen.beginPath();
    pen.moveTo(xs[0] * scale, ys[0] * scale);
    for (let i = 1; i < xs.length; i += 1) pen.lineTo(xs[i] * scale, ys[i] * scale);
    if (xs.length === 1) pen.lineTo(xs[0] * scale + 0.5, ys[0] * scale);
    pen.stroke();
  }
}

function guarded(action) {
  try {
    action();
  } catch (error) {
    note(`${error.code ?? "erreur"} — ${error.message}`);
  }
}

function flush() {
  if (!demo.pending.length) return;
  const xs = demo.pending.map((p) => p[0]);
  const ys = demo.pending.map((p) => p[1]);
  demo.pending = [];
  guarded(() => demo.bot.points(xs, ys));
}

setInterval(() => demo.open && flush(), SEND_EVERY_MS);

canvas.addEventListener("pointerdown", (event) => {
  if (!demo.answer || demo.found || demo.open) return;
  canvas.setPointerCapture(event.pointerId);
  const [x, y] = toUnits(event);
  strokes.push([[x], [y]]);
  demo.open = true;
  guarded(() => demo.bot.strokeStart(x, y));
  paint();
});

canvas.addEventListener("pointermove", (event) => {
  if (!demo.open) return;
  const [x, y] = toUnits(event);
  const [xs, ys] = strokes[strokes.length - 1];
  if (x === xs[xs.length - 1] && y === ys[ys.length - 1]) return;
  xs.push(x);
  ys.push(y);
  demo.pending.push([x, y]);
  paint();
});

function lift() {
  if (!demo.open) return;
  flush();
  demo.open = false;
  guarded(() => demo.bot.strokeEnd());
}

canvas.addEventListener("pointerup", lift);
canvas.addEventListener("pointercancel", lift);

// -- the round ----------------------------------------------------------------------------------
function say(guess) {
  const right = [guess.label, guess.word, guess.text].includes(demo.answer);
  const item = document.createElement("li");
  item.textContent = `« ${guess.text} » (${Math.round(guess.prob * 100)} %)`;
  item.className = right ? "right" : "wrong";
  item.dataset.label = guess.label;
  $("#guesses").append(item);
  guarded(() => demo.bot.verdict(guess.guess_id, right ? { correct: true } : { gesture: "hors_sujet" }));
  if (right) {
    demo.found = true;
    $("#secret").textContent = `Griffon a trouvé « ${demo.answer} » !`;
    endRound();
  }
}

function seen(analysis) {
  $("#seen").replaceChildren(...analysis.top.map((top) => {
    const item = document.createElement("li");
    item.textContent = `${top.word} — ${Math.round(top.prob * 100)} %`;
    return item;
  }));
}

async function startRound() {
  const candidates = chosenWords();
  if (candidates.length < 2) {
    note("Cochez au moins deux mots.", "note");
    return;
  }
  demo.round += 1;
  demo.answer = candidates[Math.floor(Math.random() * candidates.length)];
  demo.found = false;
  strokes.length = 0;
  paint();
  $("#guesses").replaceChildren();
  $("#seen").replaceChildren();
  $("#secret").textContent = "Griffon se prépare…";
  try {
    const ready = await demo.bot.startRound({
      round: demo.round, candidates, game: "kontour", language: "fr",
      difficulty: $("select[name=difficulty]").value, pace: $("select[name=pace]").value,
    });
    if (ready.unknown?.length) {
      const words = ready.unknown.map((word) => `« ${word} »`).join(", ");
      note(`Griffon ne sait pas deviner ${words} : il ne le dira pas.`, "unknown");
    }
  } catch (error) {
    demo.answer = null;
    $("#secret").textContent = "La manche n’a pas pu commencer.";
    note(`${error.code} — ${error.message}`);
    return;
  }
  $("#secret").textContent = `Dessinez : « ${demo.answer} »`;
  canvas.dataset.answer = demo.answer;
  playing(true);
}

async function endRound() {
  if (demo.open) lift();
  playing(false);
  const answer = demo.answer;
  demo.answer = null;
  try {
    const over = await demo.bot.endRound({ answer });
    if (!demo.found) $("#secret").textContent = `Fin de la manche : c’était « ${answer} ».`;
    canvas.dataset.said = over.said.join(",");
  } catch (error) {
    note(`${error.code} — ${error.message}`);
  }
}

// -- connection ---------------------------------------------------------------------------------
async function main() {
  WORDS.forEach((word, i) => addWord(word, i < 12));
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/v1/bot`;
  try {
    demo.bot = await connect(url, { room: "demo", name: "Griffon", analysis: true });
  } catch (error) {
    status(`Le bot ne répond pas (${error.code}).`, true);
    return;
  }
  const { bot } = demo;
  status(`Connecté — protocole v${bot.version}`);
  $("#start").disabled = false;
  const pace = $("select[name=pace]");
  if (bot.version < 2) {
    pace.disabled = true;
    pace.title = "Ce serveur parle la version 1 du protocole : rythme humain seulement.";
  }
  bot.on("guess", say);
  bot.on("analysis", seen);
  bot.on("error", (error) => note(`${error.code} — ${error.message}`));
  bot.on("reconnecting", ({ attempt }) => status(`Connexion perdue : nouvel essai (${attempt})…`, true));
  bot.on("resumed", ({ resumed }) => {
    status(`Reconnecté — protocole v${bot.version}`);
    note(resumed ? "Partie reprise là où elle en était." : "Nouvelle session : le dessin a été renvoyé.", "note");
    document.body.dataset.resumed = String((Number(document.body.dataset.resumed) || 0) + 1);
  });
  bot.on("close", ({ code }) => {
    status(`Déconnecté (code ${code}).`, true);
    playing(false);
    $("#start").disabled = true;
  });
  document.body.dataset.ready = "true";
}

$("#start").addEventListener("click", startRound);
$("#end").addEventListener("click", endRound);
$("#undo").addEventListener("click", () => {
  if (demo.open) return;
  strokes.pop();
  paint();
  guarded(() => demo.bot.undo());
});
$("#clear").addEventListener("click", () => {
  if (demo.open) return;
  strokes.length = 0;
  paint();
  guarded(() => demo.bot.clear());
});
$("#add-word").addEventListener("submit", (event) => {
  event.preventDefault();
  const field = event.target.elements["new-word"];
  const word = field.value.trim();
  if (word && !WORDS.includes(word)) addWord(word);
  field.value = "";
});
main();
