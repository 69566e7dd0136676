"""Breakdowns by document length and by evidence position (chimdqa_eval.longdoc), on the sample and on a synthetic
release with long documents: every label and every number in results.json's new `by` columns is recomputed here
from the release and items.jsonl, with the definitions written out again; and the closed-book (no-document) run
paired with the runs that had the document, in results.json, the report and the board."""
import json
import math
import shutil

import jsonschema
import pytest

from chimdqa_eval import cli, release
from chimdqa_eval.longdoc import (check_buckets, length_bucket, length_labels, position_bucket, position_labels,
                                  relative_place)
from chimdqa_eval.report.results import SCHEMA_PATH, read_items, read_results
from chimdqa_eval.schema import InputError
from chimdqa_eval.text import tokenize
from test_release import write_chinese_pdf, write_lines

SAMPLE_PREDICTIONS = release.SAMPLE_DIR / "predictions.jsonl"
DEFAULT_LENGTHS = ["0-32k", "32k-64k", "64k-128k", "128k+"]
THIRDS = ["0-33%", "33-67%", "67-100%"]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


# ---- the labels -------------------------------------------------------------------------------------------------

def test_length_buckets_and_their_labels():
    bounds = (32000, 64000, 128000)
    assert length_labels(bounds) == DEFAULT_LENGTHS
    assert [length_bucket(n, bounds) for n in (0, 31999, 32000, 64000, 127999, 128000, 10**6)] == [
        "0-32k", "0-32k", "32k-64k", "64k-128k", "64k-128k", "128k+", "128k+"]  # a bound opens the bucket above
    assert length_labels((1500, 20000)) == ["0-1500", "1500-20k", "20k+"]
    for bad in ((), (0, 10), (64000, 32000), (10, 10), (1.5,)):
        with pytest.raises(InputError, match="--length-buckets: expected increasing token counts"):
            check_buckets(bad)


def test_evidence_positions_by_the_pages_centres():
    assert position_labels(3) == [*THIRDS, "spread"] and position_labels(4)[:4] == ["0-25%", "25-50%", "50-75%",
                                                                                   "75-100%"]
    assert relative_place(1, 2) == 0.25 and relative_place(5, 9) == 0.5
    # page 5 of 9 is the middle; on 3 pages, page 2 too; pages 1 and 9 of 9 are the start and the end
    assert [position_bucket([p], 9, 3) for p in (1, 3, 4, 5, 6, 7, 9)] == [
        "0-33%", "0-33%", "33-67%", "33-67%", "33-67%", "67-100%", "67-100%"]
    assert position_bucket([2], 3, 3) == "33-67%" and position_bucket([1], 1, 3) == "33-67%"
    assert position_bucket([1, 2], 9, 3) == "0-33%"  # several pages in one bin: that bin
    assert position_bucket([1, 9], 9, 3) == "spread" and position_bucket([1, 2], 2, 3) == "spread"
    assert position_bucket([], 9, 3) is None and position_bucket(None, 9, 3) is None


def test_a_question_without_a_label_is_in_no_group_but_in_every_total():
    from chimdqa_eval.aggregate import group_indices, summarize
    from chimdqa_eval.calibration import calibration_summary

    assert group_indices(["67-100%", None, "0-33%", None], ["0-33%", "33-67%", "67-100%"]) == {
        "0-33%": [2], "67-100%": [0]}
    summary = summarize({"rouge_l": [10.0, 20.0, 60.0]}, {"evidence_position": ["0-33%", None, "0-33%"]})
    by = summary["rouge_l"]["by"]["evidence_position"]
    assert summary["rouge_l"]["n"] == 3 and list(by) == ["0-33%"] and (by["0-33%"]["value"], by["0-33%"]["n"]) == (
        35.0, 2)
    calibration = calibration_summary([90, 40, 80], [True, False, True], {"evidence_position": [None, "spread", None]},
                                      correctness="test")
    assert calibration["n"] == 3 and list(calibration["by"]["evidence_position"]) == ["spread"]


# ---- recomputed from the release and items.jsonl ------------------------------------------------------------------

