"""Assembly: which world builds which kind of trace, a trace's label and metadata, a whole split."""
from __future__ import annotations

import json
import random

from . import browser, content, context, dev, functions, http_api, project, python_world, sql, vocab, web, world
from .browser import BrowserWorld
from .context import Ctx, count_constant_lists, sig
from .dev import DevWorld
from .functions import FunctionsWorld
from .http_api import HttpWorld
from .python_world import PythonWorld
from .sql import SqlWorld
from .web import WebWorld
from .world import LOOP_KINDS, NEG_KINDS

SPLITS = ("dev", "test")
DEFAULT_N = 300
LOOP_FRACTION = 0.45

# (name, weight, factory(c, negative_kind) -> World)
WORLDS = [
    ("shell", 2.0, lambda c, neg: DevWorld(c, "shell", force_license=(neg == "many_files" and c.chance(0.8)))),
    ("claude_code", 2.4, lambda c, neg: DevWorld(c, "cc", force_license=(neg == "many_files" and c.chance(0.8)))),
    ("claude_code_web", 0.6, lambda c, neg: WebWorld(c, "cc")),
    ("web_search", 1.2, lambda c, neg: WebWorld(c, "plain")),
    ("sql", 1.0, lambda c, neg: SqlWorld(c)),
    ("http", 1.0, lambda c, neg: HttpWorld(c)),
    ("browser", 0.8, lambda c, neg: BrowserWorld(c)),
    ("openai_functions", 1.1, lambda c, neg: FunctionsWorld(c)),
    ("python", 1.0, lambda c, neg: PythonWorld(c)),
]
WORLD_CLASS = {"shell": DevWorld, "claude_code": DevWorld, "claude_code_web": WebWorld, "web_search": WebWorld, "sql": SqlWorld,
               "http": HttpWorld, "browser": BrowserWorld, "openai_functions": FunctionsWorld, "python": PythonWorld}

# Ctx.pool caches the pools of the constant lists and filters only the PARTITIONED ones by item. Every list
# bound to a name in the generator's modules is one (WORLDS included), and so are FACT_PHRASINGS' lists.
count_constant_lists(*(vars(m) for m in (vocab, context, content, world, project, dev, web, sql, http_api, functions,
                                         browser, python_world)), globals(), web.FACT_PHRASINGS)


def _pick_world(c: Ctx, kind: str, negative: bool):
    cands = [(n, w, f) for n, w, f in WORLDS if kind in (WORLD_CLASS[n].NEGS if negative else WORLD_CLASS[n].LOOPS)]
    tot = sum(w for _, w, _ in cands)
    x = c.r.uniform(0, tot)
    for n, w, f in cands:
        x -= w
        if x <= 0:
            return n, f
    return cands[-1][0], cands[-1][2]


def _has_noise(kind, steps):
    """True when repeats of the same probe differ only by volatile noise (timestamps, durations, request ids)."""
    if kind not in ("exact", "normalized", "alternation", "count"):
        return False
    groups = {}
    for s in steps:
        k = "all" if kind == "normalized" else sig(s)
        groups.setdefault(k, set()).add(json.dumps(s["output"], sort_keys=True))
    return any(len(v) > 1 for v in groups.values())


def _prefix_len(c: Ctx):
    return 0 if c.chance(0.1) else (c.rint(1, 6) if c.chance(0.55) else c.rint(7, 15))


def build_trace(c: Ctx, tid: str, kind: str, negative: bool):
    wname, factory = _pick_world(c, kind, negative)
    w = factory(c, kind if negative else None)
    if w.style == "claude_code" and isinstance(w, DevWorld):
        web = WebWorld(c, "cc")
        base = w.filler_gens

        def gens(base=base, web=web):
            return base() + [web.f_search]
        w.filler_gens = gens
    if not negative:
        seg = getattr(w, "loop_" + kind)()
        prefix = w.filler(_prefix_len(c))
        suffix = w.filler(c.rint(1, 6)) if c.chance(0.5) else []
        steps = prefix + seg["steps"] + suffix
        label = {"loop": True, "onset": len(prefix) + seg["onset"], "kind": kind}
        meta = {"scenario": seg["scenario"], "negative_kind": None, "style": w.style, "world": wname,
                "loop_span": [len(prefix), len(prefix) + len(seg["steps"])], "volatile_noise": _has_noise(kind, seg["steps"]), "broke_out": bool(suffix)}
    else:
        scen, core = getattr(w, "neg_" + kind)()
        w.reserve(core)
        if kind == "normal":
            prefix, suffix = [], []
        else:
            prefix = w.filler(0 if c.chance(0.2) else c.rint(1, 8))
            suffix = w.filler(c.rint(0, 6))
        steps = prefix + core + suffix
        label = {"loop": False, "onset": None, "kind": None}
        meta = {"scenario": scen, "negative_kind": kind, "style": w.style, "world": wname,
                "core_span": [len(prefix), len(prefix) + len(core)]}
    return {"id": tid, "source": f"synthetic:{w.style}", "steps": steps, "label": label, "meta": meta}


def _allocate(n: int):
    n_loop = round(n * LOOP_FRACTION)
    n_neg = n - n_loop
    neg_w = {k: (1.3 if k == "normal" else 1.0) for k in NEG_KINDS}

    def split_counts(total, weights):
        tw = sum(weights.values())
        raw = {k: total * v / tw for k, v in weights.items()}
        cnt = {k: int(v) for k, v in raw.items()}
        rest = total - sum(cnt.values())
        for k in sorted(raw, key=lambda k: (-(raw[k] - cnt[k]), list(weights).index(k)))[:rest]:
            cnt[k] += 1
        return cnt

    loops = split_counts(n_loop, {k: 1.0 for k in LOOP_KINDS})
    negs = split_counts(n_neg, neg_w)
    return [(k, False) for k in LOOP_KINDS for _ in range(loops[k])] + [(k, True) for k in NEG_KINDS for _ in range(negs[k])]


def generate_split(seed: int, split: str, n: int = DEFAULT_N):
    if split not in SPLITS:
        raise ValueError(split)
    master = random.Random(f"semloop-synth:{seed}:{split}")
    slots = _allocate(n)
    master.shuffle(slots)
    out = []
    for i, (kind, negative) in enumerate(slots, 1):
        c = Ctx(random.Random(master.getrandbits(64)), split)
        out.append(build_trace(c, f"synth-{split}-{i:04d}", kind, negative))
    return out


def dumps_split(traces) -> str:
    return "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in traces)
