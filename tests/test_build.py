"""`chimdqa build`: the whole round trip on the sample PDFs against a scripted chat server — generation with
malformed replies, screening with a judge below threshold and truncation disagreements, two reviewers (one as
CSV, one as a Label Studio export) with an arbiter, Cohen's kappa, the release loaded back through the loader."""
import csv
import io
import json
import re
import shutil
from collections import Counter

import pytest

import chimdqa
from chimdqa_eval import release
from chimdqa_eval.build.generate import bigram_jaccard, level_targets, near_duplicates, parse_pairs, segments
from chimdqa_eval.schema import InputError
from chimdqa_eval.build.review import decide
from chimdqa_eval.build import screen as screen_module
from chimdqa_eval.build.screen import balance_levels, context_pages, l1_quota, truncated_views
from chimdqa_eval.cli import main
from chat_server import ChatServer, Reply

SAMPLE = {row["question"]: row for row in release.read_qa()}
SAMPLE_EVIDENCE = release.read_evidence()   # id -> the sample's hand-annotated evidence pages
TITLES = {doc["title"]: doc["doc_id"] for doc in release.read_document_index()}
JUDGES = ("judge-a", "judge-b", "judge-c")

LOW_CONFIDENCE = "针对动力电池产线产能利用率偏低的问题，请提出应对建议。"     # finance L2: two judges doubt it
ONE_JUDGE_DOUBTS = "公司2023年研发投入是多少？"                                # finance L1: only judge-c doubts it
NEEDS_PAGE_2 = "为什么公司2023年归属于上市公司股东的净利润增速高于营业收入增速？"  # finance L2, open-ended
LAW_FIRST = next(r for r in SAMPLE.values() if r["id"] == "law-ret-001")           # law L1, factual
DUPLICATE = "哪些业务板块的营业收入同比增长超过15%且毛利率高于25%呢？"            # near copy of fin-fil-001


def _field(text, label):
    return text.split(f"【{label}】\n", 1)[1].split("\n【", 1)[0]


class Script:
    """The chat server's replies: a generator that writes the sample's pairs, and three judges. The generator
    cites page 1 for every pair, or with sample_evidence the sample's own evidence pages."""

    def __init__(self, sample_evidence: bool = False):
        self.sample_evidence = sample_evidence
        self.generation_calls = Counter()
        self.fail_news_generation = 3   # more than the client's parse retries: the request fails once

    def __call__(self, body):
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        if "出题人" in system:
            return self.generate(user)
        question = _field(user, "问题")
        if "质检员" in system:
            return json.dumps({"confidence": self.confidence(body["model"], question), "reason": "依据充分"},
                              ensure_ascii=False)
        assert "阅读理解助手" in system
        context = user.split("【文档内容】\n", 1)[1].split("\n【问题】", 1)[0]
        return json.dumps({"answer": self.answer(question, context)}, ensure_ascii=False)

    def generate(self, user):
        doc_id = TITLES[re.search(r"【文档标题】(.+)", user).group(1)]
        question_type = re.search(r"【题型】\S+（(\w+)）", user).group(1)
        self.generation_calls[(doc_id, question_type)] += 1
        pairs = [{"question": r["question"], "answer": r["answer"], "level": r["level"],
                  "evidence_pages": SAMPLE_EVIDENCE[r["id"]] if self.sample_evidence else [1]}
                 for r in SAMPLE.values() if r["doc_id"] == doc_id and r["question_type"] == question_type]
        if (doc_id, question_type) == ("finance-01", "filtering"):
            pairs.append({**pairs[0], "question": DUPLICATE})
        if (doc_id, question_type) == ("law-01", "generation"):
            pairs.append({**pairs[0], "question": "一个引用不存在页码的问题？", "level": "L1", "evidence_pages": [7]})
        reply = json.dumps({"pairs": pairs}, ensure_ascii=False)
        if (doc_id, question_type) == ("finance-01", "retrieval") and self.generation_calls[(doc_id, question_type)] == 1:
            return "以下是问答对：\n" + reply  # prose around the JSON: re-asked
        if (doc_id, question_type) == ("news-01", "generation") and self.fail_news_generation:
            self.fail_news_generation -= 1
            return reply[:-5]  # cut off
        return reply

    def confidence(self, judge, question):
        if question == LOW_CONFIDENCE and judge != "judge-a":
            return 0.6
        if question == ONE_JUDGE_DOUBTS and judge == "judge-c":
            return 0.3
        return 0.95

    def answer(self, question, context):
        if question in (NEEDS_PAGE_2, LAW_FIRST["question"]) and "[第2页]" not in context:
            return "文档中没有相关信息" if question == NEEDS_PAGE_2 else "第九十九条"
        return SAMPLE[question]["answer"]


@pytest.fixture(scope="module")
def server():
    with ChatServer(Script()) as s:
        yield s


def cli(*args):
    return main(["build", *map(str, args)])


def read_sheet(path):
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"), newline="")))


def write_sheet(path, rows):
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")


