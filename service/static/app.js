// Entry point: the setup form, the game socket (with resume after a reload or a dropped
// connection), and the game views. The server holds the game; this page renders what it is sent.

import { el, toast, frenchError, listing, nameProblem, restarter } from "./ui.js";
import { KontourView } from "./kontour.js";
import { PictomaniaView } from "./pictomania.js";
import { RulesPanel } from "./rules.js";
import { LobbyView, joinForm, lobbyError } from "./lobby.js";
import { isMuted, setMuted } from "./sound.js";

const STORE = "griffon.game";
const ROOMS = "griffon.rooms";
const LAST = "griffon.last"; // the last solo game's settings (« Rejouer »)
const NAME = "griffon.name"; // the name last typed, offered again (setup form, a room's link) // room code -> this browser's seat token in it
const ROOM_PATH = /^\/r\/([^/]{1,40})\/?$/; // a room's link; the code itself is checked by roomCode
const CODE_LETTERS = "ABCDEFGHJKMNPQRSTUVWXYZ"; // the server's (service/play/rooms.py): no I, L, O
const GONE = new Set([4403, 4404, 4410]); // bad token, unknown game, game closed: do not retry
const SYNC_RETRY_MS = 2000; // a sync unanswered this long (dropped by the rate limit) is sent again

const $ = (id) => document.getElementById(id);
const LIMITS = "griffon.opponents";
// The AI opponents each game accepts come from the server (GET /v1/play/options, and every game's
// config, both read from the rules files); the page keeps the last ones it was sent. Only if the
// server cannot be asked: the rules' defaults.
const FIRST_VISIT_OPPONENTS = { kontour: { min: 1, max: 5 }, pictomania: { min: 2, max: 5 } };
// The withdrawal key: a secret made by this browser the first time the person gives their drawings,
// sent with each game they give them in (the server keeps only its hash); with it, "Retirer mon
// accord" deletes every drawing given from this browser (POST /v1/drawings/withdraw).
const WITHDRAW_KEY = "griffon.cle-retrait";
const rules = new RulesPanel();

function saved() {
  const params = new URLSearchParams(location.search);
  if (params.get("game") && params.get("token")) {
    return { game_id: params.get("game"), token: params.get("token") };
  }
  try { return JSON.parse(localStorage.getItem(STORE) || "null"); } catch { return null; }
}

function remember(game) {
  localStorage.setItem(STORE, JSON.stringify(game));
  if (game.code) return; // a room's address stays its link: a token in it would give the seat away
  const url = new URL(location.href);
  url.searchParams.set("game", game.game_id);
  url.searchParams.set("token", game.token);
  history.replaceState(null, "", url);
}

function forget() {
  const game = saved();
  if (game && game.code) forgetRoom(game.code);
  localStorage.removeItem(STORE);
  history.replaceState(null, "", "/");
}

function roomTokens() {
  try { return JSON.parse(localStorage.getItem(ROOMS) || "{}") || {}; } catch { return {}; }
}

function keepRoom(code, token) {
  const rooms = roomTokens();
  rooms[code] = token;
  try { localStorage.setItem(ROOMS, JSON.stringify(rooms)); } catch { /* storage off: no reload */ }
}

function forgetRoom(code) {
  const rooms = roomTokens();
  delete rooms[code];
  try { localStorage.setItem(ROOMS, JSON.stringify(rooms)); } catch { /* storage off */ }
}

class Connection {
  constructor(game, handlers) {
    this.game = game;
    this.handlers = handlers;
    this.retry = 0;
    this.closed = false;
    this.open();
    this.ping = setInterval(() => this.send({ type: "ping" }), 20000);
  }

  // A full state (`seq`) then updates `seq + 1`, `seq + 2`…: each is merged into the last frame.
  // A gap (a frame lost) asks the server for the whole state again.
  receive(frame) {
    if (frame.type === "state") {
      this.stopSync();
      this.full = frame;
      this.handlers.frame(frame);
    } else if (frame.type === "update") {
      if (!this.full || this.syncing || frame.seq <= this.full.seq) return; // stale, or awaiting the state
      if (frame.seq !== this.full.seq + 1) {
        this.sync();
        return;
      }
      this.full = applyUpdate(this.full, frame);
      this.handlers.frame(this.full);
    } else {
      // An error (a refused frame, the rate limit…) while awaiting the state: the sync may be the
      // frame refused, so the next gap asks again rather than waiting for a state that never comes.
      if (frame.type === "error") this.stopSync();
      this.handlers.frame(frame);
    }
  }

