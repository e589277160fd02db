"""The peer baseline (agent-loop-guard, run through its own package) in `semloop bench` and
`benchmarks/trust.py`: its edit distance computed fast but the same, its verdicts in worker
processes and in a cache keyed by trace content, and the soft / hard trade-off curves."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from semloop.bench import peers, report, runner
from semloop.config import Config
from semloop.traces import Step, Trace

loop_guard = pytest.importorskip("loop_guard")
from loop_guard import similarity  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _random_pair(rng: random.Random) -> tuple[str, str]:
    alphabet = rng.choice(["ab", "abc", "abcdefgh", "aé漢 \n", "".join(chr(i) for i in range(32, 127))])
    s1 = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 70)))
    s2 = list(s1) if rng.random() < 0.5 else [rng.choice(alphabet) for _ in range(rng.randint(0, 70))]
    for _ in range(rng.randint(0, 4)):
        if s2:
            s2[rng.randrange(len(s2))] = rng.choice(alphabet)
        if rng.random() < 0.3:
            s2.insert(rng.randint(0, len(s2)), rng.choice(alphabet))
    return s1, "".join(s2)


def test_the_fast_edit_distance_is_the_package_s_own_value():
    """Seeded random pairs (repeats, edits, unicode, empty strings, one longer than 64 characters so
    that the bit vectors span machine words): every value equals `loop_guard`'s own table.
    Mutation: drop the `| 1` shifted into the horizontal delta (the distance of a search, not of
    two whole strings)."""
    rng = random.Random(20261204)
    pairs = [_random_pair(rng) for _ in range(1500)]
    pairs += [("", ""), ("", "abc"), ("kitten", "sitting"), ("x" * 130, "x" * 129 + "y"), ("abc", "abc" * 40)]
    for s1, s2 in pairs:
        assert peers.normalized_edit_distance(s1, s2) == similarity.normalized_edit_distance(s1, s2), (s1, s2)
    assert peers.levenshtein("kitten", "sitting") == 3 and peers.levenshtein("", "abc") == 3


def _step(tool, inp, out):
    return Step(tool, inp, out)


def _traces() -> list[Trace]:
    """Runs where the peer's edit distance decides: long near-identical arguments and outputs
    (under its 2,000-character cut), a loop of reworded edits, and a clean run of distinct edits."""
    rng = random.Random(7)
    body = "".join(rng.choice("abcdefghij (){}:;,\n") for _ in range(400))
    page = "".join(rng.choice("abcdefghijklmnop \n") for _ in range(900))
    loop = [_step("edit", {"path": "a.py", "text": body[:380] + str(k % 3)}, page + str(k % 2)) for k in range(7)]
    clean = [_step("edit", {"path": f"m{k}.py", "text": "".join(rng.choice("xyz ") for _ in range(300))},
                   f"wrote m{k}.py") for k in range(7)]
    mixed = [_step("search", {"q": f"order {k} status"}, page[k * 50:k * 50 + 800]) for k in range(8)]
    return [Trace("loop", tuple(loop), {"loop": True, "onset": 2, "kind": "paraphrase"}),
            Trace("clean", tuple(clean), {"loop": False, "onset": None, "kind": None}),
            Trace("mixed", tuple(mixed), {"loop": False, "onset": None, "kind": None})]


def _prepared(traces=None) -> list[runner.Prepared]:
    return runner.prepare([runner.Dataset("t", "t", traces or _traces())], Config(embedding="hashing"))


def test_the_peer_run_here_gives_the_package_s_own_verdicts_and_leaves_it_as_it_was():
    """Mutation: a swapped-in distance that differs (e.g. not normalized) changes the verdicts."""
    prepared = _prepared()
    own = peers._agent_loop_guard(package_edit_distance=True)
    fast = peers._agent_loop_guard()
    verdicts = [fast(p.trace.steps) for p in prepared]
    assert verdicts == [own(p.trace.steps) for p in prepared]
    assert verdicts[0][0] is not None and verdicts[1] == (None, None)  # the cases differ: the check can fail
    assert similarity.normalized_edit_distance.__module__ == "loop_guard.similarity"


def test_replay_all_in_workers_keeps_the_order_and_the_cache_answers_a_second_run(tmp_path, monkeypatch):
    prepared = _prepared()
    serial = peers.replay_all("agent-loop-guard", prepared, jobs=1)
    assert [o.id for o in serial] == ["loop", "clean", "mixed"]
    assert peers.replay_all("agent-loop-guard", prepared, jobs=2) == serial
    done: list[int] = []
    assert peers.replay_all("agent-loop-guard", prepared, jobs=2, cache_dir=tmp_path, on_done=done.append) == serial
    assert sum(done) == 3 and len((tmp_path / "agent-loop-guard.jsonl").read_text().splitlines()) == 3

    def fail():
        raise AssertionError("the peer ran though its verdict was cached")

    monkeypatch.setitem(peers.PEERS, "agent-loop-guard", fail)
    assert peers.replay_all("agent-loop-guard", prepared, jobs=1, cache_dir=tmp_path) == serial


def test_the_cache_key_follows_every_step_and_the_package_version(tmp_path):
    """A trace changed in one output is a new key (replayed); a line cut short is skipped."""
    steps = _traces()[0].steps
    key = peers.trace_key("agent-loop-guard", "0.1.1", steps)
    changed = (*steps[:-1], Step(steps[-1].tool, steps[-1].input, "something else"))
    assert key != peers.trace_key("agent-loop-guard", "0.1.1", changed)
    assert key != peers.trace_key("agent-loop-guard", "0.1.2", steps)
    assert key == peers.trace_key("agent-loop-guard", "0.1.1", tuple(steps))
    cache = peers.PeerCache(tmp_path, "agent-loop-guard")
    cache.add(key, (2, None))
    with cache.path.open("a") as f:
        f.write('{"key": "cut sh')
    assert peers.PeerCache(tmp_path, "agent-loop-guard").verdicts == {key: (2, None)}


def _write_group(path: Path, traces: list[Trace]) -> None:
    path.write_text("".join(json.dumps({"id": t.id, "steps": [{"tool": s.tool, "input": s.input, "output": s.output}
                                                              for s in t.steps], "label": t.label}) + "\n"
                            for t in traces))


def test_trust_py_runs_the_peer_in_workers_and_fills_its_cache(tmp_path):
    traces = _traces()
    dev, test = tmp_path / "g.dev.jsonl", tmp_path / "g.test.jsonl"
    _write_group(dev, traces[:2])
    _write_group(test, traces[1:])
    cache = tmp_path / "cache"
    out = tmp_path / "rows.json"
    cmd = [sys.executable, str(ROOT / "benchmarks/trust.py"), f"g={dev},{test}", "--peers", "--jobs", "2",
           "--peer-cache", str(cache), "--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    rows = {(r["group"], r["half"]): r for r in json.loads(out.read_text())}
    own = peers._agent_loop_guard(package_edit_distance=True)
    for half, part in (("dev", traces[:2]), ("test", traces[1:])):
        peer = rows[("g", half)]["agent-loop-guard"]
        flagged = {t.id for t in part if own(t.steps)[0] is not None}
        assert set(peer["soft_tp_ids"]) | set(peer["soft_fp_ids"]) == flagged
    assert len((cache / "agent-loop-guard.jsonl").read_text().splitlines()) == 3  # "clean" is in both halves
    assert "agent-loop-guard soft R / FPR" in proc.stdout


def test_the_trade_off_curves_are_the_sweep_s_soft_and_hard_points(tmp_path):
    """The sweep carries the hard block per threshold; tradeoff.png and the table come from it."""
    prepared = _prepared()
    embedder, _ = runner.load_backend("hashing")
    runner.embed_all(prepared, "hashing", embedder)
    cfg = Config(embedding="hashing")
    rows = runner.sweep_thresholds(prepared, cfg, thresholds=(0.7, 0.98), jobs=1)
    for row, t in zip(rows, (0.7, 0.98), strict=True):
        outs = [runner.replay(p, cfg.replace(call_threshold=t)) for p in prepared]
        assert row["stops_on_loops"] == sum(o.first_stop is not None for o in outs if o.loop)
        assert row["stop_fpr"] == sum(o.first_stop is not None for o in outs if not o.loop) / 2
    results = {"sweep": {"semantic-hashing": rows}, "hard_tradeoff": [],
               "overall": {"agent-loop-guard": {"fpr": 0.5, "recall": 1.0, "stops_on_negatives": 0, "negatives": 2,
                                                "stops_on_loops": 1, "loops": 1}}}
    series = report.tradeoff_points(results)
    assert [p[2] for p in series["hard semantic-hashing"]] == ["0.70", "0.98"]
    assert series["soft"] == [(0.5, 1.0, "agent-loop-guard")] and series["hard"] == [(0.0, 1.0, "agent-loop-guard")]
    pytest.importorskip("matplotlib")
    assert report.plot_tradeoff(results, tmp_path / "t.png").stat().st_size > 0
