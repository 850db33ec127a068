"""Answer matcher figures: lexicon build/load time and memory, matches per second, latency.

Run: ``python -m bench.bench_matcher`` (``--rounds N`` for a longer workload). Each load is
measured in a fresh subprocess so that the import caches of one do not flatter the other.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

# A mixed Kontour-like workload: (answer, guess) pairs, about half accepted.
WORKLOAD = [
    ("cat", "chat"),
    ("cat", "un chat"),
    ("cat", "chats"),
    ("cat", "château"),
    ("cat", "char"),
    ("cat", "chatt"),
    ("cat", "le chat noir"),
    ("cat", "chien"),
    ("horse", "chevaux"),
    ("eye", "yeux"),
    ("bicycle", "bicyclette"),
    ("cake", "bateau"),
    ("cake", "gateu"),
    ("rabbit", "sapin"),
    ("The Eiffel Tower", "tour eifel"),
    ("elephant", "éléphant"),
    ("tennis racquet", "raquette de tennis"),
    ("apple", "pomme de terre"),
    ("potato", "patate"),
    ("key", "clef"),
    ("helicopter", "hélicoptaire"),
    ("cup", "tasse à café"),
    ("dog", ""),
    ("dog", "xqzjw"),
    ("spider", "araigné"),
    ("umbrella", "paraplui"),
    ("car", "voiture rouge"),
    ("médecin", "Docteur"),
    ("bateau", "gâteau"),
    ("lion", "lionne"),
]

_LOAD_SNIPPET = """
import json, os, resource, sys, time, tracemalloc
trace = sys.argv[1] == "trace"
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
import vocab.matcher, vocab.lexicon
rss0 = rss()
if trace:
    tracemalloc.start()
t0 = time.perf_counter()
lex = vocab.lexicon.get_lexicon()
t1 = time.perf_counter()
vocab.matcher.warm_up()
t2 = time.perf_counter()
traced = tracemalloc.get_traced_memory()[0] / 2**20 if trace else 0.0
print(json.dumps({"from_cache": lex.from_cache, "lexicon_s": t1 - t0, "index_s": t2 - t1,
                  "traced_mb": traced, "rss_mb": rss() - rss0,
                  "nouns": len(lex.noun_lemmas), "words": len(lex.words)}))
"""


def _load_in_subprocess(cache_dir: str, trace: bool) -> dict:
    env = {**os.environ, "GRIFFON_CACHE_DIR": cache_dir}
    out = subprocess.run(
        [sys.executable, "-c", _LOAD_SNIPPET, "trace" if trace else "time"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def bench_loads(build: bool) -> None:
    """Cold build (parse DELA, no cache) and warm load (pickle cache), each in a subprocess.

    Times and RSS growth come from untraced runs; the Python heap held by the lexicon and the
    matcher index comes from a separate tracemalloc run (tracemalloc slows allocation a lot).
    """
    with tempfile.TemporaryDirectory() as cache:
        if build:
            r = _load_in_subprocess(cache, trace=False)
            print(
                f"build, no cache (parses DELA): {r['lexicon_s']:6.2f} s, RSS +{r['rss_mb']:.0f} MiB"
                f"  [{r['nouns']} inflected nouns, {r['words']} word forms]"
            )
        else:
            _load_in_subprocess(cache, trace=False)  # fill the cache
        r = _load_in_subprocess(cache, trace=False)
        t = _load_in_subprocess(cache, trace=True)
        print(
            f"load from cache: lexicon {r['lexicon_s']:.2f} s + matcher index {r['index_s']:.2f} s"
            f" (cached={r['from_cache']}), RSS +{r['rss_mb']:.0f} MiB,"
            f" Python heap {t['traced_mb']:.0f} MiB"
        )


def bench_matches(rounds: int) -> None:
    """Throughput and per-match latency on the mixed workload (lexicon already loaded)."""
    from vocab import match, warm_up

    warm_up()
    accepted = sum(match(a, g).accepted for a, g in WORKLOAD)
    lat = []
    t_all, cpu_all = time.perf_counter(), time.process_time()
    for _ in range(rounds):
        for a, g in WORKLOAD:
            t0 = time.perf_counter_ns()
            match(a, g)
            lat.append(time.perf_counter_ns() - t0)
    wall, cpu = time.perf_counter() - t_all, time.process_time() - cpu_all
    lat.sort()
    q = statistics.quantiles(lat, n=100)
    print(
        f"matches: {len(lat)} ({accepted}/{len(WORKLOAD)} of the workload accepted)"
        f"  {len(lat) / wall:,.0f} matches/s  p50 {q[49] / 1e3:.1f} µs  p99 {q[98] / 1e3:.1f} µs"
        f"  max {lat[-1] / 1e3:.0f} µs  (CPU {cpu / len(lat) * 1e6:.1f} µs/match: steadier on a busy machine)"
    )
    tab = ["gâteau", "râteau", "chapeau", "château", "homme", "pomme"]
    t0 = time.perf_counter()
    for _ in range(rounds):
        for a, g in WORKLOAD:
            match(a, g, table=tab)
    dt = (time.perf_counter() - t0) / (rounds * len(WORKLOAD))
    print(f"with a 6-word table: {1 / dt:,.0f} matches/s  mean {dt * 1e6:.1f} µs")


def main(argv: list[str] | None = None) -> None:
    """Print the matcher's figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--skip-build", action="store_true", help="skip the slow cold build")
    args = parser.parse_args(argv)
    bench_loads(build=not args.skip_build)
    bench_matches(args.rounds)


if __name__ == "__main__":
    main()
