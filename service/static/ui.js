// Small DOM helpers shared by both games: element builder, toasts, French messages, timers.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const ERRORS = {
  not_host: "Seul l'hôte peut relancer une partie.",
  not_over: "La partie n'est pas terminée.",
  cannot_start: "Le serveur ne peut pas lancer une nouvelle partie pour l'instant\u00a0: réessayez dans un moment.",
  not_your_turn: "Ce n'est pas à vous de jouer.",
  not_allowed: "Ce coup n'est pas permis.",
  wrong_phase: "Pas maintenant\u00a0!",
  too_many_strokes: "15\u00a0traits au plus\u00a0!",
  not_a_straight_line: "Ce trait est trop court ou pas droit.",
  already_found: "Vous avez déjà trouvé.",
  already_guessed: "Vous avez déjà misé sur ce dessin.",
  card_used: "Ce numéro est déjà joué.",
  nothing_to_undo: "Votre dessin est déjà vide.",
  already_done: "Vous avez fini cette manche.",
  time_over: "Temps écoulé.",
  game_over: "La partie est terminée.",
  invalid_move: "Coup invalide.",
  bad_frame: "Message illisible.",
  rate_limited: "Doucement\u00a0! Trop de messages.",
  frame_too_large: "Dessin trop lourd.",
  paused: "Partie en pause\u00a0: vos coups ne peuvent pas être enregistrés pour l'instant.",
  not_stored: "Cette partie ne peut plus être enregistrée\u00a0: elle s'arrête ici.",
};

const NAME_MAX = 24; // characters in a name (the server's bound): a longer one is refused, never cut

// Why a name typed cannot be used, in French; null when it can.
export function nameProblem(name) {
  const length = [...name].length;
  if (length > NAME_MAX) return `Un nom tient en ${NAME_MAX}\u00a0caractères au plus (celui-ci en a ${length})\u00a0: raccourcissez-le.`;
  if (/[<>&"]/.test(name)) return "Votre nom ne peut pas contenir les caractères < > & \".";
  return null;
}

export function frenchError(frame) {
  if (frame.code === "too_many_strokes" && Number.isInteger(frame.limit)) return `${frame.limit}\u00a0traits au plus\u00a0!`;
  return ERRORS[frame.code] || frame.message || "Erreur";
}

// A short message at the top of the page; the same text already showing is not repeated
// (a double click must not stack « Pas maintenant ! » toasts). Toasts never take clicks.
export function toast(text, kind = "info") {
  const box = document.getElementById("toasts");
  for (const shown of box.children) {
    if (shown.textContent === text && !shown.classList.contains("fade")) return;
  }
  const item = el("div", { class: `toast ${kind}` }, text);
  box.append(item);
  while (box.children.length > 3) box.firstChild.remove();
  setTimeout(() => item.classList.add("fade"), 2600);
  setTimeout(() => item.remove(), 3200);
}

// A button that sends one move: disabled once pressed (the next state re-renders it), so a
// double click sends the move once. The second click of a double click (`detail` 2) never counts:
// the server's answer to the first may already have put another button under the pointer (« Piocher
// une carte », then the blue word in its place), and a double tap must not choose a word.
export function once(attrs, send, ...children) {
  const button = el("button", {
    ...attrs,
    onclick: (event) => {
      if (event.detail > 1) return;
      button.disabled = true;
      send();
    },
  }, ...children);
  return button;
}

// A countdown that follows the server: `time_left` seconds at reception. It stands still while
// the table is paused (the server's game clock does too).
export class Countdown {
  constructor() { this.until = 0; this.total = 1; this.frozen = null; }
  set(timeLeft, total) {
    this.until = performance.now() + timeLeft * 1000;
    this.total = total || 1;
    if (this.frozen !== null) this.frozen = Math.max(0, timeLeft);
  }
  pause(on) {
    if (on && this.frozen === null) this.frozen = this.left();
    else if (!on && this.frozen !== null) {
      this.until = performance.now() + this.frozen * 1000;
      this.frozen = null;
    }
  }
  left() {
    if (this.frozen !== null) return this.frozen;
    return Math.max(0, (this.until - performance.now()) / 1000);
  }
  share() { return Math.min(1, this.left() / this.total); }
}

export function seconds(s) {
  const whole = Math.ceil(s);
  const m = Math.floor(whole / 60);
  return m ? `${m}:${String(whole % 60).padStart(2, "0")}` : `${whole} s`;
}

export function plural(n, word) {
  return `${n}\u00a0${word}${Math.abs(n) > 1 ? "s" : ""}`; // « 15 traits » never split over two lines
}

// « Vous gagnez la partie ! », « La victoire revient à Plume. », « Égalité en tête : vous et Plume… »
// (`name(p)` for the others; no word that would agree with a name).
export function winnersText(winners, me, name) {
  const others = winners.filter((p) => p !== me).map(name);
  if (!winners.includes(me)) return `La victoire revient à ${listing(others)}.`;
  if (!others.length) return "Vous gagnez la partie\u00a0!";
  return `Égalité en tête\u00a0: ${listing(["vous", ...others])} partagez la victoire.`;
}

// The first letter in capitals (« vous, Léa » at the start of a table's cell: « Vous, Léa »).
export function capital(text) {
  return text ? text[0].toLocaleUpperCase("fr") + text.slice(1) : text;
}

// A lasting mark by a room's person's name while they are away or an AI plays for them.
export function seatBadge(state) {
  if (state === "ai") return el("span", { class: "badge seat-ai", title: "une IA joue à sa place en son absence" }, "IA en relais");
  if (state === "away") return el("span", { class: "badge seat-away", title: "connexion perdue\u00a0: sa place l'attend" }, "hors ligne");
  return null;
}

// Who may start a room's next game (« Rejouer »): its host while here, else the first person here
// in seat order (the server's rule: service/play/rooms.py `restarter`).
export function restarter(frame) {
  const seats = frame.seats || {};
  if (seats[frame.host] === "here") return frame.host;
  return Object.keys(seats).find((seat) => seats[seat] === "here") || null;
}

// Under a room's ended game, for the people who may not start the next one: who may, and that
// this page will follow.
export function againHint(frame, rematch) {
  const room = Object.keys(frame.seats || {}).length > 1;
  const who = restarter(frame);
  if (!room || rematch || !who || who === frame.you) return null;
  const host = frame.names[who] || "L'hôte";
  return el("p", { class: "small again-hint", "data-testid": "again-hint" },
    `${host} peut relancer une partie avec les mêmes joueurs\u00a0: restez sur cette page, la nouvelle partie s'y ouvrira.`);
}

// "a", "a et b", "a, b et c".
export function listing(items) {
  return items.length > 1 ? `${items.slice(0, -1).join(", ")} et ${items[items.length - 1]}` : items.join("");
}
