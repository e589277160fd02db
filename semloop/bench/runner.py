"""Running detectors over labelled traces, fast enough to sweep thresholds.

The expensive part of a guard step is feature extraction (result normalization and sketches) and
embedding; neither depends on thresholds. `prepare` computes the per-step features once per trace
(with the guard's own `_step`, so they are exactly what `LoopGuard.record` would compute), call
vectors are embedded once per backend in batches, and `replay` feeds those precomputed records
through an otherwise unchanged `LoopGuard` (signals, policy, per-tool overrides). The test suite
checks that `replay` gives the same verdicts as `semloop.scan.scan_trace`.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import features
from ..config import Config
from ..guard import LoopGuard
from ..state import StepRecord
from ..traces import Trace, load_traces
from . import DETECTORS, PEERS
from .metrics import TraceOutcome, ratio

# bench name -> (Config.detector, Config.embedding or None)
EASY_NEGATIVE_KINDS = {"normal", "none", "easy"}  # negative_kind values that are not look-alikes
SEMANTIC_BACKENDS = {name: emb for name, (det, emb) in DETECTORS.items() if det == "semantic"}


def parse_detectors(text: str | None) -> list[str]:
    if not text or text == "all":
        return [*DETECTORS, *PEERS]
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in DETECTORS and n not in PEERS]
    if unknown:
        raise ValueError(f"unknown detector(s) {unknown}; choose from {[*DETECTORS, *PEERS]}")
    return list(dict.fromkeys(names))


def config_for(name: str, base: Config) -> Config:
    detector, embedding = DETECTORS[name]
    changes: dict[str, Any] = {"detector": detector}
    if embedding:
        changes["embedding"] = embedding
        if embedding != base.embedding:
            changes["model_path"] = None  # a --config model_path belongs to its own backend
    return base.replace(**changes)


# -- data ------------------------------------------------------------------------------------


@dataclass
class Dataset:
    name: str
    path: str
    traces: list[Trace]


def label_of(trace: Trace) -> tuple[bool, int | None, str | None]:
    label = trace.label or {}
    loop = bool(label.get("loop"))
    onset = label.get("onset")
    onset = int(onset) if loop and isinstance(onset, (int, float)) else (0 if loop else None)
    kind = label.get("kind") if loop else None
    return loop, onset, (str(kind) if kind else ("unknown" if loop else None))


def negative_kind_of(trace: Trace) -> str | None:
    meta = trace.meta or {}
    nested = meta.get("meta")
    if not isinstance(nested, dict):
        nested = {}
    kind = nested.get("negative_kind", meta.get("negative_kind"))
    return str(kind) if kind else None


def load_datasets(paths: Sequence[str], format: str = "auto") -> list[Dataset]:
    """Labelled traces per file; a trace without a label is an error naming the file and id."""
    datasets, seen = [], set()
    for path in paths:
        traces = load_traces(path, format)
        unlabeled = [t.id for t in traces if not isinstance(t.label, dict) or "loop" not in t.label]
        if unlabeled:
            shown = ", ".join(unlabeled[:5]) + (" …" if len(unlabeled) > 5 else "")
            raise ValueError(f"{path}: {len(unlabeled)} of {len(traces)} trace(s) have no label "
                             f"(a 'label' object with 'loop', 'onset', 'kind'): {shown}. "
                             "Benchmarks and calibration need labelled traces.")
        if not traces:
            raise ValueError(f"{path}: no traces")
        name = Path(path).stem
        while name in seen:
            name += "'"
        seen.add(name)
        datasets.append(Dataset(name, str(path), traces))
    return datasets


# -- precomputed features and replay ---------------------------------------------------------


@dataclass
class Prepared:
    """A trace with every threshold-independent part of each guard step computed once."""

    dataset: str
    trace: Trace
    records: list[StepRecord]
    texts: list[str]
    loop: bool
    onset: int | None
    kind: str | None
    negative_kind: str | None
    hard_negative: bool
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # backend -> (n, d)

    def outcome(self, first_flag: int | None, first_stop: int | None) -> TraceOutcome:
        return TraceOutcome(self.dataset, self.trace.id, len(self.trace.steps), self.loop, self.onset, self.kind,
                            self.negative_kind, self.hard_negative, first_flag, first_stop)


def prepare(datasets: Sequence[Dataset], base: Config, progress: bool = False) -> list[Prepared]:
    out = []
    feature_guard = LoopGuard(base.replace(detector="exact"))  # no embedding in its _step
    total = sum(len(d.traces) for d in datasets)
    with progress_bar(total, "features", progress) as bar:
        for ds in datasets:
            annotated = any(negative_kind_of(t) for t in ds.traces)
            for trace in ds.traces:
                loop, onset, kind = label_of(trace)
                neg = None if loop else negative_kind_of(trace)
                records, texts = [], []
                for i, step in enumerate(trace.steps):
                    tool = str(step.tool)
                    record = feature_guard._step(tool, step.input, step.output, bool(step.is_error))
                    record.index = i
                    records.append(record)
                    texts.append(features.call_text(tool, features.call_values(step.input), base.max_text_chars,
                                                    record.is_message))
                hard = not loop and ((neg is not None and neg not in EASY_NEGATIVE_KINDS) or not annotated)
                out.append(Prepared(ds.name, trace, records, texts, loop, onset, kind, neg, hard))
                bar.update(1)
    return out


def embed_all(prepared: Sequence[Prepared], backend: str, embedder: Callable, batch: int = 1024,
              progress: bool = False) -> None:
    """Embed every distinct call text once, in batches, and attach per-trace vector arrays."""
    raw = getattr(embedder, "embed", embedder)  # skip the bounded LRU: we keep our own table
    unique = list(dict.fromkeys(t for p in prepared for t in p.texts))
    table: dict[str, np.ndarray] = {}
    with progress_bar(len(unique), f"embed {backend}", progress) as bar:
        for start in range(0, len(unique), batch):
            chunk = unique[start:start + batch]
            vecs = np.asarray(raw(chunk), dtype=np.float32)
            table.update(zip(chunk, vecs, strict=True))
            bar.update(len(chunk))
    for p in prepared:
        p.vectors[backend] = (np.stack([table[t] for t in p.texts]) if p.texts
                              else np.zeros((0, 1), dtype=np.float32))


def _no_embedder(texts):  # pragma: no cover - ReplayGuard never embeds
    raise RuntimeError("ReplayGuard does not embed")


class ReplayGuard(LoopGuard):
    """A `LoopGuard` whose per-step features come from a `Prepared` trace instead of being
    recomputed; signals, policy and verdicts are the real ones."""

    def __init__(self, config: Config, prepared: Prepared):
        super().__init__(config, embedder=_no_embedder)
        self._prepared = prepared
        self._vectors = prepared.vectors.get(config.embedding) if config.detector == "semantic" else None
        if config.detector == "semantic" and self._vectors is None:
            raise RuntimeError(f"no {config.embedding!r} vectors prepared for {prepared.trace.id}")

    def _step(self, tool: str, tool_input: Any, output: Any, is_error: bool) -> StepRecord:
        i = self.state.steps_seen
        vec = self._vectors[i] if self._vectors is not None else None
        return dataclasses.replace(self._prepared.records[i], call_vec=vec, cluster=-1)


def replay(p: Prepared, config: Config) -> TraceOutcome:
    return p.outcome(*first_verdicts(ReplayGuard(config.replace(fail_open=False), p), p.trace))


def first_verdicts(guard: LoopGuard, trace: Trace) -> tuple[int | None, int | None]:
    """The steps of the first warning and of the first stop when `trace` is recorded through
    `guard` (None where there is none)."""
    first_flag = first_stop = None
    for step in trace.steps:
        verdict = guard.record(step.tool, step.input, step.output, step.is_error)
        if verdict.action != "allow" and first_flag is None:
            first_flag = verdict.step
        if verdict.action == "stop":
            first_stop = verdict.step
            break  # a stopped guard stops every later step; nothing more to learn
    return first_flag, first_stop


def replay_all(prepared: Iterable[Prepared], config: Config) -> list[TraceOutcome]:
    return [replay(p, config) for p in prepared]


# -- embedders -------------------------------------------------------------------------------


def load_backend(backend: str, model_path: str | None = None) -> tuple[Callable | None, str | None]:
    """(embedder, None) or (None, reason) when the backend is not installed."""
    from ..embeddings import load_embedder

    try:
        return load_embedder(backend, model_path), None
    except ImportError as exc:
        return None, f"{backend} backend not available ({exc})"


# -- progress --------------------------------------------------------------------------------


class _NullBar:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n=1):
        pass


def progress_bar(total: int, desc: str, enabled: bool):
    """A tqdm bar on stderr when enabled and tqdm is installed; a no-op otherwise."""
    if not enabled:
        return _NullBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NullBar()
    return tqdm(total=total, desc=desc, file=sys.stderr, leave=False, dynamic_ncols=True, mininterval=0.5)


# -- the whole benchmark ---------------------------------------------------------------------

SWEEP_THRESHOLDS = tuple(round(0.70 + 0.02 * i, 2) for i in range(15))  # 0.70 .. 0.98


def sweep_thresholds(prepared: Sequence[Prepared], config: Config,
                     thresholds: Sequence[float] = SWEEP_THRESHOLDS, jobs: int | None = None) -> list[dict[str, Any]]:
    """The soft and the hard block as `call_threshold` varies: per threshold, the first warning's
    precision, recall and false-alarm rate (`recall`, `fpr`) and the first stop's (`stop_recall`:
    loop runs ended, `stop_fpr`: clean runs stopped)."""
    summaries = evaluate_configs(prepared, [config.replace(call_threshold=float(t)) for t in thresholds], jobs)
    return [{"call_threshold": float(t), **{k: s[k] for k in
             ("precision", "recall", "f1", "fpr", "hard_fpr", "tp", "fp", "fn", "delay_median", "loops", "negatives",
              "stops_on_loops", "stops_on_negatives")},
             "stop_recall": ratio(s["stops_on_loops"], s["loops"]),
             "stop_fpr": ratio(s["stops_on_negatives"], s["negatives"])}
            for t, s in zip(thresholds, summaries, strict=True)]


STOP_GRID = tuple((gate, warnings) for gate in ("rules", "same_loop", "agree", "same_loop+agree")
                  for warnings in (2, 3, 4))


def hard_tradeoff(prepared: Sequence[Prepared], config: Config, jobs: int | None = None) -> list[dict[str, Any]]:
    """The hard block's trade-off: loops ended and clean runs stopped for each stop gate
    (`Config.stop_gate`) at the 3rd, 4th and 5th flag (`max_warnings` 2, 3, 4); the soft block
    (first warning) is the same in every row."""
    configs = [config.replace(stop_gate=gate, max_warnings=w) for gate, w in STOP_GRID]
    summaries = evaluate_configs(prepared, configs, jobs)
    return [{"stop_gate": gate, "max_warnings": w, "loops": s["loops"], "negatives": s["negatives"],
             "stops_on_loops": s["stops_on_loops"], "stops_on_negatives": s["stops_on_negatives"],
             "hard_recall": s["stops_on_loops"] / s["loops"] if s["loops"] else float("nan"),
             "hard_fpr": s["stops_on_negatives"] / s["negatives"] if s["negatives"] else float("nan"),
             "steps_saved": s["steps_saved"], "steps_cut_negatives": s["steps_cut_negatives"]}
            for (gate, w), s in zip(STOP_GRID, summaries, strict=True)]


GATE_GRID: tuple[tuple[float, float, float] | None, ...] = (
    None, (0.1, 0.35, 0.8), (0.2, 0.2, 0.8), (0.2, 0.35, 0.8), (0.2, 0.35, 0.7), (0.2, 0.35, 0.9), (0.2, 0.35, 1.0),
    (0.2, 0.5, 0.8), (0.3, 0.35, 0.8), (0.4, 0.5, 0.8))
"""Points of the second view (`semloop.gate`) measured by `gate_tradeoff`: (warn_score, stop_score,
sure_score; a sure_score of 1.0 never stops after one warning), None for the gate off."""


def gate_tradeoff(prepared: Sequence[Prepared], config: Config, jobs: int | None = None) -> list[dict[str, Any]]:
    """The soft and the hard block for each point of `GATE_GRID`: a higher `warn_score` hides more
    flags (fewer false warnings, fewer loops warned), a higher `stop_score` ends fewer runs, a
    lower `sure_score` ends more of them after one warning."""
    configs = [config.replace(gate_coefs=()) if point is None else
               config.replace(warn_score=point[0], stop_score=point[1], sure_score=point[2]) for point in GATE_GRID]
    summaries = evaluate_configs(prepared, configs, jobs)
    return [{"gate": point is not None, "warn_score": point[0] if point else None,
             "stop_score": point[1] if point else None, "sure_score": point[2] if point else None,
             "loops": s["loops"], "negatives": s["negatives"],
             "soft_recall": s["recall"], "soft_fpr": s["fpr"],
             "hard_recall": s["stops_on_loops"] / s["loops"] if s["loops"] else float("nan"),
             "hard_fpr": s["stops_on_negatives"] / s["negatives"] if s["negatives"] else float("nan"),
             "delay_median": s["delay_median"]}
            for point, s in zip(GATE_GRID, summaries, strict=True)]


def run_bench(paths: Sequence[str], detectors: Sequence[str], base: Config | None = None, *,
              progress: bool = False, latency_steps: int = 1000, latency_budget_s: float = 20.0, perf_runs: int = 5,
              sweep: bool = True, jobs: int | None = None, memory_steps: int = 100_000,
              log: Callable[[str], None] | None = None, datasets: Sequence[Dataset] | None = None,
              peer_cache: str | None = None) -> dict[str, Any]:
    """Accuracy, delay, steps saved, threshold sweep and latency/memory for `detectors` on the
    labelled trace files `paths` (`datasets`: those files already read by `load_datasets`).
    Returns a JSON-able dict (nan for undefined values). `log` gets one line as each stage starts.
    Peers run in `jobs` worker processes; `peer_cache`: a folder keeping their verdicts per trace
    (`peers.replay_all`)."""
    import platform
    import time

    from .. import __version__
    from . import metrics, perf

    say = log or (lambda msg: print(msg, file=sys.stderr))
    base = base or Config()
    started = time.time()
    stages: dict[str, float] = {}

    def lap(name: str, t0: float) -> float:
        now = time.time()
        stages[name] = round(stages.get(name, 0.0) + now - t0, 2)
        return now

    datasets = list(datasets) if datasets is not None else load_datasets(paths)
    session = None
    if memory_steps > 0:
        say(f"semloop bench: one session of {memory_steps:,} steps for the memory figures, in a second process")
        session = perf.start_session_memory(paths, memory_steps)
    prepared = prepare(datasets, base, progress)
    t = lap("load+features", started)

    embedders: dict[str, Callable] = {}
    skipped: dict[str, str] = {}
    from . import peers as peer_mod

    installed = peer_mod.available()
    for name in detectors:
        if name in PEERS:
            if name not in installed:
                skipped[name] = f"{name} is not installed (pip install \"semloop-guard[bench]\")"
                say(f"semloop bench: skipping {name}: not installed")
            continue
        backend = DETECTORS[name][1]
        if backend is None or backend in embedders:
            continue
        model_path = base.model_path if backend == base.embedding else None
        embedder, reason = load_backend(backend, model_path)
        if embedder is None:
            skipped[name] = reason or "not available"
            say(f"semloop bench: skipping {name}: {reason}")
            continue
        embedders[backend] = embedder
        say(f"semloop bench: embedding the calls with {backend}")
        embed_all(prepared, backend, embedder, progress=progress)
        t = lap(f"embed {backend}", t)
    run = [n for n in detectors if n not in skipped]

    outcomes: dict[str, list[TraceOutcome]] = {}
    say(f"semloop bench: replaying {len(prepared)} traces through {len(run)} detector(s)")
    with progress_bar(len(run) * len(prepared), "detectors", progress) as bar:
        for name in run:
            if name in PEERS:
                outcomes[name] = peer_mod.replay_all(name, prepared, jobs=jobs, cache_dir=peer_cache,
                                                     on_done=bar.update)
                continue
            cfg = config_for(name, base)
            rows = []
            for p in prepared:
                rows.append(replay(p, cfg))
                bar.update(1)
            outcomes[name] = rows

    overall = {n: metrics.summarize(outcomes[n]) for n in run}
    per_dataset = {d.name: {n: metrics.summarize([o for o in outcomes[n] if o.dataset == d.name]) for n in run}
                   for d in datasets}
    per_kind = {n: metrics.by_kind(outcomes[n]) for n in run}
    t = lap("detectors", t)

    sweeps: dict[str, Any] = {}
    tradeoff: list[dict[str, Any]] = []
    gate_curve: list[dict[str, Any]] = []
    if sweep:
        say("semloop bench: call-threshold sweep")
        semantic_runs = [n for n in run if n in DETECTORS and DETECTORS[n][0] == "semantic"]
        with progress_bar(len(semantic_runs), "threshold sweep", progress) as bar:
            for n in semantic_runs:
                sweeps[n] = sweep_thresholds(prepared, config_for(n, base), jobs=jobs)
                bar.update(1)
        if "semantic" in semantic_runs:
            tradeoff = hard_tradeoff(prepared, config_for("semantic", base), jobs=jobs)
            gate_curve = gate_tradeoff(prepared, config_for("semantic", base), jobs=jobs)
    t = lap("sweep", t)

    latency = {}
    sample = perf.sample_traces([p.trace for p in prepared], latency_steps)
    say(f"semloop bench: timing {sum(len(t.steps) for t in sample)} steps per detector (at most "
        f"{latency_budget_s:g} s each)")
    with progress_bar(len(run), "latency", progress) as bar:
        for n in run:
            if n in PEERS:  # another package's code: not timed against semloop's step
                bar.update(1)
                continue
            backend = DETECTORS[n][1]
            embedder = embedders.get(backend) if backend is not None else None
            latency[n] = perf.latency_summary(perf.step_latencies(sample, config_for(n, base), embedder,
                                                                   latency_budget_s))
            bar.update(1)
    perf.add_ratios(latency)
    t = lap("latency", t)
    throughput = {}
    if "semantic" in run:
        throughput = perf.scan_throughput([p.trace for p in prepared], config_for("semantic", base))
        t = lap("scan throughput", t)
    if perf_runs > 0:
        say(f"semloop bench: import and first-verdict time, {perf_runs} fresh processes")
    process = perf.process_costs(perf_runs) if perf_runs > 0 else {}
    if session is not None:
        say("semloop bench: waiting for the long-session memory run")
        process["session"] = perf.finish_session_memory(session)
    lap("process costs", t)

    def describe(d: Dataset) -> dict[str, Any]:
        rows = [p for p in prepared if p.dataset == d.name]
        return {"name": d.name, "path": d.path, "traces": len(rows), "loops": sum(p.loop for p in rows),
                "negatives": sum(not p.loop for p in rows), "hard_negatives": sum(p.hard_negative for p in rows),
                "hard_negatives_annotated": any(p.negative_kind for p in rows),
                "steps": sum(len(p.trace.steps) for p in rows)}

    return {
        "meta": {"semloop": __version__, "python": platform.python_version(), "platform": platform.platform(),
                 "cpus": os_cpus(), "seconds": round(time.time() - started, 1),
                 "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "base_config": base.to_dict(),
                 "latency_sample_steps": sum(len(t.steps) for t in sample),
                 "latency_budget_s": latency_budget_s, "stage_seconds": stages},
        "datasets": [describe(d) for d in datasets],
        "detectors": run,
        "skipped": skipped,
        "overall": overall,
        "per_dataset": per_dataset,
        "per_kind": per_kind,
        "sweep": sweeps,
        "hard_tradeoff": tradeoff,
        "gate_tradeoff": gate_curve,
        "latency": latency,
        "throughput": throughput,
        "process": process,
        "definitions": (metrics.__doc__ or "").split("copied into every report):", 1)[-1].strip(),
        "outcomes": {n: [o.to_dict() for o in outcomes[n]] for n in run},
    }


def os_cpus() -> int | None:
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count()


# -- parallel evaluation of many configs (threshold sweeps) ----------------------------------

_POOL_PREPARED: Sequence[Prepared] = ()


def _summarize_one(config: Config) -> dict[str, Any]:
    from .metrics import summarize

    s = summarize(replay_all(_POOL_PREPARED, config))
    s.pop("delays", None)
    return s


def evaluate_configs(prepared: Sequence[Prepared], configs: Sequence[Config], jobs: int | None = None,
                     on_done: Callable[[], None] | None = None) -> list[dict[str, Any]]:
    """`metrics.summarize` of every config over `prepared`, in order. Uses forked worker processes
    (one per CPU by default) that share the prepared traces copy-on-write; serial when jobs == 1,
    on platforms without fork, or for a handful of configs."""
    global _POOL_PREPARED
    import multiprocessing as mp

    jobs = (os_cpus() or 1) if jobs is None else jobs
    _POOL_PREPARED = prepared
    try:
        if jobs <= 1 or len(configs) < 4 or "fork" not in mp.get_all_start_methods():
            out = []
            for cfg in configs:
                out.append(_summarize_one(cfg))
                if on_done:
                    on_done()
            return out
        with mp.get_context("fork").Pool(min(jobs, len(configs))) as pool:
            out = []
            for row in pool.imap(_summarize_one, configs, chunksize=1):
                out.append(row)
                if on_done:
                    on_done()
            return out
    finally:
        _POOL_PREPARED = ()
