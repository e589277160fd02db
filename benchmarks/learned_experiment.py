"""Does a learned decision beat the hand rules? (the detection issue's "consider a learned decision")

    python benchmarks/learned_experiment.py [--model logreg|gbm] DEV.jsonl ... -- TEST.jsonl ...

Replays every trace through the default `LoopGuard` and, per step, reads the pairwise and window
features the rules already compute (best call cosine and result similarity against the window, how
many window steps share the exact / normalized signature / result, repeated errors, steps since the
last new result, the conversation asks, the cluster's stale count) plus the rules' own verdict. A
logistic regression (scikit-learn, `[learn]` extra; `--model gbm`: gradient-boosted trees) is
trained on the dev files' steps (label: a loop trace's steps from its onset on), its threshold chosen
on dev for the best recall at a trace-level false-alarm rate <= 1%, and at the rules' own; then
rules and model are compared on the test files, trace by trace (a trace counts as flagged at its
first warn; the rules' first stop is printed too, their own low-false-alarm point). Last, the
same model as a hard-block decision (`learned_stop`), against the rules' own hard block. Nothing
here is shipped: it is the experiment behind the "learned decision" paragraphs of CHANGELOG.md.
"""

from __future__ import annotations

import sys

import numpy as np

from semloop import LoopGuard, same_action
from semloop.traces import load_traces

FEATURES = ["call_cos_same_tool", "call_cos_any", "result_sim_best_call", "same_exact", "same_norm",
            "same_result", "same_skeleton", "is_error", "same_error_class", "since_novel", "is_message",
            "ask_cos_max", "cluster_stale", "pending", "rule_flag"]


def step_features(guard: LoopGuard, verdict) -> list[float]:
    window = list(guard.state.window)
    step, prev = window[-1], window[:-1]
    cos = [float(np.dot(step.call_vec, p.call_vec)) if step.call_vec is not None and p.call_vec is not None else 0.0
           for p in prev]
    same_tool = [c for c, p in zip(cos, prev) if p.tool == step.tool]
    best = int(np.argmax(cos)) if cos else -1
    asks = [c for c, p in zip(cos, prev) if p.is_message and p.asks] if step.is_message and step.asks else []
    cluster = guard.state.clusters.get(step.cluster)  # -1 (no cluster) is never a key
    return [max(same_tool, default=0.0), max(cos, default=0.0),
            same_action.result_match(step, prev[best]) if best >= 0 else 0.0,
            sum(p.exact_sig == step.exact_sig for p in prev), sum(p.norm_sig == step.norm_sig for p in prev),
            sum(p.result_hash == step.result_hash for p in prev), sum(p.skeleton_sig == step.skeleton_sig for p in prev),
            float(step.is_error), sum(p.error_class == step.error_class for p in prev) if step.is_error else 0,
            min(step.index - guard.state.last_novel, 20), float(step.is_message), max(asks, default=0.0),
            cluster.stale if cluster is not None else 0, float(step.pending), float(verdict.action != "allow")]


def featurize(paths: list[str]):
    traces = []
    for path in paths:
        for trace in load_traces(path):
            guard = LoopGuard()
            rows, rule_first, rule_stop = [], None, None
            for i, s in enumerate(trace.steps):
                verdict = guard.record(s.tool, s.input, s.output, is_error=bool(s.is_error))
                if verdict.action != "allow" and rule_first is None:
                    rule_first = i
                if verdict.action == "stop" and rule_stop is None:
                    rule_stop = i
                rows.append(step_features(guard, verdict))
            label = trace.label or {}
            onset = label.get("onset") if label.get("loop") else None
            y = [int(onset is not None and i >= onset) for i in range(len(rows))]
            traces.append((trace.id, bool(label.get("loop")), np.array(rows, dtype=float), np.array(y), rule_first, rule_stop))
    return traces


def trace_scores(model, traces) -> list[tuple[bool, np.ndarray]]:
    return [(loop, model.predict_proba(x)[:, 1]) for _, loop, x, *_ in traces if len(x)]


def confusion(flags: list[tuple[bool, bool]]) -> dict:
    tp = sum(l and f for l, f in flags); fp = sum(f and not l for l, f in flags)
    fn = sum(l and not f for l, f in flags); tn = sum(not l and not f for l, f in flags)
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return {"P": p, "R": r, "F1": 2 * p * r / (p + r) if p + r else 0.0, "FPR": fp / (fp + tn) if fp + tn else 0.0,
            "fp": fp, "neg": fp + tn, "tp": tp, "pos": tp + fn}


