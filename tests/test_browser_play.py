"""The game page in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright):
draw on the canvas with the mouse and with touch, see the AI's guesses, reload and resume, play a
Pictomania game to its end with its recap, read the rules, see the last Kontour word, and check
that a phone (390 x 844, both ways up) shows everything a turn needs without scrolling."""

from __future__ import annotations

import datetime
import json
import re
import tempfile
from pathlib import Path

import pytest

from griffon.launch import Patience, patient
from tests.play_helpers import HAS_WEIGHTS, HOUSE, play_server

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium"),
]
SHOTS = Path(tempfile.gettempdir()) / "griffon-screenshots"  # each page the tests saw, to look at


# The game timers of the test servers, in seconds (set by their fixtures: see `game_seconds`).
TIMERS: dict[str, int] = {}


def game_seconds(seconds: int, acting: int) -> int:
    """A game timer for a test server: ``seconds`` on a quiet machine, where the test's own moves in
    a turn take about ``acting`` seconds; on a busy machine the timer grows by what those moves
    grow by. Never whole minutes, which the rules panel would say in minutes."""
    stretched = min(600, round(seconds - acting + patient(acting)))
    return stretched + 1 if stretched % 60 == 0 else stretched


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest):
    """25-second Kontour turns and 15-second Pictomania rounds (on a quiet machine)."""
    TIMERS["turn"], TIMERS["round"] = game_seconds(25, acting=10), game_seconds(15, acting=8)
    with play_server(
        request,
        {"kontour_timer_s": TIMERS["turn"], "pictomania_round_s": TIMERS["round"]},
        GRIFFON_PLAY_GAMES_PER_CLIENT="10",  # every test plays from 127.0.0.1
    ) as running:
        yield running


@pytest.fixture(scope="module")
def fast(request: pytest.FixtureRequest):
    """12-second Kontour turns on a quiet machine (room to choose and draw two lines before the
    timer ends the turn) and a 1-point target: a game ends on the first word found."""
    TIMERS["fast turn"] = game_seconds(12, acting=8)
    with play_server(request, {"kontour_target": 1, "kontour_timer_s": TIMERS["fast turn"]},
                     GRIFFON_PLAY_GAMES_PER_CLIENT="10") as running:
        yield running


def ms(seconds: float) -> int:
    """A Playwright timeout (milliseconds): ``seconds`` on a quiet machine, more on a busy one."""
    return round(patient(seconds) * 1000)


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    sync_api.expect.set_options(timeout=ms(5))  # Playwright's default for `expect`, stretched
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, timeout=ms(30))
        yield chromium
        chromium.close()


def page_in(browser, **context_options):
    """A page in a new browser context; fails the test on any JavaScript error it raised."""
    context = browser.new_context(**context_options)
    context.set_default_timeout(ms(30))  # Playwright's default for actions and waits, stretched
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert not errors, f"JavaScript errors: {errors}"


@pytest.fixture
def page(browser):
    yield from page_in(browser, viewport={"width": 1280, "height": 900}, has_touch=True)


@pytest.fixture
def phone(browser):
    """A phone held upright (390 x 844 CSS pixels, touch, no mouse hover)."""
    yield from page_in(browser, viewport=PORTRAIT, device_scale_factor=2, is_mobile=True, has_touch=True)


PORTRAIT = {"width": 390, "height": 844}
LANDSCAPE = {"width": 844, "height": 390}


def in_view(page, selector: str) -> None:
    """Every element matching the CSS `selector` is displayed and wholly inside the viewport,
    without scrolling (measured in one go: the page re-renders on every server frame)."""
    from playwright.sync_api import expect

    expect(page.locator(selector).first).to_be_visible()
    found = page.evaluate(
        """(selector) => ({scrollY: window.scrollY, width: innerWidth, height: innerHeight,
            boxes: [...document.querySelectorAll(selector)]
              .map((e) => e.getBoundingClientRect().toJSON())})""",
        selector,
    )
    assert found["scrollY"] == 0
    assert found["boxes"], f"no {selector}"
    for i, box in enumerate(found["boxes"]):
        inside = (
            box["width"] > 0
            and box["height"] > 0
            and box["left"] >= -0.5
            and box["top"] >= -0.5
            and box["right"] <= found["width"] + 0.5
            and box["bottom"] <= found["height"] + 0.5
        )
        assert inside, f"{selector} #{i} at {box} is outside the {found['width']}x{found['height']} viewport"


