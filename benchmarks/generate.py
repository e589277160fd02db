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
import string
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
        n = len(lst)
        if n >= 8:
            if self.split == "dev":
                return [x for i, x in enumerate(lst) if i % 4 != 3]
            return [x for i, x in enumerate(lst) if i % 4 != 1]
        if n >= 3 and self.split == "dev":
            return lst[:-1]  # last template of short lists is held out for test
        return list(lst)

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
        for m in c.r.sample(THIRD_PARTY, c.rint(0, 2)):
            lines.append(f"import {m}")
        other = c.choice(MODULES)
        lines.append(f"from {pkg}.{other} import {c.choice(VERBS)}_{c.choice(NOUNS)}")
        parts.append("\n".join(lines))
        consts = [f"logger = logging.getLogger(__name__)", f"_CACHE: dict[str, Any] = {{}}",
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
        parts = ["import pytest", "", f"from {pkg} import {mod}", ""]
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
        for sec in c.r.sample(MODULES, c.rint(2, 5)):
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
        deps = c.r.sample(THIRD_PARTY, c.rint(2, 6))
        return (f'[project]\nname = "{pkg}"\nversion = "{c.rint(0, 3)}.{c.rint(0, 20)}.{c.rint(0, 9)}"\nrequires-python = ">=3.{c.r.choice([9, 10, 11])}"\n'
                "dependencies = [\n" + "".join(f'    "{d}>={c.rint(1, 3)}.{c.rint(0, 30)}",\n' for d in deps) + "]\n\n"
                '[tool.pytest.ini_options]\ntestpaths = ["tests"]\naddopts = "-ra"\n')


def prose(c: Ctx, words, n):
    sents = []
    for _ in range(n):
        sents.append(c.r.choice(SENTENCES).format(
            Topic=words[0].capitalize(), tech=c.r.choice(words[1:] or TECH), noun=c.choice(NOUNS),
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
        vol = self.c.chance(0.3)
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
