"""Coding agents: edit → rerun. A rerun after an edit whose output is the very same (volatile details
aside) brought no news, and two such rounds in a row are the loop; a rerun whose output moved, or
that passes, is progress (`novelty.moved_after_edit`, `novelty.unchanged_after_edit`). Hand-written
traces in the shape of mini-swe-agent and Claude Code sessions."""

from __future__ import annotations

import pytest

from semloop import Config, LoopGuard, features, novelty

MINI_SWE_EMPTY = "<returncode>0</returncode>\n<output>\n</output>"


def _mini(output: str, code: int = 0) -> str:
    return f"<returncode>{code}</returncode>\n<output>\n{output}\n</output>"


def _pytest_failure(test: str, got: str, line: int, run: int, failed: int = 1) -> str:
    """A pytest run failing `failed` tests; the timing, the tmp dir and an object address change
    from run to run, as they do."""
    return (
        "============================= test session starts ==============================\n"
        "platform linux -- Python 3.11.4, pytest-7.4.0, pluggy-1.2.0\n"
        "rootdir: /repo\ncollected 12 items\n\n"
        f"tests/test_dates.py {'.' * (12 - failed)}{'F' * failed}                               [100%]\n\n"
        "=================================== FAILURES ===================================\n"
        f"______________________________ {test} ______________________________\n\n"
        f"    def {test}():\n"
        f"        cache = WeekCache(tmpdir='/tmp/tmpq{run}x8z2k1')  # <WeekCache at 0x7f3a{run}c2e91d0>\n"
        f">       assert parse('2024-W01-1') == date(2024, 1, 1)\n"
        f"E       AssertionError: assert {got} == datetime.date(2024, 1, 1)\n\n"
        f"tests/test_dates.py:{line}: AssertionError\n"
        "=========================== short test summary info ============================\n"
        f"FAILED tests/test_dates.py::{test} - AssertionError: assert {got}\n"
        f"========================= {failed} failed, {12 - failed} passed in 0.{run + 31}s =========================")


PASSED = ("============================= test session starts ==============================\n"
          "platform linux -- Python 3.11.4, pytest-7.4.0, pluggy-1.2.0\nrootdir: /repo\ncollected 12 items\n\n"
          "tests/test_dates.py ............                                         [100%]\n\n"
          "============================== 12 passed in 0.38s ==============================")

STILL_WRONG = ("Parsing ISO week dates:\n  2024-W01-1 -> 2023-12-25 (expected 2024-01-01)\n"
               "  2024-W10-3 -> 2024-02-28 (expected 2024-03-06)\n  2025-W01-1 -> 2024-12-23 (expected 2024-12-30)\n"
               "ISSUE STILL PRESENT: week 1 starts a week early")

EDITS = [("dates/parse.py", "week - 1", "week"), ("dates/calendar.py", "isoweekday()", "weekday()"),
         ("dates/parse.py", "days=7 * week", "weeks=week"), ("dates/util.py", "jan4.weekday()", "jan4.isoweekday()")]


def _sed(k: int) -> dict:
    path, old, new = EDITS[k % len(EDITS)]
    return {"command": f"sed -i 's/{old}/{new}/' {path}"}


def _session(outputs: list[tuple[str, bool]], run: str = "python reproduce_issue.py") -> list[str]:
    """Edit → run, once per output (the first run comes before any edit): the actions of the runs."""
    guard = LoopGuard(Config())
    actions: list[str] = []
    for k, (output, failed) in enumerate(outputs):
        if k:
            guard.record("bash", _sed(k - 1), MINI_SWE_EMPTY)
        actions.append(guard.record("bash", {"command": run}, output, is_error=failed).action)
    return actions


def test_a_script_printing_the_same_wrong_answer_after_every_edit_is_a_loop():
    """The reproducer exits 0 and prints the same wrong dates after each edit, to three different
    files: the edits do not reach what it runs. The first rerun may be a fix that did not take; the
    second round with nothing moved is the loop, whatever file the edits touched."""
    out = _mini(STILL_WRONG)
    assert _session([(out, False)] * 3) == ["allow", "allow", "warn"]


def test_a_test_failing_the_same_way_after_every_edit_is_a_loop_whatever_its_timing_and_tmp_paths():
    """pytest fails on the same assertion at the same line after every edit; only the duration, a
    tmp directory and an object address differ (volatile details, masked)."""
    runs = [(_pytest_failure("test_parse_iso_week", "datetime.date(2023, 12, 25)", 41, run), True) for run in range(4)]
    assert _session(runs, run="pytest tests/test_dates.py")[:3] == ["allow", "allow", "warn"]


def test_a_failure_that_changes_after_each_edit_then_passes_is_progress():
    """Edit → the failure moves (another wrong value, another line, another failing test, fewer
    failures) → passes: each rerun brought news. Rerunning it once more after the last edit is
    the verification."""
    runs = [(_pytest_failure("test_parse_iso_week", "datetime.date(2023, 12, 25)", 41, 0, failed=3), True),
            (_pytest_failure("test_parse_iso_week", "datetime.date(2024, 1, 8)", 41, 1, failed=3), True),
            (_pytest_failure("test_parse_iso_week", "datetime.date(2024, 1, 8)", 44, 2, failed=2), True),
            (_pytest_failure("test_week_of_year", "53", 58, 3, failed=1), True),
            (PASSED, False), (PASSED, False)]
    assert _session(runs, run="pytest tests/test_dates.py") == ["allow"] * 6