def start(page, server, game: str, opponents: int = 1, level: str = "hard", seed: int | None = None) -> None:
    page.goto(server.url + "/" + (f"?seed={seed}" if seed is not None else ""))
    page.check(f"input[value={game}]")
    page.select_option("select[name=opponents]", str(opponents))
    page.select_option("select[name=level]", level)
    page.fill("input[name=name]", "Ana")
    page.click("#start")


def to_page(page, x: float, y: float) -> tuple[float, float]:
    box = page.locator("#board").bounding_box()
    return box["x"] + x / 255 * box["width"], box["y"] + y / 255 * box["height"]


def drag(page, a, b) -> None:
    page.mouse.move(*to_page(page, *a))
    page.mouse.down()
    page.mouse.move(*to_page(page, *b), steps=6)
    page.mouse.up()


def touch_line(page, a, b) -> None:
    cdp = page.context.new_cdp_session(page)
    (x0, y0), (x1, y1) = to_page(page, *a), to_page(page, *b)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x0, "y": y0}]})
    for i in range(1, 6):
        point = {"x": x0 + (x1 - x0) * i / 5, "y": y0 + (y1 - y0) * i / 5}
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [point]})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})


def blue_pixels(page) -> int:
    """Pixels of the board in the preview line's blue (#2563eb), not in the ink's dark grey."""
    return page.evaluate(
        """() => {
            const c = document.getElementById("board");
            const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
            let n = 0;
            for (let i = 0; i < d.length; i += 4) if (d[i + 2] > 180 && d[i] < 90 && d[i + 3] > 0) n++;
            return n;
        }"""
    )


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def test_kontour_draw_lines_see_the_ai_guess_and_resume_after_a_reload(page, server) -> None:
    from playwright.sync_api import expect

    # Seed 7 deals « araignée » / « pelle »: a house cannot be guessed right, so the turn lasts
    # until its timer (a random deal could end it early and flake the test).
    start(page, server, "kontour", seed=7)
    page.click("#draw-card")
    expect(page.locator("button.word.blue")).to_contain_text("araignée")  # the page sent the seed
    page.click("button.word.blue")
    expect(page.locator(".status")).to_contain_text("Faites deviner")
    for a, b in HOUSE[:5]:
        drag(page, a, b)
    touch_line(page, *HOUSE[5])  # the last line with a finger
    expect(page.get_by_test_id("lines")).to_have_text("Traits : 6 / 15")
    drag(page, (60, 60), (62, 61))  # a dot: ignored by the page, not sent
    expect(page.get_by_test_id("lines")).to_have_text("Traits : 6 / 15")
    # A line 6 units under the floor, parallel to it: its ends are not snapped onto the floor's, it
    # stays a line of its own; continuing the floor is a « prolongement » that does not count.
    drag(page, (52, 236), (198, 236))
    expect(page.get_by_test_id("lines")).to_have_text("Traits : 7 / 15")
    expect(page.locator("#toasts")).not_to_contain_text("Prolongement")
    drag(page, (200, 230), (235, 230))
    expect(page.locator("#toasts")).to_contain_text("Prolongement")
    expect(page.get_by_test_id("lines")).to_have_text("Traits : 7 / 15")
    expect(page.get_by_test_id("timer")).to_have_text(re.compile(r"^(\d+ s|\d+:\d\d)$"))  # 42 s, 1:05
    if HAS_WEIGHTS:  # the shipped recognizer: the AI's guesses appear live in the feed
        expect(page.locator("#feed li.guess[data-player=ia1]").first).to_be_visible(timeout=ms(15))
        page.locator("#feed li.guess .chip.hors").first.click()  # the person's « hors sujet »
        expect(page.locator("#feed .badge.hors_sujet").first).to_be_visible()
    shot(page, "kontour-drawing")
    page.reload()
    expect(page.get_by_test_id("lines")).to_have_text("Traits : 7 / 15")
    expect(page.locator(".status")).to_contain_text("Faites deviner")
    # The turn ends; the AI draws next and the person guesses by typing.
    expect(page.locator(".status")).to_contain_text("Plume dessine", timeout=ms(5) + TIMERS["turn"] * 1000)
    expect(page.locator("#guess")).to_be_focused()  # ready to type as soon as the AI draws
    page.fill("#guess", "zèbre")
    page.press("#guess", "Enter")
    expect(page.locator("#feed li.guess[data-player=joueur]")).to_contain_text("zèbre")
    expect(page.locator("#feed li.guess[data-player=joueur]")).to_have_class(re.compile("no"))
    page.wait_for_function("document.querySelectorAll('#feed li').length >= 1")
    shot(page, "kontour-guessing")


