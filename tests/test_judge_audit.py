"""`chimdqa judge-audit`: agreement statistics by hand, and the audit of the sample submission graded by the rule
judge and by an LLM judge (a local server that answers by a rule the test knows)."""
import json

import pytest

from chat_server import ChatServer
from chimdqa_eval import cli, release
from chimdqa_eval.agreement import agreement, cohen_kappa, confusion
from chimdqa_eval.commands.judge_audit import audit_results
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
    from chimdqa_eval.grades import scores_from_grades
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
    other = tmp_path / "other.jsonl"
    other.write_text(SAMPLE.read_text(encoding="utf-8").replace("512字", "513字"), encoding="utf-8")
    assert cli.main(["evaluate", "--predictions", str(other), "--out", str(tmp_path / "o"), "--resamples", "0",
                     "--metrics", "factual"]) == 0
    with pytest.raises(InputError, match="different submissions"):
        audit_results(two_judges / "rule", tmp_path / "o")


def test_unknown_label_ids_are_named_with_file_and_line(two_judges, tmp_path, capsys):
    rule = sorted(grades(two_judges / "rule"))
    open_ended = next(i for i, r in read_items(read_results(two_judges / "rule")).items() if "factual" not in r)
    labels = tmp_path / "labels.jsonl"
    records = [(rule[0], "CO"), (rule[1], "IN"), ("nobody", "CO"), ("ghost", "NA"), (open_ended, "CO")]
    labels.write_text("".join(json.dumps({"id": i, "grade": g}) + "\n" for i, g in records), encoding="utf-8")
    expected = (rf"labels\.jsonl line 3 \(id nobody\): unknown id: no factual item with this id in "
                rf".*rule \(3 of 5 labels are unknown; 2 more unknown id\(s\): ghost \(line 4\), "
                rf"{open_ended} \(line 5\)\)")
    for second in (None, two_judges / "llm"):
        with pytest.raises(InputError, match=expected):
            audit_results(two_judges / "rule", second, labels)
    assert cli.main(["judge-audit", str(two_judges / "rule"), "--labels", str(labels)]) == 2
    err = capsys.readouterr().err
    assert "chimdqa judge-audit: error:" in err and "line 3 (id nobody): unknown id" in err
    # known ids only: the audit runs
    labels.write_text("".join(json.dumps({"id": i, "grade": g}) + "\n" for i, g in records[:2]), encoding="utf-8")
    assert audit_results(two_judges / "rule", labels_path=labels)["n"] == 2


def _write_items(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_items_files_are_audited_like_their_folders(two_judges, tmp_path, capsys):
    by_folder = audit_results(two_judges / "rule", two_judges / "llm")
    # an items.jsonl that its run's results.json lists (with its sha256) is read as that run
    by_items = audit_results(two_judges / "rule" / "items.jsonl", two_judges / "llm" / "items.jsonl")
    assert {k: v for k, v in by_items.items() if k != "sources"} == \
        {k: v for k, v in by_folder.items() if k != "sources"}
    assert by_items["names"] == ["rule", "llm:judge-x"]

    # an items file on its own, with grades put in by hand: read as it is now, the judge named from its rows
    rows = list(read_items(read_results(two_judges / "llm")).values())
    flipped = next(r for r in rows if "factual" in r and r["factual"]["grade"] == "CO")
    flipped["factual"]["grade"] = "NA"
    edited = _write_items(tmp_path / "reviewed.jsonl", rows)
    audit = audit_results(two_judges / "rule", edited)
    assert audit["names"] == ["rule", "llm"] and audit["n"] == 36
    rule = grades(two_judges / "rule")
    mine = {r["id"]: r["factual"]["grade"] for r in rows if "factual" in r}
    assert {d["id"] for d in audit["disagreements"]} == {i for i in rule if rule[i] != mine[i]}
    assert audit["confusion"] != by_folder["confusion"]  # the hand edit counts
    # the same edit inside the run folder: the folder is refused (torn), the items path is read as it is now
    folder = tmp_path / "llm-copy"
    folder.mkdir()
    for name in ("results.json", "report.html"):
        (folder / name).write_bytes((two_judges / "llm" / name).read_bytes())
    _write_items(folder / "items.jsonl", rows)
    with pytest.raises(InputError, match="does not match"):
        audit_results(two_judges / "rule", folder)
    assert audit_results(two_judges / "rule", folder / "items.jsonl")["confusion"] == audit["confusion"]
    # the rule judge's rows carry its trace: named from them too; labels work against an items file
    rule_rows = list(read_items(read_results(two_judges / "rule")).values())
    alone = _write_items(tmp_path / "rule-items.jsonl", rule_rows)
    labels = _write_items(tmp_path / "labels.jsonl", [{"id": i, "grade": "CO"} for i in sorted(rule)[:5]])
    assert audit_results(alone, labels_path=labels)["names"] == ["rule", "people"]
    assert cli.main(["judge-audit", str(alone), str(edited)]) == 0
    assert "judge audit: A = rule, B = llm; 36 factual items graded by both" in capsys.readouterr().out


def test_bad_items_files_are_named(two_judges, tmp_path):
    rows = list(read_items(read_results(two_judges / "llm")).values())
    factual = [r for r in rows if "factual" in r]
    other = [dict(r, prediction=r["prediction"] + "。") if r["id"] == factual[3]["id"] else r for r in rows]
    with pytest.raises(InputError, match=rf"different submissions: id {factual[3]['id']} has another prediction"):
        audit_results(two_judges / "rule", _write_items(tmp_path / "other.jsonl", other))
    bad = [dict(r) for r in factual[:3]]
    bad[1] = dict(bad[1], factual={"grade": "correct"})
    with pytest.raises(InputError, match=rf"bad\.jsonl line 2 \(id {bad[1]['id']}\): 'factual' must be an object"):
        audit_results(_write_items(tmp_path / "bad.jsonl", bad), two_judges / "rule")
    with pytest.raises(InputError, match=rf"twice\.jsonl line 3 \(id {factual[0]['id']}\): duplicate id"):
        audit_results(_write_items(tmp_path / "twice.jsonl", [factual[0], factual[1], factual[0]]),
                      two_judges / "rule")
    (tmp_path / "torn.jsonl").write_text(json.dumps(factual[0]) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"torn\.jsonl line 2"):
        audit_results(tmp_path / "torn.jsonl", two_judges / "rule")
    with pytest.raises(InputError, match="no factual grades"):
        audit_results(_write_items(tmp_path / "open.jsonl", [r for r in rows if "factual" not in r]),
                      two_judges / "rule")
    with pytest.raises(InputError, match=r"missing\.jsonl: no such items file"):
        audit_results(tmp_path / "missing.jsonl", two_judges / "rule")
