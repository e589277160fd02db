"""Soft and hard block, per group and half, with the exact-matching invariant.

    python benchmarks/trust.py [--variants] [--peers [--jobs N]] [--json OUT] GROUP=DEV.jsonl,TEST.jsonl ...

Each GROUP names a dev file and a test file (the real runs rebuilt as benchmarks/labels/README.md
says, e.g. ``browser=sets/browser.dev.jsonl,sets/browser.test.jsonl``). For every group and half it
prints, for the default detector: loops and clean runs, the soft block (first warning) recall and
false-alarm rate, the hard block (first stop) recall and false-alarm rate for each hard-stop
variant (`semloop.bench.trust.HARD_VARIANTS`), seed-style exact matching (window 3) alongside, and
the invariant: loops exact matching flags that semloop never flags, and runs of any label where
exact matching fires on three identical calls with unchanged results and semloop has not flagged by
then. Dev and test are printed apart; tune on dev only.

`--peers` adds agent-loop-guard (PyPI, run through its own package): it runs in `--jobs` worker
processes, and its verdicts are kept per trace (keyed by a hash of the trace and the package
version) in `--peer-cache` (benchmarks/results/tmp/peer_cache), so a later run, or a run cut short,
replays only the traces not seen yet.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from semloop.bench import trust

PEER_CACHE = Path(__file__).resolve().parent / "results" / "tmp" / "peer_cache"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("groups", nargs="+", metavar="GROUP=DEV,TEST")
    ap.add_argument("--json", help="write the table as JSON here")
    ap.add_argument("--summary", help="write the real groups' totals per half here (groups named synth* left out): "
                    "the README's real-run sentence (benchmarks/readme_table.py) reads it")
    ap.add_argument("--half", choices=("dev", "test", "both"), default="both",
                    help="measure only this half (tune with --half dev)")
    ap.add_argument("--variants", action="store_true", help="also measure the hard-stop variants")
    ap.add_argument("--peers", action="store_true", help="also run agent-loop-guard (PyPI) when installed")
    ap.add_argument("--jobs", type=int, metavar="N", help="worker processes for the peers (default: one per CPU)")
    ap.add_argument("--peer-cache", default=str(PEER_CACHE), metavar="DIR",
                    help="the peers' verdicts per trace are kept here (default: %(default)s)")
    args = ap.parse_args(argv)
    groups = {}
    for spec in args.groups:
        name, _, files = spec.partition("=")
        dev, _, test = files.partition(",")
        if not (name and dev and test):
            print(f"trust.py: {spec!r} is not GROUP=DEV.jsonl,TEST.jsonl", file=sys.stderr)
            return 2
        groups[name] = (dev, test)
    halves = ("dev", "test") if args.half == "both" else (args.half,)
    rows = trust.measure_groups(groups, peers=args.peers, progress=True, halves=halves,
                                variants=args.variants, jobs=args.jobs, peer_cache=args.peer_cache)
    print(trust.format_rows(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump(summary(rows), f, indent=1)
            f.write("\n")
    return 0


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


COUNTS = ("loops", "clean", "soft_tp", "soft_fp", "hard_tp", "hard_fp")


def summary(rows: list[dict]) -> dict:
    """Per half and detector, the counts summed over the real groups (not `synth*`, not `all`), and
    the exact-matching invariant (loops exact matching flags and semloop never does)."""
    out: dict = {"versions": {}}
    for row in rows:
        if row["group"] == "all" or row["group"].startswith("synth"):
            continue
        half = out.setdefault(row["half"], {"groups": [], "exact_only_loops": 0})
        half["groups"].append(row["group"])
        half["exact_only_loops"] += len(row["violations"]["loops"])
        for name in ("semloop", "exact", *(k for k in row if k.startswith("agent-loop-guard"))):
            if name.startswith("agent-loop-guard"):
                out["versions"][name] = _version(name)
            totals = half.setdefault(name, dict.fromkeys(COUNTS, 0))
            for key in COUNTS:
                totals[key] += row[name][key]
    return out


if __name__ == "__main__":
    raise SystemExit(main())
