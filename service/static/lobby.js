// A room's lobby: the link to share, the seats (people and AI players), the host's buttons (add an
// AI, each AI's level or all of them at once, remove a seat, start). The server holds the room (service/play/rooms.py); this
// view renders its `lobby` frames and sends the host's requests on the lobby socket.

import { el, toast, nameProblem } from "./ui.js";

const GAMES = { kontour: "Kontour", pictomania: "Pictomania" };
const LEVELS = { easy: "Facile", normal: "Normal", hard: "Difficile" };
const ERRORS = {
  room_full: "Toutes les places de ce salon sont prises.",
  not_host: "Seul l'hôte peut changer les places ou lancer la partie.",
  bad_seats: "Pas assez de joueurs pour ce jeu\u00a0: ajoutez une IA ou attendez vos amis.",
  bad_name: "Ce nom n'est pas accepté (1 à 24 caractères, sans < > & \").",
  name_taken: "Ce nom est déjà pris dans ce salon\u00a0: choisissez-en un autre.",
  starting: "La partie est en train de démarrer…",
  bad_seat: "Cette place ne peut pas être retirée ni changer de niveau.",
  bad_level: "Ce niveau d'IA n'existe pas.",
  cannot_start: "Le serveur ne peut pas lancer la partie pour l'instant\u00a0: réessayez dans un moment.",
  rate_limited: "Doucement\u00a0! Trop de messages.",
  removed: "L'hôte vous a retiré du salon.",
};
// Whether a name is one already taken (the server's rule: case and spaces aside).
const folded = (name) => name.toLocaleLowerCase("fr").split(/\s+/).filter(Boolean).join(" ");

export function lobbyError(frame) {
  return ERRORS[frame.code] || frame.message || "Erreur";
}

export class LobbyView {
  constructor(root, send, leave) {
    this.send = send;
    this.leave = leave;
    this.box = el("section", { class: "panel lobby", "data-testid": "lobby" });
    root.replaceChildren(this.box);
  }

  update(frame) {
    this.you = frame.you;
    const host = frame.you === frame.host;
    const hostSeat = frame.seats.find((s) => s.seat === frame.host);
    const link = `${location.origin}/r/${frame.code}`;
    const people = frame.seats.filter((s) => s.person).length;
    const seats = frame.seats.map((s) => el("li", { class: `seat ${s.person ? "person" : "ai"}`, "data-seat": s.seat },
      el("span", { class: "seat-name" }, s.seat === frame.you ? `${s.name} (vous)` : s.name),
      s.person ? el("small", { class: s.here ? "online" : "offline" },
        `${s.seat === frame.host ? "hôte · " : ""}${s.here ? "en ligne" : "hors ligne"}`)
        : host ? el("label", { class: "seat-level" }, el("small", {}, "IA, niveau"),
          levelChoice(frame.levels, s.level, `Niveau de ${s.name}`,
            (level) => this.send({ type: "level", seat: s.seat, level })))
          : el("small", {}, `IA, niveau ${(LEVELS[s.level] || s.level).toLowerCase()}`),
      host && s.seat !== frame.host
        ? el("button", { type: "button", class: "remove", "aria-label": `Retirer ${s.name}`,
          onclick: () => this.send({ type: "remove", seat: s.seat }) }, "Retirer")
        : null));
    const enough = frame.seats.length >= frame.min;
    const tools = host ? el("div", { class: "lobby-tools" },
      el("button", { type: "button", id: "add-ai", disabled: frame.seats.length >= frame.max,
        onclick: () => this.send({ type: "add_ai" }) }, "Ajouter une IA"),
      el("label", {}, "Toutes les IA au niveau ",
        levelChoice(frame.levels, frame.level, "Niveau de toutes les IA",
          (level) => this.send({ type: "level", level }), "ai-level")),
      el("button", { type: "button", class: "primary", id: "start-room", disabled: !enough,
        onclick: () => this.send({ type: "start" }) }, "Lancer la partie"))
      : el("p", { class: "small", "data-testid": "host-hint" }, hostSeat && !hostSeat.here
        ? `${hostSeat.name} n'est plus en ligne\u00a0: sans retour d'ici peu, la personne suivante de la liste lancera la partie.`
        : `${hostSeat ? hostSeat.name : "L'hôte"} lancera la partie quand tout le monde sera là.`);
    this.box.replaceChildren(...[
      el("h2", {}, `${GAMES[frame.game] || frame.game} entre amis`),
      el("p", { class: "room-code" }, "Code du salon\u00a0: ", el("b", { "data-testid": "room-code" }, frame.code)),
      el("div", { class: "share" },
        el("input", { readonly: true, value: link, "aria-label": "lien du salon", id: "room-link" }),
        el("button", { type: "button", onclick: () => copy(link) }, "Copier le lien")),
      el("h3", {}, `Joueurs (${frame.seats.length} / ${frame.max}, ${frame.min} au moins)`),
      el("ul", { class: "seats" }, seats),
      people === 1 && host ? el("p", { class: "small" }, "Envoyez le lien à vos amis, ou dictez-leur le code\u00a0: ils le tapent sur la page d'accueil, puis choisissent un nom.") : null,
      tools,
      el("div", { class: "actions" },
        el("button", { type: "button", id: "leave-room", onclick: () => this.leave() },
          host ? "Fermer le salon" : "Quitter le salon"))].filter(Boolean));
  }

