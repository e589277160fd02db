"""Signals: small pure functions `(state, step, config) -> Signal | None`.

They sit on top of the two questions every signal asks: "is this the same action?"
(`semloop.same_action`) and "did anything new happen since?" (`semloop.novelty`). Each looks at
the new `step` against the bounded `state` (which does not yet contain `step`) and returns
evidence, or None. None of them mutates state; `update_clusters` is the one exception and
says so in its name. The layered default (`SEMANTIC`) and the baselines (`BASELINES`) are just
lists of these functions.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

import numpy as np

from .config import Config
from .features import content_similarity
from .novelty import (
    led_on,
    moved_after_edit,
    page_error,
    poll_needed,
    since_progress,
    starts_at_a_reply,
    unchanged_after_edit,
    uses_new_value,
)
from .same_action import different_ids, related, result_match, same_step
from .state import Cluster, SessionState, StepRecord
from .verdict import Signal
from .verdict import SignalKind as K

SignalFn = Callable[[SessionState, StepRecord, Config], "Signal | None"]

_CALL_KIND_RANK = {K.EXACT.value: 0, K.NORMALIZED.value: 1, K.PARAPHRASE.value: 2}
GENERIC_ERRORS = frozenset({"exit", "error", "other"})


# -- the layered (semantic) signals ----------------------------------------------------------


def repeated_call(state: SessionState, step: StepRecord, cfg: Config) -> Signal | None:
    """Exact, normalized or paraphrased repeats of this call in the window, results unchanged.

    A similar call whose result changes (polling a moving status, paginating, a failing test list
    that shrinks) does not count: only repeats that return the same content do.
    """
    needed = poll_needed(state, step, cfg)
    progress = since_progress(state, step)
    # across an edit only the very same output is the same step: a rerun whose output moved is progress
    matches = [(prev.index, m) for prev in progress
               if not moved_after_edit(state, step, prev) and (m := same_step(step, prev, cfg))]
    if len(matches) < needed and not step.is_message and starts_at_a_reply(progress):
        # The very same call after some talk: the replies were new, but the call did not change, so
        # nothing they said reached it (the same lookup again while the customer repeats the id).
        # Only the steps before `progress` are new here.
        first = progress[0].index
        matches = [(prev.index, m) for prev in since_progress(state, step, talk=False)
                   if prev.index < first and prev.norm_sig == step.norm_sig and (m := same_step(step, prev, cfg))
                   ] + matches
    if len(matches) < needed:
        # The very same call with the very same output, again: for a call that fails, whatever
        # happened in between (a calculation, a note to self, an edit) did not change the call, so
        # it was not progress for it; for one that succeeds, an edit in between that left its
        # output as it was (`unchanged_after_edit`: edit → rerun → same output). "The very same"
        # is the same text once volatile parts are masked: a test run whose failure list shrank
        # after an edit is failing less, which is progress.
        same = [(prev.index, m) for prev in state.window
                if (prev.is_error and step.is_error and prev.result_hash == step.result_hash
                    and not led_on(state, prev.index)  # it led somewhere: a hub page walked
                    or unchanged_after_edit(state, step, prev, cfg.thresholds))
                and (m := same_step(step, prev, cfg)) and m[0] != K.PARAPHRASE]
        if step.is_error and 0 < len(same) < needed:
            same = _succeeded_before(state, step, first_failure=same[0][0]) + same
        if step.is_error:
            matches = same
        elif same:  # a clean rerun's matches since the edit count too, unless only reworded
            matches = sorted(dict(same + [(i, m) for i, m in matches if m[0] != K.PARAPHRASE]).items())
            if not step.pending:
                needed = cfg.thresholds.unchanged_reruns
    if len(matches) < needed and (flip := _flipping(state, step, needed)):
        matches = flip
    if len(matches) < needed:
        return None
    kind = max((m[0] for _, m in matches), key=_CALL_KIND_RANK.__getitem__)
    score = min(m[1] for _, m in matches)
    return Signal(kind, score, tuple(i for i, _ in matches))


def _flipping(state: SessionState, step: StepRecord, needed: int) -> list[tuple[int, tuple[str, float]]]:
    """The very same call made back to back, its results flipping between two (a sort order
    toggled: A, B, A): no result is new to the run, however the two differ. The calls before it in
    a row, as matches; [] otherwise. (A, B, B changed once and stayed: news.)"""
    run = []
    for prev in reversed(state.window):
        if prev.exact_sig != step.exact_sig:
            break
        run.append(prev)
    if len(run) < needed or run[0].result_hash == step.result_hash:
        return []
    hashes = {p.result_hash for p in run}
    if len(hashes) != 2 or step.result_hash not in hashes:
        return []
    return [(p.index, (K.EXACT.value, 1.0)) for p in reversed(run)]


def _succeeded_before(state: SessionState, step: StepRecord, first_failure: int) -> list[tuple[int, tuple[str, float]]]:
    """The very same call (exact signature) succeeding before it first failed this way, with
    nothing written after it (it may be the write itself): what it did cannot be done again (an
    order cancelled, then "non-pending order cannot be cancelled" twice; a branch created, then
    "already exists" twice), so that success was the first of the repeats. After another write,
    the run that passed and then fails checks the edit (`state.last_write`). An earlier failure
    of another kind is not a success, and neither is a result still in progress (`pending`): a
    refund polled while "pending", then "failed" twice, did nothing the first times."""
    return [(prev.index, (K.EXACT.value, 1.0)) for prev in state.window
            if state.last_write <= prev.index < first_failure and not prev.is_error and not prev.pending
            and prev.exact_sig == step.exact_sig]


def repeated_result(state: SessionState, step: StepRecord, cfg: Config) -> Signal | None:
    """Varied attempts that keep producing the same error (or the same empty answer).

    Two errors are the same when they have the same class (permission, not found, ...) and share
    some content (the path, the host): `Thresholds.error_overlap`. Related attempts are calls to the same
    tool, or calls at least `related_threshold` similar.
    Only errors count: the same *successful* result from different calls is usually legitimate
    (batch edits of different files all answer "OK"; clicks on a page that did not change while
    the agent fills a form), and same-intent repeats are caught by `repeated_call` already.
    """
    if not step.is_error or step.error_class is None:
        return None
    # A specific reason (permission, not found, ...) shared by varied attempts needs only some
    # shared content; a generic failure ("exit code 1") must be the same failure. So must an error
    # that comes with a whole page or listing (more than Thresholds.fact_result words): there the content is
    # the news — a browser's "Timeout 500ms exceeded" over the new page each click opened — and
    # two pages of one site share their menus, not what was found. Such results whose first lines
    # differ (another URL: page 2, then page 3 of a list) are about different things altogether.
    th = cfg.thresholds
    long_result = page_error(step, th)
    generic = step.error_class in GENERIC_ERRORS or long_result
    overlap = cfg.result_threshold if generic else th.error_overlap
    hits = []
    progress = since_progress(state, step)
    if starts_at_a_reply(progress) and not uses_new_value(state, step):
        # the other side's replies move a failing attempt on only when it uses something new (the
        # next id the customer gave), not when it retries what already failed
        progress = since_progress(state, step, talk=False)
    for prev in progress:
        if prev.error_class != step.error_class or not related(step, prev, cfg):
            continue
        if prev.norm_sig == step.norm_sig and moved_after_edit(state, step, prev):
            continue  # the same call rerun after an edit, failing otherwise: progress
        if long_result and step.result_head and prev.result_head and step.result_head != prev.result_head:
            continue
        sim = result_match(step, prev, th=th)
        if sim < overlap and not generic:  # short specific errors may share only a path
            sim = max(content_similarity(step.result_sketch, step.result_size, prev.result_sketch, prev.result_size,
                                         th.tiny_result))
        if sim >= overlap:
            hits.append((prev.index, sim))
    if len(hits) < cfg.error_repeats:
        return None
    return Signal(K.SAME_RESULT.value, min(s for _, s in hits), tuple(i for i, _ in hits))


def cycle(state: SessionState, step: StepRecord, cfg: Config) -> Signal | None:
    """A-B-A-B or A-B-C-A-B-C: the last two full cycles match call for call, results unchanged.
    For a tool call, the agent's messages between the calls are left out."""
    if step.pending:
        return None  # sleep / check-status alternation: waiting (repeated_call counts the checks, patiently)
    # a tool call's cycle is judged on the tool calls: the talk between them is new every time and
    # would break any cycle a conversation agent runs (look up, try, ask, look up, try the same)
    recent = [s for s in state.window if not s.is_message] if not step.is_message else list(state.window)
    for period in cfg.cycle_periods:
        if len(recent) + 1 < 2 * period:
            continue
        seq = recent[len(recent) - 2 * period + 1:] + [step]
        if same_step(seq[-1], seq[-2], cfg):  # a plain repeat, not a cycle
            continue
        if any(s.wait >= 0 for s in seq) and any(s.pending for s in seq):
            continue  # wait / check-status alternation: waiting, counted patiently by repeated_call
        scores = []
        for k in range(period):
            if different_ids(seq[-1 - k], seq[-1 - k - period]):
                break  # the same calls over other records (look up A, cancel A, look up B, …): batch work
            m = same_step(seq[-1 - k], seq[-1 - k - period], cfg)
            if m is None:
                break
            scores.append(m[1])
        else:
            return Signal(K.CYCLE.value, min(scores), tuple(s.index for s in seq[:-1]))
    return None


