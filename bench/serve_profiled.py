"""``python -m bench.serve_profiled --host H --port P --workers 1``: ``griffon serve`` (``griffon.serve``)
with cProfile on its main thread (the event loop), switched on by SIGUSR1 and written to
``$GRIFFON_BENCH_PROFILE`` (pstats) by SIGUSR2 — ``bench.bench_capacity --profile``'s fallback where
py-spy cannot attach to a process. The other threads (inference, preprocessing) are not profiled.
"""

from __future__ import annotations

import cProfile
import os
import signal
from types import FrameType

from griffon import serve

PROFILE = cProfile.Profile()


def start(signum: int, frame: FrameType | None) -> None:
    """SIGUSR1: profile the main thread from now on."""
    PROFILE.enable()


def stop(signum: int, frame: FrameType | None) -> None:
    """SIGUSR2: stop and write the profile."""
    PROFILE.disable()
    PROFILE.dump_stats(os.environ["GRIFFON_BENCH_PROFILE"])


def main() -> None:
    if "GRIFFON_BENCH_PROFILE" not in os.environ:
        raise SystemExit("GRIFFON_BENCH_PROFILE names the file the profile is written to")
    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    serve.main()


if __name__ == "__main__":
    main()
