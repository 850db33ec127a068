"""The bot socket (``WS /v1/bot``): the routes, one room's session, and the protocol's frames."""
