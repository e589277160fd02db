"""Fixed dev/test split of the real labelled traces (benchmarks/data/real_*.jsonl).

Tune on `*.dev.jsonl`, report `*.test.jsonl` apart and never tune on it. The split is
deterministic and written once (benchmarks/data/splits.json records every id):

- Traces are grouped so that runs of one task stay on one side (tau-bench: the four trials of a
  task; Who&When: each run is its own group).
- Groups are stratified by "has a labelled loop", ordered by a salted blake2b hash of the group
  key, and dealt alternately test, dev, test, dev ... within each stratum, so both sides get about
  half of the loops and half of the clean runs.

    python benchmarks/split_real.py          # rewrites benchmarks/data/split/ and splits.json
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
SOURCES = {"whowhen": DATA / "real_dev.jsonl", "tau_airline": DATA / "real_tau_airline_dev.jsonl"}
SALT = "semloop-real-split-v1"


def group_of(trace_id: str) -> str:
    if trace_id.startswith("tau_bench/"):
        return trace_id.rsplit("/", 1)[0]  # tau_bench/<model>-<domain>/task<N>
    return trace_id


def rank(key: str) -> str:
    return hashlib.blake2b(f"{SALT}:{key}".encode(), digest_size=8).hexdigest()


def split(rows: list[dict]) -> dict[str, str]:
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(group_of(row["id"]), []).append(row)
    side: dict[str, str] = {}
    for has_loop in (True, False):
        keys = sorted((g for g, members in groups.items()
                       if any(r["label"]["loop"] for r in members) == has_loop), key=rank)
        for i, g in enumerate(keys):
            for r in groups[g]:
                side[r["id"]] = "test" if i % 2 == 0 else "dev"
    return side


def main() -> None:
    out = DATA / "split"
    out.mkdir(exist_ok=True)
    record = {"salt": SALT, "method": __doc__.strip().split("\n\n")[1], "files": {}}
    for name, path in SOURCES.items():
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        rows = [json.loads(line) for line in lines]
        side = split(rows)
        record["files"][name] = {"source": f"benchmarks/data/{path.name}"}
        for part in ("dev", "test"):
            chosen = [line for line, row in zip(lines, rows) if side[row["id"]] == part]
            (out / f"{name}.{part}.jsonl").write_text("\n".join(chosen) + "\n", encoding="utf-8")
            ids = [row["id"] for row in rows if side[row["id"]] == part]
            loops = sum(row["label"]["loop"] for row in rows if side[row["id"]] == part)
            record["files"][name][part] = {"traces": len(ids), "loops": loops, "ids": ids}
            print(f"{name}.{part}: {len(ids)} traces, {loops} loops")
    (DATA / "splits.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
