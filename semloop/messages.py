"""Message templates. Written as plain factual statements: hints styled as system commands trip
prompt-injection defences in agents (Claude Code among them).

Placeholders: {tool}, {steps}, {reasons}, {count}, {warnings}, {call}.
"warn_message" is the hint for the agent's own message (a conversation loop): the replies to it
change every time, so "the result did not change" would not be true there.
"""

from __future__ import annotations

from typing import Mapping

DISTRIBUTION = "semloop-guard"  # the name on PyPI (`semloop` there is another project); imports and the command: semloop


def install_hint(extra: str) -> str:
    """The command that installs an extra; every install hint in semloop goes through here.

    >>> install_hint("redis")
    'pip install "semloop-guard[redis]"'
    """
    return f'pip install "{DISTRIBUTION}[{extra}]"'


TEMPLATES: dict[str, dict[str, str]] = {
    "en": {
        "warn": ("[semloop] This {tool} call repeats earlier step(s) {steps} ({reasons}), and the result "
                 "did not change. Running it again is unlikely to give new information. A different "
                 "approach, or telling the user what is blocking progress, would help more."),
        "warn_message": ("[semloop] This message repeats what message(s) {steps} already said ({reasons}). "
                         "The other side's answers are unlikely to change if it is said again. Looking up "
                         "what is missing with a tool, acting on what is known, or ending the conversation "
                         "would help more."),
        "stop": ("semloop stopped this run: the agent repeated the same action without progress "
                 "({reasons}; steps {steps}) after {warnings} earlier warning(s). The last repeated call "
                 "was {tool}: {call}. The run ends here; the work done so far is kept."),
        "stop_check": ("semloop blocked this {tool} call: it repeats a loop that was already flagged "
                       "{warnings} time(s) (steps {steps}). The call was not run."),
    },
    "zh": {
        "warn": ("[semloop] 此次 {tool} 调用重复了之前的步骤 {steps}（{reasons}），且结果没有变化。"
                 "再次执行不太可能得到新信息。换一种方法，或告诉用户是什么阻碍了进展，会更有帮助。"),
        "warn_message": ("[semloop] 这条消息重复了消息 {steps} 已经说过的内容（{reasons}）。再说一遍，对方的回答"
                         "也不太可能改变。用工具查找缺少的信息、根据已知信息行动，或结束对话，会更有帮助。"),
        "stop": ("semloop 已停止本次运行：代理在 {warnings} 次提醒之后仍重复同一操作而没有进展"
                 "（{reasons}；步骤 {steps}）。最后一次重复的调用是 {tool}：{call}。"
                 "运行在此结束；之前完成的工作均已保留。"),
        "stop_check": "semloop 阻止了此次 {tool} 调用：它重复了一个已被提醒 {warnings} 次的循环（步骤 {steps}）。该调用未执行。",
    },
}

REASONS: dict[str, dict[str, str]] = {
    "en": {
        "exact": "identical call and result",
        "normalized": "the same call up to spacing, case, quoting or commentary, same result",
        "paraphrase": "a reworded call with the same result",
        "same_result": "the same error or result from varied attempts",
        "cycle": "a repeating cycle of calls with unchanged results",
        "cluster": "this kind of call keeps returning without new results",
        "conversation": "the same message again (reworded) while nothing new was looked up or done",
    },
    "zh": {
        "exact": "相同的调用和结果",
        "normalized": "仅空白、大小写、引号或说明文字不同的相同调用，结果相同",
        "paraphrase": "换了说法的调用，结果相同",
        "same_result": "不同尝试得到相同的错误或结果",
        "cycle": "调用循环往复且结果不变",
        "cluster": "同类调用反复出现却没有新结果",
        "conversation": "重复发送相同（或换了说法）的消息，期间没有查询或执行任何新操作",
    },
}


# A key without an override of its own uses the override of the key it refines: a user who
# rewrote "warn" gets their text for a repeated message too.
_REFINES = {"warn_message": "warn"}


def render(key: str, language: str, overrides: Mapping[str, str], **values: object) -> str:
    template = overrides.get(key) or overrides.get(_REFINES.get(key, key)) or TEMPLATES[language][key]
    try:
        return template.format(**values)
    except (KeyError, IndexError, ValueError):  # a broken user template must not break the agent
        return TEMPLATES[language][key].format(**values)


def reason_text(kind: str, language: str) -> str:
    return REASONS[language].get(kind, kind.replace("_", " "))
