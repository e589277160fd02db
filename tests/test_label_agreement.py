"""benchmarks/label_agreement.py: the second reading of 240 labeled runs joins the first labels, the
third reading covers exactly the runs the two disagree on, the adjudicated label is their majority, and
the agreement numbers are computed the textbook way."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("label_agreement", ROOT / "benchmarks" / "label_agreement.py")
assert _spec is not None and _spec.loader is not None
agreement = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(agreement)


def test_kappa_is_one_for_full_agreement_and_zero_for_chance():
    assert agreement.kappa([(True, True), (False, False), (True, True)]) == 1.0
    # both readers say yes half the time, independently: agreement is what chance gives
    pairs = [(True, True), (True, False), (False, True), (False, False)]
    assert agreement.kappa(pairs) == pytest.approx(0.0)


def test_f1_counts_both_kinds_of_disagreement():
    truth = [True, True, False, False]
    assert agreement.f1(truth, [True, False, True, False]) == pytest.approx(0.5)  # tp 1, fn 1, fp 1
    assert agreement.f1(truth, truth) == 1.0


def test_f1_at_another_loop_rate_reweights_recall_and_false_alarms():
    truth = [True] * 4 + [False] * 6
    said = [True, True, True, False] + [True] + [False] * 5  # recall 0.75, false alarms 1/6
    rate = 0.2
    tp, fn, fp = rate * 0.75, rate * 0.25, 0.8 / 6
    assert agreement.f1_at_rate(truth, said, rate) == pytest.approx(2 * tp / (2 * tp + fn + fp))
    # at the sample's own rate it is the plain F1
    assert agreement.f1_at_rate(truth, said, 0.4) == pytest.approx(agreement.f1(truth, said))


def test_every_second_reading_joins_a_first_label_twelve_loops_and_eighteen_clean_per_group_and_draw():
    first = agreement.first_labels()
    rows = [json.loads(line) for line in agreement.SECOND.read_text().splitlines() if line.strip()]
    assert len(rows) == len({r["id"] for r in rows}) == 240
    by_group = {}
    for row in rows:
        assert row["id"] in first, row["id"]
        by_group.setdefault((row["group"], row["draw"]), []).append(bool(first[row["id"]]["label"]["loop"]))
    assert {k: (sum(v), len(v) - sum(v)) for k, v in by_group.items()} == {
        (group, draw): (12, 18) for group in ("browser", "swejava", "miniswe", "convo") for draw in (1, 2)}


def _row(loop, onset=None, kind=None, **extra):
    return {"label": {"loop": loop, "onset": onset, "kind": kind}, **extra}


def test_adjudication_is_the_majority_where_the_two_readers_disagree_and_the_first_label_elsewhere():
    first = {"a": _row(True, 3, "exact"), "b": _row(True, 5, "count"), "c": _row(False), "d": _row(False),
             "e": _row(True, 2, "paraphrase")}
    second = {"a": _row(True, 4, "exact"), "b": _row(False), "c": _row(True, 7, "same_result"), "d": _row(False),
              "e": _row(False)}
    third = {"b": _row(False), "c": _row(True, 6, "normalized"), "e": _row(True, 1, "count")}
    got = agreement.adjudicate(first, second, third)
    assert got["a"] == first["a"]["label"]  # both say loop: the first label, onset and all
    assert got["d"] == first["d"]["label"]
    assert got["b"]["loop"] is False  # first loop, second and third clean
    assert got["c"] == {"loop": True, "onset": 6, "kind": "normalized"}  # second and third loop over the first
    assert got["e"] == {"loop": True, "onset": 1, "kind": "count"}  # first and third loop over the second
    assert set(got) == set(second)


def test_adjudication_refuses_a_disagreement_left_unread_and_a_third_reading_of_an_agreed_run():
    first, second = {"a": _row(True, 1), "b": _row(False)}, {"a": _row(False), "b": _row(False)}
    with pytest.raises(SystemExit, match="a has no third reading"):
        agreement.adjudicate(first, second, {})
    with pytest.raises(SystemExit, match="b is read a third time"):
        agreement.adjudicate(first, second, {"a": _row(True, 1), "b": _row(True, 2)})
    with pytest.raises(SystemExit, match="z has no second reading"):
        agreement.adjudicate(first, second, {"a": _row(True, 1), "z": _row(True, 2)})


def test_the_third_reading_covers_exactly_the_disagreements_and_is_not_read_as_a_first_label():
    first = agreement.first_labels()
    second = {r["id"]: r for r in map(json.loads, agreement.SECOND.read_text().splitlines()) if r}
    third = [json.loads(line) for line in agreement.THIRD.read_text().splitlines() if line.strip()]
    disagree = {i for i, r in second.items() if bool(r["label"]["loop"]) != bool(first[i]["label"]["loop"])}
    # were third_reader.jsonl read as first labels, the runs where it sides with the second reader
    # would stop being disagreements and this set would shrink
    assert {r["id"] for r in third} == disagree and len(third) == len(disagree)
    for row in third:
        label = row["label"]
        assert row["reader"] == "third" and row["group"] == second[row["id"]]["group"]
        assert row["confidence"] in ("high", "low") and row["note"]
        assert (label["onset"] is None and label["kind"] is None) if not label["loop"] else (
            isinstance(label["onset"], int) and label["kind"] in
            ("exact", "normalized", "paraphrase", "same_result", "alternation", "count"))


def test_the_script_reports_each_group_and_the_detector_when_given_verdicts(tmp_path, capsys):
    rows = [json.loads(line) for line in agreement.SECOND.read_text().splitlines() if line.strip()]
    verdicts = tmp_path / "verdicts.jsonl"
    # a detector that flags exactly what the second reader calls a loop agrees with it perfectly
    verdicts.write_text("".join(json.dumps({"id": r["id"], "first_warn": 3 if r["label"]["loop"] else None}) + "\n"
                                for r in rows))
    assert agreement.main(["--verdicts", str(verdicts)]) == 0
    out = capsys.readouterr().out
    for group in ("browser", "swejava", "miniswe", "convo", "all"):
        assert f"\n{group}" in "\n" + out
    second_lines = [line for line in out.splitlines() if "detector vs second reader" in line]
    assert len(second_lines) == 5 and all("F1 1.00" in line for line in second_lines)


def test_the_script_scores_the_detector_against_the_adjudicated_label_and_lists_every_disagreement(tmp_path, capsys):
    first = agreement.first_labels()
    second = [json.loads(line) for line in agreement.SECOND.read_text().splitlines() if line.strip()]
    third = {r["id"]: r for r in map(json.loads, agreement.THIRD.read_text().splitlines())}
    truth = {r["id"]: bool((third.get(r["id"]) or first[r["id"]])["label"]["loop"]) for r in second}
    verdicts = tmp_path / "verdicts.jsonl"
    # a detector that flags exactly the adjudicated loops: the third reading where there is one, else the first
    verdicts.write_text("".join(json.dumps({"id": i, "first_warn": 0 if loop else None}) + "\n"
                                for i, loop in truth.items()))
    assert agreement.main(["--verdicts", str(verdicts)]) == 0
    out = capsys.readouterr().out
    adjudicated_lines = [line for line in out.splitlines() if "detector vs adjudicated label" in line]
    assert len(adjudicated_lines) == 5 and all("F1 1.00" in line for line in adjudicated_lines)
    first_lines = [line for line in out.splitlines() if "detector vs first reader" in line]
    if any(truth[i] != bool(first[i]["label"]["loop"]) for i in third):
        assert "F1 1.00" not in first_lines[-1]
    listed = [line.split(": first ")[0].strip() for line in out.splitlines()
              if line.startswith("  ") and " -> " in line]
    assert sorted(listed) == sorted(third)
