"""The open-ended metric of ChiMDQA (the paper's Table 5): METEOR, ROUGE-L, CIDEr (and CIDEr-D), perplexity and
BERTScore.

`compute_open` tokenizes, scores every item with each requested metric and derives every aggregate (corpus,
per domain / question type / level) from the per-item scores. Lexical scores come from chimdqa_eval.lexical,
model-based ones from chimdqa_eval.neural (imported when a model-based metric is asked for: a lexical run never
loads it); this module only wires them together.
"""
from __future__ import annotations

from typing import Callable, Iterable

from chimdqa_eval import lexical
from chimdqa_eval.aggregate import breakdown_values, summarize
from chimdqa_eval.schema import (LABEL_ORDER, InputError, breakdown_columns, check_answer_pairs, check_breakdowns,
                                 check_logprobs, check_same_length)
from chimdqa_eval.signature import make_signature
from chimdqa_eval.text import tokenize_many, tokenize_references, tokenizer_signature

LEXICAL_METRICS = ("meteor", "rouge_l", "cider", "cider_d")
METRICS = LEXICAL_METRICS + ("perplexity", "bertscore")
BERTSCORE_KEYS = ("bertscore_f1", "bertscore_precision", "bertscore_recall")


def _requested(metrics, explicit):
    """(metrics to compute, whether an unavailable model is an error). Metrics the caller names are explicit;
    the default set (metrics=None) is not, so a missing model only skips its metric."""
    if metrics is None:
        return list(METRICS), bool(explicit)
    if isinstance(metrics, str):
        metrics = [metrics]
    metrics = list(dict.fromkeys(metrics))
    for name in metrics:
        if name not in METRICS:
            raise InputError(f"metrics: unknown metric {name!r}; expected some of {', '.join(METRICS)}")
    if not metrics:
        raise InputError("metrics: empty; name at least one of " + ", ".join(METRICS))
    return metrics, True if explicit is None else bool(explicit)


def _lexical_signature(metric: str, tokenizer: str, fields: dict, packages=()) -> str:
    return make_signature({"metric": metric, "tok": tokenizer_signature(tokenizer), **fields},
                          packages=(("jieba",) if tokenizer == "jieba" else ()) + packages)


def _cider_corpus(ref_tokens) -> dict:
    """The corpus CIDEr's and CIDEr-D's document frequencies came from, as their signatures name it: the
    evaluated references, how many, and a digest of their tokens."""
    return {"df": "evaluated_references", "df_refs": len(ref_tokens), "df_digest": lexical.reference_digest(ref_tokens)}


def _cider_signature(metric: str, tokenizer: str, corpus: dict, penalty: dict) -> str:
    """CIDEr's and CIDEr-D's signature: the variant, its switches, and the corpus (_cider_corpus)."""
    return _lexical_signature(metric, tokenizer, {"n": lexical.CIDER_N, **penalty, **corpus})


def _perplexities(predictions, logprobs, perplexity_model, device, download):
    """Per-item perplexity and its signature. An empty prediction (or an empty list of log-probabilities) has
    no token to score: its perplexity is None."""
    from chimdqa_eval import neural

    if logprobs is not None:
        values = neural.perplexity_from_logprobs(check_logprobs(logprobs, predictions))
        return values, make_signature({"metric": "perplexity", "source": "caller_logprobs"})
    scored = [i for i, p in enumerate(predictions) if p.strip()]
    scorer = neural.get_perplexity_scorer(perplexity_model or neural.DEFAULT_PERPLEXITY_MODEL, device,
                                          download=download)
    result = scorer.score(
        [predictions[i] for i in scored])
    per_item = [None] * len(predictions)
    for i, value in zip(scored, result.per_item):
        per_item[i] = value
    return per_item, result.signature


