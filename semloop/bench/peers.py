"""Other projects' loop detectors, run through their own packages (not re-implementations).

`agent-loop-guard` (PyPI; import name `loop_guard`, installed by the `bench` extra): sliding-window
similarity scoring over tool, arguments and output. Its `check(tool, args, output)` answers
CONTINUE, WARN, STOP or ESCALATE; a trace is flagged at its first WARN or worse and stopped at its
first STOP or ESCALATE, with the package's default settings.

Its similarity blends token Jaccard with a normalized Levenshtein distance computed by a
pure-Python O(n·m) table (`loop_guard.similarity.normalized_edit_distance`, for strings up to 2,000
characters: about 2 s per pair of long arguments or outputs). While it runs here that one function
is swapped for `normalized_edit_distance` below: the same integer distance by the bit-parallel
algorithm of Myers (1999), divided the same way, so every score and verdict is the package's own
(tests/test_bench_peers.py checks both against the package's function and its unpatched run).

A peer's verdicts depend on the steps it is fed and on its own version, not on semloop's config, so
`replay_all` runs it trace by trace in forked worker processes and can keep each trace's verdict in
a cache keyed by a hash of exactly what the peer was fed (`PeerCache`): its pure-Python edit
distance over long outputs makes it far slower per step than semloop, and a second run over the
same traces then costs only the reading of the cache.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .. import features
from ..traces import Step
from .metrics import TraceOutcome
from .runner import Prepared, os_cpus

Verdict = tuple[int | None, int | None]
"""A peer's first flag and first stop on one trace (step indexes, None when it never did)."""

PACKAGES: dict[str, str] = {"agent-loop-guard": "agent-loop-guard"}
"""Peer name -> the distribution whose version is part of every cache key."""


def _peer_input(step: Step) -> tuple[str, Any, str]:
    """The (tool, args, output) a peer's `check` gets for one step."""
    args = step.input if isinstance(step.input, (dict, str)) or step.input is None else {"input": step.input}
    return str(step.tool), args, features.render_value(step.output)


def levenshtein(a: str, b: str) -> int:
    """The Levenshtein distance (insert, delete, substitute: cost 1 each) of `a` and `b`, by the
    bit-parallel algorithm of Myers (1999) as Hyyrö (2001) states it for the global distance: one
    pass over the longer string, the shorter one's columns held as bits of Python integers."""
    if len(a) > len(b):
        a, b = b, a
    m = len(a)
    if m == 0:
        return len(b)
    peq: dict[str, int] = {}
    for i, ch in enumerate(a):
        peq[ch] = peq.get(ch, 0) | (1 << i)
    mask, high = (1 << m) - 1, 1 << (m - 1)
    pv, mv, score = mask, 0, m
    for ch in b:
        eq = peq.get(ch, 0)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = mv | ~(xh | pv)
        mh = pv & xh
        if ph & high:
            score += 1
        elif mh & high:
            score -= 1
        ph = (ph << 1) | 1
        mh <<= 1
        pv = (mh | ~(xv | ph)) & mask
        mv = ph & xv
    return score


def normalized_edit_distance(s1: str, s2: str) -> float:
    """`loop_guard.similarity.normalized_edit_distance`, the same value: 0.0 for equal strings,
    1.0 when one is empty, else the distance over the longer length."""
    if s1 == s2:
        return 0.0
    n, m = len(s1), len(s2)
    if n == 0 or m == 0:
        return 1.0
    return levenshtein(s1, s2) / max(n, m)


@contextmanager
def _fast_edit_distance() -> Iterator[None]:
    import loop_guard.similarity as similarity

    original = similarity.normalized_edit_distance
    similarity.normalized_edit_distance = normalized_edit_distance
    try:
        yield
    finally:
        similarity.normalized_edit_distance = original


def _agent_loop_guard(package_edit_distance: bool = False) -> Callable[[Sequence[Step]], Verdict]:
    """The peer's run over one trace's steps; `package_edit_distance`: with the package's own
    (slow) edit distance instead of the same one computed fast."""
    from loop_guard import Action, LoopGuard

    def run(steps: Sequence[Step]) -> Verdict:
        guard = LoopGuard()
        first_flag = first_stop = None
        for i, step in enumerate(steps):
            decision = guard.check(*_peer_input(step))
            if decision.action != Action.CONTINUE and first_flag is None:
                first_flag = i
            if decision.action in (Action.STOP, Action.ESCALATE):
                first_stop = i
                break
        return first_flag, first_stop

    if package_edit_distance:
        return run

    def fast(steps: Sequence[Step]) -> Verdict:
        with _fast_edit_distance():
            return run(steps)

    return fast