  // Ask for the whole state. Past its rate limit the server drops frames without a word (after
  // one warning): without an answer within SYNC_RETRY_MS, ask again.
  sync() {
    this.stopSync();
    this.syncing = this.send({ type: "sync" });
    if (this.syncing) this.syncTimer = setTimeout(() => { if (this.syncing) this.sync(); }, SYNC_RETRY_MS);
  }

  stopSync() {
    this.syncing = false;
    clearTimeout(this.syncTimer);
  }

  open() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const url = `${scheme}://${location.host}/v1/play/${encodeURIComponent(this.game.game_id)}` +
      `?token=${encodeURIComponent(this.game.token)}`;
    this.ws = new WebSocket(url);
    this.ws.onopen = () => { this.retry = 0; this.stopSync(); this.handlers.status("ok"); };
    this.ws.onmessage = (m) => this.receive(JSON.parse(m.data));
    this.ws.onclose = (e) => {
      if (this.closed) return;
      if (GONE.has(e.code)) { this.handlers.gone(e.code); return; }
      this.handlers.status("retry");
      this.retry = Math.min(this.retry + 1, 5);
      setTimeout(() => this.open(), 500 * this.retry);
    };
  }

  send(frame) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) {
      this.ws.send(JSON.stringify(frame));
      return true;
    }
    return false;
  }

  move(move) {
    if (!this.send({ type: "move", move })) toast("Connexion perdue, nouvelle tentative…", "error");
  }

  close() {
    this.closed = true;
    this.stopSync();
    clearInterval(this.ping);
    if (this.ws) this.ws.close();
  }
}

// An update frame merged into the last full frame (docs/PLAY.md; the reference is
// service.games_session.apply_update): `set` replaces fields, `append` extends lists, and within
// a Pictomania round the drawings change through the stroke events.
function applyUpdate(full, update) {
  const old = full.state;
  const state = { ...old, ...update.set };
  for (const [field, items] of Object.entries(update.append)) state[field] = [...(old[field] || []), ...items];
  if (update.set.round && !("drawings" in update.set.round)) {
    const drawings = { ...old.round.drawings };
    for (const e of update.events) {
      if (e.kind === "stroke_drawn") drawings[e.player] = [...(drawings[e.player] || []), e.points];
      else if (e.kind === "stroke_undone") drawings[e.player] = (drawings[e.player] || []).slice(0, e.strokes_left);
      else if (e.kind === "drawing_cleared") drawings[e.player] = [];
    }
    state.round = { ...update.set.round, drawings };
  }
  for (const result of update.append.results || []) {
    if (!("drawings" in result)) result.drawings = state.round.drawings; // the round just scored
  }
  return { ...full, seq: update.seq, now: update.now, time_left: update.time_left, events: update.events,
    state, fr: { ...full.fr, ...update.fr } };
}

function opponentLimits() {
  try { return JSON.parse(localStorage.getItem(LIMITS) || "null") || FIRST_VISIT_OPPONENTS; } catch { return FIRST_VISIT_OPPONENTS; }
}

let connection = null;
let view = null;

// The table waits for the server's database (« Sauvegarde impossible — nouvel essai… »): the game
// stays on screen, dimmed, its clock stopped and no move sent; `null` takes the banner away.
function pause(message) {
  const banner = $("pause");
  banner.hidden = !message;
  banner.textContent = message ? `${message} La partie reprend dès que vos coups sont enregistrés.` : "";
  $("game").classList.toggle("paused", Boolean(message));
  if (view && view.timer) view.timer.pause(Boolean(message));
}

