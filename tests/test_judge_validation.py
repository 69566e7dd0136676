"""The judge validation set (data/judge_validation): schema and integrity of the hand-labelled records, and the
loader's errors on bad records. How well a judge agrees with the labels is a benchmark (bench/judge_accuracy.py),
not a test."""
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from chimdqa_eval.release import read_qa
from chimdqa_eval.schema import InputError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from judge_accuracy import CLASSES, VALIDATION_SET, judge_accuracy, load_validation_set  # noqa: E402

RECORDS = load_validation_set(VALIDATION_SET)


def test_set_is_large_and_every_record_complete():
    assert len(RECORDS) >= 450
    for r in RECORDS:
        assert r["label"] in ("CO", "NA", "IN") and r["class"] in CLASSES, r["id"]
        assert r["source"] in ("sample", "simpleqa-style"), r["id"]
    assert len({r["id"] for r in RECORDS}) == len(RECORDS)


def test_every_class_is_present_with_enough_items():
    counts = Counter(r["class"] for r in RECORDS)
    assert {name: counts[name] for name in CLASSES if counts[name] < 15} == {}


def test_every_label_is_well_represented():
    counts = Counter(r["label"] for r in RECORDS)
    assert all(counts[label] >= 0.2 * len(RECORDS) for label in ("CO", "NA", "IN")), counts


def test_both_sources_are_present():
    counts = Counter(r["source"] for r in RECORDS)
    assert counts["sample"] >= 150 and counts["simpleqa-style"] >= 150, counts


def test_sample_items_quote_the_release():
    release = {row["id"]: row for row in read_qa()}
    for r in RECORDS:
        if r["source"] != "sample":
            continue
        row = release.get(r["question_id"])
        assert row is not None, f"{r['id']}: unknown question id {r['question_id']}"
        assert (r["question"], r["reference"]) == (row["question"], row["answer"]), r["id"]
        assert row["category"] == "factual", r["id"]


def test_no_answer_is_labelled_twice_for_one_question():
    pairs = Counter((r["question"], r["answer"]) for r in RECORDS)
    assert [pair for pair, n in pairs.items() if n > 1] == []


@pytest.mark.parametrize("change, message", [
    ({"label": "CORRECT"}, "label 'CORRECT' is not one of CO, NA, IN"),
    ({"class": "misc"}, "class 'misc' is not one of"),
    ({"reason": " "}, "field reason missing"),
    ({"question_id": None}, "field question_id missing"),
])
def test_loader_names_the_bad_record(tmp_path, change, message):
    good = {"id": "x-1", "source": "sample", "question_id": "fin-ret-001", "question": "q", "reference": "r",
            "answer": "a", "label": "CO", "class": "plain", "reason": "why"}
    path = tmp_path / "set.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "id": "x-2", **change}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"set\.jsonl line 2 \(id x-2\)") as err:
        load_validation_set(path)
    assert message in str(err.value)


def test_loader_rejects_duplicate_ids(tmp_path):
    record = {"id": "x-1", "source": "simpleqa-style", "question": "q", "reference": "r", "answer": "a",
              "label": "NA", "class": "refusal", "reason": "why"}
    path = tmp_path / "set.jsonl"
    path.write_text((json.dumps(record) + "\n") * 2, encoding="utf-8")
    with pytest.raises(InputError, match="line 2 .*duplicate id, first seen at line 1"):
        load_validation_set(path)


def test_accuracy_report_by_hand():
    labels = ["CO", "CO", "NA", "IN", "IN"]
    grades = ["CO", "IN", "NA", "IN", "CO"]
    certain = [True, False, True, True, False]
    classes = ["plain", "plain", "refusal", "plain", "candidates"]
    report = judge_accuracy(labels, grades, certain, classes)
    assert report["by_label"]["all"] == {"n": 5, "accuracy": 60.0, "certain_coverage": 60.0,
                                         "certain_accuracy": 100.0}
    assert report["by_label"]["CO"] == {"n": 2, "accuracy": 50.0, "certain_coverage": 50.0,
                                        "certain_accuracy": 100.0}
    assert report["by_class"]["candidates"]["IN"] == {"n": 1, "accuracy": 0.0, "certain_coverage": 0.0,
                                                      "certain_accuracy": None}
    assert report["confusion"] == {"CO": {"CO": 1, "IN": 1}, "NA": {"NA": 1}, "IN": {"IN": 1, "CO": 1}}
    # certain grades given: CO once (right), NA once (right), IN once (right); the wrong IN and CO were unsure
    assert report["certain_grades"] == {"CO": {"n": 1, "right": 100.0}, "NA": {"n": 1, "right": 100.0},
                                        "IN": {"n": 1, "right": 100.0}}
    mixed = judge_accuracy(["CO", "IN", "NA"], ["CO", "CO", "CO"], [True, True, False], ["plain"] * 3)
    assert mixed["certain_grades"] == {"CO": {"n": 2, "right": 50.0}, "NA": {"n": 0, "right": None},
                                       "IN": {"n": 0, "right": None}}


