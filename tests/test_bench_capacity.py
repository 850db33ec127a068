"""The capacity benchmark (bench/bench_capacity.py): one level of one table against a real server
gives well-formed figures (no speed is asserted), and the pieces that read them."""

from __future__ import annotations

import asyncio
import json

import pytest

from bench.bench_capacity import (
    PER_CLIENT_LIMITS,
    level_line,
    parse_levels,
    run_level,
    server_env,
    summarise_stacks,
)
from griffon.launch import running_server, tuning
from tests.play_helpers import model_env

# Two hand-made drawings (a square, a zigzag then a line), in the raw canvas units a room sends.
DRAWINGS = [
    [[[10, 200, 200, 10, 10], [10, 10, 200, 200, 10], [0, 200, 400, 600, 800]]],
    [[[0, 50, 100, 150, 200], [0, 80, 0, 80, 0], [0, 100, 200, 300, 400]], [[0, 200], [150, 150], [0, 300]]],
]


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest):
    with running_server(model_env(request)) as running:
        yield running


@pytest.mark.parametrize("game", ["pictomania", "bot"])
def test_one_level_gives_well_formed_figures(server, game: str) -> None:
    row = asyncio.run(run_level(server, game, tables=1, seconds=2.5, drawings=DRAWINGS))
    assert row["game"] == game and row["tables"] == 1
    assert row["failures"] == {} and row["refusals"] == {}
    assert row["strokes_sent"] >= 1 and 1 <= row["strokes_acked"] <= row["strokes_sent"]
    assert 0 < row["ack_p50_ms"] <= row["ack_p99_ms"] <= row["ack_max_ms"]
    assert row["window_s"] >= 2.5
    assert row["server_cores"] > 0 and row["rss_mb"] > 0 and row["peak_rss_mb"] >= row["rss_mb"]
    loop = [t for t in row["threads"] if t["tid"] == server.process.pid]
    assert loop and loop[0]["cores"] == row["loop_cores"] and 0 < row["loop_share"] <= 1 + 1e-9
    assert row["worker_loop_cores"] == [row["loop_cores"]]  # one process: its loop is the only one
    assert all(t["cores"] > 0 and t["name"] for t in row["threads"])
    if row["analyses"]:
        assert row["server_ms_per_analysis"] > 0
    assert str(row["strokes_sent"]) in level_line(row)


def test_an_unknown_game_is_refused(server) -> None:
    with pytest.raises(ValueError, match="unknown game 'chess'"):
        asyncio.run(run_level(server, "chess", tables=1, seconds=1, drawings=DRAWINGS))


def test_collapsed_stacks_give_own_and_cumulative_time_and_thread_shares() -> None:
    stacks = "\n".join([
        "thread (1): MainThread;run (griffon/serve.py:1);step (games/ai/driver.py:9);"
        "marginals (games/ai/pictomania_guesser.py:56) 6",
        "thread (1): MainThread;run (griffon/serve.py:1);step (games/ai/driver.py:9) 2",
        "thread (2): griffon-infer;_run (service/inference.py:257) 2",
    ])
    summary = summarise_stacks(stacks)
    assert summary["samples"] == 10
    assert summary["threads"][0] == {"thread": "MainThread", "samples": 8, "share": 0.8}
    own = {r["function"]: r["share"] for r in summary["own"]}
    assert own == {"marginals (games/ai/pictomania_guesser.py:56)": 0.6, "step (games/ai/driver.py:9)": 0.2,
                   "_run (service/inference.py:257)": 0.2}
    project = {r["function"]: r["share"] for r in summary["cumulative_project"]}
    assert project["step (games/ai/driver.py:9)"] == 0.8
    assert "run (griffon/serve.py:1)" not in project  # the entry point tells nothing
    assert {r["function"] for r in summary["loop_own"]} == {"marginals (games/ai/pictomania_guesser.py:56)",
                                                              "step (games/ai/driver.py:9)"}


def test_only_the_limits_the_tables_would_hit_are_raised() -> None:
    one_address = {"GRIFFON_CAPACITY_CLIENT_SHARE": "1"}  # the bench's tables all come from 127.0.0.1
    assert server_env("pictomania", 2, admission=True) == one_address
    past_budget = {**tuning(**{"capacity.pictomania_table_cost": 0}), "GRIFFON_CAPACITY_LAG_MS": "0"}
    assert server_env("pictomania", 2) == one_address | past_budget
    raised = server_env("pictomania", 40)
    assert raised["GRIFFON_PLAY_GAMES_PER_CLIENT"] == raised["GRIFFON_PLAY_GAMES_PER_CLIENT_HOUR"] == "40"
    assert "GRIFFON_PLAY_MAX_GAMES" not in raised  # 100 by default
    bots = server_env("bot", 300)
    assert int(bots["GRIFFON_BOT_MAX_SESSIONS"]) >= 300 and "GRIFFON_PLAY_GAMES_PER_CLIENT" not in bots
    assert int(bots["GRIFFON_BOT_ROOMS_PER_CLIENT"]) >= 300
    allowed = set(PER_CLIENT_LIMITS) | set(past_budget) | set(one_address)
    assert set(bots) <= allowed | {"GRIFFON_MODEL"}
    assert json.loads(bots["GRIFFON_TUNING"]) == {"capacity.bot_room_cost": 0}


@pytest.mark.parametrize("text", ["", "0,1", "4,2", "1,x", "2,2"])
def test_bad_levels_are_refused(text: str) -> None:
    with pytest.raises(Exception, match="--levels"):
        parse_levels(text)
