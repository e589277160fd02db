"""Replaying recorded traces through a fresh guard: the engine behind `semloop scan` and the
benchmark. Each trace gets its own `LoopGuard`, fed every step in order with `record`.

Scanning many traces (`scan`, `iter_scan`) takes the same path with two changes that keep the
verdicts identical by construction: the call texts of a chunk of traces are embedded in one batch
up front (the guard then looks its vectors up instead of embedding one text per step), and chunks
can go to worker processes (`jobs`), each loading the model once. `scan` also takes a Ray Data
batch (a dict of columns, or a pandas DataFrame, holding trace JSON) and returns one, so a Ray
Data pipeline can map it over a trace archive (see docs/performance.md and `semloop.distributed`).

The module is callable: `semloop.scan(traces)` is `semloop.scan.scan(traces)`.
"""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import features
from .config import Config
from .embeddings import Embedder, load_embedder
from .guard import LoopGuard
from .traces import Trace, TraceError, parse_trace
from .verdict import FlaggedSteps, Verdict

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class ScanResult(FlaggedSteps):
    id: str
    steps: int
    events: tuple[Verdict, ...]  # the non-allow verdicts, in step order

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "steps": self.steps, "first_warn": self.first_warn, "first_stop": self.first_stop,
                "events": [{"step": v.step, "action": v.action, "signals": [s.to_dict() for s in v.signals],
                            "message": v.message} for v in self.events]}


def replay(trace: Trace, guard: LoopGuard) -> Iterator[Verdict]:
    """The verdict of each step of `trace`, recorded in order into `guard` (a fresh one: the
    trace is the whole session), as a guarded agent would have seen them."""
    for step in trace.steps:
        yield guard.record(step.tool, step.input, step.output, step.is_error)


def scan_trace(trace: Trace, config: Config | None = None, embedder: Embedder | None = None) -> ScanResult:
    events = (v for v in replay(trace, LoopGuard(config, embedder=embedder)) if v.action != "allow")
    return ScanResult(trace.id, len(trace.steps), tuple(events))


# -- many traces: one embedding batch per chunk, optional worker processes --------------------

BATCH_STEPS = 4096
"""Steps per chunk: the call texts of a chunk are embedded in one batch (and a chunk is the unit of
work of a worker process)."""


class PrecomputedEmbedder:
    """Vectors embedded ahead of time, looked up by text; a text that was not precomputed goes to
    `fallback` (never the case when the texts came from `features.call_text` of the same steps)."""

    def __init__(self, table: dict[str, np.ndarray], fallback: Embedder):
        self.table = table
        self.fallback = fallback

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 1 and texts[0] in self.table:
            return self.table[texts[0]][None, :]
        import numpy as np

        missing = [t for t in texts if t not in self.table]
        if missing:
            self.table.update(zip(missing, self.fallback(missing), strict=True))
        return np.stack([self.table[t] for t in texts])


def call_texts(trace: Trace, config: Config) -> list[str]:
    """The text `LoopGuard` embeds for each step of `trace` (see `guard._step`)."""
    limit = config.max_text_chars
    return [features.call_text(str(s.tool), features.call_values(s.input), limit) for s in trace.steps]


def scan_chunk(traces: Sequence[Trace], config: Config, embedder: Embedder | None = None) -> list[ScanResult]:
    """Scan `traces` with their call texts embedded in one batch first; verdicts are those of
    `scan_trace` (same guard, same texts, the same vectors: the static and hashing backends embed
    each text independently of its batch)."""
    lookup = None
    if config.detector == "semantic":
        base = embedder or load_embedder(config.embedding, config.model_path)
        raw = getattr(base, "embed", base)  # the model itself, not the shared per-text LRU
        texts = list(dict.fromkeys(t for trace in traces for t in call_texts(trace, config)))
        table = dict(zip(texts, raw(texts), strict=True)) if texts else {}
        lookup = PrecomputedEmbedder(table, base)
    return [scan_trace(trace, config, embedder=lookup) for trace in traces]


