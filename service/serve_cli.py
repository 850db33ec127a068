"""`griffon serve`: run the web service with uvicorn."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the `serve` command to the root `griffon` app."""
    app.command("serve")(serve)


def serve(
    host: str = typer.Option("127.0.0.1", help="address to listen on"),
    port: int = typer.Option(8000, help="port to listen on"),
) -> None:
    """Serve the solo games, the bot protocol and the HTTP API with the shipped model."""
    import uvicorn

    uvicorn.run("service.app:create_app", factory=True, host=host, port=port)
