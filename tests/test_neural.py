"""BERTScore and perplexity on tiny models the tests build themselves (tests/tiny_models.py).

BERTScore is checked against bert_score 0.3.13 run on the same saved model; perplexity against the model's
own cross-entropy loss, computed the way the transformers documentation computes strided perplexity.
"""
import json
import math
import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")
bert_score = pytest.importorskip("bert_score")

from chimdqa_eval import models, neural  # noqa: E402
from chimdqa_eval.neural import bertscore  # noqa: E402
from chimdqa_eval.neural.bertscore import _baseline  # noqa: E402
from chimdqa_eval.neural import (BertScorer, ModelUnavailable, PerplexityScorer, get_bert_scorer,  # noqa: E402
                                 perplexity_from_logprobs)
from chimdqa_eval.schema import InputError  # noqa: E402
from chimdqa_eval.signature import package_version  # noqa: E402
from tiny_models import CHARS, tiny_bert, tiny_gpt2  # noqa: E402

MAX_LEN = 128  # the tiny BERT's positions; every character of CHARS is one token of its vocabulary


def _texts(seed, n, low, high):
    rng = random.Random(seed)
    return ["".join(rng.choice(CHARS) for _ in range(rng.randint(low, high))) for _ in range(n)]


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    return tiny_bert(tmp_path_factory.mktemp("bert"), max_length=MAX_LEN)


@pytest.fixture(scope="module")
def gpt_dir(tmp_path_factory):
    return tiny_gpt2(tmp_path_factory.mktemp("gpt2"), max_length=64)


@pytest.fixture(scope="module")
def pairs():
    predictions = _texts(1, 24, 1, 60) + _texts(2, 2, 140, 200)  # the last two exceed 128 tokens
    references = _texts(3, 24, 1, 60) + _texts(4, 1, 10, 20) + _texts(5, 1, 130, 150)
    references[3] = predictions[3]  # a perfect match, and a text shared by both sides
    return predictions, references


def _reference(model_dir, predictions, references, idf, **kwargs):
    scorer = bert_score.BERTScorer(model_type=str(model_dir), num_layers=2, idf=idf,
                                   idf_sents=references if idf else None, nthreads=0, **kwargs)
    return [t.numpy() for t in scorer.score(predictions, references)]


@pytest.mark.parametrize("idf", [False, True])
def test_bertscore_equals_bert_score(bert_dir, pairs, idf):
    predictions, references = pairs
    result = BertScorer(str(bert_dir), num_layers=2, idf=idf).score(predictions, references)
    expected = _reference(bert_dir, predictions, references, idf)
    for ours, theirs in zip((result.precision, result.recall, result.f1), expected):
        np.testing.assert_allclose(ours, theirs, atol=1e-6, rtol=0)
    assert result.f1[3] == pytest.approx(1.0, abs=1e-6)
    # items 24 and 25 have a side longer than 128 - 2 content tokens
    assert result.truncated == 2
    assert ("idf:references" in result.signature) == idf and "layer:2" in result.signature


def test_scoring_by_chunks_changes_nothing(bert_dir, pairs, monkeypatch):
    predictions, references = pairs
    whole = BertScorer(str(bert_dir), num_layers=2, idf=True).score(predictions, references)
    monkeypatch.setattr(bertscore, "_CHUNK_PAIRS", 5)  # idf still comes from all the references
    assert BertScorer(str(bert_dir), num_layers=2, idf=True).score(predictions, references) == whole


def test_rescaling_with_a_baseline_file_equals_bert_score(bert_dir, pairs, tmp_path):
    baseline = tmp_path / "tiny.tsv"
    baseline.write_text("LAYER,P,R,F\n0,0.1,0.2,0.15\n1,0.3,0.35,0.32\n2,0.62,0.58,0.6\n", encoding="utf-8")
    predictions, references = pairs
    result = BertScorer(str(bert_dir), num_layers=2, rescale_with_baseline=str(baseline)).score(
        predictions, references)
    expected = _reference(bert_dir, predictions, references, False, lang="zh", rescale_with_baseline=True,
                          baseline_path=str(baseline))
    for ours, theirs in zip((result.precision, result.recall, result.f1), expected):
        np.testing.assert_allclose(ours, theirs, atol=1e-6, rtol=0)
    assert "rescale:custom-" in result.signature


def test_shipped_baseline_is_the_layer_row_of_bert_scores_file():
    import pandas as pd
    from pathlib import Path

    path = Path(bert_score.__file__).parent / "rescale_baseline" / "zh" / "bert-base-chinese.tsv"
    values, name = _baseline(True, "bert-base-chinese", 8)
    np.testing.assert_array_equal(values, pd.read_csv(path).iloc[8].to_numpy()[1:].astype(np.float32))
    assert name == "zh"
    with pytest.raises(InputError, match="no Chinese baseline"):
        _baseline(True, "my-own-bert", 8)


