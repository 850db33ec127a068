"""What both sockets (the bot's and the games') share: reading untrusted JSON text, the typed
error a frame raises, and the ``error`` frame sent back."""

from __future__ import annotations

import json
from typing import Any


class FrameError(ValueError):
    """A frame the server cannot use: ``code`` is the error frame's code, ``ref`` echoes the
    client's frame id, ``details`` are extra fields of the error frame."""

    def __init__(self, code: str, message: str, ref: Any = None, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.ref = ref
        self.details = details

    def to_frame(self) -> dict[str, Any]:
        """The ``error`` frame that tells the client."""
        return error_frame(self.code, self.message, self.ref) | self.details


def error_frame(code: str, message: str, ref: Any = None) -> dict[str, Any]:
    """A server ``error`` frame."""
    frame: dict[str, Any] = {"type": "error", "code": code, "message": message}
    if ref is not None:
        frame["ref"] = ref
    return frame


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def load_json(text: str | bytes, reject_constants: bool = False) -> Any:
    """``json.loads`` for untrusted text: every failure is ``FrameError("bad_json")``.

    Refused: invalid JSON, ``NaN``/``Infinity`` when ``reject_constants``, integers beyond
    Python's digit limit, nesting deeper than the parser's recursion limit, and strings with lone
    UTF-16 surrogates (they could not be written back out as UTF-8).
    """
    try:
        data = json.loads(text, parse_constant=_reject_constant if reject_constants else None)
    except json.JSONDecodeError as error:
        raise FrameError("bad_json", f"the frame is not valid JSON: {error.msg}") from None
    except RecursionError:
        raise FrameError("bad_json", "the frame is nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as error:  # e.g. an integer of 5,000 digits
        raise FrameError("bad_json", f"the frame is not usable JSON: {str(error)[:120]}") from None
    if (b"\\u" if isinstance(text, bytes) else "\\u") in text:
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            message = "the frame holds a lone UTF-16 surrogate (\\ud800-\\udfff)"
            raise FrameError("bad_json", message) from None
    return data