// The setup form, with `message` under it (`codeMessage`: under the room code's form, for what
// went wrong with a room: a mistyped code, a room gone, full or closed).
function showSetup(message, codeMessage) {
  pause(null);
  closeLobby();
  $("quit").hidden = true;
  if (connection) connection.close();
  connection = null;
  if (view) view.close();
  view = null;
  $("game").hidden = true;
  $("game").replaceChildren();
  $("setup").hidden = false;
  $("resume").hidden = !saved();
  $("conn").hidden = true;
  const error = $("setup-error");
  error.hidden = !message;
  error.textContent = message || "";
  const codeError = $("code-error");
  codeError.hidden = !codeMessage;
  codeError.textContent = codeMessage || "";
}

// Who of a room is here: a toast when somebody leaves, comes back or is replaced by an AI (« est
// de retour » only for someone this page saw leave: never at a game's start or a new round), a
// lasting badge on their name (the views' `seats`), and who the next round waits for. The
// wording needs no agreement with the name.
let seatsShown = null;
let wentAway = new Set();
function presence(frame) {
  const names = connection && connection.full ? connection.full.names : {};
  const you = connection && connection.full ? connection.full.you : null;
  for (const [seat, now] of Object.entries(frame.seats)) {
    const before = seatsShown ? seatsShown[seat] : now;
    if (seat === you || now === before) continue;
    const who = names[seat] || seat;
    if (now === "away" && before === "here") {
      toast(`Connexion perdue avec ${who}\u00a0: sa place l'attend.`);
      wentAway.add(seat);
    } else if (now === "ai") {
      toast(`${who} a quitté la partie\u00a0: une IA joue à sa place.`);
      wentAway.add(seat);
    } else if (now === "here" && wentAway.has(seat)) {
      toast(`${who} est de retour.`, "good");
      wentAway.delete(seat);
    }
  }
  seatsShown = frame.seats;
  // The merged frames (the last state + its updates) carry the seats of now, not of the connect.
  if (connection && connection.full) connection.full = { ...connection.full, seats: frame.seats, ready: frame.ready };
  if (view && view.setSeats) view.setSeats(frame.seats);
  if (connection && connection.full) handOver(connection.full);
  if (frame.ready && frame.ready.includes(you)) {
    const waiting = Object.entries(frame.seats)
      .filter(([seat, state]) => state === "here" && !frame.ready.includes(seat)).map(([seat]) => names[seat] || seat);
    if (waiting.length) toast(`En attente de ${listing(waiting)} pour la manche suivante…`);
  }
}

// A room's host gone: « Rejouer » passes to the first person here (`restarter`); the end screen
// shows who may now, and the page that may is told once.
function handOver(frame) {
  if (!view || !view.setRematch || !connection.game.code) return;
  const who = restarter(frame);
  const before = view.restarterShown;
  view.restarterShown = who;
  if (before === undefined || before === who) return; // the view was built with the right one
  const now = rematch(connection.game, frame);
  view.setRematch(now);
  const over = frame.state && frame.state.phase === "game_over";
  if (now && over && frame.you !== frame.host) {
    const host = frame.names[frame.host] || "L'hôte";
    toast(`${host} n'est plus en ligne\u00a0: c'est à vous de relancer la partie.`, "good");
  }
}

// « Rejouer » at the end of a game: a solo game's same settings, a new deal; in a room, the host
// (while the host is away, the first person here: `restarter`) asks the server for a new game of
// the same seats (`again`), which sends every page on to it (`next_game`). The room's other people
// have no button: they follow.
function rematch(game, frame) {
  if (game.code) return restarter(frame) === frame.you ? () => connection.send({ type: "again" }) : null;
  let last = null;
  try { last = JSON.parse(localStorage.getItem(LAST) || "null"); } catch { /* storage off */ }
  return last ? () => { forget(); showSetup(); startSolo(last); } : null;
}

