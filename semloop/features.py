"""Call → features: signatures, text to embed, and a content fingerprint of the result.

Everything here is pure and cheap (linear in the size of the call/result, with long texts
bounded), and deterministic across processes (no Python `hash()`), so features can be compared
between hook processes that share state on disk.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import zlib
from typing import Any

import numpy as np

from .config import THRESHOLDS

# -- canonical form --------------------------------------------------------------------------


def to_jsonable(value: Any) -> Any:
    """A JSON-compatible copy of `value`: dict keys become strings, tuples/sets become lists
    (sets sorted), bytes are decoded, NaN/inf and other objects become their `repr`."""
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, str):
        return _clean_str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, dict):
        return {_clean_str(str(k)): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((to_jsonable(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if hasattr(value, "model_dump"):  # pydantic objects (SDK content blocks)
        try:
            return to_jsonable(value.model_dump())
        except Exception:
            pass
    return _clean_str(repr(value))


def _clean_str(text: str) -> str:
    """Lone surrogates (invalid UTF-8 read with surrogateescape) would break encoding later."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="replace").decode("utf-8")


def canonical_json(value: Any) -> str:
    """Key order, nesting and non-JSON values never change the result."""
    return json.dumps(to_jsonable(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", errors="replace"), digest_size=12).hexdigest()


def exact_signature(tool: str, tool_input: Any) -> str:
    return digest(canonical_json([tool, tool_input]))


# -- normalized form -------------------------------------------------------------------------

_WS = re.compile(r"\s+")
_QUOTES = str.maketrans({"'": "", '"': "", "`": ""})
_DOT_SLASH = re.compile(r"(?<![\w.~])\./")
_TRAILING_SLASH = re.compile(r"(?<=[\w.-])/+(?=\s|$)")


def normalize_text(text: str) -> str:
    """Whitespace collapsed, case folded, quotes dropped, `./x` → `x`, `dir/` → `dir`.

    Case folding is "safe" for loop detection: two calls differing only in case are the same
    intent far more often than not, and the guard never runs the normalized form.
    """
    text = " ".join(text.split()).casefold().translate(_QUOTES)  # = _WS.sub(" ", text).strip(), 10x faster
    text = _DOT_SLASH.sub("", text)
    return _TRAILING_SLASH.sub("", text)


def normalize_value(value: Any) -> Any:
    """`normalize_text` applied to every string (keys included) at any depth."""
    if isinstance(value, str):
        return normalize_text(value)
    if isinstance(value, dict):
        return {normalize_text(str(k)): normalize_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize_value(v) for v in value]
    return value


# Free-text commentary that models attach to calls (Claude Code's Bash `description`, "reason"
# fields of custom tools): it varies between retries without changing what the call does, so the
# normalized signature, the embedded text and the entities leave it out (the exact signature
# keeps it: a retry with a reworded description is a "normalized" repeat).
COMMENTARY_KEYS = frozenset({"description", "reason", "reasoning", "explanation", "thought", "thoughts",
                             "rationale", "comment", "note", "justification"})


def action(tool_input: Any) -> Any:
    """The JSON-compatible input without its top-level commentary keys: what the call *does*."""
    return _without_commentary(to_jsonable(tool_input))


def _without_commentary(value: Any) -> Any:
    """A JSON-compatible input without its top-level commentary keys (see `action`)."""
    if isinstance(value, dict):
        kept = {k: v for k, v in value.items() if k.casefold() not in COMMENTARY_KEYS}
        # commentary is only commentary next to an action: a `think` tool's thought IS its input
        return kept if kept or not value else value
    return value


_TOOL_NAME_PART = re.compile(r"__|[./:]")


def is_message_tool(tool: str, names: tuple[str, ...]) -> bool:
    """Whether `tool` sends the agent's message to someone (`Config.message_tools`): its name, or
    the last part of a namespaced name (`mcp__chat__send_message`, `Slack.send_message`)."""
    name = tool.casefold()
    return name in names or _TOOL_NAME_PART.split(name)[-1] in names


def normalized_signature(tool: str, tool_input: Any) -> str:
    return digest(canonical_json([normalize_text(tool), normalize_value(action(tool_input))]))


def call_keys(tool: str, tool_input: Any) -> tuple[str, str, str, list[str]]:
    """`exact_signature`, `normalized_signature`, `skeleton_signature` and `call_values` of one call,
    with the input made JSON-compatible and normalized once (the guard's per-step path)."""
    clean = to_jsonable([tool, tool_input])
    exact = digest(json.dumps(clean, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    acted = _without_commentary(clean[1])
    normalized_tool, normalized_value = normalize_text(tool), normalize_value(acted)
    normalized = json.dumps([normalized_tool, normalized_value], sort_keys=True, separators=(",", ":"),
                            ensure_ascii=False)
    values: list[str] = []
    _leaves(acted, values)
    return exact, digest(normalized), _skeleton_digest(normalized_tool, normalized_value, normalized), values


# -- text rendering --------------------------------------------------------------------------


def render_value(value: Any) -> str:
    """Readable text of any JSON-ish value: strings as they are, dicts as `key: value` lines."""
    value = to_jsonable(value)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    parts: list[str] = []
    _render(value, parts)
    return "\n".join(parts)


def _render(value: Any, parts: list[str], key: str = "") -> None:
    if isinstance(value, dict):
        if value.get("type") == "text" and isinstance(value.get("text"), str):
            parts.append(value["text"])  # a content block (Anthropic, MCP, OpenAI): its text is the result
            return
        for k, v in value.items():
            _render(v, parts, k)
    elif isinstance(value, list):
        for v in value:
            _render(v, parts, key)
    elif value is not None and value != "":
        parts.append(f"{key}: {value}" if key else str(value))


def excerpt(text: str, limit: int) -> str:
    """Head and tail of `text` within `limit` characters (the middle of a long text is dropped)."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return text[:head] + " … " + text[-(limit - head):]


def call_values(tool_input: Any) -> list[str]:
    """The argument values of a call, as strings, commentary left out (see `action`). Argument
    names are left out on purpose: every call of a tool shares them, so they would make calls on
    different entities look alike. Computed once per step; the three functions below read it."""
    values: list[str] = []
    _leaves(action(tool_input), values)
    return values


def call_text(tool: str, values: list[str], limit: int, message: bool = False) -> str:
    """The call as a sentence-ish text for embedding: `tool: value; value`. For a message (see
    `is_message_tool`) its text alone, or what it asks for (`message_asks`) when it asks anything."""
    text = "; ".join(values)
    if message:  # what is said, whichever tool carries it
        return excerpt(message_asks(text) or text, limit)
    return excerpt(f"{tool}: {text}", limit)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# ("Once you have X" asks only with a request: "..., please share it"; "..., I can assist you" is an offer.)
_ASK = re.compile(r"\?|\b(please|could you|can you|let me know|i need|i'll need|i will need|"
                  r"need (your|the)|provide|share|send me|tell me|check (your|the))\b")
# Offers and courtesies ("If you have any other questions...", "Would you like me to transfer you?")
# close most customer-service messages whatever they say: they are not what the message asks for.
# Neither is a request to confirm an action: its details change with every answer ("just the lamp,
# not the bottle"), and asking again after a change is what a careful agent must do.
_OFFER = re.compile(r"^(if|feel free|don.t hesitate|thank|you.re welcome|have a|great|sure|certainly|of course)\b|"
                    r"any (other|more|further) (questions|assistance|help)|would you like|shall i|do you want me|"
                    r"should i|\bconfirm|\byes\b|please note|anything else")


# What a message that only closes says: thanks, "you're welcome", "feel free to reach out", "have a
# great day", "I'm here to help". Not offers to act ("shall I", "would you like me to"): those move on.
_CLOSING = re.compile(r"^(thanks?|thank you|you.re (very |most )?welcome|you are (very |most )?welcome|"
                      r"have a (great|good|nice|wonderful|fantastic|lovely|pleasant)|take care|good ?bye|bye|"
                      r"my pleasure|no problem|cheers)\b|glad (to|i could) help|happy to (help|assist)|"
                      r"best (regards|wishes)|enjoy your|feel free|don.t hesitate|reach out|get back to (me|us)|"
                      r"any (other|more|further) (questions|assistance|help)|anything else|wishing you|"
                      r"here (to|if) |look forward")


_DIGIT = re.compile(r"\d")


def is_closing(text: str, limit: int = 4000) -> bool:
    """A message that only closes the conversation: every sentence a courtesy (`_CLOSING`) or a
    few words ("Sofia!", an emoji), none with a number (an id, an amount: "Thanks, order #W1 is
    cancelled" reports something), and nothing asked. Three in a row with nothing done between is
    a conversation that keeps failing to end: an agent saying goodbye to a customer who keeps
    saying thanks, two agents thanking each other."""
    sentences = [s.strip() for s in _SENTENCE_END.split(text[:limit]) if s.strip()]
    return (bool(sentences) and not message_asks(text, limit)
            and all(not _DIGIT.search(s) and (_CLOSING.search(s.casefold()) or len(s.split()) <= 3) for s in sentences))


_ID_LIKE = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+|\b(?=[\w-]*\d)[\w-]{4,}\b")


def reply_answers(reply: str, message: str, limit: int = 2000) -> bool:
    """Whether a reply to the agent's message gives an identifier-like answer the message did not
    contain — an email, a zip code, an order or reservation number: the other side answered, so
    the next ask is a new turn, not the same one again. ("I don't have it" gives none.)"""
    found = set(_ID_LIKE.findall(reply[:limit].casefold()))
    return bool(found - set(_ID_LIKE.findall(message[:limit].casefold())))


_FILLER = frozenset("""a about after again all also am an and any are as ask at be been before being but by can
could details did do does for from further get give go going got had has have help here how i i'll i'm if in
information into is it it's its just know let like make may me more most my need needed no not now of on once
one or other our please proceed provide provided provides providing see send share so some still sure tell
than thank thanks that the their them then there these they this those to too up us very want was way we we'll
were what when where which while who will with would yes you you'll you're your assist assistance happy able
help helping check confirm continue look find following""".split())
_WORD = re.compile(r"[a-z][a-z0-9_'-]*")


# The last word of a piece of information one side asks the other for.
_INFO_NOUNS = frozenset("id ids number numbers code address email name names date dates password pin account "
                        "reference confirmation zip phone".split())


def ask_terms(asks: str) -> frozenset[str]:
    """The pieces of information a message asks for, as content word pairs ending in an
    information noun ("reservation id", "zip code", "email address", "order number"), fillers and
    courtesy words left out. Two asks naming the same piece ask for the same thing."""
    words = [w for w in _WORD.findall(asks.casefold()) if w not in _FILLER and len(w) > 1]
    return frozenset(f"{a} {b}" for a, b in zip(words, words[1:], strict=False)
                     if b in _INFO_NOUNS and a not in _INFO_NOUNS)


def message_asks(text: str, limit: int = 4000) -> str:
    """The sentences of an agent's message that ask the other side for something (a question, a
    "please provide", "once you have X, let me know"), courtesies and offers left out; "" when it
    asks for nothing (an answer, a refusal, a goodbye). Two messages that ask for the same thing
    are a conversation loop in the making; two answers that share a closing line are not."""
    sentences = (s.strip() for s in _SENTENCE_END.split(text[:limit]))
    return " ".join(s for s in sentences if s and _ASK.search(s.casefold()) and not _OFFER.search(s.casefold()))


def _leaves(value: Any, out: list[str]) -> None:
    if isinstance(value, dict):
        for v in value.values():
            _leaves(v, out)
    elif isinstance(value, list):
        for v in value:
            _leaves(v, out)
    elif value is not None and value != "":
        out.append(str(value))


_TOKEN = re.compile(r"\w+")
_ENTITY = re.compile(r"[\w.~-]*[/.:@#=][\w./~:@#=?&%-]*\w|\b\w*\d\w*\b")


def entities(values: list[str], limit: int = 64) -> frozenset[str]:
    """Identifier-like tokens of a call's values — paths, file names, URLs, ids, numbers — which
    say *what* a call acts on. Two calls on different entities (src/a.py vs src/b.py, id=5 vs
    id=6) are not the same action however alike they read."""
    tokens = _ENTITY.findall(excerpt(" ".join(values), 4000).casefold())
    # a path is named by its last component: `docs/a.md` and `/home/me/repo/docs/a.md` are one file
    return frozenset(t.rstrip("/").rsplit("/", 1)[-1].strip(".") or t for t in tokens[:limit])


_REFS_CHARS = 20_000  # of a result read for `result_refs`: a bound on work per step, not tuning
_REF_NUMBER = re.compile(rb"(?<![0-9])[0-9]{3,9}(?![0-9])")


def result_refs(text: str, limit: int = 512) -> frozenset[int]:
    """Hashes of the numbers of 3 to 9 digits a result shows — a page's element ids, the ids of a
    listing, order numbers — at most `limit`: what a later call can act on (`novelty.led_on`
    compares them with its `entities`). Kept only as hashes (`ref_hash`), and not longer numbers
    (a card or phone number is nothing a hub page is walked by)."""
    numbers = dict.fromkeys(_REF_NUMBER.findall(text[:_REFS_CHARS].encode("utf-8", errors="replace")))
    # the first `limit` in page order (not a set's order, which changes with the process's hash seed)
    return frozenset(map(zlib.crc32, itertools.islice(numbers, limit)))  # = ref_hash of each, on its bytes


def ref_hash(token: str) -> int:
    """The hash `result_refs` keeps of a token."""
    return zlib.crc32(token.encode("utf-8", errors="replace"))


# Script and source extensions; not one-letter ones (`.c`, `.r`), which are as often attributes in
# the code a call carries (`self.c`, `df.r`).
_PROGRAM = re.compile(r"\w\.(py|sh|bash|js|mjs|cjs|ts|rb|pl|php|go|rs|java|kt|cc|cpp|jl|lua|swift)$")


def program_files(entities: frozenset[str]) -> frozenset[str]:
    """The program files a call names (`repro_dates.py`, `check.sh`): scripts it writes or runs."""
    return frozenset(e for e in entities if _PROGRAM.search(e))


# A search that prints nothing found nothing: `find`, `grep`, `which` (also at the end of a pipe:
# `pip list | grep x`), or a tool named for searching. Its empty output is the "empty" answer
# (`error_class`), the one varied attempts can keep getting; an empty `cd` or `export` says nothing.
_SEARCH_COMMAND = re.compile(r"(?:^|[|;&(]\s*)(?:find|grep|egrep|fgrep|rg|ag|ack|locate|which|whereis|fd|git grep)\s",
                             re.M)
_SEARCH_TOOL = re.compile(r"search|find|grep|glob|lookup|locate", re.I)


def is_search(tool: str, values: list[str]) -> bool:
    """Whether a call searches (see `_SEARCH_COMMAND`): its tool's name, or a search command in
    its first value (a shell tool's command)."""
    return bool(_SEARCH_TOOL.search(tool)) or bool(values) and bool(_SEARCH_COMMAND.search(values[0][:2000]))


# Calls that change a file through an editor command rather than a shell: the result shows the
# edited text, not a bare acknowledgement, so `is_acknowledgement` cannot tell them. SWE-agent's
# `edit 12:14` and `create f`, and the str_replace editors (SWE-agent 1.x, OpenHands, Anthropic's
# text editor tool: `{"command": "str_replace", "path": ...}`, or the same as one command line).
_EDIT_COMMAND = re.compile(r"^\s*(?:edit\s+\d+(?::\d+)?\s|create\s+\S|(?:str_replace_editor\s+)?"
                           r"(?:str_replace|insert|create)\s+/\S)")
_EDITOR_COMMANDS = frozenset({"create", "str_replace", "insert"})
_EDIT_PATH_KEYS = frozenset({"file_path", "path", "filePath", "notebook_path"})
_EDIT_TEXT_KEYS = frozenset({"old_string", "new_string", "old_str", "new_str", "content", "file_text", "edits",
                             "new_source"})
# A shell command that edits a file in place (`sed -i`, `perl -pi`): it succeeds silently, with an
# empty output (or a bare return code), so only the call says it wrote.
_SHELL_EDIT = re.compile(r"(?:^|[;&|(]\s*)(?:sed\s+(?:-[^i\s]\S*\s+)*-i|perl\s+(?:-\S+\s+)*-\w*i)")


def is_edit(tool_input: Any, values: list[str]) -> bool:
    """Whether a call edits a file: an editor command (`_EDIT_COMMAND`), an edit tool's arguments
    (a file path with the text to write or replace, `_EDIT_PATH_KEYS` and `_EDIT_TEXT_KEYS`: Claude
    Code's Edit / MultiEdit / Write, Gemini CLI's replace / write_file, Copilot CLI's edit / create),
    a patch (`apply_patch`), or an in-place edit from a shell (`_SHELL_EDIT`)."""
    if isinstance(tool_input, dict):
        command = tool_input.get("command")
        if isinstance(command, str) and command in _EDITOR_COMMANDS:  # (a command may be an argv list)
            return True
        if _EDIT_PATH_KEYS & tool_input.keys() and _EDIT_TEXT_KEYS & tool_input.keys():
            return True
    if not values:
        return False
    head = values[0][:2000]
    if head.lstrip().startswith(("*** Begin Patch", "apply_patch")):
        return True
    # (the substring test first: ~20x cheaper than the search, and most commands have neither word)
    return bool(_EDIT_COMMAND.match(head[:200]) or ("sed" in head or "perl" in head) and _SHELL_EDIT.search(head))


def _values_text(values: list[str]) -> str:
    return excerpt(" ".join(values), 2000).casefold()  # bounded: a call may carry a whole file


def input_words(values: list[str], limit: int = 64) -> frozenset[str]:
    """The words of a call's values (casefolded, bounded): what a result may merely echo."""
    return frozenset(_TOKEN.findall(_values_text(values))[:limit])


def plain_words(values: list[str], limit: int = 64) -> frozenset[str]:
    """The words of a call's values that stand alone, outside any path, URL, address or number
    (`queries` in `runtests.py queries`; not `archive` in `https://x.org/archive/page`)."""
    return frozenset(_TOKEN.findall(_ENTITY.sub(" ", _values_text(values)))[:limit])


def short_result_words(normalized_result: str, size: int,
                       short_result: int = THRESHOLDS.short_result) -> tuple[str, ...]:
    """The words of a short result (fewer distinct words than `Thresholds.short_result`), kept so
    that two short results can be compared without the parts that echo their calls (`"city":
    "TYO"` vs `"city": "Tokyo"`)."""
    return tuple(_TOKEN.findall(normalized_result)) if size < short_result else ()


ACK_WORDS = frozenset("""0 ok okay success successful successfully succeeded done true updated saved created
written wrote applied deleted removed modified changed exit exitcode code status returncode output result
execution none null file changes completed complete sent accepted delivered posted submitted published""".split())
"""Words of a result that only says the call ran: an empty output in a harness's wrapper
(`<returncode>0</returncode><output></output>`, `exitcode: 0 (execution succeeded)`), "OK",
"file updated", `{"status": "sent"}` (one message of a batch to many recipients)."""


FUNCTION_WORDS = frozenset("the a an has have been was were is are to of in at for with by on".split())
"""Words that carry no news in a short answer: "The file … has been updated.", "File written
successfully to …" say only that the call ran, like "ok"."""


SUCCESS_WORDS = frozenset("ok okay success successful successfully succeeded done".split())
READER_WORDS = frozenset("you your please".split())
"""Words of a sentence addressed to the agent: guidance a harness appends to a tool's answer."""


def is_acknowledgement(result: str, short_words: tuple[str, ...], result_size: int,
                       input_words: frozenset[str], short_result: int = THRESHOLDS.short_result) -> bool:
    """A result that says nothing of what its call did besides echoing it: every word is an
    acknowledgement word (`ACK_WORDS`) or one of the call's own words; or a success notice with
    guidance for the agent appended (Claude Code's TodoWrite answers every update with "Todos have
    been modified successfully. Ensure that you continue to use the todo list ..."): some sentence
    addresses the reader, and every other one says it succeeded, naming at most its subject
    (`todos`). ("-- Configuring done" alone is an answer: no guidance, and "configuring" is news.)"""
    if result_size >= short_result:
        return False

    def known(word: str) -> bool:
        return word in ACK_WORDS or word in FUNCTION_WORDS or word in input_words

    if all(known(w) for w in short_words):
        return True
    succeeded = guided = False
    for sentence in _SENTENCE_END.split(result):
        words = _TOKEN.findall(sentence)
        if READER_WORDS.intersection(words):
            guided = True
        elif words and (not all(known(w) for w in words[1:]) or not SUCCESS_WORDS.intersection(words)):
            return False
        elif words:
            succeeded = True
    return succeeded and guided


def entity_overlap(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


# -- results ---------------------------------------------------------------------------------

# Parts of a result that change on every run without meaning anything: clocks, durations, ids.
_VOLATILE = re.compile(
    r"\d{4}-\d{2}-\d{2}[t ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(z|[+-]\d{2}:?\d{2})?"  # ISO timestamps
    r"|\b\d{1,2}:\d{2}:\d{2}(\.\d+)?\b"  # clock times
    r"|\b\d+(\.\d+)?\s?(ms|µs|us|ns|sec|secs|seconds|s)\b"  # durations
    r"|\b(\d+h)?\d+m\d+(\.\d+)?s\b"  # 1m23.4s
    r"|\b0x[0-9a-f]{6,}\b"  # addresses
    r"|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",  # uuids
)
# Sizes of what is read and kept, not detection tuning (the thresholds are `config.Thresholds`):
# SKETCH_SIZE is part of the stored state (`state_format`); the others bound the work per step.
SKETCH_SIZE = 64
SKETCH_CHARS = 32_000


# Only tokens that start with a digit (or a hex uuid) can be volatile: find those with a cheap
# pattern, then run the full one on them (3x faster than `_VOLATILE.sub` over a whole web page).
_VOLATILE_CANDIDATE = re.compile(
    r"\b(?:\d|[a-f][0-9a-f]{7}-)[\w:.+-]*(?: ?(?:ms|µs|us|ns|sec|secs|seconds|s)\b| \d{1,2}:\d{2}[\w:.+-]*)?")


def _mask(match: re.Match[str]) -> str:
    token = match.group()
    if token.isdigit():  # every volatile pattern needs a non-digit (-, :, a unit, 0x): a plain number stays
        return token
    masked = _MASKED.get(token)
    if masked is None:
        if len(_MASKED) >= 4096:  # bounded: a long session's distinct ids cannot grow it
            _MASKED.clear()
        masked = _MASKED[token] = _VOLATILE.sub("#", token)
    return masked


_MASKED: dict[str, str] = {}  # candidate token → masked form (tokens such as "200ms" or "v2" repeat a lot)


# Volatile values named by a key: process ids, attempt counters, request/trace ids; temp-file
# names; relative times; spinner glyphs. Masked to `key #`, so "attempt 2 of 5 (pid 4312):
# connection refused" is the same result on every retry; a JSON key's closing quote may sit between
# the key and its value (`"request_id": "req_8fA2kq"`). Plain hex (commit hashes) is not masked:
# a new hash is news. Each pattern runs only when a cheap substring test says it can match.
_VOLATILE_KEYED = re.compile(
    r"\b(pid|attempt|try|retry|retrying|(?:request|req|trace|correlation|span|message|session|run|build|job)"
    r"[ _-]?id|x-request-id|etag)[\"']?(\s*[:=#]\s*|\s+)[\"']?[\w-]*\d[\w-]*")
_KEYED_HINTS = ("pid", "attempt", "try", "retr", "_id", " id", "-id", "etag")
_TEMP_NAME = re.compile(r"\btmp(?=[a-z_]*\d)[a-z0-9_]{6,}\b")
_AGO = re.compile(r"\b\d+(\.\d+)?\s?(min|mins|minutes?|h|hrs?|hours?|days?|weeks?|s|secs?|seconds?|m|d|w) ago\b")
_SPINNER = re.compile("[\u2800-\u28ff\u25d0-\u25d3\u25f4-\u25f7]+")
KEYED_MASK_CHARS = 2000
"""Keyed volatile values are masked in results up to this long (retry errors, status lines: where
they decide "same result"); a pass over every web page would cost more than it finds. A bound on
the work per step, like `RESULT_TOKENS`, `FACT_CHARS` and `MAX_FACTS`."""


def mask_keyed(text: str) -> str:
    """`text` (normalized) with keyed volatile values, temp names, relative times and spinners
    masked (see `_VOLATILE_KEYED`)."""
    if any(hint in text for hint in _KEYED_HINTS):
        text = _VOLATILE_KEYED.sub(lambda m: f"{m.group(1)} #", text)
    if "tmp" in text:
        text = _TEMP_NAME.sub("#", text)
    if " ago" in text:
        text = _AGO.sub("#", text)
    if not text.isascii():
        text = _SPINNER.sub("#", text)
    return text


RESULT_TOKENS = 400
"""Tokens of a result kept for learning its volatile places (`semloop.volatile`): the first 400."""
_FRACTION = re.compile(r"\d/\d|\d%")
_PUNCT = ",;:()[]{}\"'"


def result_tokens(normalized_result: str) -> tuple[int, ...]:
    """The whitespace-separated tokens of a normalized result of up to `KEYED_MASK_CHARS`
    characters, each as a hash (a stored step keeps no readable text of its result) whose three
    lowest bits say whether the token is shaped like a volatile value (bit 0: a digit in an id, a
    key=value, a number of 4+ digits; not a bare small number, "5 failed", which counts
    something), whether it is a count against a whole (bit 1: `2/4`, `45%`) and whether such a
    value is a bare number, no letter in it (bit 2: a pid, a counter, `line 36191:`), for comparing
    the results of one call place by place (`semloop.volatile`). () for a longer or empty result."""
    if not normalized_result or len(normalized_result) > KEYED_MASK_CHARS:
        return ()
    out = []
    for t in normalized_result.split()[:RESULT_TOKENS]:
        digit = any(c.isdigit() for c in t)
        if digit and len(t) <= 5 and t.strip(_PUNCT).replace(".", "").isdigit() and len(t.strip(_PUNCT)) <= 3:
            digit = False  # a bare small number counts something ("5 failed"): a quantity, news when it changes
        numeric = 4 if digit and not any(c.isalpha() for c in t) else 0
        out.append(zlib.crc32(t.encode()) << 3 | numeric | (2 if digit and _FRACTION.search(t) else 0) | digit)
    return tuple(out)


# Element ids at the head of an accessibility-tree line (`[2226] link 'Page 2'`: the page format of
# WebArena, BrowserGym and OpenHands' browser). The browser numbers the elements anew on each
# render, so one page seen twice differs in every id; they are volatile, like a clock.
_ELEMENT_REF = re.compile(r"(?m)^[ \t]*\[\d+\](?= )")

# `cat -n` line numbers (Claude Code's Read output): the same file read with `cat` has none.
_LINE_NUMBER = re.compile(r"(?m)^ *\d+\t")


def normalize_result(text: str) -> str:
    """Whitespace collapsed, case folded, `cat -n` line numbers dropped, volatile parts (clocks,
    durations, ids, a page's element ids) masked. Texts longer than `SKETCH_CHARS` keep their head
    and tail plus a digest of the whole text."""
    if len(text) > SKETCH_CHARS:
        text = excerpt(text, SKETCH_CHARS) + " #" + digest(text)
    if "\t" in text:
        text = _LINE_NUMBER.sub("", text)
    if "[" in text:  # an id may open the text, or a line indented with spaces
        text = _ELEMENT_REF.sub("[#]", text)
    # str.split() splits on exactly the characters `\s` matches: this is `_WS.sub(" ", text).strip()`
    text = _VOLATILE_CANDIDATE.sub(_mask, " ".join(text.split()).casefold())
    return mask_keyed(text) if len(text) <= KEYED_MASK_CHARS else text


# A command that says it exited nonzero ("Exit code 1", Copilot CLI's "completed with exit code 1").
_NONZERO_EXIT = r"exit ?code:? [1-9]|exit status [1-9]"

# Error classes, most specific first: varied attempts failing for the same reason share one.
_ERROR_CLASSES = [(name, re.compile(pattern)) for name, pattern in [
    ("permission", r"permission denied|not permitted|access denied|forbidden|eacces|\b403\b"),
    ("auth", r"unauthori[sz]ed|authentication failed|invalid api key|\b401\b"),
    ("command", r"command not found|not recognized as an internal"),
    ("module", r"no module named|modulenotfounderror|cannot find module|importerror"),
    ("not_found", r"no such file|not found|does not exist|cannot access|enoent|\b404\b"),
    ("timeout", r"timed out|timeout"),
    ("intercepted", r"not clickable at point|would receive the click|intercepts pointer events|click intercepted"),
    ("connection", r"connection refused|could not resolve|unreachable|econnrefused|connection reset|"
                   r"failed to connect|could not connect|couldn't connect|connectionerror"),
    ("rate_limit", r"rate limit|too many requests|\b429\b"),
    ("syntax", r"syntax ?error|unexpected token|parse error"),
    ("disk", r"no space left|enospc|disk (is )?full|quota exceeded|errno 28"),
    ("memory", r"out of memory|cannot allocate memory|memoryerror|oomkilled"),
    ("empty", r"^\(?0 rows\)?$|\(0 rows\)|^(\[\]|\{\}|null|none)$|"
              r"no (results|matches|records|rows|files|items|entries)( found)?|"
              r"found 0 |\b0 (results|matches|hits)\b|please narrow your search|too many (results|matches)"),
    ("exit", _NONZERO_EXIT + "|execution failed"),
    ("error", r"^(error|fatal|err!)\b|npm err!|\berror:|^traceback|\bexception\b|\bfailed\b|"
              r"^\{\s*\"(error|errors|error_message)\"\s*:(?!\s*(null|false|\"\"|\{\}|\[\]))"),
]]


_EMPTY = dict(_ERROR_CLASSES)["empty"]
_ANY_ERROR = re.compile("|".join(f"(?P<{name}>{pattern.pattern})" for name, pattern in _ERROR_CLASSES))
# Every match of `_ANY_ERROR` contains one of these words (a necessary condition, checked by the
# tests against the patterns): a head without any of them cannot match, and most heads have none.
_ERROR_WORDS = (
    "err", "denied", "permitted", "forbidden", "eacces", "403", "unauthori", "authentication", "api key", "401",
    "not found", "not recognized", "cannot find module", "no module", "no such file", "does not exist",
    "cannot access", "enoent", "404", "timed out", "timeout", "clickable", "receive the click", "intercept",
    "connect", "econnrefused", "could not resolve",
    "unreachable", "rate limit", "too many requests", "429", "syntax", "unexpected token", "no space left",
    "enospc", "disk", "quota exceeded", "out of memory", "cannot allocate memory", "oomkilled", "0 rows", "[]",
    "{}", "null", "none", "no results", "no matches", "no records", "no rows", "no files", "no items",
    "no entries", "found 0 ", "0 results", "0 matches", "0 hits", "narrow your search", "too many", "exit",
    "failed", "fatal", "traceback", "exception")


def error_class(text: str, is_error: bool = False, search: bool = False) -> str | None:
    """The error class of a result: the first class whose pattern occurs early in it; "other"
    for a flagged error that fits none (the same-error signal then relies on the errors' shared
    content); else None. A long output not flagged as an error is judged on its first line only —
    a source file or web page that *mentions* "timeout" or "not found" is not an error. "empty"
    (no rows, no results, `[]`, "too many results, narrow your search", and no output at all from
    a `search`: `is_search`) is the non-informative answer that varied attempts can keep getting."""
    if search and not text.strip():
        return "empty"
    head = (text[:600] if is_error else text.lstrip()[:200].split("\n", 1)[0]).casefold()
    # substring tests are ~20x cheaper than the regex; most heads contain none of the words
    if any(word in head for word in _ERROR_WORDS) and _ANY_ERROR.search(head):
        return next(name for name, pattern in _ERROR_CLASSES if pattern.search(head))
    if not is_error and len(text) <= 300 and _EMPTY.search(text.strip().casefold()):
        return "empty"  # a short answer is judged whole: "(0 rows)" comes after a table header
    return "other" if is_error else None


def result_head(text: str, head_words: int = THRESHOLDS.head_words) -> str:
    """Digest of a result's first non-empty line, normalized: what the result is *about* (a page's
    title and URL). "" when that line is too short to name anything (`Exit code 1`, a table
    header): then it says nothing about two results being the same."""
    first = next((line for line in text[:2000].splitlines() if line.strip()), "")
    head = normalize_result(first[:500])
    return digest(head) if len(set(_TOKEN.findall(head))) >= head_words else ""


def result_sketch(normalized_result: str) -> tuple[tuple[int, ...], int]:
    """Bottom-k MinHash sketch of the distinct words of a result (the k smallest word hashes),
    and their number. Two sketches estimate Jaccard and containment of the results' vocabularies,
    so "same result" is judged on content — words, not punctuation, layout or embeddings."""
    words = set(_TOKEN.findall(normalized_result))
    if not words:
        return (), 0
    # one encode for all words (they are `\w+`: no newline inside), crc32 mapped in C
    crcs = map(zlib.crc32, "\n".join(words).encode("utf-8", errors="replace").split(b"\n"))
    if len(words) <= _NUMPY_FROM:  # numpy's fixed cost is larger than the work for a short result
        small = sorted({((c ^ (c >> 15)) * _MIX & _MASK64) >> 32 for c in crcs})
        return tuple(small[:SKETCH_SIZE]), len(small)
    ids = np.fromiter(crcs, dtype=np.uint64, count=len(words))
    mixed = np.sort(((ids ^ (ids >> np.uint64(15))) * np.uint64(_MIX)) >> np.uint64(32))
    distinct = mixed[np.concatenate(([True], mixed[1:] != mixed[:-1]))]  # not np.unique: it imports numpy.ma
    return tuple(distinct[:SKETCH_SIZE].tolist()), int(distinct.size)


_MIX = 0xBF58476D1CE4E5B9  # splitmix64's multiplier: spreads crc32 values before taking the bottom k
_MASK64 = (1 << 64) - 1  # numpy's uint64 product wraps; the pure-Python path masks to match
_NUMPY_FROM = 200  # words from which numpy is faster (the same sketch either way): speed, not tuning


# Facts a result states: versions, commit hashes, long numbers, paths. `pip show x`, `pip list |
# grep x` and `python -c "import x; print(x.__version__)"` word it differently, but all say 2.1.4.
_FACT = re.compile(r"\b\d+\.\d+(?:\.\d+)+\b|\bv?\d+\.\d+\b(?!\.)|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b|"
                   r"\b\d{5,}\b|(?<![\w/])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+\.\w+")
FACT_CHARS = 4000
MAX_FACTS = 24


def result_facts(normalized_result: str) -> frozenset[str]:
    """The facts a (normalized) result states, from its first `FACT_CHARS` characters: version
    numbers, hex hashes (by their 7-character prefix, as `git log --oneline` shows them), numbers
    of 5+ digits, file paths (by their last part). Masked volatile values (`#`) are not facts."""
    text = normalized_result[:FACT_CHARS]
    if "http/" in text:  # the protocol version of an HTTP status line is not a fact about anything
        text = _HTTP_VERSION.sub(" ", text)
    found = _FACT.findall(text)[:MAX_FACTS]
    return frozenset(f[:7] if _HEX.fullmatch(f) else f.rsplit("/", 1)[-1] for f in found)


_HEX = re.compile(r"[0-9a-f]{8,40}")
_HTTP_VERSION = re.compile(r"\bhttps?/\d(\.\d)?\b")


def fact_overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard overlap of two fact sets (0 when either states no fact)."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


# A status that is expected to change by itself: polling it again is waiting, not looping (yet).
_PENDING = re.compile(r"\b(pending|queued|in[ _-]?progress|running|building|deploying|starting|initializing|"
                      r"provisioning|waiting|processing|not ready|creating|scheduled|rolling out|syncing|"
                      r"in_transit|booting|restarting|updating)\b")


_PENDING_FIELD = re.compile(r'"(?:status|state|phase|stage)": "' + _PENDING.pattern)


def is_pending(normalized_result: str, size: int, pending_words: int = THRESHOLDS.pending_words) -> bool:
    """Whether a result reports a status still in progress ("STATUS: queued", "Building…"): a JSON
    record's status field in its first 400 characters (`"status": "pending"`, not the product a
    retail order lists, `"name": "running shoes"`), or a pending word in a brief text result (at
    most `Thresholds.pending_words` distinct words). A status line is brief ("STATUS: queued",
    "Building… 3/7"). In a long output — a pytest header ("running tests with …"), an apt log
    ("building dependency tree"), a page of docs ("creating …") — a pending word is one word among
    many, not the state of what is being polled."""
    head = normalized_result[:400]
    if head.startswith(("{", "[")):
        return bool(_PENDING_FIELD.search(head))
    return size <= pending_words and bool(_PENDING.search(head))


# A run that reports success: a test runner's summary (`5 passed`, unittest's `OK`, `BUILD SUCCESS`, "Build completed",
# `Tests run: 4, Failures: 0`), a script's "done successfully"; and no failure anywhere in it (a
# zero count of failures or errors is not one; a nonzero exit code is: "completed with exit code 1").
_SUCCESS = re.compile(r"\b(?:\d+ passed|passed|pass|ok|succeeded|success(?:ful|fully)?|completed)\b")
_NO_FAILURES = re.compile(r"\b(?:0|no) (?:failed|failures?|errors?)\b|\b(?:failures|errors|failed): 0\b")
_NO_FAILURE_HINTS = ("0 fail", "0 error", "no fail", "no error", ": 0")  # in every match of _NO_FAILURES
_FAILURE = re.compile(r"fail|error|traceback|exception|not ok\b|" + _NONZERO_EXIT)


def reports_success(normalized_result: str) -> bool:
    """Whether a result reports that what ran passed (`_SUCCESS`, or a zero count of failures:
    pyright's `0 errors, 0 warnings`) and nothing failed (`_FAILURE`, besides zero counts): a test
    run that passes, a clean type check, a script that says it succeeded. Rerunning it after an
    edit checks the edit, whatever it printed before (`novelty.unchanged_after_edit`)."""
    # (substring tests first: every zero count contains one of these, and most results none)
    zero = any(hint in normalized_result for hint in _NO_FAILURE_HINTS)
    rest = _NO_FAILURES.sub(" ", normalized_result) if zero else normalized_result
    return (rest != normalized_result or bool(_SUCCESS.search(normalized_result))) and not _FAILURE.search(rest)


# A call that waits: a tool named sleep / wait / delay / pause (or ending so: `mcp__x__wait_for`),
# or a shell command that sleeps. Its number is how long (seconds, as given).
_WAIT_TOOL = re.compile(r"(?:^|[_.:/-])(?:sleep|wait|wait_for|delay|pause)$", re.IGNORECASE)
_SLEEP_COMMAND = re.compile(r"(?:^|[;&|(]\s*)(?:sleep|wait)\s+(\d+(?:\.\d+)?)")
_SECONDS = re.compile(r"\d+(?:\.\d+)?")


def wait_seconds(tool: str, values: list[str]) -> float:
    """How long the call waits: the first number of a wait tool's arguments or of a `sleep N`
    command (0.0 when it gives none), -1.0 when the call does not wait."""
    if _WAIT_TOOL.search(tool):
        for v in values:
            if m := _SECONDS.search(v):
                return float(m.group())
        return 0.0
    for v in values:
        if ("sleep" in v or "wait" in v) and (m := _SLEEP_COMMAND.search(v)):
            return float(m.group(1))
    return -1.0


_CLOCK = re.compile(r"\d{4}-\d{2}-\d{2}[tT ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?|\b\d{1,2}:\d{2}:\d{2}\b"
                    r"|\b1[6-9]\d{8}(?:\d{3})?\b")


def result_clock(text: str, limit: int = 2000) -> str:
    """A digest of the timestamps a result shows (ISO dates with a time, clock times, Unix epoch
    seconds or milliseconds, relative times: "5 minutes ago") in its first `limit` characters, ""
    when it shows none. Two results of one call with different clocks were taken at different
    times: evidence that a poll waited."""
    head = text[:limit]
    if ":" not in head and not any(c.isdigit() for c in head[:200]):
        return ""
    stamps = _CLOCK.findall(head) + ([m.group() for m in _AGO.finditer(head.casefold())] if " ago" in head else [])
    return digest(" ".join(stamps))[:16] if stamps else ""


def skeleton_signature(tool: str, tool_input: Any) -> str:
    """The normalized signature with small standalone numbers replaced by `#`: calls that differ
    only in a creeping number (`max_depth` 2, 3, 4…, a growing `limit`, `sleep 5` → `sleep 10`)
    share it; calls on different ids (`T-79797`, `/orders/3462`, `8349118980`, `{"bid": "1123"}`)
    do not."""
    tool, value = normalize_text(tool), normalize_value(action(tool_input))
    return _skeleton_digest(tool, value, canonical_json([tool, value]))


def _skeleton_digest(normalized_tool: str, normalized_value: Any, normalized_json: str) -> str:
    """The skeleton of a normalized call (its canonical JSON given, to be reused): small numbers
    masked, except those that name something (`_mark_ids`)."""
    marked = _mark_ids(normalized_value)  # (already JSON-compatible: no `to_jsonable` walk)
    text = normalized_json if marked is None else json.dumps([normalized_tool, marked], sort_keys=True,
                                                             separators=(",", ":"), ensure_ascii=False)
    return digest(_NUMBER.sub("#", text))


# Keys (casefolded) whose value names a thing rather than sets an amount: a browser element (`bid`),
# a record (`order_id`), a position in a list (`index`). Their numbers are ids, whatever their size.
_ID_KEY = re.compile(r"(?:^|[_-])(?:id|ids|bid|uid|uuid|ref|idx|index)$")


# Keys whose value names a record (`reservation_id`, `order_ids`, `uuid`): not a page element
# (`bid`), which a browser renumbers on every render, nor a position (`index`).
_RECORD_KEY = re.compile(r"(?:^|[_-])(?:id|ids|uuid)$")


def id_values(tool_input: Any, limit: int = 16) -> frozenset[str]:
    """The values of a call's record-id arguments (`_RECORD_KEY`: `reservation_id`, `order_id`),
    casefolded: `HXDUBJ` names a record though it has no digit. Calls on different ids
    act on different things (batch work), however alike their answers."""
    out: list[str] = []

    def walk(value: Any, key: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, str(k).casefold())
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v, key)
        elif value is not None and not isinstance(value, bool) and _RECORD_KEY.search(key):
            out.append(str(value).casefold())

    walk(tool_input, "")
    return frozenset(out)


def _mark_ids(value: Any, key: str = "") -> Any:
    """`value` with the leaves under identifier keys (`_ID_KEY`) prefixed by `#`, which `_NUMBER`
    does not mask: clicking element 1123, then 845, is two targets, not a number creeping. None
    when there are none (the common case: the caller keeps its text)."""
    if isinstance(value, dict):
        marked = {k: _mark_ids(v, k) for k, v in value.items()}
        return None if all(m is None for m in marked.values()) else \
            {k: v if marked[k] is None else marked[k] for k, v in value.items()}
    if isinstance(value, list):
        marked_items = [_mark_ids(v, key) for v in value]
        return None if all(m is None for m in marked_items) else \
            [v if m is None else m for v, m in zip(value, marked_items, strict=False)]
    if key and not isinstance(value, bool) and isinstance(value, (str, int, float)) and _ID_KEY.search(key):
        return f"#{value}"
    return None


# A small standalone number (an option value); not a part of an id (`T-79797`, `#W123`, `/orders/3462`)
# nor a long number (ids again): only the former creep.
_NUMBER = re.compile(r"(?<![\w#.\-/])\d{1,4}(?:\.\d+)?(?![\w\-/])")


def content_similarity(a: tuple[int, ...], size_a: int, b: tuple[int, ...], size_b: int,
                       tiny_result: int = THRESHOLDS.tiny_result) -> tuple[float, float]:
    """Estimated (Jaccard, containment of the smaller in the larger) of two results' words.

    Jaccard says "the same text"; containment also says "one is a part of the other" (`head -n`
    of a file vs `cat`), which is only evidence of the same action when the calls differ: for
    one identical call, a shorter result (fewer failing tests) is news.
    """
    if size_a == 0 or size_b == 0:
        same = 1.0 if size_a == size_b else 0.0
        return same, same
    # The signals compare the same pairs again and again (every window step, every cycle check,
    # each later step): memoized on the sketches themselves, bounded.
    key = (a, size_a, b, size_b, tiny_result)
    known = _SIMILARITY.get(key)
    if known is None:
        if len(_SIMILARITY) >= 8192:
            _SIMILARITY.clear()
        known = _SIMILARITY[key] = _content_similarity(a, size_a, b, size_b, tiny_result)
    return known


_SIMILARITY: dict[tuple[tuple[int, ...], int, tuple[int, ...], int, int], tuple[float, float]] = {}


def _content_similarity(a: tuple[int, ...], size_a: int, b: tuple[int, ...], size_b: int,
                        tiny_result: int) -> tuple[float, float]:
    set_a, set_b = set(a), set(b)
    union_sketch = sorted(set_a | set_b)[:SKETCH_SIZE]
    both = len(set_a.intersection(set_b).intersection(union_sketch))  # union_sketch is distinct
    jaccard = both / len(union_sketch)
    if min(size_a, size_b) < tiny_result:  # a few words ("OK") inside a large result are not the same result
        return jaccard, jaccard
    intersection = jaccard * (size_a + size_b) / (1.0 + jaccard)  # |A∩B| = J(|A|+|B|)/(1+J)
    return jaccard, min(1.0, intersection / min(size_a, size_b))
