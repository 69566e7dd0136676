"""The metric families: one record each, read by the pipeline, the report, the Hub exports, the leaderboard and the
Spaces, so a family's name, title, metrics and their labels, evaluate module, paper table, leaderboard columns,
items and scoring rule are written once.

    FAMILIES["open_ended"].labels["bertscore_f1"]   -> "BERTScore-F1"
    FAMILIES["rag"].module                            -> "chimdqa_rag"
    score_family(FAMILIES["factual"], items, wanted, settings, ...) -> FamilyScores

Scoring here is orchestration only: each family calls its metric library once on the items it owns and returns
the per-item values plus the statistic that aggregates them (chimdqa_eval.aggregate.summarize). One skip policy
holds for every family: a metric named in --metrics must run (its missing model is an error); a metric not named
is skipped with the reason; and a family named in --metrics (or through one of its metrics) that cannot run at
all (the RAG claim checker's model, retrieved contexts) is an error, where unnamed it is skipped with the reason.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from chimdqa_eval import open_ended
from chimdqa_eval.factual import clear_judge_caches, compute_factual
from chimdqa_eval.grades import SCORE_NAMES
from chimdqa_eval.llm import cap_message
from chimdqa_eval.longdoc import COLUMNS as DOCUMENT_COLUMNS
from chimdqa_eval.models import ModelUnavailable
from chimdqa_eval.rag.metrics import ALL_METRICS
from chimdqa_eval.rag.scoring import compute_rag
from chimdqa_eval.schema import InputError

if TYPE_CHECKING:  # the settings object is made by the orchestration module that calls these functions
    from chimdqa_eval.evaluation import EvalConfig


@dataclass(frozen=True)
class Family:
    name: str                 # key in results.json's metrics
    title: str                # section title in the report
    short: str                # name in model cards (model-index)
    module: str               # its evaluate module (metrics/<module>/)
    table: int                # the paper's table
    labels: dict              # results metric -> the heading the paper's tables use, in table order
    statistic: str            # how per-item values aggregate (aggregate.summarize)
    board_columns: tuple      # headline columns on the leaderboard
    per_domain: tuple         # metrics shown per domain in tables and plots, best available first
    breakdowns: tuple         # item label columns the family is broken down by
    library_metric: dict = field(default_factory=dict)  # results metric -> the library's name, where they differ

    @property
    def metrics(self) -> tuple:
        return tuple(self.labels)

    def library_name(self, metric: str) -> str:
        return self.library_metric.get(metric, metric)

    def results_names(self, library_name: str) -> list[str]:
        """The results metrics a library metric produces (BERTScore gives F1, precision and recall)."""
        return [m for m in self.metrics if self.library_name(m) == library_name] or [library_name]


# the document's length bucket and the evidence's position come with a release's documents (chimdqa_eval.longdoc)
BREAKDOWN_COLUMNS = ("domain", "question_type", "level", *DOCUMENT_COLUMNS)

FAMILIES = {f.name: f for f in (
    Family("factual", "Factual questions", "Factual", "chimdqa_factual", 4,
           {"CO": "CO", "NA": "NA", "IN": "IN", "CGA": "CGA", "F1": "F1"}, "grades",
           board_columns=("CO", "NA", "IN", "CGA", "F1"), per_domain=("F1",), breakdowns=BREAKDOWN_COLUMNS),
    Family("open_ended", "Open-ended questions", "Open-ended", "chimdqa_open", 5,
           {"meteor": "METEOR", "rouge_l": "ROUGE-L", "cider": "CIDEr", "cider_d": "CIDEr-D", "perplexity": "PPL",
            "bertscore_f1": "BERTScore-F1", "bertscore_precision": "BERTScore-P", "bertscore_recall": "BERTScore-R"},
           "mean", board_columns=("meteor", "rouge_l", "cider", "perplexity", "bertscore_f1"),
           per_domain=("bertscore_f1", "rouge_l", "meteor"), breakdowns=BREAKDOWN_COLUMNS,
           library_metric={"bertscore_f1": "bertscore", "bertscore_precision": "bertscore",
                           "bertscore_recall": "bertscore"}),
    Family("rag", "RAG (all questions)", "RAG", "chimdqa_rag", 6,
           {"precision": "Precision", "recall": "Recall", "f1": "F1", "claim_recall": "Claim recall",
            "context_precision": "Context precision", "faithfulness": "Faithfulness",
            "noise_sensitivity_in_relevant": "Relevant noise sens.",
            "noise_sensitivity_in_irrelevant": "Irrelevant noise sens.", "hallucination": "Hallucination",
            "self_knowledge": "Self-knowledge", "context_utilization": "Context utilization"},
           "mean", board_columns=("precision", "recall", "f1"), per_domain=(),
           breakdowns=BREAKDOWN_COLUMNS + ("category",)),
)}
FAMILY_NAMES = tuple(FAMILIES)
METRIC_LABELS = {name: dict(f.labels) for name, f in FAMILIES.items()}
FAMILY_TITLES = {name: f.title for name, f in FAMILIES.items()}
MODULES = tuple(f.module for f in FAMILIES.values())


class FamilyUnavailable(RuntimeError):
    """What a family needs is not there (a model, retrieved contexts): an error when the user asked for the
    family, a skipped family with this reason otherwise."""


@dataclass
class FamilyScores:
    """What one family produced on its items, before aggregation: per-item values (written to items.jsonl) and
    the statistic that turns any subset of them into scores (aggregate.summarize)."""
    family: str
    ids: list[str]
    labels: dict[str, list[str]]              # breakdown column -> label of each item
    per_item: dict[str, list | np.ndarray]    # name -> one value per item (numbers: a float array, NaN for None)
    statistic: str
    signatures: dict[str, str]                # metric -> signature
    skipped: dict[str, str] = field(default_factory=dict)  # metric -> reason
    summary: dict = field(default_factory=dict)  # run-level facts for results.json (the cascade's split)


def _compact(values) -> list | np.ndarray:
    """Per-item scores as a float array (8 bytes a value, None as NaN, which items.jsonl writes as null again);
    values of any other kind stay a list."""
    values = list(values)
    if all(type(v) is float or v is None for v in values):
        return np.array([np.nan if v is None else v for v in values], dtype=float)
    return values


def _labels(items, columns) -> dict:
    return {c: [item[c] for item in items] for c in columns if all(c in item for item in items)}


def family_items(family: Family, items: list[dict], simpleqa: bool = False) -> list[dict]:
    """The items a family scores: factual questions, open-ended ones, or every question of a RAG submission."""
    if family.name == "factual":
        return items if simpleqa else [i for i in items if i["category"] == "factual"]
    if family.name == "open_ended":
        return [] if simpleqa else [i for i in items if i["category"] == "open_ended"]
    return [] if simpleqa else items


def preflight(family: Family, items: list[dict], settings: EvalConfig) -> None:
    """The checks a family can make before scoring (FamilyUnavailable): RAG metrics need retrieved contexts and
    a claim checker (an NLI model, or an LLM judge's endpoint)."""
    if family.name != "rag":
        return
    if items[0].get("retrieved_contexts") is None:
        raise FamilyUnavailable("the predictions carry no retrieved_contexts")
    if not settings.uses_llm and not settings.nli_model:
        raise FamilyUnavailable("the RAG claim checker needs a model: --nli-model (nli_model= in Python), a local "
                                "or Hub sequence-classification NLI model, or --judge llm with --judge-model and "
                                "--api-base; nothing is downloaded unless you name one")


def score_family(family: Family, items: list[dict], metrics, settings: EvalConfig, *, client=None,
                 simpleqa: bool = False) -> FamilyScores:
    """Score a family's items; raises FamilyUnavailable when what it needs is missing (see the skip policy)."""
    scorer = {"factual": _factual, "open_ended": _open_ended, "rag": _rag}[family.name]
    return scorer(family, items, metrics, settings, client=client, simpleqa=simpleqa)


def _factual(family, items, metrics, settings, *, client, simpleqa) -> FamilyScores:
    """Factual grades (rule, LLM or cascade judge); every score and CI comes from the grades of a subset."""
    columns = ("primary_category",) if simpleqa else family.breakdowns
    with warnings.catch_warnings():  # ungraded answers become the error below, with their ids
        warnings.filterwarnings("ignore", message="chimdqa_factual: the judge gave no verdict")
        result = compute_factual(
            [i["prediction"] for i in items], [i["answer"] for i in items], [i["question"] for i in items],
            judge=settings.judge, endpoint=client, judge_prompt=settings.judge_prompt)
    clear_judge_caches()  # what the judge memoized for these answers would sit beside the other families' data
    if result.get("ungraded") and client is not None and client.cap_reached:
        raise InputError(cap_message(client, "the factual grading"))
    if result.get("ungraded"):  # a results file must not carry answers nobody graded (e.g. an unreachable judge)
        first = "; ".join(f"{items[e['index']]['id']}: {e['error']}" for e in result["judge_errors"][:3])
        raise InputError(f"the LLM judge gave no verdict for {result['ungraded']} of {len(items)} factual answers "
                         f"(first: {first}). Its verdicts so far are cached: run the same command again to ask "
                         "only for the missing ones")
    per_item = {"grade": list(result["grades"])}
    if "judged_by" in result:  # the cascade: which judge decided each item
        per_item["judged_by"] = result["judged_by"]
    if "certain" in result:  # the rule judge's trace: was it sure, and which rule decided
        per_item["certain"] = result["certain"]
        per_item["rule"] = result["rules"]  # the registered rule (chimdqa judge-rules lists them)
    return FamilyScores(family.name, [i["id"] for i in items], _labels(items, columns), per_item,
                        family.statistic, {m: result["signature"] for m in SCORE_NAMES},
                        summary={"cascade": result["cascade"]} if "cascade" in result else {})


def _open_ended(family, items, metrics, settings, *, client, simpleqa) -> FamilyScores:
    """Open-ended metrics; a model-based one whose model is unavailable is skipped unless it was named itself
    (naming the family asks for what of it can run)."""
    logprobs = [i["logprobs"] for i in items] if items[0].get("logprobs") is not None else None
    layers = {} if settings.bertscore_num_layers is None else {"bertscore_num_layers": settings.bertscore_num_layers}
    try:
        result = open_ended.compute_open(
            [i["prediction"] for i in items], [i["answer"] for i in items],
            metrics=None if metrics is None else sorted({family.library_name(m) for m in metrics}),
            explicit=metrics is not None, tokenizer=settings.tokenizer, logprobs=logprobs,
            bertscore_model=settings.bertscore_model, perplexity_model=settings.perplexity_model,
            download=settings.allow_download, **layers)
    except ModelUnavailable as err:
        raise FamilyUnavailable(str(err)) from None
    per_item = {m: _compact(v) for m, v in result["per_item"].items()}
    signatures = {m: result["signature"][family.library_name(m)] for m in per_item}
    skipped = {name: reason for m, reason in result["skipped"].items() for name in family.results_names(m)[:1]}
    return FamilyScores(family.name, [i["id"] for i in items], _labels(items, family.breakdowns), per_item,
                        family.statistic, signatures, skipped)


def _rag(family, items, metrics, settings, *, client, simpleqa) -> FamilyScores:
    """RAGChecker's metrics: the LLM extracts and checks claims when the run has an LLM endpoint, else the
    offline sentence splitter and the NLI model."""
    llm = settings.uses_llm
    try:
        result = compute_rag([i["prediction"] for i in items], [i["answer"] for i in items],
                             [i["question"] for i in items], [i["retrieved_contexts"] for i in items],
                             metrics=tuple(metrics) if metrics else ALL_METRICS,
                             extractor="llm" if llm else "sentence", checker="llm" if llm else "nli",
                             nli_model=settings.nli_model, endpoint=client, download=settings.allow_download)
    except ModelUnavailable as err:
        raise FamilyUnavailable(f"{err} (or use --judge llm with --judge-model and --api-base)") from None
    names = [m for m in ALL_METRICS if m in result["per_item"][0]["metrics"]]
    per_item = {m: _compact([row["metrics"][m] for row in result["per_item"]]) for m in names}
    return FamilyScores(family.name, [i["id"] for i in items], _labels(items, family.breakdowns), per_item,
                        family.statistic, {m: result["signature"] for m in names})
