"""`record_message` fails open like `record`: a text whose str() raises (an int past Python's
digit limit, an object whose __str__ raises or recurses) is an "allow" verdict carrying the
error, and the guard goes on working."""

import pytest

from semloop import LoopGuard


class Raises:
    def __str__(self):
        raise RuntimeError("boom")


class Recurses:
    def __str__(self):
        return str(self)


@pytest.mark.parametrize("text,error", [(10 ** 5000, "ValueError"), (Raises(), "RuntimeError"),
                                        (Recurses(), "RecursionError")], ids=["huge-int", "raises", "recurses"])
def test_a_text_that_cannot_be_a_string_is_allowed_with_the_error(text, error):
    guard = LoopGuard(detector="exact")
    verdict = guard.record_message(text, "reply")
    assert verdict.action == "allow" and verdict.error.startswith(error)
    actions = [guard.record("Bash", {"command": "ls /root"}, "Permission denied", is_error=True).action
               for _ in range(3)]
    assert actions == ["allow", "allow", "warn"]  # the guard still works


def test_without_fail_open_the_error_is_raised():
    with pytest.raises(RuntimeError, match="boom"):
        LoopGuard(detector="exact", fail_open=False).record_message(Raises())
