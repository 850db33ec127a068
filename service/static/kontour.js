// Kontour: the person draws with a snapping straight-line tool (15 lines, 30 s) while the AI
// players guess aloud, or guesses the AI's drawing by typing, with its « proche » / « hors sujet ».

import { el, toast, once, Countdown, seconds, plural, winnersText, listing, capital, seatBadge, againHint } from "./ui.js";
import { Board, replay } from "./board.js";
import { play } from "./sound.js";

const GESTURE_TEXT = { proche: "proche\u00a0!", hors_sujet: "hors sujet" };
// Focus the guess box when guessing starts, except on a phone: its keyboard would hide the drawing.
const FINE_POINTER = window.matchMedia("(pointer: fine)");
const autoFocus = () => FINE_POINTER.matches || window.innerWidth >= 700;

export class KontourView {
  constructor(root, send, leave, rematch = null) {
    this.kind = "kontour";
    this.send = send;
    this.leave = leave;
    this.rematch = rematch;
    this.timer = new Countdown();
    this.gestures = new Map(); // guess text -> gesture, this turn
    this.turnNumber = null;
    this.lastDrawing = []; // the segments of the latest turn, kept to show with its word
    this.wasGuessing = false;
    this.seats = {}; // a room's people: here, away or played by an AI (app.js's presence)
    this.myTurn = false; // this page's drawer turn began (the « your turn » sound, once)
    this.drawPressed = false; // « Piocher une carte » pressed here (else the card was taken for them)
    this.status = el("div", { class: "status" });
    this.clock = el("div", { class: "clock", "data-testid": "timer" });
    this.counter = el("div", { class: "counter", "data-testid": "lines" });
    this.bar = el("div", { class: "bar" }, el("span"));
    const canvas = el("canvas", { id: "board", "aria-label": "planche à dessin" });
    this.overlay = el("div", { class: "overlay", hidden: true });
    this.final = el("div", { class: "overlay results", hidden: true });
    this.controls = el("div", { class: "controls" });
    this.input = el("input", { id: "guess", placeholder: "Votre proposition…", maxlength: 80, autocomplete: "off" });
    this.form = el("form", { class: "guess-form", onsubmit: (e) => this.guess(e) },
      this.input, el("button", { type: "submit", class: "primary" }, "Proposer"));
    this.scores = el("ol", { class: "scores" });
    this.feed = el("ul", { class: "feed", id: "feed" });
    root.replaceChildren(el("div", { class: "layout kontour" },
      el("div", { class: "stage" },
        el("div", { class: "topline" }, this.status, this.counter, this.clock),
        this.bar,
        el("div", { class: "board-wrap" }, canvas, this.overlay),
        this.controls, this.form),
      el("aside", { class: "side" },
        el("section", { class: "panel scores-panel" }, el("h3", {}, "Scores"), this.scores),
        el("section", { class: "panel feed-panel" }, el("h3", {}, "Propositions"), this.feed)),
      this.final));
    this.board = new Board(canvas, { mode: "line", width: 4, onStroke: (points) => this.send({ kind: "stroke", points }) });
    this.ticker = setInterval(() => this.tickClock(), 200);
  }

  close() { clearInterval(this.ticker); }

  // « Rejouer » given or taken (a room's host gone: `handOver` in app.js): the end screen again.
  setRematch(rematch) {
    this.rematch = rematch;
    if (this.frame && this.final.dataset.shown) {
      delete this.final.dataset.shown;
      this.renderFinal(this.frame.state, this.frame.you);
    }
  }

  setSeats(seats) {
    this.seats = seats || {};
    if (this.frame) this.renderScores(this.frame.state, this.frame.state.turn ? this.frame.state.turn.drawer : this.frame.state.drawer);
  }

  // « Vous » for this browser's seat everywhere (a sentence uses « vous »), the others by name.
  name(p) { return p === this.frame.you ? "Vous" : (this.frame.names[p] || p); }
  fr(key) { return (key && this.frame.fr[key]) || key || "?"; }