PEERS: dict[str, Callable[[], Callable[[Sequence[Step]], Verdict]]] = {"agent-loop-guard": _agent_loop_guard}


def available() -> list[str]:
    """The peers whose package is installed."""
    out = []
    for name, load in PEERS.items():
        try:
            load()
        except ImportError:
            continue
        out.append(name)
    return out


def replay(name: str, p: Prepared) -> TraceOutcome:
    """One trace through the peer `name`, in this process."""
    return p.outcome(*PEERS[name]()(p.trace.steps))


def trace_key(name: str, version: str, steps: Sequence[Step]) -> str:
    """The cache key of one trace for one peer: a hash of the peer, its version and every
    (tool, args, output) it is fed, so any change to a step or to the package is a new key."""
    h = hashlib.blake2b(f"{name}\0{version}".encode(), digest_size=16)
    for step in steps:
        h.update(b"\0" + json.dumps(_peer_input(step), sort_keys=True, default=str, ensure_ascii=False).encode())
    return h.hexdigest()


def package_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PACKAGES[name])
    except PackageNotFoundError:
        return "unknown"


class PeerCache:
    """Verdicts of one peer by trace key, in ``<dir>/<peer>.jsonl`` (one ``{"key", "flag",
    "stop"}`` line per trace, appended as they are computed; the last line for a key wins). Only
    the process that owns the cache writes to it."""

    def __init__(self, directory: str | Path, name: str):
        self.path = Path(directory) / f"{name}.jsonl"
        self.verdicts: dict[str, Verdict] = {}
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                    self.verdicts[row["key"]] = (row["flag"], row["stop"])
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut short by an interrupted run: computed again

    def add(self, key: str, verdict: Verdict) -> None:
        self.verdicts[key] = verdict
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"key": key, "flag": verdict[0], "stop": verdict[1]}) + "\n")


_POOL_PREPARED: Sequence[Prepared] = ()
_POOL_PEER = ""


def _run_one(index: int) -> tuple[int, Verdict]:
    return index, PEERS[_POOL_PEER]()(_POOL_PREPARED[index].trace.steps)


def _verdicts(name: str, prepared: Sequence[Prepared], todo: list[int], jobs: int) -> Iterator[tuple[int, Verdict]]:
    """(index, verdict) for the traces `todo`, as they finish: in forked workers that share
    `prepared` copy-on-write, or in this process (jobs 1, or no fork on this platform)."""
    global _POOL_PREPARED, _POOL_PEER
    import multiprocessing as mp

    if not todo:
        return
    if jobs <= 1 or len(todo) < 2 or "fork" not in mp.get_all_start_methods():
        run = PEERS[name]()
        for i in todo:
            yield i, run(prepared[i].trace.steps)
        return
    _POOL_PREPARED, _POOL_PEER = prepared, name
    try:
        # longest traces first, so that no worker is left with the slowest one at the end
        order = sorted(todo, key=lambda i: -len(prepared[i].trace.steps))
        with mp.get_context("fork").Pool(min(jobs, len(todo))) as pool:
            yield from pool.imap_unordered(_run_one, order, chunksize=1)
    finally:
        _POOL_PREPARED, _POOL_PEER = (), ""


def replay_all(name: str, prepared: Sequence[Prepared], jobs: int | None = None,
               cache_dir: str | Path | None = None,
               on_done: Callable[[int], None] | None = None) -> list[TraceOutcome]:
    """Every trace of `prepared` through the peer `name`, in order: `jobs` worker processes (one
    per CPU by default), and with `cache_dir` the verdicts of traces seen before read from it and
    the new ones added to it. `on_done(n)` is called as traces finish (n at a time)."""
    keys: dict[int, str] = {}
    verdicts: dict[int, Verdict] = {}
    cache = None
    if cache_dir is not None:
        cache = PeerCache(cache_dir, name)
        version = package_version(name)
        for i, p in enumerate(prepared):
            keys[i] = trace_key(name, version, p.trace.steps)
            if keys[i] in cache.verdicts:
                verdicts[i] = cache.verdicts[keys[i]]
    todo = [i for i in range(len(prepared)) if i not in verdicts]
    if on_done and verdicts:
        on_done(len(verdicts))
    for i, verdict in _verdicts(name, prepared, todo, (os_cpus() or 1) if jobs is None else jobs):
        verdicts[i] = verdict
        if cache is not None:
            cache.add(keys[i], verdict)
        if on_done:
            on_done(1)
    return [p.outcome(*verdicts[i]) for i, p in enumerate(prepared)]
