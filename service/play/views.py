"""What each seat of a game sees: its whole view once, then one update per move.

A socket gets the whole view once (``{"type": "state", "seq"}``: on connect, and when the page asks
with ``{"type": "sync"}``), then one ``{"type": "update", "seq"}`` per move carrying only what the
move changed (`Views.update`), so a move costs the size of the move, not of the game (a Pictomania
drawing of 300 strokes is not sent again with each stroke). Each seat sees its own `rules.view`
and the events it may see; the French words of the keys shown are sent once per seat.
`apply_update` is the reference merge (the page's is `service/static/app.js`); docs/PLAY.md states
the format.
"""

from __future__ import annotations

import functools
from typing import Any, Protocol

from games.ai.levels import AILevel
from games.core import Event
from games.kontour import KontourConfig, KontourRules, KontourState
from games.pictomania import PictomaniaConfig, PictomaniaRules, PictomaniaState
from service.play.table_words import Words

HUMAN = "joueur"  # the host's seat (the one person of a game against AI players)
MAX_OPPONENTS = 5  # what `POST /v1/play` accepts
DRAWING_EVENTS = ("stroke_drawn", "stroke_undone", "drawing_cleared")  # Pictomania drawings change only so


class Seen(Protocol):
    """The table a view is of (`service.play.table.GameSession`)."""

    kind: str
    id: str
    names: dict[str, str]
    level: AILevel
    ready: set[str]
    seq: int

    @property
    def state(self) -> Any: ...

    def presence(self) -> dict[str, str]: ...

    def now(self) -> float: ...

    def time_left(self, state: Any = None) -> float: ...


class Views:
    """The frames of one game's seats (subclasses: `KontourViews`, `PictomaniaViews`)."""

    def __init__(self, rules: Any, words: Words) -> None:
        self.rules, self.words = rules, words
        self.sent: dict[str, set[str]] = {}  # per seat: French words sent so far (a full frame: all)

    def frame(
        self, table: Seen, events: list[Event], seat: str, state: Any, seq: int | None
    ) -> dict[str, Any]:
        """The full state frame of `seat` in `state` (number `seq`): its view, the events, the
        time left, French words."""
        view = self.rules.view(state, seat)
        sent = self.sent.setdefault(seat, set())
        sent |= self.keys_shown(view, events)  # every word shown so far: the seat's sockets share updates
        return {
            "type": "state",
            "seq": seq,
            "game": table.kind,
            "id": table.id,
            "you": seat,
            "host": HUMAN,
            "seats": table.presence(),
            "ready": sorted(table.ready),
            "names": table.names,
            "level": table.level.name,
            "now": round(table.now(), 3),
            "time_left": round(table.time_left(state), 3),
            "config": self.client_config(table.state),
            "state": view.to_dict(),
            "events": [self.event_dict(e) for e in events],
            "fr": {k: self.words.french(k) for k in sorted(sent)},
        }

    def update(self, table: Seen, before: Any, events: list[Event], seat: str) -> dict[str, Any]:
        """The update frame of the table's last move (from state `before`) for `seat`: its
        events, the view's fields that may have changed (``set``), the new items of its
        append-only lists (``append``) and the French words not sent yet. Its size does not
        depend on the length of the game."""
        view = self.rules.view(table.state, seat)
        sent = self.sent.setdefault(seat, set())
        new_keys = self.keys_shown(view, events) - sent
        sent |= new_keys
        changed, appended = self.delta(before, view)
        return {
            "type": "update",
            "seq": table.seq,
            "now": round(table.now(), 3),
            "time_left": round(table.time_left(), 3),
            "events": [self.event_dict(e) for e in events],
            "set": changed,
            "append": appended,
            "fr": {k: self.words.french(k) for k in sorted(new_keys)},
        }

    def delta(self, before: Any, view: Any) -> tuple[dict[str, Any], dict[str, list[Any]]]:
        """(fields of the view to replace, new items of its append-only lists)."""
        raise NotImplementedError

    def event_dict(self, event: Event) -> dict[str, Any]:
        """An event as sent to the page."""
        return event.to_dict()

    def client_config(self, state: Any) -> dict[str, Any]:
        """The game's figures the page shows."""
        raise NotImplementedError

    def keys_shown(self, view: Any, events: list[Event]) -> set[str]:
        """The keys of the words a view shows (their French is sent with it)."""
        raise NotImplementedError


