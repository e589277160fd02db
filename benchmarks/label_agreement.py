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

`benchmarks/labels/third_reader.jsonl` is a third blind reading of exactly the runs where the first
two disagree on loop/clean. The adjudicated label is the majority of the three readings there (the
third reader always sides with one of the two, so its onset and kind come with it) and the first
label everywhere else; the script lists the disagreements with their majority, scores each reader
against the adjudicated label, and with `--verdicts` scores the detector against both the first
reader and the adjudicated label.
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
THIRD = LABELS / "third_reader.jsonl"
NOT_FIRST = {"provenance.jsonl", SECOND.name, THIRD.name}  # label files that are not the first reading
TRACE_FILES = [HERE / "data" / "real_tau_airline_dev.jsonl"]  # traces that carry their own labels
REAL_TEST_LOOP_RATE = 292 / 1574  # every real test half (benchmarks/labels/README.md)


def first_labels() -> dict[str, dict]:
    """Trace id → the first reader's label row, from every label file and labeled trace file."""
    rows: dict[str, dict] = {}
    for path in sorted(LABELS.glob("*.jsonl")):
        if path.name not in NOT_FIRST:
            rows |= load_labels(path)
    for path in TRACE_FILES:
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                rows[row["id"]] = {"label": row["label"], "confidence": row.get("confidence")}
    return rows


def adjudicate(first: dict[str, dict], second: dict[str, dict], third: dict[str, dict]) -> dict[str, dict]:
    """Trace id → adjudicated label (``{"loop", "onset", "kind"}``) for every id the second reader read:
    the majority of the three readings where the first two disagree on loop, the first label where
    they agree. Each argument maps an id to its label row. Refuses a disagreement the third reader
    did not read and a third reading of a run the two agree on (the draw is the disagreements)."""
    adjudicated: dict[str, dict] = {}
    for run_id, row in second.items():
        a, b = first[run_id]["label"], row["label"]
        if bool(a["loop"]) == bool(b["loop"]):
            if run_id in third:
                raise SystemExit(f"{THIRD.name}: {run_id} is read a third time but the first two agree")
            adjudicated[run_id] = a
            continue
        if run_id not in third:
            raise SystemExit(f"{THIRD.name}: {run_id} has no third reading (the first two disagree)")
        c = third[run_id]["label"]
        loop = sum(bool(x["loop"]) for x in (a, b, c)) >= 2
        adjudicated[run_id] = c if bool(c["loop"]) == loop else (a if bool(a["loop"]) == loop else b)
    if extra := sorted(set(third) - set(second)):
        raise SystemExit(f"{THIRD.name}: {extra[0]} has no second reading")
    return adjudicated


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


def _versus(truth: list[bool], said: list[bool]) -> str:
    return (f"F1 {f1(truth, said):.2f} (recall {sum(t and s for t, s in zip(truth, said))}/{sum(truth)}, "
            f"false alarms {sum(s and not t for t, s in zip(truth, said))}/{len(truth) - sum(truth)})")


def report(name: str, rows: list[dict], verdicts: dict[str, bool]) -> str:
    first = [r["first"] for r in rows]
    second = [r["second"] for r in rows]
    onsets = [(r["first_onset"], r["second_onset"]) for r in rows if r["first"] and r["second"]]
    close = sum(a is not None and b is not None and abs(a - b) <= 1 for a, b in onsets)
    lines = [(f"{name:8s} {len(rows):3d} runs  agree {sum(a == b for a, b in zip(first, second))}/{len(rows)}"
              f"  kappa {kappa(list(zip(first, second))):.2f}  second reader vs first: F1 {f1(first, second):.2f}"
              f" (first: {sum(first)} loops, second finds {sum(a and b for a, b in zip(first, second))};"
              f" second calls {sum(b and not a for a, b in zip(first, second))} of the first's {len(rows) - sum(first)}"
              f" clean runs loops), onset within 1 step {close}/{len(onsets)}")]
    if sum(first) and len(rows) > sum(first):
        lines.append(f"{'':8s} at a loop rate of {REAL_TEST_LOOP_RATE:.3f} (the real test pool): F1 "
                     f"{f1_at_rate(first, second, REAL_TEST_LOOP_RATE):.2f}")
    adjudicated = [r["adjudicated"] for r in rows]
    if sum(adjudicated) and len(rows) > sum(adjudicated):
        lines.append(f"{'':8s} against the adjudicated label ({sum(adjudicated)} loops): first reader "
                     f"{_versus(adjudicated, first)} kappa {kappa(list(zip(adjudicated, first))):.2f}; second reader "
                     f"{_versus(adjudicated, second)} kappa {kappa(list(zip(adjudicated, second))):.2f}")
    judged = [r for r in rows if r["id"] in verdicts]
    if judged:
        flagged = [verdicts[r["id"]] for r in judged]
        for reader in ("first", "second", "adjudicated"):
            truth = [r[reader] for r in judged]
            lines.append(f"{'':8s} detector vs {reader}{' label' if reader == 'adjudicated' else ' reader'}: "
                         f"{_versus(truth, flagged)}")
    return "\n".join(lines)


def disagreements(rows: list[dict], third: dict[str, dict]) -> str:
    """One line per run the first two readers disagree on: the three readings and the majority."""
    def said(loop: bool, onset: int | None) -> str:
        return f"loop@{onset}" if loop else "clean"
    lines = []
    for r in rows:
        if r["first"] != r["second"]:
            c = third[r["id"]]["label"]
            lines.append(f"  {r['id']}: first {said(r['first'], r['first_onset'])}, second "
                         f"{said(r['second'], r['second_onset'])}, third {said(bool(c['loop']), c.get('onset'))}"
                         f" -> {said(r['adjudicated'], r['adjudicated_onset'])}"
                         f" (with the {'first' if r['adjudicated'] == r['first'] else 'second'})")
    with_first = sum(r["adjudicated"] == r["first"] for r in rows if r["first"] != r["second"])
    return (f"adjudicated: {len(lines)} disagreements, the majority sides with the first reader on {with_first}"
            f" and with the second on {len(lines) - with_first}; {sum(r['adjudicated'] for r in rows if r['first'] != r['second'])}"
            f" of them are loops\n" + "\n".join(lines))


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
    seconds = load_labels(SECOND)
    if missing := sorted(set(seconds) - set(first)):
        raise SystemExit(f"{SECOND.name}: {missing[0]} has no first label")
    thirds = load_labels(THIRD)
    adjudicated = adjudicate(first, seconds, thirds)
    rows = []
    for run_id, second in seconds.items():
        label, final = first[run_id]["label"], adjudicated[run_id]
        rows.append({"id": run_id, "group": second["group"],
                     "first": bool(label["loop"]), "first_onset": label.get("onset"),
                     "second": bool(second["label"]["loop"]), "second_onset": second["label"].get("onset"),
                     "adjudicated": bool(final["loop"]), "adjudicated_onset": final.get("onset")})
    for group in dict.fromkeys(r["group"] for r in rows):
        print(report(group, [r for r in rows if r["group"] == group], verdicts))
    print(report("all", rows, verdicts))
    print(disagreements(rows, thirds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
