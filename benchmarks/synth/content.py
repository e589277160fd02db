"""Procedural content: source files, prose, tables, HTTP responses, volatile noise."""
from __future__ import annotations

import json
import textwrap

from .context import Ctx
from .vocab import (
    ATTRS, COMPANIES, EXCEPTIONS, MODULES, MONTHS, NOUNS, PARAMS, SENTENCES, STDLIB, TECH, THIRD_PARTY, VERBS,
)


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


def slug(s: str) -> str:
    out = "".join(ch.lower() if ch.isalnum() else "-" for ch in s)
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-")


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
