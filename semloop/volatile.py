"""Volatile details learned from the stream: what changes at every repeat of one call is noise.

Fixed masks (`features.normalize_result`) know clocks, durations with a unit, uuids and values
named by a few keys. Many tools print other counters and ids: `durationMs=180`, a new
`session sess-8, pid 4312` for each relaunch, a `messageId` / `receipt` per send, a working
directory that flips. Rather than add a mask per tool, the guard compares the results of the very
same call (normalized signature) with each other:

- two results of one call differ in a few short places (`changed_places`): each place is named by
  the (whitespace-separated) tokens just before it;
- when the last `Thresholds.volatile_repeats` results of one call each differed from the one before at the
  very same places and nowhere else, those places change at every repeat: they are noise, and the
  results are one result (`learn`);
- content that stayed and then changes (`pending` → `running`) is a place that did not change
  before: news. So is a count stated against a whole (`ready 2/4`, `45%`, `3 of 7`), which
  measures progress however often it changes. One difference alone proves nothing either way: the
  first repeat that differs is news until the next one shows the same place changing again.

Only results of up to `features.KEYED_MASK_CHARS` normalized characters are tokenized
(`features.result_tokens`): status lines, tool receipts, short logs, where volatile details decide
"same result". A difference spanning more than `Thresholds.volatile_span` tokens, or more than half of the
result, is content, not a detail.
"""

from __future__ import annotations

import difflib
import zlib

from .config import THRESHOLDS, Thresholds
from .state import SessionState, StepRecord

# A count stated against a whole (`ready 2/4`, `45%`, `3 of 7`) measures progress: it is news however
# often it changes.
_OF = zlib.crc32(b"of") << 2


def changed_places(old: tuple[int, ...], new: tuple[int, ...], seen: frozenset[int] = frozenset(),
                   th: Thresholds = THRESHOLDS) -> frozenset[tuple[int, ...]] | None:
    """The places where two token lists (`features.result_tokens`) differ, each named by the
    `Thresholds.context_tokens` unchanged tokens before it; empty when equal; None when they differ in content: a long
    or large change, or a place whose values are words never seen before (`pending` → `running`:
    a status moved on). A volatile value has a digit (a counter, a duration, an id, a pid, a
    receipt) or flips to or from a value another repeat showed (`seen`: a working directory)."""
    if old == new:
        return frozenset()
    ops = [op for op in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes() if op[0] != "equal"]
    spans: list[list[int]] = []  # [i1, i2, j1, j2] merged
    for _, i1, i2, j1, j2 in ops:
        if spans and i1 - spans[-1][1] <= th.merge_gap and j1 - spans[-1][3] <= th.merge_gap:
            spans[-1][1], spans[-1][3] = i2, j2
        else:
            spans.append([i1, i2, j1, j2])
    if any(t & 2 for _, _, j1, j2 in spans for t in new[j1:j2]) or any(
            j2 < len(new) and new[j2] == _OF for _, _, _, j2 in spans):
        return None  # a count against a whole moved on (`2/4`, `45%`, `3 of 7`): progress
    for i1, i2, j1, j2 in spans:
        values = old[i1:i2] + new[j1:j2]
        flips = (j2 > j1 and set(new[j1:j2]) <= seen) or (i2 > i1 and set(old[i1:i2]) <= seen)
        if not (flips or any(t & 1 for t in values)):
            return None  # new words in place of old ones: content
    changed = sum(max(i2 - i1, j2 - j1) for i1, i2, j1, j2 in spans)
    if changed * 2 > max(len(old), len(new)) or any(
            max(i2 - i1, j2 - j1) > th.volatile_span for i1, i2, j1, j2 in spans):
        return None
    changed_at = {i for i1, i2, _, _ in spans for i in range(i1, i2)}

    def context(i1: int) -> tuple[int, ...]:  # the unchanged tokens just before a place
        before = [old[i] for i in range(i1 - 1, -1, -1) if i not in changed_at][:th.context_tokens]
        return tuple(reversed(before))

    return frozenset(context(i1) for i1, _, _, _ in spans)


def learn(state: SessionState, step: StepRecord, th: Thresholds = THRESHOLDS) -> bool:
    """Join `step`'s result to the earlier results of the very same call when they differ only in
    places that changed at every repeat (module doc). The joined steps take the first one's result
    hash and sketch, and the earlier ones lose their novelty (`state.last_novel` follows). Returns
    whether anything was joined."""
    if not step.result_tokens:
        return False
    chain = [s for s in state.window if s.norm_sig == step.norm_sig and s.result_tokens]
    if len(chain) < th.volatile_repeats:
        return False
    seq = chain + [step]

    def places(k: int) -> frozenset[tuple[int, ...]] | None:  # between seq[k - 1] and seq[k]
        seen = frozenset(t for m, s in enumerate(seq) if m not in (k - 1, k) for t in s.result_tokens)
        return changed_places(seq[k - 1].result_tokens, seq[k].result_tokens, seen, th)

    last = places(len(seq) - 1)
    if not last:
        return False  # the same result (nothing to learn), or a change in content
    run = 1  # consecutive differences, counted back from the newest, at exactly these places
    while run < len(seq) - 1 and places(len(seq) - 1 - run) == last:
        run += 1
    if run < th.volatile_repeats:
        return False
    joined = seq[len(seq) - run - 1:]
    first = joined[0]
    unnoveled = set()
    for s in joined[1:]:
        if s is not step and s.novel:
            s.novel = False
            unnoveled.add(s.index)
        s.result_hash, s.result_sketch = first.result_hash, first.result_sketch
    if state.last_novel in unnoveled:
        state.last_novel = max((s.index for s in state.window if s.novel), default=-1)
    return True
