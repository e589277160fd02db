"""Fit the second view on a flag (`semloop.gate`) on labeled dev runs, and print its curve.

    python benchmarks/gate_fit.py [--C 1.0] DEV.jsonl ...

Replays every trace through the default detector with the gate off, and at every flag reads the
flag's facts (`semloop.gate.features`). A flag of a loop run at or after its labeled onset is a
positive, a flag of a clean run a negative (flags of a loop run before its onset are left out). A
logistic regression without intercept (the `bias` feature is one; scikit-learn, the `[learn]`
extra) is fitted on them with balanced class weights. Printed: the coefficients, as
`Config.gate_coefs` takes them, and the trace-level curve on out-of-fold scores (five folds of
traces): the loops still warned and the clean runs warned, the loops still stopped and the clean
runs stopped, at each pair of `warn_score` / `stop_score`; and the same curve leaving one dataset
out at a time (each file's flags scored by a fit on the other files): what to expect on runs of a
kind the fit never saw. Choose the operating point on dev only.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from semloop import Config, gate  # noqa: E402
from semloop.bench import runner  # noqa: E402
from semloop.state import SessionState, StepRecord  # noqa: E402
from semloop.verdict import Signal  # noqa: E402


def flags_of(paths: list[str], base: Config) -> tuple[list[dict[str, Any]], list[runner.Prepared]]:
    """Every flag of every trace, with the gate's features and its trace's label."""
    datasets = runner.load_datasets(paths)
    prepared = runner.prepare(datasets, base, progress=True)
    embedder, reason = runner.load_backend(base.embedding, base.model_path)
    if embedder is None:
        raise SystemExit(reason)
    runner.embed_all(prepared, base.embedding, embedder, progress=True)
    rows: list[dict[str, Any]] = []
    cfg = base.replace(gate_coefs=(), max_warnings=10 ** 6, fail_open=False)  # every flag, no stop
    for p in prepared:
        guard = runner.ReplayGuard(cfg, p)
        found_at: list[tuple[int, list[float]]] = []

        def keep(state: SessionState, step: StepRecord, found: list[Signal], cfg: Config,
                 _out: list[tuple[int, list[float]]] = found_at) -> float:
            _out.append((step.index, gate.features(state, step, found, cfg.thresholds)))
            return 0.5

        guard._gate_score = keep  # type: ignore[method-assign]
        guard.config = cfg.replace(gate_coefs=(0.0,) * len(gate.FEATURES))  # the hook runs; 0.5 >= 0: shown
        for step in p.trace.steps:
            guard.record(step.tool, step.input, step.output, step.is_error)
        for index, values in found_at:
            rows.append({"trace": p.trace.id, "dataset": p.dataset, "loop": p.loop, "onset": p.onset,
                         "step": index, "x": values})
    return rows, prepared


def main(argv: list[str] | None = None) -> int:
    from sklearn.linear_model import LogisticRegression

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--C", type=float, default=1.0)
    args = ap.parse_args(argv)
    rows, prepared = flags_of(args.paths, Config())
    x = np.array([r["x"] for r in rows])
    y = np.array([-1 if r["loop"] and r["onset"] is not None and r["step"] < r["onset"] else int(r["loop"])
                  for r in rows])

    def model() -> Any:
        return LogisticRegression(C=args.C, max_iter=5000, class_weight="balanced", fit_intercept=False)

    traces = sorted({r["trace"] for r in rows})
    fold_of = dict(zip(traces, np.random.default_rng(0).integers(0, 5, len(traces)), strict=True))
    folds = np.array([fold_of[r["trace"]] for r in rows])
    if any(len(set(y[(y >= 0) & (folds != k)])) < 2 for k in range(5)):
        print("gate_fit.py: too few flags to fit: every fold needs flags of loop runs and of clean runs "
              "(give more labeled files)", file=sys.stderr)
        return 2
    oof = np.zeros(len(rows))
    for k in range(5):
        train = (y >= 0) & (folds != k)
        oof[folds == k] = model().fit(x[train], y[train]).predict_proba(x[folds == k])[:, 1]
    # leave one dataset out: scores of each dataset's flags from a fit on the others (how the
    # second view does on runs of a kind it never saw; the five folds above mix every kind)
    datasets = np.array([r["dataset"] for r in rows])
    unseen: np.ndarray | None = np.zeros(len(rows))
    for name in sorted(set(datasets)):
        train = (y >= 0) & (datasets != name)
        if len(set(y[train])) < 2:  # one dataset, or the rest has loops only / clean runs only
            print(f"leave one dataset out: not measured (without {name} one class is left)")
            unseen = None
            break
        assert unseen is not None
        unseen[datasets == name] = model().fit(x[train], y[train]).predict_proba(x[datasets == name])[:, 1]
    full = model().fit(x[y >= 0], y[y >= 0])
    print("gate_coefs = (" + ", ".join(f"{c:.3f}" for c in full.coef_[0]) + ")")
    print("  " + ", ".join(f"{n} {c:+.2f}" for n, c in zip(gate.FEATURES, full.coef_[0], strict=True)))
    loops = [p.trace.id for p in prepared if p.loop]
    clean = [p.trace.id for p in prepared if not p.loop]
    curves = [("out-of-fold (five folds of traces)", oof)]
    if unseen is not None:
        curves.append(("leave one dataset out", unseen))
    for title, scores in curves:
        by_trace: dict[str, list[float]] = defaultdict(list)
        for r, s in zip(rows, scores, strict=True):
            by_trace[r["trace"]].append(float(s))
        print(f"{len(loops)} loop runs, {len(clean)} clean runs; {title}, "
              "a run warned when any flag reaches warn_score")
        for tau in (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8):
            tp = sum(any(s >= tau for s in by_trace.get(t, ())) for t in loops)
            fp = sum(any(s >= tau for s in by_trace.get(t, ())) for t in clean)
            print(f"  score >= {tau:.2f}: loops {tp}/{len(loops)} ({tp / max(1, len(loops)):.3f}), "
                  f"clean {fp}/{len(clean)} ({100 * fp / max(1, len(clean)):.2f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
