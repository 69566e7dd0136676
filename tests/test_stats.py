"""`chimdqa stats`: Table 2 and Table 3 numbers on small releases whose answers are known by construction."""
import json
import re

from chimdqa_eval import stats
from chimdqa_eval.cli import main
from chimdqa_eval.release import SAMPLE_DIR
from chimdqa_eval.schema import DOMAINS, QUESTION_TYPES


def qa(domain, qtype, level, question, answer):
    return {"domain": domain, "question_type": qtype, "level": level, "question": question, "answer": answer}


ROWS = [qa("law", "retrieval", "L1", "一二三", "四五"),
        qa("law", "inference", "L2", "一二三四五", "六七八九十一"),
        qa("news", "retrieval", "L1", "问" * 8, "答")]


def test_spread_and_counts():
    assert stats.spread([3, 5, 10]) == (10, 3, 6.0)
    assert stats.qa_counts(ROWS) == {"law": {"retrieval": 1, "inference": 1, "L1": 1, "L2": 1, "total": 2},
                                     "news": {"retrieval": 1, "L1": 1, "total": 1}}


def test_lengths_are_in_characters():
    lengths = stats.qa_lengths(ROWS)
    assert lengths["law"] == {"question": (5, 3, 4.0), "answer": (6, 2, 4.0)}
    assert lengths["all"] == {"question": (8, 3, 16 / 3), "answer": (6, 1, 3.0)}


def test_document_table_sums_pages_per_document():
    pages = [{"doc_id": "a", "domain": "law", "page": 1, "text": "x" * 10},
             {"doc_id": "a", "domain": "law", "page": 2, "text": "x" * 30},
             {"doc_id": "b", "domain": "law", "page": 1, "text": "x" * 5},
             {"doc_id": "c", "domain": "news", "page": 4, "text": "x" * 7}]
    assert stats.document_table(pages) == {
        "law": {"documents": 2, "pages": (2, 1, 1.5), "length": (40, 5, 22.5)},
        "news": {"documents": 1, "pages": (1, 1, 1.0), "length": (7, 7, 7.0)}}


def test_format_table_aligns_chinese_by_display_width():
    lines = stats.format_table(["名称", "n"], [["法律", 12], ["news", 3]]).splitlines()
    assert lines == ["名称   n", "法律  12", "news   3"]


def test_cli_stats_on_the_sample_counts_every_line(capsys):
    raw = [json.loads(line) for path in sorted((SAMPLE_DIR / "qa").glob("*.jsonl"))
           for line in path.read_text(encoding="utf-8").splitlines()]
    assert main(["stats"]) == 0
    out = capsys.readouterr().out
    total = re.search(r"^total\s+(.*)$", out, re.M).group(1).split()
    per_domain = [sum(r["domain"] == d for r in raw) for d in DOMAINS]
    assert [int(x) for x in total] == [*per_domain, len(raw)]
    for name in QUESTION_TYPES:
        assert re.search(rf"^{name}\s+\d", out, re.M)
    assert "Table 3" in out and re.search(r"^medical\s+1\s+2\s+2\s+2\.0", out, re.M)


def test_cli_stats_one_domain(capsys):
    assert main(["stats", "law"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^\s+law\s+all$", out, re.M)
    assert not re.search(r"^finance", out, re.M)