def relay_losing_frames(page, syncs_to_drop: int) -> list[dict]:
    """Relay the game socket through Playwright, dropping the server's third update about the
    person's strokes and the page's first `syncs_to_drop` sync frames (as the server's rate limit
    drops frames without a word). Returns every frame the page sent, in order."""
    sent: list[dict] = []
    updates = {"seen": 0}

    def relay(ws) -> None:
        upstream = ws.connect_to_server()

        def from_page(message) -> None:
            frame = json.loads(message)
            sent.append(frame)
            if frame["type"] == "sync" and sum(f["type"] == "sync" for f in sent) <= syncs_to_drop:
                return  # lost on the way
            upstream.send(message)

        def from_server(message) -> None:
            frame = json.loads(message)
            if frame["type"] == "update" and any(
                e["kind"] == "stroke_drawn" and e["player"] == "joueur" for e in frame["events"]
            ):
                updates["seen"] += 1
                if updates["seen"] == 3:
                    return  # lost on the way
            ws.send(message)

        ws.on_message(from_page)
        upstream.on_message(from_server)

    page.route_web_socket(re.compile(r"/v1/play/"), relay)
    return sent


def four_lines_in_pictomania(page, server, check_first: int = 0, pause_at: datetime.datetime | None = None):
    """Start a Pictomania game and draw four lines, checking that the first `check_first` of them
    show at once; returns the drawing tools' locator (``data-strokes``: the strokes shown).
    ``pause_at``: the page's clock (installed by the caller) stops there once the game is shown."""
    from playwright.sync_api import expect

    start(page, server, "pictomania", opponents=2, level="easy", seed=4)
    expect(page.locator(".card")).to_have_count(6)
    if pause_at is not None:
        page.clock.pause_at(pause_at)
    tools = page.locator(".draw-tools")
    for i in range(4):
        drag(page, (30, 40 + 40 * i), (220, 50 + 40 * i))
        if i < check_first:
            expect(tools).to_have_attribute("data-strokes", str(i + 1))
    return tools


def syncs_sent(page, sent: list[dict], count: int) -> None:
    """Wait until the page has sent `count` sync frames (Playwright delivers the relay's messages
    while the test waits in a Playwright call)."""
    patience = Patience(10, f"the page had not sent {count} sync frames")
    while sum(f["type"] == "sync" for f in sent) < count:
        if patience.expired():
            raise patience.failure(f"frames sent: {sent}")
        page.wait_for_timeout(50)


def test_a_lost_update_frame_makes_the_page_ask_for_the_whole_state(page, server) -> None:
    """The relay drops the server's third update: the page sees the gap in `seq`, sends a sync
    frame, and shows every stroke once the state is back."""
    from playwright.sync_api import expect

    sent = relay_losing_frames(page, syncs_to_drop=0)
    tools = four_lines_in_pictomania(page, server, check_first=2)
    expect(tools).to_have_attribute("data-strokes", "4")
    assert [f for f in sent if f["type"] == "sync"], "the page did not ask for the state"


