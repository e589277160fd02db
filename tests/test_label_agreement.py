"""benchmarks/label_agreement.py: the second reading of 120 labeled runs joins the first labels, and
its agreement numbers are computed the textbook way."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("label_agreement", ROOT / "benchmarks" / "label_agreement.py")
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