function play(game) {
  remember(game);
  $("quit").hidden = false;
  seatsShown = null;
  wentAway = new Set();
  $("setup").hidden = true;
  const root = $("game");
  root.hidden = false;
  root.replaceChildren(el("p", { class: "loading" }, "Connexion à la partie…"));
  connection = new Connection(game, {
    frame: (frame) => {
      if (!connection || connection.game !== game) return; // a frame of a game this page has left
      if (frame.type === "state" || frame.type === "update") {
        rules.setConfig(frame.game, frame.config);
        if (frame.config.opponents) {
          try { localStorage.setItem(LIMITS, JSON.stringify(frame.config.opponents)); } catch { /* storage off */ }
        }
        if (!view || view.kind !== frame.game) {
          const View = frame.game === "kontour" ? KontourView : PictomaniaView;
          if (view) view.close();
          view = new View(root, (move) => connection.move(move), () => { forget(); showSetup(); }, rematch(game, frame));
        }
        if (frame.type === "state" && frame.seats) {
          for (const [seat, now] of Object.entries(frame.seats)) if (now === "ai") wentAway.add(seat); // replaced before this page came
          seatsShown = frame.seats;
        }
        if (view.setSeats && seatsShown) view.setSeats(seatsShown);
        view.update(frame);
        if (frame.type === "state") handOver(frame);
      } else if (frame.type === "paused" || frame.type === "resumed") {
        pause(frame.type === "paused" ? frame.message : null);
      } else if (frame.type === "presence") {
        presence(frame);
      } else if (frame.type === "next_game") { // « Rejouer » in a room: the same seat in the next game
        connection.close();
        if (view) view.close();
        view = null;
        toast("Nouvelle partie, mêmes joueurs\u00a0!", "good");
        play({ game_id: frame.game_id, token: game.token, code: game.code });
      } else if (frame.type === "error") {
        if (frame.code === "unknown_game" || frame.code === "bad_token") return;
        if (view) view.error(frame);
        toast(frenchError(frame), "error");
      }
    },
    status: (s) => {
      if (s !== "ok") pause(null); // a new socket is told again if the table is still paused
      const badge = $("conn");
      badge.hidden = s === "ok";
      badge.textContent = "Reconnexion…";
    },
    gone: () => { forget(); showSetup("Cette partie n'existe plus (terminée ou expirée)."); },
  });
}

// -- rooms with friends ----------------------------------------------------------------------------
let lobby = null;

function closeLobby() {
  if (lobby) { lobby.closed = true; lobby.ws.close(); }
  lobby = null;
}

// Why a room cannot be entered, in French (the lobby socket's error codes, a full room).
function roomRefusal(code, why) {
  return {
    unknown_room: `Aucun salon ne porte le code ${code}\u00a0: vérifiez ses quatre lettres.`,
    room_gone: `Le salon ${code} n'existe plus\u00a0: sa partie est terminée, ou il a été fermé.`,
    room_started: `La partie du salon ${code} a commencé sans vous.`,
    room_closed: "L'hôte a fermé le salon.",
    removed: "L'hôte vous a retiré du salon.",
    room_full: `Le salon ${code} est complet\u00a0: toutes ses places sont prises.`,
  }[why];
}

