"""How far two readers agree on which real runs loop: the ceiling for any detector scored against
one reader's labels.

    python benchmarks/label_agreement.py                         # the readers against each other
    semloop scan --json runs.jsonl > verdicts.jsonl              # (runs rebuilt by benchmarks/convert/)
    python benchmarks/label_agreement.py --verdicts verdicts.jsonl   # ... and the detector against each

`benchmarks/labels/second_reader.jsonl` holds a second reading of 240 labeled runs, in two draws.
Per group (browser: WebArena; swejava: SWE-agent on Java; miniswe: mini-swe-agent, the random batch;
convo: every customer-service source, tau airline included) each draw took 12 runs the first labels
call loops and 18 they call clean from the id-sorted runs of the group — `random.Random(20261204)`
for draw 1, `random.Random(20261205)` over the runs draw 1 left for draw 2 — shuffled them and dumped
them as plain text (every step's input and output, long outputs cut in the middle). Five readers per
draw, one per group (two for miniswe), saw neither the first labels nor any detector output. The
sample is loop-enriched (40%): F1 depends on how common loops are, so the F1 a second reader would
get at another rate is printed too.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from semloop.bench import metrics

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "convert"))
from labeled_splits import load_labels  # noqa: E402  (the converters' label reader: refuses duplicate ids)

LABELS = HERE / "labels"
SECOND = LABELS / "second_reader.jsonl"
TRACE_FILES = [HERE / "data" / "real_tau_airline_dev.jsonl"]  # traces that carry their own labels
REAL_TEST_LOOP_RATE = 292 / 1574  # every real test half and blind batch (docs/history.md, stop 26)


def first_labels() -> dict[str, dict]:
    """Trace id → the first reader's label row, from every label file and labeled trace file."""
    rows: dict[str, dict] = {}
    for path in sorted(LABELS.glob("*.jsonl")):
        if path.name not in {"provenance.jsonl", SECOND.name}:
            rows |= load_labels(path)
    for path in TRACE_FILES:
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                rows[row["id"]] = {"label": row["label"], "confidence": row.get("confidence")}
    return rows


def kappa(pairs: list[tuple[bool, bool]]) -> float:
    """Cohen's kappa of two readers' yes/no answers: agreement beyond what their rates give by chance."""
    n = len(pairs)
    observed = sum(a == b for a, b in pairs) / n
    rate_a, rate_b = sum(a for a, _ in pairs) / n, sum(b for _, b in pairs) / n
    chance = rate_a * rate_b + (1 - rate_a) * (1 - rate_b)
    return 1.0 if chance == 1 else (observed - chance) / (1 - chance)


def f1(truth: list[bool], said: list[bool]) -> float:
    tp = sum(t and s for t, s in zip(truth, said))
    fp = sum(s and not t for t, s in zip(truth, said))
    fn = sum(t and not s for t, s in zip(truth, said))
    return 1.0 if tp + fp + fn == 0 else metrics.f1(metrics.precision(tp, fp), metrics.recall(tp, fn))


def f1_at_rate(truth: list[bool], said: list[bool], rate: float) -> float:
    """The F1 `said` would get against `truth` where a share `rate` of runs loop: its recall and its
    false-alarm rate on this sample, reweighted (expected counts per run)."""
    loops = [s for t, s in zip(truth, said) if t]
    clean = [s for t, s in zip(truth, said) if not t]
    recall, false_alarms = sum(loops) / len(loops), sum(clean) / len(clean)
    return metrics.f1(metrics.precision(rate * recall, (1 - rate) * false_alarms), recall)


def report(name: str, rows: list[dict], verdicts: dict[str, bool]) -> str:
    first = [r["first"] for r in rows]
    second = [r["second"] for r in rows]
    onsets = [(r["first_onset"], r["second_onset"]) for r in rows if r["first"] and r["second"]]
    close = sum(a is not None and b is not None and abs(a - b) <= 1 for a, b in onsets)
    lines = [f"{name:8s} {len(rows):3d} runs  agree {sum(a == b for a, b in zip(first, second))}/{len(rows)}"
             f"  kappa {kappa(list(zip(first, second))):.2f}  second reader vs first: F1 {f1(first, second):.2f}"
             f" (first: {sum(first)} loops, second finds {sum(a and b for a, b in zip(first, second))};"
             f" second calls {sum(b and not a for a, b in zip(first, second))} of the first's {len(rows) - sum(first)}"
             f" clean runs loops), onset within 1 step {close}/{len(onsets)}"]
    if sum(first) and len(rows) > sum(first):
        lines.append(f"{'':8s} at a loop rate of {REAL_TEST_LOOP_RATE:.3f} (the real test pool): F1 "
                     f"{f1_at_rate(first, second, REAL_TEST_LOOP_RATE):.2f}")
    judged = [r for r in rows if r["id"] in verdicts]
    if judged:
        flagged = [verdicts[r["id"]] for r in judged]
        for reader in ("first", "second"):
            truth = [r[reader] for r in judged]
            lines.append(f"{'':8s} detector vs {reader} reader: F1 {f1(truth, flagged):.2f} (recall "
                         f"{sum(t and f for t, f in zip(truth, flagged))}/{sum(truth)}, false alarms "
                         f"{sum(f and not t for t, f in zip(truth, flagged))}/{len(truth) - sum(truth)})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--verdicts", type=Path, action="append", default=[],
                    help="`semloop scan --json` output (a run is flagged when first_warn is set); repeatable")
    args = ap.parse_args(argv)
    first = first_labels()
    verdicts: dict[str, bool] = {}
    for path in args.verdicts:
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                verdicts[row["id"]] = row["first_warn"] is not None
    rows = []
    for line in SECOND.read_text().splitlines():
        if not line.strip():
            continue
        second = json.loads(line)
        if second["id"] not in first:
            raise SystemExit(f"{SECOND.name}: {second['id']} has no first label")
        label = first[second["id"]]["label"]
        rows.append({"id": second["id"], "group": second["group"],
                     "first": bool(label["loop"]), "first_onset": label.get("onset"),
                     "second": bool(second["label"]["loop"]), "second_onset": second["label"].get("onset")})
    for group in dict.fromkeys(r["group"] for r in rows):
        print(report(group, [r for r in rows if r["group"] == group], verdicts))
    print(report("all", rows, verdicts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