def repeated_message(state: SessionState, step: StepRecord, cfg: Config) -> Signal | None:
    """Conversation loops: the agent's message (`Config.message_tools`, `LoopGuard.record_message`)
    asks for what its last `message_repeats` asking messages asked for — reworded or not — and no
    tool call brought anything new in between. The replies are not compared: a user who answers
    differently every time ("I don't have it", "can't you look it up?") is exactly the case where
    asking again is the loop. Only what a message asks for is compared (`features.message_asks`,
    embedded as the step's call vector): answers, refusals and the courtesy lines that close most
    messages are not asks, and a conversation that moves from one question to the next is work.
    All pairs of the group must be `message_threshold` similar. A message that only closes
    (thanks, goodbye) asks nothing and is judged apart: `_closing_again`.
    """
    if step.closing:
        return _closing_again(state, step, cfg)
    if not (step.is_message and step.asks) or step.call_vec is None:
        return None
    group = [prev for prev in state.window if prev.is_message and prev.asks and prev.index > state.last_work
             and prev.call_vec is not None][-cfg.message_repeats:]
    if len(group) < cfg.message_repeats:
        return None
    vecs = np.stack([p.call_vec for p in group] + [step.call_vec])
    sims = vecs @ vecs.T
    score = float(sims[np.triu_indices(len(vecs), 1)].min())
    # Asking for the same named thing ("reservation id") every time is the same ask even when the
    # sentences around it differ more than `message_threshold` allows; still loosely alike.
    same_object = bool(frozenset.intersection(step.ask_terms, *(p.ask_terms for p in group)))
    if score < cfg.message_threshold and not (same_object and score >= cfg.thresholds.same_ask_similarity):
        return None
    return Signal(K.CONVERSATION.value, score, tuple(p.index for p in group),
                  f"{len(group) + 1} messages asking for the same thing, no new tool result in between")


