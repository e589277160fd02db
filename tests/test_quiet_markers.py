"""tests/semloop_texts.py finds what semloop adds (its notes and stop messages, in every language)
and nothing else: not a path or a package name that merely contains the word `semloop`."""

from semloop import LoopGuard
from semloop_texts import OPENINGS, added_by_semloop

OUT = "cat: /tmp/test.txt: Permission denied"


def _loop(language: str) -> list:
    guard = LoopGuard(language=language)
    call = ("Bash", {"command": "cat /tmp/test.txt"})
    return [guard.record(*call, OUT, is_error=True) for _ in range(5)] + [guard.check(*call)]


def test_every_message_of_a_loop_is_found_in_every_language():
    for language in ("en", "zh"):
        verdicts = _loop(language)
        # the warning, the stop, a call recorded after the stop, and a call refused before it runs
        assert [v.action for v in verdicts] == ["allow", "allow", "warn", "stop", "stop", "stop"], language
        for v in verdicts[2:]:
            assert added_by_semloop(v.annotate(OUT) if v.action == "warn" else v.message), (language, v.message)
        assert not added_by_semloop(OUT)


def test_paths_and_names_containing_the_word_are_not_semloop_output():
    sent = ('{"contents": [{"text": "skills: /home/dev/semloop/.gemini-cli/node_modules/@google/gemini-cli/'
            'bundle/skills"}], "cwd": "/tmp/semloop", "pkg": "semloop-guard", "cmd": "python -m semloop"}')
    assert "semloop" in sent and added_by_semloop(sent) == []
    assert all(o.startswith(("semloop", "[semloop]")) for o in OPENINGS) and len(OPENINGS) >= 5