  update(frame) {
    this.frame = frame;
    const turn = frame.state.turn;
    if (turn && turn.number !== this.turnNumber) {
      this.turnNumber = turn.number;
      this.gestures.clear();
    }
    const ended = frame.state.history[frame.state.history.length - 1];
    // The latest drawing: the turn's, else the last ended turn's (kept by the server: a reload
    // or another device shows it too).
    this.lastDrawing = turn ? turn.segments : (ended && ended.segments) || this.lastDrawing;
    for (const e of frame.events) this.event(e, frame.you);
    const drawPhase = frame.state.phase === "draw";
    this.timer.set(frame.time_left, drawPhase ? frame.config.draw_card_s : frame.config.timer_s);
    const mine = drawPhase && frame.state.drawer === frame.you;
    if (mine && !this.myTurn) play("turn"); // « à vous de dessiner »
    this.myTurn = mine;
    if (frame.state.phase !== "draw" && frame.state.phase !== "choose") this.drawPressed = false;
    this.render();
  }

  render() {
    const frame = this.frame;
    const st = frame.state;
    const turn = st.turn;
    const me = frame.you;
    const drawer = turn ? turn.drawer : st.drawer;
    const drawing = st.phase === "drawing";
    // Between turns the last drawing stays under its word.
    this.board.setLines(turn ? turn.segments : this.lastDrawing, drawer !== me);
    this.board.setEnabled(drawing && drawer === me);
    this.counter.textContent = turn ? `Traits\u00a0: ${turn.segments.length} / ${frame.config.max_strokes}` : "";
    const guessing = drawing && drawer !== me && !(turn.finders || []).includes(me) &&
      (!st.tied.length || st.tied.includes(me));
    this.form.hidden = !guessing;
    this.input.disabled = !guessing;
    if (guessing && !this.wasGuessing && autoFocus()) this.input.focus();
    this.wasGuessing = guessing;
    this.renderStatus(st, drawer, me);
    this.renderControls(st, drawer, me);
    this.renderOverlay(st, drawer, me);
    this.renderScores(st, drawer);
    this.renderFeed(st, drawer, me);
    this.tickClock();
  }

  event(e, me) {
    if (e.kind === "gesture_made") {
      if (e.about) this.gestures.set(e.about, e.gesture);
      if (e.drawer !== me) toast(`${this.name(e.drawer)}\u00a0: «\u00a0${GESTURE_TEXT[e.gesture] || e.gesture}\u00a0»`);
    } else if (e.kind === "points_scored" && e.player === me) {
      toast(`+${plural(e.points, "point")} pour vous\u00a0!`, "good");
      play("found");
    } else if (e.kind === "guess_made" && e.player === me && !e.accepted) {
      toast(`«\u00a0${e.text}\u00a0»\u00a0: non`, "error");
      play("wrong");
    } else if (e.kind === "game_ended") {
      play("end");
    } else if (e.kind === "tiebreak_started") {
      toast("Égalité\u00a0! Tour décisif.", "good");
    } else if (e.kind === "turn_started" && e.drawer === me && !this.drawPressed) {
      toast("Temps écoulé\u00a0: la carte a été piochée pour vous. Choisissez votre mot.");
    } else if (e.kind === "stroke_added" && e.merged_into !== null && e.drawer === me) {
      toast("Prolongement\u00a0: ce trait ne compte pas.");
    }
  }

  error() {
    this.board.clearPending();
    if (this.frame) this.render(); // re-enables a button pressed for a refused move
  }

  guess(event) {
    event.preventDefault();
    const text = this.input.value.trim();
    if (text) this.send({ kind: "guess", text });
    this.input.value = "";
    this.input.focus();
  }

  // The turn's sand timer; before it, the draw phase's clock (a person drawer's card is taken for
  // them when it runs out: the table never waits for ever).
  tickClock() {
    if (!this.frame) return;
    const st = this.frame.state;
    const timed = Boolean(st.turn) || (st.phase === "draw" && this.frame.time_left > 0);
    const left = timed ? this.timer.left() : 0;
    this.clock.textContent = timed ? seconds(left) : "";
    const whole = Math.ceil(left);
    if (timed && st.phase === "drawing" && whole <= 5 && whole > 0 && whole !== this.ticked) play("tick");
    this.ticked = whole;
    this.clock.classList.toggle("urgent", timed && left < 6);
    this.bar.firstChild.style.width = `${timed ? this.timer.share() * 100 : 0}%`;
  }

