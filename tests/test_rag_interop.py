"""RAGChecker JSON interop and the `chimdqa rag-metrics` command: read, score, write back, read again."""
import copy
import json

import pytest

from chimdqa_eval.cli import main
from chimdqa_eval.rag.interop import read_ragchecker, to_ragchecker
from chimdqa_eval.rag.scoring import evaluate_items
from chimdqa_eval.schema import InputError
from tests.chat_server import ChatServer
from tests.test_rag_llm import oracle

E, N, C = "Entailment", "Neutral", "Contradiction"

# Our own small file in RAGChecker's format (claims as its triplets). Worked by hand:
#  a: r0 correct and in d1; r1 wrong (contradicted) and in no chunk -> precision 1/2, recall 1/2, f1 1/2,
#     faithfulness 1/2, hallucination 1/2; both reference claims in d1 -> claim recall 1, context precision 1/2,
#     context utilization 1/2 (g1 is not in the response); no noise.
#  b: no chunks; precision 1, recall 1/2, f1 2/3; everything retrieval-based is 0.
FIXTURE = {"results": [
    {"query_id": "a", "query": "甲公司的基本情况？", "gt_answer": "甲公司成立于2001年，总部在北京。",
     "response": "甲公司成立于2001年，总部在上海。",
     "retrieved_context": [{"doc_id": "d1", "text": "甲公司成立于2001年，总部在北京。"},
                           {"doc_id": "d2", "text": "乙公司总部在上海。"}],
     "response_claims": [["甲公司", "成立于", "2001年"], ["甲公司", "总部在", "上海"]],
     "gt_answer_claims": [["甲公司", "成立于", "2001年"], ["甲公司", "总部在", "北京"]],
     "answer2response": [E, C], "response2answer": [E, C],
     "retrieved2response": [[E, N], [C, N]], "retrieved2answer": [[E, N], [E, N]]},
    {"query_id": "b", "query": "乙公司有多少员工？", "gt_answer": "乙公司有员工300人，成立于2010年。",
     "response": "乙公司有员工300人。", "retrieved_context": [],
     "response_claims": [["乙公司", "员工", "300人"]],
     "gt_answer_claims": [["乙公司", "员工", "300人"], ["乙公司", "成立于", "2010年"]],
     "answer2response": [E], "response2answer": [E, N], "retrieved2response": [[]], "retrieved2answer": [[], []]},
]}
EXPECTED = {"precision": 75.0, "recall": 50.0, "f1": 175 / 3, "claim_recall": 50.0, "context_precision": 25.0,
            "context_utilization": 25.0, "noise_sensitivity_in_relevant": 0.0, "noise_sensitivity_in_irrelevant": 0.0,
            "hallucination": 25.0, "self_knowledge": 0.0, "faithfulness": 25.0}