def expected_labels(root, bounds, bins, length_names, position_names) -> dict:
    """{id: (length label, position label or None)} with the definitions written out: tokens of every PDF page by
    the toolkit's tokenizer (jieba), a bound opening the bucket above it; a page's place is its centre's, and
    evidence pages in several bins are "spread"."""
    pages = {d["doc_id"]: release.pdf_pages(d["file"]) for d in release.read_document_index(root)}
    out = {}
    for row in release.read_qa(root, evidence=True):
        doc = pages[row["doc_id"]]
        tokens = sum(len(tokenize(text)) for text in doc)
        length = length_names[len([b for b in bounds if tokens >= b])]
        places = {min(math.floor((p - 0.5) / len(doc) * bins), bins - 1) for p in row["evidence"]}
        position = None if not places else position_names[places.pop()] if len(places) == 1 else "spread"
        out[row["id"]] = (length, position)
    return out


def f1_of(grades) -> tuple[float, float]:
    """(CO, F1) on 0-100 from grades, as the ChiMDQA paper defines them."""
    co = 100 * grades.count("CO") / len(grades)
    wrong = 100 * grades.count("IN") / len(grades)
    cga = 100 * co / (co + wrong) if co + wrong else 0.0
    return co, (2 * co * cga / (co + cga) if co + cga else 0.0)


def check_breakdowns(out, labels: dict) -> dict:
    """Every doc_length / evidence_position cell of results.json equals the one recomputed from items.jsonl with
    `labels`; returns {column: {label: factual F1}}."""
    results = read_results(out)
    jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))).validate(
        {k: v for k, v in results.items() if k != "_path"})
    items = read_items(results)
    assert {i: (row["doc_length"], row["evidence_position"]) for i, row in items.items()} == labels
    shown = {}
    for k, column in enumerate(("doc_length", "evidence_position")):
        groups: dict = {}
        for item_id, row in items.items():
            if labels[item_id][k] is not None:
                groups.setdefault(labels[item_id][k], []).append(row)
        factual = results["metrics"]["factual"]
        assert set(factual["F1"]["by"][column]) == {g for g, rows in groups.items()
                                                    if any("factual" in r for r in rows)}
        for label, rows in groups.items():
            grades = [r["factual"]["grade"] for r in rows if "factual" in r]
            if grades:
                co, f1 = f1_of(grades)
                cell = factual["F1"]["by"][column][label]
                assert (cell["value"], cell["n"]) == (pytest.approx(f1, abs=1e-4), len(grades))
                assert factual["CO"]["by"][column][label]["value"] == pytest.approx(co, abs=1e-4)
                shown.setdefault(column, {})[label] = round(f1, 2)
            rouge = [r["open_ended"]["rouge_l"] for r in rows if "open_ended" in r]
            if rouge:
                cell = results["metrics"]["open_ended"]["rouge_l"]["by"][column][label]
                assert (cell["value"], cell["n"]) == (pytest.approx(sum(rouge) / len(rouge), abs=1e-4), len(rouge))
    block = results["document_breakdowns"]
    assert block["n_without_evidence"] == sum(position is None for _, position in labels.values())
    for k, column in enumerate(("doc_length", "evidence_position")):
        assert {label: n for label, n in block["n_questions"][column].items() if n} == {
            label: sum(v[k] == label for v in labels.values()) for label in {v[k] for v in labels.values()} - {None}}
    return shown


def evaluate(predictions, out, *extra):
    assert cli.main(["evaluate", "--predictions", str(predictions), "--out", str(out), "--resamples", "0",
                     "--metrics", "factual", "open_ended", *map(str, extra)]) == 0