// The lobby socket of room `code`: with this browser's token when it has one; else the server
// first shows the room (`room`: its game, its host, the names taken, whether it is full), then the
// page asks for the person's name and sends `join`. The server answers `lobby` frames, then
// `started` with the game's id.
function openLobby(code) {
  closeLobby();
  const token = roomTokens()[code];
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${scheme}://${location.host}/v1/rooms/${code}${token ? `?token=${encodeURIComponent(token)}` : ""}`);
  const current = { ws, closed: false, view: null, token, form: null };
  lobby = current;
  const root = $("game");
  $("setup").hidden = true;
  root.hidden = false;
  const end = (message) => {
    current.closed = true;
    lobby = null;
    forgetRoom(code);
    history.replaceState(null, "", "/");
    showSetup(null, message);
    $("code-input").value = "";
  };
  ws.onmessage = (m) => {
    const frame = JSON.parse(m.data);
    if (frame.type === "room") { // not seated yet: the room first, then the name
      if (frame.full) end(roomRefusal(code, "room_full"));
      else if (!current.form) {
        current.form = joinForm(root, code, frame, (name) => ws.send(JSON.stringify({ type: "join", name })));
      }
    } else if (frame.type === "joined") {
      current.token = frame.token;
      keepRoom(code, frame.token);
    } else if (frame.type === "lobby") {
      if (!current.view) {
        current.view = new LobbyView(root, (f) => ws.send(JSON.stringify(f)), () => {
          ws.send(JSON.stringify({ type: "leave" }));
          forgetRoom(code);
          closeLobby();
          history.replaceState(null, "", "/");
          showSetup();
        });
      }
      current.view.update(frame);
    } else if (frame.type === "host_changed") {
      toast(frame.you ? `${frame.was} n'est plus en ligne\u00a0: c'est à vous de lancer la partie.`
        : `${frame.was} n'est plus en ligne\u00a0: ${frame.host} lance désormais la partie.`, "good");
    } else if (frame.type === "started") {
      current.closed = true;
      lobby = null;
      play({ game_id: frame.game_id, token: current.token, code });
    } else if (frame.type === "error") {
      const refusal = roomRefusal(code, frame.code);
      if (refusal && (frame.code !== "room_full" || !current.token)) end(refusal);
      else if (!current.token && current.form) current.form.refused(lobbyError(frame)); // a name refused: ask again
      else toast(lobbyError(frame), "error");
    }
  };
  ws.onclose = () => {
    if (current.closed || lobby !== current) return;
    $("conn").hidden = false;
    $("conn").textContent = "Reconnexion…";
    setTimeout(() => { if (lobby === current) { $("conn").hidden = true; openLobby(code); } }, 1000);
  };
}

// The room's code as typed or read from a link: upper case, spaces and dashes dropped; null
// when it cannot be a room's (4 letters, none of I, L, O).
function roomCode(text) {
  const code = String(text || "").toUpperCase().replace(/[\s-]/g, "");
  return code.length === 4 && [...code].every((c) => CODE_LETTERS.includes(c)) ? code : null;
}

function badCode(text) {
  const shown = String(text).slice(0, 12);
  return `«\u00a0${shown}\u00a0» n'est pas un code de salon\u00a0: un code a quatre lettres, sans I, L ni O (par exemple RPUX).`;
}

function enterRoom(typed) {
  const code = roomCode(typed);
  if (!code) {
    history.replaceState(null, "", "/");
    showSetup(null, badCode(typed));
    return;
  }
  $("quit").hidden = false;
  $("setup").hidden = true;
  $("game").hidden = false;
  $("game").replaceChildren(el("p", { class: "loading" }, `Salon ${code}…`));
  openLobby(code);
}

// « Rejoindre » with the code a friend read aloud or sent (the home page's second form).
function joinByCode(event) {
  event.preventDefault();
  const typed = $("code-input").value.trim();
  const code = roomCode(typed);
  if (!code) {
    showSetup(null, badCode(typed));
    $("code-input").focus();
    return;
  }
  history.pushState(null, "", `/r/${code}`);
  enterRoom(code);
}

async function createRoom() {
  const form = new FormData($("new-game"));
  const name = String(form.get("name")).trim();
  if (!name) {
    showSetup("Choisissez un nom\u00a0: vos amis le verront.");
    $("new-game").elements.name.focus();
    return;
  }
  if (nameProblem(name)) {
    showSetup(nameProblem(name));
    return;
  }
  const body = { game: form.get("game"), name, level: form.get("level"), ai: 0 };
  $("with-friends").disabled = true;
  try {
    const response = await fetch("/v1/rooms", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      throw new Error(data.error === "too_many_rooms" ? "vous avez déjà trop de salons ouverts." : refusal(response.status, data));
    }
    keepRoom(data.code, data.token);
    history.pushState(null, "", data.link);
    enterRoom(data.code);
  } catch (error) {
    const why = error instanceof TypeError ? "le serveur ne répond pas." : error.message;
    showSetup(`Impossible de créer le salon\u00a0: ${why}`);
  } finally {
    $("with-friends").disabled = false;
  }
}

