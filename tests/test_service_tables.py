"""The `Tables` protocols are what the game manager offers: every member the core's protocol
(`service.tables`) and the rooms' (`service.play.room_tables`) name is on a real `GameManager`, its
sessions and its rooms; the rooms and a replica's ownership are handed the manager at construction."""

from __future__ import annotations

import ast
import asyncio
import inspect
from pathlib import Path
from typing import Any, Protocol

from service.placement import weighted_load
from service.play.manager import GameManager
from service.play.room_tables import RoomTables
from service.play.rooms import Rooms
from service.play.settings import PlaySettings
from service.settings import Settings
from service.tables import Lobbies, Lobby, Table, Tables
from tests.test_service_persistence import uniform


def members(protocol: type) -> dict[str, bool]:
    """The members a protocol names (its bases' too): name -> whether it is a method."""
    found: dict[str, bool] = {}
    for base in protocol.__mro__:
        if base in (Protocol, object) or not getattr(base, "_is_protocol", False):
            continue
        for name in getattr(base, "__annotations__", {}):
            found.setdefault(name, False)
        for name, value in vars(base).items():
            if not name.startswith("_"):
                found.setdefault(name, inspect.isfunction(value))
    return found


def offers(thing: Any, protocol: type) -> list[str]:
    """The members of ``protocol`` that ``thing`` lacks (a method must be callable)."""
    return [name for name, method in members(protocol).items()
            if not hasattr(thing, name) or (method and not callable(getattr(thing, name)))]


def test_members_reads_annotations_properties_and_methods() -> None:
    assert members(Table) == {"moved": False, "id": False, "kind": False, "state": False, "journal": False,
                              "loop_used": False, "now": True}
    assert {"games", "store", "settings", "rooms", "forget", "adopt"} <= set(members(RoomTables))
    assert offers(object(), Lobby) == ["game"]


def test_the_manager_its_tables_and_its_rooms_offer_what_the_protocols_name() -> None:
    built: list[Any] = []

    def rooms(manager: Any) -> Rooms:
        built.append(manager)
        return Rooms(manager)

    async def run() -> None:
        games = GameManager(Settings(), PlaySettings(), lambda key: uniform, frozenset(), rooms=rooms)
        try:
            assert built == [games] and games.rooms.manager is games and games.ownership is None
            assert offers(games, Tables) == [] and offers(games, RoomTables) == []
            session = games.create("pictomania", 2, "normal", "Ana", seed=3)
            assert offers(session, Table) == [] and session.journal is None
            room, _ = games.rooms.create("kontour", "Léa", "normal", 1, client="c")
            assert offers(games.rooms, Lobbies) == [] and offers(room, Lobby) == []
            assert weighted_load(games, bots_live=0) > 0  # the manager as placement reads it
        finally:
            await games.aclose()

    asyncio.run(run())


def manager_members_used(path: Path) -> set[str]:
    """The attributes a module reads of ``<something>.manager`` (ast)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute) and node.value.attr == "manager"}


def test_the_protocols_name_every_member_the_rooms_and_the_replicas_use() -> None:
    service = Path(__file__).resolve().parent.parent / "service"
    rooms = manager_members_used(service / "play" / "rooms.py")
    replicas = manager_members_used(service / "replicas.py")
    assert {"open_async", "games", "play"} <= rooms and {"games", "adopt", "forget"} <= replicas
    assert rooms - set(members(RoomTables)) == set(), "add them to service.play.room_tables.RoomTables"
    assert replicas - set(members(Tables)) == set(), "add them to service.tables.Tables"
