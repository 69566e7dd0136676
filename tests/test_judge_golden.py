"""The rule judge's golden snapshot: every answer of data/judge_validation/validation.jsonl regraded must get the
verdict (grade, certain, reason) recorded in golden_validation.jsonl, which bench/judge_golden.py wrote and which is
committed. A change meant to change verdicts rewrites it (`python bench/judge_golden.py --write`) and the commit
shows which; the same script checks the 16,320 held-out answers too (`--check`)."""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from judge_golden import (HELDOUT_SET, SNAPSHOTS, VALIDATION_SET, Golden, Snapshot, differences,  # noqa: E402
                          inputs_sha256, load_validation_set, read_snapshot, snapshot_of, write_snapshot)


def test_every_validation_answer_gets_its_snapshotted_verdict():
    golden = read_snapshot(SNAPSHOTS[VALIDATION_SET])
    now = snapshot_of(load_validation_set(VALIDATION_SET), VALIDATION_SET.name)
    report = differences(golden, now)
    if report:
        pytest.fail("the rule judge's verdicts on validation.jsonl differ from its golden snapshot; if the change "
                    "is meant, rewrite it with `python bench/judge_golden.py --write` and say why in the commit\n"
                    + "\n".join(report), pytrace=False)


def test_the_held_out_snapshot_covers_its_set_in_order():
    """Checked without the Chinese SimpleQA file the held-out answers need for grading (bench/judge_golden.py
    --check grades them): the snapshot names every held-out answer once, in the set's order."""
    rows = [json.loads(line) for line in HELDOUT_SET.read_text(encoding="utf-8").splitlines() if line.strip()]
    golden = read_snapshot(SNAPSHOTS[HELDOUT_SET])
    assert list(golden.verdicts) == [r["id"] for r in rows]
    assert golden.header["set"] == HELDOUT_SET.name and golden.header["answers"] == len(rows)


def _snapshot(verdicts: dict, inputs="x") -> Snapshot:
    return Snapshot({"set": "s", "rules": "r", "inputs_sha256": inputs, "answers": len(verdicts)}, verdicts)


def test_differences_are_grouped_by_reason_with_example_ids():
    match, several = Golden("CO", True, "match"), Golden("CO", False, "several_numbers")
    sure_miss, unsure_miss = Golden("IN", True, "no_match"), Golden("IN", False, "no_match")
    old = _snapshot({f"a{i}": match for i in range(8)} | {"b": sure_miss, "c": match})
    new = _snapshot({f"a{i}": several for i in range(8)} | {"b": unsure_miss, "d": match})
    report = differences(old, new)
    assert report[:2] == ["1 ids in the snapshot, not in the set: c", "1 ids in the set, not in the snapshot: d"]
    assert report[2] == "9 of 10 verdicts differ, in 2 groups (count, old reason grade certainty -> new, example ids):"
    assert report[3].split() == ["8", "match", "CO", "certain", "->", "several_numbers", "CO", "uncertain",
                                 "a0,", "a1,", "a2,", "a3,", "a4", "…"]
    assert report[4].split()[:8] == ["1", "no_match", "IN", "certain", "->", "no_match", "IN", "uncertain"]
    assert report[5] == "by reason (old -> new: count): match -> several_numbers: 8; no_match -> no_match: 1"
    assert differences(old, old) == []


def test_a_snapshot_round_trips_and_an_edited_set_is_named(tmp_path):
    records = [{"id": "x1", "question": "《桃花源记》的作者是谁？", "reference": "陶渊明", "answer": "陶渊明"},
               {"id": "x2", "question": "《桃花源记》的作者是谁？", "reference": "陶渊明", "answer": "不知道"}]
    snapshot = snapshot_of(records, "tiny.jsonl")
    assert snapshot.verdicts == {"x1": Golden("CO", True, "match"), "x2": Golden("NA", True, "refusal")}
    path = tmp_path / "golden.jsonl"
    write_snapshot(snapshot, path)
    assert read_snapshot(path) == snapshot
    edited = [records[0], {**records[1], "answer": "陶潜"}]
    assert inputs_sha256(edited) != snapshot.header["inputs_sha256"]
    report = differences(snapshot, snapshot_of(edited, "tiny.jsonl"))
    assert report[0].startswith("the set's inputs changed since the snapshot was written")
    assert report[2].split()[:5] == ["1", "refusal", "NA", "certain", "->"]
