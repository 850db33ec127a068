// Pictomania: six cards on the table, everybody draws a secret word and bets numbered guess
// cards on the others' drawings at the same time; bonus tokens for finishing; 5 scored rounds.

import { el, toast, once, Countdown, seconds, plural, winnersText, seatBadge, againHint } from "./ui.js";
import { Board, replay, recapPicture, download } from "./board.js";
import { play } from "./sound.js";

const SVG = "http://www.w3.org/2000/svg";
const SHAPES = [ // one symbol per card slot, drawn in a 20x20 box
  ["circle", { cx: 10, cy: 10, r: 8 }],
  ["rect", { x: 3, y: 3, width: 14, height: 14 }],
  ["polygon", { points: "10,2 18,17 2,17" }],
  ["polygon", { points: "10,1 19,10 10,19 1,10" }],
  ["polygon", { points: "10,1 12.6,7.4 19.5,7.6 14,11.9 16,18.6 10,14.6 4,18.6 6,11.9 0.5,7.6 7.4,7.4" }],
  ["polygon", { points: "7,2 13,2 13,7 18,7 18,13 13,13 13,18 7,18 7,13 2,13 2,7 7,7" }],
];
const SIDEWAYS_PHONE = window.matchMedia("(max-height: 500px) and (orientation: landscape)");
const CONFIRM_MS = 3000; // « Effacer tout ? » waits this long for the second tap
const DONE_CONFIRM_MS = 5000; // « J'ai fini » with bets not placed waits this long for the second tap
const SYMBOL_NAMES = ["rond", "carré", "triangle", "losange", "étoile", "croix"];

function signed(n) {
  return n > 0 ? `+${n}` : n < 0 ? `−${-n}` : "0";
}

