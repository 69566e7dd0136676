"""The family registry, the one aggregation path and the one skip policy."""
import json
import math

import pytest

from chat_server import ChatServer
from chimdqa_eval import cli, release
from chimdqa_eval.aggregate import bootstrap_ci, factual_confidence_intervals, summarize
from chimdqa_eval.factual import compute_factual
from chimdqa_eval.families import FAMILIES, METRIC_LABELS, MODULES
from chimdqa_eval.hub.spaces import METRIC_MODULES
from chimdqa_eval.open_ended import compute_open
from chimdqa_eval.rag.scoring import compute_rag
from chimdqa_eval.report.results import read_items, read_results

SAMPLE = release.SAMPLE_DIR / "predictions.jsonl"


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_summarize_by_hand():
    per_item = {"m": [10.0, None, 30.0, 50.0], "k": [1.0, 1.0, 1.0, 1.0]}
    labels = {"domain": ["law", "law", "news", "news"]}
    summary = summarize(per_item, labels, resamples=200, seed=3, label_order={"domain": ("news", "law")})
    assert summary["m"]["value"] == 30.0 and summary["m"]["n"] == 3  # None is left out
    assert list(summary["m"]["by"]["domain"]) == ["news", "law"]
    assert summary["m"]["by"]["domain"]["news"]["value"] == 40.0 and summary["m"]["by"]["domain"]["law"]["n"] == 1
    assert summary["m"]["ci95"] == bootstrap_ci([10.0, 30.0, 50.0], n_resamples=200, seed=3)
    assert summary["k"]["ci95"] is None  # no variation
    grades = ["CO", "IN", "NA", "CO", "CO"]
    summary = summarize({"grade": grades, "judged_by": ["rule"] * 5}, {}, statistic="grades", resamples=100, seed=1)
    assert set(summary) == {"CO", "NA", "IN", "CGA", "F1"}
    assert summary["CO"]["value"] == 60.0 and summary["CGA"]["value"] == 75.0
    assert summary["F1"]["ci95"] == factual_confidence_intervals(grades, n_resamples=100, seed=1)["F1"]
    assert math.isnan(summarize({"m": [1.0, 2.0]})["m"]["ci95"][0])  # resamples 0: not computed


def test_every_consumer_reads_the_registry():
    from chimdqa_eval.hub import exports
    from chimdqa_eval.report import html, leaderboard, results

    assert METRIC_MODULES == MODULES == ("chimdqa_factual", "chimdqa_open", "chimdqa_rag")
    assert leaderboard.OPEN_COLUMNS == FAMILIES["open_ended"].board_columns
    assert html.open_headline([{"metrics": {"open_ended": {"rouge_l": {"value": 1.0}}}}]) == "rouge_l"
    for family in FAMILIES.values():
        assert set(family.board_columns) <= set(family.labels) and set(family.per_domain) <= set(family.labels)
    assert not hasattr(exports, "MODULE_OF") and not hasattr(results, "METRIC_LABELS")  # no second copy
    assert METRIC_LABELS["open_ended"]["bertscore_f1"] == "BERTScore-F1"


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    try:
        assert cli.main(["evaluate", "--predictions", str(SAMPLE), "--out", str(out), "--resamples", "0"]) == 0
    finally:
        mp.undo()
    results = read_results(out)
    return results, read_items(results)


def _assert_same_breakdowns(module_result: dict, family_results: dict, columns):
    for column in columns:
        table = module_result[f"by_{column}"]
        for metric, entry in family_results.items():
            for label, cell in entry["by"][column].items():
                assert round(table[label][metric], 4) == cell["value"], (column, label, metric)
                assert table[label]["n"] == cell["n"]
        assert set(table) == set(next(iter(family_results.values()))["by"][column])


