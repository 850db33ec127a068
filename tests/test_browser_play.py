"""The game page in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright):
draw on the canvas with the mouse and with touch, see the AI's guesses, reload and resume, and
play a Pictomania game to its end."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

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
SHOTS = Path(os.environ.get("GRIFFON_SCREENSHOTS", "/tmp/griffon-screenshots"))


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest):
    with play_server(
        request, GRIFFON_PLAY_KONTOUR_TIMER_S="25", GRIFFON_PLAY_PICTOMANIA_ROUND_S="15"
    ) as running:
        yield running


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, has_touch=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert not errors, f"JavaScript errors: {errors}"


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


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def test_kontour_draw_lines_see_the_ai_guess_and_resume_after_a_reload(page, server) -> None:
    from playwright.sync_api import expect

    # Seed 10 deals « araignée » / « pelle »: a house cannot be guessed right, so the turn lasts
    # until its timer (a random deal could end it early and flake the test).
    start(page, server, "kontour", seed=10)
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
    expect(page.get_by_test_id("timer")).to_have_text(re.compile(r"^\d+ s$"))
    if HAS_WEIGHTS:  # the shipped recognizer: the AI's guesses appear live in the feed
        expect(page.locator("#feed li.guess[data-player=ia1]").first).to_be_visible(timeout=15_000)
        page.locator("#feed li.guess .chip.hors").first.click()  # the person's « hors sujet »
        expect(page.locator("#feed .badge.hors_sujet").first).to_be_visible()
    shot(page, "kontour-drawing")
    page.reload()
    expect(page.get_by_test_id("lines")).to_have_text("Traits : 6 / 15")
    expect(page.locator(".status")).to_contain_text("Faites deviner")
    # The turn ends; the AI draws next and the person guesses by typing.
    expect(page.locator(".status")).to_contain_text("Plume dessine", timeout=30_000)
    page.fill("#guess", "zèbre")
    page.press("#guess", "Enter")
    expect(page.locator("#feed li.guess[data-player=joueur]")).to_contain_text("zèbre")
    expect(page.locator("#feed li.guess[data-player=joueur]")).to_have_class(re.compile("no"))
    page.wait_for_function("document.querySelectorAll('#feed li').length >= 1")
    shot(page, "kontour-guessing")


def test_pictomania_a_whole_game_in_the_browser(page, server) -> None:
    from playwright.sync_api import expect

    start(page, server, "pictomania", opponents=2)
    expect(page.locator(".card")).to_have_count(6)
    expect(page.get_by_test_id("secret")).to_contain_text("Votre mot")
    page.mouse.move(*to_page(page, 40, 60))
    page.mouse.down()
    for i in range(1, 20):
        page.mouse.move(*to_page(page, 40 + i * 9, 60 + (i % 4) * 15))
    page.mouse.up()
    page.locator(".opponent[data-player=ia1] .pick[data-number='3']").click()
    expect(page.locator(".opponent[data-player=ia1] .bet")).to_contain_text("3")
    expect(page.locator(".opponent[data-player=ia2] .pick[data-number='3']")).to_be_disabled()
    expect(page.locator("canvas.mini").first).to_be_visible()
    shot(page, "pictomania-round")
    page.click("#done")
    expect(page.locator(".results-box")).to_be_visible(timeout=15_000)
    expect(page.locator(".results-box tbody tr")).to_have_count(3)
    shot(page, "pictomania-results")
    page.click("#next-round")
    expect(page.locator(".status")).to_have_text("Manche 2 / 2")
    expect(page.locator(".results-box h2")).to_have_text(re.compile("Victoire|Fin de partie"), timeout=25_000)
    shot(page, "pictomania-end")
    page.get_by_role("button", name="Nouvelle partie").click()
    expect(page.locator("#setup")).to_be_visible()
