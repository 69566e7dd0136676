"""RAGChecker's formulas on hand-built structures, the empty-case conventions, and RAGChecker's own example."""
import json

import numpy as np
import pytest

from chimdqa_eval.rag import compute_rag
from chimdqa_eval.rag import metrics as M
from chimdqa_eval.schema import InputError

T, F = True, False

# One query worked by hand. Reference claims g0..g2, response claims r0..r4, chunks c0..c2.
#   g0 is in c0, g2 is in c1, g1 in no chunk -> c0, c1 relevant, c2 irrelevant.
#   r0 correct, from c0;  r1 correct, in no chunk (self-knowledge);  r2 incorrect, in c1 and c2 (relevant noise);
#   r3 incorrect, only in c2 (irrelevant noise);  r4 incorrect, in no chunk (hallucination).
HAND = {
    "answer2response": np.array([T, T, F, F, F]),
    "response2answer": np.array([T, T, F]),
    "retrieved2answer": np.array([[T, F, F], [F, F, F], [F, T, F]]),
    "retrieved2response": np.array([[T, F, F], [F, F, F], [F, T, T], [F, F, T], [F, F, F]]),
}
HAND_EXPECTED = {
    "precision": 2 / 5,                 # r0, r1 correct
    "recall": 2 / 3,                    # g0, g1 in the response
    "f1": 0.5,                          # 2 * 0.4 * (2/3) / (0.4 + 2/3) = (8/15) / (16/15)
    "claim_recall": 2 / 3,              # g0, g2 found in some chunk
    "context_precision": 2 / 3,         # c0, c1 entail a reference claim
    "context_utilization": 1 / 2,       # of g0, g2 (retrieved) only g0 is in the response
    "noise_sensitivity_in_relevant": 1 / 5,    # r2
    "noise_sensitivity_in_irrelevant": 1 / 5,  # r3 (r2 also reaches c2 but counts as relevant only)
    "hallucination": 1 / 5,             # r4
    "self_knowledge": 1 / 5,            # r1
    "faithfulness": 3 / 5,              # r0, r2, r3
}


def test_each_formula_on_the_hand_worked_query():
    for metric, expected in HAND_EXPECTED.items():
        args = [HAND[s] for s in M.REQUIREMENTS[metric]]
        assert M.FORMULAS[metric](*args) == pytest.approx(expected, abs=1e-12), metric


def test_faithfulness_hallucination_and_self_knowledge_partition_the_response_claims():
    s = M.query_scores(HAND)
    assert s["faithfulness"] + s["hallucination"] + s["self_knowledge"] == pytest.approx(1.0)


def test_f1_is_zero_when_either_side_is_zero():
    assert M.f1(np.array([T, F]), np.array([F, F])) == 0.0
    assert M.f1(np.array([], dtype=bool), np.array([T])) == 0.0


def test_empty_claims_and_chunks_give_zero_as_in_ragchecker():
    no_chunks_resp = np.zeros((3, 0), dtype=bool)
    no_chunks_ref = np.zeros((2, 0), dtype=bool)
    correct = np.array([T, F, T])
    # No chunks: every response claim is unsupported, yet hallucination / self-knowledge are 0, not shares.
    assert M.hallucination(no_chunks_resp, correct) == 0.0
    assert M.self_knowledge(no_chunks_resp, correct) == 0.0
    assert M.faithfulness(no_chunks_resp) == 0.0
    assert M.claim_recall(no_chunks_ref) == 0.0
    assert M.context_precision(no_chunks_ref) == 0.0
    assert M.context_utilization(no_chunks_ref, np.array([T, T])) == 0.0
    # No reference claims: no chunk is relevant, but noise sensitivity is 0 rather than counting r as irrelevant.
    no_ref = np.zeros((0, 2), dtype=bool)
    resp = np.array([[T, F], [F, T]])
    assert M.context_precision(no_ref) == 0.0
    assert M.noise_sensitivity_in_irrelevant(resp, np.array([F, F]), no_ref) == 0.0
    assert M.recall(np.array([], dtype=bool)) == 0.0
    # No response claims.
    assert M.precision(np.array([], dtype=bool)) == 0.0
    assert M.faithfulness(np.zeros((0, 2), dtype=bool)) == 0.0
    assert M.noise_sensitivity_in_relevant(np.zeros((0, 2), dtype=bool), np.array([], dtype=bool),
                                           np.array([[T, F]])) == 0.0
    # Reference claims that no chunk supports: utilization is 0/0 -> 0.
    assert M.context_utilization(np.array([[F, F]]), np.array([T])) == 0.0