def test_round_trip(server, tmp_path, capsys):
    work, out = tmp_path / "work", tmp_path / "release"
    judges = [f"{j}@{server.api_base}" for j in JUDGES]

    # a dry run counts the calls and asks nothing
    before = len(server.requests)
    assert cli("generate", release.SAMPLE_DIR, "--out", work, "--model", "gen-x", "--api-base", server.api_base,
               "--dry-run") == 0
    assert re.search(r"build-generate\s+60$", capsys.readouterr().out, re.MULTILINE)
    assert len(server.requests) == before

    # generate: one request fails (unparseable three times) and is reported; the re-run asks only that one again
    assert cli("generate", release.SAMPLE_DIR, "--out", work, "--model", "gen-x", "--api-base", server.api_base,
               "--l1", 2, "--l2", 2, "--type-targets", "generation=1,1") == 1
    assert "failed: news-01 generation" in capsys.readouterr().out
    assert server.handler.generation_calls[("finance-01", "retrieval")] == 2   # the prose reply was asked again
    asked = len(server.requests)
    assert cli("generate", release.SAMPLE_DIR, "--out", work, "--model", "gen-x", "--api-base", server.api_base,
               "--l1", 2, "--l2", 2, "--type-targets", "generation=1,1") == 0
    assert len(server.requests) == asked + 1
    generated = [json.loads(line) for line in (work / "generated.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(generated) == len(SAMPLE) + 2
    [dup] = [p for p in generated if p["duplicate_of"]]
    [invalid] = [p for p in generated if p["invalid"]]
    assert invalid["invalid"] == "evidence page(s) [7] not among the document's pages with text"
    assert dup["question"] == DUPLICATE and dup["duplicate_of"] == "finance-01-fil-001"
    assert generated[0]["generator"]["model"] == "gen-x"
    assert generated[0]["generator"]["template"] == "frame-1/retrieval-1"
    manifest = json.loads((work / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["stages"]["generate"]["counts"]["failed_requests"] == 0
    assert {"doc_id": "finance-01", "question_type": "inference", "missing": {"L1": 2, "L2": 1}} in \
        manifest["stages"]["generate"]["shortfalls"]

    # screen
    assert cli("screen", work, "--judges", *judges) == 0
    screened = {p["question"]: p for p in map(json.loads, (work / "screened.jsonl").read_text(encoding="utf-8")
                                              .splitlines())}
    assert len(screened) == len(SAMPLE)
    low = screened[LOW_CONFIDENCE]["screen"]
    assert low["status"] == "dropped" and low["votes"] == 1 and low["reason"].startswith("confidence")
    page2 = screened[NEEDS_PAGE_2]["screen"]
    assert page2["status"] == "dropped" and page2["truncation"]["agreement"] == pytest.approx(3 / 9, abs=1e-4)
    assert page2["truncation"]["full_answer_matches_pair"] == dict.fromkeys(JUDGES, True)
    law = screened[LAW_FIRST["question"]]["screen"]
    assert law["status"] == "dropped" and law["reason"].startswith("truncation")
    doubted = screened[ONE_JUDGE_DOUBTS]["screen"]
    assert doubted["votes"] == 2 and doubted["confidence"]["judge-c"]["confidence"] == 0.3
    # finance is left with 6 L1 and 3 L2 pairs: 67% L1 > 60%, so two L1 pairs go, the least trusted first
    balanced = sorted(p["id"] for p in screened.values() if p["screen"]["reason"].startswith("balance"))
    assert balanced == ["finance-01-ret-001", "finance-01-sta-001"]
    assert doubted["status"] == "dropped"
    kept = [p for p in screened.values() if p["screen"]["status"] == "kept"]
    assert len(kept) == len(SAMPLE) - 5
    for p in kept:
        assert p["screen"]["reason"] and p["screen"]["truncation"]["agreement"] == 1.0
    record = json.loads((work / "manifest.json").read_text(encoding="utf-8"))["stages"]["screen"]
    finance = next(b for b in record["balancing"] if b["domain"] == "finance")
    assert "confidence_prompt:screen-confidence-1|" in record["signature"]
    assert f"judge-a@{server.api_base[:-len('/v1')]}:t0.0" in record["signature"]
    assert (finance["L1"], finance["L2"], finance["L1_kept"]) == (6, 3, 4)

    # review-export
    assert cli("review-export", work, "--reviewers", 2) == 0
    folder = work / "review"
    sheet1 = read_sheet(folder / "reviewer-1.csv")
    tasks2 = json.loads((folder / "reviewer-2.labelstudio.json").read_text(encoding="utf-8"))
    assert len(sheet1) == len(tasks2) == len(kept)
    assert "[第1页]" in sheet1[0]["evidence"] and tasks2[0]["data"]["evidence"] == sheet1[0]["evidence"]
    ids = [row["id"] for row in sheet1]
    edited, rejected, split, two_edits = ids[0], ids[1], ids[2], ids[3]

    # reviewer-1 fills the CSV; a release before all verdicts are in is refused
    for row in sheet1:
        row["verdict"] = {edited: "edit", rejected: "reject", two_edits: "修改"}.get(row["id"], "accept")
        if row["id"] == edited:
            row["edited_answer"] = "改过的答案"
        if row["id"] == two_edits:
            row["edited_question"] = "第一位审稿人改的问题？"
    write_sheet(tmp_path / "r1.csv", sheet1)
    assert cli("review-import", work, tmp_path / "r1.csv") == 0
    assert cli("release", work, "--out", out) == 2
    assert "no final review decision" in capsys.readouterr().err

    # reviewer-2 answers in Label Studio; a cancelled annotation does not count
    def annotation(verdict, **texts):
        result = [{"from_name": "verdict", "to_name": "question", "type": "choices", "value": {"choices": [verdict]}}]
        result += [{"from_name": k, "to_name": "answer", "type": "textarea", "value": {"text": [v]}}
                   for k, v in texts.items()]
        return {"result": result, "was_cancelled": False}

    for number, task in enumerate(tasks2, start=1):
        pair_id = task["data"]["pair_id"]
        task["id"] = number
        if pair_id == edited:
            task["annotations"] = [annotation("edit", edited_answer="改过的答案", note="数字有误")]
        elif pair_id in (rejected, split):
            task["annotations"] = [{**annotation("accept"), "was_cancelled": True}, annotation("reject")]
        elif pair_id == two_edits:
            task["annotations"] = [annotation("edit", edited_question="第二位审稿人改的问题？")]
        else:
            task["annotations"] = [annotation("accept")]
    (tmp_path / "r2.json").write_text(json.dumps(tasks2, ensure_ascii=False), encoding="utf-8")
    assert cli("review-import", work, tmp_path / "r2.json") == 0
    printed = capsys.readouterr().out
    n = len(kept)
    # by hand: reviewer-1 accept n-3, edit 2, reject 1; reviewer-2 accept n-4, edit 2, reject 2; one item differs
    p_o = (n - 1) / n
    p_e = ((n - 3) * (n - 4) + 2 * 2 + 1 * 2) / n ** 2
    kappa = (p_o - p_e) / (1 - p_e)
    assert f"{kappa:.3f}" in printed and n == 61 and round(kappa, 6) == round(348 / 409, 6)
    review = json.loads((work / "manifest.json").read_text(encoding="utf-8"))["stages"]["review"]
    assert review["kappa"][0]["kappa"] == round(kappa, 4) and review["kappa"][0]["n"] == n
    # rows reviewer-1, columns reviewer-2, in the order accept, edit, reject
    assert review["kappa"][0]["confusion"] == [[n - 4, 0, 1], [0, 2, 0], [0, 0, 1]]
    assert review["counts"]["disagreement"] == 2 and sorted(review["disputed"]) == sorted([split, two_edits])

    # the arbiter decides the two disagreements
    arbitration = read_sheet(folder / "arbitration.csv")
    assert {row["id"] for row in arbitration} == {split, two_edits}
    row = next(r for r in arbitration if r["id"] == split)
    assert (row["reviewer-1_verdict"], row["reviewer-2_verdict"]) == ("accept", "reject")
    for row in arbitration:
        row["verdict"] = "accept" if row["id"] == split else "reject"
    write_sheet(tmp_path / "arbiter.csv", arbitration)
    assert cli("review-import", work, tmp_path / "arbiter.csv") == 0
    printed = capsys.readouterr().out
    assert "2 disagreements between the reviewers, all decided by the arbiter" in printed and "awaiting" not in printed
    review = json.loads((work / "manifest.json").read_text(encoding="utf-8"))["stages"]["review"]
    assert review["counts"] == {"accept": n - 3, "edit": 1, "reject": 2, "pending": 0, "disagreement": 0,
                                "arbitrated": 2}

    # release, loaded back through the loader
    assert cli("release", work, "--out", out) == 0
    ds = chimdqa.load(data_dir=out, split="test")
    by_id = {row["id"]: row for row in ds}
    assert len(ds) == n - 2 and rejected not in by_id and two_edits not in by_id and split in by_id
    assert by_id[edited]["answer"] == "改过的答案"
    provenance = {r["id"]: r for r in map(json.loads, (out / "provenance.jsonl").read_text(encoding="utf-8")
                                          .splitlines())}
    assert set(provenance) == set(by_id)
    assert provenance[edited]["review"]["decision"] == "edit"
    assert provenance[edited]["review"]["verdicts"]["reviewer-2"]["note"] == "数字有误"
    assert provenance[split]["review"]["decided_by"] == "arbiter"
    assert provenance[edited]["generator"]["template"].startswith("frame-1/")
    assert set(provenance[edited]["screen"]["confidence"]) == set(JUDGES)
    assert json.loads((out / "build.json").read_text(encoding="utf-8"))["human_review"] is True

    assert main(["stats", "--data-dir", str(out)]) == 0
    assert main(["export-hub", str(tmp_path / "hub"), "--data-dir", str(out)]) == 0
    assert (tmp_path / "hub" / "data" / "finance" / "retrieval.parquet").exists()
    capsys.readouterr()

    assert cli("funnel", work, "--cells") == 0
    table = capsys.readouterr().out
    all_rows = re.findall(r"^all\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$", table, re.MULTILINE)
    assert all_rows == [tuple(map(str, (len(SAMPLE) + 2, len(SAMPLE), n, n - 2, n - 2)))] * 3
    assert re.search(r"^finance/filtering\s+2\s+1\s+1\s+1\s+1$", table, re.MULTILINE)
    assert re.search(r"^finance\s+12\s+11\s+7\s+7\s+7$", table, re.MULTILINE)

    # a stage re-run asks nothing again
    asked = len(server.requests)
    assert cli("screen", work, "--judges", *judges) == 0
    assert len(server.requests) == asked


def test_bad_review_files_name_file_row_and_id(server, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(screen_module, "CHUNK", 4)  # the screen asks its requests in several chunks
    work = tmp_path / "work"
    assert cli("generate", release.SAMPLE_DIR, "--out", work, "--model", "gen-x", "--api-base", server.api_base,
               "--types", "retrieval") == 0
    judges = [f"{j}@{server.api_base}" for j in JUDGES]
    asked = len(server.requests)
    assert cli("screen", work, "--judges", *judges, "--dry-run") == 0
    plan = capsys.readouterr().out
    assert re.search(r"build-confidence judge-a\s+12$", plan, re.MULTILINE)
    # two-page documents, evidence on page 1: the readings are pages 1-2 (full, end) and page 1 (beginning, middle)
    assert re.search(r"build-truncation judge-c\s+24 \(estimate\)", plan)
    assert len(server.requests) == asked
    # the call cap stops the stage with what it has written and cached; the same command without it resumes
    assert cli("screen", work, "--judges", *judges, "--max-llm-calls", 5) == 2
    assert "--max-llm-calls 5: the cap was reached after 5 requests" in capsys.readouterr().err
    statuses = Counter(json.loads(line)["screen"]["status"]
                       for line in (work / "screened.jsonl").read_text(encoding="utf-8").splitlines())
    assert statuses == {"error": 12}
    assert cli("review-export", work) == 2
    assert "12 pairs have no screening result yet" in capsys.readouterr().err
    server.queue(Reply(status=401, text="bad key"))  # a refusal no retry fixes stops the stage, exit 1
    assert cli("screen", work, "--judges", *judges) == 1
    assert "answered HTTP 401" in capsys.readouterr().err
    assert cli("screen", work, "--judges", *judges, "--max-l1-share", 1) == 0
    assert "11 kept, 1 dropped (confidence 0, truncation 1, balance 0), 0 errors" in capsys.readouterr().out
    usage = json.loads((work / "manifest.json").read_text(encoding="utf-8"))["stages"]["screen"]["llm_usage"]
    confidence = usage["judge-a"]["stages"]["build-confidence"]
    assert confidence["cache_hits"] >= 5 and confidence["cache_hits"] + confidence["asked"] == 12  # resumed
    assert cli("review-export", work) == 0
    rows = read_sheet(work / "review" / "reviewer-1.csv")
    rows[1]["verdict"] = "maybe"
    write_sheet(tmp_path / "bad.csv", rows)
    assert cli("review-import", work, tmp_path / "bad.csv") == 2
    err = capsys.readouterr().err
    assert f"bad.csv row 3 (id {rows[1]['id']}): unknown verdict 'maybe'" in err
    rows[1]["verdict"], rows[2]["verdict"] = "accept", "edit"
    write_sheet(tmp_path / "bad.csv", rows)
    assert cli("review-import", work, tmp_path / "bad.csv") == 2
    assert f"row 4 (id {rows[2]['id']}): verdict edit without" in capsys.readouterr().err
    rows[2]["verdict"], rows[0]["id"] = "", "no-such-id"
    write_sheet(tmp_path / "bad.csv", rows)
    assert cli("review-import", work, tmp_path / "bad.csv") == 2
    assert "row 2 (id no-such-id): id no-such-id is not in the review set" in capsys.readouterr().err
    assert not (work / "review" / "verdicts.jsonl").exists()  # nothing written from a bad file
    (tmp_path / "bad.json").write_text(json.dumps([{"data": {"pair_id": rows[1]["id"], "reviewer": "reviewer-2"},
                                                    "annotations": [{"result": [{"from_name": "verdict",
                                                                                 "value": {"choices": ["ok"]}}]}]}]),
                                       encoding="utf-8")
    assert cli("review-import", work, tmp_path / "bad.json") == 2
    assert f"bad.json task 1 (id {rows[1]['id']}): unknown verdict 'ok'" in capsys.readouterr().err

    # Label Studio's JSON-MIN export: flat objects
    minimal = [{"pair_id": rows[1]["id"], "reviewer": "reviewer-2", "verdict": "reject", "note": "无依据"},
               {"pair_id": rows[2]["id"], "reviewer": "reviewer-2", "verdict": ["accept"]}]
    (tmp_path / "min.json").write_text(json.dumps(minimal, ensure_ascii=False), encoding="utf-8")
    assert cli("review-import", work, tmp_path / "min.json") == 2
    assert f"min.json task 2 (id {rows[2]['id']}): verdict must be text, got list" in capsys.readouterr().err
    (tmp_path / "min.json").write_text(json.dumps(minimal[:1], ensure_ascii=False), encoding="utf-8")
    assert cli("review-import", work, tmp_path / "min.json") == 0
    [stored] = map(json.loads, (work / "review" / "verdicts.jsonl").read_text(encoding="utf-8").splitlines())
    assert (stored["id"], stored["verdict"], stored["note"]) == (rows[1]["id"], "reject", "无依据")
    # the same export saved with a byte order mark (as Windows Notepad does) reads the same
    minimal[0]["note"] = "无依据（另存）"
    (tmp_path / "min.json").write_text(json.dumps(minimal[:1], ensure_ascii=False), encoding="utf-8-sig")
    assert cli("review-import", work, tmp_path / "min.json") == 0
    [stored] = map(json.loads, (work / "review" / "verdicts.jsonl").read_text(encoding="utf-8").splitlines())
    assert stored["note"] == "无依据（另存）"
    capsys.readouterr()

    # without human review; into a folder that holds something else it refuses to write
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine", encoding="utf-8")
    assert cli("release", work, "--out", tmp_path / "other", "--skip-review") == 2
    assert "is not a release written by `chimdqa build release`" in capsys.readouterr().err
    assert cli("release", work, "--out", tmp_path / "unreviewed", "--skip-review") == 0
    assert len(chimdqa.load("law", data_dir=tmp_path / "unreviewed", split="retrieval")) == 1
    assert json.loads((tmp_path / "unreviewed" / "build.json").read_text(encoding="utf-8"))["human_review"] is False

    # generating again with other settings makes the screen's results stale: later stages refuse
    assert cli("generate", release.SAMPLE_DIR, "--out", work, "--model", "gen-x", "--api-base", server.api_base,
               "--types", "retrieval", "comparison") == 0
    assert cli("review-import", work, work / "review" / "reviewer-1.csv") == 2
    assert "generated.jsonl has changed since `chimdqa build screen` ran" in capsys.readouterr().err


def released_rows(folder):
    return [json.loads(line) for path in sorted((folder / "qa").glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_release_keeps_evidence_pages_and_its_build_json_describes_itself(tmp_path, capsys):
    work, first, second = tmp_path / "work", tmp_path / "first", tmp_path / "second"
    with ChatServer(Script(sample_evidence=True)) as s:
        assert cli("generate", release.SAMPLE_DIR, "--out", work, "--model", "gen-x", "--api-base", s.api_base,
                   "--types", "retrieval", "summarization") == 0
        assert cli("screen", work, "--judges", *(f"{j}@{s.api_base}" for j in JUDGES), "--max-l1-share", 1) == 0
    assert cli("release", work, "--out", first, "--skip-review") == 0

    # every released pair carries the pages the generator cited: the sample's evidence for that question
    rows = released_rows(first)
    assert len(rows) > 12 and {tuple(r["evidence"]) for r in rows} == {(1,), (2,), (1, 2)}
    for row in rows:
        assert row["evidence"] == SAMPLE_EVIDENCE[SAMPLE[row["question"]]["id"]], row["id"]
    assert release.read_evidence(first) == {r["id"]: r["evidence"] for r in rows}   # what generate's hit@k reads
    loaded = chimdqa.load(data_dir=first, split="test")
    assert {r["id"]: r["evidence"] for r in loaded} == {r["id"]: r["evidence"] for r in rows}

    def described(folder):
        record = json.loads((folder / "build.json").read_text(encoding="utf-8"))
        return record, record["stages"]["release"]

    record, made = described(first)
    assert record["human_review"] is False and made["settings"] == {"out": str(first.resolve()), "skip_review": True}
    assert made["fingerprint"] == release.fingerprint(first)
    assert sorted(made["ids"]) == sorted(r["id"] for r in rows) and made["counts"]["released"] == len(rows)
    assert record["history"][-1]["stage"] == "release"

    # reviewed: one pair rejected; the second release's build.json is about the second release, and the first
    # release's is left as it was
    assert cli("review-export", work) == 0
    rejected = read_sheet(work / "review" / "reviewer-1.csv")[0]["id"]
    for reviewer in ("reviewer-1", "reviewer-2"):
        sheet = read_sheet(work / "review" / f"{reviewer}.csv")
        for row in sheet:
            row["verdict"] = "reject" if row["id"] == rejected else "accept"
        write_sheet(tmp_path / f"{reviewer}.csv", sheet)
    assert cli("review-import", work, tmp_path / "reviewer-1.csv", tmp_path / "reviewer-2.csv") == 0
    assert cli("release", work, "--out", second) == 0
    capsys.readouterr()
    second_rows = released_rows(second)
    assert second_rows == [r for r in rows if r["id"] != rejected]
    record, made = described(second)
    assert record["human_review"] is True and made["settings"] == {"out": str(second.resolve()), "skip_review": False}
    assert made["fingerprint"] == release.fingerprint(second) != release.fingerprint(first)
    assert sorted(made["ids"]) == sorted(r["id"] for r in second_rows) and made["counts"]["released"] == len(rows) - 1
    assert record["stages"]["review"]["counts"]["reject"] == 1
    assert described(first)[1]["settings"]["out"] == str(first.resolve())


def test_decide():
    r = ("r1", "r2")
    accept = {"verdict": "accept", "edited_question": "", "edited_answer": "", "note": ""}
    edit = {**accept, "verdict": "edit", "edited_answer": "新答案"}
    assert decide({"r1": accept}, r)["verdict"] == "pending"
    assert decide({"r1": accept, "r2": accept}, r)["verdict"] == "accept"
    assert decide({"r1": edit, "r2": {**edit, "edited_answer": "另一个"}}, r)["verdict"] == "disagreement"
    assert decide({"r1": edit, "r2": {**edit, "edited_answer": " 新答案 "}}, r)["edited_answer"] == "新答案"
    assert decide({"r1": accept, "r2": edit, "arbiter": {**accept, "verdict": "reject"}}, r)["verdict"] == "reject"


def test_generation_reply_checks():
    ok = '{"pairs": [{"question": "Q？", "answer": "A", "level": "l2", "evidence_pages": [2, 1, 2]}]}'
    assert parse_pairs(ok) == [{"question": "Q？", "answer": "A", "level": "L2", "evidence_pages": [1, 2]}]
    assert parse_pairs("```json\n" + ok + "\n```")[0]["level"] == "L2"
    for bad, message in (("好的：" + ok, "not JSON"), ('{"pairs": []}', "no non-empty list"),
                         (ok.replace("l2", "L3"), "level"), (ok.replace("[2, 1, 2]", "[0]"), "page numbers"),
                         (ok.replace('"A"', '""'), "answer"), (ok.replace("[2, 1, 2]", "[true]"), "page numbers"),
                         ("[1, 2]", "not an object")):
        with pytest.raises(ValueError, match=message):
            parse_pairs(bad)


def test_near_duplicates_rule():
    assert bigram_jaccard("abcd", "abcd") == 1.0 and bigram_jaccard("abcd", "wxyz") == 0.0
    questions = ["公司2023年研发投入是多少？", "公司2023年的研发投入是多少", "公司2022年营业收入是多少？"]
    marks = near_duplicates(questions, 0.6)
    assert marks[0] is None and marks[1][0] == 0 and marks[2] is None
    assert near_duplicates(questions, 0.95)[1] is None


def test_truncated_views_and_balance():
    views = truncated_views([1, 2, 3, 4, 5, 6], [6], 0.5)
    assert views == {"beginning": [1, 2, 3, 6], "middle": [2, 3, 4, 6], "end": [4, 5, 6]}
    assert l1_quota(3, 0.6) == 4 and l1_quota(4, 0.5) == 4 and l1_quota(0, 0.6) == 0 and l1_quota(5, 1.0) is None
    pairs = [{"id": f"p{i}", "domain": "law", "level": "L1", "rank": (0.9 + i / 100,)} for i in range(4)]
    pairs.append({"id": "q", "domain": "law", "level": "L2", "rank": (0.5,)})
    dropped, [log] = balance_levels(pairs, 0.6)
    assert dropped == {"p0", "p1", "p2"} and log["L1_kept"] == 1   # 1 L1 of 2 pairs is 50% <= 60%
    pairs.append({"id": "r", "domain": "news", "level": "L2", "rank": (0.5,)})
    assert balance_levels(pairs, 0.6)[0] == {"p0", "p1", "p2"}          # news alone has no L1 to cut
    dropped, [log] = balance_levels(pairs, 0.6, within="all")
    # 3 L1 of 5 pairs is 60%
    assert dropped == {"p0"} and log == {"all": "all", "L1": 4, "L2": 2, "L1_share": 0.6667, "L1_kept": 3,
                                         "dropped": ["p0"]}


def test_long_documents_are_split_into_page_segments():
    pages = {1: "甲" * 50, 2: "乙" * 50, 3: "丙" * 200, 4: "丁" * 10}
    assert segments(pages, 130) == [[1, 2], [3], [4]]
    assert segments(pages, 10_000) == [[1, 2, 3, 4]]


def test_level_targets():
    targets = level_targets(["retrieval", "summarization", "comparison"], 3, 2, ["summarization=0,1", "inference=1,0"])
    assert targets == {"retrieval": {"L1": 3, "L2": 2}, "comparison": {"L1": 3, "L2": 2},
                       "inference": {"L1": 1, "L2": 0}, "summarization": {"L1": 0, "L2": 1}}
    assert list(level_targets(["retrieval"], 1, 1, ["retrieval=0,0", "expansion=1,1"])) == ["expansion"]
    for bad in ("summary=1,1", "retrieval=1", "retrieval=a,1"):
        with pytest.raises(InputError, match="TYPE=L1,L2"):
            level_targets(["retrieval"], 1, 1, [bad])
    with pytest.raises(InputError, match="no pairs requested"):
        level_targets(["retrieval"], 0, 0)


def test_judges_read_the_evidence_and_its_neighbours_when_a_document_is_too_long():
    pages = {n: "字" * 100 for n in range(1, 11)}   # about 108 characters a page with its marker and separator
    assert context_pages(pages, [5], 10_000) == list(range(1, 11))
    assert context_pages(pages, [5], 3 * 110) == [4, 5, 6]
    assert context_pages(pages, [1, 10], 4 * 110) == [1, 2, 9, 10]


class Revised(Script):
    """The same generator, except that model gen-y writes other answers under the same pair ids."""

    def __call__(self, body):
        reply = super().__call__(body)
        if body["model"] == "gen-y":
            data = json.loads(reply)
            for pair in data["pairs"]:
                pair["answer"] += "（修订）"
            reply = json.dumps(data, ensure_ascii=False)
        return reply


def test_verdicts_given_on_an_earlier_text_of_a_pair_do_not_count(tmp_path, capsys):
    work = tmp_path / "work"
    with ChatServer(Revised()) as s:
        judges = [f"{j}@{s.api_base}" for j in JUDGES]
        def build(model):
            assert cli("generate", release.SAMPLE_DIR, "--out", work, "--model", model, "--api-base", s.api_base,
                       "--types", "retrieval") == 0
            assert cli("screen", work, "--judges", *judges, "--max-l1-share", 1) == 0
            assert cli("review-export", work) == 0
        build("gen-x")
        files = []
        for reviewer in ("reviewer-1", "reviewer-2"):
            rows = read_sheet(work / "review" / f"{reviewer}.csv")
            for row in rows:
                row["verdict"] = "accept"
            files.append(tmp_path / f"{reviewer}.csv")
            write_sheet(files[-1], rows)
        assert cli("review-import", work, *files) == 0
        assert cli("release", work, "--out", tmp_path / "first") == 0
        first_id = rows[0]["id"]
        capsys.readouterr()
        # the same ids now carry other answers: the verdicts were given on the old ones
        build("gen-y")
        capsys.readouterr()
        assert cli("release", work, "--out", tmp_path / "second") == 2
        err = capsys.readouterr().err
        assert "no final review decision" in err and "earlier text" in err
        assert not (tmp_path / "second").exists()
        # the sheets kept by review-export (and the files filled from them) are of the old answers
        assert cli("review-import", work, files[0]) == 2
        err = capsys.readouterr().err
        assert f"reviewer-1.csv row 2 (id {first_id}): exported for an earlier text of this pair (text_version" in err
        rows = read_sheet(files[0])
        write_sheet(files[0], [{k: v for k, v in row.items() if k != "text_version"} for row in rows])
        assert cli("review-import", work, files[0]) == 2   # a sheet without the column: its texts are compared
        assert f"row 2 (id {first_id}): exported for an earlier text of this pair (its answer differs" in \
            capsys.readouterr().err
        # sheets of the current texts import; the text_version vouches for an answer a spreadsheet reformatted
        assert cli("review-export", work, "--force") == 0
        rows = read_sheet(work / "review" / "reviewer-1.csv")
        rows[0]["answer"] = "4-Mar"
        for row in rows:
            row["verdict"] = "accept"
        write_sheet(files[0], rows)
        assert cli("review-import", work, files[0]) == 0
        assert re.search(r"decisions: 0 accept, 0 edit, 0 reject, \d+ pending", capsys.readouterr().out)


def test_generate_again_copies_a_document_that_changed_even_at_the_same_size(server, tmp_path):
    docs, work = tmp_path / "docs", tmp_path / "work"
    shutil.copytree(release.SAMPLE_DIR, docs)
    args = ("generate", docs, "--out", work, "--model", "gen-x", "--api-base", server.api_base, "--types", "retrieval")
    assert cli(*args) == 0
    source = docs / "pdf" / "academic-01.pdf"
    changed = source.read_bytes().replace(b"/CreationDate(D:2024", b"/CreationDate(D:2025")
    assert changed != source.read_bytes()
    source.write_bytes(changed)   # a corrected PDF of the same size
    assert cli(*args) == 0
    assert (work / "pdf" / "academic-01.pdf").read_bytes() == changed


def test_a_doc_id_that_is_not_a_plain_file_name_is_refused_by_name(server, tmp_path, capsys):
    docs, work = tmp_path / "docs", tmp_path / "deep" / "work"
    shutil.copytree(release.SAMPLE_DIR, docs)
    shutil.rmtree(docs / "qa")
    rows = [json.loads(line) for line in (docs / "documents.jsonl").read_text(encoding="utf-8").splitlines()]
    rows[2]["doc_id"] = "../../escaped"
    (docs / "documents.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                          encoding="utf-8")
    assert cli("generate", docs, "--out", work, "--model", "gen-x", "--api-base", server.api_base, "--dry-run") == 2
    err = capsys.readouterr().err
    assert f"{docs / 'documents.jsonl'} line 3 (id ../../escaped): doc_id" in err
    assert not (tmp_path / "deep" / "escaped.pdf").exists()


def test_a_label_studio_task_annotated_by_two_people_is_refused_not_half_read(tmp_path):
    from chimdqa_eval.build.review import read_verdict_file

    def annotation(verdict, user):
        return {"completed_by": user, "was_cancelled": False,
                "result": [{"from_name": "verdict", "to_name": "question", "type": "choices",
                            "value": {"choices": [verdict]}}]}

    task = {"id": 7, "data": {"pair_id": "law-01-ret-001", "reviewer": "reviewer-1"}}
    path = tmp_path / "export.json"
    # one person who changed their mind: the last annotation counts
    path.write_text(json.dumps([{**task, "annotations": [annotation("reject", 1), annotation("accept", 1)]}]),
                    encoding="utf-8")
    [(_, record)] = read_verdict_file(path)
    assert (record["reviewer"], record["verdict"]) == ("reviewer-1", "accept")
    # two people on one task (one Label Studio project for both reviewers): which is reviewer-1?
    path.write_text(json.dumps([{**task, "annotations": [annotation("reject", 1), annotation("accept", 2)]}]),
                    encoding="utf-8")
    with pytest.raises(InputError, match=r"export.json task 1 \(id law-01-ret-001\): annotations by 2 different "
                                         r"annotators"):
        read_verdict_file(path)


# ---- review sheets and work files as untrusted input (no LLM: a work folder as `build screen` leaves it) -----------

# What OWASP's CSV-injection guidance lists as a formula start, each as the start of a generated question.
FORMULA_QUESTIONS = ("=HYPERLINK(\"http://x.test\",\"点击\")", "+1+1 是多少？", "-2+3 是多少？", "@SUM(A1:A2)",
                     "\t=1+1", "\r=1+1", "普通的问题？")


def hand_made_work(tmp_path, questions=FORMULA_QUESTIONS):
    """A work folder holding one kept pair per question, written by hand."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "manifest.json").write_text(json.dumps({"stages": {}, "history": []}), encoding="utf-8")
    (work / "pages.jsonl").write_text(json.dumps({"doc_id": "doc-1", "page": 1, "text": "第一页的内容。"},
                                                 ensure_ascii=False) + "\n", encoding="utf-8")
    pairs = [{"id": f"doc-1-ret-{i:03d}", "domain": "finance", "question_type": "retrieval", "level": "L1",
              "doc_id": "doc-1", "evidence_pages": [1], "question": q, "answer": f"答案{i}", "screen": {"status": "kept"}}
             for i, q in enumerate(questions, start=1)]
    (work / "screened.jsonl").write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs),
                                         encoding="utf-8")
    return work


def raw_sheet(path):
    """A sheet's rows as a spreadsheet program reads them: no newline translation, so a CR stays a CR."""
    return list(csv.DictReader(io.StringIO(path.read_bytes().decode("utf-8-sig"), newline="")))


def write_raw_sheet(path, rows, columns):
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_bytes(out.getvalue().encode("utf-8"))


def stored_verdicts(work):
    return [json.loads(line) for line in (work / "review" / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()]


def test_review_sheets_neutralise_formulas_and_read_them_back(tmp_path, capsys):
    work = hand_made_work(tmp_path)
    assert cli("review-export", work) == 0
    rows = raw_sheet(work / "review" / "reviewer-1.csv")
    by_question = dict(zip(FORMULA_QUESTIONS, rows))
    for question, row in by_question.items():
        # a cell a spreadsheet would run as a formula starts with an apostrophe; plain text is left alone
        assert row["question"] == (question if question == "普通的问题？" else "'" + question)
    # Each reviewer copies the question, as shown, into an edit, and drops text_version: the import compares the
    # question cells with the pairs' questions and stores the edits, both read back to the original text.
    columns = [c for c in rows[0] if c != "text_version"]
    for number, reviewer in enumerate(("reviewer-1", "reviewer-2"), start=1):
        rows = raw_sheet(work / "review" / f"{reviewer}.csv")
        for row in rows:
            del row["text_version"]
            row["verdict"] = "edit"
            row["edited_question"] = row["question"]
            row["edited_answer"] = f"第{number}位审稿人的答案"
        write_raw_sheet(tmp_path / f"{reviewer}.csv", rows, columns)
    assert cli("review-import", work, tmp_path / "reviewer-1.csv", tmp_path / "reviewer-2.csv") == 0
    stored = {(v["reviewer"], v["id"]): v["edited_question"] for v in stored_verdicts(work)}
    pair_ids = [row["id"] for row in rows]
    for pair_id, question in zip(pair_ids, FORMULA_QUESTIONS):
        assert stored[("reviewer-1", pair_id)] == stored[("reviewer-2", pair_id)] == question.strip()
    # the answers differ: every pair goes to the arbiter, whose sheet shows the reviewers' edits neutralised too
    arbitration = raw_sheet(work / "review" / "arbitration.csv")
    assert len(arbitration) == len(FORMULA_QUESTIONS)
    for row in arbitration:
        question = FORMULA_QUESTIONS[pair_ids.index(row["id"])]
        plain = question == "普通的问题？"
        assert row["question"] == (question if plain else "'" + question)
        assert row["reviewer-1_edited_question"] == (question if plain else "'" + question.strip())
        row["verdict"], row["edited_question"] = "edit", row["reviewer-1_edited_question"]
        row["edited_answer"] = row["reviewer-2_edited_answer"]
    write_raw_sheet(tmp_path / "arbiter.csv", arbitration, list(arbitration[0]))
    assert cli("review-import", work, tmp_path / "arbiter.csv") == 0
    arbiter = {v["id"]: v["edited_question"] for v in stored_verdicts(work) if v["reviewer"] == "arbiter"}
    assert [arbiter[i] for i in pair_ids] == [q.strip() for q in FORMULA_QUESTIONS]


DEEP = "[" * 1000 + "]" * 1000     # JSON nested 1,000 deep
HUGE = "7" * 5000                  # an integer of 5,000 digits


@pytest.mark.parametrize("content, message", [
    (f'[{{"pair_id": "doc-1-ret-001", "reviewer": "reviewer-1", "verdict": "accept", "note": {DEEP}}}]'.encode(),
     "export.json: JSON nested more than"),
    (f'[\n{{"pair_id": "doc-1-ret-001", "reviewer": "reviewer-1",\n "verdict": {HUGE}}}]'.encode(),
     "export.json: line 3: an integer of 5000 digits"),
    ('[{"pair_id": "doc-1-ret-001", "reviewer": "reviewer-1", "note": "坏"}]'.encode("gbk"), "export.json: not UTF-8"),
])
def test_a_hostile_label_studio_export_is_refused_by_name(tmp_path, capsys, content, message):
    work = hand_made_work(tmp_path)
    assert cli("review-export", work) == 0
    (tmp_path / "export.json").write_bytes(content)
    capsys.readouterr()
    assert cli("review-import", work, tmp_path / "export.json") == 2
    assert message in capsys.readouterr().err
    assert not (work / "review" / "verdicts.jsonl").exists()


def test_a_review_sheet_cell_beyond_the_csv_limit_is_refused_by_row(tmp_path, capsys):
    work = hand_made_work(tmp_path)
    assert cli("review-export", work) == 0
    rows = raw_sheet(work / "review" / "reviewer-1.csv")
    rows[1]["note"] = "长" * 200_000   # more than Python's csv module reads in one cell
    write_raw_sheet(tmp_path / "long.csv", rows, list(rows[0]))
    capsys.readouterr()
    assert cli("review-import", work, tmp_path / "long.csv") == 2
    assert "long.csv row 3: not readable as CSV (field larger than field limit" in capsys.readouterr().err


@pytest.mark.parametrize("name, line, text, message", [
    ("manifest.json", 1, f'{{"stages": {{}}, "history": [], "n": {HUGE}}}',
     "manifest.json: line 1: an integer of 5000"),
    ("manifest.json", 1, '{"stages": {}, "history": ' + DEEP + "}", "manifest.json: JSON nested more than"),
    ("screened.jsonl", 2, '{"id": "doc-1-ret-002", "x": ' + DEEP + "}",
     "screened.jsonl line 2 (id doc-1-ret-002): JSON nested more than"),
    ("pages.jsonl", 1, '{"doc_id": "doc-1", "page": ' + HUGE + ', "text": "x"}',
     "pages.jsonl line 1 (id doc-1): an integer of 5000 digits"),
])
def test_a_hostile_work_file_is_refused_by_name_and_line(tmp_path, capsys, name, line, text, message):
    work = hand_made_work(tmp_path)
    lines = (work / name).read_text(encoding="utf-8").splitlines()
    lines[line - 1] = text
    (work / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert cli("review-export", work) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_every_bad_row_of_every_review_file_is_reported_at_once(tmp_path, capsys):
    work = hand_made_work(tmp_path, [f"问题{i}？" for i in range(1, 7)])
    assert cli("review-export", work) == 0
    rows = raw_sheet(work / "review" / "reviewer-1.csv")
    for row in rows:
        row["verdict"] = "accept"
    rows[1]["verdict"] = "maybe"
    rows[2]["verdict"] = "edit"                              # without an edited text
    rows[3]["id"] = "no-such-id"
    rows[4]["reviewer"] = "someone"
    rows[5]["edited_answer"] = "改了却选了通过"
    write_raw_sheet(tmp_path / "r1.csv", rows, list(rows[0]))
    tasks = json.loads((work / "review" / "reviewer-2.labelstudio.json").read_text(encoding="utf-8"))
    minimal = [{**task["data"], "verdict": "accept"} for task in tasks]
    minimal[0]["verdict"] = "ok"
    minimal[3]["pair_id"] = ""
    minimal.append(dict(minimal[1]))                        # a second verdict on the same pair
    (tmp_path / "r2.json").write_text(json.dumps(minimal, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "notes.txt").write_text("我的笔记", encoding="utf-8")
    capsys.readouterr()

    assert cli("review-import", work, tmp_path / "r1.csv", tmp_path / "r2.json", tmp_path / "notes.txt") == 2
    err = capsys.readouterr().err
    expected = [f"r1.csv row 3 (id {rows[1]['id']}): unknown verdict 'maybe'",
                f"r1.csv row 4 (id {rows[2]['id']}): verdict edit without an edited_question or edited_answer",
                "r1.csv row 5 (id no-such-id): id no-such-id is not in the review set",
                f"r1.csv row 6 (id {rows[4]['id']}): reviewer 'someone' is not one of reviewer-1, reviewer-2, arbiter",
                f"r1.csv row 7 (id {rows[5]['id']}): edited text given with verdict accept; use edit",
                f"r2.json task 1 (id {minimal[0]['pair_id']}): unknown verdict 'ok'",
                "r2.json task 4: pair_id is missing",
                f"r2.json task {len(minimal)} (id {minimal[1]['pair_id']}): a second verdict of reviewer-2 on this id "
                "(first at ",
                "notes.txt: expected a .csv review sheet or a .json Label Studio export"]
    for message in expected:
        assert message in err, message
    assert f"{len(expected)} problems" in err
    assert err.count("r1.csv row 2 ") == 0                 # the good rows are not named
    assert not (work / "review" / "verdicts.jsonl").exists()   # nothing written from bad files


def test_disagreements_the_arbiter_decided_are_no_longer_counted_as_open(tmp_path, capsys):
    work = hand_made_work(tmp_path, ["问题一？", "问题二？", "问题三？"])
    assert cli("review-export", work) == 0
    for number, reviewer in enumerate(("reviewer-1", "reviewer-2"), start=1):
        rows = raw_sheet(work / "review" / f"{reviewer}.csv")
        for i, row in enumerate(rows):
            row["verdict"] = "accept" if number == 1 or i == 0 else "reject"   # they differ on pairs 2 and 3
        write_raw_sheet(tmp_path / f"{reviewer}.csv", rows, list(rows[0]))
    ids = [row["id"] for row in rows]
    capsys.readouterr()

    def review_import(*files):
        assert cli("review-import", work, *files) == 0
        stage = json.loads((work / "manifest.json").read_text(encoding="utf-8"))["stages"]["review"]
        return capsys.readouterr().out, stage

    out, stage = review_import(tmp_path / "reviewer-1.csv", tmp_path / "reviewer-2.csv")
    assert stage["disputed"] == ids[1:] and stage["awaiting_arbiter"] == ids[1:]
    assert (stage["counts"]["disagreement"], stage["counts"]["arbitrated"]) == (2, 0)
    assert "2 disagreements between the reviewers, 2 awaiting the arbiter in " in out

    sheet = work / "review" / "arbitration.csv"    # the arbiter fills the sheet in place, one pair at a time
    arbitration = raw_sheet(sheet)
    assert [row["id"] for row in arbitration] == ids[1:]
    arbitration[0]["verdict"] = "accept"
    write_raw_sheet(sheet, arbitration, list(arbitration[0]))
    out, stage = review_import(sheet)
    assert stage["disputed"] == ids[1:] and stage["awaiting_arbiter"] == ids[2:]
    assert (stage["counts"]["disagreement"], stage["counts"]["arbitrated"]) == (1, 1)
    assert "2 disagreements between the reviewers, 1 decided by the arbiter, 1 awaiting the arbiter in " in out

    arbitration = raw_sheet(sheet)
    assert [row["verdict"] for row in arbitration] == ["accept", ""]   # the decided pair is shown as decided
    arbitration[1]["verdict"] = "reject"
    write_raw_sheet(sheet, arbitration, list(arbitration[0]))
    out, stage = review_import(sheet)
    assert stage["disputed"] == ids[1:] and stage["awaiting_arbiter"] == []
    assert stage["counts"] == {"accept": 2, "edit": 0, "reject": 1, "pending": 0, "disagreement": 0, "arbitrated": 2}
    assert "2 disagreements between the reviewers, all decided by the arbiter" in out
    assert "awaiting" not in out
