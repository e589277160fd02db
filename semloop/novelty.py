"""Did this step bring new information? The progress rules: whether a step is news (`is_novel`),
a write (`is_write`) or work (`is_work`), which of its facts are background (`foreground_facts`),
where the latest progress was (`since_progress`, `starts_at_a_reply`, `uses_new_value`), whether
an earlier step led somewhere (`led_on`: a listing walked), and how many repeats a poll needs
(`poll_needed`).

Pure functions over the session state, which they read and do not change (`foreground_facts`
counts the facts it is given, and says so). The pipeline: `features` → `same_action` → `novelty`
→ `signals` → `policy`; `LoopGuard` stores what these functions decide (`state.last_novel`,
`state.last_write`, `state.last_work`).
"""

from __future__ import annotations

import itertools

from .config import THRESHOLDS, Config, Thresholds
from .features import ref_hash
from .same_action import result_match, same_facts
from .state import SessionState, StepRecord


def page_error(step: StepRecord, th: Thresholds = THRESHOLDS) -> bool:
    """An error that comes with a whole page or listing (more than `Thresholds.fact_result` distinct words): a
    browser's "Timeout 500ms exceeded" over the page the click did open. Its content is the news,
    not its error line (`repeated_result`; novelty in `novelty.is_novel`)."""
    return step.is_error and step.result_size > th.fact_result


def since_progress(state: SessionState, step: StepRecord, talk: bool = True) -> list[StepRecord]:
    """Window steps from the latest one that brought a new result on: a repeat counts as stuck
    only if nothing new happened since (an edit-then-test cycle whose failures shrink is progress).
    For a call that succeeds, a write counts as progress too (`state.last_write`: an edit answered
    by a bare acknowledgement or made through an editor, `novelty.is_write`): running the test
    again after an edit checks the edit, even when the output did not change. A call that fails
    keeps counting across writes: an edit that leaves the very same error in place is the loop.

    With `talk=False` the other side's replies (the results of messages) are not progress: they
    are new every time, but a call that uses nothing from them did not move on (`uses_new_value`).
    """
    novel = state.last_novel if talk else max(
        (s.index for s in state.window if s.novel and not s.is_message), default=-1)
    start = novel if step.is_error else max(novel, state.last_write)
    return [s for s in state.window if s.index >= start]


def starts_at_a_reply(progress: list[StepRecord]) -> bool:
    """Whether the latest progress was a message's reply: only then can leaving the talk out
    (`since_progress(talk=False)`) reach further back (never, in a run without messages)."""
    return bool(progress) and progress[0].is_message


def uses_new_value(state: SessionState, step: StepRecord) -> bool:
    """Whether the call acts on a value (an id, a name, a number) that no earlier call in the
    window used: the customer's new reservation id, the next gift card. Then what was said since
    may be what moved it on; a call that re-uses the values already tried was not moved on by it."""
    known = set().union(*(prev.entities for prev in state.window if not prev.is_message))
    return bool(step.entities - known)


def poll_needed(state: SessionState, step: StepRecord, cfg: Config) -> int:
    """Earlier matches a repeat needs: `min_repeats`, or for a result still in progress (`pending`)
    the polling patience — only with evidence that time passed since the same call was last made:
    another step between (a wait, other work), or a timestamp in the result that moved on
    (`StepRecord.clock`). Back-to-back identical answers are asking again, not waiting. A poll whose
    waits grow (30 s, 45 s, 60 s: a backoff) earns `backoff_poll_repeats`."""
    if not (step.pending or (step.wait >= 0 and any(s.pending for s in state.window))):
        return cfg.min_repeats  # (the waits of a poll are as patient as its checks)
    same = [s for s in state.window if s.norm_sig == step.norm_sig]
    if not same:
        return cfg.poll_repeats
    last = same[-1]
    between = [s for s in state.window if s.index > last.index]
    if not between and not (step.clock and last.clock and step.clock != last.clock):
        return cfg.min_repeats
    waits = [s.wait for s in state.window if s.index > same[0].index and s.wait > 0]
    if len(waits) >= 2 and all(a < b for a, b in itertools.pairwise(waits)):
        return max(cfg.poll_repeats, cfg.backoff_poll_repeats)
    return cfg.poll_repeats


_MAX_FACTS = 1024  # session facts counted at most (least recently stated dropped): a memory bound, not tuning


def foreground_facts(state: SessionState, facts: frozenset[str], th: Thresholds = THRESHOLDS) -> frozenset[str]:
    """`facts` less the session's background, counting them. A version or path that earlier brief
    results kept stating (`Thresholds.background_fact` of them) — the Python and pytest versions of
    every test-run header, the file of a warning every script prints — is the environment talking,
    not an answer: two different scripts both printing it did not find the same thing."""
    counts = state.fact_counts
    kept = frozenset(f for f in facts if counts.get(f, 0) < th.background_fact)
    for fact in facts:
        counts[fact] = counts.pop(fact, 0) + 1  # re-inserted: the least recently stated is dropped first
    while len(counts) > _MAX_FACTS:
        counts.popitem(last=False)
    return kept