def test_resolve_metrics_accepts_groups_and_keeps_table_order():
    assert M.resolve_metrics(["faithfulness", "overall"]) == ("precision", "recall", "f1", "faithfulness")
    assert M.resolve_metrics("all") == M.ALL_METRICS
    with pytest.raises(InputError, match="unknown RAG metric 'faithful'"):
        M.resolve_metrics(["faithful"])


def test_only_the_needed_structures_are_required():
    assert M.required_structures(["precision"]) == ("answer2response",)
    assert M.required_structures(["claim_recall", "context_precision"]) == ("retrieved2answer",)
    assert M.required_structures(["hallucination"]) == ("answer2response", "retrieved2response")
    assert M.required_structures(M.ALL_METRICS) == M.STRUCTURES


def test_entailed_maps_labels_and_rejects_bad_ones():
    assert M.entailed(["Entailment", "Neutral", "Contradiction"], "q").tolist() == [T, F, F]
    assert M.entailed([["Neutral", "Entailment"]], "q").tolist() == [[F, T]]
    assert M.entailed([], "q").shape == (0,)
    with pytest.raises(InputError, match=r"q\[1\]: label 'entailed'"):
        M.entailed(["Entailment", "entailed"], "q")
    with pytest.raises(InputError, match="row 1 has 1 labels but row 0 has 2"):
        M.entailed([["Neutral", "Neutral"], ["Neutral"]], "q")


def test_check_structure_names_the_query_on_a_wrong_shape():
    with pytest.raises(InputError, match=r"query 7: retrieved2response has shape \(2, 2\) but must be \(2, 3\)"):
        M.check_structure("retrieved2response", np.zeros((2, 2), dtype=bool), 2, 3, "query 7")
    assert M.check_structure("retrieved2answer", np.zeros((0,), dtype=bool), 0, 4, "q").shape == (0, 4)


def _labels(flags):
    return np.where(flags, "Entailment", "Neutral").tolist()


def test_compute_rag_averages_per_query_scores_and_breaks_down():
    # Query 0 is the hand-worked one; query 1 has every response and reference claim entailed everywhere.
    everything = {"answer2response": np.array([T]), "response2answer": np.array([T]),
                  "retrieved2answer": np.array([[T]]), "retrieved2response": np.array([[T]])}
    labels = [{s: _labels(HAND[s]) for s in M.STRUCTURES}, {s: _labels(everything[s]) for s in M.STRUCTURES}]
    out = compute_rag(["r0", "r1"], ["g0", "g1"], ["q0", "q1"], [["c0", "c1", "c2"], ["c"]], checker="precomputed",
                      labels=labels, domains=["law", "finance"], question_types=["总结", "inference"])
    second = {"precision": 1, "recall": 1, "f1": 1, "claim_recall": 1, "context_precision": 1,
              "context_utilization": 1, "noise_sensitivity_in_relevant": 0, "noise_sensitivity_in_irrelevant": 0,
              "hallucination": 0, "self_knowledge": 0, "faithfulness": 1}
    for m in M.ALL_METRICS:
        assert out[m] == pytest.approx(50 * (HAND_EXPECTED[m] + second[m])), m
        assert out["by_domain"]["law"][m] == pytest.approx(100 * HAND_EXPECTED[m])
    assert out["overall"] == {m: out[m] for m in ("precision", "recall", "f1")}
    assert set(out["generator"]) == set(M.GENERATOR)
    assert list(out["by_domain"]) == ["finance", "law"]  # the schema's domain order
    assert out["by_question_type"]["summarization"]["n"] == 1
    assert out["per_item"][0]["metrics"]["faithfulness"] == pytest.approx(60.0)
    assert "checker:given" in out["signature"] and "extractor:none" in out["signature"]


from shared_data import RAGCHECKER_EXAMPLE  # noqa: E402


@pytest.mark.skipif(not RAGCHECKER_EXAMPLE.exists(), reason="RAGChecker's example output is not on this machine")
def test_reproduces_ragchecker_example_output():
    data = json.loads(RAGCHECKER_EXAMPLE.read_text())
    per_query = []
    for r in data["results"]:
        structures = {s: M.entailed(r[s], s) for s in M.STRUCTURES}
        scores = M.query_scores(structures)
        assert scores == r["metrics"]  # RAGChecker's per-query numbers, to the last bit
        per_query.append(scores)
    for group, values in data["metrics"].items():
        for metric, reported in values.items():
            ours = 100 * np.mean([q[metric] for q in per_query])
            assert round(ours, 1) == reported, metric
