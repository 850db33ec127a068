"""What the serving process's memory is made of: the RSS of a bare Python, then of each library and
loaded piece added in turn (numpy, ONNX Runtime, FastAPI / uvicorn, the service's modules, the
shipped model, the vocabulary and the matcher's index), each step measured in a fresh subprocess
that imports everything before it, and what PyTorch alone would add (it is not on the serving path:
the model is served from its bundle, ``model.bundle``); then the RSS of a real idle server
(``griffon.launch.running_server``) and whether the serving path imports PyTorch (``python -X
importtime -c "import service.app"``: who imports it first; the running server's memory map:
whether libtorch is loaded).

Run: ``python -m bench.bench_memory [--json OUT]`` (about a minute; the server's start-up is most of it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from griffon.launch import REPO, running_server

# (label, statement added to everything before it)
STEPS: list[tuple[str, str]] = [
    ("python", "pass"),
    ("+ numpy", "import numpy"),
    ("+ onnxruntime", "import onnxruntime"),
    ("+ fastapi / uvicorn", "import fastapi, uvicorn"),
    ("+ the service's modules (import service.app)", "import service.app"),
    ("+ the model loaded (model.Guesser.load())", "from model import Guesser; guesser = Guesser.load()"),
    ("+ the vocabulary (vocab.load_vocabulary, warm_up)",
     "from vocab import load_vocabulary, warm_up; vocabulary = load_vocabulary(); warm_up()"),
]
# not on the serving path (the model is served from its bundle, model.bundle): what PyTorch would add
TORCH_STEP = ("torch, for comparison (python + numpy + torch)", ["import numpy", "import torch"])
REPORT = """
import gc, json, re, sys
gc.collect()
status = open("/proc/self/status").read()
kb = dict(re.findall(r"^(VmRSS|VmHWM|RssAnon):\\s+(\\d+) kB", status, re.M))
print(json.dumps({"rss_mb": int(kb["VmRSS"]) / 1024, "peak_mb": int(kb["VmHWM"]) / 1024,
                  "anon_mb": int(kb["RssAnon"]) / 1024,
                  "torch_imported": "torch" in sys.modules, "modules": len(sys.modules)}))
"""


def measure_step(statements: list[str]) -> dict[str, Any]:
    """RSS of a fresh Python that ran ``statements`` (from the repository root)."""
    code = "\n".join([*statements, REPORT])
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    if done.returncode != 0:
        raise RuntimeError(f"step failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1]) | {"seconds": time.perf_counter() - started}


def import_chain(module: str, target: str = "torch") -> dict[str, Any]:
    """Who imports ``target`` first when ``module`` is imported (``-X importtime``): the chain
    from ``module`` down to it, and its cumulative import time."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], cwd=REPO,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    rows = []
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( +)(\S+)", line)
        if match:
            rows.append((len(match.group(3)), match.group(4), int(match.group(2))))
    index = next((i for i, row in enumerate(rows) if row[1] == target), None)
    if index is None:
        return {"imported": False, "chain": [], "cumulative_ms": 0.0}
    chain, depth = [target], rows[index][0]
    for indent, name, _ in rows[index + 1 :]:  # children are printed before their importer
        if indent < depth:
            chain.append(name)
            depth = indent
    return {"imported": True, "chain": chain[::-1], "cumulative_ms": rows[index][2] / 1000}


def server_figures() -> dict[str, Any]:
    """An idle real server: its RSS, and the native libraries it holds (libtorch, ONNX Runtime)."""
    with running_server({}) as server:
        time.sleep(2.0)  # settled after start-up
        if not server.alive():
            raise RuntimeError(f"the server stopped after its start-up:\n{server.log()[-2000:]}")
        pid = server.process.pid
        status = Path(f"/proc/{pid}/status").read_text()
        kb = dict(re.findall(r"^(VmRSS|VmHWM|RssAnon):\s+(\d+) kB", status, re.M))
        maps = Path(f"/proc/{pid}/maps").read_text()
    libraries = sorted({Path(line.split()[-1]).name for line in maps.splitlines()
                        if re.search(r"/[^/]*(libtorch|onnxruntime)[^/]*\.so[^/]*$", line)})
    return {"rss_mb": int(kb["VmRSS"]) / 1024, "peak_mb": int(kb["VmHWM"]) / 1024,
            "anon_mb": int(kb["RssAnon"]) / 1024,
            "libtorch_loaded": any(name.startswith("libtorch") for name in libraries),
            "native_libraries": libraries}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Measure every step, the idle server and the torch import; print a table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    args = parser.parse_args(argv)
    print(f"load {os.getloadavg()[0]:.1f}; each step a fresh Python importing everything above it")
    print(f"{'step':<52} {'RSS MB':>8} {'added':>8} {'anon MB':>8} {'peak MB':>8} {'seconds':>8}")
    steps, statements, previous = [], [], 0.0
    for label, statement in STEPS:
        statements.append(statement)
        row = measure_step(statements) | {"step": label}
        row["added_mb"] = row["rss_mb"] - previous if steps else row["rss_mb"]
        previous = row["rss_mb"]
        steps.append(row)
        print(f"{label:<52} {row['rss_mb']:8.0f} {row['added_mb']:+8.0f} {row['anon_mb']:8.0f} "
              f"{row['peak_mb']:8.0f} {row['seconds']:8.1f}", flush=True)
    label, statements = TORCH_STEP
    torch_row = measure_step(statements) | {"step": label}
    print(f"{label:<52} {torch_row['rss_mb']:8.0f} {torch_row['rss_mb'] - steps[1]['rss_mb']:+8.0f} "
          f"{torch_row['anon_mb']:8.0f} {torch_row['peak_mb']:8.0f} {torch_row['seconds']:8.1f}", flush=True)
    server = server_figures()
    print(f"{'idle server (python -m griffon.serve)':<52} {server['rss_mb']:8.0f} {'':>8} "
          f"{server['anon_mb']:8.0f} {server['peak_mb']:8.0f}")
    print("(anon: the process's own memory; the rest of RSS is file-backed pages of the libraries,\n"
          " shared with other processes that map the same files)")
    chain = import_chain("service.app")
    loaded = "libtorch loaded" if server["libtorch_loaded"] else "no libtorch"
    print(f"\nthe running server maps: {', '.join(server['native_libraries']) or 'neither'} ({loaded})")
    if chain["imported"]:
        print(f"import service.app imports torch ({chain['cumulative_ms']:,.0f} ms): "
              + " → ".join(chain["chain"]))
    else:
        print("import service.app does not import torch")
    results = {"steps": steps, "torch": torch_row, "server": server, "torch_import": chain,
               "load": os.getloadavg()[0]}
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