def test_the_sample_by_length_and_evidence_position(tmp_path):
    evaluate(SAMPLE_PREDICTIONS, tmp_path / "run")
    labels = expected_labels(release.SAMPLE_DIR, (32000, 64000, 128000), 3, DEFAULT_LENGTHS, THIRDS)
    assert {length for length, _ in labels.values()} == {"0-32k"}  # two-page documents: all in the first bucket
    shown = check_breakdowns(tmp_path / "run", labels)
    results = read_results(tmp_path / "run")
    block = results["document_breakdowns"]
    assert block["tokenizer"].startswith("jieba-") and f"tok:{block['tokenizer']}" in block["signature"]
    assert block["length_buckets"] == [32000, 64000, 128000] and block["position_bins"] == 3
    assert block["documents"]["finance-01"]["pages"] == 2
    assert list(block["n_questions"]["doc_length"]) == DEFAULT_LENGTHS  # empty buckets listed too
    # the buckets in their order, the report's plot and tables
    assert list(results["metrics"]["factual"]["F1"]["by"]["evidence_position"]) == [
        label for label in [*THIRDS, "spread"] if label in shown["evidence_position"]]
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "Scores by document length (tokens by jieba-" in page and "<h3>by evidence_position</h3>" in page
    print("sample factual F1:", shown)


@pytest.fixture(scope="module")
def long_release(tmp_path_factory):
    """Finance questions on a 3-page document and a 60-page one (about 36,000 jieba tokens: the 32k-64k bucket),
    with evidence at the start, in the middle, at the end, spread, and none; predictions that are right about
    the start and the end and wrong about the middle."""
    root = tmp_path_factory.mktemp("long")
    sentence = "公司在报告期内持续推进研发投入，营业收入同比增长，毛利率保持稳定，现金流状况良好。"
    write_chinese_pdf(root / "pdf" / "short.pdf", [[f"第{i}页：营业收入为{i}亿元。"] for i in range(1, 4)])
    write_chinese_pdf(root / "pdf" / "long.pdf", [[f"第{i}页。" + sentence * 29] for i in range(1, 61)], right=550)
    write_lines(root / "documents.jsonl", [
        {"doc_id": d, "domain": "finance", "title": f"报告{d}", "file": f"pdf/{d}.pdf"} for d in ("short", "long")])
    questions = [("short", [1]), ("short", [2]), ("short", [3]), ("short", None), ("long", [1]), ("long", [5]),
                 ("long", [30]), ("long", [31]), ("long", [58]), ("long", [60]), ("long", [2, 59]), ("long", None),
                 ("long", None)]
    rows, predictions = [], []
    for k, (doc, evidence) in enumerate(questions):
        answer = f"{k + 1}.5亿元"
        rows.append({"id": f"q{k:02d}", "domain": "finance", "question_type": "retrieval", "level": "L1",
                     "question": f"第{k}个问题的金额是多少？", "answer": answer, "doc_id": doc,
                     **({"evidence": evidence} if evidence else {})})
        middle = evidence is not None and len(evidence) == 1 and 0.33 < (evidence[0] - .5) / (3 if doc == "short"
                                                                                                else 60) < 0.67
        predictions.append({"id": f"q{k:02d}", "prediction": "99亿元" if middle else answer})
    for k, (doc, evidence) in enumerate([("long", [45]), ("short", [1])]):  # two open-ended questions
        rows.append({"id": f"o{k}", "domain": "finance", "question_type": "summarization", "level": "L2",
                     "question": f"请总结第{k}部分。", "answer": "营业收入同比增长，毛利率保持稳定。", "doc_id": doc,
                     "evidence": evidence})
        predictions.append({"id": f"o{k}", "prediction": "营业收入增长。" if k else "毛利率保持稳定，现金流良好。"})
    write_lines(root / "qa" / "finance.jsonl", rows)
    write_lines(root / "preds.jsonl", predictions)
    return root


def test_a_release_with_long_documents(long_release, tmp_path):
    evaluate(long_release / "preds.jsonl", tmp_path / "run", "--data-dir", long_release)
    labels = expected_labels(long_release, (32000, 64000, 128000), 3, DEFAULT_LENGTHS, THIRDS)
    assert {i: v for i, v in labels.items() if i in ("q00", "q05", "q06", "q09", "q10", "q11")} == {
        "q00": ("0-32k", "0-33%"), "q05": ("32k-64k", "0-33%"), "q06": ("32k-64k", "33-67%"),
        "q09": ("32k-64k", "67-100%"), "q10": ("32k-64k", "spread"), "q11": ("32k-64k", None)}
    shown = check_breakdowns(tmp_path / "run", labels)
    # lost in the middle, as the predictions were made: right at the start and the end, wrong in the middle
    assert shown["evidence_position"]["0-33%"] == shown["evidence_position"]["67-100%"] == 100.0
    assert shown["evidence_position"]["33-67%"] == 0.0
    results = read_results(tmp_path / "run")
    assert results["document_breakdowns"]["n_without_evidence"] == 3  # counted, never dropped
    assert results["metrics"]["factual"]["F1"]["n"] == 13  # and still in every other score
    tokens = results["document_breakdowns"]["documents"]["long"]
    assert tokens["pages"] == 60 and 32000 <= tokens["tokens"] < 64000


