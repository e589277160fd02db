"""Per-step cost of `LoopGuard.record` in two checkouts, as a ratio measured in the same run: the
check that a restructuring of the detection code kept the hot path as cheap as it was.

    python benchmarks/step_cost.py /tmp/old-checkout . [--rounds 7] [--embedding hashing] FILES...

Each round runs every checkout once, in a fresh process (`PYTHONPATH=<checkout>`), in the order
the rounds alternate; a process replays every trace of FILES through one guard per trace and
reports the seconds per step (the embedder is loaded and warmed before the clock starts). The
result is the median seconds per step of each checkout and their ratio to the first one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

_CHILD = r"""
import json, sys, time
import semloop
from semloop import Config
from semloop.embeddings import load_embedder
from semloop.scan import scan_trace
from semloop.traces import load_traces

embedding, paths = sys.argv[1], sys.argv[2:]
traces = [t for p in paths for t in load_traces(p)]
config = Config(embedding=embedding)
embedder = load_embedder(config.embedding, config.model_path)
scan_trace(traces[0], config, embedder)  # warm-up: caches, lazy imports
steps = sum(len(t.steps) for t in traces)
start = time.perf_counter()
for trace in traces:
    scan_trace(trace, config, embedder)
print(json.dumps({"per_step": (time.perf_counter() - start) / steps, "steps": steps, "module": semloop.__file__}))
"""


def run(checkout: str, embedding: str, files: list[str]) -> float:
    # run in the checkout: `python -c` puts the working directory first on sys.path, ahead of
    # PYTHONPATH, so a child started elsewhere would import the semloop found there
    root = os.path.abspath(checkout)
    env = {**os.environ, "PYTHONPATH": root}
    out = subprocess.run([sys.executable, "-c", _CHILD, embedding, *(os.path.abspath(f) for f in files)], env=env,
                         cwd=root, check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    if not os.path.abspath(result["module"]).startswith(root + os.sep):
        raise SystemExit(f"step_cost.py: {checkout} ran the semloop at {result['module']}, not its own")
    return float(result["per_step"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("baseline")
    parser.add_argument("candidate")
    parser.add_argument("files", nargs="+")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--embedding", default="hashing")
    args = parser.parse_args()
    checkouts = [args.baseline, args.candidate]
    samples: dict[str, list[float]] = {c: [] for c in checkouts}
    for round_ in range(args.rounds):
        for checkout in checkouts if round_ % 2 == 0 else checkouts[::-1]:
            samples[checkout].append(run(checkout, args.embedding, args.files))
    base = statistics.median(samples[args.baseline])
    for checkout in checkouts:
        median = statistics.median(samples[checkout])
        print(f"{checkout}: {median * 1e6:.1f} µs/step (median of {args.rounds}), ratio {median / base:.3f}")


if __name__ == "__main__":
    main()
