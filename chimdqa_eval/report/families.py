"""Adapters from the three metric libraries to FamilyScores: one call into each library on the routed items,
then the per-item values and the rule that turns any subset of them into scores with 95% CIs."""
from __future__ import annotations

from chimdqa_eval.report.results import FamilyScores, mean_summarizer

BREAKDOWN_COLUMNS = ("domain", "question_type", "level")


def _labels(items, columns) -> dict:
    return {c: [item[c] for item in items] for c in columns if all(c in item for item in items)}


def factual_scores(items: list[dict], args, *, simpleqa: bool = False) -> FamilyScores:
    from chimdqa_eval import factual
    from chimdqa_eval.aggregate import DEFAULT_SEED

    columns = ("primary_category",) if simpleqa else BREAKDOWN_COLUMNS
    result = factual.compute_factual(
        [i["prediction"] for i in items], [i["answer"] for i in items], [i["question"] for i in items],
        judge=args.judge, judge_model=args.judge_model, api_base=args.api_base, api_key_env=args.api_key_env,
        concurrency=args.concurrency)
    grades = list(result["grades"])
    resamples, seed = getattr(args, "resamples", 1000), getattr(args, "seed", DEFAULT_SEED)

    def summarize(indices):
        subset = [grades[i] for i in indices]
        scores = factual.factual_scores(subset)
        cis = factual.factual_confidence_intervals(subset, n_resamples=resamples, seed=seed) if resamples else {}
        return {m: (scores[m], cis.get(m, (float("nan"),) * 2), len(subset)) for m in factual.FACTUAL_METRICS}

    return FamilyScores("factual", [i["id"] for i in items], _labels(items, columns), {"grade": grades},
                        summarize, {m: result["signature"] for m in factual.FACTUAL_METRICS})


def open_scores(items: list[dict], metrics, args) -> FamilyScores:
    from chimdqa_eval import open_ended

    kwargs = dict(tokenizer=args.tokenizer, bertscore_model=args.bertscore_model,
                  perplexity_model=args.perplexity_model)
    if metrics is not None:
        kwargs["metrics"] = tuple(metrics)
    logprobs = [i["logprobs"] for i in items] if items[0].get("logprobs") is not None else None
    result = open_ended.compute_open([i["prediction"] for i in items], [i["answer"] for i in items],
                                     logprobs=logprobs, **kwargs)
    per_item = {m: list(v) for m, v in result["per_item"].items()}
    signatures = result["signature"]
    return FamilyScores("open_ended", [i["id"] for i in items], _labels(items, BREAKDOWN_COLUMNS), per_item,
                        mean_summarizer(per_item, list(per_item), resamples=args.resamples, seed=args.seed),
                        {m: signatures[m] for m in per_item}, dict(result.get("skipped", {})))


def rag_scores(items: list[dict], metrics, args):
    """(FamilyScores, None), or (None, reason) when the claim checker's model is not available."""
    from chimdqa_eval.rag.checkers import ModelUnavailable
    from chimdqa_eval.rag.metrics import ALL_METRICS
    from chimdqa_eval.rag.scoring import compute_rag

    use_llm = args.judge == "llm"
    try:
        result = compute_rag([i["prediction"] for i in items], [i["answer"] for i in items],
                             [i["question"] for i in items], [i["retrieved_contexts"] for i in items],
                             metrics=tuple(metrics) if metrics else ALL_METRICS,
                             extractor="llm" if use_llm else "sentence", checker="llm" if use_llm else "nli",
                             nli_model=args.nli_model, judge_model=args.judge_model, api_base=args.api_base,
                             api_key_env=args.api_key_env, concurrency=args.concurrency)
    except ModelUnavailable as err:
        return None, f"{err} (or use --judge llm with --judge-model and --api-base)"
    names = [m for m in ALL_METRICS if m in result["per_item"][0]["metrics"]]
    per_item = {m: [row["metrics"][m] for row in result["per_item"]] for m in names}
    return FamilyScores("rag", [i["id"] for i in items], _labels(items, BREAKDOWN_COLUMNS + ("category",)),
                        per_item, mean_summarizer(per_item, names, resamples=args.resamples, seed=args.seed),
                        {m: result["signature"] for m in names}), None
