#!/usr/bin/env python3
"""Seeded, reproducible generator of labeled synthetic agent trajectories.

Usage::

    python benchmarks/generate.py --seed 1 --out benchmarks/data

writes ``synth_dev.jsonl`` and ``synth_test.jsonl``.  Everything is driven by
``random.Random`` instances derived from ``(seed, split)``: no global random
state, no clock, no hash-order dependence.  The test split draws on vocabulary
items and scenario templates that the dev split never sees (see GENERATOR.md).

The generator is detector-agnostic: labels come from construction, following
the label protocol (loop / onset / kind) documented in GENERATOR.md.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import textwrap

LOOP_KINDS = ("exact", "normalized", "paraphrase", "same_result", "alternation", "count")
NEG_KINDS = (
    "pagination", "chunked_reading", "polling", "many_files", "test_fix",
    "different_entities", "one_retry", "batch_edits", "near_miss", "normal",
)
SPLITS = ("dev", "test")
DEFAULT_N = 300
LOOP_FRACTION = 0.45

# --------------------------------------------------------------------------- vocabulary
# Every list is partitioned per split by Ctx.pool(): items at index i % 4 == 3 are
# test-only, items at i % 4 == 1 (lists of >= 8 items) are dev-only, the rest shared.

PROJECT_NAMES = [
    "ledgerline", "quillstack", "harborview", "tidepool", "fernwick", "copperleaf",
    "nimbusctl", "orchardsync", "saltmarsh", "bramblecache", "kestrel-api", "lanternfs",
    "driftwood", "mossgate", "cobaltq", "wrenform", "basaltdb", "junipertrack",
    "halyard", "marigold-etl", "starling-web", "quarrytools", "emberlog", "pebbleflow",
]
MODULES = [
    "billing", "invoices", "auth", "session", "cache", "scheduler", "parser", "exporter",
    "ingest", "metrics", "notifications", "webhooks", "storage", "pricing", "inventory",
    "reports", "search", "rate_limit", "retry", "config", "models", "serializers",
    "cli", "tasks", "queueing", "audit", "geo", "currency", "templates", "permissions",
    "uploads", "emailer",
]
NOUNS = [
    "invoice", "order", "customer", "payment", "shipment", "token", "session", "record",
    "batch", "event", "report", "metric", "job", "worker", "tenant", "account", "ledger",
    "entry", "snapshot", "manifest", "schema", "payload", "request", "bucket", "chunk",
    "segment", "window", "quota", "policy", "webhook", "coupon", "refund",
]
VERBS = [
    "load", "parse", "build", "fetch", "validate", "normalize", "render", "sync",
    "resolve", "apply", "compute", "merge", "flush", "encode", "decode", "register",
    "dispatch", "collect", "refresh", "prune", "export", "ingest", "serialize",
    "reconcile", "schedule", "hydrate", "split", "aggregate", "emit", "enqueue",
    "expire", "upsert",
]
ATTRS = [
    "id", "name", "status", "created_at", "updated_at", "amount", "currency", "owner",
    "tags", "priority", "region", "version", "checksum", "size", "kind", "source",
    "timeout", "retries", "expires_at", "parent_id", "label", "weight", "due_date", "slug",
]
PARAMS = [
    "items", "records", "rows", "path", "payload", "batch", "entries", "events", "key",
    "source", "values", "chunks", "config", "client", "limit", "since", "target", "options",
]
STDLIB = [
    "os", "re", "json", "time", "logging", "hashlib", "itertools", "functools",
    "collections", "dataclasses", "datetime", "pathlib", "typing", "uuid", "decimal",
    "enum", "contextlib", "threading", "csv", "math",
]
THIRD_PARTY = [
    "requests", "pydantic", "sqlalchemy", "httpx", "click", "yaml", "attrs", "redis",
    "boto3", "jinja2", "structlog", "tenacity",
]
EXCEPTIONS = [
    "KeyError", "ValueError", "TimeoutError", "ConnectionError", "RuntimeError",
    "PermissionError", "LookupError", "OSError",
]
USERS = ["dev", "ana", "mkowalski", "jpark", "runner", "sofia", "tomas", "ubuntu", "liam", "noor", "ci", "ravi"]
FIRST = [
    "Maya", "Liam", "Aisha", "Jonas", "Priya", "Mateo", "Chen", "Olga", "Tariq", "Emma",
    "Kwame", "Lucia", "Hiro", "Sven", "Fatima", "Diego", "Ingrid", "Ravi", "Zoe", "Omar",
    "Keiko", "Pablo", "Nadia", "Felix",
]
LAST = [
    "Okafor", "Lindqvist", "Ramirez", "Nguyen", "Schmidt", "Patel", "Kowalski", "Haddad",
    "Moreau", "Tanaka", "Osei", "Ferreira", "Novak", "Larsen", "Ibrahim", "Costa",
    "Whitfield", "Brennan", "Yilmaz", "Andersen", "Mbeki", "Rossi", "Dubois", "Kaur",
]
EMAIL_DOMAINS = ["gmail.com", "outlook.com", "proton.me", "acme-corp.com", "fastmail.com", "northwind.io", "yahoo.com", "hey.com"]
CITIES = [
    ("San Francisco", "SFO", "US"), ("New York", "JFK", "US"), ("London", "LHR", "GB"),
    ("Paris", "CDG", "FR"), ("Tokyo", "HND", "JP"), ("Berlin", "BER", "DE"),
    ("Chicago", "ORD", "US"), ("Madrid", "MAD", "ES"), ("Toronto", "YYZ", "CA"),
    ("Sydney", "SYD", "AU"), ("Singapore", "SIN", "SG"), ("Amsterdam", "AMS", "NL"),
    ("Seattle", "SEA", "US"), ("Lisbon", "LIS", "PT"), ("Dubai", "DXB", "AE"),
    ("Mexico City", "MEX", "MX"), ("Boston", "BOS", "US"), ("Rome", "FCO", "IT"),
    ("Seoul", "ICN", "KR"), ("Zurich", "ZRH", "CH"), ("Denver", "DEN", "US"),
    ("Vienna", "VIE", "AT"), ("Austin", "AUS", "US"), ("Copenhagen", "CPH", "DK"),
]
AIRLINES = [("UA", "United"), ("DL", "Delta"), ("BA", "British Airways"), ("AF", "Air France"),
            ("LH", "Lufthansa"), ("NH", "ANA"), ("AA", "American"), ("KL", "KLM"),
            ("IB", "Iberia"), ("AC", "Air Canada"), ("SQ", "Singapore Airlines"), ("EK", "Emirates")]
PRODUCTS = [
    "Aeron Desk Lamp", "Trailblazer Backpack 28L", "Nimbus Wireless Earbuds", "Granite Cast Iron Pan",
    "Solstice Yoga Mat", "Vector Mechanical Keyboard", "Harbor Rain Jacket", "Lumen Smart Bulb 4-pack",
    "Pioneer Water Bottle 1L", "Atlas Standing Desk", "Cirrus Air Purifier", "Echo Ridge Hiking Boots",
    "Polar Insulated Mug", "Quanta USB-C Hub", "Sable Leather Wallet", "Terra Plant Pot Set",
]
COMPANIES = ["Globex", "Initech", "Umbrella Labs", "Hooli", "Vandelay Industries", "Stark Freight",
             "Wayne Analytics", "Soylent Systems", "Tyrell Data", "Cyberdyne Retail", "Massive Dynamic", "Pied Piper"]
SITES = ["docs.example.dev", "blog.tidewater.io", "news.ycombinator.com", "stackoverflow.com",
         "medium.com", "dev.to", "github.com", "realpython.com", "wikipedia.org", "reddit.com",
         "arstechnica.com", "infoq.com", "lwn.net", "towardsdatascience.com", "css-tricks.com", "smashingmagazine.com"]
TECH = ["Python", "PostgreSQL", "Kubernetes", "React", "Rust", "Go", "TypeScript", "Django",
        "FastAPI", "Terraform", "Redis", "Kafka", "Docker", "GraphQL", "pandas", "nginx"]
# (task phrase, keyword phrase, tech) -- "intents" for paraphrased web searches
HOWTO_INTENTS = [
    ("retry failed HTTP requests with exponential backoff", "exponential backoff retry", "Python requests"),
    ("paginate a large table efficiently", "keyset pagination", "PostgreSQL"),
    ("restart a deployment without downtime", "rolling restart deployment", "Kubernetes"),
    ("debounce an input field", "debounce input", "React"),
    ("read a file line by line", "read file lines", "Rust"),
    ("cancel a long running goroutine", "context cancellation goroutine", "Go"),
    ("narrow a union type", "type narrowing union", "TypeScript"),
    ("run a data migration safely", "data migration zero downtime", "Django"),
    ("stream a large response body", "streaming response", "FastAPI"),
    ("import existing resources into state", "terraform import existing resource", "Terraform"),
    ("expire keys in bulk", "bulk key expiry", "Redis"),
    ("reprocess messages from a dead letter topic", "dead letter queue replay", "Kafka"),
    ("shrink a docker image", "reduce image size multi-stage build", "Docker"),
    ("batch resolvers to avoid N+1 queries", "dataloader n+1", "GraphQL"),
    ("pivot a dataframe with duplicate index values", "pivot_table duplicate entries", "pandas"),
    ("rate limit requests per client ip", "limit_req per ip", "nginx"),
]
FACT_INTENTS = [  # (kind, subject)
    ("population", "Lisbon"), ("population", "Osaka"), ("population", "Nairobi"), ("population", "Montreal"),
    ("ceo", "Globex"), ("ceo", "Initech"), ("ceo", "Hooli"), ("ceo", "Tyrell Data"),
    ("release", "Python 3.12"), ("release", "PostgreSQL 16"), ("release", "Kubernetes 1.29"), ("release", "Node.js 20"),
    ("height", "Mount Kilimanjaro"), ("height", "the Burj Khalifa"), ("height", "Mont Blanc"), ("height", "the CN Tower"),
]
LICENSE_HEADERS = [
    "# Copyright {year} {org}\n#\n# Licensed under the Apache License, Version 2.0 (the \"License\");\n"
    "# you may not use this file except in compliance with the License.\n# You may obtain a copy of the License at\n#\n"
    "#     http://www.apache.org/licenses/LICENSE-2.0\n#\n# Unless required by applicable law or agreed to in writing, software\n"
    "# distributed under the License is distributed on an \"AS IS\" BASIS,\n# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, "
    "either express or implied.\n# See the License for the specific language governing permissions and\n# limitations under the License.\n",
    "# SPDX-License-Identifier: MIT\n# Copyright (c) {year} {org} and contributors.\n#\n# Permission is hereby granted, free of charge, "
    "to any person obtaining a copy of this software\n# and associated documentation files, to deal in the Software without restriction.\n",
    "# -*- coding: utf-8 -*-\n# Copyright (C) {year} {org}. All rights reserved.\n# Use of this source code is governed by a BSD-style license\n"
    "# that can be found in the LICENSE file.\n",
    "# This file is part of {org}'s internal tooling.\n# (c) {year} {org}. Proprietary and confidential.\n"
    "# Unauthorized copying of this file, via any medium, is strictly prohibited.\n",
]
ORGS = ["Northwind Labs", "Tidewater Inc.", "Brightline Systems", "Quarry Software", "Aurora Data GmbH", "Halcyon Works"]
NAMESPACES = ["default", "staging", "payments", "ml-serving", "ingest", "web", "platform", "batch"]
LOG_MSGS = [
    "GET /api/v1/{noun}s 200 {ms}ms", "POST /api/v1/{noun}s 201 {ms}ms", "worker {n} picked up job {hexid}",
    "cache miss for {noun}:{n}", "retrying {noun} sync (attempt {k}/5)", "flushed {n} {noun}s to storage",
    "connection pool size={k} in_use={n}", "scheduled {noun} cleanup in {k}s", "GET /healthz 200 {ms}ms",
    "slow query ({ms}ms): SELECT * FROM {noun}s WHERE ...", "received webhook {hexid} for {noun}",
]
SENTENCES = [
    "{Topic} has become a common concern for teams running {tech} in production.",
    "The short answer is that it depends on how your {noun} data is shaped and how often it changes.",
    "In practice, most of the cost comes from {noun} handling rather than from {tech} itself.",
    "A frequent mistake is to treat every {noun} the same way, which hides the slow path.",
    "Benchmarks on a {n}-node cluster showed a {k}% improvement after the change.",
    "The official documentation covers this in the section on {noun} lifecycle management.",
    "If you only remember one thing: measure before you optimise the {noun} path.",
    "Several readers pointed out that {tech} {v1}.{v2} changed the default behaviour here.",
    "We will walk through a minimal example first and then look at edge cases.",
    "Note that older releases required an explicit flag to enable this.",
    "Community answers disagree, but the maintainers recommend the simpler approach.",
    "The trade-off is more memory in exchange for fewer round trips to the {noun} store.",
    "Error handling deserves its own section because failures tend to cascade.",
    "The final configuration is shown below, with comments explaining each option.",
    "This pattern also appears in {tech} codebases that have nothing to do with {noun}s.",
    "Updated {month} {year}: the workaround is no longer needed on recent versions.",
    "For a deeper dive, see the talk from {Company}'s platform team.",
    "Keep an eye on the {noun} queue depth, it is the earliest warning sign.",
]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]


def _slug(s: str) -> str:
    out = "".join(ch.lower() if ch.isalnum() else "-" for ch in s)
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-")


# --------------------------------------------------------------------------- context
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


# --------------------------------------------------------------------------- content generators
class Code:
    """Procedural, real-looking source files."""

    BODIES = [
        '    if not {a}:\n        raise ValueError("{a} must not be empty")\n    out = []\n    for item in {a}:\n'
        '        if getattr(item, "{attr}", None) is None:\n            continue\n        out.append({helper}(item))\n    return out\n',
        '    key = f"{noun}:{{{a}}}"\n    cached = _CACHE.get(key)\n    if cached is not None:\n        logger.debug("cache hit for %s", key)\n'
        '        return cached\n    value = {helper}({a})\n    _CACHE[key] = value\n    return value\n',
        '    started = time.monotonic()\n    try:\n        result = {helper}({a}, timeout={num})\n    except (TimeoutError, ConnectionError) as exc:\n'
        '        logger.warning("{verb} failed after %.2fs: %s", time.monotonic() - started, exc)\n        raise\n    return result\n',
        '    totals = collections.defaultdict(int)\n    for row in {a}:\n        totals[row["{attr}"]] += row.get("{attr2}", 0)\n'
        '    return dict(sorted(totals.items()))\n',
        '    path = pathlib.Path({a})\n    if not path.exists():\n        raise FileNotFoundError(path)\n'
        '    with path.open("r", encoding="utf-8") as fh:\n        data = json.load(fh)\n    return data.get("{attr}", {default})\n',
        '    payload = {{\n        "{attr}": {a},\n        "{attr2}": {b},\n        "emitted_at": datetime.datetime.utcnow().isoformat(),\n    }}\n'
        '    return json.dumps(payload, sort_keys=True)\n',
        '    for attempt in range({num}):\n        try:\n            return {helper}({a})\n        except {exc} as exc:\n'
        '            if attempt == {num} - 1:\n                raise\n            logger.info("retrying after %s", exc)\n'
        '            time.sleep({backoff} * (2 ** attempt))\n    return None\n',
        '    digest = hashlib.sha256()\n    for chunk in {a}:\n        digest.update(chunk if isinstance(chunk, bytes) else str(chunk).encode())\n'
        '    return digest.hexdigest()[:{num}]\n',
        '    matches = [x for x in {a} if re.search(r"{regex}", str(x.{attr}))]\n'
        '    logger.info("%d of %d {noun}s matched", len(matches), len({a}))\n    return matches\n',
        '    if {b} is None:\n        {b} = {default}\n    seen = set()\n    result = []\n    for entry in {a}:\n'
        '        marker = (entry.{attr}, entry.{attr2})\n        if marker in seen:\n            continue\n        seen.add(marker)\n'
        '        result.append(entry)\n        if len(result) >= {b}:\n            break\n    return result\n',
        '    with _LOCK:\n        pending = list(_PENDING.get({a}, ()))\n        _PENDING.pop({a}, None)\n'
        '    for item in pending:\n        {helper}(item)\n    return len(pending)\n',
        '    window = itertools.islice({a}, {num})\n    grouped = itertools.groupby(sorted(window, key=_by_{attr}), key=_by_{attr})\n'
        '    return {{k: [e.{attr2} for e in g] for k, g in grouped}}\n',
    ]
    REGEXES = [r"^[A-Z]{3}-\d+$", r"\b(?:err|warn)\b", r"^\d{4}-\d{2}-\d{2}", r"[a-f0-9]{12}", r"@example\.(com|org)$", r"^v\d+\.\d+"]

    def __init__(self, c: Ctx):
        self.c = c

    def func(self, indent="", method=False):
        c = self.c
        verb, noun = c.choice(VERBS), c.choice(NOUNS)
        a, b = c.r.sample(PARAMS, 2)
        attr, attr2 = c.r.sample(ATTRS, 2)
        helper = f"_{c.choice(VERBS)}_{c.choice(NOUNS)}"
        body = c.r.choice(self.BODIES).format(
            a=a, b=b, attr=attr, attr2=attr2, helper=helper, noun=noun, verb=verb,
            num=c.rint(2, 16), default=c.r.choice(["None", "0", "{}", "[]", '""', str(c.rint(10, 500))]),
            exc=c.choice(EXCEPTIONS), backoff=c.r.choice(["0.5", "0.25", "1.0", "BACKOFF_BASE"]),
            regex=c.r.choice(self.REGEXES),
        )
        selfp = "self, " if method else ""
        ret = c.r.choice(["list", "dict", "str", "int", "bool", "Optional[dict]", f"list[{noun.title()}]"])
        doc = c.r.choice([
            f'"""{verb.capitalize()} the {noun} {a} and return the result."""',
            f'"""{verb.capitalize()} {noun}s from ``{a}``.\n\n    Raises ValueError when ``{a}`` is malformed.\n    """',
            f'"""Return {noun} data after {verb}ing ``{a}`` (see #{c.rint(100, 4000)})."""',
            f'"""Internal helper: {verb} {noun} {attr} values."""',
        ])
        text = f"def {verb}_{noun}({selfp}{a}, {b}=None) -> {ret}:\n    {doc}\n{body}"
        if indent:
            text = textwrap.indent(text, indent)
        return text

    def module(self, pkg: str, mod: str, license_header: str | None = None, min_funcs=3, max_funcs=8):
        c = self.c
        parts = []
        if license_header:
            parts.append(license_header)
        parts.append(f'"""{mod.replace("_", " ").capitalize()} utilities for {pkg}.\n\n'
                     f'{c.r.choice(["This module is imported lazily by the CLI.", "Public API is re-exported from the package root.", "Keep this free of I/O at import time.", "See docs/" + mod + ".md for the design notes."])}\n"""')
        imps = sorted(c.r.sample(STDLIB, c.rint(3, 7)) + ["logging", "time", "collections", "json"])
        imps = sorted(dict.fromkeys(imps))
        lines = ["from __future__ import annotations", ""] + [f"import {m}" for m in imps]
        lines.append("from typing import Any, Optional")
        lines.append("")
        for m in c.sample(THIRD_PARTY, c.rint(0, 2)):
            lines.append(f"import {m}")
        other = c.choice(MODULES)
        lines.append(f"from {pkg}.{other} import {c.choice(VERBS)}_{c.choice(NOUNS)}")
        parts.append("\n".join(lines))
        consts = ["logger = logging.getLogger(__name__)", "_CACHE: dict[str, Any] = {}",
                  f"DEFAULT_TIMEOUT = {c.rint(3, 120)}", f"BACKOFF_BASE = {c.r.choice(['0.5', '1.5', '2.0'])}",
                  f"MAX_{c.choice(NOUNS).upper()}S = {c.rint(10, 10000)}"]
        parts.append("\n".join(consts))
        if c.chance(0.7):
            cls = f"{c.choice(NOUNS).title()}{c.r.choice(['Manager', 'Client', 'Store', 'Service', 'Registry', 'Builder'])}"
            attrs = c.r.sample(ATTRS, c.rint(2, 5))
            body = [f"@dataclasses.dataclass\nclass {cls}:", f'    """{cls} for {mod}."""', ""]
            for at in attrs:
                body.append(f"    {at}: {c.r.choice(['str', 'int', 'float', 'Optional[str]', 'list[str]', 'dict[str, Any]'])}"
                            + c.r.choice(["", " = None", " = 0", ' = ""', " = dataclasses.field(default_factory=list)"]))
            body.append("")
            for _ in range(c.rint(1, 4)):
                body.append(self.func(indent="    ", method=True))
            parts.append("\n".join(body))
        for _ in range(c.rint(min_funcs, max_funcs)):
            parts.append(self.func())
        return "\n\n".join(parts).rstrip() + "\n"

    def test_module(self, pkg, mod, names):
        c = self.c
        parts = ["import pytest", f"from {pkg} import {mod}"]
        for n in names:
            a, b = c.rint(0, 50), c.rint(0, 50)
            parts.append(
                f"def {n}():\n    result = {mod}.{c.choice(VERBS)}_{c.choice(NOUNS)}({c.r.choice(['[]', '{}', repr(c.choice(ATTRS)), str(a)])})\n"
                f"    assert {c.r.choice(['result == ' + str(b), 'result is not None', 'len(result) == ' + str(b % 7), 'isinstance(result, dict)'])}\n")
        return "\n\n".join(parts)

    def yaml_config(self, pkg):
        c = self.c
        lines = [f"# {pkg} settings", "app:", f"  name: {pkg}", f"  env: {c.r.choice(['production', 'staging', 'dev'])}",
                 f"  log_level: {c.r.choice(['INFO', 'DEBUG', 'WARNING'])}", "database:",
                 f"  host: {c.r.choice(['db.internal', 'localhost', 'postgres', '10.0.3.12'])}", f"  port: {c.r.choice([5432, 5433, 6432])}",
                 f"  pool_size: {c.rint(2, 40)}", f"  statement_timeout_ms: {c.rint(1, 60) * 1000}", "cache:",
                 f"  backend: {c.r.choice(['redis', 'memcached', 'memory'])}", f"  ttl_seconds: {c.rint(30, 86400)}"]
        for sec in c.sample(MODULES, c.rint(2, 5)):
            lines.append(f"{sec}:")
            for at in c.r.sample(ATTRS, c.rint(1, 4)):
                lines.append(f"  {at}: {c.r.choice([str(c.rint(1, 900)), 'true', 'false', repr(c.choice(NOUNS))])}")
        return "\n".join(lines) + "\n"

    def markdown(self, title, topic_words):
        c = self.c
        out = [f"# {title}", ""]
        for h in c.r.sample(["Overview", "Installation", "Usage", "Configuration", "Architecture", "Troubleshooting", "FAQ", "Changelog"], c.rint(2, 5)):
            out.append(f"## {h}")
            out.append("")
            out.append(prose(c, topic_words, c.rint(2, 5)))
            if c.chance(0.4):
                out.append("")
                out.append("```bash")
                out.append(f"{c.r.choice(['pip install -e .', 'make dev', 'docker compose up -d', 'python -m ' + title.lower() + ' --help'])}")
                out.append("```")
            out.append("")
        return "\n".join(out)

    def pyproject(self, pkg):
        c = self.c
        deps = c.sample(THIRD_PARTY, c.rint(2, 6))
        return (f'[project]\nname = "{pkg}"\nversion = "{c.rint(0, 3)}.{c.rint(0, 20)}.{c.rint(0, 9)}"\nrequires-python = ">=3.{c.r.choice([9, 10, 11])}"\n'
                "dependencies = [\n" + "".join(f'    "{d}>={c.rint(1, 3)}.{c.rint(0, 30)}",\n' for d in deps) + "]\n\n"
                '[tool.pytest.ini_options]\ntestpaths = ["tests"]\naddopts = "-ra"\n')


