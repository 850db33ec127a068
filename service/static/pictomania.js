// Pictomania: six cards on the table, everybody draws a secret word and bets numbered guess
// cards on the others' drawings at the same time; bonus tokens for finishing; 5 scored rounds.

import { el, toast, Countdown, seconds, plural } from "./ui.js";
import { Board } from "./board.js";

const SVG = "http://www.w3.org/2000/svg";
const SHAPES = [ // one symbol per card slot, drawn in a 20x20 box
  ["circle", { cx: 10, cy: 10, r: 8 }],
  ["rect", { x: 3, y: 3, width: 14, height: 14 }],
  ["polygon", { points: "10,2 18,17 2,17" }],
  ["polygon", { points: "10,1 19,10 10,19 1,10" }],
  ["polygon", { points: "10,1 12.6,7.4 19.5,7.6 14,11.9 16,18.6 10,14.6 4,18.6 6,11.9 0.5,7.6 7.4,7.4" }],
  ["polygon", { points: "7,2 13,2 13,7 18,7 18,13 13,13 13,18 7,18 7,13 2,13 2,7 7,7" }],
];
const SYMBOL_NAMES = ["rond", "carré", "triangle", "losange", "étoile", "croix"];

function symbol(i) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 20 20");
  svg.setAttribute("class", `symbol s${i}`);
  const [tag, attrs] = SHAPES[i % SHAPES.length];
  const shape = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) shape.setAttribute(k, v);
  svg.append(shape);
  return svg;
}

export class PictomaniaView {
  constructor(root, send, leave) {
    this.kind = "pictomania";
    this.send = send;
    this.leave = leave;
    this.timer = new Countdown();
    this.minis = new Map();
    this.roundNumber = null;
    this.title = el("div", { class: "status" });
    this.secret = el("div", { class: "secret", "data-testid": "secret" });
    this.clock = el("div", { class: "clock", "data-testid": "timer" });
    this.bar = el("div", { class: "bar" }, el("span"));
    const canvas = el("canvas", { id: "board", "aria-label": "votre dessin" });
    this.overlay = el("div", { class: "overlay results", hidden: true });
    this.controls = el("div", { class: "controls" });
    this.cards = el("div", { class: "cards" });
    this.opponents = el("div", { class: "opponents" });
    this.scores = el("ol", { class: "scores" });
    root.replaceChildren(el("div", { class: "layout pictomania" },
      el("div", { class: "stage" },
        el("div", { class: "topline" }, this.title, this.secret, this.clock),
        this.bar,
        el("div", { class: "board-wrap" }, canvas),
        this.controls),
      el("aside", { class: "side" },
        el("section", { class: "panel" }, el("h3", {}, "Les cartes"), this.cards),
        el("section", { class: "panel" }, el("h3", {}, "Scores"), this.scores)),
      el("section", { class: "panel wide" }, el("h3", {}, "Les dessins des adversaires — misez un numéro"),
        this.opponents),
      this.overlay));
    this.board = new Board(canvas, { mode: "free", width: 3, onStroke: (points) => this.send({ kind: "stroke", points }) });
    this.ticker = setInterval(() => this.tickClock(), 200);
  }

  close() { clearInterval(this.ticker); }

  name(p) { return p === this.frame.you ? "Vous" : (this.frame.names[p] || p); }
  fr(key) { return (key && this.frame.fr[key]) || key || "?"; }

  update(frame) {
    this.frame = frame;
    const st = frame.state;
    const rnd = st.round;
    const me = frame.you;
    for (const e of frame.events) this.event(e, me);
    if (rnd.number !== this.roundNumber) {
      this.roundNumber = rnd.number;
      this.minis.clear();
      this.opponents.replaceChildren();
    }
    const playing = st.phase === "playing";
    const done = rnd.done.includes(me);
    this.timer.set(frame.time_left, frame.config.round_timer_s);
    this.board.setLines(rnd.drawings[me] || [], false);
    this.board.setEnabled(playing && !done);
    this.title.textContent = `Manche ${rnd.number} / ${frame.config.rounds}`;
    const secret = rnd.secrets[me];
    this.secret.replaceChildren(...(secret
      ? [el("span", {}, "Votre mot : "), symbol(secret.symbol), el("b", {}, ` ${secret.number} · `),
        el("b", { class: "word" }, this.fr(rnd.cards[secret.symbol].words[secret.number - 1]))]
      : []));
    this.renderControls(rnd, playing, done);
    this.renderCards(rnd, secret);
    this.renderOpponents(st, me, playing, done);
    this.renderScores(st);
    this.renderResults(st, me);
    this.tickClock();
  }

  event(e, me) {
    if (e.kind === "bonus_taken" && e.player !== me) toast(`${this.name(e.player)} a fini (jeton ${e.value}).`);
    if (e.kind === "round_started" && e.number > 1) toast(`Manche ${e.number} !`, "good");
  }

  error() { this.board.clearPending(); }

  tickClock() {
    if (!this.frame) return;
    const playing = this.frame.state.phase === "playing";
    const left = this.timer.left();
    this.clock.textContent = playing ? seconds(left) : "";
    this.clock.classList.toggle("urgent", playing && left < 15);
    this.bar.firstChild.style.width = `${playing ? this.timer.share() * 100 : 0}%`;
  }