async function create(event) {
  event.preventDefault();
  const form = new FormData(event.target);
  const body = {
    game: form.get("game"),
    opponents: Number(form.get("opponents")),
    level: form.get("level"),
    name: String(form.get("name")).trim() || "Vous",
    learn: form.get("learn") === "on", // the consent switch: off unless ticked
  };
  if (body.learn) body.withdraw_key = withdrawKey(true);
  if (nameProblem(body.name)) {
    showSetup(nameProblem(body.name));
    return;
  }
  const seed = new URLSearchParams(location.search).get("seed"); // ?seed=N: the same deal again
  if (seed !== null && /^\d{1,10}$/.test(seed)) body.seed = Number(seed);
  try { localStorage.setItem(LAST, JSON.stringify({ ...body, seed: undefined })); } catch { /* storage off */ }
  await startSolo(body);
}

// A solo game of `body` (the setup form's, or the last one again: « Rejouer »).
async function startSolo(body) {
  $("start").disabled = true;
  try {
    const response = await fetch("/v1/play", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(refusal(response.status, data));
    play(data);
  } catch (error) {
    const why = error instanceof TypeError ? "le serveur ne répond pas." : error.message; // fetch failed
    showSetup(`Impossible de créer la partie\u00a0: ${why}`);
  } finally {
    $("start").disabled = false;
  }
}

// The server's refusal in French (its messages are for developers).
function refusal(status, data) {
  if (status === 429 && data.error === "too_many_games") {
    return "vous avez déjà trop de parties ouvertes\u00a0: terminez-en une ou fermez son onglet.";
  }
  if (status === 429) return "trop de parties créées, patientez un peu avant d'en lancer une autre.";
  if (data.error === "too_many_games") return "le serveur est complet, réessayez dans un moment.";
  if (data.error === "server_busy") return "le serveur est complet pour l'instant\u00a0: réessayez dans une minute.";
  if (data.error === "database_unavailable") return "les parties ne peuvent pas être enregistrées pour l'instant\u00a0: réessayez dans un moment.";
  if (data.error === "no_deck") return "aucun paquet de cartes n'est disponible sur ce serveur.";
  if (status === 422) {
    const message = String(data.message || "");
    if (message.includes("name")) return "ce nom n'est pas accepté.";
    if (message.includes("opponents") || message.includes("AI opponents")) return "nombre d'adversaires refusé.";
    return "demande refusée par le serveur.";
  }
  return `erreur du serveur (${status}).`;
}

// Offer only the opponent counts the server accepts for the chosen game; say so when the
// choice has to change.
function fitOpponents() {
  const game = new FormData($("new-game")).get("game");
  const select = $("opponents");
  const { min, max } = opponentLimits()[game] || { min: 1, max: 5 };
  for (const option of select.options) option.disabled = Number(option.value) < min || Number(option.value) > max;
  const chosen = Number(select.value);
  if (chosen < min || chosen > max) {
    select.value = String(chosen < min ? min : max);
    const name = game === "kontour" ? "Kontour" : "Pictomania";
    toast(chosen < min ? `${name} se joue à ${min + 1} joueurs au moins\u00a0: ${min} adversaires IA.`
      : `${name} se joue à ${max + 1} joueurs au plus\u00a0: ${max} adversaires IA.`);
  }
}

function currentGame() {
  return view ? view.kind : new FormData($("new-game")).get("game");
}

async function loadOptions() {
  try {
    const response = await fetch("/v1/play/options");
    if (!response.ok) return;
    const options = await response.json();
    keptFor(options.drawings_kept_days);
    localStorage.setItem(LIMITS, JSON.stringify(options.opponents));
    fitOpponents();
  } catch { /* offline or storage off: keep the last known limits */ }
}

// How long the server keeps given drawings (GRIFFON_DB_RETAIN_DRAWINGS_DAYS; 0: until withdrawn).
function keptFor(days) {
  if (typeof days !== "number" || days <= 0) return; // the page's own sentence says so already
  const shown = Number.isInteger(days) ? String(days) : days.toFixed(1).replace(".", ",");
  $("kept-for").textContent = `Ils sont gardés ${shown} jour${days >= 2 ? "s" : ""} au plus, ` +
    "moins si vous les retirez avant.";
}

// This browser's withdrawal key (made when `make` and there is none yet); null without one.
function withdrawKey(make) {
  let key = null;
  try { key = localStorage.getItem(WITHDRAW_KEY); } catch { /* storage off */ }
  if (!key && make) {
    const bytes = crypto.getRandomValues(new Uint8Array(24));
    key = btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    try { localStorage.setItem(WITHDRAW_KEY, key); } catch { /* kept for this game only */ }
    $("withdraw").hidden = false;
  }
  return key;
}

async function withdraw() {
  const key = withdrawKey(false);
  if (!key) return;
  if (!confirm("Retirer votre accord et supprimer tous les dessins donnés depuis ce navigateur\u00a0?")) return;
  $("withdraw").disabled = true;
  try {
    const response = await fetch("/v1/drawings/withdraw", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ key }),
    });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(String(response.status));
    $("learn").checked = false;
    const n = data.deleted;
    toast(n === 0 ? "Accord retiré\u00a0: aucun dessin n'était gardé."
      : `Accord retiré\u00a0: ${n} dessin${n > 1 ? "s" : ""} supprimé${n > 1 ? "s" : ""}.`);
  } catch {
    toast("Impossible de supprimer vos dessins pour l'instant\u00a0: réessayez dans un moment.", "error");
  } finally {
    $("withdraw").disabled = false;
  }
}