def compute_open(predictions, references, *, metrics=None, tokenizer: str = "jieba", domains=None,
                 question_types=None, levels=None, logprobs=None, perplexity_model: str | None = None,
                 bertscore_model: str | None = None, bertscore_num_layers: int | None = None, idf: bool = False,
                 rescale_with_baseline=False, long_answers: str = "truncate", explicit: bool | None = None,
                 synonyms: Callable[[str], Iterable[str]] | None = None, device=None,
                 download: bool | None = None) -> dict:
    """Score open-ended answers against one reference each.

    metrics: some of "meteor", "rouge_l", "cider", "cider_d", "perplexity", "bertscore". None (the default) means
      all six,
      and a metric whose model cannot be loaded (offline, no local weights) is skipped, with the reason under
      "skipped". Metrics named by the caller are explicit: an unavailable model raises neural.ModelUnavailable.
      `explicit=True/False` overrides either way.
    tokenizer: "jieba" (accurate mode) or "char", for METEOR, ROUGE-L, CIDEr and CIDEr-D.
    domains, question_types, levels: optional labels per item for the "by_*" breakdowns.
    logprobs: per-token natural-log probabilities of each prediction, as APIs return them; perplexity then
      comes from them (exp of minus their mean) and no model is loaded.
    perplexity_model: a causal LM (Hub name or folder); default neural.DEFAULT_PERPLEXITY_MODEL.
    bertscore_model, bertscore_num_layers, idf, rescale_with_baseline: as bert_score's options; the model and its
      layer default to neural.DEFAULT_BERTSCORE_MODEL and neural.DEFAULT_BERTSCORE_LAYERS.
    long_answers: "truncate" (as bert_score: at the model's maximum length; the number of items cut is
      "bertscore_truncated") or "window" (overlapping windows, nothing cut).
    synonyms: METEOR's synonym source, a function from a word to its synonyms; none by default.
    download: whether model weights may come from the Hugging Face Hub: False = local folders and the HF cache
      only; None (default) = when the Hub is reachable and HF_HUB_OFFLINE is not set; True = yes.

    Returns "meteor", "rouge_l", "cider", "cider_d", "bertscore_f1", "bertscore_precision", "bertscore_recall"
    as the mean of the per-item scores times 100 ("cider": Vedantam et al.'s CIDEr, a mean of cosines, as a
    percentage like ChiMDQA's Table 5; "cider_d": pycocoevalcap's 0-10 CIDEr-D times 100, as captioning papers
    report it, so it can exceed 100), "perplexity" raw
    (the mean of per-item perplexities, as HF evaluate's `mean_perplexity`), "per_item" {metric: list, same
    scales}, "by_domain" / "by_question_type" / "by_level" {label: {metric: mean over its items}} for the labels
    given, "skipped" {metric: reason}, "signature" {metric: signature}.

    Empty predictions (or only whitespace) score 0 on every lexical metric and on BERTScore, as the reference
    implementations do; they have no perplexity (None per item, left out of the mean). An empty reference is an
    InputError. CIDEr's and CIDEr-D's document frequencies come from the evaluated references, so their scores
    depend on the whole set (one item scores 0); their signatures name the set (number and digest).

    >>> r = compute_open(["北京是中国的首都。"], ["中国的首都是北京。"], metrics=["rouge_l", "meteor"])
    >>> round(r["rouge_l"], 2), round(r["meteor"], 2)  # LCS 中国/的/首都/。 is 4 of 6 tokens; 4 chunks of 6
    (66.67, 85.19)
    """
    predictions, references = check_answer_pairs(predictions, references)
    labels = check_breakdowns(domains=domains, question_types=question_types, levels=levels)
    check_same_length(predictions=predictions, references=references, logprobs=logprobs, **labels)
    wanted, strict = _requested(metrics, explicit)

    per_item, signature, skipped, extra = {}, {}, {}, {}
    if any(m in LEXICAL_METRICS for m in wanted):
        ref_tokens = tokenize_references(references, tokenizer)
        pred_tokens = tokenize_many(predictions, tokenizer)
    if "meteor" in wanted:
        per_item["meteor"] = [100 * s for s in lexical.meteor(pred_tokens, ref_tokens, synonyms=synonyms)]
        signature["meteor"] = _lexical_signature("meteor", tokenizer, {
            "alpha": lexical.METEOR_ALPHA, "beta": lexical.METEOR_BETA, "gamma": lexical.METEOR_GAMMA,
            "stem": "porter", "synonyms": "none" if synonyms is None else getattr(synonyms, "__name__", "custom")},
            ("nltk",))  # the stemmer is NLTK's PorterStemmer, as chimdqa_eval.porter reproduces it (no import)
    if "rouge_l" in wanted:
        per_item["rouge_l"] = [100 * s for s in lexical.rouge_l(pred_tokens, ref_tokens)]
        signature["rouge_l"] = _lexical_signature("rouge_l", tokenizer, {"score": "f"})
    if "cider" in wanted or "cider_d" in wanted:  # one pass over the n-grams gives both
        cider_scores, cider_d_scores = lexical.cider_and_cider_d(pred_tokens, ref_tokens)
        corpus = _cider_corpus(ref_tokens)
    if "cider" in wanted:
        per_item["cider"] = [100 * s for s in cider_scores]
        signature["cider"] = _cider_signature("cider", tokenizer, corpus, {"clip": "no", "penalty": "none"})
    if "cider_d" in wanted:
        per_item["cider_d"] = [100 * s for s in cider_d_scores]
        signature["cider_d"] = _cider_signature("cider_d", tokenizer, corpus, {
            "clip": "yes", "penalty": f"gauss(sigma={lexical.CIDER_SIGMA:g})"})
    if "perplexity" in wanted or "bertscore" in wanted:
        from chimdqa_eval import neural
    if "perplexity" in wanted:
        try:
            per_item["perplexity"], signature["perplexity"] = _perplexities(predictions, logprobs,
                                                                            perplexity_model, device, download)
        except neural.ModelUnavailable as error:
            if strict:
                raise
            skipped["perplexity"] = str(error)
    if "bertscore" in wanted:
        try:
            scorer = neural.get_bert_scorer(
                bertscore_model or neural.DEFAULT_BERTSCORE_MODEL,
                neural.DEFAULT_BERTSCORE_LAYERS if bertscore_num_layers is None else bertscore_num_layers, idf,
                rescale_with_baseline, long_answers, device, download)
        except neural.ModelUnavailable as error:
            if strict:
                raise
            skipped["bertscore"] = str(error)
        else:
            result = scorer.score(predictions, references)
            for key, values in zip(BERTSCORE_KEYS, (result.f1, result.precision, result.recall)):
                per_item[key] = [100 * v for v in values]
            signature["bertscore"] = result.signature
            extra["bertscore_truncated"] = result.truncated

    columns = breakdown_columns(labels)
    summary = summarize(per_item, columns, label_order=LABEL_ORDER)
    out = {metric: summary[metric]["value"] if metric in summary else None for metric in per_item}
    out.update(extra)
    out["per_item"] = per_item
    for column, column_labels in columns.items():
        out[f"by_{column}"] = breakdown_values(summary, column, column_labels)
    out["skipped"] = skipped
    out["signature"] = signature
    return out
