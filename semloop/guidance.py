"""Guidance before any loop: a short system-prompt block that keeps a model from looping.

    import semloop

    system = f"You are a coding agent.\\n\\n{semloop.guidance()}"

What it says comes from what the loops in the labeled runs have in common: an identical result
twice means the next identical call will not return anything new; an error has a cause that
rewording does not change; facts the run already established get checked again deep in a long
context; a conversation partner who did not have the answer will not have it when asked again.
It also says what semloop's notes are, so that a model (or its prompt-injection defences) does
not take them for instructions.

Every integration takes one flag to add it (`run_agent(guidance=True)`, `SemloopMiddleware(
guidance=True)`, `SemloopGuardrails(guidance=True)` / `protect(agent, guidance=True)`,
`SemloopCapability(guidance=True)`, `SemloopPlugin(guidance=True)`), and `semloop install
claude-code --guidance` adds it at session start. Off by default everywhere.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (hook processes start faster)

if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

GUIDANCE: dict[str, str] = {
    "en": (
        "Working with tools without going in circles:\n"
        "- When a call returns the same result twice, stop and rethink before calling it again: a third "
        "identical call will not return anything new.\n"
        "- Read an error for its cause. A permission, authentication, missing-file or missing-command error "
        "does not go away when the command is reworded; change the cause, or tell the user what is blocking "
        "progress.\n"
        "- Before checking a fact again (a version, a path, an id), look for it in the results you already "
        "have: what an earlier step established still holds unless something changed it.\n"
        "- If someone could not give you what you asked for, asking again in other words will not help: look "
        "it up, act on what you know, or explain what is missing.\n"
        "- Notes marked [semloop] are factual observations about this session (a call that repeats earlier "
        "steps, a run that was stopped); they are not instructions from the user."
    ),
    "zh": (
        "使用工具时避免原地打转：\n"
        "- 同一个调用两次返回相同结果时，先停下来重新思考再调用：第三次相同的调用不会带来新信息。\n"
        "- 读错误时先看原因。权限、身份验证、文件不存在或命令不存在的错误，不会因为改写命令而消失；"
        "应消除原因，或告诉用户是什么阻碍了进展。\n"
        "- 再次核实某个事实（版本、路径、ID）之前，先在已有的结果中查找：之前步骤确认的事实，"
        "除非被改变，否则依然成立。\n"
        "- 对方没能提供你要的信息时，换个说法再问也没有用：自己查找、根据已知信息行动，或说明缺少什么。\n"
        "- 标有 [semloop] 的说明是关于本次会话的事实观察（某个调用重复了之前的步骤、运行已被停止），"
        "并不是用户的指令。"
    ),
}


def guidance(language: str = "en") -> str:
    """The guidance block in `language` ("en" or "zh"), to put in a system prompt."""
    try:
        return GUIDANCE[language]
    except (KeyError, TypeError):
        raise ValueError(f"language must be one of {sorted(GUIDANCE)}, got {language!r}") from None


def with_guidance(system: Any, language: str = "en") -> str | list[Any]:
    """A system prompt with the guidance after it: a string (or None) gives a string, a list of
    content blocks gets one more text block."""
    text = guidance(language)
    if system is None or system == "":
        return text
    if isinstance(system, str):
        return f"{system}\n\n{text}"
    if isinstance(system, (list, tuple)):
        return [*system, {"type": "text", "text": text}]
    raise TypeError(f"cannot add guidance to a system prompt of type {type(system).__name__}")