function number(n) { // a true minus sign, as in the rest of the page
  return n < 0 ? `−${-n}` : String(n);
}

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
  constructor(root, send, leave, rematch = null) {
    this.kind = "pictomania";
    this.send = send;
    this.leave = leave;
    this.rematch = rematch;
    this.timer = new Countdown();
    this.minis = new Map();
    this.roundNumber = null;
    this.clearAsked = -Infinity; // when « Effacer » was tapped once (it asks before clearing)
    this.doneAsked = -Infinity; // when « J'ai fini » was tapped once with bets not placed yet
    this.seats = {}; // a room's people: here, away or played by an AI (app.js's presence)
    this.shownRecap = null;  // which recap the results screen shows (its key)
    this.title = el("div", { class: "status" });
    this.secret = el("div", { class: "secret", "data-testid": "secret" });
    this.clock = el("div", { class: "clock", "data-testid": "timer" });
    this.bar = el("div", { class: "bar" }, el("span"));
    const canvas = el("canvas", { id: "board", "aria-label": "votre dessin" });
    this.tools = el("div", { class: "draw-tools" });
    this.overlay = el("div", { class: "overlay results", hidden: true });
    this.controls = el("div", { class: "controls" });
    this.cards = el("div", { class: "cards" });
    this.opponents = el("div", { class: "opponents" });
    this.scores = el("ol", { class: "scores" });
    this.layout = el("div", { class: "layout pictomania" },
      el("div", { class: "stage" },
        el("div", { class: "topline" }, this.title, this.secret, this.clock),
        this.bar,
        el("div", { class: "board-wrap" }, canvas, this.tools),
        this.controls),
      el("aside", { class: "side" },
        el("section", { class: "panel cards-panel" }, el("h3", {}, "Les cartes"), this.cards),
        el("section", { class: "panel scores-panel" }, el("h3", {}, "Scores"), this.scores)),
      el("section", { class: "panel wide opponents-panel" },
        el("h3", {}, "Adversaires\u00a0: misez un numéro"), this.opponents),
      this.overlay);
    root.replaceChildren(this.layout);
    this.board = new Board(canvas, { mode: "free", width: 3, onStroke: (points) => this.send({ kind: "stroke", points }) });
    this.ticker = setInterval(() => this.tickClock(), 200);
    this.turned = () => { // turned on its side during the recap: fold the points
      const details = this.overlay.querySelector(".score-details");
      if (details && SIDEWAYS_PHONE.matches) details.open = false;
    };
    SIDEWAYS_PHONE.addEventListener("change", this.turned);
  }

  close() {
    clearInterval(this.ticker);
    SIDEWAYS_PHONE.removeEventListener("change", this.turned);
  }

  // « Rejouer » given or taken (a room's host gone: `handOver` in app.js): the end screen again.
  setRematch(rematch) {
    this.rematch = rematch;
    if (this.frame && this.shownRecap) {
      this.shownRecap = null;
      this.renderResults(this.frame.state, this.frame.you);
    }
  }

  setSeats(seats) {
    this.seats = seats || {};
    if (this.frame) { this.renderScores(this.frame.state); this.renderOpponents(this.frame.state, this.frame.you, this.frame.state.phase === "playing", this.frame.state.round.done.includes(this.frame.you)); }
  }

  name(p) { return p === this.frame.you ? "Vous" : (this.frame.names[p] || p); }
  fr(key) { return (key && this.frame.fr[key]) || key || "?"; }

  update(frame) {
    this.frame = frame;
    for (const e of frame.events) this.event(e, frame.you);
    this.timer.set(frame.time_left, frame.config.round_timer_s);
    this.render();
  }

  render() {
    const st = this.frame.state;
    const rnd = st.round;
    const me = this.frame.you;
    if (rnd.number !== this.roundNumber) {
      this.roundNumber = rnd.number;
      this.minis.clear();
      this.opponents.replaceChildren();
    }
    this.layout.style.setProperty("--opps", String(st.players.length - 1));
    this.layout.dataset.opps = String(st.players.length - 1);
    const playing = st.phase === "playing";
    const done = rnd.done.includes(me);
    this.board.setLines(rnd.drawings[me] || [], false);
    this.board.setEnabled(playing && !done);
    this.title.textContent = `Manche ${rnd.number} / ${this.frame.config.rounds}`;
    const secret = rnd.secrets[me];
    this.secret.replaceChildren(...(secret
      ? [el("span", { class: "label" }, "Votre mot\u00a0: "), symbol(secret.symbol), el("b", {}, ` ${secret.number} · `),
        el("b", { class: "word" }, this.fr(rnd.cards[secret.symbol].words[secret.number - 1]))]
      : []));
    this.renderTools(rnd, playing, done);
    this.renderControls(rnd, playing, done);
    this.renderCards(rnd, secret);
    this.renderOpponents(st, me, playing, done);
    this.renderScores(st);
    this.renderResults(st, me);
    this.tickClock();
  }

  event(e, me) {
    if (e.kind === "bonus_taken" && e.player !== me) toast(`${this.name(e.player)} a fini (jeton ${e.value}).`);
    if (e.kind === "round_started" && e.number > 1) toast(`Manche ${e.number}\u00a0!`, "good");
    if (e.kind === "round_scored") { // a bet of mine that was right: found; else the round's end
      const right = Object.values(e.result.outcomes).some((list) => list.some((o) => o.guesser === me && o.correct));
      play(right ? "found" : "end");
    }
  }

  error() {
    this.board.clearPending();
    if (this.frame) this.render(); // re-enables a button pressed for a refused move
  }

  tickClock() {
    if (!this.frame) return;
    const playing = this.frame.state.phase === "playing";
    const left = this.timer.left();
    this.clock.textContent = playing ? seconds(left) : "";
    const whole = Math.ceil(left);
    if (playing && whole <= 5 && whole > 0 && whole !== this.ticked) play("tick");
    this.ticked = whole;
    this.clock.classList.toggle("urgent", playing && left < 15);
    this.bar.firstChild.style.width = `${playing ? this.timer.share() * 100 : 0}%`;
  }

  // « Annuler » takes back the last stroke, « Effacer » the whole drawing (the canvas redraws
  // from the state the server sends back).
  renderTools(rnd, playing, done) {
    const strokes = (rnd.drawings[this.frame.you] || []).length;
    const off = !playing || done || strokes === 0;
    this.tools.replaceChildren(
      once({ id: "undo", class: "tool", disabled: off, title: "annuler le dernier trait" },
        () => this.send({ kind: "undo" }), "Annuler"),
      this.clearButton(off));
    this.tools.hidden = !playing || done;
    this.tools.dataset.strokes = String(strokes);
  }

  // « Effacer » asks first: a first tap turns it into « Effacer tout ? », a second one within
  // CONFIRM_MS clears the drawing (there is no way back); otherwise it turns back.
  clearButton(off) {
    const asking = performance.now() - this.clearAsked < CONFIRM_MS;
    const button = el("button", { id: "clear", class: `tool${asking ? " confirm" : ""}`, disabled: off,
      title: "effacer tout le dessin", onclick: (event) => {
        if (event.detail > 1) return;
        if (performance.now() - this.clearAsked < CONFIRM_MS) {
          this.clearAsked = -Infinity;
          button.disabled = true;
          this.send({ kind: "clear" });
          return;
        }
        this.clearAsked = performance.now();
        button.replaceWith(this.clearButton(off));
        setTimeout(() => { if (this.frame) this.render(); }, CONFIRM_MS + 50);
      } }, asking ? "Effacer tout\u00a0?" : "Effacer");
    return button;
  }

  // « J'ai fini » ends the person's drawing *and* their bets (the rules: no further action). With
  // drawings still without their bet, it asks first: « Sans miser sur 2 dessins ? Confirmer »,
  // a second tap within DONE_CONFIRM_MS.
  renderControls(rnd, playing, done) {
    const me = this.frame.you;
    const next = rnd.bonus_left[0];
    const tokens = rnd.bonus_left.map((v) => el("span", { class: "token" }, v));
    const unbet = this.frame.state.players.filter((p) => p !== me &&
      !(rnd.stacks[p] || []).some((c) => c.guesser === me)).length;
    const asking = performance.now() - this.doneAsked < DONE_CONFIRM_MS && !done;
    const label = done ? `Fini (jeton\u00a0${rnd.bonus[me]})`
      : asking ? `Sans miser sur ${plural(unbet, "dessin")}\u00a0? Confirmer`
        : `J'ai fini${next !== undefined ? `\u00a0: jeton\u00a0${next}` : ""}`;
    const button = el("button", { class: `primary${asking ? " confirm" : ""}`, id: "done",
      disabled: !playing || done || next === undefined, title: "finir de dessiner et de miser",
      onclick: (event) => {
        if (event.detail > 1) return;
        if (unbet > 0 && !(performance.now() - this.doneAsked < DONE_CONFIRM_MS)) {
          this.doneAsked = performance.now();
          toast(`Après «\u00a0J'ai fini\u00a0», vous ne pourrez plus miser\u00a0: ${plural(unbet, "dessin")} sans votre mise.`);
          this.render();
          setTimeout(() => { if (this.frame) this.render(); }, DONE_CONFIRM_MS + 50);
          return;
        }
        this.doneAsked = -Infinity;
        button.disabled = true;
        this.send({ kind: "done" });
      } }, label);
    const onMine = (rnd.stacks[me] || []).length;
    this.controls.replaceChildren(button, el("span", { class: "tokens", title: "jetons bonus restants" }, el("span", { class: "label" }, "Bonus\u00a0: "), ...tokens),
      el("span", { class: "small on-mine" }, `${plural(onMine, "mise")} sur votre dessin`));
  }

  renderCards(rnd, secret) {
    const cards = rnd.cards.map((card, i) => el("div", { class: "card" },
      el("div", { class: "card-head", title: SYMBOL_NAMES[i] || "" }, symbol(i),
        el("span", { class: "theme" }, card.theme || SYMBOL_NAMES[i] || "")),
      el("ol", {}, ...card.words.map((w, n) => el("li", {
        class: secret && secret.symbol === i && secret.number === n + 1 ? "mine" : "", title: this.fr(w),
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
        this.opponents.append(el("div", { class: "opponent", "data-player": p }, canvas, info, picks));
        this.minis.set(p, { board: new Board(canvas, { mode: "view", width: 4 }), info, picks });
      }
      const mini = this.minis.get(p);
      mini.board.setLines(rnd.drawings[p] || [], true);
      const stack = rnd.stacks[p] || [];
      const mine = stack.find((c) => c.guesser === me);
      const bonus = rnd.bonus[p];
      mini.info.replaceChildren(...[el("b", { class: "name" }, this.name(p)), seatBadge(this.seats[p])].filter(Boolean),
        el("span", { class: "small" }, ` · ${plural(stack.length, "mise")}`),
        ...(bonus ? [el("span", { class: "badge fini" }, `fini\u00a0·\u00a0${bonus}`)] : []));
      if (mine) {
        mini.picks.replaceChildren(el("span", { class: "bet" }, "Votre mise\u00a0: ", el("b", {}, mine.number ?? "?")));
      } else if (playing && !done) {
        mini.picks.replaceChildren(...[1, 2, 3, 4, 5, 6, 7].map((n) => once({
          class: "pick", disabled: used.has(n), "data-number": n, "aria-label": `miser ${n} sur ${this.name(p)}`,
        }, () => this.send({ kind: "guess", target: p, number: n }), n)));
      } else {
        mini.picks.replaceChildren(el("span", { class: "small" }, "pas de mise"));
      }
    }
  }

  renderScores(st) {
    const rows = st.players.map((p) => el("li", { "data-player": p }, el("span", { class: "who" }, this.name(p), seatBadge(this.seats[p])),
      el("b", {}, number(st.totals[p]))));
    this.scores.replaceChildren(...rows);
  }

  renderResults(st, me) {
    const result = st.results[st.results.length - 1];
    const show = st.phase !== "playing" && result && result.number === st.round.number;
    this.overlay.hidden = !show;
    if (!show) { this.shownRecap = null; return; }
    const over = st.phase === "game_over";
    const chosen = over && this.chosenRound ? this.chosenRound : result.number;
    const key = `${st.phase}:${chosen}`;
    if (this.shownRecap === key) return; // built once: the mini boards keep their canvases
    this.shownRecap = key;
    const shown = st.results.find((r) => r.number === chosen) || result;
    const parts = over ? this.summary(st, me) : [
      el("h2", {}, `Manche ${result.number}\u00a0: résultats`),
      el("p", { class: "small" }, result.reason === "time"
        ? "Fin de manche\u00a0: temps écoulé." : "Fin de manche\u00a0: tous les jetons bonus sont pris."),
    ];
    if (over && st.results.length > 1) {
      parts.push(el("div", { class: "tabs round-tabs", role: "tablist" }, ...st.results.map((r) => el("button", {
        type: "button", role: "tab", class: "tab", "aria-selected": String(r.number === chosen),
        onclick: () => { this.chosenRound = r.number; this.renderResults(this.frame.state, me); },
      }, `Manche ${r.number}`))));
    }
    parts.push(this.myBets(shown, st, me), this.recap(shown, st, me), this.table(shown, st, me, !over));
    parts.push(over
      ? el("div", { class: "end-actions" },
        this.rematch ? el("button", { class: "primary", id: "rematch", onclick: () => this.rematch() }, "Rejouer") : null,
        el("button", { class: this.rematch ? "" : "primary", onclick: () => this.leave() }, "Nouvelle partie"),
        againHint({ ...this.frame, seats: this.seats || this.frame.seats }, this.rematch))
      : el("div", { class: "end-actions" },
        once({ class: "primary", id: "next-round" }, () => this.send({ kind: "next_round" }), "Manche suivante")));
    this.overlay.replaceChildren(el("div", { class: "results-box", "data-testid": "results" }, ...parts));
  }

  // The end of the game: the winner and every round's score.
  summary(st, me) {
    const ranking = [...st.players].sort((a, b) => st.totals[b] - st.totals[a]);
    return [
      el("h2", {}, st.winners.includes(me) ? "Victoire\u00a0!" : "Fin de partie"),
      el("p", { class: "winners" }, winnersText(st.winners, me, (p) => this.name(p))),
      el("table", { class: "summary", "data-testid": "summary" },
        el("thead", {}, el("tr", {}, el("th", {}, "Joueur"),
          ...st.results.map((r) => el("th", { class: "score" }, `M${r.number}`)), el("th", { class: "score" }, "Total"))),
        el("tbody", {}, ...ranking.map((p) => el("tr", { class: p === me ? "me" : "" },
          el("td", {}, this.name(p), st.winners.includes(p) ? el("span", { class: "star", title: "gagnant" }, " ★") : ""),
          ...st.results.map((r) => el("td", { class: "score" }, signed(r.score[p]))),
          el("td", { class: "score total" }, number(st.totals[p])))))),
    ];
  }

  // The person's own bets of a round, right or wrong.
  myBets(result, st, me) {
    const bets = [];
    for (const p of st.players) {
      for (const o of result.outcomes[p]) {
        if (o.guesser !== me) continue;
        bets.push(el("span", { class: `outcome ${o.correct ? "right" : "wrong"}` },
          `${o.number}\u00a0sur ${this.name(p)}\u00a0${o.correct ? `✓\u00a0+${o.token}` : "✗"}`));
      }
    }
    return el("p", { class: "my-bets" }, el("b", {}, "Vos mises\u00a0: "),
      ...(bets.length ? bets : [el("span", { class: "small" }, "aucune")]));
  }

  // Every drawing of a round with its word and the bets placed on it, in order. The drawings
  // come with the round's result from the server (a reload or another device shows them too).
  recap(result, st, me) {
    const boards = [];
    const items = st.players.map((p) => {
      const secret = result.secrets[p];
      const outcomes = result.outcomes[p];
      let canvas = null;
      if (result.drawings) {
        canvas = el("canvas", { class: "mini", title: "revoir ce dessin trait par trait" });
        const board = new Board(canvas, { mode: "view", width: 4 });
        const lines = result.drawings[p] || [];
        board.setLines(lines, false);
        canvas.dataset.shown = String(lines.length);
        canvas.addEventListener("click", () => replay(board, lines));
        boards.push([board, lines]);
      }
      return el("div", { class: `recap-item${p === me ? " me" : ""}`, "data-player": p },
        el("div", { class: "recap-head" }, el("b", {}, this.name(p)),
          result.black_sheep === p ? el("span", { class: "badge sheep", title: "le plus de mauvaises mises" }, "mouton noir") : null),
        canvas || el("div", { class: "no-drawing small" }, "dessin non conservé"),
        el("div", { class: "recap-word" }, symbol(secret.symbol), el("b", {}, ` ${secret.number} · `),
          el("span", {}, this.fr(result.words[p]))),
        el("ul", { class: "outcomes" }, ...(outcomes.length ? outcomes.map((o) => el("li", {
          class: `outcome ${o.correct ? "right" : "wrong"}`, "data-guesser": o.guesser,
        }, `${this.name(o.guesser)}\u00a0: ${o.number}\u00a0`, o.correct ? `✓\u00a0+${o.token}` : "✗")) : [el("li", { class: "small" }, "aucune mise")])));
    });
    const tools = result.drawings ? el("div", { class: "recap-tools" },
      el("button", { type: "button", id: "replay", onclick: () => boards.forEach(([b, lines]) => replay(b, lines)) },
        "▶ Revoir les dessins"),
      el("button", { type: "button", id: "picture", onclick: () => this.savePicture(result, st) },
        "Enregistrer l'image")) : null;
    return el("div", { class: "recap-block" }, tools,
      el("div", { class: "recap", "data-testid": "recap" }, ...items));
  }

  // The round's drawings with their names and words as one PNG, downloaded (to share).
  savePicture(result, st) {
    const items = st.players.map((p) => ({
      title: this.frame.names[p] || p,
      caption: `${result.secrets[p].number} · ${this.fr(result.words[p])}`,
      lines: (result.drawings && result.drawings[p]) || [],
    }));
    download(recapPicture(`Griffon · Pictomania · manche ${result.number}`, items),
      `griffon-pictomania-manche-${result.number}.png`);
  }

  table(result, st, me, withTotal) {
    const head = el("tr", {}, ...["Joueur", "Jetons gagnés", "Bonus", "Jetons non pris", "Manche",
      ...(withTotal ? ["Total"] : [])].map((t) => el("th", {}, t)));
    const rows = st.players.map((p) => {
      const bonus = result.bonus_points[p];
      const taken = result.bonus[p];
      const bonusText = bonus > 0 ? `+${bonus}` : bonus < 0 ? `−${-bonus} (mouton noir)`
        : taken ? `0 (jeton ${taken} perdu\u00a0: personne n'a deviné)` : "0";
      return el("tr", { class: p === me ? "me" : "" },
        el("td", {}, this.name(p)),
        el("td", {}, result.tokens_won[p].join(" + ") || "0"),
        el("td", {}, bonusText),
        el("td", {}, result.penalty[p] ? `−${result.penalty[p]}` : "0"),
        el("td", { class: "score" }, signed(result.score[p])),
        withTotal ? el("td", { class: "score" }, number(st.totals[p])) : null);
    });
    const open = withTotal && !SIDEWAYS_PHONE.matches; // a phone on its side: the drawings first, the points a tap away
    return el("details", { class: "score-details", open: open || null },
      el("summary", {}, "Le détail des points"),
      el("table", {}, el("thead", {}, head), el("tbody", {}, ...rows)));
  }
}