def iter_scan(traces: Iterable[Trace | dict[str, Any] | str], config: Config | None = None, *,
              embedder: Embedder | None = None, jobs: int = 1, batch_steps: int = BATCH_STEPS) -> Iterator[ScanResult]:
    """`ScanResult`s of `traces` (Trace objects, trace dicts or JSONL lines), in input order.

    `jobs` > 1 scans chunks in that many worker processes, each loading the model once; a custom
    `embedder` is then shipped to the workers by pickling (the default backends load by name)."""
    config = config or Config()
    chunks = _chunks((_as_trace(t, i) for i, t in enumerate(traces)), batch_steps)
    if jobs <= 1:
        for chunk in chunks:
            yield from scan_chunk(chunk, config, embedder)
        return
    import multiprocessing as mp

    method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
    with mp.get_context(method).Pool(jobs, initializer=_init_worker, initargs=(config, embedder)) as pool:
        for results in pool.imap(_scan_in_worker, chunks):
            yield from results


def scan(traces: Any, config: Config | None = None, *, embedder: Embedder | None = None, jobs: int = 1,
         column: str | None = None) -> Any:
    """Scan many traces for loops.

    - `traces` an iterable of `Trace` objects, trace dicts (the JSONL format) or JSONL lines:
      returns the list of `ScanResult`, in order.
    - `traces` a batch of columns — a dict of columns or a pandas DataFrame, as Ray Data's
      `map_batches` passes them — with a column of trace JSON (`text` from `read_text`, or
      `trace`, `json`, `line`; or name it with `column`): returns a dict of columns `id`, `steps`,
      `flagged`, `first_warn`, `first_stop`, `result` (the JSON line `semloop scan --json` prints)
      and `error` (a bad row gets its message here instead of failing the batch).

    The verdicts are those of `scan_trace` on each trace.
    """
    if isinstance(traces, Mapping) or hasattr(traces, "columns"):
        return scan_batch(traces, config, embedder=embedder, column=column)
    return list(iter_scan(traces, config, embedder=embedder, jobs=jobs))


TRACE_COLUMNS = ("text", "trace", "json", "line")


def scan_batch(batch: Any, config: Config | None = None, *, embedder: Embedder | None = None,
               column: str | None = None) -> dict[str, list[Any]]:
    """One batch of trace JSON → one batch of results (see `scan`)."""
    columns = list(batch.columns) if hasattr(batch, "columns") else list(batch)
    name = column or next((c for c in TRACE_COLUMNS if c in columns), None)
    if name is None:
        raise ValueError(f"no trace column in the batch (columns {columns}); expected one of {TRACE_COLUMNS} "
                         "holding a trace's JSON, or pass column=")
    traces: list[Trace | None] = []
    errors: list[str | None] = []
    for i, value in enumerate(list(batch[name])):
        try:
            if isinstance(value, bytes):
                value = value.decode("utf-8", errors="replace")
            traces.append(parse_trace(value if isinstance(value, (str, dict)) else str(value), f"{name}[{i}]"))
            errors.append(None)
        except TraceError as exc:
            traces.append(None)
            errors.append(str(exc))
    good = iter(scan_chunk([t for t in traces if t is not None], config or Config(), embedder))
    out: dict[str, list[Any]] = {k: [] for k in (
        "id", "steps", "flagged", "first_warn", "first_stop", "result", "error")}
    for trace, error in zip(traces, errors, strict=True):
        r = next(good) if trace is not None else None
        out["id"].append(r.id if r else None)
        out["steps"].append(r.steps if r else 0)
        out["flagged"].append(bool(r and r.events))
        out["first_warn"].append(r.first_warn if r else None)
        out["first_stop"].append(r.first_stop if r else None)
        out["result"].append(json.dumps(r.to_dict(), ensure_ascii=False) if r else None)
        out["error"].append(error)
    return out


def _as_trace(value: Trace | dict[str, Any] | str, index: int) -> Trace:
    return value if isinstance(value, Trace) else parse_trace(value, f"trace {index}")


def _chunks(traces: Iterable[Trace], max_steps: int) -> Iterator[list[Trace]]:
    chunk: list[Trace] = []
    steps = 0
    for trace in traces:
        chunk.append(trace)
        steps += len(trace.steps)
        if steps >= max_steps:
            yield chunk
            chunk, steps = [], 0
    if chunk:
        yield chunk


_WORKER: dict[str, Any] = {}


def _init_worker(config: Config, embedder: Embedder | None) -> None:
    if embedder is None and config.detector == "semantic":
        embedder = load_embedder(config.embedding, config.model_path)  # once per worker process
    _WORKER.update(config=config, embedder=embedder)


def _scan_in_worker(chunk: list[Trace]) -> list[ScanResult]:
    return scan_chunk(chunk, _WORKER["config"], _WORKER["embedder"])


class _CallableModule(types.ModuleType):
    """`semloop.scan` is both this module and its `scan` function: `semloop.scan(traces)`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return scan(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