def test_empty_texts_score_zero_and_bad_input_is_named(bert_dir):
    scorer = BertScorer(str(bert_dir), num_layers=2)
    result = scorer.score(["", "   ", "银行"], ["银行", "利润", ""])
    assert result.precision == result.recall == result.f1 == [0.0, 0.0, 0.0]
    with pytest.raises(InputError, match=r"predictions\[1\]"):
        scorer.score(["a", None], ["a", "b"])
    with pytest.raises(InputError, match="differ in length"):
        scorer.score(["a"], ["a", "b"])


def test_unlimited_tokenizer_length_falls_back_to_the_position_table(bert_dir, pairs, tmp_path):
    unlimited = tiny_bert(tmp_path / "unlimited", max_length=MAX_LEN)
    config_file = unlimited / "tokenizer_config.json"
    config = json.loads(config_file.read_text(encoding="utf-8"))
    config["model_max_length"] = int(1e30)
    config_file.write_text(json.dumps(config), encoding="utf-8")
    predictions, references = pairs
    scorer = BertScorer(str(unlimited), num_layers=2)
    assert scorer.tokenizer.model_max_length > 10 ** 20 and scorer.max_length == MAX_LEN
    ours, limited = (s.score(predictions, references) for s in (scorer, BertScorer(str(bert_dir), num_layers=2)))
    assert (ours.f1, ours.truncated) == (limited.f1, limited.truncated) and ours.truncated == 2


def test_window_mode(bert_dir, pairs):
    predictions, references = pairs
    window = BertScorer(str(bert_dir), num_layers=2, long_texts="window")
    truncate = BertScorer(str(bert_dir), num_layers=2)
    both = window.score(predictions, references), truncate.score(predictions, references)
    assert both[0].truncated == 0 and "long:window" in both[0].signature
    # texts that fit are scored identically
    np.testing.assert_allclose(both[0].f1[:24], both[1].f1[:24], atol=1e-6)
    long_text = predictions[-1]
    assert window.score([long_text], [long_text]).f1 == pytest.approx([1.0], abs=1e-6)
    # every token of a long text has an embedding; the first window is the truncated text, so its first
    # three quarters (where that window is the most central) match truncate mode's embeddings
    tokens = [window._scored_ids(c) for c in window._content_ids([long_text])]
    stitched = window._embeddings([long_text], tokens, cache=False)[long_text]
    assert stitched.shape[0] == len(long_text) + 2
    cut = truncate._embeddings([long_text], [truncate._scored_ids(c) for c in truncate._content_ids([long_text])],
                               cache=False)[long_text]
    keep = 1 + (MAX_LEN - 2) * 3 // 4
    np.testing.assert_allclose(stitched[:keep], cut[:keep], atol=1e-6)
    assert not np.allclose(stitched[MAX_LEN - 2], cut[MAX_LEN - 2], atol=1e-3)  # there, the next window's


def _count_embedded(scorer, monkeypatch):
    """The token sequences `scorer` runs through its model from now on."""
    embedded = []
    forward = bertscore.hidden_states

    def counting(model, sequences, **kwargs):
        if model is scorer.model:
            embedded.extend(sequences)
        return forward(model, sequences, **kwargs)
    monkeypatch.setattr(bertscore, "hidden_states", counting)
    return embedded


def test_reference_cache_hits_on_second_run_and_follows_the_model(tmp_path, pairs, monkeypatch):
    model_dir = tiny_bert(tmp_path / "model", max_length=MAX_LEN, seed=0)
    predictions, references = pairs
    first = BertScorer(str(model_dir), num_layers=2)
    first_embedded = _count_embedded(first, monkeypatch)
    first_result = first.score(predictions, references)
    assert len(first_embedded) == len(set(predictions) | set(references))

    second = BertScorer(str(model_dir), num_layers=2)  # a new process would build a new scorer too
    second_embedded = _count_embedded(second, monkeypatch)
    other_predictions = _texts(9, len(predictions), 1, 60)
    second_result = second.score(other_predictions, references)
    assert len(second_embedded) == len(set(other_predictions))  # the references came from disk
    expected = _reference(model_dir, other_predictions, references, False)
    np.testing.assert_allclose(second_result.f1, expected[2], atol=1e-6, rtol=0)
    assert second.score(predictions, references) == first_result

    tiny_bert(model_dir, max_length=MAX_LEN, seed=1)  # a different model at the same path
    changed = BertScorer(str(model_dir), num_layers=2)
    changed_embedded = _count_embedded(changed, monkeypatch)
    changed_result = changed.score(predictions, references)
    assert len(changed_embedded) == len(set(predictions) | set(references))
    expected = _reference(model_dir, predictions, references, False)
    np.testing.assert_allclose(changed_result.f1, expected[2], atol=1e-6, rtol=0)
    assert max(abs(a - b) for a, b in zip(changed_result.f1, first_result.f1)) > 1e-3


def test_reference_cache_follows_the_library_versions(bert_dir, monkeypatch):
    """Another transformers or torch may embed differently: its references are not served from this cache."""
    scorer = BertScorer(str(bert_dir), num_layers=2)
    folder = scorer._cache_folder()
    assert scorer._cache_folder() == folder
    monkeypatch.setattr(bertscore, "package_version", lambda name: "0.0-other")
    assert scorer._cache_folder() != folder


