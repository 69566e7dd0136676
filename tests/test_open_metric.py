"""chimdqa_open through the real evaluate.load(<repo>/metrics/chimdqa_open), checked against the reference
implementations (rouge_score, NLTK, pycocoevalcap, bert_score) and transformers directly."""
import math
from pathlib import Path

import evaluate
import pytest
from nltk.translate.meteor_score import meteor_score
from pycocoevalcap.cider.cider import Cider
from rouge_score import rouge_scorer

from chimdqa_eval.neural import ModelUnavailable
from chimdqa_eval.schema import InputError
from chimdqa_eval.signature import package_version
from chimdqa_eval.text import tokenize
from test_lexical import _paper_cider
from tiny_models import tiny_bert, tiny_gpt2

MODULE = str(Path(__file__).resolve().parent.parent / "metrics" / "chimdqa_open")
LEXICAL = ["meteor", "rouge_l", "cider", "cider_d"]

REFERENCES = ["经济增长带动了上海的股票市场，银行利润上升。", "法院认为患者的医疗费用应由公司承担。",
              "教育政策的调整影响了学生和家长。", "新闻报道称，2023年GDP增长5.2%，高于预期。"]
PREDICTIONS = ["上海的股票市场因经济增长而上涨，银行利润也上升了。", "法院判决公司承担患者的医疗费用。",
               "学生和家长受到教育政策调整的影响。", ""]
DOMAINS = ["finance", "law", "education", "news"]
TYPES = ["推理", "总结", "inference", "建议"]  # Chinese names are accepted


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(MODULE)


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    return tiny_bert(tmp_path_factory.mktemp("bert"), max_length=128)


@pytest.fixture(scope="module")
def gpt_dir(tmp_path_factory):
    return tiny_gpt2(tmp_path_factory.mktemp("gpt2"), max_length=64)


class _NoWordNet:
    def synsets(self, word):
        return []


def _reference_lexical(predictions, references):
    preds, refs = [tokenize(p) for p in predictions], [tokenize(r) for r in references]
    texts = {("p", i): p for i, p in enumerate(preds)} | {("r", i): r for i, r in enumerate(refs)}

    class Tokens:
        def tokenize(self, key):
            return texts[key]

    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=Tokens())
    cider = Cider().compute_score({i: [" ".join(r)] for i, r in enumerate(refs)},
                                  {i: [" ".join(p)] for i, p in enumerate(preds)})[1]
    return {"rouge_l": [100 * scorer.score(("r", i), ("p", i))["rougeL"].fmeasure for i in range(len(preds))],
            "meteor": [100 * meteor_score([r], p, wordnet=_NoWordNet()) for p, r in zip(preds, refs)],
            "cider": [100 * c for c in _paper_cider(preds, [[r] for r in refs])],
            "cider_d": [100 * c for c in cider]}


def test_lexical_metrics_equal_reference_implementations(metric):
    result = metric.compute(predictions=PREDICTIONS, references=REFERENCES, metrics=LEXICAL, domains=DOMAINS,
                            question_types=TYPES, levels=["L1", "L2", "L2", "L1"])
    expected = _reference_lexical(PREDICTIONS, REFERENCES)
    for name in LEXICAL:
        assert result["per_item"][name] == pytest.approx(expected[name], abs=1e-7)  # 1e-9 before scaling by 100
        assert result[name] == pytest.approx(sum(expected[name]) / 4, abs=1e-7)
        assert result["per_item"][name][3] == 0.0  # the empty prediction
    assert 0 < result["rouge_l"] < 100 and 0 < result["cider"] < 100 and 0 < result["cider_d"]
    assert set(result["by_domain"]) == set(DOMAINS)
    assert result["by_question_type"]["inference"]["rouge_l"] == pytest.approx(
        (expected["rouge_l"][0] + expected["rouge_l"][2]) / 2)
    assert result["by_level"]["L1"]["meteor"] == pytest.approx((expected["meteor"][0] + expected["meteor"][3]) / 2)
    assert "tok:jieba-" in result["signature"]["rouge_l"] and "synonyms:none" in result["signature"]["meteor"]
    assert f"+rjieba-{package_version('rjieba')}|" in result["signature"]["rouge_l"]  # the segmenter doing the work
    assert f"nltk:{package_version('nltk')}" in result["signature"]["meteor"]
    from chimdqa_eval.lexical import reference_digest
    df = f"df:evaluated_references|df_refs:4|df_digest:{reference_digest([tokenize(r) for r in REFERENCES])}|"
    assert result["signature"]["cider"].startswith("metric:cider|") and "|clip:no|penalty:none|" + df in (
        result["signature"]["cider"])
    assert result["signature"]["cider_d"].startswith("metric:cider_d|")
    assert "|clip:yes|penalty:gauss(sigma=6)|" + df in result["signature"]["cider_d"]
    assert result["skipped"] == {}


