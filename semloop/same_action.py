"""Is this the same action? Pairwise relations between two steps: how their calls match
(`call_match`), how their results match (`result_match`, `same_facts`, the short-result rules), and
the one decision the repeat and cycle signals build on, `same_step` (same action, same result).

Pure functions of two `StepRecord`s (and the `Config`; the bounds are `Config.thresholds`,
`semloop.config.Thresholds`); no session state. The pipeline:
`features` (call → `StepRecord`) → `same_action` → `novelty` → `signals` → `policy`.
"""

from __future__ import annotations

import numpy as np

from .config import THRESHOLDS, Config, Thresholds
from .features import content_similarity, entity_overlap, fact_overlap
from .state import StepRecord
from .verdict import SignalKind as K


def call_match(a: StepRecord, b: StepRecord) -> tuple[str, float]:
    """How two calls relate: ("exact"|"normalized", 1.0) or ("paraphrase", cosine)."""
    if a.exact_sig == b.exact_sig:
        return K.EXACT.value, 1.0
    if a.norm_sig == b.norm_sig:
        return K.NORMALIZED.value, 1.0
    if a.call_vec is None or b.call_vec is None:
        return K.PARAPHRASE.value, 0.0
    return K.PARAPHRASE.value, float(np.dot(a.call_vec, b.call_vec))


def result_match(a: StepRecord, b: StepRecord, containment: bool = False, th: Thresholds = THRESHOLDS) -> float:
    """Content similarity of two results, 0..1: 1.0 when equal after normalization; short results
    (see `Thresholds.short_result`) are either equal or different.

    `containment` also counts one result being a part of the other — evidence of the same action
    when the calls differ (`head -n` vs `cat`), but not for one identical call, where a shorter
    result (fewer failing tests) is news. Results with the same first line (same page title and
    URL, same table header) are the same when their words mostly agree (`Thresholds.same_head_jaccard`):
    re-rendered pages and OCR'd screenshots vary a lot in wording, never in their title.
    """
    if a.result_hash == b.result_hash:
        return 1.0
    if min(a.result_size, b.result_size) < th.short_result:
        return 1.0 if same_short_result(a, b) else 0.0
    jaccard, contained = content_similarity(a.result_sketch, a.result_size, b.result_sketch, b.result_size,
                                            th.tiny_result)
    if a.result_head and a.result_head == b.result_head and jaccard >= th.same_head_jaccard:
        return max(jaccard, 1.0 - (1.0 - jaccard) / 2)  # halfway to 1: same subject, noisy body
    return max(jaccard, contained) if containment else jaccard


def same_facts(a: StepRecord, b: StepRecord, th: Thresholds = THRESHOLDS) -> float:
    """Two results in different words stating the same facts (`pip show x` and `python -c "print(
    x.__version__)"` both say 2.1.4; `git log -1` and `git rev-parse HEAD` name one commit): the
    Jaccard overlap of their fact sets (`features.result_facts`, less what echoes the call), 0
    when either states none. Only for brief
    results (`Thresholds.fact_result` distinct words or fewer): a web page or a JSON record names many
    versions, ids and paths that other pages share."""
    if max(a.result_size, b.result_size) > th.fact_result or a.is_message or b.is_message:
        return 0.0  # (a message's result is the other side's reply: its facts are theirs)
    if a.result_head and a.result_head == b.result_head and min(a.result_size, b.result_size) < th.short_result:
        return 0.0  # one form (the same first line): its words decide, and a changed one is the news
    if len(a.facts & b.facts) < 2 and min(a.result_size, b.result_size) >= th.short_result:
        # one shared fact is the answer only in a short result ("2.1.4", a hash); two search pages
        # citing the same section number ("20.3") answer different questions
        return 0.0
    return fact_overlap(a.facts, b.facts)


