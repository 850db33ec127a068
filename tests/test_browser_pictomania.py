"""A whole Pictomania game in a real headless Chromium, with its recap (its own file, so that the
parallel test run (pytest-xdist, one file per worker) plays it beside the Kontour browser tests).
Fixtures and helpers: tests/test_browser_play.py."""

from __future__ import annotations

import re
import struct
from pathlib import Path

from tests.test_browser_play import (  # noqa: F401 - fixtures are found by name
    LANDSCAPE,
    PORTRAIT,
    SHOTS,
    browser,
    drag,
    in_view,
    ms,
    page,
    pytestmark,
    server,
    shot,
    start,
    to_page,
)


def test_pictomania_a_whole_game_with_its_recap(page, server) -> None:  # noqa: F811 - fixtures
    from playwright.sync_api import expect

    start(page, server, "pictomania", opponents=2)
    expect(page.locator(".card")).to_have_count(6)
    expect(page.get_by_test_id("secret")).to_contain_text("Votre mot")
    tools = page.locator(".draw-tools")
    expect(page.locator("#undo")).to_be_disabled()  # nothing drawn yet

    def zigzag() -> None:
        page.mouse.move(*to_page(page, 40, 60))
        page.mouse.down()
        for i in range(1, 20):
            page.mouse.move(*to_page(page, 40 + i * 9, 60 + (i % 4) * 15))
        page.mouse.up()

    # Two strokes, « Annuler » takes the last back, « Effacer » the rest; then draw again.
    zigzag()
    drag(page, (60, 150), (200, 170))
    expect(tools).to_have_attribute("data-strokes", "2")
    page.click("#undo")
    expect(tools).to_have_attribute("data-strokes", "1")
    page.click("#clear")  # « Effacer » asks first: nothing is cleared on one tap
    expect(page.locator("#clear")).to_have_text("Effacer tout ?")
    expect(tools).to_have_attribute("data-strokes", "1")
    page.click("#clear")
    expect(tools).to_have_attribute("data-strokes", "0")
    expect(page.locator("#undo")).to_be_disabled()
    expect(page.locator("#clear")).to_be_disabled()
    zigzag()
    expect(tools).to_have_attribute("data-strokes", "1")
    page.locator(".opponent[data-player=ia1] .pick[data-number='3']").click()
    expect(page.locator(".opponent[data-player=ia1] .bet")).to_contain_text("3")
    expect(page.locator(".opponent[data-player=ia2] .pick[data-number='3']")).to_be_disabled()
    expect(page.locator("canvas.mini").first).to_be_visible()
    shot(page, "pictomania-round")
    page.click("#done")  # no bet on Fusain yet: « J'ai fini » asks first (it ends the betting too)
    expect(page.locator("#done")).to_contain_text("Sans miser sur 1 dessin")
    expect(page.locator(".opponent[data-player=ia2] .pick").first).to_be_enabled()
    shot(page, "pictomania-done-asks")
    page.click("#done")
    # The recap: every drawing with its word, and every bet on it, right or wrong.
    expect(page.locator(".results-box")).to_be_visible(timeout=ms(15))
    recap = page.get_by_test_id("recap")
    expect(recap.locator(".recap-item")).to_have_count(3)
    expect(recap.locator(".recap-item canvas.mini")).to_have_count(3)
    mine = recap.locator(".recap-item[data-player=ia1] .outcome[data-guesser=joueur]")
    expect(mine).to_contain_text("Vous : 3")
    drawn = int(
        recap.locator(".recap-item[data-player=ia1] .recap-word b").first.inner_text().strip().split()[0]
    )
    expect(mine).to_have_class(re.compile("right" if drawn == 3 else "wrong"))
    expect(page.locator(".my-bets")).to_contain_text("3 sur Plume")
    expect(page.locator(".results-box tbody tr")).to_have_count(3)
    shot(page, "pictomania-results")
    # « Revoir les dessins » draws each one again stroke by stroke; « Enregistrer l'image » saves a PNG.
    mine_mini = recap.locator(".recap-item[data-player=joueur] canvas.mini")
    assert page.evaluate("() => { document.getElementById('replay').click(); return document.querySelector("
                         "'.recap-item[data-player=joueur] canvas.mini').dataset.shown; }") == "0"
    expect(mine_mini).to_have_attribute("data-shown", "1")
    with page.expect_download() as downloading:
        page.click("#picture")
    picture = downloading.value
    assert picture.suggested_filename == "griffon-pictomania-manche-1.png"
    data = Path(picture.path()).read_bytes()
    width, height = struct.unpack(">II", data[16:24])  # the PNG's IHDR
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and width == 16 + 3 * (220 + 16) and height == 44 + 220 + 56
    SHOTS.mkdir(parents=True, exist_ok=True)
    picture.save_as(SHOTS / "pictomania-recap-picture.png")
    shot(page, "pictomania-replay")
    page.set_viewport_size(LANDSCAPE)  # a phone on its side: the recap and its button without scrolling
    in_view(page, ".results-box .recap-item canvas.mini")
    in_view(page, "#next-round")
    in_view(page, "#replay")  # « Revoir les dessins » and the PNG on a phone held sideways too
    in_view(page, "#picture")
    shot(page, "pictomania-results-landscape")
    page.set_viewport_size({"width": 1280, "height": 800})  # a laptop: the points open, the button in sight
    in_view(page, "#next-round")
    whole = page.evaluate("""() => { const button = document.getElementById("next-round");
        const b = button.getBoundingClientRect();
        const [x, y] = [(b.left + b.right) / 2, (b.top + b.bottom) / 2]; // its edges, inside its corners
        return [[b.left + 10, y], [b.right - 10, y], [x, b.top + 3], [x, b.bottom - 3]]
          .every(([px, py]) => button.contains(document.elementFromPoint(px, py))); }""")
    assert whole, "« Manche suivante » is partly hidden (under the recap's edge)"
    shot(page, "pictomania-results-1280x800")
    page.set_viewport_size({"width": 1280, "height": 900})
    # The round's end was heard (a bet of mine right: « found », else « end »); « Son » mutes.
    expect(page.locator("html")).to_have_attribute("data-sound", re.compile("^(found|end)$"))
    page.click("#sound")
    expect(page.locator("#sound")).to_have_attribute("aria-pressed", "false")
    page.evaluate("document.documentElement.dataset.sound = 'none'")
    page.click("#next-round")
    expect(page.locator(".status")).to_have_text("Manche 2 / 2")
    page.click("#done")  # no bet this round: asked first
    page.click("#done")  # the round ends when the AIs have taken the other bonus tokens
    # The end of the game: the winner, every round's score, and each round's drawings again.
    expect(page.locator(".results-box h2").first).to_have_text(
        re.compile("Victoire|Fin de partie"), timeout=ms(25)
    )
    expect(page.get_by_test_id("summary").locator("tbody tr")).to_have_count(3)
    expect(page.get_by_test_id("summary").locator("thead th")).to_have_text(["Joueur", "M1", "M2", "Total"])
    page.get_by_role("tab", name="Manche 1").click()
    expect(page.get_by_role("tab", name="Manche 1")).to_have_attribute("aria-selected", "true")
    expect(recap.locator(".recap-item canvas.mini")).to_have_count(3)
    expect(recap.locator(".recap-item[data-player=ia1] .outcome[data-guesser=joueur]")).to_contain_text(
        "Vous : 3"
    )
    shot(page, "pictomania-end")
    assert page.get_attribute("html", "data-sound") == "none"  # muted: the game's end made no sound
    page.reload()  # every round's drawings come back from the server for the summary
    expect(page.locator("#sound")).to_have_attribute("aria-pressed", "false")  # the choice is kept
    page.get_by_role("tab", name="Manche 1").click()
    expect(recap.locator(".recap-item canvas.mini")).to_have_count(3)
    page.set_viewport_size(PORTRAIT)
    shot(page, "pictomania-end-phone")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.click("#rematch")  # « Rejouer »: the same settings, a new game
    expect(page.locator(".status")).to_have_text("Manche 1 / 2")
    expect(page.locator(".opponent")).to_have_count(2)
    page.click("#quit")  # « Quitter » asks first
    expect(page.locator("#quit")).to_have_text("Quitter la partie ?")
    expect(page.locator(".status")).to_be_visible()
    page.click("#quit")
    expect(page.locator("#setup")).to_be_visible()
    expect(page.locator("#quit")).to_be_hidden()