$("new-game").addEventListener("submit", create);
$("new-game").addEventListener("change", (e) => { if (e.target.name === "game") fitOpponents(); });
$("rules-open").addEventListener("click", () => rules.open(currentGame()));
$("withdraw").addEventListener("click", withdraw);
$("withdraw").hidden = !withdrawKey(false);
fitOpponents();
$("resume").addEventListener("click", () => { const g = saved(); if (g) play(g); });
$("with-friends").addEventListener("click", createRoom);
$("join-code").addEventListener("submit", joinByCode);
$("code-input").addEventListener("input", (e) => { // typed on a phone: capitals, at most 4 letters
  const field = e.target;
  const cleaned = field.value.toUpperCase().replace(/[^A-Z]/g, "").slice(0, 4);
  if (cleaned !== field.value) field.value = cleaned;
});
function showSound() {
  const on = !isMuted();
  $("sound").replaceChildren(el("span", { class: "note", "aria-hidden": "true" }, "♪"),
    el("span", { class: "label" }, on ? " Son" : " Son coupé"));
  $("sound").setAttribute("aria-pressed", String(on));
  $("sound").title = on ? "couper le son" : "remettre le son";
}
$("sound").addEventListener("click", () => { setMuted(!isMuted()); showSound(); });
showSound();
// « Quitter » asks first (« Quitter la partie ? »), then leaves the game or the room for the setup
// form; a room's seat is played by an AI once its grace period is over.
let quitAsked = -Infinity;
$("quit").addEventListener("click", () => {
  const button = $("quit");
  if (performance.now() - quitAsked < 3000) {
    quitAsked = -Infinity;
    button.textContent = "Quitter";
    const game = saved();
    if (lobby) { lobby.ws.send(JSON.stringify({ type: "leave" })); }
    if (game && game.code) forgetRoom(game.code);
    const code = location.pathname.match(ROOM_PATH);
    if (code) forgetRoom(code[1].toUpperCase());
    forget();
    showSetup();
    return;
  }
  quitAsked = performance.now();
  button.textContent = "Quitter la partie\u00a0?";
  setTimeout(() => { if (performance.now() - quitAsked >= 3000) button.textContent = "Quitter"; }, 3050);
});
try { $("new-game").elements.name.value = localStorage.getItem(NAME) || ""; } catch { /* storage off */ }
$("new-game").addEventListener("change", (e) => {
  if (e.target.name === "name") try { localStorage.setItem(NAME, e.target.value.trim()); } catch { /* storage off */ }
});

const params = new URLSearchParams(location.search);
const roomPath = location.pathname.match(ROOM_PATH);
if (roomPath) {
  let typed = roomPath[1];
  try { typed = decodeURIComponent(typed); } catch { /* a stray %: shown as typed */ }
  enterRoom(typed);
}
else if (params.get("game") && params.get("token")) play(saved());
else showSetup();
loadOptions();