def _closing_again(state: SessionState, step: StepRecord, cfg: Config) -> Signal | None:
    """The conversation keeps failing to end: this message and the `message_repeats` steps before
    it only close it (thanks, "you're welcome", "feel free to reach out"; `features.is_closing`),
    with no tool call between. Two closings are a goodbye and a last word; the third is the loop."""
    last = list(itertools.islice(reversed(state.window), cfg.message_repeats))
    if len(last) < cfg.message_repeats or not all(p.closing for p in last):
        return None
    return Signal(K.CONVERSATION.value, 1.0, tuple(sorted(p.index for p in last)),
                  f"{len(last) + 1} closing messages in a row: the conversation is not ending")


def update_clusters(state: SessionState, step: StepRecord, cfg: Config) -> Signal | None:
    """Online (leader) clustering of call embeddings over the whole session. Mutates `state`.

    A cluster that keeps growing without producing new results means the agent keeps returning to
    the same kind of call, however far apart. Reading ten different files grows a cluster too, but
    each read brings a new result, so it never goes stale; a call made after something was
    written (`state.last_write`, `novelty.is_write`) is a check of that
    write, not staleness, even when its output looks like an earlier one; and neither is a call
    running a program file the cluster's calls never ran (`different_programs`). A call whose
    result stayed and then changed (the very same call: Pending, Pending, Running) moved on: its
    waits were a poll, not staleness, and the cluster's stale count starts again.
    """
    if step.call_vec is None:
        return None
    best_id, best_sim = -1, -1.0
    if state.clusters:
        ids = list(state.clusters)
        # np.array, not np.stack: the same matrix, without np.stack's per-array Python work (3x)
        sims = np.array([state.clusters[i].centroid for i in ids]) @ step.call_vec
        j = int(np.argmax(sims))
        best_id, best_sim = ids[j], float(sims[j])
    if best_sim >= cfg.cluster_threshold:
        cluster = state.clusters[best_id]
        state.clusters.move_to_end(best_id)
        centroid = cluster.centroid * cluster.members + step.call_vec
        cluster.centroid = (centroid / max(float(np.linalg.norm(centroid)), 1e-12)).astype(np.float32)
    else:
        best_id = state.next_cluster
        state.next_cluster += 1
        cluster = state.clusters[best_id] = Cluster(centroid=step.call_vec.copy())
        while len(state.clusters) > cfg.max_clusters:
            state.clusters.popitem(last=False)
    step.cluster = best_id
    short, tiny = cfg.thresholds.short_result, cfg.thresholds.tiny_result
    seen_result = any(h == step.result_hash or (min(n, step.result_size) >= short and content_similarity(
        sk, n, step.result_sketch, step.result_size, tiny)[0] >= cfg.result_threshold) for h, sk, n in cluster.results)
    # A short acknowledgement ("file updated") says nothing about progress unless the call itself
    # was made before: successive edits of one file are work, re-running `git status` is not.
    is_stale = seen_result and (step.result_size >= short or step.norm_sig in cluster.calls)
    if step.programs and not step.programs & set(cluster.programs):
        is_stale = False  # a program this kind of call never ran: a new experiment (`different_programs`)
    if is_stale:
        # the same page again, whose last visit led to a new page: a hub, walked (`novelty.led_on`)
        visits = [s.index for s in state.window if s.cluster == best_id and s.result_hash == step.result_hash]
        if visits and led_on(state, visits[-1]):
            is_stale = False
    if cluster.steps and state.last_write >= cluster.steps[-1]:
        # something was written since the cluster's last call, or that call was the write (`sed -i`
        # joins the cluster of `sed -n` views): running the test or reading the file again checks
        # it, however alike the output looks
        is_stale = False
    related = tuple(cluster.steps)
    cluster.members += 1
    cluster.steps.append(step.index)
    if step.norm_sig not in cluster.calls:
        cluster.calls.append(step.norm_sig)
    cluster.programs.extend(p for p in step.programs if p not in cluster.programs)
    if is_stale:
        cluster.stale += 1
    else:
        last_two = [s.result_hash for s in state.window if s.norm_sig == step.norm_sig][-2:]
        if not seen_result and len(last_two) == 2 and last_two[0] == last_two[1]:
            cluster.stale = 0
        cluster.results.append((step.result_hash, step.result_sketch, step.result_size))
    limit = max(cfg.cluster_stale_limit, poll_needed(state, step, cfg))
    if is_stale and cluster.stale >= limit:
        return Signal(K.CLUSTER.value, max(best_sim, 0.0), related,
                      f"{cluster.members} similar calls, {cluster.stale} without a new result")
    return None


