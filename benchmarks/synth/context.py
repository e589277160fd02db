"""The per-trace random context (Ctx), the dev/test vocabulary partition it draws through, and the step record."""
from __future__ import annotations

import json
import random
import re

from . import vocab
from .vocab import EMAIL_DOMAINS, FIRST, LAST

# Vocabulary lists: names of things (projects, packages, people, places, companies, sites, ...).
# Their items are partitioned between the splits (Ctx._pool), and no test-only item may ever reach
# the dev split (tests/test_generator.py checks the generated text). Every other list is grammar:
# SQL keywords, months, stdlib modules, exception classes, attribute/parameter names, statuses and
# templates, which both splits need to write valid outputs (short template lists still hold their
# last entry out of dev).
PARTITIONED = ("PROJECT_NAMES", "MODULES", "THIRD_PARTY", "PY_PKGS", "USERS", "FIRST", "LAST", "EMAIL_DOMAINS",
               "CITIES", "AIRLINES", "PRODUCTS", "COMPANIES", "SITES", "TECH", "HOWTO_INTENTS", "FACT_INTENTS",
               "ORGS", "NAMESPACES", "DATASETS")


def _held_out(lst, split):
    """Items of a vocabulary list that only `split` may use."""
    n = len(lst)
    if n >= 8:
        return [x for i, x in enumerate(lst) if i % 4 == (3 if split == "test" else 1)]
    return [lst[-1]] if n >= 3 and split == "test" else []


def _key(x):
    try:
        hash(x)
        return x
    except TypeError:  # (name, [columns]) entries: identified by their name
        return x[0]


_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def _names_any(x, banned):
    """Does item `x` (a string, or a tuple of fields) name anything in `banned`?"""
    if isinstance(x, str):
        return x in banned or any(w in banned for w in _WORD.findall(x))
    if isinstance(x, tuple):
        return any(_names_any(y, banned) for y in x if isinstance(y, (str, tuple)))
    return False


_PARTITIONED_IDS = {id(vars(vocab)[name]) for name in PARTITIONED}
_TEST_ONLY = {_key(x) for name in PARTITIONED for x in _held_out(vars(vocab)[name], "test")}
_DEV_ONLY = {_key(x) for name in PARTITIONED for x in _held_out(vars(vocab)[name], "dev")} - _TEST_ONLY
_TEST_ONLY = {x for x in _TEST_ONLY if isinstance(x, str)}
_DEV_ONLY = {x for x in _DEV_ONLY if isinstance(x, str)}

# ids of the lists bound to a name in the generator's modules (filled in by count_constant_lists once they
# are all imported, see assemble): Ctx.pool caches their pools, and filters only the PARTITIONED ones.
_CONST_LIST_IDS: set = set()

# pool() results are cached only for the constant lists (never for temporaries)
_POOL_CACHE: dict = {}


def count_constant_lists(*namespaces):
    """Count every list among the values of `namespaces` (module dicts) as a constant list."""
    for ns in namespaces:
        _CONST_LIST_IDS.update(id(v) for v in list(ns.values()) if isinstance(v, list))


class Ctx:
    """Per-trace random context.  Only ``self.r`` (a random.Random) is used."""

    def __init__(self, r: random.Random, split: str):
        self.r = r
        self.split = split
        self._clock = r.randint(1_704_000_000, 1_730_000_000)  # fixed epoch base, drawn from rng

    # ---- split-aware vocabulary
    def pool(self, lst):
        key = (id(lst), self.split)
        if id(lst) in _CONST_LIST_IDS:
            hit = _POOL_CACHE.get(key)
            if hit is None:
                hit = _POOL_CACHE[key] = self._pool(lst)
            return hit
        return self._pool(lst)

    def _pool(self, lst):
        n = len(lst)
        if n >= 8:
            if self.split == "dev":
                base = [x for i, x in enumerate(lst) if i % 4 != 3]
            else:
                base = [x for i, x in enumerate(lst) if i % 4 != 1]
        elif n >= 3 and self.split == "dev":
            base = lst[:-1]  # last template of short lists is held out for test
        else:
            base = list(lst)
        # An item held out of one vocabulary list is held out of every list (sqlalchemy is both a
        # THIRD_PARTY import and a PY_PKGS package): the partition is by item, not by list.
        if id(lst) in _CONST_LIST_IDS and id(lst) not in _PARTITIONED_IDS:
            return base  # grammar (see PARTITIONED)
        kept = self.allowed(base)
        return kept or base

    def allowed(self, lst):
        """`lst` without the items that name something held out of this split (`Kafka 3.7` in dev)."""
        banned = _TEST_ONLY if self.split == "dev" else _DEV_ONLY
        return [x for x in lst if not _names_any(x, banned)]

    def choice(self, lst):
        return self.r.choice(self.pool(lst))

    def sample(self, lst, k):
        p = self.pool(lst)
        return self.r.sample(p, min(k, len(p)))

    def chance(self, p):
        return self.r.random() < p

    def rint(self, a, b):
        return self.r.randint(a, b)

    # ---- volatile noise
    def tick(self, lo=1, hi=40):
        self._clock += self.r.randint(lo, hi)
        return self._clock

    def ts(self):
        t = self.tick()
        return _fmt_ts(t)

    def hexid(self, n=8):
        return "".join(self.r.choice("0123456789abcdef") for _ in range(n))

    def uuid(self):
        h = self.hexid(32)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"

    def dur(self, lo=0.05, hi=9.0):
        return f"{self.r.uniform(lo, hi):.2f}s"

    def person(self):
        f, l = self.choice(FIRST), self.choice(LAST)
        dom = self.choice(EMAIL_DOMAINS)
        style = self.r.randint(0, 3)
        local = [f"{f}.{l}", f"{f[0]}{l}", f"{f}{self.r.randint(1, 99)}", f"{f}_{l[:3]}"][style].lower()
        return {"first": f, "last": l, "name": f"{f} {l}", "email": f"{local}@{dom}"}


def _fmt_ts(t: int) -> str:
    # deterministic civil-time formatting without the time module's locale/timezone dependence
    days, rem = divmod(t, 86400)
    h, rem = divmod(rem, 3600)
    mi, s = divmod(rem, 60)
    y, m, d = _civil_from_days(days)
    return f"{y:04d}-{m:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}Z"


def _civil_from_days(z: int):
    z += 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + (m <= 2), m, d)


def step(tool, inp, out, err=False):
    return {"tool": tool, "input": inp, "output": out, "is_error": bool(err)}


def sig(s):
    """Canonical signature of a step's call (used only to keep filler free of accidental repeats)."""
    inp = s["input"]
    return s["tool"] + "\x00" + (json.dumps(inp, sort_keys=True) if isinstance(inp, dict) else str(inp))