  renderControls(rnd, playing, done) {
    const next = rnd.bonus_left[0];
    const tokens = rnd.bonus_left.map((v) => el("span", { class: "token" }, v));
    const button = el("button", { class: "primary", id: "done", disabled: !playing || done || next === undefined,
      onclick: () => this.send({ kind: "done" }) },
      done ? `Fini (jeton ${rnd.bonus[this.frame.you]})` : `J'ai fini${next !== undefined ? ` : jeton ${next}` : ""}`);
    this.controls.replaceChildren(button, el("span", { class: "tokens" }, "Jetons bonus : ", ...tokens));
  }

  renderCards(rnd, secret) {
    const cards = rnd.cards.map((card, i) => el("div", { class: "card" },
      el("div", { class: "card-head" }, symbol(i), el("span", {}, SYMBOL_NAMES[i] || "")),
      el("ol", {}, ...card.words.map((w, n) => el("li", {
        class: secret && secret.symbol === i && secret.number === n + 1 ? "mine" : "",
      }, el("b", {}, n + 1), " ", this.fr(w))))));
    this.cards.replaceChildren(...cards);
  }

  renderOpponents(st, me, playing, done) {
    const rnd = st.round;
    const used = new Set();
    for (const stack of Object.values(rnd.stacks)) {
      for (const c of stack) if (c.guesser === me && c.number !== null) used.add(c.number);
    }
    for (const p of st.players.filter((q) => q !== me)) {
      if (!this.minis.has(p)) {
        const canvas = el("canvas", { class: "mini", "data-player": p });
        const info = el("div", { class: "opp-info" });
        const picks = el("div", { class: "picks" });
        this.opponents.append(el("div", { class: "opponent", "data-player": p }, info, canvas, picks));
        this.minis.set(p, { board: new Board(canvas, { mode: "view", width: 4 }), info, picks });
      }
      const mini = this.minis.get(p);
      mini.board.setLines(rnd.drawings[p] || [], true);
      const stack = rnd.stacks[p] || [];
      const mine = stack.find((c) => c.guesser === me);
      const bonus = rnd.bonus[p];
      mini.info.replaceChildren(el("span", {}, el("b", {}, this.name(p)),
        el("span", { class: "small" }, ` · ${plural(stack.length, "carte")}`),
        bonus ? el("span", { class: "badge fini" }, `fini · ${bonus}`) : null));
      if (mine) {
        mini.picks.replaceChildren(el("span", { class: "bet" }, "Votre mise : ", el("b", {}, mine.number ?? "?")));
      } else if (playing && !done) {
        mini.picks.replaceChildren(...[1, 2, 3, 4, 5, 6, 7].map((n) => el("button", {
          class: "pick", disabled: used.has(n), "data-number": n,
          onclick: () => this.send({ kind: "guess", target: p, number: n }),
        }, n)));
      } else {
        mini.picks.replaceChildren(el("span", { class: "small" }, "pas de mise"));
      }
    }
  }

  renderScores(st) {
    const rows = st.players.map((p) => el("li", {}, el("span", { class: "who" }, this.name(p)),
      el("b", {}, st.totals[p])));
    this.scores.replaceChildren(...rows);
  }

  renderResults(st, me) {
    const result = st.results[st.results.length - 1];
    const show = st.phase !== "playing" && result && result.number === st.round.number;
    this.overlay.hidden = !show;
    if (!show) return;
    const head = el("tr", {}, ...["Joueur", "Mot", "Bonnes mises reçues", "Jetons gagnés", "Bonus",
      "Pénalité", "Manche", "Total"].map((t) => el("th", {}, t)));
    const rows = st.players.map((p) => {
      const found = result.outcomes[p].filter((o) => o.correct).map((o) => this.name(o.guesser));
      const bonus = result.bonus_points[p];
      const sheep = result.black_sheep === p;
      return el("tr", { class: p === me ? "me" : "" },
        el("td", {}, this.name(p), sheep ? el("span", { class: "badge sheep" }, "mouton noir") : null),
        el("td", {}, `${result.secrets[p].number} · ${this.fr(result.words[p])}`),
        el("td", {}, found.join(", ") || "personne"),
        el("td", {}, result.tokens_won[p].join(" + ") || "0"),
        el("td", {}, bonus > 0 ? `+${bonus}` : String(bonus)),
        el("td", {}, result.penalty[p] ? `−${result.penalty[p]}` : "0"),
        el("td", { class: "score" }, result.score[p] > 0 ? `+${result.score[p]}` : String(result.score[p])),
        el("td", { class: "score" }, st.totals[p]));
    });
    const over = st.phase === "game_over";
    const winners = st.winners.map((p) => this.name(p)).join(", ");
    this.overlay.replaceChildren(el("div", { class: "results-box" },
      el("h2", {}, over ? (st.winners.includes(me) ? "Victoire !" : "Fin de partie") : `Manche ${result.number} : résultats`),
      over ? el("p", {}, `Gagnant : ${winners}`) : null,
      el("table", {}, el("thead", {}, head), el("tbody", {}, ...rows)),
      el("p", { class: "small" }, result.reason === "time" ? "Fin de manche : temps écoulé." : "Fin de manche : tous les jetons bonus sont pris."),
      over
        ? el("button", { class: "primary", onclick: () => this.leave() }, "Nouvelle partie")
        : el("button", { class: "primary", id: "next-round", onclick: () => this.send({ kind: "next_round" }) }, "Manche suivante")));
  }
}