def plural(w):
    return w[:-1] + "ies" if w.endswith("y") and w[-2:-1] not in "aeiou" else w + "s"


def prose(c: Ctx, words, n):
    sents = []
    for tmpl in c.r.sample(SENTENCES, min(n, len(SENTENCES))):
        sents.append(tmpl.format(
            Topic=words[0].capitalize(), tech=c.r.choice(words[1:] or c.pool(TECH)), noun=c.choice(NOUNS),
            n=c.rint(3, 64), k=c.rint(4, 70), v1=c.rint(1, 9), v2=c.rint(0, 30), month=c.r.choice(MONTHS),
            year=c.rint(2019, 2024), Company=c.choice(COMPANIES)))
    return " ".join(sents)


def numbered(text, start=1):
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    return "\n".join(f"{i:>6}\t{ln}" for i, ln in enumerate(lines, start))


def ascii_table(cols, rows):
    """psql-style table."""
    srows = [[("" if v is None else str(v)) for v in r] for r in rows]
    widths = [max([len(col)] + [len(r[i]) for r in srows]) for i, col in enumerate(cols)]
    head = "|".join(f" {col:^{w}} " for col, w in zip(cols, widths))
    sep = "+".join("-" * (w + 2) for w in widths)
    body = ["|".join(f" {v:<{w}} " if not v.replace('.', '').replace('-', '').isdigit() else f" {v:>{w}} " for v, w in zip(r, widths)) for r in srows]
    n = len(rows)
    return "\n".join([head, sep] + body + [f"({n} row{'s' if n != 1 else ''})"])


def http_out(c: Ctx, status, body, rid=None, extra_headers=None):
    reason = {200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 400: "Bad Request", 401: "Unauthorized",
              403: "Forbidden", 404: "Not Found", 409: "Conflict", 422: "Unprocessable Entity", 429: "Too Many Requests",
              500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}[status]
    hdrs = [f"HTTP/1.1 {status} {reason}", "content-type: application/json", f"x-request-id: {rid or c.uuid()}"]
    for k, v in (extra_headers or {}).items():
        hdrs.append(f"{k}: {v}")
    return "\n".join(hdrs) + "\n\n" + json.dumps(body, indent=2)


# --------------------------------------------------------------------------- probes & base world
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

    LOOPS: tuple = ()
    NEGS: tuple = ()


def noisy(c: Ctx, tmpl: str):
    """Render closure: fills @@DUR@@ / @@TS@@ / @@RID@@ / @@MS@@ with fresh volatile values."""
    def render():
        out = tmpl
        for tok, fn in (("@@DUR@@", lambda: c.dur(0.05, 6.0)), ("@@TS@@", c.ts), ("@@RID@@", c.uuid),
                        ("@@MS@@", lambda: str(c.rint(3, 900)))):
            while tok in out:
                out = out.replace(tok, fn(), 1)
        return out
    return render


def fill_noise(c, tmpl):
    return noisy(c, tmpl)()


# --------------------------------------------------------------------------- project (code-repo world)
FAIL_TEMPLATES = [
    ("AssertionError", "assert {a} == {b}", "    assert result == {b}"),
    ("KeyError", "'{attr}'", "    value = payload['{attr}']"),
    ("TypeError", "{verb}_{noun}() got an unexpected keyword argument '{param}'", "    result = {mod}.{verb}_{noun}({param}=1)"),
    ("AttributeError", "'NoneType' object has no attribute '{attr}'", "    assert result.{attr} is not None"),
    ("ValueError", "{param} must not be empty", "    {mod}.{verb}_{noun}([])"),
    ("AssertionError", "assert '{noun}' in []", "    assert '{noun}' in names"),
    ("ZeroDivisionError", "division by zero", "    ratio = total / count"),
]


class Project:
    def __init__(self, c: Ctx, force_license=False):
        self.c = c
        self.code = Code(c)
        self.name = c.choice(PROJECT_NAMES)
        self.pkg = self.name.replace("-", "_")
        user = c.choice(USERS)
        self.root = c.r.choice([f"/home/{user}/{self.name}", f"/Users/{user}/code/{self.name}",
                                f"/workspace/{self.name}", f"/srv/{user}/src/{self.name}"])
        self.mods = c.sample(MODULES, c.rint(6, 11))
        self.big = set(self.mods[:2])
        self.license = None
        if force_license or c.chance(0.45):
            self.license = c.r.choice(LICENSE_HEADERS).format(year=c.rint(2016, 2024), org=c.choice(ORGS))
        self.tests = {m: [f"test_{c.choice(VERBS)}_{c.choice(NOUNS)}_{s}" for s in
                          c.r.sample(["basic", "empty", "roundtrip", "invalid", "large", "unicode", "none", "defaults",
                                      "timeout", "retry", "dedup", "sorted", "partial", "legacy"], c.rint(4, 9))]
                      for m in self.mods}
        self.test_mods = self.mods[: max(3, len(self.mods) - c.rint(0, 3))]
        self.files = [f"src/{self.pkg}/__init__.py"] + [f"src/{self.pkg}/{m}.py" for m in self.mods]
        self.files += [f"tests/test_{m}.py" for m in self.test_mods]
        self.docs = c.r.sample(self.mods, 2)
        self.files += ["README.md", "pyproject.toml", "config/settings.yaml", "Makefile", ".github/workflows/ci.yml",
                       "logs/app.log"] + [f"docs/{d}.md" for d in self.docs]
        self._cache = {}
        self._fail_cache = {}
        self.branch = c.r.choice(["main", f"fix/{c.choice(NOUNS)}-{c.choice(VERBS)}", f"feature/{c.choice(MODULES)}", "develop"])
        self.commits = [(c.hexid(7), self._commit_msg()) for _ in range(12)]
        self.modified = c.r.sample([f for f in self.files if f.endswith(".py")], c.rint(0, 3))

    def _commit_msg(self):
        c = self.c
        return c.r.choice([
            f"Fix {c.choice(NOUNS)} {c.choice(VERBS)} when {c.choice(ATTRS)} is missing",
            f"Add {c.choice(VERBS)}_{c.choice(NOUNS)} helper", f"Bump {c.choice(THIRD_PARTY)} to {c.rint(1, 5)}.{c.rint(0, 20)}",
            f"Refactor {c.choice(MODULES)} module", f"Merge pull request #{c.rint(40, 900)} from {c.choice(USERS)}/{c.choice(MODULES)}",
            f"tests: cover {c.choice(NOUNS)} edge cases", f"docs: explain {c.choice(MODULES)} settings",
            f"Revert \"{c.choice(VERBS)} {c.choice(NOUNS)}s eagerly\"", "ci: cache pip downloads"])

    def abspath(self, rel):
        return f"{self.root}/{rel}"

    def content(self, rel):
        if rel in self._cache:
            return self._cache[rel]
        c, code = self.c, self.code
        if rel.endswith("__init__.py"):
            txt = (self.license or "") + f'"""{self.pkg} package."""\n\n__version__ = "{c.rint(0, 3)}.{c.rint(0, 20)}.{c.rint(0, 9)}"\n\n' + \
                "".join(f"from .{m} import *  # noqa: F401,F403\n" for m in self.mods[:3])
        elif rel.startswith("src/"):
            m = rel.rsplit("/", 1)[1][:-3]
            big = m in self.big
            txt = code.module(self.pkg, m, self.license, min_funcs=14 if big else 3, max_funcs=22 if big else 9)
        elif rel.startswith("tests/"):
            m = rel.rsplit("/", 1)[1][5:-3]
            txt = (self.license or "") + code.test_module(self.pkg, m, self.tests[m])
        elif rel == "README.md":
            txt = code.markdown(self.name, [self.name] + c.sample(TECH, 2))
        elif rel.startswith("docs/"):
            txt = code.markdown(rel[5:-3].replace("_", " ").title(), [rel[5:-3]] + c.sample(TECH, 2))
        elif rel == "pyproject.toml":
            txt = code.pyproject(self.pkg)
        elif rel.endswith(".yaml"):
            txt = code.yaml_config(self.pkg)
        elif rel == "Makefile":
            txt = (".PHONY: test lint fmt migrate\n\ntest:\n\tpython -m pytest -q\n\nlint:\n\truff check src tests\n\n"
                   f"fmt:\n\truff format src tests\n\nmigrate:\n\tpython -m {self.pkg}.cli migrate --env {c.r.choice(['dev', 'local'])}\n")
        elif rel.endswith("ci.yml"):
            txt = ("name: ci\non: [push, pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    strategy:\n      matrix:\n"
                   "        python: [\"3.10\", \"3.11\"]\n    steps:\n      - uses: actions/checkout@v4\n      - uses: actions/setup-python@v5\n"
                   "        with:\n          python-version: ${{ matrix.python }}\n      - run: pip install -e .[test]\n      - run: python -m pytest -q\n")
        elif rel.endswith(".log"):
            lines = []
            for _ in range(c.rint(25, 70)):
                lvl = c.r.choice(["INFO"] * 6 + ["WARNING", "ERROR", "DEBUG"])
                msg = c.r.choice(LOG_MSGS).format(noun=c.choice(NOUNS), ms=c.rint(2, 2400), n=c.rint(1, 900), hexid=c.hexid(10), k=c.rint(1, 5))
                lines.append(f"{c.ts()} {lvl:<7} {self.pkg}.{c.choice(self.mods)}: {msg}")
            txt = "\n".join(lines) + "\n"
        else:
            txt = "\n"
        self._cache[rel] = txt
        return txt

    def dirs(self):
        ds = []
        for f in self.files:
            parts = f.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                d = "/".join(parts[:i])
                if d not in ds:
                    ds.append(d)
        return ds

    def ls(self, d):
        c = self.c
        entries = []
        prefix = "" if d in (".", "") else d + "/"
        for f in self.files:
            if f.startswith(prefix):
                rest = f[len(prefix):]
                name = rest.split("/")[0]
                isdir = "/" in rest
                if (name, isdir) not in entries:
                    entries.append((name, isdir))
        rows = [f"total {c.rint(8, 120)}", f"drwxr-xr-x  {c.rint(3, 9)} {USERS[0]} staff  4096 Mar {c.rint(1, 28):>2} 10:{c.rint(10, 59)} .",
                f"drwxr-xr-x  {c.rint(3, 9)} {USERS[0]} staff  4096 Mar {c.rint(1, 28):>2} 09:{c.rint(10, 59)} .."]
        for name, isdir in sorted(entries):
            size = 4096 if isdir else len(self.content(prefix + name))
            rows.append(f"{'drwxr-xr-x' if isdir else '-rw-r--r--'}  1 {USERS[0]} staff {size:>6} {self.c.r.choice(MONTHS)[:3]} {c.rint(1, 28):>2} {c.rint(8, 19)}:{c.rint(10, 59)} {name}")
        return "\n".join(rows)

    def grep(self, pattern, under="src"):
        hits = []
        for f in self.files:
            if not f.startswith(under) or not (f.endswith(".py") or f.endswith(".md") or f.endswith(".yaml")):
                continue
            for i, ln in enumerate(self.content(f).split("\n"), 1):
                if pattern in ln:
                    hits.append(f"{f}:{i}:{ln}")
        return hits

    def symbols(self):
        if getattr(self, "_symbols", None) is not None:
            return self._symbols
        out = []
        for f in self.files:
            if f.startswith("src/") and not f.endswith("__init__.py"):
                for ln in self.content(f).split("\n"):
                    s = ln.strip()
                    if s.startswith("def ") or s.startswith("class "):
                        name = s.split(" ", 1)[1].split("(")[0].split(":")[0]
                        if name not in out:
                            out.append(name)
        self._symbols = out
        return out

    def failures(self, mod, n):
        """Deterministic ordered failure list for a test module (prefix-stable: failures(m, 3) ⊂ failures(m, 5))."""
        c = self.c
        if mod not in self._fail_cache:
            lst = []
            names = list(self.tests[mod]) + [f"test_{c.choice(VERBS)}_{c.choice(NOUNS)}_{k}" for k in ("regression", "edge", "bulk", "smoke")]
            for name in names:
                exc, msg, src = c.r.choice(FAIL_TEMPLATES)
                kw = dict(a=c.rint(0, 40), b=c.rint(41, 90), attr=c.choice(ATTRS), verb=c.choice(VERBS), noun=c.choice(NOUNS),
                          param=c.choice(PARAMS), mod=mod)
                lst.append((name, exc, msg.format(**kw), src.format(**kw), c.rint(12, 180)))
            self._fail_cache[mod] = (names, lst)
        names, lst = self._fail_cache[mod]
        return names, lst[:n]

    def pytest(self, mod, nfail, quiet=True, dur="@@DUR@@"):
        names, fails = self.failures(mod, nfail)
        if mod not in self.tests:
            pass
        total = len(self.tests[mod]) + (4 if nfail > len(self.tests[mod]) else 0)
        total = max(total, nfail)
        f = f"tests/test_{mod}.py"
        failed_names = {x[0] for x in fails}
        marks = "".join("F" if n in failed_names else "." for n in names[:total])
        lines = []
        if not quiet:
            lines += ["=" * 29 + " test session starts " + "=" * 30,
                      f"platform linux -- Python 3.11.{self.c.rint(4, 9)}, pytest-8.{self.c.rint(0, 3)}.{self.c.rint(0, 2)}, pluggy-1.5.0",
                      f"rootdir: {self.root}", "configfile: pyproject.toml", f"collected {total} items", ""]
            lines.append(f"{f} {marks:<52} [100%]")
        else:
            lines.append(f"{marks:<70} [100%]")
        if fails:
            lines += ["", "=" * 35 + " FAILURES " + "=" * 35]
            for name, exc, msg, src, lineno in fails:
                lines += [f"{'_' * 20} {name} {'_' * 20}", "", f"    def {name}():", f">   {src}", f"E       {exc}: {msg}", "",
                          f"{f}:{lineno}: {exc}"]
            lines += ["=" * 27 + " short test summary info " + "=" * 28]
            lines += [f"FAILED {f}::{n} - {e}: {m}" for n, e, m, _, _ in fails]
            summ = f"{len(fails)} failed, {total - len(fails)} passed in {dur}"
        else:
            summ = f"{total} passed in {dur}"
        lines.append(summ if quiet else "=" * 25 + f" {summ} " + "=" * 25)
        return "\n".join(lines)


def cmd_variants(c: Ctx, cmd: str, n=6):
    """Trivially varied spellings of a shell command (spacing, quoting, ./ prefix, trailing slash)."""
    def t_space(toks):
        i = c.r.randrange(len(toks))
        toks[i] = toks[i] + " "
        return toks

    def t_quote(toks):
        for i, t in enumerate(toks):
            if t.startswith('"') and t.endswith('"') and len(t) > 1:
                toks[i] = "'" + t[1:-1] + "'"
                return toks
            if t.startswith("'") and t.endswith("'") and len(t) > 1:
                toks[i] = '"' + t[1:-1] + '"'
                return toks
        cand = [i for i, t in enumerate(toks) if i > 0 and not t.startswith("-") and "/" in t and "'" not in t and '"' not in t]
        if cand:
            i = c.r.choice(cand)
            toks[i] = '"' + toks[i] + '"'
        return toks

    def t_dot(toks):
        cand = [i for i, t in enumerate(toks) if i > 0 and t[:1].isalpha() and ("/" in t or t.endswith((".py", ".yaml", ".md", ".toml", ".log")))]
        if cand:
            i = c.r.choice(cand)
            toks[i] = "./" + toks[i]
        return toks

    def t_slash(toks):
        cand = [i for i, t in enumerate(toks) if i > 0 and ("/" in t or t in ("src", "tests", "docs", "config")) and "." not in t.rsplit("/", 1)[-1] and not t.startswith("-")]
        if cand:
            i = c.r.choice(cand)
            toks[i] = toks[i][:-1] if toks[i].endswith("/") else toks[i] + "/"
        return toks

    def t_trail(toks):
        toks[-1] = toks[-1] + c.r.choice([" ", "  "])
        return toks

    out, tries = [], 0
    while len(out) < n and tries < 60:
        tries += 1
        toks = cmd.split(" ")
        for fn in c.r.sample([t_space, t_quote, t_dot, t_slash, t_trail], c.rint(1, 2)):
            toks = fn(toks)
        v = " ".join(toks)
        if v != cmd and v not in out:
            out.append(v)
    return out


PY_PKGS = ["requests", "numpy", "pydantic", "sqlalchemy", "httpx", "click", "pyyaml", "redis", "boto3", "jinja2",
           "structlog", "tenacity", "pytest", "ruff", "attrs", "rich", "uvicorn", "fastapi", "celery", "orjson"]