def test_evaluate_modules_and_results_json_give_the_same_breakdowns(sample_run):
    """The libraries behind the evaluate modules and results.json aggregate through one summarize()."""
    results, items = sample_run
    questions = {q["id"]: q for q in release.read_qa()}
    factual = [questions[i] for i, row in items.items() if "factual" in row]
    by = dict(domains=[q["domain"] for q in factual], question_types=[q["question_type"] for q in factual],
              levels=[q["level"] for q in factual])
    module = compute_factual([items[q["id"]]["prediction"] for q in factual], [q["answer"] for q in factual],
                             [q["question"] for q in factual], **by)
    _assert_same_breakdowns(module, results["metrics"]["factual"], ("domain", "question_type", "level"))
    assert module["by_domain"]["finance"]["n"] == results["metrics"]["factual"]["CO"]["by"]["domain"]["finance"]["n"]
    open_items = [questions[i] for i, row in items.items() if "open_ended" in row]
    module = compute_open([items[q["id"]]["prediction"] for q in open_items], [q["answer"] for q in open_items],
                          metrics=["meteor", "rouge_l", "cider", "cider_d"],
                          domains=[q["domain"] for q in open_items],
                          question_types=[q["question_type"] for q in open_items])
    _assert_same_breakdowns(module, results["metrics"]["open_ended"], ("domain", "question_type"))


def test_rag_module_and_results_json_give_the_same_breakdowns(tmp_path):
    from test_rag_llm import oracle

    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    rows = [{**r, "retrieved_contexts": ["公司2023年研发投入3.15亿元。", "无关的段落。"]} for r in rows
            if r["id"].startswith(("fin-", "law-"))]
    preds = tmp_path / "rag.jsonl"
    preds.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    with ChatServer(lambda body: "结论：正确" if "结论" in body["messages"][0]["content"] else oracle(body)) as server:
        common = ["--judge", "llm", "--judge-model", "grader", "--api-base", server.api_base,
                  "--llm-cache", str(tmp_path / "c.sqlite")]
        assert cli.main(["evaluate", "--predictions", str(preds), "--out", str(tmp_path / "out"), "--metrics", "rag",
                         "--resamples", "0", "--allow-partial", *common]) == 0
        results = read_results(tmp_path / "out")
        questions = {q["id"]: q for q in release.read_qa()}
        qs = [questions[r["id"]] for r in rows]
        from chimdqa_eval.llm import LLMEndpoint

        module = compute_rag([r["prediction"] for r in rows], [q["answer"] for q in qs], [q["question"] for q in qs],
                             [r["retrieved_contexts"] for r in rows], extractor="llm", checker="llm",
                             endpoint=LLMEndpoint("grader", (server.api_base,), cache_path=str(tmp_path / "c.sqlite")),
                             domains=[q["domain"] for q in qs], levels=[q["level"] for q in qs],
                             categories=[q["category"] for q in qs])
    _assert_same_breakdowns(module, results["metrics"]["rag"], ("domain", "level", "category"))


def _run(tmp_path, name, *extra):
    return cli.main(["evaluate", "--predictions", str(SAMPLE), "--out", str(tmp_path / name), "--resamples", "0",
                     *extra])


def test_one_skip_policy(tmp_path, capsys, monkeypatch):
    # a family named: what of it can run runs, the metrics whose model is missing are skipped with the reason
    assert _run(tmp_path, "a", "--metrics", "open_ended") == 0
    results = read_results(tmp_path / "a")
    assert "rouge_l" in results["metrics"]["open_ended"]
    assert {s["metric"] for s in results["skipped"]} == {"bertscore_f1", "perplexity"}
    # a metric named (by its results name or the library's): it must run
    for name in ("bertscore_f1", "bertscore"):
        assert _run(tmp_path, "b", "--metrics", name) == 2
        assert "BERTScore model 'bert-base-chinese' could not be loaded" in capsys.readouterr().err
    # a family that cannot run at all: skipped unnamed, an error named, and found before anything is scored
    assert _run(tmp_path, "c") == 0
    assert [s["reason"] for s in read_results(tmp_path / "c")["skipped"] if s["family"] == "rag"] == [
        "the predictions carry no retrieved_contexts"]
    from chimdqa_eval import families

    def not_scored(*args, **kwargs):
        raise AssertionError("a family was scored before the unavailable one was found")
    monkeypatch.setattr(families, "score_family", not_scored)
    assert _run(tmp_path, "d", "--metrics", "factual", "rag") == 2
    err = capsys.readouterr().err
    assert "--metrics asks for rag (all questions) metrics, which cannot run" in err and "retrieved_contexts" in err
    assert not (tmp_path / "d" / "results.json").exists()