def test_the_buckets_and_bins_are_settings(long_release, tmp_path, capsys):
    evaluate(long_release / "preds.jsonl", tmp_path / "run", "--data-dir", long_release,
             "--length-buckets", 1000, 20000, "--position-bins", 4)
    quarters = ["0-25%", "25-50%", "50-75%", "75-100%"]
    labels = expected_labels(long_release, (1000, 20000), 4, ["0-1k", "1k-20k", "20k+"], quarters)
    assert labels["q00"] == ("0-1k", "0-25%") and labels["q06"] == ("20k+", "25-50%")
    check_breakdowns(tmp_path / "run", labels)
    block = read_results(tmp_path / "run")["document_breakdowns"]
    assert block["length_buckets"] == [1000, 20000] and "bins:4" in block["signature"]
    assert cli.main(["evaluate", "--predictions", str(long_release / "preds.jsonl"), "--out", str(tmp_path / "x"),
                     "--data-dir", str(long_release), "--position-bins", "0"]) == 2
    assert "--position-bins: expected 1 to 100" in capsys.readouterr().err


def test_an_evidence_page_past_the_end_of_its_document_names_the_question(long_release, tmp_path, capsys):
    root = tmp_path / "release"
    rows = [json.loads(line) for line in (long_release / "qa" / "finance.jsonl").read_text("utf-8").splitlines()]
    rows[1]["evidence"] = [7]  # the short document has 3 pages
    write_lines(root / "qa" / "finance.jsonl", rows)
    (root / "documents.jsonl").write_bytes((long_release / "documents.jsonl").read_bytes())
    shutil.copytree(long_release / "pdf", root / "pdf")
    assert cli.main(["evaluate", "--predictions", str(long_release / "preds.jsonl"), "--out", str(tmp_path / "x"),
                     "--data-dir", str(root)]) == 2
    assert (f"{root / 'qa' / 'finance.jsonl'} line 2 (id q01): evidence page 7, but its document short "
            f"({root / 'pdf' / 'short.pdf'}) has 3 pages") in capsys.readouterr().err


def test_no_documents_no_new_columns(tmp_path):
    """--data-files without --data-dir: no documents to measure, so results.json and items.jsonl are as before."""
    evaluate(SAMPLE_PREDICTIONS, tmp_path / "run", "--data-files", *release.qa_files())
    results = read_results(tmp_path / "run")
    assert "document_breakdowns" not in results
    assert set(results["metrics"]["factual"]["F1"]["by"]) == {"domain", "question_type", "level"}
    assert "doc_length" not in next(iter(read_items(results).values()))


# ---- without the document: the closed-book run beside long and RAG --------------------------------------------------

def predictions_in(tmp_path, name: str, mode: str, change: dict | None = None):
    """The sample's predictions as model "m" made them in `mode` (its metadata's generation.mode)."""
    rows = [json.loads(line) for line in SAMPLE_PREDICTIONS.read_text(encoding="utf-8").splitlines()]
    path = tmp_path / f"{name}.jsonl"
    write_lines(path, [{**r, **(change or {}).get(r["id"], {})} for r in rows])
    (tmp_path / f"{name}.meta.json").write_text(json.dumps({"model": "m", "generation": {"mode": mode}}),
                                                encoding="utf-8")
    return path


