"""Replace common secret shapes by a short digest before a step is remembered or shown.

A step's readable parts (the call preview used in messages, the call's entities and words, the
words of a short result) end up in the session store, and `semloop report` / `scan` show traces.
Detection only compares them for equality, so a secret is replaced by `redacted:<8 hex>` — a digest
of the secret itself: the same token still matches itself across steps, and nobody reading the
store or the report learns it.

The rule set follows two maintained detectors, as regexes of our own (none copied): the provider
token shapes of gitleaks' default rules (MIT; github.com/gitleaks/gitleaks, config/gitleaks.toml):
AWS key ids (`AKIA`, `ASIA`, `AGPA`, ...), GitHub (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`,
`github_pat_`), GitLab `glpat-`, Slack `xox?-` / `xapp-`, Stripe `sk_live_` / `rk_`, OpenAI and
Anthropic `sk-…`, Google `AIza…`, npm `npm_`, PyPI `pypi-`, Hugging Face `hf_`, SendGrid `SG.`,
JSON web tokens and PEM private key blocks; and the context rules of Yelp's detect-secrets
(Apache-2.0; its KeywordDetector and BasicAuthDetector plugins): a value assigned to a name that
contains a secret word (`PGPASSWORD=…`, `SECRET_KEY=…`, `db.password: …`, `"SecretAccessKey": "…"`,
`api-key=…`), given to such a flag (`--password …`, `--token=…`), set by a `set` command (`aws
configure set aws_secret_access_key …`), a URL's password (`postgres://user:pw@host`), `curl -u
user:pw`, MySQL's `-pPASS`, `Bearer …` / `Basic …`. Plus long mixed letter+digit runs (32+
characters in text, 16+ in a single word; hex digests and UUIDs are left alone, they are ids — so a
hex-only key is recognized only by its context) and 40-character base64 runs (AWS secret keys).
Numbers are never taken for secrets (`max_tokens=4096`). A free-form secret in no such context
(a short password typed as a plain word) cannot be recognized by its shape.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from functools import partial
from typing import Any, TypeVar

_SECRET_WORD = (r"passw(?:or)?d|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|"
                r"credentials?|auth[_-]?key")
_VALUE = r"""(?:"(?P<dq>[^"\n]{3,})"|'(?P<sq>[^'\n]{3,})'|(?P<bare>[^\s'"`;,&|)<>]{3,}))"""
# Each starts with a literal, so the regex engine skips ahead to where one could match (a leading
# lookbehind would make it try every position: 20x slower on a long call); the start must not be
# inside a longer word, which `_context` checks.
_CONTEXT = [re.compile(head + _VALUE) for head in (
    # NAME=value, NAME: value, "Name": "value" (the name holds a secret word, or is pwd / auth / pass)
    rf"(?i)(?P<head>(?:(?:{_SECRET_WORD})[\w.-]*|pwd|auth|pass)[\"']?\s*[:=]\s*)",
    # --password value, --token=value, -secret value
    rf"(?i)(?P<head>--?(?:[\w-]*?(?:{_SECRET_WORD})[\w-]*|pass|pwd)(?:=|\s+))",
    # aws configure set aws_secret_access_key value; git config set ...token value
    rf"(?i)(?P<head>set\s+[\w.-]*?(?:{_SECRET_WORD})[\w.-]*\s+)",
    # curl -u user:pw, --user user:pw, --proxy-user user:pw
    r"(?P<head>(?:-u|--user|--proxy-user)(?:=|\s+)[\"']?[^\s:'\"]+:)",
    # Authorization: Bearer xxx / Basic xxx
    r"(?i)(?P<head>(?:bearer|basic)\s+)",
)]
_WHOLE_WORD = (False, True, True, True, True)  # only the name rule may start inside a name (PGPASSWORD)
_EXACT_NAMES = ("pwd", "auth", "pass")  # ... but these only as whole names
_HINTS = ("pass", "pwd", "secret", "token", "key", "credential", "auth", "-u", "--user", "bearer", "basic")
_CREDENTIAL = re.compile(r"[A-Z0-9+/=_]")  # in a Bearer / Basic value past its first character
_CANDIDATE = re.compile(r"[\w+/=.-]{16,}")  # every token shape lies within such a run
_URL_PASSWORD = re.compile(r"(?i)(?P<head>\b[a-z][a-z0-9+.-]*://[^\s:/@'\"]*:)(?P<bare>[^\s@/'\"]+)(?=@)")
_MYSQL = re.compile(r"(?i)\b(?:mysql|mariadb)")
_MYSQL_PASSWORD = re.compile(r"(?P<head>(?<=\s)-p)(?P<bare>[^\s-]\S*)")
_PEM = re.compile(r"(-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----)([\s\S]*?)(?=-----END|\Z)")
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
_TOKEN = re.compile(
    r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}|\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bxox[abposre]-[A-Za-z0-9-]{10,}|\bxapp-\d-[A-Za-z0-9-]{10,}"
    r"|\b(?:A3T[A-Z0-9]|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16}\b|\bAIza[0-9A-Za-z_-]{30,}"
    r"|\bglpat-[A-Za-z0-9_-]{20,}|\bnpm_[A-Za-z0-9]{36}\b|\bpypi-[A-Za-z0-9_-]{50,}|\bhf_[A-Za-z]{30,}\b"
    r"|\bSG\.[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    # a long mixed run: a value, not `name=value` whole, nor words joined by + (a URL's query)
    r"|(?<![\w/+-])(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{32,}={0,2}(?![\w/+-])"
    r"|(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]*\d)(?=[A-Za-z0-9/+]*[a-z])(?=[A-Za-z0-9/+]*[A-Z])"
    r"(?=[A-Za-z0-9/+]*[/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_WORD = re.compile(r"(?=[A-Za-z0-9_]*\d)(?=[A-Za-z0-9_]*[A-Za-z])[A-Za-z0-9_]{16,}")
_ID_LIKE = re.compile(r"[0-9a-f-]+|[0-9A-F-]+")  # hex digests, UUIDs: identifiers, not secrets
_MARK = "redacted:"
MAX_WORD_CHARS = 64  # a stored word (entity, call or result word, fact): longer ones are `bounded`
MAX_TOOL_CHARS = 128  # a stored tool name

T = TypeVar("T", tuple[str, ...], frozenset[str])


def _digest(secret: str) -> str:
    return _MARK + hashlib.blake2b(secret.encode("utf-8", errors="replace"), digest_size=4).hexdigest()


def _token(match: re.Match[str]) -> str:
    text = match.group()
    return text if _ID_LIKE.fullmatch(text) else _digest(text)


def _inside_word(match: re.Match[str]) -> bool:
    before = match.string[match.start() - 1] if match.start() else " "
    return before.isalnum() or before in "_.-"


def _context(match: re.Match[str], whole_word: bool = False) -> str:
    """The match with its value (the `dq`, `sq` or `bare` group) replaced by its digest; as it is
    when the value is a number, a flag or done already, or the match starts inside a word (for
    `whole_word` rules, and the short names pwd / auth / pass)."""
    name = next(g for g in ("dq", "sq", "bare") if match.groupdict().get(g) is not None)
    value = match.group(name)
    if value.startswith((_MARK, "-")) or _NUMBER.fullmatch(value):  # already done; a flag; a number
        return match.group()
    if match.group("head")[:1] in "bB" and not _CREDENTIAL.search(value[1:]):
        return match.group()  # `basic economy`, `bearer token`: Bearer / Basic take a credential
    head = match.group("head").lower()
    exact = head.startswith(_EXACT_NAMES) and not head.startswith(("passw", "passphrase", "auth_key", "auth-key"))
    if (whole_word or exact) and _inside_word(match):
        return match.group()  # `compass=north`, `xset a b`; but PGPASSWORD=... is a password
    start, end = match.start(name) - match.start(), match.end(name) - match.start()
    return match.group()[:start] + _digest(value) + match.group()[end:]


def redact_text(text: str) -> str:
    """`text` with secret-shaped substrings replaced by their digest (cheap when there are none)."""
    if len(text) < 6:
        return text
    if "PRIVATE KEY" in text:
        text = _PEM.sub(lambda m: m.group() if m.group(2).strip().startswith(_MARK) else
                        f"{m.group(1)}\n{_digest(m.group(2).strip())}\n", text)
    text = _CANDIDATE.sub(lambda run: _TOKEN.sub(_token, run.group()), text)
    low = text.lower()
    if any(hint in low for hint in _HINTS):
        for pattern, whole in zip(_CONTEXT, _WHOLE_WORD, strict=True):
            text = pattern.sub(partial(_context, whole_word=whole), text)
    if "://" in text:
        text = _URL_PASSWORD.sub(_context, text)
    if _MYSQL.search(text):
        text = _MYSQL_PASSWORD.sub(_context, text)
    return text


def bounded(text: str, limit: int = MAX_WORD_CHARS) -> str:
    """`text` if within `limit` characters, else its head, a digest of all of it and its tail in
    exactly `limit`: distinct long texts stay distinct, equal ones equal, and a stored word costs
    at most `limit` characters whatever the call (a state's size is bounded; docs/store.md)."""
    if len(text) <= limit:
        return text
    tail = min(15, limit // 4)
    mark = "~" + hashlib.blake2b(text.encode("utf-8", errors="replace"), digest_size=4).hexdigest() + "~"
    return text[:limit - tail - len(mark)] + mark + text[len(text) - tail:]


def _word(word: str) -> str:
    if _WORD.fullmatch(word) and not _ID_LIKE.fullmatch(word):
        return _digest(word)
    return bounded(redact_text(word))


def redact_words(words: T) -> T:
    """The same collection type, with secret-shaped words replaced (short words are left as is).
    Words are pieces of the call or result (often lower-cased): a piece of 16+ letters and digits
    mixed, not hex, is taken for (a piece of) a token."""
    if not any(len(w) >= 12 for w in words):
        return words
    return type(words)(_word(w) if len(w) >= 12 else w for w in words)


def redact_step(step: Any) -> Any:
    """A `StepRecord` made fit to keep: secret-shaped text in its readable fields replaced by
    digests (equality, all detection needs of them, is kept: the same secret gives the same
    digest), and every word and the tool name `bounded`."""
    step.tool = bounded(step.tool, MAX_TOOL_CHARS)
    step.call_preview = redact_text(step.call_preview)
    for name in ("entities", "programs", "input_words", "plain_words", "short_words", "facts", "ask_terms", "ids"):
        setattr(step, name, redact_words(getattr(step, name)))
    return step


def contains_secret(texts: Iterable[str]) -> bool:
    """True if any text still holds a secret shape (for tests and audits)."""
    return any(redact_text(t) != t for t in texts)


REDACT_CHARS = 8192  # a longer value is cut to its head and tail first: no feature reads more of it


def redact_values(values: list[str]) -> list[str]:
    """A call's values (`features.call_values`) with `redact_text` applied, before the words,
    entities and preview the guard keeps are taken from them. A value over `REDACT_CHARS` is
    first cut to its head and tail: the features read at most the first and last 4,000 characters
    of a call (`features.excerpt`), so they see the same text, and a long call costs no more."""
    out = []
    for value in values:
        if len(value) > REDACT_CHARS:
            value = value[:REDACT_CHARS // 2] + " … " + value[-REDACT_CHARS // 2:]
        out.append(redact_text(value))
    return out


def redact_value(value: Any) -> Any:
    """`value` (a tool input or output: text, or JSON-like data) with `redact_text` applied to every
    string in it, keys included; other values as they are."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {redact_value(k) if isinstance(k, str) else k: redact_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_value(v) for v in value)
    return value


def redact_trace(trace: Any) -> Any:
    """A `semloop.traces.Trace` whose steps' inputs and outputs are redacted (`redact_value`): what
    `semloop report` and `semloop scan` show by default (`--no-redact`: the trace as recorded)."""
    import dataclasses

    steps = tuple(dataclasses.replace(step, tool=redact_text(step.tool), input=redact_value(step.input),
                                      output=redact_value(step.output)) for step in trace.steps)
    return dataclasses.replace(trace, steps=steps)
