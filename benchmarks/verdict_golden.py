"""Every verdict of every trace under nine detectors, written by one checkout and compared with
another's: the proof that a speed-up changed no detection result.

    python benchmarks/verdict_golden.py write before.json benchmarks/data/*.jsonl   # on the old code
    python benchmarks/verdict_golden.py write after.json benchmarks/data/*.jsonl    # on the new code
    python benchmarks/verdict_golden.py compare before.json after.json

A verdict is kept whole: step, action, each signal's kind, score (5 places), related steps and
detail, and the message. Exit status 1 when anything differs.
"""

import json
import sys

DETECTORS = [("semantic", "static"), ("semantic", "hashing"), ("exact", None), ("normalized", None), ("count", None),
             ("openhands", None), ("gemini-cli", None), ("roo-code", None), ("crewai", None)]


def write(out: str, paths: list[str]) -> None:
    from semloop.config import Config
    from semloop.scan import scan_trace
    from semloop.traces import load_traces

    golden = {}
    for path in paths:
        for trace in load_traces(path):
            row = {}
            for detector, embedding in DETECTORS:
                config = Config(detector=detector, **({"embedding": embedding} if embedding else {}))
                row[f"{detector}/{embedding}"] = [
                    [v.step, v.action, [[s.kind, round(s.score, 5), list(s.related_steps), s.detail] for s in v.signals],
                     v.message] for v in scan_trace(trace, config).events]
            golden[f"{path}::{trace.id}"] = row
    with open(out, "w") as f:
        json.dump(golden, f, sort_keys=True)
    print(f"{len(golden)} traces written to {out}")


def compare(a_path: str, b_path: str) -> int:
    a, b = (json.load(open(p)) for p in (a_path, b_path))
    if a.keys() != b.keys():
        print(f"different traces: {sorted(a.keys() ^ b.keys())[:5]}")
        return 1
    diffs = [(k, d) for k in a for d in a[k] if a[k][d] != b[k].get(d)]
    events = sum(len(e) for row in a.values() for e in row.values())
    print(f"{len(a)} traces x {len(DETECTORS)} detectors, {events} non-allow verdicts: {len(diffs)} differ")
    for k, d in diffs[:10]:
        print(f"  {k} [{d}]")
    return 1 if diffs else 0


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