def test_the_closed_book_run_is_paired_in_results_report_and_board(tmp_path, capsys, unrendered_plots):
    from chimdqa_eval.report import html, leaderboard

    wrong = {"fin-ret-001": {"prediction": "不知道"}, "law-ret-001": {"prediction": "无法回答"}}
    evaluate(predictions_in(tmp_path, "cb", "closed-book", wrong), tmp_path / "cb")
    evaluate(predictions_in(tmp_path, "long", "long"), tmp_path / "long", "--document-pair", tmp_path / "cb")
    closed, long = read_results(tmp_path / "cb"), read_results(tmp_path / "long")
    assert long["document_pair"] == {"run_id": closed["run_id"], "model": "m", "condition": "closed-book",
                                     "file": str(tmp_path / "cb" / "results.json")}
    assert "rag_pair" not in long and "document_pair" not in closed
    page = (tmp_path / "long" / "report.html").read_text(encoding="utf-8")
    assert f"m without document (run {closed['run_id']})" in page  # the facts
    assert "Without document (closed-book baseline) vs without RAG" in page  # the paired plot
    assert "m (without document)" in page  # its row in the tables, beside m's
    assert html.paired_runs([long, closed]) == [{"closed-book": closed, "long": long}]
    figure = html.paired_plot(html.paired_runs([long, closed]), None)
    assert [s.label for s in figure.panels[0].series] == ["without document", "without RAG"]
    heights = [v for s in figure.panels[0].series for v in s.values]
    assert heights == [pytest.approx(closed["metrics"]["factual"]["F1"]["value"]),
                       pytest.approx(long["metrics"]["factual"]["F1"]["value"])]
    rows = leaderboard.leaderboard_rows([closed, long])
    assert [(r["model"], r["condition"]) for r in rows] == [("m", "without RAG"), ("m", "without document")]
    leaderboard.write_leaderboard(tmp_path / "board", [closed, long])
    board = (tmp_path / "board" / "index.html").read_text(encoding="utf-8")
    assert '<td class="name">m (without document)</td>' in board and '<td class="name">m</td>' in board
    # the pairing is checked: the other run must be this model's other document condition
    assert cli.main(["evaluate", "--predictions", str(predictions_in(tmp_path, "long2", "long")), "--out",
                     str(tmp_path / "x"), "--document-pair", str(tmp_path / "long"), "--resamples", "0"]) == 2
    assert "expected the results of 'm' closed-book (without the document), got 'm' long" in capsys.readouterr().err


def test_run_pairs_each_mode_with_those_before_it():
    from chimdqa_eval.evaluation import PAIRING_ORDER, run_pairs

    assert PAIRING_ORDER == ("closed-book", "long", "rag")
    written = {"closed-book": "cb/results.json", "long": "long/results.json"}
    assert run_pairs("closed-book", {}) == {"rag_pair": None, "document_pair": None}
    assert run_pairs("long", written) == {"rag_pair": None, "document_pair": "cb/results.json"}
    assert run_pairs("rag", written) == {"rag_pair": "long/results.json", "document_pair": "cb/results.json"}
    assert run_pairs("rag", {"closed-book": "cb/results.json"}) == {"rag_pair": None,
                                                                    "document_pair": "cb/results.json"}


def test_chimdqa_run_pairs_closed_book_long_and_rag(tmp_path, unrendered_plots):
    from chat_server import ChatServer
    from test_generate import oracle

    out = tmp_path / "runs"
    with ChatServer(oracle) as server:
        assert cli.main(["run", "--model", "test-model", "--api-base", server.api_base, "--mode", "rag", "long",
                         "closed-book", "--out", str(out), "--resamples", "0", "--metrics", "factual"]) == 0
    runs = {mode: read_results(out / mode) for mode in ("closed-book", "long", "rag")}
    assert "document_pair" not in runs["closed-book"] and "rag_pair" not in runs["long"]
    for mode in ("long", "rag"):
        assert runs[mode]["document_pair"]["run_id"] == runs["closed-book"]["run_id"]
        assert runs[mode]["document_pair"]["condition"] == "closed-book"
    assert runs["rag"]["rag_pair"]["run_id"] == runs["long"]["run_id"]
    page = (out / "rag" / "report.html").read_text(encoding="utf-8")
    assert "Without document (closed-book baseline) vs without RAG and with RAG" in page
