"""The per-step fast path, the batch scan and the memory bound.

- The fast feature functions are replayed against the straightforward versions they replaced
  (kept below verbatim as `Reference`) on real + synthetic traces and on adversarial text.
- `semloop scan`'s batch path (one embedding batch per chunk, worker processes) gives the very
  verdicts of the step-by-step path (`scan_trace`), on the same traces.
- A long session's state stays bounded (sizes, not wall time: speed is measured in `semloop bench`).
"""

from __future__ import annotations

import importlib.util
import json
import pickle
import re
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import semloop
from semloop import features
from semloop.config import THRESHOLDS, Config
from semloop.guard import LoopGuard
from semloop.scan import iter_scan, scan_chunk, scan_trace
from semloop.traces import Trace, load_traces, parse_trace

ROOT = Path(__file__).resolve().parent.parent


# -- the feature functions before the fast path (semloop 0.1.0, commit 118a63d), verbatim, plus the
# keyed masking that detection II added (written plainly: no pre-checks) ----

class Reference:
    WS = re.compile(r"\s+")

    @staticmethod
    def normalize_text(text):
        text = Reference.WS.sub(" ", text).strip().casefold().translate(features._QUOTES)
        text = features._DOT_SLASH.sub("", text)
        return features._TRAILING_SLASH.sub("", text)

    @staticmethod
    def normalize_value(value):
        if isinstance(value, str):
            return Reference.normalize_text(value)
        if isinstance(value, dict):
            return {Reference.normalize_text(str(k)): Reference.normalize_value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [Reference.normalize_value(v) for v in value]
        return value

    @staticmethod
    def signatures(tool, tool_input):
        exact = features.digest(features.canonical_json([tool, tool_input]))
        norm = features.digest(features.canonical_json([Reference.normalize_text(tool),
                                                        Reference.normalize_value(features.action(tool_input))]))
        values = []
        features._leaves(features.action(tool_input), values)
        return exact, norm, values

    @staticmethod
    def normalize_result(text):
        if len(text) > features.SKETCH_CHARS:
            text = features.excerpt(text, features.SKETCH_CHARS) + " #" + features.digest(text)
        if "\t" in text:
            text = features._LINE_NUMBER.sub("", text)
        text = features._VOLATILE_CANDIDATE.sub(lambda m: features._VOLATILE.sub("#", m.group()),
                                                Reference.WS.sub(" ", text).strip().casefold())
        return Reference.mask_keyed(text) if len(text) <= features.KEYED_MASK_CHARS else text

    @staticmethod
    def mask_keyed(text):
        # added with the volatile-detail masking (detection II): every pattern, no cheap pre-checks
        text = features._VOLATILE_KEYED.sub(lambda m: f"{m.group(1)} #", text)
        text = features._TEMP_NAME.sub("#", text)
        text = features._AGO.sub("#", text)
        return features._SPINNER.sub("#", text)

    @staticmethod
    def error_class(text, is_error=False):
        head = (text[:600] if is_error else text.lstrip()[:200].split("\n", 1)[0]).casefold()
        if features._ANY_ERROR.search(head):
            return next(name for name, pattern in features._ERROR_CLASSES if pattern.search(head))
        if not is_error and len(text) <= 300 and features._EMPTY.search(text.strip().casefold()):
            return "empty"
        return "other" if is_error else None

    @staticmethod
    def result_sketch(normalized_result):
        words = set(features._TOKEN.findall(normalized_result))
        if not words:
            return (), 0
        ids = np.fromiter((zlib.crc32(w.encode("utf-8", errors="replace")) for w in words), dtype=np.uint64,
                          count=len(words))
        mixed = np.sort(((ids ^ (ids >> np.uint64(15))) * np.uint64(0xBF58476D1CE4E5B9)) >> np.uint64(32))
        distinct = mixed[np.concatenate(([True], mixed[1:] != mixed[:-1]))]
        return tuple(distinct[:features.SKETCH_SIZE].tolist()), int(distinct.size)

    @staticmethod
    def content_similarity(a, size_a, b, size_b):
        if size_a == 0 or size_b == 0:
            same = 1.0 if size_a == size_b else 0.0
            return same, same
        set_a, set_b = set(a), set(b)
        union_sketch = sorted(set_a | set_b)[:features.SKETCH_SIZE]
        both = sum(1 for h in union_sketch if h in set_a and h in set_b)
        jaccard = both / len(union_sketch)
        if min(size_a, size_b) < THRESHOLDS.tiny_result:
            return jaccard, jaccard
        intersection = jaccard * (size_a + size_b) / (1.0 + jaccard)
        return jaccard, min(1.0, intersection / min(size_a, size_b))


def signatures(tool, tool_input):
    """`features.call_keys` without the skeleton: what `Reference.signatures` computes."""
    exact, norm, _, values = features.call_keys(tool, tool_input)
    return exact, norm, values


def _generator():
    spec = importlib.util.spec_from_file_location("semloop_bench_generate_scale", ROOT / "benchmarks" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def corpus() -> list[Trace]:
    """Real traces (Who&When), the bundled examples and a synthetic split (outputs up to ~90 KB)."""
    traces = (load_traces(ROOT / "benchmarks" / "data" / "real_dev.jsonl")
              + load_traces(ROOT / "semloop" / "examples.jsonl"))
    gen = _generator()
    traces += [parse_trace(t) for t in gen.generate_split(1, "dev", 50)]
    return traces


def test_fast_features_equal_the_reference_on_real_and_synthetic_traces(corpus):
    steps = [s for t in corpus for s in t.steps]
    assert len(steps) > 1000 and max(len(features.render_value(s.output)) for s in steps) > features.SKETCH_CHARS
    sketches = []
    for s in steps:
        text = features.render_value(s.output)
        result = features.normalize_result(text)
        assert result == Reference.normalize_result(text)
        assert features.error_class(text, s.is_error) == Reference.error_class(text, s.is_error)
        assert features.error_class(text, True) == Reference.error_class(text, True)
        sketch = features.result_sketch(result)
        assert sketch == Reference.result_sketch(result)
        assert signatures(s.tool, s.input) == Reference.signatures(s.tool, s.input)
        sketches.append(sketch)
    for (a, na), (b, nb) in zip(sketches, sketches[1:] + sketches[:1], strict=True):
        assert features.content_similarity(a, na, b, nb) == Reference.content_similarity(a, na, b, nb)
        assert features.content_similarity(a, na, b, nb) == Reference.content_similarity(a, na, b, nb)  # memo hit


# Text built from the pieces the patterns look for, so that near-misses are common.
_PIECES = ["permission denied", "403", "not found", "error:", "Error", "exit code 1", "0 rows", "(0 rows)", "[]",
           "null", "no results found", "found 0 ", "timeout", "ECONNREFUSED", "syntax error", "traceback",
           "failed", "12:30:45", "2024-01-02T03:04:05Z", "250ms", "3 s", "0xdeadbeef1", "v2", "42",
           "deadbeef-1234-5678-9abc-def012345678", "\t", "\n", "  ", " ", "\u00a0", "\u2003", "\x1c", "ß", "İ",
           "./a", "dir/", "'q'", "`x`", "a.py", "é", "\ud800", "x" * 40]
_texts = st.lists(st.sampled_from(_PIECES) | st.text(max_size=8), max_size=30).map("".join)


@settings(max_examples=400, deadline=None)
@given(_texts, st.booleans())
def test_fast_features_equal_the_reference_on_adversarial_text(text, is_error):
    result = features.normalize_result(text)
    assert result == Reference.normalize_result(text)
    assert features.normalize_text(text) == Reference.normalize_text(text)
    assert features.error_class(text, is_error) == Reference.error_class(text, is_error)
    assert features.result_sketch(result) == Reference.result_sketch(result)
    call = {"command": text, "description": "why", "n": [1, 2.5, None, {"k": text}]}
    assert signatures("Bash", call) == Reference.signatures("Bash", call)
    thought = {"thought": text}  # commentary alone is the input (a `think` tool): it is kept
    assert signatures("think", thought) == Reference.signatures("think", thought)
    for tool, value in (("Bash", call), ("think", thought)):  # the skeleton from the same normalization
        assert features.call_keys(tool, value)[2] == features.skeleton_signature(tool, value)


def test_every_error_pattern_match_contains_an_error_word():
    """`_ERROR_WORDS` is a necessary condition for `_ANY_ERROR`: checked on each alternative's
    shortest spellings (the words list must grow with the patterns)."""
    samples = ["permission denied", "not permitted", "access denied", "forbidden", "eacces", "403", "unauthorized",
               "unauthorised", "authentication failed", "invalid api key", "401", "command not found",
               "not recognized as an internal", "no module named", "modulenotfounderror", "cannot find module",
               "importerror", "no such file", "not found", "does not exist", "cannot access", "enoent", "404",
               "timed out", "timeout", "not clickable at point", "would receive the click", "intercepts pointer events",
               "click intercepted", "connection refused", "could not resolve", "unreachable", "econnrefused",
               "connection reset", "failed to connect", "could not connect", "couldn't connect", "connectionerror",
               "rate limit", "too many requests", "429", "syntaxerror", "syntax error", "unexpected token",
               "parse error", "no space left", "enospc", "disk full", "disk is full", "quota exceeded", "errno 28",
               "out of memory", "cannot allocate memory", "memoryerror", "oomkilled", "0 rows", "(0 rows)", "[]",
               "{}", "null", "none", "no results", "no matches found", "no records", "no rows", "no files",
               "no items", "no entries", "found 0 ", "0 results", "0 matches", "0 hits", "exit code 1",
               "exitcode: 2", "exit status 3", "execution failed", "error", "fatal", "err!x", "npm err!",
               "x error:", "traceback", "an exception here", "it failed"]
    for sample in samples:
        assert features._ANY_ERROR.search(sample), sample  # the list covers every alternative
        assert any(word in sample for word in features._ERROR_WORDS), sample
    for name, pattern in features._ERROR_CLASSES:  # no alternative was added without a sample above
        alternatives = pattern.pattern.count("|") + 1
        assert sum(1 for s in samples if pattern.search(s)) >= min(alternatives, 3), name


def test_every_zero_count_of_failures_contains_a_hint():
    """`_NO_FAILURE_HINTS` is a necessary condition for `_NO_FAILURES` (`features.reports_success`
    skips the pattern when no hint occurs): each alternative's spellings."""
    samples = [f"{n} {word}" for n in ("0", "no") for word in ("failed", "failure", "failures", "error", "errors")]
    samples += [f"{word}: 0" for word in ("failures", "errors", "failed")]
    for sample in samples:
        assert features._NO_FAILURES.search(sample), sample
        assert any(hint in sample for hint in features._NO_FAILURE_HINTS), sample
    # the samples spell out every alternative of this pattern: a changed pattern needs new ones
    sampled = r"\b(?:0|no) (?:failed|failures?|errors?)\b|\b(?:failures|errors|failed): 0\b"
    assert features._NO_FAILURES.pattern == sampled


# -- batch scan = step-by-step scan ----------------------------------------------------------

def _dicts(results):
    return [r.to_dict() for r in results]


@pytest.mark.parametrize("embedding", ["static", "hashing"])
def test_batch_scan_gives_the_step_by_step_verdicts(corpus, embedding):
    config = Config(embedding=embedding)
    traces = corpus[:110]
    step_by_step = _dicts(scan_trace(t, config) for t in traces)
    assert sum(bool(r["events"]) for r in step_by_step) >= 10  # the comparison covers real flags
    assert _dicts(iter_scan(traces, config, batch_steps=500)) == step_by_step
    assert _dicts(scan_chunk(traces, config)) == step_by_step


def test_batch_scan_with_worker_processes_keeps_order_and_verdicts(corpus):
    traces = corpus[:60]
    config = Config(embedding="hashing")
    expected = _dicts(scan_trace(t, config) for t in traces)
    assert _dicts(iter_scan(traces, config, jobs=2, batch_steps=100)) == expected


def test_semloop_scan_is_a_function_over_traces_and_over_column_batches(corpus):
    traces = corpus[:12]
    lines = [json.dumps({"id": t.id, "steps": [{"tool": s.tool, "input": s.input, "output": s.output,
                                                "is_error": s.is_error} for s in t.steps]}) for t in traces]
    expected = _dicts(scan_trace(t) for t in traces)
    assert _dicts(semloop.scan(traces)) == expected
    assert _dicts(semloop.scan(lines)) == expected
    batch = semloop.scan({"text": np.array(lines + ["{not json"], dtype=object)})
    assert [json.loads(r) for r in batch["result"][:-1]] == expected
    assert batch["id"][:-1] == [t.id for t in traces] and batch["flagged"][:-1] == [bool(r["events"]) for r in expected]
    assert batch["result"][-1] is None and "invalid JSON" in batch["error"][-1]
    with pytest.raises(ValueError, match="no trace column"):
        semloop.scan({"other": ["x"]})


def test_import_semloop_stays_light():
    code = ("import sys, semloop; "
            "assert callable(semloop.scan.__class__.__call__) if 'semloop.scan' in sys.modules else True; "
            "print('numpy' in sys.modules, 'ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_cli_scan_batch_jobs_and_step_paths_print_the_same(tmp_path, semloop_cmd, corpus):
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(json.dumps({"id": t.id, "steps": [{"tool": s.tool, "input": s.input, "output": s.output,
                                                                  "is_error": s.is_error} for s in t.steps]})
                              for t in corpus[:40]) + "\n")
    outs = [subprocess.run(semloop_cmd + ["scan", str(path), "--json", "--embedding", "hashing", *extra],
                           capture_output=True, text=True, timeout=300)
            for extra in ([], ["--no-batch"], ["--jobs", "2"])]
    assert all(p.returncode == 0 for p in outs), [p.stderr for p in outs]
    assert outs[0].stdout == outs[1].stdout == outs[2].stdout and outs[0].stdout.count("\n") == 40
    bad = subprocess.run(semloop_cmd + ["scan", str(path), "--jobs", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--jobs" in bad.stderr


# -- memory: a long session's state is bounded ------------------------------------------------

def test_long_session_state_and_caches_stay_bounded():
    """Distinct calls and results for many steps: the window, the clusters, the flagged map and the
    process-wide memos stop growing; the pickled state (what the hook stores) stays the same size."""
    guard = LoopGuard(embedding="hashing", max_clusters=16)
    sizes = []
    for i in range(1200):
        guard.record("bash", {"command": f"cat /data/part_{i}.csv"}, f"row {i}: value {i * 7} at 12:{i % 60:02d}:00")
        guard.record("bash", {"command": "ls /data"}, "nothing new")  # a loop, flagged again and again
        if i in (600, 1199):
            sizes.append(len(pickle.dumps(guard.state)))
    state = guard.state
    assert len(state.window) == guard.config.window
    assert len(state.clusters) <= 16 and state.next_cluster > 16
    assert len(state.flagged_sigs) <= 256
    assert abs(sizes[1] - sizes[0]) < 0.05 * sizes[0], sizes
    assert len(features._SIMILARITY) <= 8192 and len(features._MASKED) <= 4096
    assert len(guard.embedder._cache) <= guard.embedder.max_entries
