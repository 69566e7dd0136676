"""The evaluate module (loaded the way users load it) and compute_rag's input checks."""
import doctest
from pathlib import Path

import evaluate
import pytest

from chimdqa_eval.rag import compute_rag
from chimdqa_eval.schema import InputError

MODULE = str(Path(__file__).resolve().parents[1] / "metrics" / "chimdqa_rag")
E, N = "Entailment", "Neutral"
INPUTS = dict(predictions=["北京是中国的首都。", "上海是直辖市。"], references=["中国的首都是北京。", "上海是直辖市。"],
              questions=["中国的首都是哪里？", "上海是什么行政区？"],
              retrieved_contexts=[["北京是中华人民共和国的首都。", "天津是直辖市。"], []])
LABELS = [{"answer2response": [E], "response2answer": [E], "retrieved2response": [[E, N]],
           "retrieved2answer": [[N, N]]},
          {"answer2response": [E], "response2answer": [N], "retrieved2response": [[]], "retrieved2answer": [[]]}]


@pytest.fixture(scope="module")
def module():
    return evaluate.load(MODULE)


def test_module_equals_the_library(module):
    out = module.compute(**INPUTS, checker="precomputed", labels=LABELS, domains=["news", "law"])
    assert out == compute_rag(**INPUTS, checker="precomputed", labels=LABELS, domains=["news", "law"])
    # Query 0: all correct, its claim in chunk 0, no reference claim retrieved; query 1: recall 0, no chunks.
    assert out["precision"] == 100.0 and out["recall"] == 50.0 and out["f1"] == 50.0
    assert out["faithfulness"] == 50.0 and out["claim_recall"] == 0.0
    assert out["by_domain"]["law"]["recall"] == 0.0


def test_module_checks_inputs_before_evaluate_encodes_them(module):
    with pytest.raises(InputError, match=r"retrieved_contexts\[1\]\[0\] \(query 1\): chunk is int"):
        module.compute(**{**INPUTS, "retrieved_contexts": [["a"], [3]]})


@pytest.mark.parametrize("change, message", [
    (dict(questions=["q"]), "columns differ in length"),
    (dict(retrieved_contexts=[["a"], "one chunk"]), r"retrieved_contexts\[1\] \(query 1\): expected a list"),
    (dict(retrieved_contexts=[["a", None], []]), r"retrieved_contexts\[0\]\[1\] \(query 0\): chunk is NoneType"),
    (dict(predictions=["a", 1]), r"predictions\[1\]"),
    (dict(labels=[None, "x"]), r"labels\[1\] \(query 1\): expected a dict"),
    (dict(metrics=["faithfulness"], labels=[{"retrieved2response": [[E]]}, {"retrieved2response": []}]),
     r"query 0: retrieved2response has shape \(1, 1\) but must be \(1, 2\)"),
    (dict(metrics=["precision"],
          labels=[{"answer2response": [E]}, {"answer2response": [E], "response_claims": ["甲", "乙"]}]),
     r"query 1: answer2response has shape \(1,\) but must be \(2,\)"),
    (dict(domains=["news", "sports"]), r"domains\[1\]: unknown domain 'sports'"),
    (dict(extractor="spacy"), "unknown extractor 'spacy'"),
])
def test_bad_input_names_the_query(change, message):
    kwargs = {**INPUTS, "checker": "precomputed", "labels": LABELS, **change}
    with pytest.raises(InputError, match=message):
        compute_rag(**kwargs)


def test_custom_tools_see_only_what_the_metrics_need():
    class Recorder:
        name = "recorder"

        def __init__(self):
            self.tasks = []

        def check(self, tasks):
            self.tasks.extend(tasks)
            return [["Entailment"] * len(t.claims) for t in tasks]

    checker = Recorder()
    out = compute_rag(**INPUTS, metrics=["claim_recall"], checker=checker)
    # Only reference claims against each chunk: 2 chunks for query 0, none for query 1.
    assert [t.premise for t in checker.tasks] == INPUTS["retrieved_contexts"][0]
    assert all(t.claims == ["中国的首都是北京"] for t in checker.tasks)
    assert out["claim_recall"] == 50.0  # query 1 has no chunks
    assert "checker:recorder" in out["signature"] and "extractor:sentence-v2" in out["signature"]


def test_the_module_docstring_example_holds(monkeypatch):
    monkeypatch.chdir(Path(MODULE).parents[1])  # the example loads "metrics/chimdqa_rag" relative to a checkout
    text = (Path(MODULE) / "chimdqa_rag.py").read_text(encoding="utf-8")
    examples = text.split('_KWARGS_DESCRIPTION = """', 1)[1].split('"""', 1)[0]
    test = doctest.DocTestParser().get_doctest(examples, {"evaluate": evaluate}, "chimdqa_rag", None, 0)
    runner = doctest.DocTestRunner()
    runner.run(test)
    assert runner.summarize().failed == 0 and len(test.examples) == 3