def stop_decisions(traces, scores_of, tau: float) -> list[tuple[bool, bool]]:
    """A learned hard block: at a step the rules flag, after at least one earlier flag (a soft block
    came first), when the model's score is at least `tau`."""
    flag_at = FEATURES.index("rule_flag")
    out = []
    for t, scores in zip(traces, scores_of):
        flagged = t[2][:, flag_at] > 0 if len(t[2]) else np.zeros(0, bool)
        earlier = np.cumsum(flagged) - flagged
        out.append((t[1], bool(np.any(flagged & (earlier >= 1) & (scores >= tau)))))
    return out


def learned_stop(model, dev, test, fmt) -> None:
    """When to end a run, learned: the threshold is chosen on out-of-fold dev scores (five folds of
    traces, a clone of the model per fold) for the most loops stopped with no more false stops on
    dev than the rules' own hard block; test is scored by the model trained on all of dev."""
    from sklearn.base import clone

    folds = np.random.default_rng(0).integers(0, 5, len(dev))
    oof: list = [None] * len(dev)
    for k in range(5):
        train = [t for t, f in zip(dev, folds) if f != k and len(t[2])]
        fold_model = clone(model).fit(np.vstack([t[2] for t in train]), np.concatenate([t[3] for t in train]))
        for i, t in enumerate(dev):
            if folds[i] == k:
                oof[i] = fold_model.predict_proba(t[2])[:, 1] if len(t[2]) else np.zeros(0)
    rules_dev = confusion([(t[1], t[5] is not None) for t in dev])
    best = None
    for tau in np.unique(np.concatenate(oof))[::-1]:
        c = confusion(stop_decisions(dev, oof, tau))
        if c["fp"] > rules_dev["fp"]:
            break
        best = tau
    tau = 1.0 if best is None else float(best)
    test_scores = [model.predict_proba(t[2])[:, 1] if len(t[2]) else np.zeros(0) for t in test]
    for name, traces, scores in (("dev (out-of-fold)", dev, oof), ("test", test, test_scores)):
        print(f"[hard block] {name:17s} rules   {fmt(confusion([(t[1], t[5] is not None) for t in traces]))}")
        print(f"[hard block] {name:17s} learned {fmt(confusion(stop_decisions(traces, scores, tau)))}"
              f"  (threshold {tau:.6f}, chosen on out-of-fold dev)")


def main(argv: list[str]) -> int:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    kind = "logreg"
    if argv[:1] == ["--model"]:
        kind, argv = argv[1], argv[2:]
    split = argv.index("--")
    dev, test = featurize(argv[:split]), featurize(argv[split + 1:])
    x = np.vstack([t[2] for t in dev if len(t[2])])
    y = np.concatenate([t[3] for t in dev if len(t[2])])
    if kind == "gbm":
        model = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, max_leaf_nodes=15,
                                               class_weight="balanced", random_state=0)
    else:
        model = make_pipeline(StandardScaler(), LogisticRegression(class_weight="balanced", max_iter=2000, C=1.0))
    model.fit(x, y)
    dev_scores = trace_scores(model, dev)
    fmt = lambda c: (f"P {c['P']:.3f} R {c['R']:.3f} F1 {c['F1']:.3f} FPR {c['FPR']:.3f} "
                     f"({c['fp']}/{c['neg']} false alarms, {c['tp']}/{c['pos']} loops)")
    # the threshold: the best dev recall at a dev false-alarm rate of at most 1%, and at most the rules' own
    rules_dev_fpr = confusion([(t[1], t[4] is not None) for t in dev])["FPR"]
    candidates = np.unique(np.concatenate([s for _, s in dev_scores]))
    for target in (0.01, rules_dev_fpr):
        best = None
        for tau in candidates[::-1]:
            c = confusion([(loop, bool((s >= tau).any())) for loop, s in dev_scores])
            if c["FPR"] > target:
                break
            best = (tau, c)
        tau = best[0] if best else 1.0
        for name, traces in (("dev", dev), ("test", test)):
            rules = confusion([(t[1], t[4] is not None) for t in traces])
            learned = confusion([(loop, bool((s >= tau).any())) for loop, s in trace_scores(model, traces)])
            print(f"[dev FPR <= {target:.3f}] {name:4s} rules   {fmt(rules)}")
            if target == 0.01:
                stops = confusion([(t[1], t[5] is not None) for t in traces])
                print(f"[dev FPR <= {target:.3f}] {name:4s} rules' first stop {fmt(stops)}")
            print(f"[dev FPR <= {target:.3f}] {name:4s} learned {fmt(learned)}  (threshold {tau:.6f}, chosen on dev)")
    learned_stop(model, dev, test, fmt)
    if kind == "logreg":
        coefs = model[-1].coef_[0]
        print("coefficients (standardized):", ", ".join(f"{n} {c:+.2f}" for n, c in zip(FEATURES, coefs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