def test_scorers_are_loaded_once(bert_dir):
    assert get_bert_scorer(str(bert_dir), 2) is get_bert_scorer(str(bert_dir), 2)
    assert get_bert_scorer(str(bert_dir), 1) is not get_bert_scorer(str(bert_dir), 2)


def test_missing_model_fails_fast_with_a_reason(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailable, match="no-such-org/no-such-model"):
        neural.get_perplexity_scorer("no-such-org/no-such-model")
    with pytest.raises(ModelUnavailable, match="could not be loaded"):
        BertScorer(str(tmp_path / "not-a-model"))
    # Without HF_HUB_OFFLINE an unreachable Hub is noticed by one connection attempt, not a minute of retries.
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(models, "_can_connect", lambda host, port: False)
    with pytest.raises(ModelUnavailable, match="not reachable"):
        neural.BertScorer("no-such-org/no-such-bert")
    # download=False (the CLI without --allow-download) never asks the Hub, reachable or not, and says so.
    asked = []
    monkeypatch.setattr(models, "_can_connect", lambda host, port: asked.append(host) or True)
    with pytest.raises(ModelUnavailable, match="--allow-download"):
        neural.BertScorer("no-such-org/no-such-bert", download=False)
    assert asked == []


# ---------------------------------------------------------------------------------------------- perplexity

def _hf_strided_perplexity(model_dir, text, stride):
    """The transformers documentation's strided perplexity, with the model's own loss."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir)).eval()
    ids = torch.tensor([[tokenizer.cls_token_id] + tokenizer(text, add_special_tokens=False)["input_ids"]])
    window, length = model.config.n_positions, ids.size(1)
    nll, count, previous_end = 0.0, 0, 0
    with torch.no_grad():
        for begin in range(0, length, stride):
            end = min(begin + window, length)
            target_length = end - previous_end
            inputs = ids[:, begin:end]
            labels = inputs.clone()
            labels[:, :-target_length] = -100
            scored = int((labels[:, 1:] != -100).sum())
            nll += float(model(inputs, labels=labels).loss) * scored
            count += scored
            previous_end = end
            if end == length:
                break
    return math.exp(nll / count), count


def test_perplexity_equals_the_models_own_loss(gpt_dir):
    short, long = _texts(11, 1, 20, 20)[0], _texts(12, 1, 150, 150)[0]
    scorer = PerplexityScorer(str(gpt_dir), stride=16)
    result = scorer.score([short, long])
    for text, value in zip((short, long), result.per_item):
        expected, count = _hf_strided_perplexity(gpt_dir, text, 16)
        assert count == len(text)  # every character is scored, the first one after [CLS]
        assert value == pytest.approx(expected, rel=1e-5)
    default = PerplexityScorer(str(gpt_dir))
    assert default.stride == 32
    assert default.score([long]).per_item[0] == pytest.approx(_hf_strided_perplexity(gpt_dir, long, 32)[0], rel=1e-5)
    assert "stride:16" in result.signature and "context:64" in result.signature
    # Library versions are written as every other signature writes them (the RAG NLI checker's too).
    assert f"|torch:{package_version('torch')}|" in result.signature + "|"


def test_perplexity_does_not_depend_on_batching(gpt_dir):
    texts = _texts(13, 12, 1, 120)
    batched = PerplexityScorer(str(gpt_dir), batch_size=8).score(texts).per_item
    single = [PerplexityScorer(str(gpt_dir), batch_size=1).score([t]).per_item[0] for t in texts]
    np.testing.assert_allclose(batched, single, rtol=1e-5)


def test_perplexity_rejects_empty_text_by_index(gpt_dir):
    with pytest.raises(InputError, match=r"texts\[1\]"):
        PerplexityScorer(str(gpt_dir)).score(["银行", ""])


def test_perplexity_from_logprobs_exact():
    assert perplexity_from_logprobs([[-1.0, -2.0], [-0.5], [0.0, -math.log(4)]]) == [
        math.exp(1.5), math.exp(0.5), math.exp(math.log(4) / 2)]
    assert perplexity_from_logprobs([(-0.25,) * 3]) == [math.exp(0.25)]


@pytest.mark.parametrize("bad, message", [
    ([[float("-inf")]], r"logprobs\[0\]\[0\]: expected a finite number"),
    ([[-1.0, "x"]], r"logprobs\[0\]\[1\]"),
    ([[None]], r"logprobs\[0\]\[0\]"),
    ([[float("nan")]], r"logprobs\[0\]\[0\]"),
    ([[True]], r"logprobs\[0\]\[0\]"),
    ([[0.5]], "cannot be positive"),
    ([[-1.0], [-9999.0, -0.5]], r"logprobs\[1\]: mean log-probability -4999.75, whose perplexity"),  # exp overflows
    ([None], r"logprobs\[0\]"),
    ("abc", "list of lists"),
])
def test_perplexity_from_logprobs_names_bad_items(bad, message):
    assert perplexity_from_logprobs([[-1.0], []]) == [math.e, None]  # no tokens: no perplexity
    with pytest.raises(InputError, match=message):
        perplexity_from_logprobs(bad)
