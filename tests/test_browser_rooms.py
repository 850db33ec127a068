"""Rooms with friends in real headless Chromium: two browser contexts (two people, each with their
own storage) and an AI seat play a whole Kontour game and a whole Pictomania game together, from
the host's « Jouer avec des amis » and the link a friend opens, with a reload mid-game; the Kontour
game's host plays again (« Rejouer ») and the friend's page follows.
Fixtures and helpers: tests/test_browser_play.py; the lobby's refusals: tests/test_service_rooms.py."""

from __future__ import annotations

import re

import pytest

from tests.play_helpers import play_server
from tests.test_browser_play import (  # noqa: F401 - fixtures are found by name
    ARGS,
    CHROMIUM,
    browser,
    drag,
    game_seconds,
    ms,
    page_in,
    pytestmark,
    shot,
)


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest):
    """Kontour won by the first word found, Pictomania in 2 rounds; timers long enough for the
    test's own moves (stretched on a busy machine), never what ends a turn or a round here."""
    with play_server(
        request,
        {"kontour_target": 1, "kontour_timer_s": game_seconds(40, acting=20),
         "pictomania_round_s": game_seconds(40, acting=20), "pictomania_rounds": 2},
        GRIFFON_PLAY_GAMES_PER_CLIENT="10",
    ) as running:
        yield running


@pytest.fixture
def host(browser):  # noqa: F811 - the fixture imported above
    yield from page_in(browser, viewport={"width": 1280, "height": 900})


@pytest.fixture
def friend(browser):  # noqa: F811
    yield from page_in(browser, viewport={"width": 1280, "height": 900})


def open_room(host, friend, server, game: str) -> str:
    """The host opens a room of `game`, the friend joins it from its link under « Léa », the host
    adds one AI, sets its level to « Difficile » and starts; returns the room's code."""
    from playwright.sync_api import expect

    host.goto(server.url + "/")
    host.check(f"input[value={game}]")
    host.fill("input[name=name]", "Ana")
    host.click("#with-friends")
    code = host.get_by_test_id("room-code").inner_text().strip()
    assert re.fullmatch(r"[A-Z]{4}", code) and host.url.endswith(f"/r/{code}")
    expect(host.locator("#start-room")).to_be_disabled()  # one player: not a game yet
    friend.goto(server.url + f"/r/{code}")
    friend.fill("#join-room input[name=name]", "Léa")
    friend.click("#join-room button[type=submit]")
    expect(friend.get_by_test_id("lobby")).to_contain_text("Léa (vous)")
    expect(friend.locator("#start-room")).to_have_count(0)  # only the host starts
    expect(host.locator(".seat[data-seat=ami1]")).to_contain_text("en ligne")
    host.click("#add-ai")
    expect(host.locator(".seat.ai")).to_have_count(1)
    expect(friend.locator(".seat.ai")).to_have_count(1)
    host.select_option(".seat.ai select", "hard")  # this AI's own level
    expect(friend.locator(".seat.ai")).to_contain_text("IA, niveau difficile")
    shot(host, f"room-lobby-{game}")
    host.click("#start-room")
    return code


def test_kontour_two_people_and_an_ai_to_the_end_with_a_reload(host, friend, server) -> None:
    from playwright.sync_api import expect

    open_room(host, friend, server, "kontour")
    host.click("#draw-card")  # the host's seat comes first: they draw the first turn
    expect(friend.locator(".status")).to_contain_text("Ana")
    host.click("button.word.orange")  # 2 points to the drawer: the game ends on this word, no tie
    status = host.locator(".status")
    expect(status).to_contain_text("Faites deviner")
    word = re.search(r"«\s*(.+?)\s*»", status.inner_text()).group(1)
    expect(friend.locator(".status")).not_to_contain_text(word)  # the word is the drawer's secret
    drag(host, (50, 110), (200, 110))
    friend.reload()  # mid-turn: the friend's seat comes back from this browser's storage
    expect(friend.locator(".status")).to_contain_text("Ana dessine")
    expect(friend.locator("#board")).to_be_visible()
    friend.fill("#guess", word)
    friend.click(".guess-form button[type=submit]")
    for page in (host, friend):
        expect(page.get_by_test_id("game-over")).to_be_visible(timeout=ms(15))
        expect(page.get_by_test_id("last-word")).to_have_text(word)
    expect(host.locator(".winners")).to_have_text("Vous gagnez la partie !")
    expect(friend.locator(".winners")).to_contain_text("Ana")
    expect(friend.locator(".ranking li.me")).to_contain_text("1 point")
    expect(friend.locator("#rematch")).to_have_count(0)  # « Rejouer » is the host's: the others follow
    shot(friend, "room-kontour-end-friend")
    host.click("#rematch")  # the same seats, a new game: both pages follow
    for page in (host, friend):
        expect(page.get_by_test_id("game-over")).to_be_hidden(timeout=ms(10))
    expect(host.locator("#draw-card")).to_be_visible()  # the host draws first again
    expect(friend.locator(".status")).to_contain_text("Ana")
    friend.click("#quit")  # « Quitter » asks first
    friend.click("#quit")
    expect(friend.locator("#setup")).to_be_visible()
    assert friend.evaluate("localStorage.getItem('griffon.rooms')") == "{}"  # the room's token is forgotten


def test_pictomania_two_people_and_an_ai_two_rounds_with_a_reload(host, friend, server) -> None:
    from playwright.sync_api import expect

    open_room(host, friend, server, "pictomania")
    for page in (host, friend):
        expect(page.locator(".card")).to_have_count(6)
        expect(page.get_by_test_id("secret")).to_contain_text("Votre mot")
    drag(host, (40, 60), (200, 180))
    drag(friend, (60, 200), (200, 40))
    friend.reload()  # mid-round: the same seat, its drawing, its secret word
    expect(friend.get_by_test_id("secret")).to_contain_text("Votre mot")
    expect(friend.locator(".draw-tools")).to_have_attribute("data-strokes", "1")
    host.locator(".opponent[data-player=ami1] .pick[data-number='2']").click()
    expect(host.locator(".opponent[data-player=ami1] .bet")).to_contain_text("2")
    for round_number in (1, 2):
        for page in (host, friend):  # a drawing without their bet: « J'ai fini » asks first
            page.click("#done")
            expect(page.locator("#done")).to_contain_text("Confirmer")
            page.click("#done")  # the two people's tokens: the last bonus token ends the round
        for page in (host, friend):
            expect(page.locator(".results-box")).to_be_visible(timeout=ms(20))
        if round_number == 1:
            recap = friend.get_by_test_id("recap")
            expect(recap.locator(".recap-item")).to_have_count(3)
            her_drawing = recap.locator(".recap-item[data-player=ami1]")
            expect(her_drawing.locator(".outcome[data-guesser=joueur]")).to_contain_text("Ana : 2")
            shot(friend, "room-pictomania-recap-friend")
            host.click("#next-round")  # the next round waits for every person here
            expect(friend.locator(".results-box")).to_be_visible()
            friend.click("#next-round")
            for page in (host, friend):
                expect(page.locator(".status")).to_have_text("Manche 2 / 2", timeout=ms(10))
    for page in (host, friend):
        expect(page.locator(".results-box h2").first).to_have_text(re.compile("Victoire|Fin de partie"),
                                                                     timeout=ms(20))
        expect(page.get_by_test_id("summary").locator("tbody tr")).to_have_count(3)
    shot(host, "room-pictomania-end-host")
