"""The bot demo room (``GET /demo/bot``) and the JavaScript bot client it runs
(``GET /clients/js/griffon-bot.js``), served from the checkout's ``clients/js/`` folder.

Only the files listed in ``FILES`` are served (no path is built from the request). An installed
package without the checkout's ``clients/`` folder answers 404 ``not_found`` for them.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

from service.errors import NotFound

CLIENT_DIR = Path(__file__).resolve().parent.parent / "clients" / "js"
FILES = {  # URL path under /clients/js/ -> media type
    "griffon-bot.js": "text/javascript",
    "index.d.ts": "text/plain",
    "demo/index.html": "text/html",
    "demo/room.js": "text/javascript",
    "demo/room.css": "text/css",
}
router = APIRouter(include_in_schema=False)


def client_file(name: str) -> FileResponse:
    """One file of ``clients/js/`` named in ``FILES``, else 404."""
    media = FILES.get(name)
    path = CLIENT_DIR / name
    if media is None or not path.is_file():
        raise NotFound(f"no such client file: {name[:100]}")
    return FileResponse(path, media_type=media, headers={"Cache-Control": "no-cache"})


@router.get("/demo/bot")
async def demo_page() -> FileResponse:
    """A canvas room where a person draws and Griffon's bot guesses (docs/BOT_QUICKSTART.md)."""
    return client_file("demo/index.html")


@router.get("/clients/js/{name:path}")
async def client_asset(name: str) -> FileResponse:
    """The JavaScript bot client and the demo room's script and style."""
    return client_file(name)