# -- baselines: the well-known recipe, and peer agents' documented policies ------------------


def _last(state: SessionState, step: StepRecord, n: int) -> list[StepRecord] | None:
    if len(state.window) + 1 < n:
        return None
    return list(state.window)[len(state.window) - n + 1:] + [step]


def _all_same(values: Iterable[object]) -> bool:
    return len(set(values)) == 1


def exact_window(state: SessionState, step: StepRecord, cfg: Config) -> Signal | None:
    """Baseline `exact`: the last `exact_window` calls have identical signatures."""
    seq = _last(state, step, cfg.exact_window)
    if seq and _all_same(s.exact_sig for s in seq):
        return Signal(K.EXACT.value, 1.0, tuple(s.index for s in seq[:-1]))
    return None


def normalized_window(state: SessionState, step: StepRecord, cfg: Config) -> Signal | None:
    """Baseline `normalized`: the same on normalized signatures."""
    seq = _last(state, step, cfg.exact_window)
    if seq and _all_same(s.norm_sig for s in seq):
        return Signal(K.NORMALIZED.value, 1.0, tuple(s.index for s in seq[:-1]))
    return None


def tool_count(state: SessionState, step: StepRecord, cfg: Config) -> Signal | None:
    """Baseline `count`: one tool name called `count_limit` times in the session."""
    count = state.tool_counts[step.tool] + 1
    if count >= cfg.count_limit:
        related = tuple(s.index for s in state.window if s.tool == step.tool)
        return Signal(K.COUNT.value, float(count), related, f"{step.tool} called {count} times")
    return None


