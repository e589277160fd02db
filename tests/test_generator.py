"""Tests for the synthetic trajectory generator (benchmarks/generate.py)."""
from __future__ import annotations

import collections
import importlib.util
import itertools
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
GEN_PATH = ROOT / "benchmarks" / "generate.py"


def _load():
    spec = importlib.util.spec_from_file_location("semloop_bench_generate", GEN_PATH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


gen = _load()

N = 120  # per split in most tests: enough for every kind, fast


@pytest.fixture(scope="module")
def splits():
    return {s: gen.generate_split(1, s, N) for s in gen.SPLITS}


@pytest.fixture(scope="module")
def full_dev():
    return gen.generate_split(1, "dev", gen.DEFAULT_N)


def _sig(s):
    inp = s["input"]
    return s["tool"] + "\x00" + (json.dumps(inp, sort_keys=True) if isinstance(inp, dict) else str(inp))


def _out(s):
    o = s["output"]
    return o if isinstance(o, str) else json.dumps(o, sort_keys=True)


def _all(splits):
    return [t for s in gen.SPLITS for t in splits[s]]


# ---------------------------------------------------------------- determinism
def test_same_seed_identical_bytes():
    a = gen.dumps_split(gen.generate_split(7, "dev", 40))
    b = gen.dumps_split(gen.generate_split(7, "dev", 40))
    assert a == b


def test_seed_and_split_change_output():
    a = gen.dumps_split(gen.generate_split(1, "dev", 30))
    assert a != gen.dumps_split(gen.generate_split(2, "dev", 30))
    assert a != gen.dumps_split(gen.generate_split(1, "test", 30))


def test_cli_deterministic_across_hash_seeds(tmp_path):
    outs = []
    for hs in ("0", "12345"):
        d = tmp_path / hs
        env = dict(os.environ, PYTHONHASHSEED=hs)
        subprocess.run([sys.executable, str(GEN_PATH), "--seed", "3", "--out", str(d), "-n", "25"],
                       check=True, env=env, capture_output=True)
        outs.append(((d / "synth_dev.jsonl").read_bytes(), (d / "synth_test.jsonl").read_bytes()))
    assert outs[0] == outs[1]
    assert outs[0][0] != outs[0][1]
    assert len(outs[0][0].splitlines()) == 25


def test_generator_uses_no_global_random_or_clock():
    src = "".join(p.read_text() for p in [GEN_PATH, *sorted((GEN_PATH.parent / "synth").glob("*.py"))])
    for bad in ("random.random(", "random.choice(", "random.randint(", "random.seed(", "random.shuffle(",
                "time.time(", "datetime.now(", "import time\n", "uuid.uuid4("):
        assert bad not in src, bad


# ---------------------------------------------------------------- coverage
@pytest.mark.parametrize("split", gen.SPLITS)
def test_every_kind_and_negative_kind_appears(splits, split):
    tr = splits[split]
    kinds = {t["label"]["kind"] for t in tr if t["label"]["loop"]}
    negs = {t["meta"]["negative_kind"] for t in tr if not t["label"]["loop"]}
    assert kinds == set(gen.LOOP_KINDS)
    assert negs == set(gen.NEG_KINDS)


def test_full_split_composition(full_dev):
    assert len(full_dev) == gen.DEFAULT_N
    frac = sum(t["label"]["loop"] for t in full_dev) / len(full_dev)
    assert 0.40 <= frac <= 0.50
    negs = collections.Counter(t["meta"]["negative_kind"] for t in full_dev if not t["label"]["loop"])
    hard = sum(v for k, v in negs.items() if k != "normal")
    assert hard > 0.75 * sum(negs.values())
    styles = {t["source"] for t in full_dev}
    for st in ("shell", "claude_code", "web_search", "sql", "http", "browser", "openai_functions", "python"):
        assert f"synthetic:{st}" in styles
    # outputs span short acks to multi-KB payloads
    sizes = [len(_out(s)) for t in full_dev for s in t["steps"]]
    assert min(sizes) < 60 and max(sizes) > 4000
    assert sum(x >= 2048 for x in sizes) > 0.05 * len(sizes)
    # some dict outputs (Claude Code Bash) and some noisy repeats exist
    assert any(isinstance(s["output"], dict) for t in full_dev for s in t["steps"])
    assert any(t["meta"].get("volatile_noise") for t in full_dev if t["label"]["loop"])


def test_test_split_uses_held_out_vocabulary(full_dev, splits):
    dev = gen.dumps_split(full_dev)
    test = gen.dumps_split(splits["test"])
    held = [x for i, x in enumerate(gen.PROJECT_NAMES) if i % 4 == 3]
    assert not any(f'/{h}/' in dev for h in held)
    assert any(f'/{h}/' in test for h in held)


# ---------------------------------------------------------------- schema & labels
def test_schema(splits):
    ids = set()
    for t in _all(splits):
        assert set(t) == {"id", "source", "steps", "label", "meta"}
        assert t["id"] not in ids
        ids.add(t["id"])
        assert t["source"].startswith("synthetic:")
        assert isinstance(t["steps"], list) and len(t["steps"]) >= 2
        for s in t["steps"]:
            assert set(s) == {"tool", "input", "output", "is_error"}
            assert isinstance(s["tool"], str) and s["tool"]
            assert isinstance(s["input"], (dict, str))
            assert isinstance(s["is_error"], bool)
            if isinstance(s["output"], dict):
                assert {"stdout", "stderr", "interrupted"} <= set(s["output"])
            else:
                assert isinstance(s["output"], str)
        blob = json.dumps(t["steps"])
        for tok in ("@@DUR@@", "@@TS@@", "@@RID@@", "@@MS@@"):  # no unfilled noise placeholders
            assert tok not in blob
        json.loads(json.dumps(t))  # round-trips


def test_label_invariants(splits):
    for t in _all(splits):
        lab, meta = t["label"], t["meta"]
        assert set(lab) == {"loop", "onset", "kind"}
        assert "scenario" in meta and "negative_kind" in meta
        if lab["loop"]:
            assert lab["kind"] in gen.LOOP_KINDS
            assert isinstance(lab["onset"], int) and 0 < lab["onset"] < len(t["steps"])
            assert meta["negative_kind"] is None
            a, b = meta["loop_span"]
            assert a < lab["onset"] < b <= len(t["steps"])
        else:
            assert lab["onset"] is None and lab["kind"] is None
            assert meta["negative_kind"] in gen.NEG_KINDS


def test_loop_structure_matches_kind(splits):
    for t in _all(splits):
        lab = t["label"]
        if not lab["loop"]:
            continue
        st = t["steps"]
        a, b = t["meta"]["loop_span"]
        on, span = lab["onset"], st[a:b]
        sigs = [_sig(s) for s in span]
        k = lab["kind"]
        if k == "exact":
            assert len(set(sigs)) == 1 and len(sigs) >= 3 and on == a + 1
        elif k == "normalized":
            assert len(span) >= 3 and len(set(sigs)) >= 2 and on == a + 1
        elif k in ("paraphrase", "same_result"):
            assert len(span) >= 3 and len(set(sigs)) == len(sigs) and on == a + 1
        elif k == "alternation":
            m = on - a
            assert m in (2, 3) and len(sigs) >= 2 * m and len(sigs) % m == 0
            assert len(set(sigs[:m])) == m
            assert all(sigs[i] == sigs[i % m] for i in range(len(sigs)))
        elif k == "count":
            x = _sig(st[on])
            occ = [i for i, s in enumerate(st) if _sig(s) == x]
            assert len(occ) >= 4 and occ[1] == on and occ[0] == a
            assert all(j - i > 1 for i, j in itertools.pairwise(occ))  # never consecutive
            assert len({_out(st[i]) for i in occ}) == 1 or t["meta"]["volatile_noise"]
        if k != "count":  # productive prefix never already contains a loop call
            pre = {_sig(s) for s in st[:a]}
            assert not pre & set(sigs)


def test_negatives_have_no_accidental_exact_loops(splits):
    for t in _all(splits):
        if t["label"]["loop"]:
            continue
        c = collections.Counter((_sig(s), _out(s)) for s in t["steps"])
        assert max(c.values()) <= 2, (t["id"], t["meta"]["scenario"])
        if t["meta"]["negative_kind"] == "near_miss":
            assert max(collections.Counter(_sig(s) for s in t["steps"]).values()) == 2


def test_hard_negative_repetition_has_changing_content(splits):
    for t in _all(splits):
        nk = t["meta"]["negative_kind"]
        if nk in ("polling", "test_fix"):
            a, b = t["meta"]["core_span"]
            by = collections.defaultdict(list)
            for s in t["steps"][a:b]:
                inp = {k: v for k, v in s["input"].items() if k != "description"}  # Claude Code Bash descriptions vary
                by[s["tool"] + json.dumps(inp, sort_keys=True)].append(_out(s))
            rep = [v for v in by.values() if len(v) >= 3]
            assert rep, t["id"]
            for outs in rep:  # state changes at least every 2 observations
                assert all(len({outs[i], outs[i + 1], outs[i + 2]}) >= 2 for i in range(len(outs) - 2))
        if nk in ("pagination", "chunked_reading", "many_files", "different_entities", "batch_edits"):
            a, b = t["meta"]["core_span"]
            core = t["steps"][a:b]
            assert len(core) >= 3
            if nk != "batch_edits":
                assert len({_out(s) for s in core}) == len(core), t["id"]


def test_cli_writes_both_files(tmp_path):
    assert gen.main(["--seed", "1", "--out", str(tmp_path), "-n", "12"]) == 0
    for s in gen.SPLITS:
        lines = (tmp_path / f"synth_{s}.jsonl").read_text().splitlines()
        assert len(lines) == 12
        assert all(json.loads(x)["id"].startswith(f"synth-{s}-") for x in lines)


# ---------------------------------------------------------------- short-list hold-out (issue 14.2)
# Mutation: drop `return lst[:-1]` for short lists in Ctx._pool → dev sees test's templates.
def test_generator_holds_the_last_entry_of_short_lists_out_of_dev():
    import random

    for n in (3, 5, 7):
        templates = [f"template-{i}" for i in range(n)]
        dev = {gen.Ctx(random.Random(s), "dev").choice(templates) for s in range(400)}
        test = {gen.Ctx(random.Random(s), "test").choice(templates) for s in range(400)}
        assert dev == set(templates[:-1]), n
        assert test == set(templates), n


# ---------------------------------------------------------------- vocabulary partition (issue 14.4)
# Test-only names of the vocabulary lists never reach the dev split, however they are drawn.
# Names that are also grammar are exempt, each for its reason:
GRAMMAR_COLLISIONS = {
    "webhooks": "plural of the noun 'webhook' (NOUNS, grammar): parse_webhooks.py, '12 webhooks matched'",
    "reports": "plural of the noun 'report' (NOUNS, grammar)",
    "ubuntu": "the GitHub Actions runner label `ubuntu-latest` in workflow files",
}


def _names(item):
    if isinstance(item, str):
        return [item]
    if isinstance(item, tuple):
        return [x for x in item if isinstance(x, str)]
    return []


def test_no_test_only_vocabulary_leaks_into_dev(full_dev):
    import re

    text = gen.dumps_split(full_dev)
    grammar = {n.lower() for name, v in vars(gen).items() if isinstance(v, list) and name.isupper()
               and name not in gen.PARTITIONED for x in v for n in _names(x)}
    dev = gen.Ctx(__import__("random").Random(0), "dev")
    dev_names = {n.lower() for name in gen.PARTITIONED for x in dev._pool(getattr(gen, name)) for n in _names(x)}
    leaks = {}
    for name in gen.PARTITIONED:
        for item in gen._held_out(getattr(gen, name), "test"):
            for n in _names(item):
                if len(n) < 3 or n in GRAMMAR_COLLISIONS or n.lower() in grammar or n.lower() in dev_names:
                    continue
                hits = len(re.findall(r"(?<![A-Za-z0-9])" + re.escape(n) + r"(?![A-Za-z0-9])", text))
                if hits:
                    leaks[f"{name}:{n}"] = hits
    assert leaks == {}


def test_the_partition_is_by_item_across_lists():
    """sqlalchemy is a THIRD_PARTY import and a PY_PKGS package: held out of dev in both."""
    dev = gen.Ctx(__import__("random").Random(0), "dev")
    held = set(gen._held_out(gen.THIRD_PARTY, "test")) | set(gen._held_out(gen.PY_PKGS, "test"))
    assert held and not held & set(dev.pool(gen.THIRD_PARTY) + dev.pool(gen.PY_PKGS))
    assert "Kafka" in gen._TEST_ONLY and not any("Kafka" in str(x) for x in dev.pool(gen.HOWTO_INTENTS))