def test_a_paused_table_shows_its_banner_stops_its_clock_and_clears_both(page, server) -> None:
    """The server says the table waits for its database (the `paused` frame it sends when the store
    fails, tests/test_service_outage.py; here put on the relayed socket, the server's own frames
    held back meanwhile as they are during a real pause): the banner shows the French message, the
    game is dimmed and out of reach, the countdown stands still; `resumed` takes them away and the
    countdown goes on."""
    from playwright.sync_api import expect

    sockets, held = [], {"on": False}

    def relay(ws) -> None:
        upstream = ws.connect_to_server()
        sockets.append(ws)
        ws.on_message(upstream.send)
        upstream.on_message(lambda message: None if held["on"] else ws.send(message))

    page.route_web_socket(re.compile(r"/v1/play/"), relay)
    start(page, server, "pictomania", opponents=2, level="easy", seed=4)
    expect(page.locator(".card")).to_have_count(6)
    banner, game, clock = page.locator("#pause"), page.locator("#game"), page.get_by_test_id("timer")
    expect(banner).to_be_hidden()
    held["on"] = True
    sockets[-1].send(json.dumps({"type": "paused", "code": "store_unavailable", "now": 1.0, "time_left": 9.0,
                                 "message": "Sauvegarde impossible — nouvel essai…"}))
    expect(banner).to_have_text("Sauvegarde impossible — nouvel essai… "
                                "La partie reprend dès que vos coups sont enregistrés.")
    expect(game).to_have_class(re.compile(r"\bpaused\b"))
    assert game.evaluate("node => getComputedStyle(node).pointerEvents") == "none"
    frozen = clock.inner_text()
    page.wait_for_timeout(2500)
    assert clock.inner_text() == frozen, "the countdown ran during the pause"
    held["on"] = False
    sockets[-1].send(json.dumps({"type": "resumed", "paused_s": 2.5, "now": 1.0, "time_left": 9.0}))
    expect(banner).to_be_hidden()
    expect(game).not_to_have_class(re.compile(r"\bpaused\b"))
    expect(clock).not_to_have_text(frozen, timeout=ms(5))  # it goes on


def test_a_lost_sync_frame_is_sent_again(page, server) -> None:
    """The relay drops the server's third update AND the page's first sync: the page asks again
    once the sync has gone 2 s unanswered on its own clock (moved by the test), not before, and
    catches up."""
    from playwright.sync_api import expect

    sent = relay_losing_frames(page, syncs_to_drop=1)
    dawn = datetime.datetime(2025, 6, 1, 8, 0, 0)
    page.clock.install(time=dawn)  # the page's timers: real time until paused
    tools = four_lines_in_pictomania(page, server, pause_at=dawn + datetime.timedelta(hours=1))
    syncs_sent(page, sent, 1)  # the gap seen: a sync, lost
    page.clock.run_for(1900)
    page.wait_for_timeout(200)
    assert sum(f["type"] == "sync" for f in sent) == 1, "the sync was sent again before 2 s"
    page.clock.run_for(200)
    syncs_sent(page, sent, 2)
    expect(tools).to_have_attribute("data-strokes", "4")
    assert sum(f["type"] == "sync" for f in sent) == 2


def test_the_rules_panel_in_both_games_and_the_setup_form(page, server) -> None:
    from playwright.sync_api import expect

    page.goto(server.url + "/")
    rules = page.locator("#rules")
    page.click("#rules-open")
    expect(rules).to_be_visible()
    expect(rules.get_by_role("tab", name="Kontour")).to_have_attribute("aria-selected", "true")
    expect(rules).to_contain_text("traits droits")
    expect(rules).to_contain_text("30 secondes")  # no game yet: the rule sheet's timer
    rules.get_by_role("tab", name="Pictomania").click()
    expect(rules).to_contain_text("mouton noir")
    shot(page, "rules-pictomania")
    page.click("#rules-close")
    expect(rules).to_be_hidden()
    # The form offers only what the server accepts, and refuses in French.
    page.check("input[value=pictomania]")
    expect(page.locator("select[name=opponents] option[value='1']")).to_be_disabled()
    expect(page.locator("select[name=opponents]")).to_have_value("2")
    page.fill("input[name=name]", 'Ana <3 "&"')
    page.click("#start")
    expect(page.locator("#setup-error")).to_have_text(re.compile("Votre nom ne peut pas contenir"))
    # In a game, the button opens that game's rules with the table's own figures.
    page.fill("input[name=name]", "Ana")
    page.click("#start")
    expect(page.locator(".card")).to_have_count(6)
    page.click("#rules-open")
    expect(rules.get_by_role("tab", name="Pictomania")).to_have_attribute("aria-selected", "true")
    expect(rules).to_contain_text(f"au bout de {TIMERS['round']} secondes")  # its pictomania_round_s
    page.keyboard.press("Escape")
    expect(rules).to_be_hidden()