  renderStatus(st, drawer, me) {
    const mine = drawer === me;
    const name = this.name(drawer);
    let text = "";
    if (st.phase === "draw") text = mine ? "À vous de dessiner\u00a0: piochez une carte." : `${name} pioche une carte…`;
    else if (st.phase === "choose") text = mine ? "Choisissez votre mot." : `${name} choisit son mot…`;
    else if (st.phase === "drawing") text = mine ? `Faites deviner «\u00a0${this.fr(st.turn.word)}\u00a0»` : `${name} dessine\u00a0: devinez\u00a0!`;
    else if (st.phase === "game_over") text = "Partie terminée";
    if (st.tied.length && st.phase !== "game_over") text = `Tour décisif · ${text}`;
    this.status.textContent = text;
  }

  renderControls(st, drawer, me) {
    const parts = [];
    if (drawer === me && st.phase === "draw") {
      parts.push(once({ class: "primary big", id: "draw-card" }, () => {
        this.drawPressed = true;
        this.send({ kind: "draw_card" });
      }, "Piocher une carte"));
    } else if (drawer === me && st.phase === "choose" && st.turn.card) {
      const card = st.turn.card;
      for (const color of ["blue", "orange"]) {
        const pts = this.frame.config.drawer_points[color];
        parts.push(once({ class: `word ${color}`, "data-color": color },
          () => this.send({ kind: "choose_word", color }),
          el("b", {}, this.fr(card[color])), el("small", {}, plural(pts, "point"))));
      }
    } else if (drawer === me && st.phase === "drawing") {
      parts.push(el("p", { class: "hint" }, "Appuyez, glissez, relâchez\u00a0: un trait droit. " +
        "Prolonger un trait ne compte pas. Réagissez aux propositions\u00a0: «\u00a0proche\u00a0» ou «\u00a0hors sujet\u00a0»."));
    }
    this.controls.replaceChildren(...parts);
  }

  renderOverlay(st, drawer, me) {
    let content = null;
    if (st.phase === "draw" && st.history.length) {
      const last = st.history[st.history.length - 1];
      const who = last.drawer === me ? "Vous n'avez" : `${this.name(last.drawer)} n'a`;
      content = [...(last.word ? [el("p", { class: "small" }, "Le mot était"),
        el("h2", { class: last.color || "" }, this.fr(last.word)),
        el("p", {}, this.foundBy(last, me))]
        : [el("h2", { class: "no-word" }, "Temps écoulé"), el("p", {}, `${who} pas choisi de mot à temps.`)]),
        el("p", { class: "small" }, drawer === me ? "À vous\u00a0!" : `Au tour de ${this.name(drawer)}.`)];
    }
    this.overlay.hidden = !content;
    if (content) this.overlay.replaceChildren(...content);
    this.renderFinal(st, me);
  }

  // « Égalité à 10 points : départagés au tour décisif. » (who won it is the line above).
  tiebreakText(st, me) {
    const top = Math.max(...st.players.map((p) => st.scores[p]));
    const tied = st.players.filter((p) => st.scores[p] === top);
    const names = tied.map((p) => (p === me ? "vous" : this.name(p)));
    return tied.length > 1
      ? `Égalité à ${plural(top, "point")} entre ${listing(names)}\u00a0: la victoire s'est jouée au tour décisif.`
      : "La victoire s'est jouée au tour décisif.";
  }

  foundBy(turn, me) {
    const finders = turn.finders.map((p) => (p === me ? "vous" : this.name(p)));
    return finders.length ? `Trouvé par ${listing(finders)}` : "Personne n'a trouvé.";
  }