def _short_result_besides_echo(a: StepRecord, b: StepRecord) -> list[str] | None:
    """`a`'s short result without the words echoing either call, when `b`'s is the same (else None)."""
    if not a.short_words or not b.short_words:
        return None
    echo = a.input_words | b.input_words
    rest_a = [w for w in a.short_words if w not in echo]
    return rest_a if rest_a and rest_a == [w for w in b.short_words if w not in echo] else None


def same_short_result(a: StepRecord, b: StepRecord) -> bool:
    """Two short results that are equal once the words echoing either call are left out:
    `{"city": "TYO", "temp": 36}` for city=TYO and `{"city": "Tokyo", "temp": 36}` for city=Tokyo."""
    return _short_result_besides_echo(a, b) is not None


def same_detailed_short_result(a: StepRecord, b: StepRecord, th: Thresholds = THRESHOLDS) -> bool:
    """`same_short_result` with at least `Thresholds.tiny_result` distinct words besides the echoes: a
    detailed answer (temperature, conditions, humidity, wind...), not a bare acknowledgement
    ("updated: true" says too little to tell two calls did the same thing)."""
    rest = _short_result_besides_echo(a, b)
    return rest is not None and len(set(rest)) >= th.tiny_result


def same_rich_short_result(a: StepRecord, b: StepRecord, th: Thresholds = THRESHOLDS) -> bool:
    """`same_detailed_short_result` for calls that do not differ in an id or a number: a detailed
    answer that two calls share word for word came from one query, however the arguments were
    spelled. Calls that differ in an id or a number are batch work, whatever they answer."""
    if any(c.isdigit() for w in a.input_words ^ b.input_words for c in w) or different_ids(a, b):
        return False  # the calls differ in an id or a number (ticket 56820, ticket 22602): batch work
    return same_detailed_short_result(a, b, th)


def different_ids(a: StepRecord, b: StepRecord) -> bool:
    """Calls whose identifier arguments name different things (`reservation_id` HXDUBJ, then
    AJVCTQ; `features.id_values`): batch work over entities, not one action again."""
    return bool(a.ids) and bool(b.ids) and a.ids != b.ids


def different_programs(a: StepRecord, b: StepRecord) -> bool:
    """Reworded calls that write or run different program files (`check_radd.py`, then
    `check_zero.py`) are two experiments, even when both print the same: agreeing outputs are a
    finding, not a repeat. (A script re-run under the same name is one program.)"""
    return bool(a.programs) and bool(b.programs) and not (a.programs & b.programs)


def different_edits(a: StepRecord, b: StepRecord, th: Thresholds = THRESHOLDS) -> bool:
    """Two successful edits of different text (other lines of one file, another value): two
    changes, however alike their answers read (Claude Code and Gemini CLI answer with the patch
    around the change). Unless both answer with the very same substantial content: SWE-agent
    shows the whole file after an edit, so a different edit that leaves the same file changed
    nothing. An empty `sed -i` answer says nothing either way. The same edit again, and failed
    edits, are judged as any call is."""
    return (a.edits and b.edits and a.exact_sig != b.exact_sig and not (a.is_error or b.is_error)
            and (a.result_hash != b.result_hash or min(a.result_size, b.result_size) < th.short_result))


def swapped_target(a: StepRecord, b: StepRecord) -> bool:
    """Calls alike but for one standalone word swapped for another (`runtests.py expressions`, then
    `runtests.py queries`): the same action on another target, as batch work is. Not a search (a
    reworded query: "release date", then "launch date"), and not a word inside a path or URL
    (`/archive/page`, `/m/page`: another address of one page) or a number (`features.plain_words`;
    a number that creeps is drift, judged on its own: the skeleton signature)."""
    if a.search or b.search:
        return False
    only_a, only_b = a.input_words - b.input_words, b.input_words - a.input_words
    return len(only_a) == 1 == len(only_b) and only_a <= a.plain_words and only_b <= b.plain_words


