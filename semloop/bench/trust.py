"""Trust measures: the soft and the hard block apart, and the exact-matching invariant.

A user meets two levels of the guard: the *soft block* (the first warning: a hint appended to the
tool's real output) and the *hard block* (the run ended). A false soft block costs a sentence; a
false hard block costs a run. So they are scored apart: recall over loop runs and false-alarm rate
over clean runs, each at the first warning and at the first stop.

The invariant: where seed-style exact matching (the `exact` baseline: the last `exact_window`
calls byte-identical) fires, semloop fires too unless the results changed. `exact_fires` finds the
steps where the baseline fires with unchanged results (equal once normalized, `StepRecord.result_hash`);
`invariant_violations` the runs where semloop had not flagged by then. On loop runs, the
trace-level count is the issue's target: loops exact matching catches and semloop misses.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from ..config import Config
from .metrics import TraceOutcome, fpr, ratio
from .runner import Prepared


def exact_fires(p: Prepared, window: int) -> int | None:
    """The first step where the last `window` calls are byte-identical and their results equal
    after normalization (`StepRecord.result_hash`), or None."""
    recs = p.records
    for i in range(window - 1, len(recs)):
        run = recs[i - window + 1:i + 1]
        if len({r.exact_sig for r in run}) == 1 and len({r.result_hash for r in run}) == 1:
            return i
    return None


def level_counts(outcomes: Iterable[TraceOutcome]) -> dict[str, Any]:
    """Loops, clean runs, and recall / false-alarm rate at the first warning and at the first stop."""
    outcomes = list(outcomes)
    loops = [o for o in outcomes if o.loop]
    clean = [o for o in outcomes if not o.loop]
    soft_tp = sum(o.first_flag is not None for o in loops)
    soft_fp = sum(o.first_flag is not None for o in clean)
    hard_tp = sum(o.first_stop is not None for o in loops)
    hard_fp = sum(o.first_stop is not None for o in clean)
    return {"loops": len(loops), "clean": len(clean),
            "soft_fp_ids": [o.id for o in clean if o.first_flag is not None],
            "hard_fp_ids": [o.id for o in clean if o.first_stop is not None],
            "soft_tp_ids": [o.id for o in loops if o.first_flag is not None],
            "hard_tp_ids": [o.id for o in loops if o.first_stop is not None],
            "soft_tp": soft_tp, "soft_fp": soft_fp, "soft_recall": ratio(soft_tp, len(loops)),
            "soft_fpr": fpr(soft_fp, len(clean)),
            "hard_tp": hard_tp, "hard_fp": hard_fp, "hard_recall": ratio(hard_tp, len(loops)),
            "hard_fpr": fpr(hard_fp, len(clean))}


def invariant_violations(prepared: Sequence[Prepared], semloop: Sequence[TraceOutcome],
                         exact: Sequence[TraceOutcome], window: int) -> dict[str, list[str]]:
    """`loops`: loop runs the exact baseline flags and semloop never flags. `unchanged`: runs of
    any label where the baseline fires with unchanged results (`exact_fires`) and semloop has not
    flagged by that step."""
    loops, unchanged = [], []
    for p, s, e in zip(prepared, semloop, exact, strict=True):
        if p.loop and e.first_flag is not None and s.first_flag is None:
            loops.append(p.trace.id)
        fire = exact_fires(p, window)
        if fire is not None and (s.first_flag is None or s.first_flag > fire):
            unchanged.append(p.trace.id)
    return {"loops": loops, "unchanged": unchanged}


# -- the per-group table ---------------------------------------------------------------------

HARD_VARIANTS: dict[str, dict[str, Any]] = {
    f"stop:{gate}/{warnings + 1}": {"stop_gate": gate, "max_warnings": warnings}
    for gate in ("rules", "same_loop", "agree", "same_loop+agree") for warnings in (2, 3, 4)
    if (gate, warnings) != ("same_loop", 2)}
HARD_VARIANTS.update({"gate:off": {"gate_coefs": ()}, "gate:0.1/0.35": {"warn_score": 0.1, "stop_score": 0.35},
                      "gate:0.3/0.35": {"warn_score": 0.3, "stop_score": 0.35},
                      "gate:0.2/0.5": {"warn_score": 0.2, "stop_score": 0.5},
                      "stop:1 warning/0.5": {"max_warnings": 1, "stop_score": 0.5},
                      "sure:0.7": {"sure_score": 0.7}, "sure:0.9": {"sure_score": 0.9},
                      "sure:off": {"sure_score": 1.0}})
"""Variants measured beside the default: the stop gate and the stopping flag (their first warnings
are the default's), points of the second view (`semloop.gate`: warn_score / stop_score), a stop
after one warning for every flag (at a higher stop_score), and the early stop of a sure flag at
other `sure_score`s (off: 1.0)."""


def measure_groups(groups: dict[str, tuple[str, str]], base: Config | None = None, peers: bool = False,
                   progress: bool = False, halves: Sequence[str] = ("dev", "test"),
                   variants: bool = False, jobs: int | None = None,
                   peer_cache: str | None = None) -> list[dict[str, Any]]:
    """One row per group and half (dev, test) and one pooled row per half. Peers run in `jobs`
    worker processes, their verdicts kept per trace in `peer_cache` (`peers.replay_all`)."""
    from . import runner

    base = base or Config()
    rows = []
    pooled: dict[str, dict[str, list]] = {}
    embedder, reason = runner.load_backend(base.embedding, base.model_path)
    if embedder is None:
        raise RuntimeError(reason)
    for group, (dev, test) in groups.items():
        for half, path in (("dev", dev), ("test", test)):
            if half not in halves:
                continue
            datasets = runner.load_datasets([path])
            prepared = runner.prepare(datasets, base, progress)
            runner.embed_all(prepared, base.embedding, embedder, progress=progress)
            sem = [runner.replay(p, base) for p in prepared]
            exact_cfg = runner.config_for("exact", base)
            ex = [runner.replay(p, exact_cfg) for p in prepared]
            detectors = {"semloop": sem, "exact": ex}
            for name, changes in (HARD_VARIANTS if variants else {}).items():
                cfg = base.replace(**changes)
                detectors[name] = [runner.replay(p, cfg) for p in prepared]
            if peers:
                from . import peers as peer_mod

                for name in peer_mod.available():
                    detectors[name] = peer_mod.replay_all(name, prepared, jobs=jobs, cache_dir=peer_cache)
            viol = invariant_violations(prepared, sem, ex, base.exact_window)
            row = {"group": group, "half": half,
                   **{name: level_counts(outs) for name, outs in detectors.items()},
                   "violations": viol}
            rows.append(row)
            acc = pooled.setdefault(half, {})
            for name, outs in detectors.items():
                acc.setdefault(name, []).extend(outs)
            acc.setdefault("_viol_loops", []).extend(viol["loops"])
            acc.setdefault("_viol_unchanged", []).extend(viol["unchanged"])
    for half, acc in pooled.items():
        rows.append({"group": "all", "half": half,
                     **{n: level_counts(o) for n, o in acc.items() if not n.startswith("_")},
                     "violations": {"loops": acc["_viol_loops"], "unchanged": acc["_viol_unchanged"]}})
    return rows


def format_rows(rows: Sequence[dict[str, Any]]) -> str:
    def pct(x: float) -> str:
        return "-" if math.isnan(x) else f"{100 * x:.1f}%"

    names = [k for k in rows[0] if k not in ("group", "half", "violations")] if rows else []
    head = ("| group | half | loops | clean | " + " | ".join(
        f"{n} soft R / FPR | {n} hard R / FPR" for n in names) + " | exact-only loops | unchanged, not flagged |")
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        cells = [r["group"], r["half"], str(r["semloop"]["loops"]), str(r["semloop"]["clean"])]
        for n in names:
            c = r[n]
            cells.append(f"{c['soft_tp']}/{c['loops']} / {c['soft_fp']} ({pct(c['soft_fpr'])})")
            cells.append(f"{c['hard_tp']}/{c['loops']} / {c['hard_fp']} ({pct(c['hard_fpr'])})")
        cells += [str(len(r["violations"]["loops"])), str(len(r["violations"]["unchanged"]))]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)