def test_bench_runs_a_judge_and_lists_disagreements(tmp_path, capsys):
    from judge_accuracy import main
    base = {"source": "simpleqa-style", "question": "《桃花源记》的作者是谁？", "reference": "陶渊明", "reason": "r"}
    rows = [{**base, "id": "a", "answer": "陶渊明", "label": "CO", "class": "plain"},
            {**base, "id": "b", "answer": "不知道", "label": "NA", "class": "refusal"},
            {**base, "id": "c", "answer": "谢灵运", "label": "CO", "class": "plain"}]  # mislabelled on purpose
    path, out = tmp_path / "set.jsonl", tmp_path / "report.json"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    assert main(["--set", str(path), "--json", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["items"] == 3 and report["signature"].startswith("metric:chimdqa_factual|judge:rule")
    assert report["confusion"]["CO"] == {"CO": 1, "IN": 1} and report["confusion"]["NA"] == {"NA": 1}
    assert [(w["id"], w["grade"]) for w in report["wrong"]] == [("c", "IN")]
    assert report["by_class"]["refusal"]["NA"]["accuracy"] == 100.0
    assert "- c [plain] label CO, judge IN" in capsys.readouterr().out


def test_bench_rejects_a_bad_set_with_exit_2(tmp_path, capsys):
    from judge_accuracy import main
    path = tmp_path / "set.jsonl"
    path.write_text('{"id": "a"}\n', encoding="utf-8")
    assert main(["--set", str(path)]) == 2
    assert "line 1 (id a): field source missing" in capsys.readouterr().err


def _simpleqa_files(tmp_path, records):
    simpleqa = tmp_path / "csqa.jsonl"
    simpleqa.write_text(json.dumps({"id": "q1", "primary_category": "人文与社会科学", "question": "《桃花源记》的作者是谁？",
                                    "answer": "陶渊明"}, ensure_ascii=False) + "\n", encoding="utf-8")
    path = tmp_path / "heldout.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path, simpleqa


def test_simpleqa_records_take_question_and_reference_from_the_simpleqa_file(tmp_path, capsys):
    from judge_accuracy import main
    base = {"source": "simpleqa", "simpleqa_id": "q1", "reason": "r"}
    path, simpleqa = _simpleqa_files(tmp_path, [{**base, "id": "h1", "answer": "应该是陶潜吧", "label": "CO",
                                                 "class": "surface_forms"},
                                                {**base, "id": "h2", "answer": "这个我答不上来。", "label": "NA",
                                                 "class": "refusal"}])
    records = load_validation_set(path, simpleqa)
    assert [(r["question"], r["reference"]) for r in records] == [("《桃花源记》的作者是谁？", "陶渊明")] * 2
    assert main(["--set", str(path), "--simpleqa", str(simpleqa)]) == 0
    assert "items: 2" in capsys.readouterr().out


@pytest.mark.parametrize("change, simpleqa, message", [
    ({}, False, "line 1 (id h1): a record of source simpleqa needs the Chinese SimpleQA file (--simpleqa PATH)"),
    ({"simpleqa_id": "nope"}, True, "line 1 (id h1): simpleqa_id 'nope' is not in"),
    ({"simpleqa_id": ""}, True, "line 1 (id h1): field simpleqa_id missing"),
])
def test_a_simpleqa_record_without_its_question_is_refused_by_name(tmp_path, change, simpleqa, message):
    record = {"id": "h1", "source": "simpleqa", "simpleqa_id": "q1", "answer": "陶渊明", "label": "CO",
              "class": "plain", "reason": "r", **change}
    path, simpleqa_path = _simpleqa_files(tmp_path, [record])
    with pytest.raises(InputError) as err:
        load_validation_set(path, simpleqa_path if simpleqa else None)
    assert message in str(err.value)


def test_the_held_out_simpleqa_answers_are_complete_and_name_their_questions():
    """data/judge_validation/simpleqa_heldout.jsonl keeps only our answers and labels for Chinese SimpleQA's
    questions, whose questions and references come from Chinese SimpleQA by id (bench --simpleqa); answers to our
    writers' own questions (source simpleqa-style) carry theirs. Checked here without the SimpleQA file."""
    from judge_accuracy import HELDOUT_SET, SPLITS
    rows = [json.loads(line) for line in HELDOUT_SET.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) >= 1000 and len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        assert r["split"] in SPLITS and r["label"] in ("CO", "NA", "IN") and r["class"] in CLASSES, r["id"]
        assert all(isinstance(r[k], str) and r[k].strip() for k in ("answer", "reason")), r["id"]
        if r["source"] == "simpleqa":
            assert isinstance(r["simpleqa_id"], str) and r["simpleqa_id"].strip(), r["id"]
            assert "question" not in r and "reference" not in r, r["id"]
        else:
            assert r["source"] == "simpleqa-style", r["id"]
            assert all(isinstance(r[k], str) and r[k].strip() for k in ("question", "reference")), r["id"]
    counts = Counter((r["split"], r["label"]) for r in rows)
    assert all(counts[(split, label)] >= 50 for split in SPLITS for label in ("CO", "NA", "IN")), counts


from shared_data import CHINESE_SIMPLEQA as SIMPLEQA_FILE  # noqa: E402


@pytest.mark.skipif(not SIMPLEQA_FILE.exists(), reason=f"{SIMPLEQA_FILE} is absent")
def test_every_held_out_answer_joins_a_real_chinese_simpleqa_question():
    from judge_accuracy import HELDOUT_SET
    records = load_validation_set(HELDOUT_SET, SIMPLEQA_FILE)
    assert all(r["question"] and r["reference"] for r in records)
