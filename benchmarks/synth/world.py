"""The kinds of loop and negative a trace can be, and the World base every tool world builds them on."""
from __future__ import annotations

import json

from .context import Ctx, sig, step

LOOP_KINDS = ("exact", "normalized", "paraphrase", "same_result", "alternation", "count")
NEG_KINDS = (
    "pagination", "chunked_reading", "polling", "many_files", "test_fix",
    "different_entities", "one_retry", "batch_edits", "near_miss", "normal",
)
# the negatives of a tool world that lists and polls (sql, browser); with "batch_edits" for one that
# also writes records (http, functions)
LIST_NEGS = ("pagination", "polling", "different_entities", "one_retry", "near_miss", "normal")
LIST_EDIT_NEGS = ("pagination", "polling", "different_entities", "one_retry", "batch_edits", "near_miss", "normal")


class Probe:
    """A call whose result does not change; ``render`` may inject volatile noise."""

    def __init__(self, tool, inp, render, err=False):
        self.tool, self.inp, self._render, self.err = tool, inp, render, err
        self._first = None

    def out(self, fresh=False):
        if self._first is None:
            self._first = self._render()
            return self._first
        return self._render() if fresh else self._first

    def step(self, fresh=False, inp=None):
        return step(self.tool, json.loads(json.dumps(inp if inp is not None else self.inp)), self.out(fresh), self.err)


def const(x):
    return lambda: x


class World:
    style = "generic"

    def __init__(self, c: Ctx):
        self.c, self.r = c, c.r
        self.seen: set = set()
        self.keys: set = set()

    # ---- filler (productive, never repeating a call or an intent)
    def filler_gens(self):
        raise NotImplementedError

    def filler(self, n, gens=None):
        gens = gens or self.filler_gens()
        out, tries = [], 0
        while len(out) < n and tries < n * 40 + 40:
            tries += 1
            res = self.r.choice(gens)()
            if res is None:
                continue
            key, st = res
            if key in self.keys or sig(st) in self.seen:
                continue
            self.keys.add(key)
            self.seen.add(sig(st))
            out.append(st)
        return out

    def reserve(self, steps, keys=()):
        for s in steps:
            self.seen.add(sig(s))
        for k in keys:
            self.keys.add(k)

    def rep(self, lo, hi):
        """Loop length: minimal 40% of the time, longer otherwise."""
        return lo if self.c.chance(0.4) else self.c.rint(lo + 1, hi)

    # ---- loops (generic parts)
    def loop_exact(self):
        scen, p, keys = self.stuck()
        vol = self.c.chance(0.45)
        k = self.rep(3, 8)
        steps = [p.step(fresh=vol and i > 0) for i in range(k)]
        self.reserve(steps, keys)
        return dict(steps=steps, onset=1, scenario=scen, volatile=vol)

    def loop_normalized(self):
        scen, p, variants, keys = self.norm_probe()
        vol = self.c.chance(0.4)
        k = self.rep(3, 6)
        steps = [p.step()]
        pool = list(variants)
        for i in range(1, k):
            if not pool:
                pool = list(variants)
            v = pool.pop(self.r.randrange(len(pool)))
            steps.append(p.step(fresh=vol, inp=v))
        self.reserve(steps, keys)
        return dict(steps=steps, onset=1, scenario=scen, volatile=vol)

    def loop_paraphrase(self):
        scen, steps, keys = self.paraphrase()
        self.reserve(steps, keys)
        return dict(steps=steps, onset=1, scenario=scen, volatile=False)

    def loop_same_result(self):
        scen, steps, keys = self.same_result()
        self.reserve(steps, keys)
        return dict(steps=steps, onset=1, scenario=scen, volatile=False)

    def loop_alternation(self):
        m = 3 if self.c.chance(0.3) else 2
        scen, probes, keys = self.alt_probes(m)
        m = len(probes)
        vol = self.c.chance(0.4)
        cycles = self.rep(2, 4)
        steps = []
        for cyc in range(cycles):
            for p in probes:
                steps.append(p.step(fresh=vol and cyc > 0))
        self.reserve(steps, keys)
        return dict(steps=steps, onset=m, scenario=scen, volatile=vol)

    def loop_count(self):
        scen, p, keys = self.state_probe()
        self.reserve([p.step()], keys)
        vol = self.c.chance(0.4)
        occ = self.rep(4, 7)
        steps, onset = [], None
        for i in range(occ):
            if i > 0:
                steps.extend(self.filler(self.c.rint(1, 4)))
                if i == 1:
                    onset = len(steps)
            steps.append(p.step(fresh=vol and i > 0))
        return dict(steps=steps, onset=onset, scenario=scen, volatile=vol)

    # ---- negatives (generic parts)
    def neg_near_miss(self):
        mode = self.r.choice(["twice_consecutive", "twice_separated", "abA", "stuck_twice_then_fix"])
        if mode == "abA":
            _, probes, keys = self.alt_probes(2)
            a, b = probes
            steps = [a.step(), b.step(), a.step()]
            self.reserve(steps, keys)
            return "near_miss:" + mode, steps
        if mode == "stuck_twice_then_fix":
            scen, p, keys = self.stuck()
            steps = [p.step(), p.step()]
            self.reserve(steps, keys)
            return "near_miss:" + mode + ":" + scen, steps + self.filler(self.c.rint(1, 3))
        scen, p, keys = self.state_probe()
        self.reserve([p.step()], keys)
        if mode == "twice_consecutive":
            return "near_miss:" + mode + ":" + scen, [p.step(), p.step()]
        mid = self.filler(self.c.rint(1, 5))
        return "near_miss:" + mode + ":" + scen, [p.step()] + mid + [p.step()]

    def neg_normal(self):
        return "normal_session", self.filler(self.c.rint(6, 22))

    LOOPS: tuple = LOOP_KINDS  # every world can make every kind of loop
    NEGS: tuple = ()


def statuses_converging(c: Ctx, seq):
    """Each status is observed 1 or 2 times (so status changes at least every 2 polls); final one 1-2 times."""
    out = []
    for s in seq:
        out += [s] * c.r.choice([1, 1, 2])
    return out