  close() {}
}

// A choice among the AI levels; `pick(level)` when another is chosen.
function levelChoice(levels, current, label, pick, id = undefined) {
  return el("select", { id, "aria-label": label, onchange: (e) => pick(e.target.value) },
    levels.map((l) => el("option", { value: l, selected: l === current }, LEVELS[l] || l)));
}

// The form of a person who opens a room's link (or types its code): the room as the server showed
// it (`preview`: its game, its host, the names taken), then their name. Returns `{refused(message)}`:
// a name the server refused is asked again, the form kept as typed.
export function joinForm(root, code, preview, join) {
  const kept = document.querySelector("#join-room input[name=name]"); // a reconnect keeps what was typed
  const input = el("input", { name: "name", required: true, autocomplete: "nickname",
    value: kept ? kept.value : localStorage.getItem("griffon.name") || "" });
  const error = el("p", { class: "error", role: "alert", hidden: true });
  const button = el("button", { type: "submit", class: "primary" }, "Rejoindre");
  const refused = (message) => {
    error.hidden = false;
    error.textContent = message;
    button.disabled = false;
    input.focus();
  };
  const taken = new Set((preview.names || []).map(folded));
  const form = el("form", { class: "panel lobby", id: "join-room", onsubmit: (e) => {
    e.preventDefault();
    const name = input.value.trim();
    if (!name) return;
    const problem = nameProblem(name); // too long (never cut silently), or a refused character
    if (problem) { refused(problem); return; }
    if (taken.has(folded(name))) { refused(ERRORS.name_taken); return; }
    try { localStorage.setItem("griffon.name", name); } catch { /* storage off */ }
    button.disabled = true;
    join(name);
  } },
  el("h2", {}, `Rejoindre la partie de ${preview.host}`),
  el("p", {}, `${GAMES[preview.game] || preview.game} · salon `, el("b", {}, code),
    ` · déjà là\u00a0: ${preview.names.join(", ")}`),
  el("label", {}, "Votre nom, que verront les autres ", input),
  error,
  el("div", { class: "actions" }, button));
  root.replaceChildren(form);
  input.focus();
  return { refused };
}

async function copy(text) {
  try {
    await navigator.clipboard.writeText(text);
    toast("Lien copié.", "good");
  } catch {
    const field = document.getElementById("room-link");
    field.select();
    toast("Copiez le lien sélectionné.");
  }
}