def is_novel(step: StepRecord, state: SessionState, cfg: Config) -> bool:
    """Whether the step brought news: not empty, and neither the same content nor the same facts as
    a window step that succeeded. One result inside the other is the same content only when one is
    brief (`head -n` after `cat`): two whole pages of one site share their menus, which says "same
    site", not "nothing new".

    A brief error is never news. An error that comes with a whole page (`novelty.page_error`) is
    news when the page is. It is compared with every window step, errors included, and a first
    line no window step showed (another URL: order 199 after order 200) is a new page however alike
    the two pages' words are. A clean step is compared with clean steps only, so the first clean
    view of what came with an error is news (even when its page error was: the clean view is
    the first whose content is not in doubt)."""
    if step.result_size == 0:
        return False
    th = cfg.thresholds
    paged = page_error(step, th)
    if step.is_error and not paged:
        return False
    if paged and step.result_head and all(prev.result_head != step.result_head for prev in state.window):
        return True
    return all(
        result_match(step, prev, containment=min(step.result_size, prev.result_size) <= th.fact_result, th=th)
        < cfg.result_threshold
        and same_facts(step, prev, th) < th.same_facts for prev in state.window if paged or not prev.is_error)


def edited_since(state: SessionState, prev: StepRecord) -> bool:
    """Whether something was written (`is_write`, `state.last_write`) after `prev`: the step being
    judged is then a rerun after an edit."""
    return state.last_write > prev.index


def moved_after_edit(state: SessionState, step: StepRecord, prev: StepRecord) -> bool:
    """Whether a rerun after an edit moved on from `prev`, an earlier run of the same call: its
    output is not the very same (`result_hash`: equal once volatile details — timings, tmp paths,
    pids, addresses — are masked or learned). A different error, another failing test, fewer
    failures, another line is progress; so is any change at all, since the edit is what changed it.
    Without an edit between, how alike the two outputs are is the signals' question."""
    return edited_since(state, prev) and prev.result_hash != step.result_hash


def unchanged_after_edit(state: SessionState, step: StepRecord, prev: StepRecord, th: Thresholds = THRESHOLDS) -> bool:
    """An earlier run of the same call (`prev`) that this rerun repeats although something was
    written since: the very same output (not `moved_after_edit`), failing or not the same way. The
    edit brought no new information to this call: edit → rerun → same output, round after round,
    is the loop however the edits differ. Not a check that comes out clean: a run that passes
    (`StepRecord.passed`: the tests, rerun after each change) or one whose output says nothing of
    its own (`says_its_own`: a type check's empty output, `git status` naming the file being
    refactored). Rerun after every edit, those are verification: the work is the edits."""
    return (edited_since(state, prev) and prev.is_error == step.is_error and prev.result_hash == step.result_hash
            and not step.passed and says_its_own(state, step, prev, th))


def says_its_own(state: SessionState, step: StepRecord, prev: StepRecord, th: Thresholds = THRESHOLDS) -> bool:
    """Whether an output says something besides what the agent itself wrote since `prev`: at least
    `Thresholds.tiny_result` words, or a shorter one whose words are mostly not those of the call
    or of the calls since (`total is 7, expected 42` after edits of settings.py; not ` M
    src/app.py` after edits of src/app.py, nor an empty output)."""
    if step.result_size >= th.tiny_result:
        return True
    words = set(step.short_words)
    echoes = step.input_words.union(*(s.input_words for s in state.window if s.index > prev.index))
    return 2 * len(words - echoes) > len(words)


def is_write(step: StepRecord, state: SessionState) -> bool:
    """A new call that succeeded with a bare acknowledgement (`StepRecord.acknowledged`) or through
    an editor (`StepRecord.edits`, whose result shows the edited text): an edit, a file written.
    What runs or reads after it checks it (`novelty.since_progress`, `signals.update_clusters`).
    A call that says it edits (`StepRecord.edits`) is a write whatever it answers: `sed -i` answers
    nothing, Claude Code's Edit a snippet of the file. Any other empty result is not (a `think`
    note answers nothing too). Not the same call again (the same edit twice is no news)."""
    return (not step.is_error and not step.is_message
            and (step.edits or step.result_size > 0 and step.acknowledged) and new_call(step, state))


def is_work(step: StepRecord, state: SessionState) -> bool:
    """A tool call that did something: not an error, with some output, and either a new call or a
    new result. (A successful write whose result looks like an earlier read is work; a `think`
    step, with no output, is not.) A message is work only when its reply answered with a new
    identifier (`features.reply_answers`). Work ends a conversation loop; talk does not."""
    if step.is_message:
        return step.answered
    if step.is_error or step.result_size == 0:
        return False
    return step.novel or new_call(step, state)


def new_call(step: StepRecord, state: SessionState) -> bool:
    """No window step made this call (normalized signature)."""
    return all(prev.norm_sig != step.norm_sig for prev in state.window)


def led_on(state: SessionState, index: int) -> bool:
    """Whether window step `index` led somewhere: the call right after it acted on a value its
    result showed and no earlier call had used (a link followed from a listing page: order 197,
    then, back on the list, order 196), and that call brought news. Returning to such a hub page
    between new pages is how a listing is walked, not a loop; returning to a page whose content
    nothing followed up (a cart checked between product pages, unchanged) is."""
    by_index = {s.index: s for s in state.window}
    prev, nxt = by_index.get(index), by_index.get(index + 1)
    if prev is None or nxt is None or nxt.is_message or not nxt.novel or not prev.result_refs:
        return False
    known = set().union(*(s.entities for s in state.window if s.index < nxt.index and not s.is_message))
    return any(ref_hash(e) in prev.result_refs for e in nxt.entities - known)
