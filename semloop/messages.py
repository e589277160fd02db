"""Message templates. Written as plain factual statements: hints styled as system commands trip
prompt-injection defences in agents (Claude Code among them).

Every key of `TEMPLATES` can be overridden (`Config.messages`). Placeholders: {tool}, {steps},
{reasons}, {count}, {warnings}, {call}, {evidence} (what the earlier steps already showed, below),
{stop_step} (the step the run was stopped at) and {resume} (how the run goes on after a stop: the
"resume" template). A known placeholder with no value where a template is used is left out; an
unknown one (a typo) makes the default template be used instead.

"warn_message" is the hint for the agent's own message (a conversation loop): the replies to it
change every time, so "the result did not change" would not be true there.

{evidence} is made of the "evidence_*" templates: what a cited earlier step returned
("evidence_result", "evidence_failed"), what the other side already answered
("evidence_answer"), an empty result ("evidence_nothing"), and what an error class implies
("evidence_error", with {error} and {implication} from `ERRORS`). Quoted text is a bounded excerpt
of a stored, redacted result (`semloop.hints`), never the raw output.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# the name on PyPI (`semloop` there is another project); imports and the command: semloop
DISTRIBUTION = "semloop-guard"


def install_hint(extra: str) -> str:
    """The command that installs an extra; every install hint in semloop goes through here.

    >>> install_hint("redis")
    'pip install "semloop-guard[redis]"'
    """
    return f'pip install "{DISTRIBUTION}[{extra}]"'


def needs(integration: str, package: str, extra: str) -> str:
    """The one line an integration's ImportError says when its framework is missing: what it
    needs (`package`, in words) and the command that installs it (`install_hint(extra)`)."""
    return f"semloop's {integration} needs {package}: {install_hint(extra)}"


# Texts the framework integrations share (`semloop.integrations._base`).
STOPPED = "semloop stopped this run."
"""A stop verdict's text where it has none of its own."""
NOT_RUN = "Not run: semloop stopped this run before this call."
"""The result of a call that came after the stop in the same batch: it was not run."""
ENDED = {"en": "The run ends here; the work done so far is kept.",
         "zh": "运行在此结束；之前完成的工作均已保留。"}
"""What the "stop" template says about the end of the run, in each language."""


def ended(message: str | None, language: str) -> str:
    """A stop's last word to the user where the integration ends the run itself: `message` (the
    stop verdict's, or `STOPPED`) saying that the run ends here (unless it already does)."""
    text = message or STOPPED
    end = ENDED.get(language, ENDED["en"])
    return text if end in text else f"{text} {end}"