class DevWorld(World):
    LOOPS = LOOP_KINDS
    NEGS = NEG_KINDS

    def __init__(self, c: Ctx, mode: str, force_license=False):
        super().__init__(c)
        self.mode = mode
        self.style = "claude_code" if mode == "cc" else "shell"
        self.p = Project(c, force_license)
        self.shell_tool = c.r.choice(["bash", "bash", "shell"])
        self.dict_out = c.chance(0.7)
        self.short_ack = c.chance(0.5)
        self.pyv = {k: f"{c.rint(0, 4)}.{c.rint(0, 30)}.{c.rint(0, 9)}" for k in PY_PKGS}

    # ---- rendering helpers
    def _wrap(self, stdout, stderr="", err=False):
        if self.mode == "shell":
            return "\n".join(x for x in (stdout, stderr) if x)
        if self.dict_out:
            return {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False}
        body = "\n".join(x for x in (stdout, stderr) if x)
        return ("Exit code 1\n" + body) if err else body

    def inp(self, cmd, desc=None):
        if self.mode == "shell":
            return {"command": cmd}
        return {"command": cmd, "description": desc or self._desc(cmd)}

    def _desc(self, cmd):
        head = cmd.split()[0] if cmd.split() else cmd
        return self.r.choice({
            "ls": ["List directory contents", "Show files", "List files"],
            "cat": ["Show file contents", "Print file", "View file"],
            "git": ["Check git state", "Inspect repository history", "Git command"],
            "python": ["Run Python", "Run tests", "Execute module"],
            "pytest": ["Run tests", "Run the test suite", "Run unit tests"],
            "grep": ["Search the codebase", "Find usages", "Search for pattern"],
            "tail": ["Show recent log lines", "Tail the application log"], "find": ["Find files", "Locate matching files"],
            "wc": ["Count lines", "Line counts per module"], "sed": ["Edit file in place", "Print line range"],
            "pip": ["Check installed package", "Install dependencies"], "curl": ["Hit the local endpoint", "Check service health"],
            "docker": ["Check containers", "Start services"], "kubectl": ["Check pod status", "Inspect pods"],
            "gh": ["Check CI run", "Query GitHub API"], "make": ["Run make target"], "head": ["Show first lines"],
            "ruff": ["Lint the code"], "npm": ["Install node deps"], "aws": ["List bucket objects"],
        }.get(head, ["Run command", f"Run {head}", f"Execute {head}"]))

    def tool(self):
        return self.shell_tool if self.mode == "shell" else "Bash"

    def sh(self, cmd, stdout="", stderr="", err=False, desc=None):
        return step(self.tool(), self.inp(cmd, desc), self._wrap(stdout, stderr, err), err)

    def sh_probe(self, cmd, stdout="", stderr="", err=False, desc=None):
        c = self
        return Probe(self.tool(), self.inp(cmd, desc),
                     lambda: c._wrap(fill_noise(c.c, stdout), fill_noise(c.c, stderr), err), err)

    def abs(self, rel):
        return self.p.abspath(rel)

    def read(self, rel, offset=None, limit=None):
        txt = self.p.content(rel)
        if self.mode == "cc":
            inp = {"file_path": self.abs(rel)}
            lines = txt.split("\n")
            if offset is not None:
                inp["offset"] = offset
                inp["limit"] = limit
                sl = "\n".join(lines[offset - 1: offset - 1 + limit])
                return step("Read", inp, numbered(sl, offset))
            return step("Read", inp, numbered(txt))
        if offset is not None:
            lines = txt.split("\n")
            return self.sh(f"sed -n '{offset},{offset + limit - 1}p' {rel}", "\n".join(lines[offset - 1: offset - 1 + limit]))
        return self.sh("cat " + rel, txt.rstrip("\n"))

    def read_probe(self, rel):
        s = self.read(rel)
        return Probe(s["tool"], s["input"], const(s["output"]))

    def git_status(self):
        p = self.p
        out = [f"On branch {p.branch}", self.r.choice(["Your branch is up to date with 'origin/" + p.branch + "'.",
                                                        "Your branch is ahead of 'origin/" + p.branch + "' by 1 commit."]), ""]
        if p.modified:
            out += ["Changes not staged for commit:", '  (use "git add <file>..." to update what will be committed)', ""]
            out += [f"\tmodified:   {f}" for f in p.modified]
            out.append("")
        out.append("no changes added to commit (use \"git add\" and/or \"git commit -a\")" if p.modified else "nothing to commit, working tree clean")
        return "\n".join(out)

    def git_diff(self, rel=None):
        files = [rel] if rel else (self.p.modified or [self.p.files[1]])
        out = []
        for f in files:
            lines = [ln for ln in self.p.content(f).split("\n") if ln.strip()]
            i = self.r.randrange(max(1, len(lines) - 6))
            ctx = lines[i: i + 5]
            out += [f"diff --git a/{f} b/{f}", f"index {self.c.hexid(7)}..{self.c.hexid(7)} 100644", f"--- a/{f}", f"+++ b/{f}",
                    f"@@ -{i + 1},5 +{i + 1},6 @@"] + [" " + x for x in ctx[:2]] + \
                   ["-" + ctx[2] if len(ctx) > 2 else "-", "+" + (ctx[2] if len(ctx) > 2 else "").replace("None", "0") + "  # fixed",
                    f"+    # TODO({self.c.choice(USERS)}): revisit"] + [" " + x for x in ctx[3:]]
        return "\n".join(out)

    # ---- filler
    def filler_gens(self):
        g = [self.f_ls, self.f_read, self.f_read, self.f_read, self.f_grep, self.f_git, self.f_tests_pass, self.f_pip,
             self.f_find, self.f_log, self.f_edit, self.f_env, self.f_wc]
        if self.mode == "cc":
            g += [self.f_glob, self.f_read, self.f_write]
        return g

    def f_ls(self):
        d = self.r.choice(["."] + self.p.dirs())
        return "ls:" + d, self.sh("ls -la" if d == "." else f"ls -la {d}", self.p.ls(d))

    def f_read(self):
        f = self.r.choice(self.p.files)
        return "read:" + f, self.read(f)

    def f_grep(self):
        syms = self.p.symbols()
        if not syms:
            return None
        sym = self.r.choice(syms)
        return "grep:" + sym, self.grep_step(sym)

    def grep_step(self, pattern, under="src", style=None):
        hits = self.p.grep(pattern, under)
        if self.mode == "cc" and style != "bash":
            files = []
            for h in hits:
                f = h.split(":", 1)[0]
                if f not in files:
                    files.append(f)
            inp = {"pattern": pattern, "path": self.abs(under)}
            if self.c.chance(0.3):
                inp["glob"] = "*.py"
            out = (f"Found {len(files)} file{'s' if len(files) != 1 else ''}\n" + "\n".join(self.abs(f) for f in files)) if files else "No files found"
            return step("Grep", inp, out)
        return self.sh(f'grep -rn "{pattern}" {under}', "\n".join(hits), err=not hits)

    def f_git(self):
        k = self.r.choice(["status", "log", "diff", "branch"])
        if k == "status":
            return "git:status", self.sh("git status", self.git_status())
        if k == "log":
            n = self.c.rint(5, 12)
            return "git:log", self.sh(f"git log --oneline -n {n}", "\n".join(f"{h} {m}" for h, m in self.p.commits[:n]))
        if k == "diff":
            return "git:diff", self.sh("git diff", self.git_diff())
        return "git:branch", self.sh("git branch -a", "\n".join(
            [f"* {self.p.branch}"] + [f"  remotes/origin/{b}" for b in ["main", f"feature/{self.c.choice(MODULES)}", self.p.branch]]))

    def f_tests_pass(self):
        m = self.r.choice(self.p.test_mods)
        return "test:" + m, self.sh(f"python -m pytest tests/test_{m}.py -q", fill_noise(self.c, self.p.pytest(m, 0)))

    def f_pip(self):
        pk = self.c.choice(PY_PKGS)
        return "pip:" + pk, self.sh(f"pip show {pk}", self.pip_show(pk))

    def pip_show(self, pk):
        return (f"Name: {pk}\nVersion: {self.pyv[pk]}\nSummary: {self.r.choice(['HTTP for Humans', 'Fast, extensible toolkit', 'Data validation', 'Python library'])}\n"
                f"Home-page: https://github.com/{pk}/{pk}\nLicense: {self.r.choice(['MIT', 'Apache-2.0', 'BSD-3-Clause'])}\n"
                f"Location: {self.p.root}/.venv/lib/python3.11/site-packages\nRequires: {', '.join(self.c.sample(PY_PKGS, self.c.rint(0, 3)))}\nRequired-by: {self.p.name}")

    def f_find(self):
        ext = self.r.choice(["py", "md", "yaml", "toml"])
        hits = [f"./{f}" for f in self.p.files if f.endswith("." + ext)]
        return "find:" + ext, self.sh(f'find . -name "*.{ext}" -not -path "./.venv/*"', "\n".join(hits))

    def f_log(self):
        n = self.r.choice([20, 30, 50])
        lines = self.p.content("logs/app.log").rstrip("\n").split("\n")
        return "read:logs/app.log", self.sh(f"tail -n {n} logs/app.log", "\n".join(lines[-n:]))

    def f_edit(self):
        f = self.r.choice([x for x in self.p.files if x.startswith("src/") and not x.endswith("__init__.py")])
        lines = [ln for ln in self.p.content(f).split("\n") if len(ln.strip()) > 18 and "'" not in ln and "/" not in ln]
        if not lines:
            return None
        old = self.r.choice(lines)
        new = old.replace("None", "0", 1) if "None" in old else old.rstrip() + "  # noqa: E501"
        st = self.edit_step(f, old, new)
        self.p._cache[f] = self.p.content(f).replace(old, new, 1)
        return "edit:" + f + ":" + old, st

    def edit_step(self, f, old, new, short=None):
        short = self.short_ack if short is None else short
        if self.mode == "cc":
            if short:
                out = f"The file {self.abs(f)} has been updated successfully."
            else:
                lines = self.p.content(f).replace(old, new, 1).split("\n")
                idx = next((i for i, ln in enumerate(lines) if new.split("\n")[0] in ln), 0)
                lo = max(0, idx - 4)
                out = (f"The file {self.abs(f)} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n"
                       + numbered("\n".join(lines[lo: idx + 5]), lo + 1))
            return step("Edit", {"file_path": self.abs(f), "old_string": old.strip(), "new_string": new.strip()}, out)
        o, n = old.strip().replace("|", r"\|"), new.strip().replace("|", r"\|")
        return self.sh(f"sed -i 's|{o}|{n}|' {f}", "")

    def f_env(self):
        k = self.r.choice(["pyver", "which", "venv", "docker", "node", "uname"])
        out = {"pyver": f"Python 3.11.{self.c.rint(2, 9)}", "which": f"{self.p.root}/.venv/bin/python",
               "venv": f"{self.p.root}/.venv", "node": f"v{self.c.rint(18, 22)}.{self.c.rint(0, 12)}.{self.c.rint(0, 9)}",
               "docker": "CONTAINER ID   IMAGE            COMMAND                  STATUS          PORTS                    NAMES\n"
                         f"{self.c.hexid(12)}   postgres:16      \"docker-entrypoint.s…\"   Up {self.c.rint(2, 50)} minutes   0.0.0.0:5432->5432/tcp   {self.p.name}-db-1\n"
                         f"{self.c.hexid(12)}   redis:7-alpine   \"docker-entrypoint.s…\"   Up {self.c.rint(2, 50)} minutes   0.0.0.0:6379->6379/tcp   {self.p.name}-redis-1",
               "uname": f"Linux {self.c.choice(USERS)}-box 6.{self.c.rint(1, 8)}.0-{self.c.rint(10, 40)}-generic #1 SMP x86_64 GNU/Linux"}[k]
        cmd = {"pyver": "python --version", "which": "which python", "venv": "echo $VIRTUAL_ENV", "docker": "docker ps",
               "node": "node --version", "uname": "uname -a"}[k]
        return "env:" + k, self.sh(cmd, out)

    def f_wc(self):
        fs = [f for f in self.p.files if f.startswith("src/")]
        rows = [f"{len(self.p.content(f).split(chr(10))):>5} {f}" for f in fs]
        tot = sum(len(self.p.content(f).split("\n")) for f in fs)
        return "wc", self.sh(f"wc -l src/{self.p.pkg}/*.py", "\n".join(rows + [f"{tot:>5} total"]))

    def f_glob(self):
        pat = self.r.choice(["src/**/*.py", "tests/**/*.py", "**/*.md", "**/*.yaml", "**/*.toml"])
        import fnmatch  # stdlib, deterministic
        hits = [self.abs(f) for f in self.p.files if fnmatch.fnmatch(f, pat.replace("**/", "*")) or fnmatch.fnmatch(f, pat)]
        return "glob:" + pat, step("Glob", {"pattern": pat}, "\n".join(hits) if hits else "No files found")

    def f_write(self):
        name = f"scripts/{self.c.choice(VERBS)}_{plural(self.c.choice(NOUNS))}.py"
        body = Code(self.c).module(self.p.pkg, "scripts", None, 1, 2)
        return "write:" + name, step("Write", {"file_path": self.abs(name), "content": body}, f"File created successfully at: {self.abs(name)}")

    # ---- loop probes
    def _test_cmd(self, m):
        return self.r.choice([f"python -m pytest tests/test_{m}.py -q", f"pytest tests/test_{m}.py -q", f"pytest -q tests/test_{m}.py -x",
                              f"python -m pytest -q tests/test_{m}.py --no-header"])

    def stuck(self):
        c, p = self.c, self.p
        scen = c.choice(["pytest_same_failure", "missing_file", "service_down", "lint_errors", "edit_or_patch_rejected",
                         "push_rejected", "migrate_db_down", "port_in_use", "import_error"])
        if scen == "pytest_same_failure":
            m = self.r.choice(p.test_mods)
            return scen, self.sh_probe(self._test_cmd(m), p.pytest(m, c.rint(1, 3)), err=True), ["test:" + m]
        if scen == "missing_file":
            rel = f"src/{p.pkg}/{c.choice(NOUNS)}_{c.r.choice(['utils', 'helpers', 'client', 'types'])}.py"
            if self.mode == "cc":
                return scen, Probe("Read", {"file_path": self.abs(rel)}, const("<tool_use_error>File does not exist.</tool_use_error>"), True), []
            return scen, self.sh_probe(f"cat {rel}", stderr=f"cat: {rel}: No such file or directory", err=True), []
        if scen == "service_down":
            port = c.r.choice([8000, 8080, 5000, 3000, 8443])
            path = c.r.choice(["/health", "/healthz", "/api/v1/status", "/"])
            return scen, self.sh_probe(f"curl -sS http://localhost:{port}{path}",
                                       stderr=f"curl: (7) Failed to connect to localhost port {port} after @@MS@@ ms: Couldn't connect to server", err=True), []
        if scen == "lint_errors":
            rows = []
            for _ in range(c.rint(2, 9)):
                f = c.r.choice([x for x in p.files if x.endswith(".py")])
                code, msg = c.r.choice([("F401", "`{m}` imported but unused"), ("E501", "Line too long ({n} > 100)"), ("F841", "Local variable `{v}` is assigned to but never used"),
                                        ("B006", "Do not use mutable data structures for argument defaults"), ("UP007", "Use `X | Y` for type annotations")])
                rows.append(f"{f}:{c.rint(3, 200)}:{c.rint(1, 60)}: {code} " + msg.format(m=c.choice(STDLIB), n=c.rint(101, 160), v=c.choice(PARAMS)))
            return scen, self.sh_probe(c.r.choice(["ruff check src tests", "make lint", "ruff check ."]),
                                       "\n".join(rows) + f"\nFound {len(rows)} errors.", err=True), []
        if scen == "edit_or_patch_rejected":
            f = c.r.choice([x for x in p.files if x.startswith("src/") and not x.endswith("__init__.py")])
            if self.mode == "cc":
                old = f"    if {c.choice(PARAMS)} is None:\n        return {c.r.choice(['None', '[]', '{}'])}"
                return scen, Probe("Edit", {"file_path": self.abs(f), "old_string": old, "new_string": old.replace("return", "raise ValueError()  #")},
                                   const(f"<tool_use_error>String to replace not found in file.\nString: {old}</tool_use_error>"), True), []
            ln = c.rint(20, 140)
            return scen, self.sh_probe(c.r.choice(["git apply fix.patch", "git apply /tmp/fix.diff"]),
                                       stderr=f"error: patch failed: {f}:{ln}\nerror: {f}: patch does not apply", err=True), []
        if scen == "push_rejected":
            return scen, self.sh_probe(f"git push origin {p.branch}", stderr=(
                f"To github.com:{c.choice(ORGS).split()[0].lower()}/{p.name}.git\n ! [rejected]        {p.branch} -> {p.branch} (non-fast-forward)\n"
                f"error: failed to push some refs to 'github.com:{p.name}.git'\nhint: Updates were rejected because the tip of your current branch is behind\n"
                "hint: its remote counterpart. Integrate the remote changes (e.g.\nhint: 'git pull ...') before pushing again."), err=True), []
        if scen == "migrate_db_down":
            return scen, self.sh_probe("make migrate", stderr=(
                f"python -m {p.pkg}.cli migrate --env dev\nTraceback (most recent call last):\n  File \"{p.root}/src/{p.pkg}/cli.py\", line {c.rint(20, 90)}, in migrate\n"
                f"    engine.connect()\nsqlalchemy.exc.OperationalError: (psycopg2.OperationalError) connection to server at \"localhost\" (127.0.0.1), port 5432 failed: Connection refused\n"
                "\tIs the server running on that host and accepting TCP/IP connections?\n\nmake: *** [Makefile:12: migrate] Error 1"), err=True), []
        if scen == "port_in_use":
            return scen, self.sh_probe("docker compose up -d db", stderr=(
                f"[+] Running 1/2\n ✔ Network {p.name}_default  Created\n ⠿ Container {p.name}-db-1      Starting\n"
                f"Error response from daemon: driver failed programming external connectivity on endpoint {p.name}-db-1 ({c.hexid(12)}): "
                "Bind for 0.0.0.0:5432 failed: port is already allocated"), err=True), []
        mod = c.choice(THIRD_PARTY)
        return scen, self.sh_probe(f"python -m {p.pkg}.cli --help", stderr=(
            f"Traceback (most recent call last):\n  File \"<frozen runpy>\", line 198, in _run_module_as_main\n  File \"{p.root}/src/{p.pkg}/cli.py\", line 7, in <module>\n"
            f"    import {mod}\nModuleNotFoundError: No module named '{mod}'"), err=True), []

    def state_probe(self):
        c, p = self.c, self.p
        scen = c.choice(["git_status", "read_config", "list_package", "rerun_failing_test", "read_readme", "git_log", "grep_todo", "show_diff"])
        if scen == "git_status":
            return scen, self.sh_probe("git status", self.git_status()), ["git:status"]
        if scen == "read_config":
            return scen, self.read_probe("config/settings.yaml"), ["read:config/settings.yaml"]
        if scen == "read_readme":
            return scen, self.read_probe("README.md"), ["read:README.md"]
        if scen == "list_package":
            d = f"src/{p.pkg}"
            return scen, self.sh_probe(f"ls -la {d}", p.ls(d)), ["ls:" + d]
        if scen == "rerun_failing_test":
            m = self.r.choice(p.test_mods)
            return scen, self.sh_probe(self._test_cmd(m), p.pytest(m, c.rint(1, 2)), err=True), ["test:" + m]
        if scen == "git_log":
            return scen, self.sh_probe("git log --oneline -n 5", "\n".join(f"{h} {m}" for h, m in p.commits[:5])), ["git:log"]
        if scen == "show_diff":
            return scen, self.sh_probe("git diff --stat", "\n".join(f" {f} | {c.rint(1, 40)} {'+' * c.rint(1, 9)}{'-' * c.rint(0, 5)}" for f in (p.modified or p.files[1:3]))
                                       + f"\n {len(p.modified or p.files[1:3])} files changed"), ["git:diff"]
        s = self.grep_step("TODO")
        return scen, Probe(s["tool"], s["input"], const(s["output"]), s["is_error"]), ["grep:TODO"]

    def norm_probe(self):
        c, p = self.c, self.p
        scen = c.choice(["ls_dir", "grep_symbol", "read_file", "rerun_tests", "find_missing_config"])
        if scen == "read_file" and self.mode == "cc":
            rel = c.r.choice(p.files)
            pr = self.read_probe(rel)
            a = self.abs(rel)
            head, tail = a.rsplit("/", 1)
            vs = [{"file_path": head + "/./" + tail}, {"file_path": a.replace("/", "//", 2).replace("//", "/", 1)},
                  {"file_path": a, "offset": 1, "limit": 2000}, {"limit": 2000, "file_path": a}, {"file_path": " " + a}, {"file_path": a + " "}]
            return scen, pr, vs, ["read:" + rel]
        if scen == "grep_symbol" and self.mode == "cc":
            sym = f"{c.choice(VERBS)}_{plural(c.choice(NOUNS))}_v2"
            pr = Probe("Grep", {"pattern": sym, "path": self.abs("src")}, const("No files found"))
            vs = [{"path": self.abs("src"), "pattern": sym}, {"pattern": sym, "path": self.abs("src") + "/"},
                  {"pattern": sym, "path": self.abs("src") + "/."}, {"pattern": f"{sym}", "path": "./src"}, {"path": self.abs("src") + "/", "pattern": sym}]
            return scen, pr, vs, ["grep:" + sym]
        if scen == "ls_dir":
            d = c.r.choice([f"src/{p.pkg}", "tests", "config", "docs"])
            cmd = f"ls -la {d}"
            pr = self.sh_probe(cmd, p.ls(d))
            keys = ["ls:" + d]
        elif scen == "grep_symbol":
            sym = f"{c.choice(VERBS)}_{plural(c.choice(NOUNS))}_v2"
            cmd = f'grep -rn "{sym}" src/'
            pr = self.sh_probe(cmd, "", err=True)
            keys = ["grep:" + sym]
        elif scen == "read_file":
            rel = c.r.choice([f for f in p.files if "/" in f])
            cmd = f"cat {rel}"
            pr = self.sh_probe(cmd, p.content(rel).rstrip("\n"))
            keys = ["read:" + rel]
        elif scen == "rerun_tests":
            m = self.r.choice(p.test_mods)
            cmd = f"python -m pytest tests/test_{m}.py -q"
            pr = self.sh_probe(cmd, p.pytest(m, c.rint(1, 3)), err=True)
            keys = ["test:" + m]
        else:
            cmd = f'find . -name "{c.r.choice(["settings.local.yaml", ".env.example", "alembic.ini", "docker-compose.override.yml"])}"'
            pr = self.sh_probe(cmd, "")
            keys = []
        vs = [self.inp(v, pr.inp.get("description")) for v in cmd_variants(c, cmd)]
        return scen, pr, vs, keys

    def paraphrase(self):
        c, p = self.c, self.p
        scen = c.choice(["read_file_many_ways", "find_missing_definition", "check_port", "package_version", "what_changed"])
        k = self.rep(3, 6)
        steps = []
        if scen == "read_file_many_ways":
            rel = c.r.choice([f for f in p.files if f.endswith((".py", ".yaml", ".md")) and f.split("/")[-1][:-3] not in p.big])
            txt = p.content(rel).rstrip("\n")
            cmds = [f"cat {rel}", f"head -n 400 {rel}", f"sed -n '1,400p' {rel}", f"awk '{{print}}' {rel}",
                    f"python3 -c \"print(open('{rel}').read(), end='')\"", f"tail -n +1 {rel}", f"less -FX {rel}"]
            opts = [("sh", x) for x in cmds]
            if self.mode == "cc":
                opts += [("read", None), ("read_lim", None)]
            for kind, cmd in c.r.sample(opts, min(k, len(opts))):
                if kind == "sh":
                    steps.append(self.sh(cmd, txt))
                elif kind == "read":
                    steps.append(self.read(rel))
                else:
                    steps.append(step("Read", {"file_path": self.abs(rel), "offset": 1, "limit": c.r.choice([400, 500, 1000])}, numbered(txt)))
            return scen, steps, ["read:" + rel]
        if scen == "find_missing_definition":
            fn = f"{c.choice(VERBS)}_{c.choice(NOUNS)}_{c.r.choice(['async', 'batch', 'legacy', 'v2', 'safe'])}"
            cmds = [f'grep -rn "def {fn}" src/', f"rg -n 'def {fn}'", f'git grep -n "def {fn}"', f'grep -rn "{fn}(" --include="*.py" .',
                    f'find . -name "*.py" -exec grep -Hn "def {fn}" {{}} +', f"ag 'def {fn}' src", f"grep -R --line-number \"{fn}\" src tests"]
            opts = [("sh", x) for x in cmds]
            if self.mode == "cc":
                opts += [("grep", {"pattern": f"def {fn}", "path": self.abs("src")}), ("grep", {"pattern": f"{fn}\\(", "glob": "**/*.py"}),
                         ("grep", {"pattern": fn, "path": self.abs(".")})]
            for kind, x in c.r.sample(opts, min(k, len(opts))):
                steps.append(self.sh(x, "", err=True) if kind == "sh" else step("Grep", x, "No files found"))
            return scen, steps, []
        if scen == "check_port":
            port = c.r.choice([8000, 8080, 5432, 6379, 9000])
            cmds = [f"lsof -i :{port}", f"ss -ltnp | grep :{port}", f"netstat -tlnp | grep {port}", f"fuser {port}/tcp",
                    f"lsof -nP -iTCP:{port} -sTCP:LISTEN", f"ss -tulpn 'sport = :{port}'", f"nc -zv localhost {port}"]
            for cmd in c.r.sample(cmds, min(k, len(cmds))):
                out = f"nc: connect to localhost port {port} (tcp) failed: Connection refused" if cmd.startswith("nc") else ""
                if cmd.startswith("ss -tulpn"):
                    out = "Netid State  Recv-Q Send-Q Local Address:Port Peer Address:PortProcess"
                steps.append(self.sh(cmd, "", out, err=True))
            return scen, steps, []
        if scen == "package_version":
            pk = c.choice(PY_PKGS)
            v = self.pyv[pk]
            variants = [(f"pip show {pk}", self.pip_show(pk)), (f"pip list | grep -i {pk}", f"{pk:<20} {v}"),
                        (f"python -c \"import {pk}; print({pk}.__version__)\"", v), (f"pip freeze | grep -i {pk}", f"{pk}=={v}"),
                        (f"python -m pip show {pk} | head -2", f"Name: {pk}\nVersion: {v}"),
                        (f"uv pip show {pk}", f"Name: {pk}\nVersion: {v}\nLocation: {p.root}/.venv/lib/python3.11/site-packages"),
                        (f"python -c \"import importlib.metadata as m; print(m.version('{pk}'))\"", v)]
            for cmd, out in c.r.sample(variants, min(k, len(variants))):
                steps.append(self.sh(cmd, out))
            return scen, steps, ["pip:" + pk]
        d = self.git_diff()
        cmds = ["git diff", "git diff HEAD", "git --no-pager diff", "git diff --no-color", "git diff -- .", "git diff --patch", "git -c core.pager=cat diff"]
        for cmd in c.r.sample(cmds, min(k, len(cmds))):
            steps.append(self.sh(cmd, d))
        return scen, steps, ["git:diff"]

    def same_result(self):
        c, p = self.c, self.p
        scen = c.choice(["permission_denied", "module_not_found", "connection_refused", "edit_string_not_found", "disk_full"])
        if scen == "edit_string_not_found" and self.mode != "cc":
            scen = "disk_full"
        k = self.rep(3, 7)
        steps = []
        if scen == "permission_denied":
            t = c.r.choice(["/etc/app/secrets.env", "/root/.aws/credentials", "/var/lib/postgresql/data/pg_hba.conf", f"/opt/{p.name}/keys/signing.pem"])
            d = t.rsplit("/", 1)[0]
            atts = [(f"cat {t}", f"cat: {t}: Permission denied"), (f"head -n 20 {t}", f"head: cannot open '{t}' for reading: Permission denied"),
                    (f"ls -la {d}", f"ls: cannot open directory '{d}': Permission denied"), (f"cp {t} /tmp/", f"cp: cannot open '{t}' for reading: Permission denied"),
                    (f"grep -i key {t}", f"grep: {t}: Permission denied"), (f"less {t}", f"{t}: Permission denied"),
                    (f"python3 -c \"print(open('{t}').read())\"", f"Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nPermissionError: [Errno 13] Permission denied: '{t}'"),
                    (f"tail {t}", f"tail: cannot open '{t}' for reading: Permission denied"), (f"stat {t} && cat {t}", f"cat: {t}: Permission denied")]
            for cmd, e in c.r.sample(atts, min(k, len(atts))):
                steps.append(self.sh(cmd, "", e, err=True))
            return scen, steps, []
        if scen == "module_not_found":
            mod = c.choice(THIRD_PARTY)
            tb = f"ModuleNotFoundError: No module named '{mod}'"
            atts = [(f"python -m {p.pkg}.cli", f"Traceback (most recent call last):\n  File \"{p.root}/src/{p.pkg}/cli.py\", line 5, in <module>\n    import {mod}\n{tb}"),
                    (f"python src/{p.pkg}/cli.py", f"Traceback (most recent call last):\n  File \"{p.root}/src/{p.pkg}/cli.py\", line 5, in <module>\n    import {mod}\n{tb}"),
                    (f"PYTHONPATH=src python -m {p.pkg}.cli", f"Traceback (most recent call last):\n  File \"{p.root}/src/{p.pkg}/cli.py\", line 5, in <module>\n    import {mod}\n{tb}"),
                    ("python -m pytest -q", f"ImportError while loading conftest '{p.root}/tests/conftest.py'.\ntests/conftest.py:3: in <module>\n    from {p.pkg} import cli\nsrc/{p.pkg}/cli.py:5: in <module>\n    import {mod}\nE   {tb}"),
                    (f"python -c 'import {p.pkg}.cli'", f"Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n{tb}"),
                    (f"python3 -m {p.pkg}", f"/usr/bin/python3: Error while finding module specification for '{p.pkg}.__main__' ({tb})"),
                    (f"{p.name} --help", f"Traceback (most recent call last):\n  File \"{p.root}/.venv/bin/{p.name}\", line 5, in <module>\n    from {p.pkg}.cli import main\n{tb}")]
            for cmd, e in c.r.sample(atts, min(k, len(atts))):
                steps.append(self.sh(cmd, "", e, err=True))
            return scen, steps, []
        if scen == "connection_refused":
            port = c.r.choice([8000, 8080, 5000])
            atts = [(f"curl http://localhost:{port}/health", f"curl: (7) Failed to connect to localhost port {port} after 0 ms: Couldn't connect to server"),
                    (f"curl -v 127.0.0.1:{port}/api/v1/status", f"*   Trying 127.0.0.1:{port}...\n* connect to 127.0.0.1 port {port} failed: Connection refused\ncurl: (7) Failed to connect to 127.0.0.1 port {port} after 0 ms: Couldn't connect to server"),
                    (f"wget -qO- http://localhost:{port}/", ""),
                    (f"http :{port}/health", f"http: error: ConnectionError: HTTPConnectionPool(host='localhost', port={port}): Max retries exceeded with url: /health (Caused by NewConnectionError: [Errno 111] Connection refused)"),
                    (f"python -c \"import urllib.request as u; print(u.urlopen('http://localhost:{port}/').status)\"", "urllib.error.URLError: <urlopen error [Errno 111] Connection refused>"),
                    (f"nc -zv localhost {port}", f"nc: connect to localhost port {port} (tcp) failed: Connection refused"),
                    (f"curl -sS http://0.0.0.0:{port}/healthz", f"curl: (7) Failed to connect to 0.0.0.0 port {port} after 0 ms: Couldn't connect to server")]
            for cmd, e in c.r.sample(atts, min(k, len(atts))):
                steps.append(self.sh(cmd, "", e, err=True))
            return scen, steps, []
        if scen == "edit_string_not_found":
            f = c.r.choice([x for x in p.files if x.startswith("src/") and not x.endswith("__init__.py")])
            fn = f"{c.choice(VERBS)}_{c.choice(NOUNS)}"
            olds = [f"def {fn}(items):", f"def {fn}(items, limit=None):", f"def {fn}(self, items):", f"    def {fn}(items):",
                    f"def {fn}(items: list):", f"def {fn}(\n    items,", f"async def {fn}(items):"]
            for old in c.r.sample(olds, min(k, len(olds))):
                steps.append(step("Edit", {"file_path": self.abs(f), "old_string": old, "new_string": old.replace("items", "items, *, strict=False")},
                                  f"<tool_use_error>String to replace not found in file.\nString: {old}</tool_use_error>", True))
            return scen, steps, []
        atts = [("pip install -r requirements.txt", "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device"),
                ("npm ci", "npm ERR! code ENOSPC\nnpm ERR! syscall write\nnpm ERR! errno -28\nnpm ERR! nospc ENOSPC: no space left on device, write"),
                (f"docker build -t {p.name}:dev .", "ERROR: failed to solve: failed to copy files: write /var/lib/docker/tmp/buildkit-mount: no space left on device"),
                ("cp data/dump.sql /tmp/", "cp: error writing '/tmp/dump.sql': No space left on device"),
                (f"tar czf /tmp/{p.name}.tgz .", f"tar: /tmp/{p.name}.tgz: Wrote only 4096 of 10240 bytes\ntar: Error is not recoverable: exiting now"),
                ("python -m pip cache purge && pip install -e .", "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device"),
                ("git clone --depth 1 ../shared-lib vendor/shared-lib", "fatal: write error: No space left on device")]
        for cmd, e in c.r.sample(atts, min(k, len(atts))):
            steps.append(self.sh(cmd, "", e, err=True))
        return "disk_full", steps, []

    def alt_probes(self, m):
        c, p = self.c, self.p
        scen = c.choice(["test_then_read", "read_two_files", "status_then_diff"])
        if scen == "test_then_read":
            mm = self.r.choice(p.test_mods)
            probes = [self.sh_probe(self._test_cmd(mm), p.pytest(mm, c.rint(1, 2)), err=True), self.read_probe(f"tests/test_{mm}.py"),
                      self.read_probe(f"src/{p.pkg}/{mm}.py")]
            return scen, probes[:m], ["test:" + mm, f"read:tests/test_{mm}.py", f"read:src/{p.pkg}/{mm}.py"]
        if scen == "read_two_files":
            fs = c.r.sample([f for f in p.files if f.endswith((".py", ".yaml", ".toml"))], m)
            return scen, [self.read_probe(f) for f in fs], ["read:" + f for f in fs]
        probes = [self.sh_probe("git status", self.git_status()), self.sh_probe("git diff", self.git_diff()),
                  self.sh_probe("git log --oneline -n 3", "\n".join(f"{h} {x}" for h, x in p.commits[:3]))]
        return scen, probes[:m], ["git:status", "git:diff", "git:log"]

    # ---- hard negatives
    def neg_pagination(self):
        c, p = self.c, self.p
        org = c.choice(ORGS).split()[0].lower()
        pages = c.rint(3, 7)
        steps = []
        if c.chance(0.5):
            per = c.r.choice([20, 30, 50])
            num = c.rint(200, 4000)
            for pg in range(1, pages + 1):
                n = per if pg < pages else c.rint(0, per - 1)
                items = []
                for _ in range(min(n, 8)):
                    num -= c.rint(1, 9)
                    items.append({"number": num, "title": f"{c.choice(VERBS).capitalize()} {c.choice(NOUNS)} {c.r.choice(['fails on', 'ignores', 'crashes with', 'is slow for'])} {c.choice(ATTRS)}",
                                  "state": "open", "user": {"login": c.choice(USERS)}, "labels": [{"name": x} for x in c.r.sample(["bug", "enhancement", "good first issue", "needs-triage", "p1", "docs"], c.rint(0, 2))],
                                  "comments": c.rint(0, 30), "created_at": c.ts()})
                out = json.dumps(items, indent=2) + (f"\n... ({n - 8} more)" if n > 8 else "")
                steps.append(self.sh(f"gh api 'repos/{org}/{p.name}/issues?state=open&per_page={per}&page={pg}'", out, desc=f"Fetch open issues page {pg}"))
            return "gh_issues_pages", steps
        bucket = f"{org}-{p.name}-{c.r.choice(['artifacts', 'backups', 'exports'])}"
        token = None
        for pg in range(pages):
            keys = [{"Key": f"{c.choice(MODULES)}/{c.rint(2021, 2024)}/{c.hexid(6)}.{c.r.choice(['parquet', 'json.gz', 'csv'])}", "Size": c.rint(1000, 9_000_000),
                     "LastModified": c.ts()} for _ in range(c.rint(4, 9))]
            nxt = c.hexid(24) if pg < pages - 1 else None
            body = {"Contents": keys, "KeyCount": len(keys)}
            if nxt:
                body["NextToken"] = nxt
            cmd = f"aws s3api list-objects-v2 --bucket {bucket} --max-items 100" + (f" --starting-token {token}" if token else "")
            steps.append(self.sh(cmd, json.dumps(body, indent=2)))
            token = nxt
        return "s3_list_pages", steps

    def neg_chunked_reading(self):
        c, p = self.c, self.p
        rel = f"src/{p.pkg}/{c.r.choice(sorted(p.big))}.py"
        lines = p.content(rel).split("\n")
        fits = [x for x in (40, 50, 60, 80, 100, 120, 150, 200) if x * 3 <= len(lines)]
        size = c.r.choice(fits[-4:] if fits else [max(10, len(lines) // 3)])
        steps = []
        off = 1
        while off <= len(lines) and len(steps) < 7:
            if self.mode == "cc" or c.chance(0.2):
                steps.append(self.read(rel, off, size) if self.mode == "cc" else
                             self.sh(f"head -n {off + size - 1} {rel} | tail -n {size}", "\n".join(lines[off - 1: off - 1 + size])))
            else:
                steps.append(self.read(rel, off, size))
            off += size
        return "chunked_" + ("read_offset" if self.mode == "cc" else "sed_ranges"), steps

    def neg_polling(self):
        c, p = self.c, self.p
        kind = c.r.choice(["pods", "ci_run", "compose"])
        polls = statuses_converging(c, {"pods": ["Pending", "ContainerCreating", "Running"],
                                        "ci_run": ["queued", "in_progress", "completed"],
                                        "compose": ["starting", "health: starting", "healthy"]}[kind])
        steps = []
        if kind == "pods":
            ns = c.choice(NAMESPACES)
            pods = [f"{p.name}-{c.r.choice(['api', 'worker', 'web'])}-{c.hexid(9)}-{c.hexid(5)}" for _ in range(c.rint(1, 3))]
            cmd = c.r.choice([f"kubectl get pods -n {ns}", f"sleep 10 && kubectl get pods -n {ns}", f"kubectl get pods -n {ns} -l app={p.name}"])
            for i, st in enumerate(polls):
                ready = "1/1" if st == "Running" else "0/1"
                rows = ["NAME" + " " * 36 + "READY   STATUS              RESTARTS   AGE"]
                rows += [f"{pod:<40}{ready:<8}{st:<20}{0:<11}{5 * (i + 1) + c.rint(0, 4)}s" for pod in pods]
                steps.append(self.sh(cmd, "\n".join(rows)))
            return "kubectl_pods_converge", steps
        if kind == "ci_run":
            rid = c.rint(6_000_000_000, 9_000_000_000)
            cmd = f"gh run view {rid}"
            for i, st in enumerate(polls):
                concl = c.r.choice(["success", "success", "failure"]) if st == "completed" else ""
                jobs = "\n".join(f"{'✓' if st == 'completed' else '*'} test ({v}) in {c.rint(5, 90) * (i + 1)}s" for v in ["3.10", "3.11"])
                steps.append(self.sh(cmd, f"{'✓' if concl == 'success' else ('X' if concl else '*')} {p.branch} ci · {rid}\nTriggered via push about {i + 1} minutes ago\n\nSTATUS: {st} {concl}\n\nJOBS\n{jobs}"))
            return "gh_run_converge", steps
        cmd = "docker compose ps"
        for i, st in enumerate(polls):
            steps.append(self.sh(cmd, f"NAME{' ' * 18}IMAGE          STATUS\n{p.name}-db-1{' ' * 5}postgres:16    Up {3 * (i + 1)} seconds ({st})"))
        return "compose_health_converge", steps

    def neg_many_files(self):
        c, p = self.c, self.p
        fs = c.r.sample([f for f in p.files if f.endswith(".py")], min(len([f for f in p.files if f.endswith(".py")]), c.rint(4, 9)))
        self.reserve([], ["read:" + f for f in fs])
        return "read_many_files" + ("_shared_license" if p.license else ""), [self.read(f) for f in fs]

    def neg_test_fix(self):
        c, p = self.c, self.p
        m = self.r.choice(p.test_mods)
        n = c.rint(3, 6)
        cmd = self._test_cmd(m)
        steps = [self.sh(cmd, fill_noise(c, p.pytest(m, n)), err=True)]
        if c.chance(0.5):
            steps.append(self.read(f"src/{p.pkg}/{m}.py"))
        rel = f"src/{p.pkg}/{m}.py"
        used = set()
        while n > 0:
            n = max(0, n - c.rint(1, 2))
            lines = [ln for ln in p.content(rel).split("\n") if len(ln.strip()) > 14 and ln not in used and "'" not in ln and "/" not in ln]
            old = c.r.choice(lines)
            used.add(old)
            new = old.replace("None", "0") if "None" in old else old.rstrip() + "  # fix"
            steps.append(self.edit_step(rel, old, new))
            p._cache[rel] = p.content(rel).replace(old, new, 1)
            steps.append(self.sh(cmd, fill_noise(c, p.pytest(m, n)), err=n > 0))
        return "test_fix_shrinking_failures", steps

    def neg_different_entities(self):
        c, p = self.c, self.p
        kind = c.r.choice(["pip_show", "git_log_per_file", "describe_pods", "dig_hosts"])
        steps = []
        if kind == "pip_show":
            for pk in c.sample(PY_PKGS, c.rint(3, 7)):
                steps.append(self.sh(f"pip show {pk}", self.pip_show(pk)))
                self.reserve([], ["pip:" + pk])
        elif kind == "git_log_per_file":
            for f in c.r.sample(p.files[:8], c.rint(3, 6)):
                steps.append(self.sh(f"git log --oneline -n 3 -- {f}", "\n".join(f"{c.hexid(7)} {p._commit_msg()}" for _ in range(c.rint(1, 3)))))
        elif kind == "describe_pods":
            ns = c.choice(NAMESPACES)
            comps = c.allowed(["api", "worker", "web", "scheduler", "migrations", "redis", "nginx"])
            for comp in c.r.sample(comps, min(c.rint(3, 6), len(comps))):
                pod = f"{p.name}-{comp}-{c.hexid(9)}-{c.hexid(5)}"
                steps.append(self.sh(f"kubectl describe pod {pod} -n {ns}",
                                     f"Name:         {pod}\nNamespace:    {ns}\nNode:         ip-10-0-{c.rint(1, 250)}-{c.rint(1, 250)}.ec2.internal\n"
                                     f"Status:       Running\nIP:           10.1.{c.rint(0, 255)}.{c.rint(0, 255)}\nContainers:\n  {comp}:\n    Image:   registry.local/{p.name}-{comp}:{c.hexid(7)}\n"
                                     f"    Restart Count:  {c.rint(0, 4)}\n    Limits:\n      memory:  {c.r.choice([256, 512, 1024])}Mi\nEvents:  <none>"))
        else:
            for host in c.r.sample([f"{x}.{p.name}.internal" for x in ["api", "db", "cache", "queue", "auth", "search", "metrics"]], c.rint(3, 6)):
                steps.append(self.sh(f"dig +short {host}", "\n".join(f"10.{c.rint(0, 9)}.{c.rint(0, 255)}.{c.rint(1, 254)}" for _ in range(c.rint(1, 3)))))
        return "different_entities:" + kind, steps

    def neg_one_retry(self):
        c, p = self.c, self.p
        kind = c.r.choice(["pip_timeout", "git_fetch_dns", "flaky_test", "rerun_confirm"])
        if kind == "pip_timeout":
            cmd = "pip install -r requirements.txt"
            return "one_retry:" + kind, [
                self.sh(cmd, "Collecting requests>=2.31", "ERROR: Exception:\npip._vendor.urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='files.pythonhosted.org', port=443): Read timed out.", err=True),
                self.sh(cmd, "\n".join(f"Requirement already satisfied: {pk} in ./.venv/lib/python3.11/site-packages ({self.pyv[pk]})" for pk in c.sample(PY_PKGS, 5))
                        + f"\nSuccessfully installed {' '.join(f'{pk}-{self.pyv[pk]}' for pk in c.sample(PY_PKGS, 2))}")]
        if kind == "git_fetch_dns":
            return "one_retry:" + kind, [
                self.sh("git fetch origin", "", "ssh: Could not resolve hostname github.com: Temporary failure in name resolution\nfatal: Could not read from remote repository.", err=True),
                self.sh("git fetch origin", "", f"From github.com:{p.name}\n   {c.hexid(7)}..{c.hexid(7)}  main       -> origin/main\n * [new branch]      {p.branch} -> origin/{p.branch}")]
        m = self.r.choice(p.test_mods)
        cmd = self._test_cmd(m)
        if kind == "flaky_test":
            return "one_retry:" + kind, [self.sh(cmd, fill_noise(c, p.pytest(m, 1)), err=True), self.sh(cmd, fill_noise(c, p.pytest(m, 0)))]
        return "one_retry:" + kind, [self.sh(cmd, fill_noise(c, p.pytest(m, 0))), self.sh(cmd, fill_noise(c, p.pytest(m, 0)))]

    def neg_batch_edits(self):
        c, p = self.c, self.p
        fs = c.r.sample([f for f in p.files if f.startswith("src/") and not f.endswith("__init__.py")],
                        min(c.rint(3, 8), len([f for f in p.files if f.startswith("src/")]) - 1))
        old_mod = c.choice(THIRD_PARTY)
        new_mod = c.r.choice(c.allowed(["httpx", "orjson", "structlog", "pydantic.v1", "tenacity"]) or ["structlog"])
        steps = []
        for f in fs:
            if self.mode == "cc" and c.chance(0.2):
                steps.append(step("Write", {"file_path": self.abs(f), "content": p.content(f).replace("import logging", "import logging  # noqa")},
                                  f"The file {self.abs(f)} has been updated successfully."))
            else:
                old = f"import {old_mod}"
                new = f"import {new_mod} as {old_mod}"
                steps.append(self.edit_step(f, old, new, short=True))
        return "batch_edit_imports", steps


def statuses_converging(c: Ctx, seq):
    """Each status is observed 1 or 2 times (so status changes at least every 2 polls); final one 1-2 times."""
    out = []
    for s in seq:
        out += [s] * c.r.choice([1, 1, 2])
    return out


# --------------------------------------------------------------------------- web world
HOWTO_PHRASINGS = [
    "how to {task} in {tech}", "{tech} {kw}", "{kw} {tech} example", "best way to {task} with {tech}",
    "{tech}: how do I {task}?", "{task} using {tech}", "{kw} in {tech} tutorial", "recommended approach to {task} ({tech})",
    "{tech} docs {kw}", "{tech} {task} stackoverflow",
]
FACT_PHRASINGS = {
    "population": ["population of {s}", "how many people live in {s}", "{s} population latest estimate", "{s} number of inhabitants",
                   "what is the current population of {s}", "{s} metro population 2024", "{s} census population"],
    "ceo": ["who is the CEO of {s}", "{s} chief executive officer", "current {s} CEO name", "{s} leadership team CEO", "who runs {s}",
            "{s} CEO 2024", "name of {s}'s chief executive"],
    "release": ["{s} release date", "when was {s} released", "{s} launch date", "{s} general availability date", "what date did {s} come out",
                "{s} GA release day", "{s} first stable release"],
    "height": ["how tall is {s}", "height of {s}", "{s} elevation in meters", "{s} height feet and meters", "what is the height of {s}",
               "{s} altitude", "{s} total height"],
}
WALLS = [
    ("login", "Sign in to continue\n\nYou need to be signed in to view this page.\n\nEmail address\n[                ]\nPassword\n[                ]\n[ Sign in ]\n\nForgot your password? · New here? Create an account\n\n© {year} {site} · Privacy · Terms"),
    ("cloudflare", "Just a moment...\n\nChecking if the site connection is secure\n{site} needs to review the security of your connection before proceeding.\n\nEnable JavaScript and cookies to continue\nRay ID: {ray}\nPerformance & security by Cloudflare"),
    ("paywall", "Subscribe to keep reading\n\nYou've reached your limit of free articles this month.\nSubscribe now for unlimited access to {site}.\n\n[ See plans ]   Already a subscriber? Log in"),
    ("forbidden", "403 Forbidden\n\nAccess to this resource on the server is denied!\n\nnginx"),
    ("captcha", "Our systems have detected unusual traffic from your computer network.\nThis page checks to see if it's really you sending the requests, and not a robot.\n\n[ I'm not a robot ]\n\nIP address: {ip}\nTime: {ts}\nURL: (redacted)"),
]


class WebWorld(World):
    LOOPS = LOOP_KINDS
    NEGS = ("pagination", "different_entities", "one_retry", "near_miss", "normal", "polling")

    def __init__(self, c: Ctx, mode="plain"):
        super().__init__(c)
        self.mode = mode
        self.style = "claude_code" if mode == "cc" else "web_search"
        self.json_results = c.chance(0.4)
        self.timing = c.chance(0.5)
        self._results = {}
        self._pages = {}
        self.fetch_tool = "WebFetch" if mode == "cc" else c.r.choice(["fetch_url", "open_url", "web_fetch"])

    # ---- intents
    def intent(self):
        c = self.c
        if c.chance(0.55):
            task, kw, tech = c.choice(HOWTO_INTENTS)
            return ("howto", task, kw, tech), [p.format(task=task, kw=kw, tech=tech) for p in c.pool(HOWTO_PHRASINGS)]
        kind, s = c.choice(FACT_INTENTS)
        return ("fact", kind, s), [p.format(s=s) for p in c.pool(FACT_PHRASINGS[kind])]

    def results(self, key):
        if key in self._results:
            return self._results[key]
        c = self.c
        res = []
        if key[0] == "howto":
            task, kw, tech = key[1], key[2], key[3]
            for _ in range(c.rint(5, 8)):
                site = c.choice(SITES)
                title = c.r.choice([f"{task.capitalize()} in {tech}", f"{tech} {kw}: a practical guide", f"How I {task} with {tech} (and what broke)",
                                    f"{kw.title()} - {tech} documentation", f"Stop doing this when you {task}", f"{tech} tips: {kw}", f"Q: {task} in {tech}?"])
                res.append({"title": f"{title} | {site}", "url": f"https://{site}/{_slug(title)[:60]}-{c.rint(100, 99999)}",
                            "snippet": prose(c, [kw, tech], 2)[:230]})
        elif key[0] == "fact":
            kind, s = key[1], key[2]
            val = {"population": f"{c.rint(300, 9000) * 1000:,}", "ceo": f"{c.choice(FIRST)} {c.choice(LAST)}",
                   "release": f"{c.r.choice(MONTHS)} {c.rint(1, 28)}, {c.rint(2019, 2024)}", "height": f"{c.rint(300, 5900)} m"}[kind]
            for _ in range(c.rint(5, 8)):
                site = c.choice(SITES)
                title = c.r.choice([f"{s} - Wikipedia", f"{s}: facts and figures", f"{s} {kind} ({c.rint(2020, 2024)})", f"Everything about {s}", f"{s} | Overview"])
                res.append({"title": title, "url": f"https://{site}/{_slug(s)}-{_slug(kind)}-{c.rint(1, 999)}",
                            "snippet": c.r.choice([f"The {kind} of {s} is {val} according to recent figures.", f"{s} — {kind}: {val}. Updated {c.r.choice(MONTHS)}.",
                                                   f"As of {c.rint(2021, 2024)}, {s}'s {kind} was reported as {val}.", f"... {val} ... {prose(c, [s], 1)[:120]}"])})
        else:
            for _ in range(c.rint(4, 7)):
                site = c.choice(SITES)
                title = f"{key[1].capitalize()} - {c.r.choice(['Guide', 'Overview', 'Notes', 'Discussion', 'Reference'])}"
                res.append({"title": f"{title} | {site}", "url": f"https://{site}/{_slug(key[1])}-{c.rint(1, 9999)}", "snippet": prose(c, [key[1]], 2)[:200]})
        self._results[key] = res
        return res

    def render_results(self, q, res):
        c = self.c
        if self.mode == "cc":
            links = json.dumps([{"title": r["title"], "url": r["url"]} for r in res])
            return f'Web search results for query: "{q}"\n\nLinks: {links}\n\n' + " ".join(r["snippet"] for r in res[:3])
        if self.json_results:
            return json.dumps({"query": q, "results": res}, indent=2)
        head = f"About {self.c.rint(2, 900) * 1000 + self.c.rint(0, 999):,} results (@@DUR@@)\n\n" if self.timing else ""
        return head + "\n\n".join(f"{i}. {r['title']}\n   {r['url']}\n   {r['snippet']}" for i, r in enumerate(res, 1))

    def search(self, q, res):
        return step("WebSearch" if self.mode == "cc" else "web_search", {"query": q}, fill_noise(self.c, self.render_results(q, res)))

    def search_probe(self, q, res):
        return Probe("WebSearch" if self.mode == "cc" else "web_search", {"query": q}, noisy(self.c, self.render_results(q, res)))

    def near_same(self, res):
        res = [dict(r) for r in res]
        c = self.c
        op = c.r.choice(["same", "swap", "drop_last", "snippet"])
        if op == "swap" and len(res) > 2:
            i = c.rint(0, len(res) - 2)
            res[i], res[i + 1] = res[i + 1], res[i]
        elif op == "drop_last" and len(res) > 4:
            res = res[:-1]
        elif op == "snippet":
            i = c.rint(0, len(res) - 1)
            res[i]["snippet"] = res[i]["snippet"][: max(40, len(res[i]["snippet"]) // 2)] + " ..."
        return res

    def page(self, url, topic):
        if url in self._pages:
            return self._pages[url]
        c = self.c
        paras = [prose(c, [topic] + c.sample(TECH, 2), c.rint(3, 7)) for _ in range(c.rint(3, 9))]
        txt = f"{topic.capitalize()}\n{'=' * len(topic)}\n\nBy {c.choice(FIRST)} {c.choice(LAST)} · {c.r.choice(MONTHS)} {c.rint(1, 28)}, {c.rint(2019, 2024)} · {c.rint(3, 15)} min read\n\n" + "\n\n".join(paras)
        if c.chance(0.4):
            txt += "\n\nComments (" + str(c.rint(1, 90)) + ")\n" + "\n".join(f"{c.choice(USERS)}: {prose(c, [topic], 1)}" for _ in range(c.rint(1, 4)))
        self._pages[url] = txt
        return txt

    def fetch(self, url, text, err=False, prompt=None):
        if self.mode == "cc":
            prompt = prompt or self.c.r.choice(["Summarize the main points", "Extract the key steps", "What does this page say about the answer?", "List the relevant facts"])
            if not err and len(text) > 1200:
                text = "The page explains: " + " ".join(text.split("\n\n")[2:5])[:1100]
            return step("WebFetch", {"url": url, "prompt": prompt}, text, err)
        return step(self.fetch_tool, {"url": url}, text, err)

    def fetch_probe(self, url, text, err=False, prompt=None):
        s = self.fetch(url, text, err, prompt)
        return Probe(s["tool"], s["input"], const(s["output"]), err)

    # ---- filler
    def filler_gens(self):
        return [self.f_search, self.f_search, self.f_fetch]

    def f_search(self):
        key, phr = self.intent()
        q = self.c.r.choice(phr)
        return "intent:" + "|".join(key), self.search(q, self.results(key))

    def f_fetch(self):
        key, phr = self.intent()
        r = self.c.r.choice(self.results(key))
        return "url:" + r["url"], self.fetch(r["url"], self.page(r["url"], key[2] if key[0] == "fact" else key[1]))

    # ---- loops
    def stuck(self):
        c = self.c
        scen = c.choice(["repeat_search", "fetch_timeout", "fetch_404"])
        key, phr = self.intent()
        if scen == "repeat_search":
            return scen, self.search_probe(c.r.choice(phr), self.results(key)), ["intent:" + "|".join(key)]
        url = f"https://{c.choice(SITES)}/{_slug(key[1])}/{c.rint(10, 9999)}"
        if scen == "fetch_timeout":
            return scen, self.fetch_probe(url, f"Error: request to {url} timed out after 30000 ms", True), ["url:" + url]
        return scen, self.fetch_probe(url, f"Error: HTTP 404 Not Found for {url}", True), ["url:" + url]

    def state_probe(self):
        key, phr = self.intent()
        return "revisit_search", self.search_probe(self.c.r.choice(phr), self.results(key)), ["intent:" + "|".join(key)]

    def norm_probe(self):
        c = self.c
        key, phr = self.intent()
        q = c.r.choice(phr)
        pr = self.search_probe(q, self.results(key))
        vs = []
        for v in [q.lower(), q.upper() if len(q) < 40 else q.title(), "  " + q, q + " ", q.replace(" ", "  ", 1), f'"{q}"', q.rstrip("?") + "?",
                  q.replace(" ", "  "), q.title(), q.capitalize()]:
            if v != q and v not in [x["query"] for x in vs]:
                vs.append({"query": v})
        return "search_trivial_variants", pr, vs, ["intent:" + "|".join(key)]

    def paraphrase(self):
        c = self.c
        key, phr = self.intent()
        k = self.rep(3, min(6, len(phr)))
        res = self.results(key)
        steps = [self.search(q, res if i == 0 else self.near_same(res)) for i, q in enumerate(c.r.sample(phr, k))]
        return "reworded_search:" + key[0], steps, ["intent:" + "|".join(key)]

    def same_result(self):
        c = self.c
        wall, tmpl = c.choice(WALLS)
        site = c.choice(SITES)
        key, _ = self.intent()
        k = self.rep(3, 7)
        topic = _slug(key[1])
        paths = [f"/{topic}", f"/articles/{topic}-{c.rint(1, 999)}", f"/search?q={topic}", f"/amp/{topic}", f"/print/{topic}", f"/{c.rint(2019, 2024)}/{c.rint(1, 12):02d}/{topic}",
                 f"/{topic}?ref=share", f"/m/{topic}", f"/archive/{topic}"]
        text = tmpl.format(year=c.rint(2019, 2024), site=site, ray=c.hexid(16), ip=f"34.{c.rint(1, 250)}.{c.rint(1, 250)}.{c.rint(1, 250)}", ts=c.ts())
        steps = [self.fetch(f"https://{site}{pth}", text, wall in ("forbidden", "captcha")) for pth in c.r.sample(paths, k)]
        return "same_wall:" + wall, steps, []

    def alt_probes(self, m):
        c = self.c
        key, phr = self.intent()
        res = self.results(key)
        probes = [self.search_probe(c.r.choice(phr), res)]
        topic = key[2] if key[0] == "fact" else key[1]
        for r in res[: m - 1]:
            probes.append(self.fetch_probe(r["url"], self.page(r["url"], topic)))
        return "search_fetch_cycle", probes, ["intent:" + "|".join(key)] + ["url:" + r["url"] for r in res[: m - 1]]

    # ---- negatives
    def neg_pagination(self):
        c = self.c
        key, phr = self.intent()
        q = c.r.choice(phr)
        steps = []
        for pg in range(1, c.rint(3, 6) + 1):
            res = self.results(key + (pg,))
            out = fill_noise(c, self.render_results(q, res))
            steps.append(step("WebSearch" if self.mode == "cc" else "web_search", {"query": q, "page": pg}, out))
        self.reserve([], ["intent:" + "|".join(key)])
        return "search_result_pages", steps

    def neg_different_entities(self):
        c = self.c
        kind = c.r.choice(["population", "ceo", "release", "height"])
        subj = {"population": [x[0] for x in CITIES], "ceo": COMPANIES, "release": ["Python 3.11", "Go 1.22", "Rust 1.75", "Node.js 22", "Django 5.0", "React 19", "Kafka 3.7", "Postgres 15"],
                "height": ["Mount Fuji", "Table Mountain", "the Eiffel Tower", "Ben Nevis", "Denali", "the Shard", "Matterhorn", "K2"]}[kind]
        steps = []
        tmpl = c.r.choice(c.pool(FACT_PHRASINGS[kind]))
        for s in c.sample(subj, c.rint(3, 7)):
            key = ("fact", kind, s)
            steps.append(self.search(tmpl.format(s=s), self.results(key)))
            self.reserve([], ["intent:" + "|".join(key)])
        return "search_different_subjects:" + kind, steps

    def neg_one_retry(self):
        c = self.c
        key, _ = self.intent()
        r = c.r.choice(self.results(key))
        topic = key[2] if key[0] == "fact" else key[1]
        prompt = "Summarize the main points"
        first = self.fetch(r["url"], c.r.choice([f"Error: request to {r['url']} timed out after 30000 ms", "Error: HTTP 503 Service Unavailable", "Error: connection reset by peer"]), True, prompt)
        second = self.fetch(r["url"], self.page(r["url"], topic), False, prompt)
        self.reserve([], ["url:" + r["url"]])
        return "fetch_retry_once", [first, second]

    def neg_polling(self):
        # a live page (status page / build dashboard) fetched repeatedly while its content changes
        c = self.c
        site = c.r.choice(["status.example-cloud.com", "status.pypi-mirror.dev", f"status.{_slug(c.choice(COMPANIES))}.com"])
        url = f"https://{site}/incidents/{c.hexid(10)}"
        steps = []
        for st in statuses_converging(c, ["Investigating", "Identified", "Monitoring", "Resolved"]):
            txt = (f"Incident: Elevated API error rates\nStatus: {st}\nLast update: {c.ts()}\n\n"
                   + {"Investigating": "We are investigating reports of elevated error rates.", "Identified": "The issue has been identified as a faulty config push.",
                      "Monitoring": "A fix has been deployed and we are monitoring the results.", "Resolved": "This incident has been resolved."}[st])
            steps.append(self.fetch(url, txt, prompt="What is the current incident status?"))
        return "status_page_converge", steps


# --------------------------------------------------------------------------- SQL world
SQL_KW = ["SELECT", "FROM", "WHERE", "AND", "ORDER BY", "GROUP BY", "LIMIT", "DESC", "ASC", "JOIN", "ON", "COUNT", "AS", "IN", "OFFSET", "SUM"]
ORDER_STATUSES = ["pending", "paid", "shipped", "delivered", "refunded", "cancelled"]
PLANS = ["free", "starter", "pro", "business", "enterprise"]
JOB_KINDS = ["export_csv", "sync_crm", "reindex_search", "send_digest", "rebuild_cache", "charge_renewals"]


def sql_variants(c: Ctx, q: str, n=6):
    def kwcase(s):
        if c.chance(0.5):
            for k in SQL_KW:
                s = s.replace(k + " ", k.lower() + " ").replace(k + "(", k.lower() + "(")
        else:
            for k in SQL_KW:
                s = s.replace(" " + k.lower() + " ", " " + k + " ")
        return s

    def semi(s):
        return s[:-1] if s.endswith(";") else s + ";"

    def spaces(s):
        return s.replace(" = ", "=") if " = " in s else s.replace("=", " = ")

    def newlines(s):
        for k in ("FROM", "WHERE", "ORDER BY", "GROUP BY", "LIMIT", "from", "where", "order by", "group by", "limit"):
            s = s.replace(" " + k + " ", "\n" + k + " ")
        return s

    def dbl(s):
        toks = s.split(" ")
        i = c.r.randrange(len(toks))
        toks[i] += " "
        return " ".join(toks)

    out, tries = [], 0
    while len(out) < n and tries < 50:
        tries += 1
        v = q
        for fn in c.r.sample([kwcase, semi, spaces, newlines, dbl], c.rint(1, 2)):
            v = fn(v)
        if v != q and v not in out:
            out.append(v)
    return out


class SqlWorld(World):
    LOOPS = LOOP_KINDS
    NEGS = ("pagination", "polling", "different_entities", "one_retry", "near_miss", "normal")
    style = "sql"

    def __init__(self, c: Ctx):
        super().__init__(c)
        self.tool = c.r.choice(["run_sql", "run_sql", "run_sql", "execute_sql"])
        self.db = c.r.choice([None, None, "analytics", "prod_replica", "warehouse"])
        self._rows = {}
        self.n_customers = c.rint(800, 90000)
        self.base_id = c.rint(1000, 50000)
        self.timing = c.chance(0.4)

    def _inp(self, query):
        inp = {"query": query}
        if self.db:
            inp["database"] = self.db
        return inp

    def _out(self, out):
        return out + f"\nTime: @@MS@@.{self.c.rint(100, 999)} ms" if self.timing else out

    def q(self, query, out, err=False):
        return step(self.tool, self._inp(query), fill_noise(self.c, self._out(out)), err)

    def probe(self, query, out, err=False):
        return Probe(self.tool, self._inp(query), noisy(self.c, self._out(out)), err)

    def customer(self, cid):
        k = ("c", cid)
        if k not in self._rows:
            c = self.c
            pr = c.person()
            self._rows[k] = [cid, pr["email"], pr["name"], c.choice(CITIES)[2], c.r.choice(PLANS), c.ts()[:19].replace("T", " ")]
        return self._rows[k]

    def orders_for(self, cid):
        k = ("o", cid)
        if k not in self._rows:
            c = self.c
            self._rows[k] = [[c.rint(100000, 999999), cid, c.r.choice(ORDER_STATUSES), c.rint(500, 250000), c.r.choice(["USD", "EUR", "GBP"]),
                              c.ts()[:19].replace("T", " ")] for _ in range(c.rint(1, 7))]
        return self._rows[k]

    def rand_cid(self):
        return self.base_id + self.c.rint(0, self.n_customers)

    # ---- filler
    def filler_gens(self):
        return [self.f_customer, self.f_orders, self.f_group, self.f_schema, self.f_top_products, self.f_revenue, self.f_jobs, self.f_events]

    def f_customer(self):
        cid = self.rand_cid()
        return "cust:" + str(cid), self.q(f"SELECT * FROM customers WHERE id = {cid};",
                                          ascii_table(["id", "email", "full_name", "country", "plan", "created_at"], [self.customer(cid)]))

    def f_orders(self):
        cid = self.rand_cid()
        return "orders:" + str(cid), self.q(f"SELECT id, status, total_cents, currency, created_at FROM orders WHERE customer_id = {cid} ORDER BY created_at DESC;",
                                            ascii_table(["id", "status", "total_cents", "currency", "created_at"], [r[:1] + r[2:] for r in self.orders_for(cid)]))

    def f_group(self):
        c = self.c
        tbl = c.r.choice(["orders", "subscriptions", "jobs"])
        vals = {"orders": ORDER_STATUSES, "subscriptions": ["active", "past_due", "canceled", "trialing"], "jobs": ["queued", "running", "succeeded", "failed"]}[tbl]
        return "group:" + tbl, self.q(f"SELECT status, COUNT(*) AS n FROM {tbl} GROUP BY status ORDER BY n DESC;",
                                      ascii_table(["status", "n"], sorted([[v, c.rint(0, 40000)] for v in vals], key=lambda r: -r[1])))

    def f_schema(self):
        tbl = self.c.r.choice(["customers", "orders", "products", "invoices", "subscriptions", "jobs", "events"])
        return "schema:" + tbl, self.q(f"SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = '{tbl}' ORDER BY ordinal_position;",
                                       ascii_table(["column_name", "data_type", "is_nullable"], self.schema_rows(tbl)))

    def schema_rows(self, tbl):
        cols = {"customers": ["id", "email", "full_name", "country", "plan", "created_at"], "orders": ["id", "customer_id", "status", "total_cents", "currency", "created_at"],
                "products": ["sku", "name", "category", "price_cents", "stock"], "invoices": ["id", "order_id", "amount_cents", "due_date", "paid_at"],
                "subscriptions": ["id", "customer_id", "plan", "status", "renews_at"], "jobs": ["id", "kind", "status", "attempts", "started_at", "finished_at"],
                "events": ["id", "user_id", "event_type", "payload", "occurred_at"], "payments": ["id", "order_id", "card_last4", "amount_cents", "processor_ref"]}[tbl]
        typ = lambda col: "bigint" if col == "id" or col.endswith("_id") else ("timestamp with time zone" if col.endswith(("_at", "_date")) else
                                                                              ("integer" if col.endswith(("cents", "stock", "attempts")) else ("jsonb" if col == "payload" else "text")))
        return [[col, typ(col), "NO" if col in ("id", "email", "status") else "YES"] for col in cols]

    def f_top_products(self):
        c = self.c
        n = c.r.choice([5, 10])
        rows = sorted([[f"SKU-{c.rint(1000, 9999)}", p, c.rint(20, 9000)] for p in c.sample(PRODUCTS, n)], key=lambda r: -r[2])
        return "top_products", self.q(f"SELECT p.sku, p.name, SUM(oi.quantity) AS units FROM order_items oi JOIN products p ON p.sku = oi.sku GROUP BY p.sku, p.name ORDER BY units DESC LIMIT {n};",
                                      ascii_table(["sku", "name", "units"], rows))

    def f_revenue(self):
        c = self.c
        y = c.rint(2022, 2024)
        rows = [[f"{y}-{m:02d}-01 00:00:00+00", c.rint(100000, 9000000)] for m in range(1, c.rint(4, 12) + 1)]
        return "revenue:" + str(y), self.q(f"SELECT date_trunc('month', created_at) AS month, SUM(total_cents) AS revenue_cents FROM orders WHERE created_at >= '{y}-01-01' AND status <> 'cancelled' GROUP BY 1 ORDER BY 1;",
                                           ascii_table(["month", "revenue_cents"], rows))

    def f_jobs(self):
        c = self.c
        kind = c.r.choice(JOB_KINDS)
        rows = [[c.rint(10000, 99999), kind, c.r.choice(["succeeded", "failed", "succeeded"]), c.rint(1, 3), c.ts()[:19].replace("T", " ")] for _ in range(c.rint(3, 10))]
        return "jobs:" + kind, self.q(f"SELECT id, kind, status, attempts, started_at FROM jobs WHERE kind = '{kind}' ORDER BY started_at DESC LIMIT 10;",
                                      ascii_table(["id", "kind", "status", "attempts", "started_at"], rows))

    def f_events(self):
        c = self.c
        uid = self.rand_cid()
        rows = [[c.rint(10 ** 6, 10 ** 7), uid, c.r.choice(["login", "page_view", "checkout_started", "checkout_completed", "password_reset", "api_key_created"]),
                 c.ts()[:19].replace("T", " ")] for _ in range(c.rint(2, 12))]
        return "events:" + str(uid), self.q(f"SELECT id, user_id, event_type, occurred_at FROM events WHERE user_id = {uid} ORDER BY occurred_at DESC LIMIT 20;",
                                            ascii_table(["id", "user_id", "event_type", "occurred_at"], rows))

    # ---- loops
    def stuck(self):
        c = self.c
        scen = c.choice(["missing_column", "syntax_error", "missing_relation", "statement_timeout", "rerun_aggregate"])
        if scen == "missing_column":
            col = c.r.choice(["total", "amount", "customer_email", "state", "user_id"])
            q = f"SELECT id, {col} FROM orders WHERE created_at > now() - interval '7 days';"
            return scen, self.probe(q, f'ERROR:  column "{col}" does not exist\nLINE 1: SELECT id, {col} FROM orders WHERE created_at > now() - interv...\n                   ^', True), []
        if scen == "syntax_error":
            q = "SELECT status, COUNT(*) FROM orders GROUP status;"
            return scen, self.probe(q, 'ERROR:  syntax error at or near "status"\nLINE 1: SELECT status, COUNT(*) FROM orders GROUP status;\n                                                    ^', True), []
        if scen == "missing_relation":
            t = c.r.choice(["order", "user", "customer_orders", "payments_v2", "invoice"])
            return scen, self.probe(f"SELECT * FROM {t} LIMIT 10;", f'ERROR:  relation "{t}" does not exist\nLINE 1: SELECT * FROM {t} LIMIT 10;\n                      ^', True), []
        if scen == "statement_timeout":
            return scen, self.probe("SELECT e.*, c.email FROM events e JOIN customers c ON c.id = e.user_id WHERE e.payload::text ILIKE '%refund%';",
                                    "ERROR:  canceling statement due to statement timeout", True), []
        _, st = self.f_revenue()
        return scen, Probe(st["tool"], st["input"], const(st["output"])), []

    def state_probe(self):
        c = self.c
        scen = c.choice(["failed_jobs_count", "order_lookup", "schema_lookup"])
        if scen == "failed_jobs_count":
            return scen, self.probe("SELECT COUNT(*) FROM jobs WHERE status = 'failed';", ascii_table(["count"], [[c.rint(1, 400)]])), []
        if scen == "order_lookup":
            cid = self.rand_cid()
            o = self.orders_for(cid)[0]
            return scen, self.probe(f"SELECT * FROM orders WHERE id = {o[0]};", ascii_table(["id", "customer_id", "status", "total_cents", "currency", "created_at"], [o])), []
        tbl = c.r.choice(["orders", "invoices", "subscriptions"])
        _, st = self.f_schema()
        return scen, Probe(st["tool"], st["input"], const(st["output"])), ["schema:" + st["input"]["query"].split("'")[1]]

    def norm_probe(self):
        scen, pr, keys = self.state_probe() if self.c.chance(0.6) else self.stuck()
        vs = []
        for v in sql_variants(self.c, pr.inp["query"]):
            d = dict(pr.inp)
            d["query"] = v
            vs.append(d)
        return "sql_trivial_variants:" + scen, pr, vs, keys

    def paraphrase(self):
        c = self.c
        fam = c.choice(["count_by_status", "orders_for_email", "latest_signups", "revenue_total"])
        k = self.rep(3, 5)
        steps = []
        if fam == "count_by_status":
            s = c.r.choice(ORDER_STATUSES)
            n = c.rint(3, 40000)
            qs = [(f"SELECT COUNT(*) FROM orders WHERE status = '{s}';", "count"), (f"select count(id) as {s}_orders from orders where status='{s}'", f"{s}_orders"),
                  (f"SELECT COUNT(1) AS n FROM orders o WHERE o.status IN ('{s}');", "n"), (f"SELECT SUM(CASE WHEN status = '{s}' THEN 1 ELSE 0 END) AS total FROM orders;", "total"),
                  (f"SELECT count(*) FROM (SELECT id FROM orders WHERE status = '{s}') t;", "count"), (f"SELECT COUNT(*) FILTER (WHERE status = '{s}') FROM orders;", "count")]
            for qq, col in c.r.sample(qs, min(k, len(qs))):
                steps.append(self.q(qq, ascii_table([col], [[n]])))
            return "sql_rewrite:" + fam, steps, []
        if fam == "orders_for_email":
            cid = self.rand_cid()
            em = self.customer(cid)[1]
            rows = self.orders_for(cid)
            qs = [f"SELECT o.* FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.email = '{em}';",
                  f"SELECT * FROM orders WHERE customer_id = (SELECT id FROM customers WHERE email = '{em}');",
                  f"SELECT * FROM orders WHERE customer_id IN (SELECT id FROM customers WHERE lower(email) = lower('{em}'));",
                  f"SELECT orders.* FROM customers, orders WHERE orders.customer_id = customers.id AND customers.email = '{em}';",
                  f"WITH c AS (SELECT id FROM customers WHERE email = '{em}') SELECT o.* FROM orders o JOIN c ON o.customer_id = c.id;",
                  f"SELECT o.* FROM orders AS o WHERE EXISTS (SELECT 1 FROM customers cu WHERE cu.id = o.customer_id AND cu.email = '{em}');"]
            cols = ["id", "customer_id", "status", "total_cents", "currency", "created_at"]
            for i, qq in enumerate(c.r.sample(qs, min(k, len(qs)))):
                rr = list(rows)
                if i and c.chance(0.4):
                    rr = list(reversed(rr))
                steps.append(self.q(qq, ascii_table(cols, rr)))
            return "sql_rewrite:" + fam, steps, ["cust:" + str(cid)]
        if fam == "latest_signups":
            n = c.r.choice([5, 10])
            rows = [[self.rand_cid(), c.person()["email"], c.ts()[:19].replace("T", " ")] for _ in range(n)]
            qs = [f"SELECT id, email, created_at FROM customers ORDER BY created_at DESC LIMIT {n};",
                  f"select id, email, created_at from customers order by created_at desc fetch first {n} rows only",
                  f"SELECT c.id, c.email, c.created_at FROM customers c ORDER BY c.created_at DESC, c.id DESC LIMIT {n};",
                  f"SELECT id, email, created_at FROM (SELECT *, row_number() OVER (ORDER BY created_at DESC) rn FROM customers) x WHERE rn <= {n};",
                  f"SELECT id, email, created_at FROM customers WHERE created_at >= (SELECT created_at FROM customers ORDER BY created_at DESC OFFSET {n - 1} LIMIT 1) ORDER BY created_at DESC;"]
            for qq in c.r.sample(qs, min(k, len(qs))):
                steps.append(self.q(qq, ascii_table(["id", "email", "created_at"], rows)))
            return "sql_rewrite:" + fam, steps, []
        y = c.rint(2022, 2024)
        tot = c.rint(10 ** 6, 10 ** 9)
        qs = [(f"SELECT SUM(total_cents) FROM orders WHERE created_at >= '{y}-01-01' AND created_at < '{y + 1}-01-01';", "sum"),
              (f"select sum(total_cents) as revenue from orders where extract(year from created_at) = {y}", "revenue"),
              (f"SELECT SUM(o.total_cents) AS total FROM orders o WHERE date_part('year', o.created_at) = {y};", "total"),
              (f"SELECT sum(total_cents) FROM orders WHERE created_at BETWEEN '{y}-01-01' AND '{y}-12-31 23:59:59';", "sum"),
              (f"SELECT SUM(total_cents) AS revenue_cents FROM orders WHERE to_char(created_at, 'YYYY') = '{y}';", "revenue_cents")]
        for qq, col in c.r.sample(qs, min(k, len(qs))):
            steps.append(self.q(qq, ascii_table([col], [[tot]])))
        return "sql_rewrite:" + fam, steps, []

    def same_result(self):
        c = self.c
        k = self.rep(3, 6)
        if c.chance(0.5):
            role = c.r.choice(["analyst_ro", "readonly", "agent", "reporting"])
            qs = ["SELECT * FROM payments LIMIT 10;", "SELECT COUNT(*) FROM payments;", "SELECT id, amount_cents FROM payments ORDER BY id DESC LIMIT 5;",
                  "SELECT p.* FROM payments p JOIN orders o ON o.id = p.order_id WHERE o.status = 'refunded';",
                  f"SELECT processor_ref FROM payments WHERE order_id = {c.rint(100000, 999999)};", "TABLE payments;",
                  "SELECT DISTINCT card_last4 FROM payments WHERE amount_cents > 10000;"]
            steps = [self.q(qq, "ERROR:  permission denied for table payments", True) for qq in c.r.sample(qs, k)]
            return "permission_denied_table", steps, []
        em = c.person()["email"]
        local, dom = em.split("@")
        qs = [f"SELECT * FROM customers WHERE email = '{em}';", f"SELECT * FROM customers WHERE lower(email) = '{em.lower()}';",
              f"SELECT * FROM customers WHERE email ILIKE '%{local}%';", f"SELECT * FROM customers WHERE email LIKE '{local[:4]}%@{dom}';",
              f"SELECT * FROM customers WHERE full_name ILIKE '%{local.split('.')[0]}%' AND email LIKE '%{dom}';",
              f"SELECT id FROM customers WHERE email = trim('{em} ');"]
        cols = ["id", "email", "full_name", "country", "plan", "created_at"]
        steps = [self.q(qq, ascii_table(cols if not qq.startswith("SELECT id") else ["id"], [])) for qq in c.r.sample(qs, k)]
        return "zero_rows_lookup", steps, []

    def alt_probes(self, m):
        c = self.c
        tbls = c.r.sample(["orders", "invoices", "subscriptions", "customers"], 2)
        probes = []
        for t in tbls:
            probes.append(self.probe(f"SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = '{t}' ORDER BY ordinal_position;",
                                     ascii_table(["column_name", "data_type", "is_nullable"], self.schema_rows(t))))
        if c.chance(0.3):
            probes.insert(1, self.probe(f"SELECT {tbls[0][:-1]}_ref FROM {tbls[0]} LIMIT 3;", f'ERROR:  column "{tbls[0][:-1]}_ref" does not exist', True))
        else:
            probes.insert(1, self.probe(f"SELECT * FROM {tbls[0]} LIMIT 3;",
                                        ascii_table(["id", "status", "created_at"], [[c.rint(1000, 9999), c.r.choice(ORDER_STATUSES), c.ts()[:10]] for _ in range(3)])))
        return "schema_query_cycle", probes[:m], ["schema:" + t for t in tbls]

    # ---- negatives
    def neg_pagination(self):
        c = self.c
        per = c.r.choice([20, 50, 100])
        pages = c.rint(3, 6)
        steps = []
        start = self.base_id
        keyset = c.chance(0.4)
        last = start
        for pg in range(pages):
            n = min(per, 8) if pg < pages - 1 else c.rint(0, 6)
            rows = []
            for _ in range(n):
                last += c.rint(1, 5)
                rows.append(self.customer(last))
            if keyset:
                q = f"SELECT * FROM customers WHERE id > {start if pg == 0 else prev_last} ORDER BY id LIMIT {per};"
            else:
                q = f"SELECT * FROM customers ORDER BY id LIMIT {per} OFFSET {pg * per};"
            prev_last = last
            steps.append(self.q(q, ascii_table(["id", "email", "full_name", "country", "plan", "created_at"], rows) + (f"\n-- showing 8 of {per} rows" if n == 8 and per > 8 else "")))
        return "sql_" + ("keyset" if keyset else "offset") + "_pagination", steps

    def neg_polling(self):
        c = self.c
        jid = c.rint(10000, 99999)
        kind = c.r.choice(JOB_KINDS)
        steps = []
        att = 1
        for st in statuses_converging(c, ["queued", "running", c.r.choice(["succeeded", "succeeded", "failed"])]):
            fin = c.ts()[:19].replace("T", " ") if st in ("succeeded", "failed") else None
            steps.append(self.q(f"SELECT id, kind, status, attempts, finished_at FROM jobs WHERE id = {jid};", ascii_table(["id", "kind", "status", "attempts", "finished_at"], [[jid, kind, st, att, fin]])))
        return "job_status_converge", steps

    def neg_different_entities(self):
        c = self.c
        steps = []
        for _ in range(c.rint(3, 7)):
            r = self.f_customer() if c.chance(0.5) else self.f_orders()
            steps.append(r[1])
            self.reserve([r[1]], [r[0]])
        return "lookup_different_ids", steps

    def neg_one_retry(self):
        c = self.c
        r = c.r.choice([self.f_revenue, self.f_group, self.f_top_products])()
        st = r[1]
        err = c.r.choice(["ERROR:  deadlock detected\nDETAIL:  Process 4121 waits for ShareLock on transaction 99812; blocked by process 4188.",
                          "ERROR:  canceling statement due to statement timeout", "server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally",
                          "ERROR:  could not serialize access due to concurrent update"])
        first = dict(st, output=err, is_error=True)
        self.reserve([st], [r[0]])
        return "sql_retry_once", [first, st]


# --------------------------------------------------------------------------- HTTP API world
RESOURCES = ["users", "orders", "invoices", "projects", "deployments", "tickets"]


class HttpWorld(World):
    LOOPS = LOOP_KINDS
    NEGS = ("pagination", "polling", "different_entities", "one_retry", "batch_edits", "near_miss", "normal")
    style = "http"

    def __init__(self, c: Ctx):
        super().__init__(c)
        comp = c.choice(COMPANIES)
        self.base = c.r.choice([f"https://api.{_slug(comp)}.com/v2", f"https://{_slug(comp)}.example.io/api/v1", f"http://localhost:{c.r.choice([8080, 3000, 5000])}/api"])
        self._recs = {}
        self.with_params = c.chance(0.8)

    def call(self, method, path, params=None, body=None, status=200, resp=None, rid=None):
        inp = {"method": method, "url": self.base + path}
        if params is not None or self.with_params:
            inp["params"] = params or {}
        if body is not None:
            inp["json"] = body
        return step("http_request", inp, http_out(self.c, status, resp, rid), status >= 400)

    def probe_call(self, method, path, params=None, body=None, status=200, resp=None):
        st = self.call(method, path, params, body, status, resp, rid="@@RID@@")
        tmpl = st["output"]
        return Probe(st["tool"], st["input"], noisy(self.c, tmpl), status >= 400)

    def rec(self, res, rid=None):
        c = self.c
        rid = rid or c.rint(1000, 99999)
        k = (res, rid)
        if k in self._recs:
            return self._recs[k]
        if res == "users":
            p = c.person()
            r = {"id": rid, "email": p["email"], "name": p["name"], "role": c.r.choice(["admin", "member", "viewer", "billing"]), "mfa_enabled": c.chance(0.6),
                 "created_at": c.ts(), "last_login_at": c.ts(), "teams": c.r.sample(["core", "growth", "infra", "support", "data"], c.rint(1, 3))}
        elif res == "orders":
            r = {"id": f"ord_{c.hexid(12)}", "number": rid, "status": c.r.choice(ORDER_STATUSES), "currency": "USD",
                 "items": [{"sku": f"SKU-{c.rint(1000, 9999)}", "name": pn, "qty": c.rint(1, 4), "unit_price": c.rint(5, 400) + 0.99} for pn in c.sample(PRODUCTS, c.rint(1, 4))],
                 "shipping": {"carrier": c.r.choice(["UPS", "FedEx", "DHL", "USPS"]), "tracking": c.hexid(16).upper(), "city": c.choice(CITIES)[0]}, "created_at": c.ts()}
            r["total"] = round(sum(i["qty"] * i["unit_price"] for i in r["items"]), 2)
        elif res == "invoices":
            r = {"id": f"in_{c.hexid(14)}", "number": f"INV-{rid}", "amount_due": c.rint(1000, 900000), "currency": c.r.choice(["usd", "eur"]), "status": c.r.choice(["open", "paid", "void", "uncollectible"]),
                 "due_date": c.ts()[:10], "lines": [{"description": f"{c.r.choice(PLANS).title()} plan ({c.r.choice(MONTHS)})", "amount": c.rint(1000, 90000)} for _ in range(c.rint(1, 4))]}
        elif res == "projects":
            r = {"id": rid, "slug": f"{c.choice(PROJECT_NAMES)}-{c.hexid(4)}", "owner": c.person()["email"], "visibility": c.r.choice(["private", "internal", "public"]),
                 "open_issues": c.rint(0, 300), "default_branch": "main", "updated_at": c.ts()}
        elif res == "deployments":
            r = {"id": f"dep_{c.hexid(10)}", "service": c.choice(PROJECT_NAMES), "env": c.r.choice(["staging", "production"]), "status": c.r.choice(["succeeded", "failed", "rolled_back"]),
                 "commit": c.hexid(40), "replicas": c.rint(1, 12), "started_at": c.ts()}
        else:
            r = {"id": rid, "subject": f"{c.choice(VERBS).capitalize()} {c.choice(NOUNS)} {c.r.choice(['not working', 'is slow', 'returns 500', 'missing after update'])}",
                 "status": c.r.choice(["open", "pending", "solved"]), "priority": c.r.choice(["low", "normal", "high", "urgent"]), "requester": c.person()["email"],
                 "tags": c.r.sample(["billing", "bug", "api", "mobile", "refund", "login"], c.rint(1, 3)), "created_at": c.ts()}
        self._recs[k] = r
        return r

    # ---- filler
    def filler_gens(self):
        return [self.f_get, self.f_get, self.f_list, self.f_create, self.f_patch, self.f_me]

    def f_get(self):
        res = self.c.r.choice(RESOURCES)
        rid = self.c.rint(1000, 99999)
        return f"get:{res}:{rid}", self.call("GET", f"/{res}/{rid}", resp=self.rec(res, rid))

    def f_list(self):
        c = self.c
        res = c.r.choice(RESOURCES)
        flt = c.r.choice([{"status": "open"}, {"created_after": c.ts()[:10]}, {"limit": 5}, {"sort": "-created_at", "limit": 10}])
        data = [self.rec(res) for _ in range(c.rint(2, 6))]
        return f"list:{res}:{json.dumps(flt, sort_keys=True)}", self.call("GET", f"/{res}", flt, resp={"data": data, "has_more": c.chance(0.5)})

    def f_create(self):
        c = self.c
        body = {"subject": f"{c.choice(VERBS).capitalize()} {c.choice(NOUNS)} fails", "priority": c.r.choice(["low", "normal", "high"]), "requester": c.person()["email"]}
        rec = dict(body, id=c.rint(100000, 999999), status="open", created_at=c.ts())
        return "create:" + body["subject"], self.call("POST", "/tickets", body=body, status=201, resp=rec)

    def f_patch(self):
        c = self.c
        res = c.r.choice(["tickets", "users", "projects"])
        rid = c.rint(1000, 99999)
        change = c.r.choice({"tickets": [{"status": "pending"}, {"priority": "high"}, {"tags": ["triaged"]}],
                             "users": [{"role": "viewer"}, {"role": "billing"}, {"mfa_enabled": True}],
                             "projects": [{"visibility": "internal"}, {"default_branch": "release"}]}[res])
        r = dict(self.rec(res, rid), **change)
        return f"patch:{res}:{rid}", self.call("PATCH", f"/{res}/{rid}", body=change, resp=r)

    def f_me(self):
        p = self.c.person()
        return "me", self.call("GET", "/me", resp={"id": self.c.rint(1, 9999), "email": p["email"], "scopes": ["read", "write"], "org": self.c.choice(COMPANIES)})

    # ---- loops
    def stuck(self):
        c = self.c
        scen = c.choice(["server_error", "not_found", "validation_error", "bad_gateway"])
        res = c.r.choice(RESOURCES)
        rid = c.rint(1000, 99999)
        if scen == "server_error":
            return scen, self.probe_call("GET", f"/{res}/{rid}", status=500, resp={"error": {"code": "internal_error", "message": "An unexpected error occurred.", "trace_id": c.hexid(32)}}), []
        if scen == "not_found":
            return scen, self.probe_call("GET", f"/{res}/{rid}", status=404, resp={"error": {"code": "resource_missing", "message": f"No such {res[:-1]}: '{rid}'"}}), []
        if scen == "validation_error":
            body = {"subject": "", "priority": "critical", "requester": c.person()["email"]}
            return scen, self.probe_call("POST", "/tickets", body=body, status=422, resp={"errors": [{"field": "subject", "message": "must not be blank"},
                                                                                                   {"field": "priority", "message": "must be one of: low, normal, high, urgent"}]}), []
        return scen, self.probe_call("GET", f"/{res}", {"limit": 50}, status=502, resp={"message": "Bad Gateway", "upstream": f"{res}-svc:8080"}), []

    def state_probe(self):
        c = self.c
        res = c.r.choice(RESOURCES)
        rid = c.rint(1000, 99999)
        return "refetch_resource", self.probe_call("GET", f"/{res}/{rid}", resp=self.rec(res, rid)), [f"get:{res}:{rid}"]

    def norm_probe(self):
        c = self.c
        if c.chance(0.5):
            scen, pr, keys = self.state_probe()
        else:
            p = self.rec("users")
            pr = self.probe_call("GET", "/users", {"email": p["email"], "limit": 1}, resp={"data": [p], "has_more": False})
            scen, keys = "user_by_email", []
        inp = pr.inp
        vs = []
        u = inp["url"]
        vs.append(dict(inp, url=u + "/"))
        vs.append(dict(inp, method=inp["method"].lower()))
        vs.append(dict(inp, url=u.replace("/", "//", 3).replace("//", "/", 2)))
        if inp.get("params"):
            vs.append({"url": u, "method": inp["method"], "params": dict(reversed(list(inp["params"].items())))})
            if "email" in inp["params"]:
                vs.append(dict(inp, params=dict(inp["params"], email=inp["params"]["email"].upper())))
                vs.append(dict(inp, params=dict(inp["params"], email=" " + inp["params"]["email"])))
        else:
            vs.append({"url": u, "method": inp["method"]} if "params" in inp else dict(inp, params={}))
        vs.append({k: inp[k] for k in reversed(list(inp))})
        return "http_trivial_variants:" + scen, pr, vs, keys

    def paraphrase(self):
        c = self.c
        p = self.rec("users")
        em = p["email"]
        forms = [("GET", "/users", {"email": em}, {"data": [p], "has_more": False}), ("GET", "/users/search", {"q": em}, {"results": [p], "total": 1}),
                 ("GET", "/users", {"filter": f"email eq '{em}'"}, {"data": [p], "has_more": False}), ("POST", "/users/query", None, {"data": [p]}),
                 ("GET", f"/users/by-email/{em}", None, p), ("GET", "/search", {"type": "user", "query": em}, {"hits": [{"type": "user", "record": p}]}),
                 ("GET", "/users", {"q": f"email:{em}", "limit": 1}, {"data": [p], "has_more": False})]
        k = self.rep(3, 6)
        steps = []
        for m, path, params, resp in c.r.sample(forms, k):
            body = {"where": {"email": em}} if m == "POST" else None
            steps.append(self.call(m, path, params, body, resp=resp))
        return "lookup_user_reworded", steps, []

    def same_result(self):
        c = self.c
        kind = c.r.choice(["expired_token", "insufficient_scope", "rate_limited"])
        k = self.rep(3, 7)
        status, resp = {"expired_token": (401, {"error": "invalid_token", "error_description": "The access token expired"}),
                        "insufficient_scope": (403, {"error": "insufficient_scope", "required": "admin:org"}),
                        "rate_limited": (429, {"error": "rate_limited", "message": "Too many requests, retry after 3600 seconds"})}[kind]
        calls = [("GET", f"/{r}", {"limit": 10}) for r in RESOURCES] + [("GET", "/me", None), ("GET", f"/users/{c.rint(1000, 9999)}", None),
                                                                         ("GET", "/orders", {"status": "refunded"}), ("GET", "/health/details", None)]
        steps = [self.call(m, pth, prm, status=status, resp=resp) for m, pth, prm in c.r.sample(calls, k)]
        return "same_error:" + kind, steps, []

    def alt_probes(self, m):
        c = self.c
        o = self.rec("orders")
        u = self.rec("users")
        t = self.rec("tickets")
        probes = [self.probe_call("GET", f"/orders/{o['number']}", resp=o), self.probe_call("GET", f"/users/{u['id']}", resp=u),
                  self.probe_call("GET", f"/tickets/{t['id']}", resp=t)]
        return "resource_cycle", probes[:m], [f"get:orders:{o['number']}", f"get:users:{u['id']}", f"get:tickets:{t['id']}"]

    # ---- negatives
    def neg_pagination(self):
        c = self.c
        res = c.r.choice(RESOURCES)
        pages = c.rint(3, 7)
        cursor = c.chance(0.5)
        steps, cur = [], None
        for pg in range(1, pages + 1):
            data = [self.rec(res) for _ in range(c.rint(3, 6) if pg < pages else c.rint(0, 3))]
            nxt = c.hexid(20) if pg < pages else None
            if cursor:
                params = {"limit": 25} if cur is None else {"limit": 25, "starting_after": cur}
                resp = {"data": data, "has_more": nxt is not None, "next_cursor": nxt}
            else:
                params = {"page": pg, "per_page": 25}
                resp = {"data": data, "page": pg, "total_pages": pages}
            steps.append(self.call("GET", f"/{res}", params, resp=resp))
            cur = nxt
        return "api_" + ("cursor" if cursor else "page") + "_pagination", steps

    def neg_polling(self):
        c = self.c
        jid = f"exp_{c.hexid(12)}"
        steps = []
        prog = 0
        seq = statuses_converging(c, ["pending", "running", "succeeded"])
        for st in seq:
            prog = 0 if st == "pending" else (100 if st == "succeeded" else min(95, prog + c.rint(10, 40)))
            resp = {"id": jid, "status": st, "progress": prog}
            if st == "succeeded":
                resp["download_url"] = f"{self.base}/exports/{jid}/file?sig={c.hexid(24)}"
            steps.append(self.call("GET", f"/exports/{jid}", resp=resp))
        return "export_job_converge", steps

    def neg_different_entities(self):
        c = self.c
        res = c.r.choice(RESOURCES)
        steps = []
        for _ in range(c.rint(3, 7)):
            rid = c.rint(1000, 99999)
            steps.append(self.call("GET", f"/{res}/{rid}", resp=self.rec(res, rid)))
        return "get_different_" + res, steps

    def neg_one_retry(self):
        c = self.c
        res = c.r.choice(RESOURCES)
        rid = c.rint(1000, 99999)
        first = c.r.choice([(503, {"message": "Service Unavailable"}), (429, {"error": "rate_limited", "retry_after": 2}), (502, {"message": "Bad Gateway"})])
        return "http_retry_once", [self.call("GET", f"/{res}/{rid}", status=first[0], resp=first[1]), self.call("GET", f"/{res}/{rid}", resp=self.rec(res, rid))]

    def neg_batch_edits(self):
        c = self.c
        change = c.r.choice([{"status": "solved"}, {"priority": "high"}, {"tags": ["migrated"]}, {"assignee": c.person()["email"]}])
        steps = []
        for _ in range(c.rint(3, 8)):
            rid = c.rint(1000, 99999)
            steps.append(self.call("PATCH", f"/tickets/{rid}", body=change, resp={"id": rid, "updated": True}))
        return "bulk_patch_tickets", steps


# --------------------------------------------------------------------------- OpenAI-style business functions
def _date_forms(y, m, d):
    return [f"{y}-{m:02d}-{d:02d}", f"{MONTHS[m - 1]} {d}, {y}", f"{m:02d}/{d:02d}/{y}", f"{d} {MONTHS[m - 1][:3]} {y}", f"{y}/{m:02d}/{d:02d}"]


CITY_ALIASES = {"New York": ["NYC", "New York, NY", "new york city"], "San Francisco": ["SF", "San Francisco, CA", "san francisco bay area"],
                "London": ["London, UK", "london", "LON"], "Tokyo": ["Tokyo, Japan", "tokyo", "TYO"], "Paris": ["Paris, France", "paris", "PAR"],
                "Chicago": ["Chicago, IL", "chicago", "CHI"], "Berlin": ["Berlin, Germany", "berlin", "BER"], "Toronto": ["Toronto, ON", "toronto", "YTO"],
                "Seattle": ["Seattle, WA", "seattle"], "Boston": ["Boston, MA", "boston"], "Madrid": ["Madrid, Spain", "madrid"], "Rome": ["Rome, Italy", "roma"]}


class FunctionsWorld(World):
    LOOPS = LOOP_KINDS
    NEGS = ("pagination", "polling", "different_entities", "one_retry", "batch_edits", "near_miss", "normal")
    style = "openai_functions"

    def __init__(self, c: Ctx):
        super().__init__(c)
        self.indent = c.r.choice([None, 2])
        self.ts_field = c.chance(0.4)
        self._orders, self._flights, self._wx, self._cust = {}, {}, {}, {}
        self.year = c.rint(2024, 2025)

    def js(self, obj):
        return json.dumps(obj, indent=self.indent)

    def _txt(self, out):
        if isinstance(out, dict) and self.ts_field:
            out = dict(out, as_of="@@TS@@")
        return self.js(out) if not isinstance(out, str) else out

    def call(self, fn, args, out, err=False):
        return step(fn, args, fill_noise(self.c, self._txt(out)), err)

    def pr(self, fn, args, out, err=False):
        return Probe(fn, args, noisy(self.c, self._txt(out)), err)

    def order_id(self):
        return f"{self.c.r.choice(['ORD', 'A', 'SO'])}-{self.c.rint(10000, 999999)}"

    def order(self, oid):
        if oid not in self._orders:
            c = self.c
            st = c.r.choice(["processing", "shipped", "in_transit", "delivered", "awaiting_payment", "cancelled"])
            self._orders[oid] = {"order_id": oid, "status": st, "placed_at": c.ts()[:10],
                                 "items": [{"name": p, "qty": c.rint(1, 3)} for p in c.sample(PRODUCTS, c.rint(1, 3))],
                                 "carrier": c.r.choice(["UPS", "FedEx", "DHL", "USPS"]) if st in ("shipped", "in_transit", "delivered") else None,
                                 "estimated_delivery": c.ts()[:10] if st in ("shipped", "in_transit") else None, "total": round(c.r.uniform(12, 900), 2)}
        return self._orders[oid]

    def flights(self, o, d, date):
        k = (o, d, date)
        if k not in self._flights:
            c = self.c
            res = []
            for _ in range(c.rint(2, 6)):
                code, name = c.choice(AIRLINES)
                h = c.rint(5, 21)
                dur = c.rint(70, 900)
                res.append({"flight": f"{code}{c.rint(10, 2999)}", "airline": name, "depart": f"{date}T{h:02d}:{c.r.choice(['00', '15', '30', '45'])}",
                            "duration_min": dur, "stops": c.r.choice([0, 0, 1, 2]), "price": {"amount": c.rint(89, 2400), "currency": "USD"},
                            "cabin": c.r.choice(["economy", "premium_economy", "business"]), "seats_left": c.rint(1, 9)})
            self._flights[k] = {"origin": o, "destination": d, "date": date, "results": sorted(res, key=lambda r: r["price"]["amount"])}
        return self._flights[k]

    def weather(self, city):
        if city not in self._wx:
            c = self.c
            self._wx[city] = {"city": city, "temperature": c.rint(-10, 38), "units": "celsius", "conditions": c.r.choice(["clear", "partly cloudy", "light rain", "overcast", "snow showers", "thunderstorms"]),
                              "humidity": c.rint(20, 95), "wind_kph": c.rint(0, 60), "forecast": [{"day": d, "high": c.rint(-5, 40), "low": c.rint(-15, 25)} for d in ["Mon", "Tue", "Wed"]]}
        return self._wx[city]

    def customer(self, em):
        if em not in self._cust:
            c = self.c
            self._cust[em] = {"customer_id": f"cus_{c.hexid(10)}", "email": em, "tier": c.r.choice(["standard", "plus", "vip"]), "orders_count": c.rint(0, 80),
                              "since": c.ts()[:10], "open_tickets": c.rint(0, 3)}
        return self._cust[em]

    def date(self):
        return self.year, self.c.rint(1, 12), self.c.rint(1, 28)

    # ---- filler
    def filler_gens(self):
        return [self.f_order, self.f_flights, self.f_weather, self.f_customer, self.f_ticket, self.f_inventory]

    def f_order(self):
        oid = self.order_id()
        return "order:" + oid, self.call("get_order_status", {"order_id": oid}, self.order(oid))

    def f_flights(self):
        o, d = self.c.r.sample(self.c.pool(CITIES), 2)
        y, m, dd = self.date()
        date = f"{y}-{m:02d}-{dd:02d}"
        return f"flights:{o[1]}:{d[1]}:{date}", self.call("search_flights", {"origin": o[1], "destination": d[1], "date": date}, self.flights(o[1], d[1], date))

    def f_weather(self):
        city = self.c.choice(CITIES)[0]
        return "wx:" + city, self.call("get_weather", {"city": city, "units": "metric"}, self.weather(city))

    def f_customer(self):
        em = self.c.person()["email"]
        return "cust:" + em, self.call("lookup_customer", {"email": em}, self.customer(em))

    def f_ticket(self):
        c = self.c
        cust = self.customer(c.person()["email"])
        args = {"subject": c.r.choice(["Package not delivered", "Refund request", "Wrong item received", "Cannot log in", "Change shipping address", "Damaged on arrival"]),
                "description": prose(c, ["order issue"], 1), "priority": c.r.choice(["low", "normal", "high"]), "customer_id": cust["customer_id"]}
        return "ticket:" + args["subject"] + cust["customer_id"], self.call("create_ticket", args, {"ticket_id": f"T-{c.rint(10000, 99999)}", "status": "open", "created_at": c.ts()})

    def f_inventory(self):
        c = self.c
        sku = f"SKU-{c.rint(1000, 9999)}"
        wh = c.r.choice(["RNO1", "EWR2", "DFW3", "AMS1", "LHR4"])
        return "inv:" + sku, self.call("check_inventory", {"sku": sku, "warehouse": wh}, {"sku": sku, "warehouse": wh, "on_hand": c.rint(0, 500), "reserved": c.rint(0, 40),
                                                                                        "next_restock": c.ts()[:10]})

    # ---- loops
    def stuck(self):
        c = self.c
        scen = c.choice(["order_not_found", "refund_rejected", "ticket_validation", "no_flights"])
        if scen == "order_not_found":
            oid = self.order_id()
            return scen, self.pr("get_order_status", {"order_id": oid}, {"error": "order_not_found", "message": f"No order with id {oid}"}, True), []
        if scen == "refund_rejected":
            oid = self.order_id()
            return scen, self.pr("refund_order", {"order_id": oid, "amount": c.rint(50, 400), "reason": "damaged"},
                                 {"error": "refund_exceeds_balance", "refundable_amount": 0.0, "message": "This order has already been fully refunded."}, True), []
        if scen == "ticket_validation":
            args = {"subject": "Refund request", "description": "Customer wants a refund", "priority": "urgent"}
            return scen, self.pr("create_ticket", args, {"error": "validation_failed", "details": ["customer_id is required", "priority must be one of low|normal|high"]}, True), []
        o, d = c.r.sample(c.pool(CITIES), 2)
        y, m, dd = self.date()
        args = {"origin": o[1], "destination": d[1], "date": f"{y}-{m:02d}-{dd:02d}", "max_stops": 0}
        return scen, self.pr("search_flights", args, {"origin": o[1], "destination": d[1], "results": [], "message": "No flights match your criteria."}), []

    def state_probe(self):
        c = self.c
        if c.chance(0.5):
            oid = self.order_id()
            return "recheck_order", self.pr("get_order_status", {"order_id": oid}, self.order(oid)), ["order:" + oid]
        em = c.person()["email"]
        return "relookup_customer", self.pr("lookup_customer", {"email": em}, self.customer(em)), ["cust:" + em]

    def norm_probe(self):
        c = self.c
        pick = c.r.choice(["order", "customer", "flights"])
        if pick == "order":
            oid = self.order_id()
            pr = self.pr("get_order_status", {"order_id": oid}, self.order(oid))
            vs = [{"order_id": oid.lower()}, {"order_id": " " + oid}, {"order_id": oid + " "}, {"order_id": oid.replace("-", "- ")}, {"order_id": f'"{oid}"'}]
            return "order_id_trivial_variants", pr, vs, ["order:" + oid]
        if pick == "customer":
            em = c.person()["email"]
            pr = self.pr("lookup_customer", {"email": em}, self.customer(em))
            vs = [{"email": em.upper()}, {"email": em.capitalize()}, {"email": " " + em}, {"email": em + " "}, {"email": em.title()}]
            return "email_trivial_variants", pr, vs, ["cust:" + em]
        o, d = c.r.sample(c.pool(CITIES), 2)
        y, m, dd = self.date()
        date = f"{y}-{m:02d}-{dd:02d}"
        args = {"origin": o[1], "destination": d[1], "date": date}
        pr = self.pr("search_flights", args, self.flights(o[1], d[1], date))
        vs = [{"destination": d[1], "origin": o[1], "date": date}, {"date": date, "origin": o[1], "destination": d[1]}, {"origin": o[1].lower(), "destination": d[1].lower(), "date": date},
              {"origin": " " + o[1], "destination": d[1], "date": date}, {"origin": o[1], "destination": d[1] + " ", "date": date}]
        return "flight_args_trivial_variants", pr, vs, [f"flights:{o[1]}:{d[1]}:{date}"]

    def paraphrase(self):
        c = self.c
        k = self.rep(3, 5)
        if c.chance(0.6):
            o, d = c.r.sample([x for x in c.pool(CITIES) if x[0] in CITY_ALIASES] or c.pool(CITIES), 2)
            y, m, dd = self.date()
            dates = _date_forms(y, m, dd)
            names_o = [o[1], o[0]] + CITY_ALIASES.get(o[0], [])
            names_d = [d[1], d[0]] + CITY_ALIASES.get(d[0], [])
            res = self.flights(o[1], d[1], dates[0])
            steps, seen = [], set()
            while len(steps) < k:
                args = {"origin": c.r.choice(names_o), "destination": c.r.choice(names_d), "date": c.r.choice(dates)}
                if c.chance(0.3):
                    args["passengers"] = 1
                key = json.dumps(args, sort_keys=True)
                if key in seen:
                    continue
                if not steps:
                    args = {"origin": o[1], "destination": d[1], "date": dates[0]}
                    key = json.dumps(args, sort_keys=True)
                seen.add(key)
                out = dict(res)
                if steps and c.chance(0.3):
                    out = dict(res, results=[dict(r, seats_left=max(1, r["seats_left"] - 1)) for r in res["results"]])
                steps.append(self.call("search_flights", args, out))
            return "flight_search_reworded", steps, [f"flights:{o[1]}:{d[1]}:{dates[0]}"]
        city = c.r.choice(list(CITY_ALIASES))
        names = [city] + CITY_ALIASES[city]
        wx = self.weather(city)
        steps = []
        for nm in c.r.sample(names, min(k, len(names))):
            steps.append(self.call("get_weather", {"city": nm, "units": c.r.choice(["metric", "metric", "celsius"])}, dict(wx, city=nm)))
        return "weather_city_reworded", steps, ["wx:" + city]

    def same_result(self):
        c = self.c
        k = self.rep(3, 6)
        if c.chance(0.5):
            p = c.person()
            f, l = p["first"].lower(), p["last"].lower()
            dom = p["email"].split("@")[1]
            guesses = list(dict.fromkeys([f"{f}.{l}@{dom}", f"{f}{l}@{dom}", f"{f[0]}{l}@{dom}", f"{f}@{dom}", f"{f}.{l}@gmail.com", f"{l}.{f}@{dom}", f"{f}_{l}@{dom}"]))
            steps = [self.call("lookup_customer", {"email": g}, {"error": "customer_not_found"}, True) for g in c.r.sample(guesses, min(k, len(guesses)))]
            return "customer_guesses_not_found", steps, []
        n = c.rint(10000, 999999)
        forms = [f"ORD-{n}", str(n), f"#{n}", f"ord-{n}", f"ORDER-{n}", f"A-{n}", f"SO-{n}", f"{n:08d}"]
        steps = [self.call("get_order_status", {"order_id": f}, {"error": "order_not_found", "message": "No order matches the given id."}, True) for f in c.r.sample(forms, k)]
        return "order_id_formats_not_found", steps, []

    def alt_probes(self, m):
        c = self.c
        oid = self.order_id()
        em = c.person()["email"]
        probes = [self.pr("get_order_status", {"order_id": oid}, self.order(oid)), self.pr("lookup_customer", {"email": em}, self.customer(em))]
        sku = f"SKU-{c.rint(1000, 9999)}"
        probes.append(self.pr("check_inventory", {"sku": sku, "warehouse": "RNO1"}, {"sku": sku, "warehouse": "RNO1", "on_hand": 0, "reserved": 0, "next_restock": None}))
        return "order_customer_cycle", probes[:m], ["order:" + oid, "cust:" + em, "inv:" + sku]

    # ---- negatives
    def neg_pagination(self):
        c = self.c
        cust = self.customer(c.person()["email"])
        pages = c.rint(3, 6)
        steps = []
        for pg in range(1, pages + 1):
            orders = [self.order(self.order_id()) for _ in range(c.rint(3, 5) if pg < pages else c.rint(0, 2))]
            steps.append(self.call("list_orders", {"customer_id": cust["customer_id"], "page": pg, "page_size": 5},
                                   {"page": pg, "total_pages": pages, "orders": [{"order_id": o["order_id"], "status": o["status"], "placed_at": o["placed_at"]} for o in orders]}))
        return "list_orders_pages", steps

    def neg_polling(self):
        c = self.c
        rid = f"re_{c.hexid(12)}"
        steps = []
        for st in statuses_converging(c, ["pending", "processing", c.r.choice(["succeeded", "succeeded", "failed"])]):
            steps.append(self.call("get_refund_status", {"refund_id": rid}, {"refund_id": rid, "status": st, "updated_at": c.ts()}))
        return "refund_status_converge", steps

    def neg_different_entities(self):
        c = self.c
        kind = c.r.choice(["weather", "orders", "flights", "inventory"])
        gen = {"weather": self.f_weather, "orders": self.f_order, "flights": self.f_flights, "inventory": self.f_inventory}[kind]
        steps = self.filler(c.rint(3, 7), gens=[gen])
        return "different_entities:" + kind, steps

    def neg_one_retry(self):
        c = self.c
        key, st = c.r.choice([self.f_order, self.f_flights, self.f_weather])()
        self.reserve([st], [key])
        first = dict(st, output=self.js({"error": c.r.choice(["service_unavailable", "upstream_timeout", "internal_error"]), "retryable": True}), is_error=True)
        return "function_retry_once", [first, st]

    def neg_batch_edits(self):
        c = self.c
        field, val = c.r.choice([("status", "closed"), ("priority", "low"), ("assignee", "tier2-support"), ("tags", ["duplicate"])])
        steps = []
        for _ in range(c.rint(3, 7)):
            tid = f"T-{c.rint(10000, 99999)}"
            steps.append(self.call("update_ticket", {"ticket_id": tid, field: val}, {"ticket_id": tid, "updated": True}))
        return "bulk_update_tickets", steps


# --------------------------------------------------------------------------- browser world
class BrowserWorld(World):
    LOOPS = LOOP_KINDS
    NEGS = ("pagination", "polling", "different_entities", "one_retry", "near_miss", "normal")
    style = "browser"

    def __init__(self, c: Ctx):
        super().__init__(c)
        self.shop = _slug(c.choice(COMPANIES)) + c.r.choice(["-store.com", ".shop", "-outlet.co"])
        self.prefix = c.r.choice(["browser.", "browser_", "playwright."])
        self._pages = {}
        self.products = [(p, f"/products/{_slug(p)}", c.rint(9, 400) + 0.99) for p in c.sample(PRODUCTS, 8)]

    def t(self, name):
        return self.prefix + name

    def snap(self, path, title, body):
        return f"URL: https://{self.shop}{path}\nTitle: {title}\n\n{body}"

    def page(self, path):
        if path in self._pages:
            return self._pages[path]
        c = self.c
        if path.startswith("/products/"):
            name = next((p for p, pth, _ in self.products if pth == path), path.rsplit("/", 1)[1].replace("-", " ").title())
            price = next((pr for p, pth, pr in self.products if pth == path), c.rint(9, 400) + 0.99)
            body = (f"[nav] Home > Products > {name}\n# {name}\n${price:.2f}  ★ {c.rint(30, 50) / 10} ({c.rint(3, 900)} reviews)\n"
                    f"{prose(c, [name.lower()], 3)}\n[select#size] Size: S M L XL\n[button#add-to-cart] Add to cart\n"
                    f"## Reviews\n" + "\n".join(f"- {c.choice(FIRST)}: {prose(c, [name.lower()], 1)}" for _ in range(c.rint(2, 5))))
            title = f"{name} | {self.shop}"
        elif path == "/cart":
            items = c.r.sample(self.products, c.rint(1, 3))
            body = "# Your cart\n" + "\n".join(f"- {p}  x1  ${pr:.2f}  [button.remove]" for p, _, pr in items) + f"\nSubtotal: ${sum(x[2] for x in items):.2f}\n[button#checkout] Proceed to checkout"
            title = "Cart"
        elif path == "/checkout":
            body = ("# Checkout\n[input#email] Email\n[input#name] Full name\n[input#address] Address\n[input#zip] ZIP / Postal code\n"
                    "[select#country] Country\n[input#card] Card number\n[button#place-order type=submit] Place order")
            title = "Checkout"
        elif path.startswith("/account"):
            body = f"# Account settings\nSigned in as {c.person()['email']}\n[tab] Profile  [tab] Addresses  [tab] Orders  [tab] Security\nTwo-factor authentication: {c.r.choice(['On', 'Off'])}\n[button#save] Save changes"
            title = "Account"
        else:
            body = "# " + path.strip("/").replace("-", " ").title() + "\n" + prose(c, [path.strip("/") or "store"], c.rint(3, 8))
            title = path.strip("/").title() or "Home"
        self._pages[path] = self.snap(path, title, body)
        return self._pages[path]

    # ---- filler
    def filler_gens(self):
        return [self.f_nav, self.f_nav, self.f_click_product, self.f_type, self.f_scroll]

    def f_nav(self):
        path = self.c.r.choice(["/", "/cart", "/account", "/help/shipping", "/help/returns", "/deals", "/new-arrivals", "/about"] + [p[1] for p in self.products])
        return "page:" + path, step(self.t("navigate"), {"url": f"https://{self.shop}{path}"}, self.page(path))

    def f_click_product(self):
        p = self.c.r.choice(self.products)
        return "page:" + p[1], step(self.t("click"), {"selector": f"a[href='{p[1]}']"}, self.page(p[1]))

    def f_type(self):
        c = self.c
        fld, val = c.r.choice([("#email", c.person()["email"]), ("#name", c.person()["name"]), ("#address", f"{c.rint(1, 999)} {c.choice(LAST)} Street"),
                               ("#zip", str(c.rint(10000, 99999))), ("input[name=q]", c.choice(PRODUCTS).split()[0].lower())])
        return "type:" + fld, step(self.t("type"), {"selector": fld, "text": val}, f"Typed {len(val)} characters into {fld}")

    def f_scroll(self):
        c = self.c
        path = c.r.choice([p[1] for p in self.products])
        amt = c.r.choice([400, 600, 800])
        body = "\n".join(f"- {c.choice(FIRST)} ({c.rint(1, 5)}★): {prose(c, ['review'], 1)}" for _ in range(c.rint(2, 4)))
        return "scroll:" + path, step(self.t("scroll"), {"direction": "down", "amount": amt}, f"Scrolled down {amt}px. Newly visible:\n{body}")

    # ---- loops
    def stuck(self):
        c = self.c
        scen = c.choice(["submit_validation", "load_more_noop", "nav_timeout"])
        if scen == "submit_validation":
            out = self.page("/checkout") + "\n\n[alert] Please fill in all required fields: ZIP / Postal code, Card number"
            return scen, Probe(self.t("click"), {"selector": "#place-order"}, const(out)), []
        if scen == "load_more_noop":
            out = self.page("/new-arrivals") + "\n[button.load-more] Load more (showing 24 of 24)"
            return scen, Probe(self.t("click"), {"selector": "button.load-more"}, const(out)), []
        url = f"https://{self.shop}/orders/{c.rint(100000, 999999)}/invoice.pdf"
        return scen, Probe(self.t("navigate"), {"url": url}, const(f"Error: page.goto: Timeout 30000ms exceeded.\nCall log:\n  - navigating to \"{url}\", waiting until \"load\""), True), []

    def state_probe(self):
        path = self.c.r.choice(["/cart", "/account", "/checkout", "/deals"])
        return "revisit_page", Probe(self.t("navigate"), {"url": f"https://{self.shop}{path}"}, const(self.page(path))), ["page:" + path]

    def norm_probe(self):
        c = self.c
        sel = c.r.choice(['button[type="submit"]', 'a[href="/checkout"]', 'input[name="coupon"]', 'div.modal button.close'])
        out = self.page("/checkout") + c.r.choice(["\n\n[alert] Please fill in all required fields", "\n\n[alert] Coupon code is invalid", "\n\n[modal] Sign up for 10% off  [x]"])
        pr = Probe(self.t("click"), {"selector": sel}, const(out))
        vs = [{"selector": sel.replace('"', "'")}, {"selector": sel.replace('"', "")}, {"selector": " " + sel}, {"selector": sel + " "}, {"selector": sel.replace(" ", "  ")},
              {"selector": sel.split("[")[0].upper() + ("[" + sel.split("[", 1)[1] if "[" in sel else "")}]
        vs = [v for v in vs if v["selector"] != sel]
        return "selector_trivial_variants", pr, vs, []

    def paraphrase(self):
        c = self.c
        out = self.page("/checkout") + "\n\n[alert] Please fill in all required fields: Card number"
        sels = ["#place-order", "text=Place order", 'button:has-text("Place order")', "form#checkout button[type=submit]", "//button[contains(., 'Place order')]",
                "role=button[name='Place order']", "button.btn-primary >> nth=-1"]
        k = self.rep(3, 6)
        steps = [step(self.t("click"), {"selector": s}, out) for s in c.r.sample(sels, k)]
        return "click_place_order_reworded", steps, []

    def same_result(self):
        c = self.c
        k = self.rep(3, 6)
        targets = ["#add-to-cart", "a[href='/cart']", "#checkout", "button.size-M", "nav a.account", "#newsletter-close", "footer a[href='/help/returns']"]
        steps = []
        for s in c.r.sample(targets, k):
            steps.append(step(self.t("click"), {"selector": s}, f"Error: Element is not clickable at point ({c.rint(100, 900)}, {c.rint(100, 700)}). Other element would receive the click: "
                                                                 f"<div class=\"cookie-consent-overlay\" role=\"dialog\">…</div>", True))
        return "overlay_blocks_clicks", steps, []

    def alt_probes(self, m):
        c = self.c
        amt = c.r.choice([500, 800, 1000])
        tail = "\n".join(f"- {p}  ${pr:.2f}" for p, _, pr in self.products[-3:])
        probes = [Probe(self.t("scroll"), {"direction": "down", "amount": amt}, const(f"Scrolled down {amt}px. Reached end of page. Visible:\n{tail}\n[footer] © {self.shop}")),
                  Probe(self.t("scroll"), {"direction": "up", "amount": amt}, const(self.page("/new-arrivals"))),
                  Probe(self.t("click"), {"selector": "button.load-more"}, const(self.page("/new-arrivals")))]
        return "scroll_up_down_cycle", probes[:m], []

    # ---- negatives
    def neg_pagination(self):
        c = self.c
        steps = []
        for pg in range(2, c.rint(4, 7) + 1):
            items = "\n".join(f"- {c.choice(PRODUCTS)} (#{c.rint(1000, 9999)})  ${c.rint(5, 300)}.99" for _ in range(c.rint(4, 8)))
            steps.append(step(self.t("click"), {"selector": "a.pagination-next"}, self.snap(f"/deals?page={pg}", f"Deals - page {pg}", f"# Deals (page {pg})\n{items}")))
        return "click_next_page_new_items", steps

    def neg_polling(self):
        c = self.c
        oid = c.rint(100000, 999999)
        path = f"/orders/{oid}/tracking"
        steps = []
        for st in statuses_converging(c, ["Label created", "In transit", "Out for delivery", "Delivered"]):
            steps.append(step(self.t("reload") if steps else self.t("navigate"), {} if steps else {"url": f"https://{self.shop}{path}"},
                              self.snap(path, "Track order", f"# Order #{oid}\nStatus: {st}\nLast update: {c.ts()}")))
        return "tracking_page_converge", steps

    def neg_different_entities(self):
        steps = self.filler(self.c.rint(3, 7), gens=[self.f_click_product])
        return "open_different_products", steps

    def neg_one_retry(self):
        c = self.c
        p = c.r.choice(self.products)
        url = f"https://{self.shop}{p[1]}"
        self.reserve([], ["page:" + p[1]])
        return "navigate_retry_once", [step(self.t("navigate"), {"url": url}, f"Error: net::ERR_CONNECTION_RESET at {url}", True),
                                       step(self.t("navigate"), {"url": url}, self.page(p[1]))]


# --------------------------------------------------------------------------- python (data analysis) world
DATASETS = [
    ("sales.csv", ["order_id", "date", "region", "product", "units", "revenue"]),
    ("churn.parquet", ["customer_id", "tenure_months", "plan", "monthly_charges", "support_calls", "churned"]),
    ("events.jsonl", ["event_id", "user_id", "event", "ts", "device", "duration_ms"]),
    ("sensor_readings.csv", ["sensor_id", "timestamp", "temp_c", "humidity", "battery", "site"]),
    ("tickets_export.csv", ["ticket_id", "created", "priority", "category", "resolution_hours", "csat"]),
    ("housing.csv", ["listing_id", "city", "bedrooms", "sqft", "year_built", "price"]),
    ("ab_test_results.csv", ["user_id", "variant", "sessions", "converted", "revenue", "country"]),
    ("inventory_snapshot.parquet", ["sku", "warehouse", "on_hand", "reserved", "reorder_point", "updated_at"]),
]


class PythonWorld(World):
    LOOPS = LOOP_KINDS
    NEGS = ("chunked_reading", "different_entities", "one_retry", "near_miss", "normal")
    style = "python"

    def __init__(self, c: Ctx):
        super().__init__(c)
        self.tool = c.r.choice(["python", "python", "execute_python", "run_python"])
        self.ds, self.cols = c.choice(DATASETS)
        self.nrows = c.rint(1200, 250000)
        self._rows = {}
        self.var = c.r.choice(["df", "df", "data", "sales" if "sales" in self.ds else "frame"])
        self.loaded = False

    def val(self, col, i):
        c = self.c
        if col.endswith(("_id", "id")):
            return c.rint(1000, 99999) if i >= 0 else 0
        if col in ("date", "ts", "timestamp", "created", "updated_at"):
            return c.ts()[:10]
        if col in ("region", "site", "warehouse", "country", "city"):
            return c.r.choice(["west", "east", "north", "south", "emea", "apac", "US", "DE", "BR", "JP"])
        if col in ("plan", "variant", "priority", "category", "device", "event", "product"):
            return c.r.choice(["A", "B", "pro", "basic", "high", "low", "billing", "mobile", "web", "click", "view", "widget", "gadget"])
        if col in ("churned", "converted"):
            return c.r.choice(["True", "False"])
        return round(c.r.uniform(0, 500), 2) if c.chance(0.5) else c.rint(0, 400)

    def rows(self, start, n):
        out = []
        for i in range(start, start + n):
            if i not in self._rows:
                self._rows[i] = [self.val(col, i) for col in self.cols]
            out.append(self._rows[i])
        return out

    def frame(self, start, n):
        rows = self.rows(start, n)
        idx_w = len(str(start + n))
        widths = [max(len(col), *(len(str(r[j])) for r in rows)) for j, col in enumerate(self.cols)]
        head = " " * idx_w + "  " + "  ".join(f"{col:>{w}}" for col, w in zip(self.cols, widths))
        body = [f"{start + i:<{idx_w}}  " + "  ".join(f"{str(v):>{w}}" for v, w in zip(r, widths)) for i, r in enumerate(rows)]
        return "\n".join([head] + body)

    def run(self, code, out, err=False):
        return step(self.tool, {"code": code}, out, err)

    def load_code(self):
        fn = "read_parquet" if self.ds.endswith("parquet") else ("read_json" if self.ds.endswith("jsonl") else "read_csv")
        extra = ", lines=True" if self.ds.endswith("jsonl") else ""
        return f"import pandas as pd\n{self.var} = pd.{fn}('data/{self.ds}'{extra})"

    # ---- filler
    def filler_gens(self):
        return [self.f_load, self.f_shape, self.f_vc, self.f_groupby, self.f_describe, self.f_plot, self.f_nulls, self.f_dtypes]

    def f_load(self):
        return "load", self.run(self.load_code() + f"\nprint({self.var}.head())", self.frame(0, 5))

    def f_shape(self):
        return "shape", self.run(f"print({self.var}.shape)", f"({self.nrows}, {len(self.cols)})")

    def f_vc(self):
        col = self.c.r.choice(self.cols[1:])
        vals = "\n".join(f"{self.val(col, 1)!s:<12}{self.c.rint(10, self.nrows // 3)}" for _ in range(self.c.rint(3, 7)))
        return "vc:" + col, self.run(f"{self.var}['{col}'].value_counts().head(10)", f"{col}\n{vals}\nName: count, dtype: int64")

    def f_groupby(self):
        c = self.c
        g, v = c.r.sample(self.cols[1:], 2)
        agg = c.r.choice(["mean", "sum", "median", "max"])
        rows = "\n".join(f"{self.val(g, 1)!s:<10}{round(c.r.uniform(1, 9000), 3):>14}" for _ in range(c.rint(3, 6)))
        return f"gb:{g}:{v}:{agg}", self.run(f"{self.var}.groupby('{g}')['{v}'].{agg}().sort_values(ascending=False)", f"{g}\n{rows}\nName: {v}, dtype: float64")

    def f_describe(self):
        c = self.c
        num = self.cols[-3:]
        stats = ["count", "mean", "std", "min", "25%", "50%", "75%", "max"]
        lines = ["       " + "".join(f"{n:>16}" for n in num)] + [f"{s:<7}" + "".join(f"{c.r.uniform(0, 9999):>16.4f}" for _ in num) for s in stats]
        return "describe", self.run(f"{self.var}.describe()", "\n".join(lines))

    def f_plot(self):
        c = self.c
        col = c.r.choice(self.cols[2:])
        fn = f"plots/{col}_hist.png"
        return "plot:" + col, self.run(f"import matplotlib.pyplot as plt\n{self.var}['{col}'].hist(bins={c.r.choice([20, 30, 50])})\nplt.title('{col}')\nplt.savefig('{fn}', dpi=120)\nprint('saved {fn}')", f"saved {fn}")

    def f_nulls(self):
        c = self.c
        return "nulls", self.run(f"{self.var}.isna().sum()", "\n".join(f"{col:<16}{c.r.choice([0, 0, c.rint(1, 500)])}" for col in self.cols) + "\ndtype: int64")

    def f_dtypes(self):
        return "dtypes", self.run(f"{self.var}.dtypes", self.dtypes())

    def dtypes(self):
        return "\n".join(f"{col:<16}{'int64' if col.endswith('id') else ('object' if col in ('date', 'region', 'plan', 'product', 'event', 'device', 'site', 'city', 'variant', 'country', 'category', 'priority', 'warehouse') else 'float64')}"
                         for col in self.cols) + "\ndtype: object"

    # ---- loops
    def tb(self, code_line, exc):
        return f"Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\n    {code_line}\n{exc}"

    def stuck(self):
        c = self.c
        scen = c.choice(["missing_column", "file_not_found", "dtype_error"])
        if scen == "missing_column":
            col = c.r.choice(["total_revenue", "Revenue", "customer", "amount_usd", "label"])
            code = f"{self.var}.groupby('{self.cols[2]}')['{col}'].sum()"
            return scen, Probe(self.tool, {"code": code}, const(self.tb(code, f"KeyError: 'Column not found: {col}'")), True), []
        if scen == "file_not_found":
            code = f"import pandas as pd\n{self.var} = pd.read_csv('{self.ds.replace('.', '_2024.')}')"
            return scen, Probe(self.tool, {"code": code}, const(self.tb(code.split('\n')[1], f"FileNotFoundError: [Errno 2] No such file or directory: '{self.ds.replace('.', '_2024.')}'")), True), []
        col = self.cols[-1]
        code = f"{self.var}['{col}'].astype(int).mean()"
        return scen, Probe(self.tool, {"code": code}, const(self.tb(code, f"ValueError: invalid literal for int() with base 10: '{c.rint(1, 99)}.{c.rint(10, 99)}'")), True), []

    def state_probe(self):
        if self.c.chance(0.5):
            return "recheck_shape", Probe(self.tool, {"code": f"print({self.var}.shape)"}, const(f"({self.nrows}, {len(self.cols)})")), ["shape"]
        return "recheck_columns", Probe(self.tool, {"code": f"print({self.var}.columns.tolist())"}, const(str(self.cols))), ["columns"]

    def norm_probe(self):
        scen, pr, keys = self.stuck() if self.c.chance(0.5) else self.state_probe()
        code = pr.inp["code"]
        vs = [code.replace("'", '"'), code + "\n", " " + code if "\n" not in code else code.replace("\n", "\n\n"), code.replace("(", "( ").replace(")", " )"),
              code + ";", code.replace(" = ", "=")]
        vs = [{"code": v} for i, v in enumerate(dict.fromkeys(vs)) if v != code]
        return "code_trivial_variants:" + scen, pr, vs, keys

    def paraphrase(self):
        c = self.c
        v = self.var
        k = self.rep(3, 5)
        fam = c.r.choice(["first_rows", "row_count", "columns"])
        if fam == "first_rows":
            out = self.frame(0, 5)
            codes = [f"{v}.head()", f"{v}.iloc[:5]", f"{v}[:5]", f"print({v}.head(5))", f"{v}.head(5).to_string()", f"{v}.loc[{v}.index[:5]]", f"display({v}.head())"]
        elif fam == "row_count":
            out = str(self.nrows)
            codes = [f"len({v})", f"{v}.shape[0]", f"print(len({v}.index))", f"{v}.index.size", f"{v}.count().max()", f"sum(1 for _ in {v}.itertuples())"]
        else:
            out = str(self.cols)
            codes = [f"{v}.columns.tolist()", f"list({v}.columns)", f"print(list({v}))", f"{v}.keys().tolist()", f"[c for c in {v}.columns]", f"{v}.columns.values.tolist()"]
        steps = [self.run(cd, out) for cd in c.r.sample(codes, k)]
        return "pandas_reworded:" + fam, steps, [{"first_rows": "load", "row_count": "shape", "columns": "columns"}[fam]]

    def same_result(self):
        c = self.c
        k = self.rep(3, 6)
        lib = c.r.choice(["polars", "pyarrow", "duckdb", "openpyxl", "statsmodels"])
        codes = [f"import {lib}", f"import {lib} as pl", f"from {lib} import *", f"import importlib\nimportlib.import_module('{lib}')", f"__import__('{lib}')",
                 f"import sys; sys.path.append('/usr/lib/python3/dist-packages')\nimport {lib}", f"%pip install {lib} --quiet\nimport {lib}"]
        steps = []
        for cd in c.r.sample(codes, k):
            last = cd.split("\n")[-1]
            steps.append(self.run(cd, self.tb(last, f"ModuleNotFoundError: No module named '{lib}'"), True))
        return "import_missing_module", steps, []

    def alt_probes(self, m):
        probes = [Probe(self.tool, {"code": f"{self.var}.head()"}, const(self.frame(0, 5))), Probe(self.tool, {"code": f"{self.var}.dtypes"}, const(self.dtypes())),
                  Probe(self.tool, {"code": f"print({self.var}.shape)"}, const(f"({self.nrows}, {len(self.cols)})"))]
        return "inspect_cycle", probes[:m], ["load", "dtypes", "shape"]

    # ---- negatives
    def neg_chunked_reading(self):
        c = self.c
        size = c.r.choice([20, 25, 40, 50])
        n = c.rint(3, 6)
        if c.chance(0.5):
            steps = [self.run(f"{self.var}.iloc[{i * size}:{(i + 1) * size}]", self.frame(i * size, min(size, 12)) + (f"\n\n[{size} rows x {len(self.cols)} columns]" if size > 12 else "")) for i in range(n)]
            return "iloc_windows", steps
        steps = [self.run(f"print(open('data/notes.txt').read()[{i * 4000}:{(i + 1) * 4000}])", prose(c, [self.ds] + c.sample(TECH, 1), c.rint(8, 16))) for i in range(n)]
        return "string_slices", steps

    def neg_different_entities(self):
        c = self.c
        g = self.cols[2]
        steps = []
        for val in c.r.sample(["west", "east", "north", "south", "emea", "apac", "US", "DE", "BR", "JP"], c.rint(3, 6)):
            num = self.cols[-1]
            steps.append(self.run(f"{self.var}[{self.var}['{g}'] == '{val}']['{num}'].describe()",
                                  "\n".join(f"{s:<6}{c.r.uniform(0, 5000):>14.4f}" for s in ["count", "mean", "std", "min", "max"]) + f"\nName: {num}, dtype: float64"))
        return "describe_per_segment", steps

    def neg_one_retry(self):
        code = self.load_code() + f"\nprint({self.var}.shape)"
        self.reserve([], ["load", "shape"])
        return "kernel_restart_retry", [self.run(code, "Error: kernel died unexpectedly (exit code 137). Restarting kernel...", True),
                                        self.run(code, f"({self.nrows}, {len(self.cols)})")]


# --------------------------------------------------------------------------- assembly
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


# pool() results are cached only for these module-level vocabulary lists (never for temporaries)
_POOL_CACHE: dict = {}

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


_PARTITIONED_IDS = {id(globals()[name]) for name in PARTITIONED}
_TEST_ONLY = {_key(x) for name in PARTITIONED for x in _held_out(globals()[name], "test")}
_DEV_ONLY = {_key(x) for name in PARTITIONED for x in _held_out(globals()[name], "dev")} - _TEST_ONLY
_TEST_ONLY = {x for x in _TEST_ONLY if isinstance(x, str)}
_DEV_ONLY = {x for x in _DEV_ONLY if isinstance(x, str)}
_CONST_LIST_IDS = {id(v) for v in list(globals().values()) if isinstance(v, list)}
_CONST_LIST_IDS |= {id(v) for v in FACT_PHRASINGS.values()}


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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--test-seed", type=int, default=None,
                    help="seed of the test split (default: --seed + 1). The test split of seed 1 was looked at "
                         "while tuning (issue 14.4): the blind split is a fresh seed, never used for tuning")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "data"))
    ap.add_argument("-n", "--n", type=int, default=DEFAULT_N, help="traces per split")
    ap.add_argument("--splits", default="dev,test")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for split in args.splits.split(","):
        seed = args.seed if split == "dev" else (args.test_seed if args.test_seed is not None else args.seed + 1)
        traces = generate_split(seed, split, args.n)
        path = os.path.join(args.out, f"synth_{split}.jsonl")
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(dumps_split(traces))
        nl = sum(t["label"]["loop"] for t in traces)
        print(f"wrote {path}: {len(traces)} traces ({nl} loops)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
