"""Run every benchmark (``python -m bench``), or the ones named: ``python -m bench model matcher``."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main() -> None:
    """Run the named benchmarks (default: all), each in turn, printing its figures."""
    available = sorted(
        m.name.removeprefix("bench_") for m in pkgutil.iter_modules([str(Path(__file__).parent)])
        if m.name.startswith("bench_")
    )
    chosen = sys.argv[1:] or available
    for name in chosen:
        if name not in available:
            raise SystemExit(f"unknown benchmark {name!r}; available: {', '.join(available)}")
        print(f"\n== bench_{name} ==")
        importlib.import_module(f"bench.bench_{name}").main([])


if __name__ == "__main__":
    main()