def test_kontour_on_a_phone_both_ways_up_to_the_last_word(phone, fast) -> None:
    from playwright.sync_api import expect

    page = phone
    start(page, fast, "kontour", seed=7)  # « araignée » for the person, then Plume's orange word
    in_view(page, "#draw-card")
    page.dblclick("#draw-card")  # a double click draws once, with no « Pas maintenant ! »
    in_view(page, "button.word")
    expect(page.locator(".toast.error")).to_have_count(0)
    # The second click of a double click never chooses: the word may already lie under the pointer.
    page.dispatch_event("button.word.blue", "click", {"detail": 2})
    page.wait_for_timeout(300)
    expect(page.locator(".status")).to_contain_text("Choisissez votre mot")
    page.click("button.word.blue")
    expect(page.locator(".status")).to_contain_text("Faites deviner")
    touch_line(page, (40, 200), (200, 200))
    touch_line(page, (120, 60), (120, 200))
    expect(page.get_by_test_id("lines")).to_have_text("Traits : 2 / 15")
    for size, name in ((PORTRAIT, "portrait"), (LANDSCAPE, "landscape")):
        page.set_viewport_size(size)
        shot(page, f"phone-kontour-drawing-{name}")
        for selector in ("#board", ".topline", ".controls .hint", "#feed li:first-child", "#rules-open"):
            in_view(page, selector)
    # A finger still on the glass when the turn ends: the preview line goes (and stays gone
    # while frames come in), lifting the finger sends nothing.
    cdp = page.context.new_cdp_session(page)
    x0, y0 = to_page(page, 30, 30)
    x1, y1 = to_page(page, 220, 40)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x0, "y": y0}]})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x1, "y": y1}]})
    assert blue_pixels(page) > 0  # the dashed preview
    # Plume draws; the guess box and its button are on screen both ways up.
    turn_over = ms(18) + TIMERS["fast turn"] * 1000
    expect(page.locator(".status")).to_contain_text("Plume dessine", timeout=turn_over)
    assert blue_pixels(page) == 0
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    expect(page.locator(".toast.error")).to_have_count(0)
    for size, name in ((LANDSCAPE, "landscape"), (PORTRAIT, "portrait")):
        page.set_viewport_size(size)
        shot(page, f"phone-kontour-guessing-{name}")
        for selector in (
            "#board",
            "[data-testid=timer]",
            "#guess",
            ".guess-form button",
            "#feed li:first-child",
        ):
            in_view(page, selector)
    page.click("#rules-open")
    expect(page.locator("#rules")).to_contain_text(f"{TIMERS['fast turn']} secondes")  # this table's timer
    in_view(page, "#rules-close")
    page.click("#rules-close")
    # Finding Plume's orange word ends the 1-point game (Plume 2, the person 1): the last word
    # comes first.
    page.fill("#guess", "Grande Muraille de Chine")
    page.press("#guess", "Enter")
    expect(page.get_by_test_id("game-over")).to_be_visible(timeout=ms(20))
    expect(page.get_by_test_id("last-word")).to_have_text("Grande Muraille de Chine")
    expect(page.get_by_test_id("game-over")).to_contain_text("Trouvé par vous")
    expect(page.get_by_test_id("game-over")).to_contain_text("La victoire revient à Plume.")
    in_view(page, "[data-testid=last-word]")
    shot(page, "phone-kontour-game-over")


@pytest.mark.parametrize("opponents", [2, 5])
def test_pictomania_on_a_phone_both_ways_up(phone, server, opponents) -> None:
    from playwright.sync_api import expect

    page = phone
    start(page, server, "pictomania", opponents=opponents, level="easy", seed=4)
    expect(page.locator(".card")).to_have_count(6)
    expect(page.locator(".opponent")).to_have_count(opponents)
    touch_line(page, (40, 40), (200, 180))
    needed = (
        "#board",
        "[data-testid=secret]",
        "[data-testid=timer]",
        "#done",
        ".opponent canvas.mini",
        ".opponent .pick",
        ".card",
    )
    for size, name in ((PORTRAIT, "portrait"), (LANDSCAPE, "landscape")):
        page.set_viewport_size(size)
        shot(page, f"phone-pictomania-{opponents}-{name}")
        for selector in needed:
            in_view(page, selector)