def test_char_tokenizer_changes_scores_and_signature(metric):
    jieba = metric.compute(predictions=PREDICTIONS, references=REFERENCES, metrics=["rouge_l"])
    char = metric.compute(predictions=PREDICTIONS, references=REFERENCES, metrics=["rouge_l"], tokenizer="char")
    assert char["rouge_l"] != jieba["rouge_l"] and "tok:char" in char["signature"]["rouge_l"]


def test_perplexity_from_logprobs_is_exact_and_empty_answers_have_none(metric):
    result = metric.compute(predictions=PREDICTIONS, references=REFERENCES, metrics=["perplexity"],
                            logprobs=[[-1.0, -2.0], [-0.5, -0.5, -0.5], [-3.0], []])
    assert result["per_item"]["perplexity"] == [pytest.approx(math.exp(1.5)), pytest.approx(math.exp(0.5)),
                                                pytest.approx(math.exp(3.0)), None]
    assert result["perplexity"] == pytest.approx((math.exp(1.5) + math.exp(0.5) + math.exp(3.0)) / 3)
    assert "source:caller_logprobs" in result["signature"]["perplexity"]


def test_model_metrics_on_tiny_models_equal_bert_score_and_the_lm_loss(metric, bert_dir, gpt_dir):
    import bert_score
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    long_answer = "经济" * 80  # 160 tokens: longer than the tiny BERT's 128 positions
    predictions, references = PREDICTIONS[:3] + [long_answer], REFERENCES
    result = metric.compute(predictions=predictions, references=references, metrics=["bertscore", "perplexity"],
                            bertscore_model=str(bert_dir), bertscore_num_layers=2, perplexity_model=str(gpt_dir),
                            domains=DOMAINS)
    theirs = bert_score.BERTScorer(model_type=str(bert_dir), num_layers=2).score(predictions, references)
    for key, values in zip(("bertscore_precision", "bertscore_recall", "bertscore_f1"), theirs):
        assert result["per_item"][key] == pytest.approx([100 * float(v) for v in values], abs=1e-4)
    assert result["bertscore_truncated"] == 1
    assert result["by_domain"]["news"]["bertscore_f1"] == result["per_item"]["bertscore_f1"][3]

    tokenizer = AutoTokenizer.from_pretrained(str(gpt_dir))
    model = AutoModelForCausalLM.from_pretrained(str(gpt_dir)).eval()
    ids = torch.tensor([[tokenizer.cls_token_id] + tokenizer(predictions[1], add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        expected = math.exp(float(model(ids, labels=ids).loss))
    assert result["per_item"]["perplexity"][1] == pytest.approx(expected, rel=1e-5)
    assert "model:" + str(gpt_dir) in result["signature"]["perplexity"]


def test_unavailable_models_are_skipped_by_default_and_fatal_when_named(metric, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    missing = {"bertscore_model": "no-such-org/no-such-bert", "perplexity_model": "no-such-org/no-such-gpt"}
    result = metric.compute(predictions=PREDICTIONS, references=REFERENCES, **missing)
    assert set(result["skipped"]) == {"bertscore", "perplexity"}
    assert "no-such-org/no-such-bert" in result["skipped"]["bertscore"]
    assert set(LEXICAL) <= set(result) and "bertscore_f1" not in result
    with pytest.raises(ModelUnavailable, match="no-such-gpt"):
        metric.compute(predictions=PREDICTIONS, references=REFERENCES, metrics=["rouge_l", "perplexity"], **missing)
    lenient = metric.compute(predictions=PREDICTIONS, references=REFERENCES, metrics=["rouge_l", "bertscore"],
                             explicit=False, **missing)
    assert set(lenient["skipped"]) == {"bertscore"} and "rouge_l" in lenient


@pytest.mark.parametrize("predictions, references, options, message", [
    (["好", None], ["好", "好"], {}, r"predictions\[1\]: expected a string, got NoneType"),
    (["好", "好"], ["好", 7], {}, r"references\[1\]: expected a string, got int"),
    (["好", "好"], ["好"], {}, "differ in length"),
    (["好", "好"], ["好", " "], {}, r"references\[1\]: empty string"),
    (["好"], ["好"], {"metrics": ["bleu"]}, "unknown metric 'bleu'"),
    (["好", "好"], ["好", "好"], {"metrics": ["rouge_l"], "domains": ["law", "sports"]}, r"domains\[1\]"),
    (["好"], ["好"], {"metrics": ["rouge_l"], "tokenizer": "spacy"}, "tokenizer 'spacy'"),
])
def test_bad_input_names_the_item(metric, predictions, references, options, message):
    with pytest.raises(InputError, match=message):
        metric.compute(predictions=predictions, references=references, **options)


def test_docstring_examples_hold():
    import doctest

    from chimdqa_eval import open_ended, text

    for module in (open_ended, text):
        failed, attempted = doctest.testmod(module)
        assert attempted and not failed, module.__name__