def test_a_script_whose_printout_moves_after_each_edit_is_progress():
    """The same reproducer after each edit, its printout a little different each time (one date
    right more): the output moved, so every edit was progress, however alike the printouts are."""
    lines = STILL_WRONG.splitlines()
    fixed = ["  2024-W01-1 -> 2024-01-01 ok", "  2024-W10-3 -> 2024-03-06 ok", "  2025-W01-1 -> 2024-12-30 ok"]
    outs = [_mini("\n".join([lines[0], *fixed[:k], *lines[1 + k:4], "ISSUE STILL PRESENT"])) for k in range(4)]
    assert _session([(o, False) for o in outs]) == ["allow"] * 4


def test_one_verification_after_a_change_is_progress_the_same_one_again_and_again_is_not():
    """Edit, the tests pass: the check of the change. The very same check again and again with no
    change between is the loop; the check after each further edit is not."""
    guard = LoopGuard(Config())
    guard.record("bash", _sed(0), MINI_SWE_EMPTY)
    assert [guard.record("bash", {"command": "pytest tests/test_dates.py"}, PASSED).action
            for _ in range(3)] == ["allow", "allow", "warn"]
    assert _session([(PASSED, False)] * 5, run="pytest tests/test_dates.py") == ["allow"] * 5


def test_trying_a_second_fix_after_a_first_that_did_not_take_is_work():
    """One edit that did not change the output, then another that did: two tries are
    legitimate. Only the output staying put round after round is the signal."""
    out = _mini(STILL_WRONG)
    moved = _mini(STILL_WRONG.replace("2023-12-25 (expected 2024-01-01)", "2024-01-01 ok"))
    assert _session([(out, False), (out, False), (moved, False), (moved, False)]) == ["allow"] * 4


def test_rerun_rules_are_about_the_same_call_and_an_edit_between():
    """The pure relations: moved after an edit only with a write between and another output;
    unchanged after an edit only for the very same output that is not a clean check."""
    guard = LoopGuard(Config())
    before = guard._step("bash", {"command": "python reproduce_issue.py"}, _mini(STILL_WRONG), False)
    guard._apply(before)
    same = guard._step("bash", {"command": "python reproduce_issue.py"}, _mini(STILL_WRONG), False)
    assert not novelty.edited_since(guard.state, before)
    assert not novelty.unchanged_after_edit(guard.state, same, before)  # no edit yet: the plain repeat rules
    guard.record("bash", _sed(0), MINI_SWE_EMPTY)
    assert novelty.edited_since(guard.state, before)
    assert novelty.unchanged_after_edit(guard.state, same, before)
    assert not novelty.moved_after_edit(guard.state, same, before)
    other = guard._step("bash", {"command": "python reproduce_issue.py"}, _mini(STILL_WRONG + "\nweek 2 ok"), False)
    assert novelty.moved_after_edit(guard.state, other, before)
    assert not novelty.unchanged_after_edit(guard.state, other, before)


@pytest.mark.parametrize("output, passed", [
    ("12 passed in 0.38s", True),
    ("Ran 4 tests in 0.002s\n\nOK", True),
    ("[INFO] Tests run: 31, Failures: 0, Errors: 0, Skipped: 0\n[INFO] BUILD SUCCESS", True),
    ("All checks passed!", True),
    ("Build completed in 4.2s", True),
    ("1 failed, 11 passed in 0.41s", False),
    ("Traceback (most recent call last):\n  ...\nOK", False),
    ("[ERROR] Tests run: 31, Failures: 2\n[INFO] BUILD FAILURE", False),
    ("ISSUE STILL PRESENT: week 1 starts a week early", False),
])
def test_a_clean_check_reports_success_and_no_failure(output, passed):
    assert features.reports_success(features.normalize_result(output)) is passed


def test_a_shell_line_number_is_noise_across_an_edit_a_reverted_code_line_is_not():
    """SWE-agent's shell numbers its lines: `/bin/bash: line 36191: javac: command not found`,
    a new number at every run. After each edit the same failure with another line number is the
    same failure. A code line that flips back and forth across edits (a before/after comparison
    of a fix: revert, rerun, re-apply) is what the edits changed, not noise."""
    guard = LoopGuard(Config())
    actions = []
    for k, line in enumerate((36191, 36254, 36323, 36389)):
        guard.record("bash", {"command": f"edit {17 + k}:{17 + k}\n    mapper.enable(Feature.F{k})\nend_of_edit"},
                     f"[File: /repo/Repro.java (58 lines total)]\n{17 + k}:    mapper.enable(Feature.F{k})")
        actions.append(guard.record("bash", {"command": "javac Repro.java && java Repro"},
                                    f"/bin/bash: line {line}: javac: command not found", is_error=True).action)
    assert "warn" in actions

    view = {"command": "nl -ba lib/mlab.py | sed -n '425,432p'"}
    before = "\n".join(f"   {n}\t        spec_{n} = (np.abs(window)**2).sum() * scale_{n}" for n in range(425, 433))
    views = [before, before.replace("np.abs(window)", "window"), before,  # the fix, reverted to compare
             before.replace("np.abs(window)**2", "np.abs(window)**2 / window.size")]  # then another fix
    guard = LoopGuard(Config())
    actions = [guard.record("bash", view, views[0]).action]
    for k, shown in enumerate(views[1:]):
        guard.record("bash", {"command": f"sed -i '427s/a{k}/b{k}/' lib/mlab.py"}, MINI_SWE_EMPTY)
        actions.append(guard.record("bash", view, shown).action)
    assert actions == ["allow"] * 4
