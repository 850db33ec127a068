"""What a group of friends meets around a room, in real headless Chromium against a real server:
joining by the code typed on the home page (a mistyped code, one that never was, a room that is
gone or full: each answered in French, never a raw JSON page), a name already taken, the host's
presence and the room handed over when the host leaves before the start, then the new host, a
drawer who never takes their card (the draw phase's clock: it is taken for them, the table goes on),
and a Kontour game decided by a tie-break turn (the end screen says so, the winner ranked first)
with a ladder's close rungs and a line drawn 4 units beside another kept as lines of their own;
the host then leaves the ended game and « Rejouer » passes to the first friend here.
Fixtures and helpers: tests/test_browser_play.py."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.play_helpers import play_server
from tests.test_browser_play import (  # noqa: F401 - fixtures are found by name
    LANDSCAPE,
    PORTRAIT,
    browser,
    drag,
    game_seconds,
    ms,
    page_in,
    pytestmark,
    shot,
)

GRACE_S = 3  # the host away this long before the start: the room is handed over
RECORD_TOASTS = """window.__toasts = [];
new MutationObserver((records) => { for (const r of records) for (const n of r.addedNodes)
  if (n.classList && n.classList.contains("toast")) window.__toasts.push(n.textContent); })
  .observe(document, { childList: true, subtree: true });"""  # every toast a page showed
DRAW_CARD_S = game_seconds(10, acting=6)  # a drawer's clock to take the card (more on a busy machine)


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest):
    """Kontour won by the first word found; a short clock to take a card; a short grace."""
    with play_server(
        request,
        {"kontour_target": 1, "kontour_timer_s": game_seconds(40, acting=20),
         "kontour_draw_card_s": DRAW_CARD_S},
        GRIFFON_PLAY_ROOM_GRACE_S=str(GRACE_S),
        GRIFFON_PLAY_ROOMS_PER_CLIENT="10",
        GRIFFON_PLAY_GAMES_PER_CLIENT="10",
    ) as running:
        yield running


@pytest.fixture
def host(browser):  # noqa: F811 - the fixture imported above
    yield from page_in(browser, viewport={"width": 1280, "height": 800})


@pytest.fixture
def friend(browser):  # noqa: F811
    yield from page_in(browser, viewport=PORTRAIT, device_scale_factor=2, is_mobile=True, has_touch=True)


@pytest.fixture
def third(browser):  # noqa: F811
    yield from page_in(browser, viewport={"width": 1280, "height": 800})


def open_room(page, server, game: str = "kontour", name: str = "Ana") -> str:
    page.goto(server.url + "/")
    page.check(f"input[value={game}]")
    page.fill("#new-game input[name=name]", name)
    page.click("#with-friends")
    code = page.get_by_test_id("room-code").inner_text().strip()
    assert re.fullmatch(r"[A-Z]{4}", code)
    return code


def join_by_code(page, server, typed: str, name: str) -> None:
    """From the home page: the code typed as a friend would (any case), then a name."""
    from playwright.sync_api import expect

    page.goto(server.url + "/")
    page.fill("#code-input", typed)
    page.click("#join-code-button")
    page.fill("#join-room input[name=name]", name)
    page.click("#join-room button[type=submit]")
    expect(page.get_by_test_id("lobby")).to_contain_text(f"{name} (vous)")


def test_joining_by_code_and_every_wrong_code_answered_in_french(host, friend, server) -> None:
    from playwright.sync_api import expect

    code = open_room(host, server)
    friend.goto(server.url + "/")
    friend.fill("#code-input", code.lower())
    expect(friend.locator("#code-input")).to_have_value(code)  # a phone's lower case: shown in capitals
    friend.click("#join-code-button")
    expect(friend.locator("#join-room")).to_contain_text("Rejoindre la partie de Ana")
    assert friend.url.endswith(f"/r/{code}")
    shot(friend, "friends-join-form-portrait")
    friend.fill("#join-room input[name=name]", " ana ")  # the host's name: refused before it is sent
    friend.click("#join-room button[type=submit]")
    expect(friend.locator("#join-room .error")).to_have_text(re.compile("déjà pris"))
    friend.fill("#join-room input[name=name]", "Léa " * 50)  # 200 characters: refused, never cut
    friend.click("#join-room button[type=submit]")
    too_long = "24\u00a0caractères au plus (celui-ci en a 199)"  # trimmed: 50 times 4, less the last space
    expect(friend.locator("#join-room .error")).to_contain_text(too_long)
    friend.fill("#join-room input[name=name]", "Léa")
    friend.click("#join-room button[type=submit]")
    expect(friend.get_by_test_id("lobby")).to_contain_text("Léa (vous)")
    expect(host.locator(".seat[data-seat=ami1]")).to_contain_text("en ligne")
    shot(friend, "friends-lobby-portrait")
    friend.set_viewport_size(LANDSCAPE)
    shot(friend, "friends-lobby-landscape")
    friend.set_viewport_size(PORTRAIT)

    # Someone else (their own browser): a code that cannot be one gets the page, in French, with
    # status 404 (never a JSON answer); a code no room ever had; a full room, before any name.
    answer = httpx.get(server.url + "/r/AB12", timeout=30)
    assert answer.status_code == 404 and answer.headers["content-type"].startswith("text/html")
    stranger = friend.context.browser.new_context(viewport=PORTRAIT, is_mobile=True, has_touch=True)
    other = stranger.new_page()
    other.goto(server.url + "/r/AB12")
    expect(other.locator("#code-error")).to_contain_text("n'est pas un code de salon")
    other.fill("#code-input", "ZZZZ")
    other.click("#join-code-button")
    expect(other.locator("#code-error")).to_have_text(re.compile("Aucun salon ne porte le code ZZZZ"))
    expect(other.locator("#code-error")).not_to_contain_text("n'existe plus")
    shot(other, "friends-unknown-code-portrait")
    for _ in range(4):
        host.click("#add-ai")
    expect(host.locator(".seat")).to_have_count(6)
    other.fill("#code-input", code)
    other.click("#join-code-button")
    expect(other.locator("#code-error")).to_contain_text(f"Le salon {code} est complet")
    expect(other.locator("#join-room")).to_have_count(0)
    stranger.close()
    # The host closes the room: the friend is told; its code then « n'existe plus ».
    host.click("#leave-room")
    expect(friend.locator("#code-error")).to_contain_text("L'hôte a fermé le salon")
    friend.fill("#code-input", code)
    friend.click("#join-code-button")
    expect(friend.locator("#code-error")).to_contain_text(f"Le salon {code} n'existe plus")


def test_the_host_leaving_before_the_start_hands_the_room_over_and_the_table_never_freezes(
    host, friend, server
) -> None:
    from playwright.sync_api import expect

    code = open_room(host, server)
    join_by_code(friend, server, code, "Léa")
    ana = friend.locator(".seat[data-seat=joueur]")
    expect(ana).to_contain_text("hôte · en ligne")
    expect(friend.get_by_test_id("host-hint")).to_contain_text("Ana lancera la partie")
    host.close()  # the tab closed before the start
    expect(ana).to_contain_text("hors ligne")
    expect(friend.get_by_test_id("host-hint")).to_contain_text("Ana n'est plus en ligne")
    shot(friend, "friends-host-away-portrait")
    # Past the grace period the friend here hosts the room: the host's buttons, a toast that says so.
    expect(friend.locator("#start-room")).to_be_visible(timeout=ms(GRACE_S + 10))
    expect(friend.locator("#toasts")).to_contain_text("c'est à vous de lancer la partie")
    expect(friend.locator(".seat[data-seat=joueur]")).to_contain_text("Léa (vous)")
    expect(friend.locator(".seat[data-seat=ami1]")).to_contain_text("Ana")
    shot(friend, "friends-host-handed-over-portrait")
    friend.click("#start-room")  # Kontour with Ana away: two players, the new host draws first
    expect(friend.locator("#draw-card")).to_be_visible(timeout=ms(10))
    expect(friend.locator("html")).to_have_attribute("data-sound", "turn")  # « à vous » heard
    # Ana never came to the table: past the grace period an AI plays her seat, and her name says so.
    ana_score = friend.locator(".scores li[data-player=ami1]")
    expect(ana_score).to_contain_text("IA en relais", timeout=ms(GRACE_S + 10))
    expect(friend.locator("#toasts")).to_contain_text("Ana a quitté la partie")
    shot(friend, "friends-ai-for-ana-portrait")
    # Léa keeps the page open and never presses « Piocher une carte »: the card's clock runs out,
    # the card is taken for her, the sand timer runs; the table never freezes.
    expect(friend.get_by_test_id("timer")).to_have_text(re.compile(r"^\d+ s$"))
    expect(friend.locator("button.word")).to_have_count(2, timeout=ms(DRAW_CARD_S + 5))
    expect(friend.locator("#toasts")).to_contain_text("la carte a été piochée pour vous")
    shot(friend, "friends-card-taken-portrait")


def test_a_tie_break_ending_says_so_and_ranks_the_winner_first(host, friend, third, server) -> None:
    from playwright.sync_api import expect

    for page in (host, friend, third):
        page.add_init_script(RECORD_TOASTS)
    code = open_room(host, server)
    join_by_code(friend, server, code, "Léa")
    join_by_code(third, server, code, "Zoé")
    host.click("#start-room")
    host.click("#draw-card")
    stranger = host.context.browser.new_context()  # the link reaches someone after the start
    late = stranger.new_page()
    late.goto(server.url + f"/r/{code}")
    expect(late.locator("#code-error")).to_contain_text(f"La partie du salon {code} a commencé sans vous")
    expect(late.locator("#join-room")).to_have_count(0)  # said before any name is asked
    stranger.close()
    host.click("button.word.blue")  # 1 point to the drawer and 1 to the finder: 1-1, a tie
    status = host.locator(".status")
    expect(status).to_contain_text("Faites deviner")
    word = re.search(r"«\s*(.+?)\s*»", status.inner_text()).group(1)
    # A ladder: a rung, the next one pressed 7 units under its end (never pulled onto it), and a
    # line 4 units beside the first: three lines of their own, no « Prolongement ».
    drag(host, (50, 100), (200, 100))
    expect(host.get_by_test_id("lines")).to_contain_text("1 / 15")
    drag(host, (50, 107), (200, 112))
    expect(host.get_by_test_id("lines")).to_contain_text("2 / 15")
    drag(host, (60, 96), (190, 96))
    expect(host.get_by_test_id("lines")).to_contain_text("3 / 15")
    expect(host.locator("#toasts")).not_to_contain_text("Prolongement")
    shot(host, "friends-ladder-desktop")
    friend.fill("#guess", word)
    friend.click(".guess-form button[type=submit]")
    # 1-1 at the 1-point target: a tie-break turn, drawn by Zoé (the lowest score), guessed by the tied.
    expect(third.locator("#draw-card")).to_be_visible(timeout=ms(15))
    expect(host.locator(".status")).to_contain_text("Tour décisif")
    third.click("#draw-card")
    third.click("button.word.blue")
    expect(third.locator(".status")).to_contain_text("Faites deviner")
    tiebreak_word = re.search(r"«\s*(.+?)\s*»", third.locator(".status").inner_text()).group(1)
    drag(third, (40, 40), (200, 200))
    friend.fill("#guess", tiebreak_word)
    friend.click(".guess-form button[type=submit]")
    for page in (host, friend, third):
        expect(page.get_by_test_id("game-over")).to_be_visible(timeout=ms(15))
        expect(page.get_by_test_id("tiebreak")).to_contain_text("tour décisif")
    expect(friend.locator(".winners")).to_have_text("Vous gagnez la partie\u00a0!")
    expect(friend.locator(".ranking li").first).to_contain_text("Vous")  # the winner first, 1-1
    expect(host.locator(".winners")).to_have_text("La victoire revient à Léa.")
    expect(host.locator(".ranking li").first).to_contain_text("Léa")
    expect(host.get_by_test_id("tiebreak")).to_contain_text("Égalité à 1 point entre vous et Léa")
    expect(friend.get_by_test_id("again-hint")).to_contain_text("Ana peut relancer une partie")
    expect(host.get_by_test_id("again-hint")).to_have_count(0)  # the host has « Rejouer »
    for page in (host, friend, third):  # each page came to the table at its own pace: nobody left
        assert not [t for t in page.evaluate("window.__toasts") if "de retour" in t or "quitté" in t]
    shot(host, "friends-tiebreak-end-desktop")
    shot(friend, "friends-tiebreak-end-portrait")
    friend.set_viewport_size(LANDSCAPE)
    shot(friend, "friends-tiebreak-end-landscape")
    # The host leaves the ended game: « Rejouer » passes to Léa (the first person here), who starts
    # the next game; Zoé's page is told who may, and follows.
    host.goto("about:blank")
    expect(friend.locator("#rematch")).to_be_visible(timeout=ms(10))
    handed = "Ana n'est plus en ligne\u00a0: c'est à vous de relancer la partie."
    expect(friend.locator("#toasts")).to_contain_text(handed)
    expect(third.get_by_test_id("again-hint")).to_contain_text("Léa peut relancer une partie")
    expect(third.locator("#rematch")).to_have_count(0)
    shot(friend, "friends-rematch-handed-over-landscape")
    friend.click("#rematch")
    for page in (friend, third):
        page.wait_for_function("window.__toasts.some((t) => t.startsWith('Nouvelle partie'))", timeout=ms(15))
        expect(page.get_by_test_id("game-over")).to_have_count(0)