def _write(tmp_path, data, name="rc.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def test_cli_scores_a_labelled_file_with_no_model(tmp_path, capsys):
    assert main(["rag-metrics", str(_write(tmp_path, FIXTURE))]) == 0
    printed = json.loads(capsys.readouterr().out)
    for metric, value in EXPECTED.items():
        assert printed[metric] == pytest.approx(value), metric
    assert printed["retriever"] == {"claim_recall": 50.0, "context_precision": 25.0}
    assert "per_item" not in printed and "checker:given" in printed["signature"]


def test_round_trip_read_score_write_read(tmp_path):
    items, data = read_ragchecker(_write(tmp_path, FIXTURE))
    result = evaluate_items(items, checker="precomputed")
    written = to_ragchecker(data, items, result)
    assert written["results"][0]["response_claims"] == FIXTURE["results"][0]["response_claims"]  # kept as given
    assert written["results"][0]["retrieved_context"][1]["doc_id"] == "d2"
    assert written["results"][1]["metrics"]["f1"] == pytest.approx(2 / 3)  # RAGChecker's per-result shares
    assert written["metrics"]["overall"]["precision"] == 75.0
    assert written["metrics"]["generator"]["hallucination"] == 25.0
    again_items, _ = read_ragchecker(_write(tmp_path, written, "again.json"))
    again = evaluate_items(again_items, checker="precomputed")
    assert {m: again[m] for m in EXPECTED} == {m: result[m] for m in EXPECTED}
    assert again["per_item"] == result["per_item"]


def test_cli_fills_in_what_is_missing_with_the_configured_tools_and_writes_it_back(tmp_path, capsys):
    bare = {"results": [{k: r[k] for k in ("query_id", "query", "gt_answer", "response", "retrieved_context")}
                        for r in FIXTURE["results"]]}
    path, out = _write(tmp_path, bare), tmp_path / "out.json"
    with ChatServer(oracle) as server:
        llm = ["rag-metrics", str(path), "--extractor", "llm", "--checker", "llm", "--judge-model", "judge",
               "--api-base", server.api_base, "--cache", str(tmp_path / "c.sqlite")]
        assert main([*llm, "--dry-run"]) == 0
        plan = capsys.readouterr().out
        assert server.requests == [] and "rag_extract        4\n  rag_check          8 (estimate)" in plan
        code = main([*llm, "-o", str(out)])
        # 4 extractions as planned; the estimate (one check per premise: 6 + 2) is near, as every answer has one
        # claim, but two of query a's checks turn out to be the same request, asked once.
        assert len(server.requests) == 4 + 7
        printed = json.loads(capsys.readouterr().out)
        assert main([*llm, "--dry-run"]) == 0
        assert "rag_extract        0\n  rag_check          0\n" in capsys.readouterr().out  # exact: all cached
    assert code == 0
    assert printed["llm_usage"]["stages"]["rag_check"]["asked"] == 7
    written = json.loads(out.read_text(encoding="utf-8"))
    first = written["results"][0]
    # The oracle's claims are the sentences: one per answer here; the response's is in no chunk and wrong.
    assert first["response_claims"] == [["甲公司成立于2001年，总部在上海"]]
    assert first["retrieved2response"] == [[N, N]] and first["answer2response"] == [N]
    # Reading the written file back needs no model and gives the same numbers.
    assert main(["rag-metrics", str(out), "--checker", "precomputed"]) == 0
    assert {m: v for m, v in json.loads(capsys.readouterr().out).items() if m in EXPECTED} == \
        {m: v for m, v in printed.items() if m in EXPECTED}


def test_missing_labels_with_the_precomputed_checker_name_the_query(tmp_path, capsys):
    data = copy.deepcopy(FIXTURE)
    del data["results"][1]["retrieved2answer"]
    assert main(["rag-metrics", str(_write(tmp_path, data)), "--checker", "precomputed"]) == 2
    assert "results[1] (query_id b): no retrieved2answer labels given" in capsys.readouterr().err
    # Metrics that do not need the missing structure still work.
    assert main(["rag-metrics", str(_write(tmp_path, data)), "--checker", "precomputed", "--metrics", "overall"]) == 0


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["results"][1]["retrieved_context"].append({"doc_id": "x", "text": 5}),
     r"results\[1\] \(query_id b\): retrieved_context\[0\].text must be a string"),
    (lambda d: d["results"][0]["retrieved2response"][1].append(N),
     r"results\[0\] \(query_id a\): retrieved2response: row 1 has 3 labels but row 0 has 2"),
    (lambda d: d["results"][0].update(retrieved2answer=[[E, N]]),
     r"results\[0\] \(query_id a\): retrieved2answer has shape \(1, 2\) but must be \(2, 2\)"),
    (lambda d: d["results"][0].update(answer2response=[E, "Supported"]),
     r"results\[0\] \(query_id a\): answer2response\[1\]: label 'Supported'"),
    (lambda d: d["results"][0].update(response=None), r"results\[0\] \(query_id a\): response must be a string"),
    (lambda d: d.update(results=[]), "with at least one result"),
])
def test_bad_files_name_the_result(tmp_path, edit, message):
    data = copy.deepcopy(FIXTURE)
    edit(data)
    path = _write(tmp_path, data)
    with pytest.raises(InputError, match=message):
        evaluate_items(read_ragchecker(path)[0], checker="precomputed")


def test_not_json_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "x.json"
    path.write_text("{not json", encoding="utf-8")
    assert main(["rag-metrics", str(path)]) == 2
    assert f"{path}: not valid JSON (Expecting property name enclosed in double quotes at line 1, column 2)" in \
        capsys.readouterr().err


def test_a_checker_without_its_model_exits_2_like_every_bad_input(tmp_path, capsys):
    data = copy.deepcopy(FIXTURE)
    for result in data["results"]:
        del result["retrieved2answer"]
    assert main(["rag-metrics", str(_write(tmp_path, data))]) == 2  # the default checker, nli, needs --nli-model
    err = capsys.readouterr().err
    assert err.startswith("chimdqa rag-metrics: error: ") and "--nli-model" in err


def test_lone_surrogate_and_folder_are_input_errors(tmp_path, capsys):
    path = tmp_path / "rc.json"
    path.write_text(json.dumps(FIXTURE).replace("\\u7532", "\\ud800", 1), encoding="utf-8")
    assert main(["rag-metrics", str(path)]) == 2
    assert "rc.json: results[0].query (character 1: '\\ud800') holds a lone UTF-16 surrogate" in \
        capsys.readouterr().err
    assert main(["rag-metrics", str(tmp_path)]) == 2
    assert "is a folder; expected a RAGChecker results JSON file" in capsys.readouterr().err


def test_llm_options_are_checked_and_name_the_flags(tmp_path, capsys):
    path = _write(tmp_path, FIXTURE)
    assert main(["rag-metrics", str(path), "--checker", "llm", "--judge-model", "judge"]) == 2
    assert "--api-base is required with --extractor llm / --checker llm" in capsys.readouterr().err
    assert main(["rag-metrics", str(path), "--checker", "precomputed", "--concurrency", "0"]) == 2
    assert "--concurrency 0: expected a whole number of parallel requests per API base" in capsys.readouterr().err
