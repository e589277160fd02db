"""`semloop calibrate`: pick semantic-detector thresholds for your own labelled traces.

Sweeps `call_threshold` × `result_threshold`, then (cheaply, one knob pair at a time around the
best point) `min_repeats` × `cluster_stale_limit`, and picks the setting with the highest
trace-level recall whose false-positive rate is at most the target; ties go to the higher F1,
then the higher (more conservative) thresholds. With `per_tool`, a tool that is where at least
`min_tool_loops` labelled loops start gets its own `call_threshold` override when that raises
recall (or F1 at equal recall) within the same FPR budget.

Features and embeddings are computed once (see `runner`), so each grid point is a cheap replay.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..config import Config
from .runner import Prepared, embed_all, evaluate_configs, load_backend, load_datasets, prepare, progress_bar

CALL_GRID = tuple(round(0.70 + 0.02 * i, 2) for i in range(15))  # 0.70 .. 0.98
RESULT_GRID = tuple(round(0.60 + 0.05 * i, 2) for i in range(8))  # 0.60 .. 0.95
MIN_REPEATS_GRID = (1, 2, 3)
STALE_GRID = (2, 3, 4, 5, 6)
MIN_SAMPLE = 20
"""Labelled loops and clean traces each below which `calibrate` says its pick is a guess: with a
handful of traces many settings tie, and the tie-break (the highest thresholds) decides."""


_KEYS = ("precision", "recall", "f1", "fpr", "tp", "fp", "fn", "negatives", "loops")


def _evaluate(prepared: Sequence[Prepared], configs: Sequence[Config], jobs: int | None = None,
              bar=None) -> list[dict[str, Any]]:
    rows = evaluate_configs(prepared, configs, jobs, on_done=(lambda: bar.update(1)) if bar else None)
    return [{k: s[k] for k in _KEYS} for s in rows]


def _ok(row: dict[str, Any], target: float) -> bool:
    return math.isnan(row["fpr"]) or row["fpr"] <= target + 1e-12


def _score(row: dict[str, Any]) -> tuple[float, float]:
    f1 = row["f1"]
    return (row["recall"], -1.0 if math.isnan(f1) else f1)


def _best(rows: list[dict[str, Any]], target: float, knobs: Sequence[str]) -> dict[str, Any] | None:
    feasible = [r for r in rows if _ok(r, target)]
    if not feasible:
        return None
    return max(feasible, key=lambda r: (*_score(r), *(r[k] for k in knobs)))


def onset_tool(p: Prepared) -> str | None:
    if not p.loop or p.onset is None or not (0 <= p.onset < len(p.trace.steps)):
        return None
    return str(p.trace.steps[p.onset].tool)


def calibrate(prepared: Sequence[Prepared], base: Config, target_fpr: float = 0.02, per_tool: bool = False,
              min_tool_loops: int = 3, progress: bool = False, jobs: int | None = None) -> dict[str, Any]:
    if not any(p.loop for p in prepared):
        raise ValueError("calibration needs at least one labelled loop trace (label.loop = true)")
    notes = []
    if all(p.loop for p in prepared):
        notes.append("no non-loop traces: the false-positive rate cannot be measured; add clean runs")
    base = base.replace(detector="semantic")

    points = [(ct, rt) for rt in RESULT_GRID for ct in CALL_GRID]
    with progress_bar(len(points), "calibrate", progress) as bar:
        rows = _evaluate(prepared, [base.replace(call_threshold=ct, result_threshold=rt) for ct, rt in points],
                         jobs, bar)
    grid = [{"call_threshold": ct, "result_threshold": rt, **row} for (ct, rt), row in zip(points, rows, strict=True)]
    best = _best(grid, target_fpr, ("call_threshold", "result_threshold"))
    feasible = best is not None
    if best is None:  # nothing meets the target: report the lowest-FPR point instead
        best = min(grid, key=lambda r: (r["fpr"], -r["recall"], -r["call_threshold"]))
        notes.append(f"no setting reaches FPR <= {target_fpr:g}; showing the lowest-FPR setting "
                     f"(FPR {best['fpr']:.3f})")
    loops = sum(p.loop for p in prepared)
    clean = len(prepared) - loops
    if loops < MIN_SAMPLE or clean < MIN_SAMPLE:
        notes.append(f"a small sample ({loops} loop(s), {clean} clean trace(s)): many settings score alike on so few "
                     f"traces and the pick is close to a guess; label at least {MIN_SAMPLE} of each before using it")
    for key, values in (("call_threshold", CALL_GRID), ("result_threshold", RESULT_GRID)):
        if best[key] in (values[0], values[-1]):
            notes.append(f"{key} {best[key]:.2f} is at the edge of the grid searched "
                         f"({values[0]:.2f}-{values[-1]:.2f}); the best value may lie beyond it")
    tuned = base.replace(call_threshold=best["call_threshold"], result_threshold=best["result_threshold"])
    chosen = {"min_repeats": base.min_repeats, "cluster_stale_limit": base.cluster_stale_limit, **best}

    knob_rows = []
    if feasible:
        knobs = [(mr, sl) for mr in MIN_REPEATS_GRID for sl in STALE_GRID]
        rows = _evaluate(prepared, [tuned.replace(min_repeats=mr, cluster_stale_limit=sl) for mr, sl in knobs], jobs)
        knob_rows = [{"call_threshold": tuned.call_threshold, "result_threshold": tuned.result_threshold,
                      "min_repeats": mr, "cluster_stale_limit": sl, **row}
                     for (mr, sl), row in zip(knobs, rows, strict=True)]
        knob_best = _best(knob_rows, target_fpr, ("min_repeats", "cluster_stale_limit"))
        if knob_best is not None and _score(knob_best) > _score(chosen):
            chosen = knob_best
            tuned = tuned.replace(min_repeats=knob_best["min_repeats"],
                                  cluster_stale_limit=knob_best["cluster_stale_limit"])

    overrides: dict[str, dict[str, float]] = {}
    tool_rows: dict[str, list[dict[str, Any]]] = {}
    loops_per_tool = Counter(t for p in prepared if (t := onset_tool(p)))
    if per_tool and feasible:
        current = chosen
        for tool, n in loops_per_tool.most_common():
            if n < min_tool_loops:
                break
            trials = [tuned.replace(tool_overrides={**overrides, tool: {"call_threshold": ct}}) for ct in CALL_GRID]
            rows = [{"tool": tool, "call_threshold": ct, **row}
                    for ct, row in zip(CALL_GRID, _evaluate(prepared, trials, jobs), strict=True)]
            tool_rows[tool] = rows
            pick = _best(rows, target_fpr, ("call_threshold",))
            if pick is not None and _score(pick) > _score(current) and pick["call_threshold"] != tuned.call_threshold:
                overrides[tool] = {"call_threshold": pick["call_threshold"]}
                current = pick
        if overrides:
            tuned = tuned.replace(tool_overrides=overrides)
            chosen = {**chosen, **{k: current[k] for k in ("precision", "recall", "f1", "fpr", "tp", "fp", "fn")}}
        elif not any(n >= min_tool_loops for n in loops_per_tool.values()):
            notes.append(f"--per-tool: no tool starts >= {min_tool_loops} labelled loops; no overrides suggested")
        else:
            notes.append(f"--per-tool: tried {', '.join(tool_rows)}; no per-tool call_threshold beat the global "
                         f"one under the FPR target, so no overrides suggested")

    return {"feasible": feasible, "target_fpr": target_fpr, "chosen": chosen, "config": tuned,
            "snippet": snippet(tuned, overrides), "grid": grid, "knob_grid": knob_rows, "tool_grid": tool_rows,
            "loops_per_tool": dict(loops_per_tool), "notes": notes,
            "default": _evaluate(prepared, [base], 1)[0]}


def snippet(cfg: Config, overrides: dict[str, dict[str, float]]) -> dict[str, Any]:
    """The tuned keys, plus whatever the base config already set away from the defaults."""
    default = Config().to_dict()
    data = {k: v for k, v in cfg.to_dict().items() if v != default[k] and k != "tool_overrides"}
    for key in ("call_threshold", "result_threshold"):
        data[key] = getattr(cfg, key)
    for key in ("min_repeats", "cluster_stale_limit"):
        if getattr(cfg, key) != default[key]:
            data[key] = getattr(cfg, key)
    if overrides or cfg.tool_overrides:
        data["tool_overrides"] = {**dict(cfg.tool_overrides), **overrides}
    ordered: dict[str, Any] = {k: data[k] for k in ("call_threshold", "result_threshold") if k in data}
    ordered.update({k: v for k, v in data.items() if k not in ordered})
    return ordered


def plot_curve(result: dict[str, Any], path: str | Path) -> Path:
    from .report import pyplot

    plt = pyplot()
    rt = result["chosen"]["result_threshold"]
    rows = [r for r in result["grid"] if r["result_threshold"] == rt]
    xs = [r["call_threshold"] for r in rows]
    fig, ax = plt.subplots(figsize=(6.5, 4))
    ax.plot(xs, [r["recall"] for r in rows], "-o", ms=3, label="recall")
    ax.plot(xs, [r["fpr"] for r in rows], "-s", ms=3, label="false-positive rate")
    ax.plot(xs, [r["precision"] for r in rows], ":", lw=1, label="precision")
    ax.axhline(result["target_fpr"], color="tab:red", lw=0.8, ls="--", label=f"target FPR {result['target_fpr']:g}")
    ax.axvline(result["chosen"]["call_threshold"], color="grey", lw=0.8, ls=":", label="chosen")
    ax.set_xlabel("call_threshold")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"semloop calibrate (result_threshold = {rt:.2f})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def run_calibrate(paths: Sequence[str], base: Config, target_fpr: float, per_tool: bool = False,
                  min_tool_loops: int = 3, format: str = "auto", progress: bool = False,
                  jobs: int | None = None) -> dict[str, Any]:
    if not 0.0 <= target_fpr <= 1.0:
        raise ValueError(f"--target-fpr must be in [0, 1], got {target_fpr}")
    datasets = load_datasets(paths, format)
    prepared = prepare(datasets, base, progress)
    embedder, reason = load_backend(base.embedding, base.model_path)
    if embedder is None:
        raise ValueError(reason)
    embed_all(prepared, base.embedding, embedder, progress=progress)
    result = calibrate(prepared, base, target_fpr, per_tool, min_tool_loops, progress, jobs)
    result["traces"] = len(prepared)
    return result
