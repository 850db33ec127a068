"""The bot protocol ``WS /v1/bot`` (work in progress) and the registry of bot sessions."""

from __future__ import annotations

from fastapi import APIRouter

from service.settings import Settings

router = APIRouter()


class BotRegistry:
    """Live bot sessions and the transcripts of finished ones (bounded)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.live: dict[str, object] = {}
        self.transcripts: dict[str, object] = {}

    @property
    def live_count(self) -> int:
        """Open bot connections."""
        return len(self.live)

    @property
    def transcript_count(self) -> int:
        """Transcripts readable at ``/v1/bot/sessions``."""
        return len(self.transcripts)

    async def aclose(self) -> None:
        """Forget every session (shutdown)."""
        self.live.clear()
