"""Replace common secret shapes by a short digest before a step is remembered.

A step's readable parts (the call preview used in messages, the call's entities and words, the
words of a short result) end up in the session store. Detection only compares them for equality,
so a secret is replaced by `redacted:<8 hex>` — a digest of the secret itself: the same token still
matches itself across steps, and nobody reading the store learns it.

Shapes covered: provider API keys (`sk-…`, `ghp_…`, `github_pat_…`, `xox?-…`, `AKIA…`, `AIza…`,
`glpat-…`), JSON web tokens, `Bearer <token>`, `password=…`/`token: …`-style assignments, and long
mixed letter+digit runs (32+ characters in text, 16+ in a single word; hex digests and UUIDs are
left alone, they are ids — so a hex-only API key is not recognized).
Free-form secrets (a short password typed as a plain word) cannot be recognized by shape.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Iterable, TypeVar

_KEYED = re.compile(
    r"(?i)(?:\b(bearer|basic)(\s+)()|"
    r"(?:\b|_)(token|api[_-]?key|apikey|secret|password|passwd|pwd|auth|access[_-]?key|private[_-]?key|"
    r"client[_-]?secret)(\s*[:=]\s*)(['\"]?))([^\s'\";,&]{6,})")
_TOKEN = re.compile(
    r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}|\bAKIA[0-9A-Z]{16}\b|\bAIza[0-9A-Za-z_-]{30,}"
    r"|\bglpat-[A-Za-z0-9_-]{20,}"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    r"|(?<![\w/+=-])(?=[A-Za-z0-9_+=-]*\d)(?=[A-Za-z0-9_+=-]*[A-Za-z])[A-Za-z0-9_+=-]{32,}(?![\w/+=-])")
_WORD = re.compile(r"(?=[A-Za-z0-9_]*\d)(?=[A-Za-z0-9_]*[A-Za-z])[A-Za-z0-9_]{16,}")
_ID_LIKE = re.compile(r"[0-9a-f-]+|[0-9A-F-]+")  # hex digests, UUIDs: identifiers, not secrets
_MARK = "redacted:"
MAX_WORD_CHARS = 64  # a stored word (entity, call or result word, fact): longer ones are `bounded`
MAX_TOOL_CHARS = 128  # a stored tool name

T = TypeVar("T", tuple, frozenset)


def _digest(secret: str) -> str:
    return _MARK + hashlib.blake2b(secret.encode("utf-8", errors="replace"), digest_size=4).hexdigest()


def _token(match: re.Match) -> str:
    text = match.group()
    return text if _ID_LIKE.fullmatch(text) else _digest(text)


def _keyed(match: re.Match) -> str:
    value = match.group(7)
    if value.startswith(_MARK):
        return match.group()
    return match.group()[:match.start(7) - match.start()] + _digest(value)


def redact_text(text: str) -> str:
    """`text` with secret-shaped substrings replaced by their digest (cheap when there are none)."""
    if len(text) < 6:
        return text
    return _KEYED.sub(_keyed, _TOKEN.sub(_token, text))


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
    for name in ("entities", "programs", "input_words", "plain_words", "short_words", "facts", "ask_terms"):
        setattr(step, name, redact_words(getattr(step, name)))
    return step


def contains_secret(texts: Iterable[str]) -> bool:
    """True if any text still holds a secret shape (for tests and audits)."""
    return any(redact_text(t) != t for t in texts)
