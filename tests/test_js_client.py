"""The bot demo room (``/demo/bot``, clients/js/demo/) in a real headless Chromium against the real
server with the shipped recognizer: a person draws a real Quick, Draw! drawing with the mouse and the
bot, seated through clients/js/griffon-bot.js, finds the word; a word the model cannot guess is
listed by ``round_ready.unknown`` and the round starts without it; a dropped socket is reconnected and the
round goes on."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from games.ai.drawing_pack import DrawingPack
from griffon.launch import REPO, Server, patient, running_server
from tests.bot_clients import node_command
from tests.play_helpers import HAS_WEIGHTS
from tests.test_browser_play import ARGS, CHROMIUM, ms, page_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium"),
    pytest.mark.skipif(not HAS_WEIGHTS, reason="the demo's French words need the shipped recognizer"),
]
KEYS = {"maison": "house", "arbre": "tree", "voiture": "car", "poisson": "fish"}  # the round's candidates


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with running_server({"GRIFFON_BOT_IDLE_TIMEOUT_S": "60"}) as running:
        yield running


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    sync_api.expect.set_options(timeout=ms(5))
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, timeout=ms(30))
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    yield from page_in(browser, viewport={"width": 1280, "height": 900})


def open_room(page, server: Server, words: list[str]) -> None:
    """The demo room, greeted, with only ``words`` checked as the round's candidates."""
    from playwright.sync_api import expect

    page.goto(server.url + "/demo/bot")
    expect(page.locator("body[data-ready=true]")).to_be_attached(timeout=ms(15))
    expect(page.locator("#status")).to_contain_text("Connecté — protocole v")
    for box in page.locator("input[name=word]").all():
        box.set_checked(box.get_attribute("value") in words)


def start_round(page, level: str = "hard") -> str:
    """Start a round; the word the page asks the person to draw."""
    from playwright.sync_api import expect

    page.select_option("select[name=difficulty]", level)
    page.click("#start")
    expect(page.locator("#secret")).to_contain_text("Dessinez")
    return page.locator("#canvas").get_attribute("data-answer")


def draw(page, strokes: list) -> None:
    """Draw Quick, Draw! strokes (0-255 units) on the canvas with the mouse."""
    box = page.locator("#canvas").bounding_box()
    for xs, ys, *_ in strokes:
        points = [(box["x"] + x / 255 * box["width"], box["y"] + y / 255 * box["height"])
                  for x, y in zip(xs, ys, strict=True)]
        page.mouse.move(*points[0])
        page.mouse.down()
        for point in points[1:]:
            page.mouse.move(*point, steps=2)
        page.mouse.up()


def real_drawing(word: str) -> list:
    """The first recognised drawing of the category ``KEYS[word]`` in the shipped pack."""
    return DrawingPack.load().drawings(KEYS[word])[0]


@pytest.mark.skipif(node_command() is None, reason="no Node >= 20 on PATH")
def test_the_client_passes_its_own_tests_in_node() -> None:
    """clients/js/test/: negotiation, y, resume and replay, back-off, refusals, client-side checks
    against a scripted in-memory server."""
    node, *flags = node_command()[:-1]  # without the driver script
    result = subprocess.run([node, *flags, "--test", "clients/js/test/"], cwd=REPO, capture_output=True,
                            text=True, timeout=patient(60))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert re.search(r"^# pass [1-9]", result.stdout, re.MULTILINE) and "# fail 0" in result.stdout


@pytest.mark.skipif(node_command() is None, reason="no Node >= 20 on PATH")
def test_the_readme_example_plays_a_round(server: Server, tmp_path: Path) -> None:
    """clients/js/README.md's example, as written (its import and URL pointed here), in Node."""
    readme = (REPO / "clients" / "js" / "README.md").read_text(encoding="utf-8")
    example = re.search(r"## Example\n\n```js\n(.*?)```", readme, re.DOTALL).group(1)
    assert len(example.splitlines()) <= 22
    script = tmp_path / "example.mjs"
    module = json.dumps(str(REPO / "clients" / "js" / "griffon-bot.js"))
    script.write_text(example.replace('"@griffon/bot-client"', module)
                      .replace("ws://127.0.0.1:8000", server.ws_url), encoding="utf-8")
    node, *flags = node_command()[:-1]
    result = subprocess.run([node, *flags, str(script)], capture_output=True, text=True, timeout=patient(60))
    assert result.returncode == 0, result.stderr
    assert "Griffon: « maison »" in result.stdout and "said: [ 'maison' ]" in result.stdout, result.stdout


def test_the_demo_page_and_the_client_are_served(server: Server) -> None:
    page = httpx.get(server.url + "/demo/bot", timeout=patient(10))
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert '<html lang="fr">' in page.text and "/clients/js/demo/room.js" in page.text
    client = httpx.get(server.url + "/clients/js/griffon-bot.js", timeout=patient(10))
    assert client.status_code == 200 and "javascript" in client.headers["content-type"]
    assert "export async function connect" in client.text
    for name in ("package.json", "tools/drive.mjs", "../../pyproject.toml", "demo/%2e%2e/griffon-bot.js"):
        response = httpx.get(server.url + "/clients/js/" + name, timeout=patient(10))
        assert response.status_code == 404, name


def test_a_person_draws_and_the_bot_finds_the_word(page, server: Server) -> None:
    from playwright.sync_api import expect

    open_room(page, server, list(KEYS))
    answer = start_round(page)
    assert answer in KEYS
    draw(page, real_drawing(answer))
    expect(page.locator("#seen li").first).to_be_visible(timeout=ms(10))  # the analysis, live
    expect(page.locator("#guesses li.right")).to_have_attribute("data-label", KEYS[answer], timeout=ms(30))
    expect(page.locator("#secret")).to_contain_text(f"Griffon a trouvé « {answer} »")
    said = page.locator("#guesses li").all_inner_texts()
    assert len(said) == len(set(said)) and all(text.startswith("« ") for text in said)
    labels = page.locator("#guesses li").evaluate_all("items => items.map((i) => i.dataset.label)")
    assert set(labels) <= set(KEYS.values())  # only the checked candidates
    expect(page.locator("#canvas")).to_have_attribute("data-said", ",".join(
        text.split(" »")[0].removeprefix("« ") for text in said))


def test_a_word_the_model_cannot_guess_is_listed_and_the_round_starts(page, server: Server) -> None:
    from playwright.sync_api import expect

    open_room(page, server, ["maison", "arbre"])
    page.fill("#add-word input[name=new-word]", "xyzzy")
    page.click("#add-word button")
    page.click("#start")
    expect(page.locator("#errors li.unknown").first).to_contain_text("«\u00a0xyzzy\u00a0»")
    expect(page.locator("#secret")).to_contain_text("Dessinez")
    assert page.locator("#errors li.error").count() == 0


def test_a_dropped_socket_is_reconnected_and_the_round_goes_on(page, server: Server) -> None:
    from playwright.sync_api import expect

    open_room(page, server, list(KEYS))
    answer = start_round(page)
    strokes = real_drawing(answer)
    draw(page, strokes[:1])
    page.evaluate("window.griffonDemo.bot.drop()")
    expect(page.locator("body[data-resumed='1']")).to_be_attached(timeout=ms(15))
    expect(page.locator("#status")).to_contain_text("Reconnecté")
    expect(page.locator("#errors li.note").first).to_contain_text(
        "Partie reprise" if page.evaluate("window.griffonDemo.bot.version") >= 2 else "Nouvelle session")
    draw(page, strokes[1:])
    expect(page.locator("#guesses li.right")).to_have_attribute("data-label", KEYS[answer], timeout=ms(30))