def openhands_stuck(state: SessionState, step: StepRecord, cfg: Config) -> Signal | None:
    """OpenHands-style: 4 identical actions+observations; 3 identical actions all erroring; or
    A/B/A/B/A/B over the last 6 action/observation pairs."""
    seq = _last(state, step, 4)
    if seq and _all_same(s.exact_sig for s in seq) and _all_same(s.result_hash for s in seq):
        return Signal(K.OPENHANDS.value, 1.0, tuple(s.index for s in seq[:-1]))
    seq = _last(state, step, 3)
    if seq and _all_same(s.exact_sig for s in seq) and all(s.is_error for s in seq):
        return Signal(K.OPENHANDS.value, 1.0, tuple(s.index for s in seq[:-1]))
    seq = _last(state, step, 6)
    if seq:
        pairs = [(s.exact_sig, s.result_hash) for s in seq]
        if _all_same(pairs[0::2]) and _all_same(pairs[1::2]) and pairs[0] != pairs[1]:
            return Signal(K.OPENHANDS.value, 1.0, tuple(s.index for s in seq[:-1]))
    return None


def gemini_cli_stuck(state: SessionState, step: StepRecord, cfg: Config) -> Signal | None:
    """Gemini-CLI-style: hash of tool + JSON args; the same call, or a cycle of 1–5 calls,
    repeated 5 times consecutively."""
    for length in range(1, 6):
        seq = _last(state, step, 5 * length)
        if seq is None:
            break
        sigs = [s.exact_sig for s in seq]
        if all(sigs[i] == sigs[i % length] for i in range(len(sigs))):
            return Signal(K.GEMINI_CLI.value, 1.0, tuple(s.index for s in seq[:-1]))
    return None


def roo_code_stuck(state: SessionState, step: StepRecord, cfg: Config) -> Signal | None:
    """Roo-Code-style: the 4th consecutive identical call (key-order-insensitive) is blocked."""
    seq = _last(state, step, 4)
    if seq and _all_same(s.exact_sig for s in seq):
        return Signal(K.ROO_CODE.value, 1.0, tuple(s.index for s in seq[:-1]))
    return None


def crewai_stuck(state: SessionState, step: StepRecord, cfg: Config) -> Signal | None:
    """CrewAI-style: a call identical (tool and args) to the immediately preceding one."""
    if state.window and state.window[-1].exact_sig == step.exact_sig:
        return Signal(K.CREWAI.value, 1.0, (state.window[-1].index,))
    return None


SEMANTIC: tuple[SignalFn, ...] = (repeated_call, repeated_result, cycle, repeated_message, update_clusters)
BASELINES: dict[str, tuple[SignalFn, ...]] = {
    "exact": (exact_window,),
    "normalized": (normalized_window,),
    "count": (tool_count,),
    "openhands": (openhands_stuck,),
    "gemini-cli": (gemini_cli_stuck,),
    "roo-code": (roo_code_stuck,),
    "crewai": (crewai_stuck,),
}


def signals_for(detector: str) -> tuple[SignalFn, ...]:
    return SEMANTIC if detector == "semantic" else BASELINES[detector]


def look_back(cfg: Config) -> int:
    """Window length the detector needs (Gemini-CLI-style looks at up to 25 calls)."""
    return {"semantic": cfg.window, "exact": cfg.exact_window, "normalized": cfg.exact_window, "count": 1,
            "openhands": 6, "gemini-cli": 25, "roo-code": 4, "crewai": 1}[cfg.detector]
