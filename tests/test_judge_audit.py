"""`chimdqa judge-audit`: agreement statistics by hand, and the audit of the sample submission graded by the rule
judge and by an LLM judge (a local server that answers by a rule the test knows)."""
import json

import pytest

from chat_server import ChatServer
from chimdqa_eval import cli, release
from chimdqa_eval.agreement import agreement, cohen_kappa, confusion
from chimdqa_eval.factual.audit import audit_results
from chimdqa_eval.report.results import read_items, read_results
from chimdqa_eval.schema import InputError

SAMPLE = release.SAMPLE_DIR / "predictions.jsonl"


def test_kappa_and_confusion_by_hand():
    a = ["CO", "CO", "NA", "IN", "IN", "CO"]
    b = ["CO", "NA", "NA", "IN", "CO", "CO"]
    # p_o = 4/6; chance: A has CO 3, NA 1, IN 2, B has CO 3, NA 2, IN 1 -> p_e = (9 + 2 + 2) / 36 = 13/36
    assert cohen_kappa(a, b) == pytest.approx((24 / 36 - 13 / 36) / (1 - 13 / 36)) == pytest.approx(11 / 23)
    assert confusion(a, b, ["CO", "NA", "IN"]) == [[2, 1, 0], [0, 1, 0], [1, 0, 1]]
    result = agreement(a, b, ["CO", "NA", "IN"])
    assert result["agreement"] == pytest.approx(400 / 6) and result["n"] == 6
    assert cohen_kappa(["CO"] * 4, ["CO"] * 4) is None  # chance agreement 1: undefined, not 1
    assert cohen_kappa(["CO", "IN"], ["IN", "CO"]) == pytest.approx(-1.0)


@pytest.fixture(scope="module")
def two_judges(tmp_path_factory):
    """The sample graded by the rule judge, and by an 'LLM' that calls an answer correct iff it has a digit."""
    root = tmp_path_factory.mktemp("audit")
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("CHIMDQA_CACHE", str(root / "cache"))

    def judge(body):
        answer = body["messages"][-1]["content"]
        prediction = answer.split("【待评回答】")[-1]  # the prompt's last section is the answer under review
        return "结论：正确" if any(c.isdigit() for c in prediction) else "结论：错误"

    try:
        assert cli.main(["evaluate", "--predictions", str(SAMPLE), "--out", str(root / "rule"), "--resamples",
                         "0", "--metrics", "factual"]) == 0
        with ChatServer(judge) as server:
            assert cli.main(["evaluate", "--predictions", str(SAMPLE), "--out", str(root / "llm"), "--resamples",
                             "0", "--metrics", "factual", "--judge", "llm", "--judge-model", "judge-x",
                             "--api-base", server.api_base]) == 0
    finally:
        mp.undo()
    return root


def grades(folder):
    return {i: r["factual"]["grade"] for i, r in read_items(read_results(folder)).items() if "factual" in r}


def test_audit_of_two_judges_matches_the_items(two_judges, capsys):
    rule, llm = grades(two_judges / "rule"), grades(two_judges / "llm")
    audit = audit_results(two_judges / "rule", two_judges / "llm")
    assert audit["names"] == ["rule", "llm:judge-x"]
    ids = sorted(rule)
    assert audit["n"] == len(ids) == 36
    assert audit["agreement"] == pytest.approx(100 * sum(rule[i] == llm[i] for i in ids) / len(ids))
    assert audit["kappa"] == pytest.approx(cohen_kappa([rule[i] for i in ids], [llm[i] for i in ids]))
    assert sum(map(sum, audit["confusion"])) == 36
    assert {d["id"] for d in audit["disagreements"]} == {i for i in ids if rule[i] != llm[i]}
    some = audit["disagreements"][0]
    assert some["reference"] and some["question"] and "prediction" in some  # listed for review with the text
    # the swing is the scores' difference computed from each judge's own grades
    from chimdqa_eval.factual.scores import scores_from_grades
    for metric, s in audit["swing"].items():
        assert s["difference"] == pytest.approx(scores_from_grades([llm[i] for i in ids])[metric]
                                                - scores_from_grades([rule[i] for i in ids])[metric])
    assert 0 < len(audit["disagreements"]) < 36  # the two judges differ on some items, not all
    assert set(audit["by"]["domain"]) == {"academic", "education", "finance", "law", "medical", "news"}
    assert sum(g["n"] for g in audit["by"]["question_type"].values()) == 36
    # the command prints the same and writes the JSON
    out_json = two_judges / "audit.json"
    assert cli.main(["judge-audit", str(two_judges / "rule"), str(two_judges / "llm"), "--json", str(out_json)]) == 0
    printed = capsys.readouterr().out
    assert f"agreement {audit['agreement']:.1f}%" in printed and "confusion (rows A, columns B)" in printed
    assert json.loads(out_json.read_text(encoding="utf-8"))["kappa"] == pytest.approx(audit["kappa"])


def test_audit_against_human_labels(two_judges, tmp_path):
    rule = grades(two_judges / "rule")
    ids = sorted(rule)
    people = {i: ("CO" if k % 3 else "IN") for k, i in enumerate(ids[:30])}  # 30 of the 36 labelled
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"id": i, "grade": g}) + "\n" for i, g in people.items()), encoding="utf-8")
    audit = audit_results(two_judges / "rule", two_judges / "llm", labels)
    llm = grades(two_judges / "llm")
    for name, judged in (("rule", rule), ("llm:judge-x", llm)):
        expected = 100 * sum(judged[i] == g for i, g in people.items()) / 30
        assert audit["people"][name]["accuracy"] == pytest.approx(expected) and audit["people"][name]["n"] == 30
    alone = audit_results(two_judges / "rule", labels_path=labels)
    assert alone["names"] == ["rule", "people"] and alone["n"] == 30
    assert alone["agreement"] == pytest.approx(audit["people"]["rule"]["accuracy"])


def test_bad_audit_inputs_are_named(two_judges, tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "a", "grade": "CO"}\n{"id": "b", "grade": "correct"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"labels.jsonl line 2 \(id b\).*grade must be one of"):
        audit_results(two_judges / "rule", labels_path=labels)
    labels.write_text('{"id": "a", "grade": "CO"}\n{"id": "a", "grade": "NA"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="duplicate id.*line 1"):
        audit_results(two_judges / "rule", labels_path=labels)
    with pytest.raises(InputError, match="second results folder or --labels"):
        audit_results(two_judges / "rule")
    labels.write_text('{"id": "nobody", "grade": "CO"}\n', encoding="utf-8")
    for second, people in ((None, labels), (two_judges / "rule", labels)):
        with pytest.raises(InputError, match=r"labels\.jsonl.*no item|no item.*labels\.jsonl"):
            audit_results(two_judges / "rule", second, people)
    other = tmp_path / "other.jsonl"
    other.write_text(SAMPLE.read_text(encoding="utf-8").replace("512字", "513字"), encoding="utf-8")
    assert cli.main(["evaluate", "--predictions", str(other), "--out", str(tmp_path / "o"), "--resamples", "0",
                     "--metrics", "factual"]) == 0
    with pytest.raises(InputError, match="different submissions"):
        audit_results(two_judges / "rule", tmp_path / "o")
