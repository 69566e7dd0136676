"""Adapters from the three metric libraries to FamilyScores: one call into each library on the routed items,
then the per-item values and the rule that turns any subset of them into scores with 95% CIs."""
from __future__ import annotations

import warnings

from chimdqa_eval.report.results import FamilyScores, mean_summarizer

BREAKDOWN_COLUMNS = ("domain", "question_type", "level")


def _labels(items, columns) -> dict:
    return {c: [item[c] for item in items] for c in columns if all(c in item for item in items)}


def factual_scores(items: list[dict], args, *, simpleqa: bool = False, client=None) -> FamilyScores:
    """Factual grades (rule or LLM judge); every score and CI is recomputed from the grades of a subset."""
    from chimdqa_eval.factual import compute_factual
    from chimdqa_eval.factual.scores import SCORE_NAMES, scores_from_grades
    from chimdqa_eval.schema import InputError

    columns = ("primary_category",) if simpleqa else BREAKDOWN_COLUMNS
    with warnings.catch_warnings():  # ungraded answers become the error below, with their ids
        warnings.filterwarnings("ignore", message="chimdqa_factual: the judge gave no verdict")
        result = compute_factual(
            [i["prediction"] for i in items], [i["answer"] for i in items], [i["question"] for i in items],
            judge=args.judge, endpoint=client)
    if result.get("ungraded") and client is not None and client.cap_reached:
        from chimdqa_eval.llm import cap_message

        raise InputError(cap_message(client, "the factual grading"))
    if result.get("ungraded"):  # a results file must not carry answers nobody graded (e.g. an unreachable judge)
        first = "; ".join(f"{items[e['index']]['id']}: {e['error']}" for e in result["judge_errors"][:3])
        raise InputError(f"the LLM judge gave no verdict for {result['ungraded']} of {len(items)} factual answers "
                         f"(first: {first}). Its verdicts so far are cached: run the same command again to ask "
                         "only for the missing ones")
    grades = list(result["grades"])

    def summarize(indices):
        subset = [grades[i] for i in indices]
        scores = scores_from_grades(subset)
        cis = _factual_cis(subset, args.resamples, args.seed)
        return {m: (scores[m], cis.get(m, (float("nan"),) * 2), len(subset)) for m in SCORE_NAMES}

    return FamilyScores("factual", [i["id"] for i in items], _labels(items, columns), {"grade": grades},
                        summarize, {m: result["signature"] for m in SCORE_NAMES})


def _factual_cis(grades, resamples: int, seed: int) -> dict:
    if not resamples:
        return {}
    from chimdqa_eval.aggregate import factual_confidence_intervals

    return factual_confidence_intervals(grades, n_resamples=resamples, seed=seed)


def open_scores(items: list[dict], metrics, args) -> FamilyScores:
    """Open-ended metrics; model-based ones whose model is unavailable come back under ``skipped``."""
    from chimdqa_eval import neural, open_ended
    from chimdqa_eval.schema import InputError

    logprobs = [i["logprobs"] for i in items] if items[0].get("logprobs") is not None else None
    layers = {} if args.bertscore_num_layers is None else {"bertscore_num_layers": args.bertscore_num_layers}
    try:
        result = open_ended.compute_open(
            [i["prediction"] for i in items], [i["answer"] for i in items],
            metrics=None if metrics is None else sorted(metrics), tokenizer=args.tokenizer, logprobs=logprobs,
            bertscore_model=args.bertscore_model, perplexity_model=args.perplexity_model,
            download=args.allow_download, **layers)
    except neural.ModelUnavailable as err:  # only for metrics named in --metrics: the user asked for them
        raise InputError(str(err)) from None
    per_item = {m: list(v) for m, v in result["per_item"].items()}
    # The library signs and skips BERTScore as one metric; results name its F1 / precision / recall apart.
    signatures = {m: result["signature"]["bertscore" if m.startswith("bertscore_") else m] for m in per_item}
    skipped = {"bertscore_f1" if m == "bertscore" else m: reason for m, reason in result["skipped"].items()}
    return FamilyScores("open_ended", [i["id"] for i in items], _labels(items, BREAKDOWN_COLUMNS), per_item,
                        mean_summarizer(per_item, resamples=args.resamples, seed=args.seed),
                        signatures, skipped)


def rag_scores(items: list[dict], metrics, args, client=None):
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
                             nli_model=args.nli_model, endpoint=client, download=args.allow_download)
    except ModelUnavailable as err:
        return None, f"{err} (or use --judge llm with --judge-model and --api-base)"
    names = [m for m in ALL_METRICS if m in result["per_item"][0]["metrics"]]
    per_item = {m: [row["metrics"][m] for row in result["per_item"]] for m in names}
    return FamilyScores("rag", [i["id"] for i in items], _labels(items, BREAKDOWN_COLUMNS + ("category",)),
                        per_item, mean_summarizer(per_item, resamples=args.resamples, seed=args.seed),
                        {m: result["signature"] for m in names}), None
