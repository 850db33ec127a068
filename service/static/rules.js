// The rules panel: a short French summary of each game, in a modal dialog reachable at any time
// (the «\u00a0Règles\u00a0» button in the header). Figures come from the game's config once it is running
// (a table may shorten the timer or the target), else from the rule sheets' defaults.

import { el, plural } from "./ui.js";

const DEFAULTS = {
  kontour: { timer_s: 30, max_strokes: 15, target_score: 10, drawer_points: { blue: 1, orange: 2 } },
  pictomania: { rounds: 5, round_timer_s: 120, words_per_card: 7, tokens: [3, 2], cards_per_round: 6,
    unclaimed_penalty: "all" },
};

function duration(s) {
  const whole = Math.round(s);
  if (whole >= 60 && whole % 60 === 0) return plural(whole / 60, "minute");
  return plural(whole, "seconde");
}

function item(title, ...text) {
  return el("li", {}, el("b", {}, `${title}\u00a0: `), ...text);
}

function kontour(cfg) {
  const c = { ...DEFAULTS.kontour, ...cfg };
  return [
    el("p", { class: "lead" }, "Faites deviner un mot en ne traçant que des traits droits, " +
      "et devinez les dessins des autres. Le premier à " +
      `${plural(c.target_score, "point")} gagne.`),
    el("ul", {},
      item("À votre tour", "piochez une carte et choisissez le mot ",
        el("span", { class: "blue" }, "bleu"), ` (plus facile, ${plural(c.drawer_points.blue, "point")}) ou le mot `,
        el("span", { class: "orange" }, "orange"), ` (plus dur, ${plural(c.drawer_points.orange, "point")}). ` +
        `Le sablier démarre\u00a0: ${duration(c.timer_s)}.`),
      item("Le dessin", `${c.max_strokes}\u00a0traits droits au plus. Appuyez, glissez, relâchez\u00a0: ` +
        "un trait. Prolonger un trait dans son alignement ne compte pas. Ni lettres, ni chiffres, ni flèches."),
      item("Les gestes", "le dessinateur ne parle pas, mais peut signaler qu'une proposition est " +
        "«\u00a0proche\u00a0» ou «\u00a0hors sujet\u00a0»."),
      item("Deviner", "proposez autant de mots que vous voulez jusqu'à la fin du sablier. " +
        "Sont acceptés le mot exact (accents et majuscules n'y changent rien), un vrai synonyme " +
        "(«\u00a0docteur\u00a0» pour «\u00a0médecin\u00a0»), l'autre genre ou nombre («\u00a0danseuse\u00a0» pour «\u00a0danseur\u00a0») " +
        "et une réponse qui contient le mot («\u00a0raquette de tennis\u00a0» pour «\u00a0tennis\u00a0»)."),
      item("Les points", "le premier qui trouve marque 1 point, le dessinateur marque les points " +
        "de son mot. Deux bonnes réponses presque en même temps\u00a0: 1 point chacun. " +
        "Personne ne trouve\u00a0: personne ne marque."),
      item("Égalité", "si plusieurs joueurs sont en tête à la fin, un tour décisif les départage\u00a0: " +
        "seuls les ex æquo devinent, le premier qui trouve gagne.")),
  ];
}

function pictomania(cfg) {
  const c = { ...DEFAULTS.pictomania, ...cfg };
  const values = c.tokens.length > 1
    ? `${c.tokens.slice(0, -1).join(", ")} et ${c.tokens[c.tokens.length - 1]}` : String(c.tokens[0]);
  const tokens = cfg && cfg.tokens ? values : `${values} à trois joueurs`;
  return [
    el("p", { class: "lead" }, "Tout le monde dessine en même temps son mot secret, et devine " +
      `au plus vite les dessins des autres. ${plural(c.rounds, "manche")}, le plus haut total gagne.`),
    el("ul", {},
      item("Les cartes", `${c.cards_per_round} cartes de ${c.words_per_card} mots numérotés sont sur la table, ` +
        "chacune avec son symbole (rond, carré…). Votre mot secret, c'est un symbole et un numéro. " +
        "Deux joueurs n'ont jamais le même numéro."),
      item("Miser", "sous le dessin d'un adversaire, choisissez le numéro du mot que vous y reconnaissez. " +
        "Une seule mise par adversaire, sans retour, et chacun de vos numéros ne sert qu'une fois par manche."),
      item("Les jetons", `chaque dessin a ses jetons (${tokens})\u00a0: la première bonne mise prend ` +
        "le plus gros, la deuxième le suivant, et ainsi de suite. Miser tôt rapporte plus, mais " +
        "chaque mauvaise mise vous rapproche du mouton noir."),
      item("J'ai fini", "quand vous avez fini de dessiner et de miser, prenez le plus gros jeton " +
        "bonus restant\u00a0; vous ne pouvez plus rien faire. La manche s'arrête au dernier jeton bonus, " +
        `ou au bout de ${duration(c.round_timer_s)}.`),
      item("Le score", "+ les jetons gagnés sur les dessins des autres\u00a0; + votre jeton bonus, " +
        "seulement si quelqu'un a deviné votre dessin\u00a0; " + (c.unclaimed_penalty === "lowest"
          ? "− le plus petit de vos propres jetons que personne n'a gagnés"
          : "− vos propres jetons que personne n'a gagnés") + "\u00a0: dessinez clairement\u00a0!"),
      item("Se reprendre", "« Annuler » efface votre dernier trait, « Effacer » tout votre dessin, " +
        "tant que vous n'avez pas fini."),
      item("Le mouton noir", "celui qui a le plus de mauvaises mises, seul en tête, voit son jeton " +
        "bonus compter en moins.")),
  ];
}

const TITLES = { kontour: "Kontour", pictomania: "Pictomania" };

// One dialog for the page; `open(game, config)` shows that game's tab.
export class RulesPanel {
  constructor() {
    this.configs = {};
    this.tabs = {};
    this.body = el("div", { class: "rules-body" });
    const tabs = Object.keys(TITLES).map((game) => {
      this.tabs[game] = el("button", { type: "button", role: "tab", class: "tab", "data-game": game,
        onclick: () => this.show(game) }, TITLES[game]);
      return this.tabs[game];
    });
    this.dialog = el("dialog", { id: "rules", class: "rules", "aria-labelledby": "rules-title" },
      el("div", { class: "rules-head" },
        el("h2", { id: "rules-title" }, "Règles"),
        el("div", { class: "tabs", role: "tablist" }, ...tabs),
        el("button", { type: "button", class: "close", id: "rules-close", "aria-label": "Fermer",
          onclick: () => this.dialog.close() }, "✕")),
      this.body);
    this.dialog.addEventListener("click", (e) => { if (e.target === this.dialog) this.dialog.close(); });
    document.body.append(this.dialog);
  }

  setConfig(game, config) { this.configs[game] = config; }

  show(game) {
    this.game = game;
    for (const [g, tab] of Object.entries(this.tabs)) tab.setAttribute("aria-selected", String(g === game));
    const build = game === "kontour" ? kontour : pictomania;
    this.body.replaceChildren(...build(this.configs[game] || {}));
    this.body.dataset.game = game;
  }

  open(game) {
    this.show(game);
    if (!this.dialog.open) this.dialog.showModal();
  }
}
