"""Gemini CLI's tool results, for its dialect of the hook layer (`hook_cli.GEMINI`: the table of
its events, fields and answers; `semloop hook|install|uninstall gemini-cli`).

Gemini CLI runs a hook command per event, with the event JSON on stdin, and reads one JSON object
from stdout (its hooks reference: https://geminicli.com/docs/hooks/reference). `hook_cli`
translates each Gemini event into the Claude Code hook's event and lets `claude_code.answer`
handle it, so both agents share one state store (SQLite) and the warm hook server, then translates
the answer:

- BeforeTool (→ PreToolUse): a call that continues a loop already warned about to the limit ends
  the agent loop before the tool runs: `{"continue": false, "stopReason": ...}`. Gemini CLI
  shows "Agent execution stopped: ..." with semloop's explanation to the user.
- AfterTool (→ PostToolUse, or PostToolUseFailure when `tool_response.error` is set): on "warn",
  `hookSpecificOutput.additionalContext` carries the hint, which Gemini CLI appends to the real
  tool result (inside `<hook_context>`). On "stop", `continue: false` ends the agent loop; Gemini
  CLI then replaces that call's result with the stop message.
- BeforeAgent (→ UserPromptSubmit): a new prompt after a stop lifts the stop; the loop memory is
  kept.
- SessionStart (only with `install gemini-cli --guidance`): `hookSpecificOutput.additionalContext`
  carries `semloop.guidance()`, which Gemini CLI puts before the first prompt (inside
  `<hook_context>`).

Sessions are keyed `gemini-cli/<session_id>`, apart from Claude Code's. The hook always exits 0
and prints one JSON object; any error prints `{}` (allow) and one line on stderr. This module
reads `tool_response` (`response_text`); the installer is `hook_install`'s, from the table.
Standard library only at import time.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

TARGET = "gemini-cli"
EVENTS = ("BeforeTool", "AfterTool", "BeforeAgent")
HOOK_TIMEOUT_MS = 15000  # Gemini CLI's `timeout` is in milliseconds (default 60000); a hook answers
#                         within hook_protocol.HOOK_BUDGET (10 s) of starting
SESSION_PREFIX = "gemini-cli/"

# Lines of run_shell_command's result that change on every run: they are not news.
_VOLATILE_LINES = re.compile(r"^(?:Process Group PGID: \d+|Background PIDs: [\d, ]*)\s*$", re.M)
_PID = re.compile(r"\(PID: \d+\)")
# Gemini CLI (0.61) wraps what a tool printed in these tags before the model sees it: the wrapper
# is on every result, so it says nothing about this one (and would hide its first line).
_UNTRUSTED = re.compile(r"^\s*<untrusted_context>\s*|\s*</untrusted_context>\s*$")


# ---------------------------------------------------------------------------------------------
# translation
# ---------------------------------------------------------------------------------------------


def response_text(response: Any) -> tuple[str, bool]:
    """Gemini CLI's `tool_response` ({llmContent, returnDisplay, error?}) → (text, is_error).

    `llmContent` is what the model gets: a string, a Part, or a list of Parts; text parts are
    joined, other parts (functionResponse, inlineData, ...) rendered with blobs digested. With
    `error` set, its message is the result and the call counts as failed."""
    from .claude_code import normalize_response

    if not isinstance(response, dict):
        return normalize_response("", response), False
    content = response.get("llmContent")
    parts = content if isinstance(content, list) else [content]
    texts = []
    for part in parts:
        if part is None:
            continue
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str) and len(part) == 1:
            texts.append(part["text"])
        else:
            texts.append(normalize_response("", part))
    text = _PID.sub("(PID)", _VOLATILE_LINES.sub("", _UNTRUSTED.sub("", "\n".join(texts)))).strip()
    error = response.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else str(error)
        return str(message or text or "tool call failed"), True
    return text, False