def related(a: StepRecord, b: StepRecord, cfg: Config) -> bool:
    """Same tool, or calls similar enough to be attempts at the same thing."""
    return a.tool == b.tool or call_match(a, b)[1] >= cfg.related_threshold


def same_step(a: StepRecord, b: StepRecord, cfg: Config) -> tuple[str, float] | None:
    """Same action with the same result (a stuck repeat), or None. Score = min of both sims.

    Two successful edits that write different text are two changes (`different_edits`: `MODE =
    "fast"` → "exact", then `UNIT = "cm"` → "mm" of one file, however alike the answers read).

    Identical (or normalized-identical) calls need the same result. Paraphrased calls (cosine >=
    `call_threshold`) need to act on the same entities (paths, ids, numbers) and to return the
    same content, and an answer that says more than "done" (two edits of one line that both
    answer with an empty output are work). Related calls that return the very same substantial
    result count too: `cat f`, `awk '{print}' f` and Read(f). (Not a short one: edits of one file
    all answer "updated".) (Merely *similar* results from loosely related calls do not: clicking
    through a form on an unchanged page is work, not a loop.)
    """
    th = cfg.thresholds
    if different_edits(a, b, th):
        return None
    kind, call_sim = call_match(a, b)
    if kind != K.PARAPHRASE:
        res_sim = result_match(a, b, th=th)
        return (kind, res_sim) if res_sim >= cfg.result_threshold else None
    if a.is_message or b.is_message:
        return None  # reworded messages are judged on what they ask for (`repeated_message`)
    if a.skeleton_sig == b.skeleton_sig:
        # only a number crept (depth, limit, timeout): the same substantial result is no news, and
        # neither is the same detailed short one ("Found 12 pages: /, /about, ..." at max_depth 2,
        # 3, 4). (Not a bare acknowledgement: edits `case 1` → `case 2` of one file all answer
        # "updated", and are work.)
        if min(a.result_size, b.result_size) >= th.short_result:
            res_sim = result_match(a, b, containment=True, th=th)
            return (kind, res_sim) if res_sim >= cfg.result_threshold else None
        if not (a.is_error or b.is_error) and same_detailed_short_result(a, b, th):
            return kind, 1.0
    if different_programs(a, b):
        return None  # two probe scripts: two experiments, whatever they print
    same_entities = entity_overlap(a.entities, b.entities) >= th.entity_overlap
    if a.result_hash == b.result_hash and related(a, b, cfg) and min(a.result_size, b.result_size) >= th.short_result:
        return kind, call_sim  # the very same substantial result from related calls
    if not (a.is_error or b.is_error) and related(a, b, cfg) and (facts := same_facts(a, b, th)) >= th.same_facts:
        return kind, facts  # reworded commands whose outputs differ in form, not in what they say
    if a.tool == b.tool and not (a.is_error or b.is_error) and same_rich_short_result(a, b, th):
        return kind, 1.0  # reworded arguments (Tokyo, TYO, "Tokyo, Japan"), the same detailed answer
    if not same_entities:
        return None  # the same tool over different entities: not a repeat
    if not (a.is_error or b.is_error) and a.acknowledged and b.acknowledged:
        # both answers say only "done" (an empty output, "OK", "The file … has been updated"):
        # they cannot tell that the calls did the same thing, and two different edits of one file
        # are work
        return None
    if call_sim < cfg.call_threshold:
        return None
    if swapped_target(a, b):
        # one word swapped (`runtests.py expressions`, then `runtests.py queries`): another target,
        # whose output may share most words and contain the other's; only the very same content
        # says it was the same one (city=Tokyo, then city=TYO)
        res_sim = result_match(a, b, th=th)
        return (kind, min(call_sim, res_sim)) if res_sim >= th.same_content else None
    res_sim = result_match(a, b, containment=True, th=th)
    return (kind, min(call_sim, res_sim)) if res_sim >= cfg.result_threshold else None