class KontourViews(Views):
    """A Kontour game's frames."""

    rules: KontourRules

    def client_config(self, state: Any) -> dict[str, Any]:
        cfg = self.rules.config
        return {
            "timer_s": cfg.timer_s,
            "draw_card_s": cfg.draw_card_s,
            "max_strokes": cfg.max_strokes,
            "target_score": cfg.target_score,
            "gestures": list(cfg.gestures),
            "drawer_points": cfg.drawer_points,
            "opponents": accepted_opponents(),
        }

    def delta(self, before: KontourState, view: KontourState) -> tuple[dict[str, Any], dict[str, list[Any]]]:
        """Everything but the history (15 lines at most a turn), and the turns that ended."""
        done = len(before.history)
        new = [h.to_dict() for h in view.history[done:]]
        return view.model_dump(mode="json", exclude={"history"}), ({"history": new} if new else {})

    def keys_shown(self, view: KontourState, events: list[Event]) -> set[str]:
        keys = {h.word for h in view.history if h.word}
        turn = view.turn
        if turn is not None and turn.card is not None:
            keys |= {turn.card.blue, turn.card.orange}
        return keys


class PictomaniaViews(Views):
    """A Pictomania game's frames."""

    rules: PictomaniaRules

    def client_config(self, state: Any) -> dict[str, Any]:
        cfg = self.rules.config
        return {
            "rounds": cfg.rounds,
            "round_timer_s": cfg.round_timer_s,
            "words_per_card": cfg.words_per_card,
            "tokens": list(cfg.tokens(len(state.players))),
            "unclaimed_penalty": cfg.unclaimed_penalty,
            "cards_per_round": cfg.cards_per_round,
            "opponents": accepted_opponents(),
        }

    def delta(
        self, before: PictomaniaState, view: PictomaniaState
    ) -> tuple[dict[str, Any], dict[str, list[Any]]]:
        """Everything but the drawings and the past rounds' results. Within a round the drawings
        change only through the events `DRAWING_EVENTS` (the page applies them); a new round
        sends its (fresh) drawings whole. A result scored in this update comes without its
        drawings when the page holds them as ``round.drawings``."""
        changed = view.model_dump(mode="json", exclude={"results": True, "round": {"drawings"}})
        same_round = before.round.number == view.round.number
        if not same_round:
            changed["round"]["drawings"] = view.round.to_dict()["drawings"]
        done = len(before.results)
        lean = {"drawings"} if same_round else None  # the round just scored is still the state's round
        new = [r.model_dump(mode="json", exclude=lean if r.number == view.round.number else None)
               for r in view.results[done:]]
        return changed, ({"results": new} if new else {})

    def event_dict(self, event: Event) -> dict[str, Any]:
        """`round_scored` without the drawings (the page has them in the state)."""
        if event.kind == "round_scored":
            return event.model_dump(mode="json", exclude={"result": {"drawings"}})
        return event.to_dict()

    def keys_shown(self, view: PictomaniaState, events: list[Event]) -> set[str]:
        keys = {w for card in view.round.cards for w in card.words}
        for result in view.results:
            keys |= set(result.words.values())
        return keys


@functools.cache
def accepted_opponents() -> dict[str, dict[str, int]]:
    """How many AI opponents each game accepts (from the rules configs' player counts, within the
    1-5 the service offers)."""
    out = {}
    for game, cfg in (("kontour", KontourConfig.load()), ("pictomania", PictomaniaConfig.load())):
        out[game] = {"min": max(1, cfg.min_players - 1), "max": min(MAX_OPPONENTS, cfg.max_players - 1)}
    return out


def apply_update(full: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """The reference merge of an update frame into the last full frame (what the page does):
    returns the new full frame, with the update's events. `ValueError` when `update` does not
    follow `full` (a gap: ask for a full state with ``{"type": "sync"}``)."""
    if update["seq"] != full["seq"] + 1:
        raise ValueError(f"update {update['seq']} does not follow state {full['seq']}")
    old = full["state"]
    state = {**old, **update["set"]}
    for field, items in update["append"].items():
        state[field] = [*old.get(field, []), *items]
    if "round" in update["set"] and "drawings" not in update["set"]["round"]:
        drawings = dict(old["round"]["drawings"])
        for e in update["events"]:
            if e["kind"] == "stroke_drawn":
                drawings[e["player"]] = [*drawings.get(e["player"], []), e["points"]]
            elif e["kind"] == "stroke_undone":
                drawings[e["player"]] = drawings.get(e["player"], [])[: e["strokes_left"]]
            elif e["kind"] == "drawing_cleared":
                drawings[e["player"]] = []
        state["round"] = {**update["set"]["round"], "drawings": drawings}
    for result in state.get("results", []) if "results" in update["append"] else []:
        result.setdefault("drawings", state["round"]["drawings"])
    return {
        **full,
        "seq": update["seq"],
        "now": update["now"],
        "time_left": update["time_left"],
        "events": update["events"],
        "state": state,
        "fr": {**full["fr"], **update["fr"]},
    }
