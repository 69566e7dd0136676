"""Expected calibration error and reliability bins against a hand computation, and the confidence field of a
submission as `chimdqa evaluate` reads it."""
import json
import re

import pytest

from chimdqa_eval import cli
from chimdqa_eval.calibration import (bin_of, calibration_summary, expected_calibration_error,
                                      reliability_bins)
from chimdqa_eval.submission import read_predictions


def test_bins_are_ten_equal_widths_with_the_last_one_closed():
    assert [bin_of(c) for c in (0, 9.99, 10, 55, 99.9, 100)] == [0, 0, 1, 5, 9, 9]


def test_ece_by_hand():
    confidences = [95, 90, 85, 80, 30, 35, 100]
    correct = [True, True, False, True, False, True, True]
    bins = reliability_bins(confidences, correct)
    assert [b["n"] for b in bins] == [0, 0, 0, 2, 0, 0, 0, 0, 2, 3]
    # bin 30-40: confidence (30+35)/2 = 32.5, accuracy 1/2 = 50  -> |50 - 32.5| = 17.5
    # bin 80-90: confidence (85+80)/2 = 82.5, accuracy 1/2 = 50  -> |50 - 82.5| = 32.5
    # bin 90-100: confidence (95+90+100)/3 = 95, accuracy 3/3 = 100 -> |100 - 95| = 5
    # ECE = 2/7 * 17.5 + 2/7 * 32.5 + 3/7 * 5 = (35 + 65 + 15) / 7 = 16.428571...
    assert bins[3] == {"low": 30.0, "high": 40.0, "n": 2, "confidence": 32.5, "accuracy": 50.0}
    assert bins[9]["confidence"] == 95.0 and bins[9]["accuracy"] == 100.0
    assert bins[0]["confidence"] is None and bins[0]["accuracy"] is None
    assert expected_calibration_error(bins) == pytest.approx(115 / 7)


def test_perfect_and_worst_calibration():
    assert expected_calibration_error(reliability_bins([100, 100], [True, True])) == 0
    assert expected_calibration_error(reliability_bins([100, 0], [False, True])) == 100


def test_ece_is_computed_from_the_exact_bin_means_not_the_rounded_ones():
    # one bin: confidence (10 + 10 + 11) / 3 = 10.3333..., accuracy 2/3 = 66.6666...; ECE = 169/3 = 56.33333...
    # (the bins shown round to 4 decimals: 66.6667 - 10.3333 would give 56.3334)
    summary = calibration_summary([10, 10, 11], [True, True, False], correctness="test")
    assert summary["bins"][1]["confidence"] == 10.3333 and summary["bins"][1]["accuracy"] == 66.6667
    assert summary["ece"] == round(169 / 3, 4) == 56.3333


def test_a_confidence_outside_0_100_is_refused_naming_the_item():
    with pytest.raises(ValueError, match=r"confidences\[1\]: must be within 0-100, got 101"):
        reliability_bins([50, 101], [True, False])


def test_summary_leaves_out_items_without_confidence_and_breaks_down_by_label():
    summary = calibration_summary([90, None, 10, 90], [True, True, False, False],
                                  {"primary_category": ["a", "a", "b", "a"]}, correctness="test")
    assert summary["n"] == 3 and summary["n_without_confidence"] == 1
    # bin 90-100: 90, 90 with accuracy 50 -> 40; bin 10-20: 10 with accuracy 0 -> 10; ECE = 2/3*40 + 1/3*10
    assert summary["ece"] == pytest.approx(30.0)
    assert summary["by"]["primary_category"]["a"]["ece"] == pytest.approx(40.0)
    assert summary["by"]["primary_category"]["a"]["n"] == 2 and summary["by"]["primary_category"]["b"]["ece"] == 10
    assert "bins:10-equal-width" in summary["signature"] and "correct:test" in summary["signature"]
    with pytest.raises(ValueError):
        calibration_summary([None], [True], correctness="test")


def test_confidence_and_context_objects_are_validated(tmp_path):
    path = tmp_path / "p.jsonl"
    lines = [{"id": "a", "prediction": "x", "confidence": 101},
             {"id": "b", "prediction": "x", "confidence": True},
             {"id": "c", "prediction": "x", "confidence": None, "retrieved_contexts": [{"text": "t", "page": 1}]},
             {"id": "d", "prediction": "x", "confidence": 50,
              "retrieved_contexts": [{"text": "t", "doc_id": "d1", "page": 0}]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    with pytest.raises(Exception) as err:
        read_predictions(path)
    text = str(err.value)
    assert "line 1 (id a): 'confidence' must be a number from 0 to 100 or null" in text
    assert "line 2 (id b): 'confidence'" in text
    assert "line 3 (id c): 'retrieved_contexts' must be a list of strings or of objects" in text
    assert "line 4 (id d): 'retrieved_contexts'" in text


def test_evaluate_reports_ece_per_category_on_chinese_simpleqa(tmp_path, capsys):
    """Four Chinese SimpleQA-style questions; the rule judge grades two right; ECE as computed by hand."""
    rows = [{"id": f"q{i}", "primary_category": cat, "secondary_category": "x", "question": f"问题{i}？",
             "answer": answer, "urls": []}
            for i, (cat, answer) in enumerate([("自然", "北京"), ("自然", "1919年"), ("人文", "陶渊明"), ("人文", "长江")])]
    data = tmp_path / "csqa.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    predictions = [("北京", 80), ("1921年", 60), ("陶渊明", 100), ("黄河", None)]
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"id": f"q{i}", "prediction": p, "confidence": c}, ensure_ascii=False) + "\n"
                             for i, (p, c) in enumerate(predictions)), encoding="utf-8")
    out = tmp_path / "out"
    assert cli.main(["evaluate", "--predictions", str(preds), "--config", "chinese_simpleqa", "--data-files",
                     str(data), "--out", str(out), "--resamples", "0"]) == 0
    assert re.search(r"calibration +ECE +26\.67 .* 3$", capsys.readouterr().out, re.M)  # ECE in the summary
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    cal = results["calibration"]
    # bins: 80 right (|100-80| = 20), 60 wrong (|0-60| = 60), 100 right (0); the 4th has no confidence
    assert cal["n"] == 3 and cal["n_without_confidence"] == 1
    assert cal["ece"] == pytest.approx((20 + 60 + 0) / 3, abs=1e-4)
    assert cal["by"]["primary_category"]["自然"]["ece"] == pytest.approx(40.0)
    assert cal["by"]["primary_category"]["人文"]["ece"] == 0
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "<h2>Calibration</h2>" in report and 'alt="reliability diagram"' in report
    items = [json.loads(line) for line in (out / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [i["confidence"] for i in items] == [80, 60, 100, None]
    # stated confidences that are all null (no 置信度 line found): calibration is skipped with its reason
    preds.write_text("".join(json.dumps({"id": f"q{i}", "prediction": p, "confidence": None}, ensure_ascii=False)
                             + "\n" for i, (p, _) in enumerate(predictions)), encoding="utf-8")
    assert cli.main(["evaluate", "--predictions", str(preds), "--config", "chinese_simpleqa", "--data-files",
                     str(data), "--out", str(out), "--resamples", "0"]) == 0
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert "calibration" not in results
    [skipped] = [s for s in results["skipped"] if s["family"] == "calibration"]
    assert skipped["metric"] == "ece" and "no factual answer carries a number" in skipped["reason"]
    assert "skipped: calibration.ece: the predictions have a confidence field" in capsys.readouterr().out