  // The game-over screen: the last word first (with its drawing), then the winner, the final
  // scores and every turn of the game.
  renderFinal(st, me) {
    const over = st.phase === "game_over";
    this.final.hidden = !over;
    if (!over || this.final.dataset.shown) return;
    this.final.dataset.shown = "1";
    const last = st.history[st.history.length - 1];
    const mini = el("canvas", { class: "mini", "aria-label": "le dernier dessin" });
    // The winners first (a tie-break turn decides between equal scores), then by score.
    const ranking = [...st.players].sort((a, b) => (st.winners.includes(b) - st.winners.includes(a)) ||
      (st.scores[b] - st.scores[a]));
    const tiebreak = st.history.some((t) => t.tiebreak);
    const turns = st.history.map((t) => el("tr", { class: t.tiebreak ? "tiebreak" : "" },
      el("td", {}, t.tiebreak ? `${t.number} (décisif)` : t.number), el("td", {}, this.name(t.drawer)),
      el("td", { class: t.color || "" }, t.word ? this.fr(t.word) : "—"),
      el("td", {}, capital(t.finders.map((p) => (p === me ? "vous" : this.name(p))).join(", ") || "personne"))));
    this.final.replaceChildren(el("div", { class: "results-box", "data-testid": "game-over" },
      last && last.word ? el("div", { class: "last-word" }, this.lastDrawing.length ? mini : null, el("div", {},
        el("p", { class: "small" }, "Le dernier mot était"),
        el("h2", { class: `word ${last.color || ""}`, "data-testid": "last-word" }, this.fr(last.word)),
        el("p", {}, this.foundBy(last, me)))) : null,
      el("h2", {}, st.winners.includes(me) ? "Victoire\u00a0!" : "Fin de partie"),
      el("p", { class: "winners" }, winnersText(st.winners, me, (p) => this.name(p))),
      tiebreak ? el("p", { class: "tiebreak-note", "data-testid": "tiebreak" }, this.tiebreakText(st, me)) : null,
      el("ol", { class: "ranking" }, ...ranking.map((p) => el("li", { class: p === me ? "me" : "" },
        el("span", {}, p === me ? "Vous" : this.name(p)), el("b", {}, plural(st.scores[p], "point"))))),
      el("details", { class: "turns" }, el("summary", {}, `Tous les tours (${st.history.length})`),
        el("table", {}, el("thead", {}, el("tr", {}, ...["Tour", "Dessinateur", "Mot", "Trouvé par"]
          .map((t) => el("th", {}, t)))), el("tbody", {}, ...turns))),
      el("div", { class: "end-actions" },
        this.rematch ? el("button", { class: "primary", id: "rematch", onclick: () => this.rematch() }, "Rejouer") : null,
        el("button", { class: this.rematch ? "" : "primary", onclick: () => this.leave() }, "Nouvelle partie")),
      againHint({ ...this.frame, seats: this.seats || this.frame.seats }, this.rematch)));
    if (last && this.lastDrawing.length) {
      const board = new Board(mini, { mode: "view", width: 5 });
      const lines = this.lastDrawing;
      board.setLines(lines, false);
      mini.title = "revoir ce dessin trait par trait";
      mini.addEventListener("click", () => replay(board, lines));
    }
  }

  renderScores(st, drawer) {
    const rows = st.players.map((p) => el("li", { class: p === drawer ? "drawing" : "", "data-player": p },
      el("span", { class: "who" }, p === drawer ? "✎ " : "", this.name(p), seatBadge(this.seats[p])),
      el("b", {}, st.scores[p])));
    rows.push(el("li", { class: "small" }, `Objectif\u00a0: ${plural(this.frame.config.target_score, "point")} · ` +
      `${plural(st.hidden_deck ?? 0, "carte")} dans la pioche`));
    this.scores.replaceChildren(...rows);
  }

  renderFeed(st, drawer, me) {
    const turn = st.turn;
    const guesses = turn ? [...turn.guesses].reverse() : [];
    const items = guesses.map((g) => {
      const gesture = this.gestures.get(g.text);
      const actions = drawer === me && st.phase === "drawing" && !g.accepted && !gesture
        ? el("span", { class: "gestures" },
          once({ class: "chip proche" }, () => this.gesture("proche", g.text), "Proche"),
          once({ class: "chip hors" }, () => this.gesture("hors_sujet", g.text), "Hors sujet"))
        : null;
      return el("li", { class: `guess ${g.accepted ? "ok" : "no"}`, "data-player": g.player },
        el("span", { class: "who" }, g.player === me ? "Vous" : this.name(g.player)),
        el("span", { class: "text" }, `«\u00a0${g.text}\u00a0»`, g.accepted ? " ✓" : ""),
        gesture ? el("span", { class: `badge ${gesture}` }, GESTURE_TEXT[gesture]) : null,
        actions);
    });
    if (!items.length) items.push(el("li", { class: "empty" }, turn ? "Aucune proposition pour l'instant." : "En attente du prochain dessin."));
    this.feed.replaceChildren(...items);
  }

  gesture(kind, about) {
    this.send({ kind: "gesture", gesture: kind, about });
  }
}