TEMPLATES: dict[str, dict[str, str]] = {
    "en": {
        "warn": ("[semloop] This {tool} call repeats earlier step(s) {steps} ({reasons}), and the result "
                 "did not change.{evidence} Running it again is unlikely to give new information. A different "
                 "approach, or telling the user what is blocking progress, would help more."),
        "warn_message": ("[semloop] This message repeats what message(s) {steps} already said ({reasons})."
                         "{evidence} The other side's answers are unlikely to change if it is said again. Looking "
                         "up what is missing with a tool, acting on what is known, or ending the conversation "
                         "would help more."),
        "stop": ("semloop stopped this run at step {stop_step}: the agent repeated the same action without "
                 "progress ({reasons}; steps {steps}) after {warnings} earlier warning(s). The last repeated call "
                 "was {tool}: {call}.{evidence} The run ends here; the work done so far is kept. {resume}"),
        "stop_check": ("semloop blocked this {tool} call: it repeats a loop that was already flagged "
                       "{warnings} time(s) (steps {steps}; {reasons}).{evidence} The call was not run. The run "
                       "is stopped at step {stop_step}. {resume}"),
        "stop_refused": ("semloop blocked this {tool} call: the run was stopped at step {stop_step} because of a "
                         "loop ({reasons}; steps {steps}), so no call runs until the stop is lifted. The call was "
                         "not run. {resume}"),
        "resume": "The user's next message lifts the stop.",
        "resume_session": ("The user's next message lifts the stop, and so does "
                           "`semloop sessions reset {session}`."),
        "resume_mcp": ("The proxy lifts the stop after {seconds} seconds without tool calls "
                       "(`semloop mcp-proxy --resume-after`), or when it is restarted."),
        "evidence_result": "Step {step} already returned: `{excerpt}`.",
        "evidence_failed": "Step {step} already failed the same way: `{excerpt}`.",
        "evidence_nothing": "Step {step} already returned nothing.",
        "evidence_answer": "The other side already answered at step {step}: `{excerpt}`.",
        "evidence_error": "Every attempt ended with {error}: {implication}.",
    },
    "zh": {
        "warn": ("[semloop] 此次 {tool} 调用重复了之前的步骤 {steps}（{reasons}），且结果没有变化。{evidence}"
                 "再次执行不太可能得到新信息。换一种方法，或告诉用户是什么阻碍了进展，会更有帮助。"),
        "warn_message": ("[semloop] 这条消息重复了消息 {steps} 已经说过的内容（{reasons}）。{evidence}"
                         "再说一遍，对方的回答也不太可能改变。用工具查找缺少的信息、根据已知信息行动，或结束对话，会更有帮助。"),
        "stop": ("semloop 已在步骤 {stop_step} 停止本次运行：代理在 {warnings} 次提醒之后仍重复同一操作而没有进展"
                 "（{reasons}；步骤 {steps}）。最后一次重复的调用是 {tool}：{call}。{evidence}"
                 "运行在此结束；之前完成的工作均已保留。{resume}"),
        "stop_check": ("semloop 阻止了此次 {tool} 调用：它重复了一个已被提醒 {warnings} 次的循环"
                       "（步骤 {steps}；{reasons}）。{evidence}该调用未执行。运行在步骤 {stop_step} 停止。{resume}"),
        "stop_refused": ("semloop 阻止了此次 {tool} 调用：运行已因一个循环（{reasons}；步骤 {steps}）"
                         "在步骤 {stop_step} 停止，解除之前不会执行任何调用。该调用未执行。{resume}"),
        "resume": "用户的下一条消息会解除停止。",
        "resume_session": "用户的下一条消息会解除停止，`semloop sessions reset {session}` 也可以。",
        "resume_mcp": ("代理在 {seconds} 秒内没有工具调用后解除停止（`semloop mcp-proxy --resume-after`），"
                       "重启代理也可以。"),
        "evidence_result": "步骤 {step} 已经返回：`{excerpt}`。",
        "evidence_failed": "步骤 {step} 已经以同样的方式失败：`{excerpt}`。",
        "evidence_nothing": "步骤 {step} 已经返回了空结果。",
        "evidence_answer": "对方在步骤 {step} 已经回答：`{excerpt}`。",
        "evidence_error": "每次尝试都以{error}结束：{implication}。",
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

ERRORS: dict[str, dict[str, tuple[str, str]]] = {
    # error class (features.error_class) → (the error in words, what it implies for the next attempt)
    "en": {
        "permission": ("a permission error", ("a different command form will not change that; the permissions "
                                              "have to change, or the user can grant access")),
        "auth": ("an authentication error", "retrying will not help until the credentials change"),
        "command": ("a command that is not installed", ("rewording the call will not find it; it has to be "
                                                        "installed, or another tool used")),
        "module": ("a missing module", "the package has to be installed, or the right environment used, first"),
        "not_found": ("a not-found error", ("the target is not where it was looked for; finding where it is (or "
                                            "whether it exists) comes before reading it again")),
        "timeout": ("a timeout", ("the same request is likely to time out again; a smaller request, or "
                                  "waiting, would help")),
        "intercepted": ("a click intercepted by another element", ("something covers the page (a banner, a dialog, "
                                                                  "an overlay); closing or accepting it comes before "
                                                                  "any other click")),
        "connection": ("a connection error", ("the service cannot be reached from here; retrying at once will "
                                              "not change that")),
        "rate_limit": ("a rate limit", ("calls are refused until the limit resets; waiting helps, rewording "
                                        "does not")),
        "syntax": ("a syntax error", ("the input itself is malformed; the fix is in the text, not in running it "
                                      "again")),
        "disk": ("a full disk", "space has to be freed first"),
        "memory": ("an out-of-memory error", ("the task needs less memory (a smaller input) before it can "
                                              "succeed")),
        "empty": ("no results", ("what is searched for is probably not there in this form; a broader query or "
                                 "another source would help")),
    },
    "zh": {
        "permission": ("权限错误", "换一种命令写法不会改变这一点；需要更改权限，或由用户授予访问权限"),
        "auth": ("身份验证错误", "在凭据更改之前，重试没有帮助"),
        "command": ("命令未安装", "改写调用也找不到它；需要先安装，或改用其他工具"),
        "module": ("缺少模块", "需要先安装该软件包，或使用正确的环境"),
        "not_found": ("找不到目标", "目标不在所查找的位置；应先确定它在哪里（或是否存在），再去读取"),
        "timeout": ("超时", "同样的请求很可能再次超时；缩小请求或稍等会有帮助"),
        "intercepted": ("点击被其他元素拦截", "页面被遮挡（横幅、对话框或遮罩层）；需要先关闭或接受它，再进行其他点击"),
        "connection": ("连接错误", "从这里无法连接到该服务；立即重试不会改变这一点"),
        "rate_limit": ("速率限制", "在限额重置前调用会被拒绝；等待有用，改写无用"),
        "syntax": ("语法错误", "输入本身格式有误；要修改的是文本，而不是再次运行"),
        "disk": ("磁盘已满", "需要先释放空间"),
        "memory": ("内存不足", "任务需要更少的内存（更小的输入）才能成功"),
        "empty": ("没有结果", "所查找的内容可能不以这种形式存在；放宽查询或换一个来源会有帮助"),
    },
}


# A key without an override of its own uses the override of the key it refines: a user who
# rewrote "warn" gets their text for a repeated message too.
_REFINES = {"warn_message": "warn"}


PLACEHOLDERS = frozenset({"tool", "steps", "reasons", "count", "warnings", "call", "evidence", "stop_step",
                          "resume", "session", "seconds", "step", "excerpt", "error", "implication"})


class _Values(dict[str, object]):
    def __missing__(self, key: str) -> str:
        if key in PLACEHOLDERS:  # a known placeholder this caller has no value for: left out
            return ""
        raise KeyError(key)  # a typo in a user's template: the default text is used instead


def render(key: str, language: str, overrides: Mapping[str, str], **values: object) -> str:
    template = overrides.get(key) or overrides.get(_REFINES.get(key, key)) or TEMPLATES[language][key]
    try:
        return template.format_map(_Values(values)).strip()
    except (KeyError, IndexError, ValueError, AttributeError):  # a broken user template must not break the agent
        return TEMPLATES[language][key].format_map(_Values(values)).strip()


def reason_text(kind: str, language: str) -> str:
    return REASONS[language].get(kind, kind.replace("_", " "))


def error_text(error_class: str | None, language: str, overrides: Mapping[str, str]) -> str:
    """The "evidence_error" sentence for an error class, "" for a class that implies nothing in
    particular (a generic failure, an exit status)."""
    words = ERRORS[language].get(error_class or "")
    if words is None:
        return ""
    return render("evidence_error", language, overrides, error=words[0], implication=words[1])


def with_resume(config: Any, key: str, **values: object) -> Any:
    """`config` whose "resume" text is the integration's own (`key`: "resume_mcp", "resume_session"),
    unless the user wrote a "resume" text of their own."""
    if config.messages.get("resume"):
        return config
    text = render(key, config.language, config.messages, **values).replace("{", "{{").replace("}", "}}")
    return config.replace(messages={**config.messages, "resume": text})
