"""``python -m bench.serve_profiled FILE --host H --port P --workers 1``: ``griffon serve``
(``griffon.serve``, given the arguments after FILE) with cProfile on its main thread (the event
loop), switched on by SIGUSR1 and written to FILE (pstats) by SIGUSR2 — ``bench.bench_capacity
--profile``'s fallback where py-spy cannot attach to a process. The other threads (inference,
preprocessing) are not profiled.
"""

from __future__ import annotations

import cProfile
import signal
import sys
from types import FrameType

from griffon import serve

PROFILE = cProfile.Profile()
OUT: list[str] = []  # the file the profile is written to


def start(signum: int, frame: FrameType | None) -> None:
    """SIGUSR1: profile the main thread from now on."""
    PROFILE.enable()


def stop(signum: int, frame: FrameType | None) -> None:
    """SIGUSR2: stop and write the profile."""
    PROFILE.disable()
    PROFILE.dump_stats(OUT[0])


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        raise SystemExit("usage: python -m bench.serve_profiled FILE [griffon serve's options]")
    OUT.append(sys.argv.pop(1))
    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    serve.main()


if __name__ == "__main__":
    main()
