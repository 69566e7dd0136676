"""Score a submission from Python: `evaluate(predictions, config) -> Run`, the one path every command takes.

    from chimdqa_eval import EvalConfig, evaluate
    run = evaluate("preds.jsonl", EvalConfig(config="finance", resamples=200))
    run.results["metrics"]["factual"]["F1"]["value"]     # run.results is exactly results.json
    run.items                                             # the rows of items.jsonl (each made when read)
    run.write("results/")                                 # results.json, items.jsonl, report.html, swapped in whole

`EvalConfig` holds every scoring option with its default and its checks; `chimdqa evaluate` builds it from its
flags (`from_args`), a leaderboard and Python from keywords (a leaderboard.yaml's `scoring:` block). Factual
questions go to the factual metric, open-ended ones to the open-ended metrics, and, when the submission carries
retrieved contexts, every question also goes to the RAG metrics. Offline and without model weights it still
completes: the rule judge and the lexical metrics run, the model-based metrics are listed as skipped with the reason.
"""
from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from chimdqa_eval import longdoc, release
from chimdqa_eval.aggregate import DEFAULT_RESAMPLES, DEFAULT_SEED
from chimdqa_eval.calibration import calibration_summary
from chimdqa_eval.factual import JUDGES, LLM_JUDGES
from chimdqa_eval.factual.judge_llm import judge_requests, load_template
from chimdqa_eval.factual.judge_rule import judge_answers
from chimdqa_eval.families import FAMILIES, FAMILY_NAMES, FamilyUnavailable, family_items, preflight, score_family
from chimdqa_eval.llm import ChatError, cap_message, endpoint_from_args
from chimdqa_eval.longdoc import COLUMNS as DOCUMENT_COLUMNS
from chimdqa_eval.longdoc import DEFAULT_LENGTH_BUCKETS, DEFAULT_POSITION_BINS, check_buckets
from chimdqa_eval.open_ended import METRICS as OPEN_METRICS
from chimdqa_eval.rag.claims import LLMFailure
from chimdqa_eval.rag.metrics import ALL_METRICS
from chimdqa_eval.rag.metrics import GROUPS as RAG_GROUPS
from chimdqa_eval.rag.scoring import check_inputs
from chimdqa_eval.rag.scoring import llm_calls_planned as rag_calls_planned
from chimdqa_eval.report import html
from chimdqa_eval.report import results as res
from chimdqa_eval.report.results import comparison_group, condition
from chimdqa_eval.schema import CONFIGS, QA_SPLITS, SIMPLEQA_CONFIG, InputError, shown
from chimdqa_eval.submission import load_submission
from chimdqa_eval.text import tokenizer_signature

# the LLM judge's endpoint options (add_endpoint_arguments), which `chimdqa run` spells --judge-*
ENDPOINT_OPTIONS = ("api_base", "api_key_env", "concurrency", "timeout", "max_retries", "max_llm_calls",
                    "price_per_mtok", "llm_cache")
LABEL_COLUMNS = ("domain", "question_type", "category", "level", *DOCUMENT_COLUMNS, "primary_category",
                 "secondary_category", "prediction")


@dataclass(frozen=True)
class EvalConfig:
    """How a submission is scored (and on which questions). Field names are `chimdqa evaluate`'s flags with
    underscores; every value is checked when the object is made (InputError naming the flag)."""
    # which questions
    config: str = "all"
    split: str = "test"
    data_dir: str | None = None
    data_files: tuple[str, ...] | None = None
    # what is scored
    metrics: tuple[str, ...] | None = None     # families and/or metric names; None: all
    allow_partial: bool = False
    # the factual judge (and, with an LLM judge, the RAG claim extractor and checker)
    judge: str = "rule"
    judge_prompt: str | None = None
    judge_model: str | None = None
    api_base: tuple[str, ...] | None = None
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 16
    timeout: float = 60.0
    max_retries: int = 5
    max_llm_calls: int | None = None
    price_per_mtok: tuple[float, float] | None = None
    llm_cache: str | None = None
    # model-based metrics (the tokenizer also measures the documents' lengths)
    tokenizer: str = "jieba"
    bertscore_model: str = "bert-base-chinese"
    bertscore_num_layers: int | None = None
    perplexity_model: str | None = None
    nli_model: str | None = None
    allow_download: bool = False
    # breakdowns by document length (token buckets' bounds) and by evidence position (bins of the document)
    length_buckets: tuple[int, ...] = DEFAULT_LENGTH_BUCKETS
    position_bins: int = DEFAULT_POSITION_BINS
    # statistics and report
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    rag_pair: str | None = None
    document_pair: str | None = None

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, os.PathLike):  # a Path where a file or folder is named
                object.__setattr__(self, f.name, value := os.fspath(value))
            if isinstance(value, list) or (isinstance(value, str) and f.type.startswith("tuple[str")):
                # lists from flags or YAML, one text for a list of one; the object stays hashable and frozen
                object.__setattr__(self, f.name, value := tuple(value) if isinstance(value, list) else (value,))
            if isinstance(value, tuple) and any(isinstance(v, os.PathLike) for v in value):
                object.__setattr__(self, f.name, value := tuple(os.fspath(v) if isinstance(v, os.PathLike) else v
                                                                for v in value))
            problem = _type_problem(f.type, value)
            if problem:
                raise InputError(f"{flag(f.name)}: expected {problem}, got {shown(value)}")
        for name, choices in (("config", CONFIGS), ("split", tuple(QA_SPLITS)), ("judge", JUDGES)):
            if getattr(self, name) not in choices:
                raise InputError(f"{flag(name)}: expected one of {', '.join(choices)}, got "
                                 f"{shown(getattr(self, name))}")
        if self.resamples < 0 or self.resamples == 1:  # one resample is no interval
            raise InputError(f"--resamples: expected 0 (no CIs) or a number from 2, got {self.resamples}")
        if self.seed < 0:
            raise InputError(f"--seed: expected a whole number from 0, got {self.seed}")

        check_buckets(self.length_buckets)
        if not 1 <= self.position_bins <= 100:
            raise InputError(f"--position-bins: expected 1 to 100 bins of the document, got {self.position_bins}")
        if self.judge_prompt and self.judge not in LLM_JUDGES:
            raise InputError("--judge-prompt is the LLM judge's template: use it with --judge llm or --judge cascade")

        endpoint_from_args(self)  # checks the endpoint's values even when no LLM is asked

    # -- construction ---------------------------------------------------------------------------------------
    @classmethod
    def from_args(cls, args, *, endpoint_prefix: str = "") -> "EvalConfig":
        """From parsed `chimdqa evaluate` flags (any namespace whose attributes carry the fields' names). With
        `endpoint_prefix` ("judge_", as `chimdqa run` spells them) the judge's endpoint options are read from
        the attributes under that prefix, the plain names being another endpoint's."""
        def source(name):
            return endpoint_prefix + name if name in ENDPOINT_OPTIONS else name

        return cls(**{f.name: getattr(args, source(f.name)) for f in dataclasses.fields(cls)
                      if hasattr(args, source(f.name))})

    def replace(self, **changes) -> "EvalConfig":
        return dataclasses.replace(self, **changes)

    # -- what the families and results read ------------------------------------------------------------------
    @property
    def named(self) -> bool:
        """Whether --metrics named what to run (then a family or metric that cannot run is an error)."""
        return self.metrics is not None

    @property
    def uses_llm(self) -> bool:
        return self.judge in LLM_JUDGES  # the run has an LLM endpoint, which the RAG claims use too

    def check_judge(self) -> None:
        """With an LLM judge: its model and endpoint are given and its grader template loads (InputError
        otherwise), so a mistake there is found before anything is scored."""
        if self.uses_llm:
            self.endpoint()

            load_template(self.judge_prompt)

    def endpoint(self):
        """The LLM judge's LLMEndpoint (None with the rule judge)."""
        return endpoint_from_args(self, needed_for=f"--judge {self.judge}") if self.uses_llm else None

    def recorded(self) -> dict:
        """results.json's `settings`: what decides the scores."""
        template = None
        if self.uses_llm:
            loaded = load_template(self.judge_prompt)
            template = {"version": loaded.version, "sha256": loaded.sha256, "source": self.judge_prompt or "built-in",
                        "parse": loaded.parse_mode}
        return {"judge": self.judge, "judge_model": self.judge_model, "judge_prompt": template,
                "tokenizer": self.tokenizer, "bertscore_model": self.bertscore_model,
                "bertscore_num_layers": self.bertscore_num_layers, "perplexity_model": self.perplexity_model,
                "nli_model": self.nli_model, "metrics": list(self.metrics) if self.metrics else ["all"],
                "resamples": self.resamples, "seed": self.seed, "confidence": 0.95}


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _type_problem(annotation: str, value) -> str | None:
    """What `value` should be, for a field annotated `annotation` (this module's annotations are strings), or
    None when it is that."""
    optional = annotation.endswith("| None")
    kind = annotation.removesuffix(" | None")
    if value is None:
        return None if optional else kind
    if kind == "bool":
        return None if isinstance(value, bool) else "true or false"
    if kind == "int":
        return None if isinstance(value, int) and not isinstance(value, bool) else "a whole number"
    if kind == "float":
        return None if isinstance(value, (int, float)) and not isinstance(value, bool) else "a number"
    if kind == "str":
        return None if isinstance(value, str) else "text"
    if kind.startswith("tuple"):
        inner = next((k for k in ("float", "int") if k in kind), "str")
        if not isinstance(value, tuple) or not value or any(_type_problem(inner, v) for v in value):
            return f"a list of {_PLURALS[inner]}"
        return None
    raise TypeError(f"no check for {annotation}")


_PLURALS = {"float": "numbers", "int": "whole numbers", "str": "texts"}


# -- the run ------------------------------------------------------------------------------------------------
@dataclass
class Run:
    """One scored submission: `results` is exactly results.json, `items` the rows of items.jsonl (a sequence whose
    rows are made when read: report.results.ItemRows, streamed into the file by `write`)."""
    results: dict
    items: Sequence[dict]
    rag_pair: dict | None = None
    document_pair: dict | None = None

    def report_html(self) -> str:
        return html.report_html(self.results, [pair for pair in (self.rag_pair, self.document_pair) if pair])

    def write(self, out) -> Path:
        """Write results.json, items.jsonl and report.html into `out` as one whole run (see
        report.results.write_results); the path of results.json."""
        return res.write_results(out, self.results, self.items, report=lambda doc: self.report_html())


@dataclass
class Prepared:
    """A submission read and checked against its questions, not yet scored (see `prepare`)."""
    config: EvalConfig
    submission: object
    dataset: dict
    wanted: dict
    rag_pair: dict | None
    document_pair: dict | None = None
    documents: dict | None = None  # {doc_id: pages, tokens}: the breakdowns by length and evidence position

    @property
    def simpleqa(self) -> bool:
        return self.config.config == SIMPLEQA_CONFIG

    def llm_plan(self) -> dict | None:
        """{stage: {"calls", "exact"[, "note"]}}: the LLM calls scoring would still make after the cache; asks
        nothing. None with the rule judge (no LLM is asked)."""
        if not self.config.uses_llm:
            return None
        with self.config.endpoint().client() as client:
            return llm_calls_planned(self.submission.items, self.wanted, client, simpleqa=self.simpleqa,
                                     judge=self.config.judge, judge_prompt=self.config.judge_prompt)

    def score(self) -> Run:
        """Score every family, aggregate, and return the Run (nothing is written)."""
        config, submission = self.config, self.submission
        endpoint = config.endpoint()
        client = endpoint.client() if endpoint is not None else None
        try:
            if client is not None:
                plan = llm_calls_planned(submission.items, self.wanted, client, simpleqa=self.simpleqa,
                                         judge=config.judge, judge_prompt=config.judge_prompt)
                if any(stage["calls"] for stage in plan.values()):
                    client.probe()  # a wrong URL or a server that is down stops here, not after minutes of retries
            families, skipped = score_with_llm(client, submission.items, self.wanted, config, self.simpleqa)
        finally:
            if client is not None:
                client.close()
        settings = config.recorded()
        if client is not None:
            settings["llm_usage"] = client.usage_report()
        order = {}
        if self.documents is not None:
            order = longdoc.label_order(config.length_buckets, config.position_bins)
        results = res.build_results(
            model={k: v for k, v in submission.metadata.items() if k != "generation"}, dataset=self.dataset,
            submission={"file": str(submission.path), "sha256": res.file_sha256(submission.path),
                        "n_scored": len(submission.items), "coverage": round(submission.coverage, 6),
                        "missing_ids": submission.missing_ids, "n_outside_config": submission.n_outside},
            settings=settings, families=families, skipped=skipped, label_order=order)
        for family in families:
            results.update(family.summary)  # the cascade: how many grades the rules and the LLM each gave
        if "generation" in submission.metadata:  # how `chimdqa generate` made the predictions (retrieval quality)
            results["generation"] = submission.metadata["generation"]
        calibration = calibration_of(submission.items, families, config.judge, order)
        if calibration is not None:
            results["calibration"] = calibration
        elif "confidence" in submission.fields:
            results["skipped"].append({"family": "calibration", "metric": "ece",
                                       "reason": calibration_skipped(families)})
        if self.rag_pair is not None:  # the run without (or with) retrieval that the report pairs this one with
            other = self.rag_pair
            results["rag_pair"] = {"run_id": other.get("run_id"), "model": other["model"]["model"],
                                   "rag": bool(other["model"].get("rag")), "file": other.get("_path")}
        if self.document_pair is not None:  # the closed-book run (or the run with the document) beside this one
            other = self.document_pair
            results["document_pair"] = {"run_id": other.get("run_id"), "model": other["model"]["model"],
                                        "condition": res.condition(other), "file": other.get("_path")}
        if self.documents is not None:
            labels = {i["id"]: {c: i[c] for c in DOCUMENT_COLUMNS} for i in submission.items}
            results["document_breakdowns"] = longdoc.summary(
                labels, {d: self.documents[d] for d in dict.fromkeys(i["doc_id"] for i in submission.items)},
                config.length_buckets, config.position_bins, tokenizer_signature(config.tokenizer))
        columns = LABEL_COLUMNS + (("confidence",) if calibration is not None else ())
        return Run(results, res.item_rows(submission.items, families, columns), self.rag_pair, self.document_pair)


def prepare(predictions, config: EvalConfig | None = None, *, metadata=None, model=None) -> Prepared:
    """Everything checked before anything is scored: the judge's template, --metrics, the questions, the
    predictions file (and its metadata: `metadata`, else <stem>.meta.json beside it; `model` overrides the
    metadata's name) joined to them, --rag-pair and --document-pair; the documents' lengths and the evidence
    pages' places (the length and position breakdowns). Bad input is an InputError naming the file, line and id."""
    config = config or EvalConfig()
    config.check_judge()
    wanted = resolve_wanted(config.metrics)
    questions, outside_ids, dataset = load_questions(config.config, config.data_dir, config.data_files,
                                                     config.split)
    questions, documents = with_document_labels(config, questions)
    submission = load_submission(predictions, questions, metadata_path=metadata, metadata_overrides={"model": model},
                                 allow_partial=config.allow_partial, outside_ids=outside_ids)
    if config.perplexity_model and submission.items[0].get("logprobs") is not None:
        raise InputError(f"--perplexity-model {config.perplexity_model}: the predictions carry logprobs, from which "
                         "perplexity is computed without a model; leave out one of the two")
    rag_pair = res.read_results(config.rag_pair) if config.rag_pair else None
    if rag_pair is not None:
        check_rag_pair(submission.metadata, dataset, rag_pair, config.rag_pair)
    document_pair = res.read_results(config.document_pair) if config.document_pair else None
    if document_pair is not None:
        check_document_pair(submission.metadata, dataset, document_pair, config.document_pair)
    return Prepared(config, submission, dataset, wanted, rag_pair, document_pair, documents)


def with_document_labels(config: EvalConfig, rows: list[dict]) -> tuple[list[dict], dict | None]:
    """(the question rows with their doc_length and evidence_position labels, {doc_id: {pages, tokens, file}}),
    measured on the release's documents with config.tokenizer; (rows, None) where the questions have no documents
    to measure: Chinese SimpleQA, --data-files without --data-dir, a release without documents.jsonl."""
    if (config.config == SIMPLEQA_CONFIG or (config.data_files and not config.data_dir)
            or not (release.release_dir(config.data_dir) / release.DOCUMENT_INDEX).is_file()):
        return rows, None
    documents = longdoc.document_sizes(config.data_dir, {r["doc_id"] for r in rows}, config.tokenizer)
    evidence = release.evidence_records(config.data_dir, files=config.data_files)
    labels = longdoc.question_labels(rows, {i: pages for i, (pages, _) in evidence.items()}, documents,
                                     config.length_buckets, config.position_bins,
                                     {i: location for i, (_, location) in evidence.items()})
    return [{**r, **labels[r["id"]]} for r in rows], documents


def evaluate(predictions, config: EvalConfig | None = None, *, metadata=None, model=None) -> Run:
    """Score the predictions file `predictions` as `config` says: `prepare(...).score()`. An LLM endpoint that
    cannot answer is an InputError that says how to resume (its answers are cached)."""
    return prepare(predictions, config, metadata=metadata, model=model).score()


def calibration_of(items: list[dict], families, judge: str, label_order: dict | None = None) -> dict | None:
    """ECE and reliability bins of the stated confidences against the factual grades (correct = CO), overall and
    per breakdown label (labels in `label_order` first, in its order); None without confidences or factual
    grades."""
    factual = next((f for f in families if f.family == "factual"), None)
    confidence = {i["id"]: i.get("confidence") for i in items}
    if factual is None or all(confidence[i] is None for i in factual.ids):
        return None

    return calibration_summary([confidence[i] for i in factual.ids], [g == "CO" for g in factual.per_item["grade"]],
                               factual.labels, correctness=f"factual-grade-CO-{judge}-judge", label_order=label_order)


def calibration_skipped(families) -> str:
    """Why a submission whose predictions have a confidence field has no calibration."""
    if not any(f.family == "factual" for f in families):
        return "the predictions state confidences, but no factual answer was graded (calibration needs the grades)"
    return ("the predictions have a confidence field, but no factual answer carries a number (all null: e.g. "
            "`chimdqa generate --ask-confidence` found no 置信度 line), so ECE cannot be computed")


def score_with_llm(client, items, wanted, settings: EvalConfig, simpleqa):
    """score() with the run's one LLM client (or None): an LLM failure or the call cap becomes one clear error
    that says how to resume."""
    try:
        return score(items, wanted, settings, simpleqa=simpleqa, client=client)
    except LLMFailure as err:
        raise InputError(cap_message(client, "the RAG scoring") if client.cap_reached else str(err)) from None
    except ChatError as err:
        raise InputError(str(err)) from None


def llm_calls_planned(items, wanted, client, *, simpleqa: bool = False, judge: str = "llm",
                      judge_prompt=None) -> dict:
    """{stage: {"calls", "exact"[, "note"]}}: what the LLM judge and the RAG extractor/checker (--judge llm or
    cascade) would still ask, after the cache, for these items; asks nothing."""
    factual_items = family_items(FAMILIES["factual"], items, simpleqa)
    plan = {}
    if "factual" in wanted and factual_items:
        if judge == "cascade":  # only what the rules are unsure of goes to the LLM
            verdicts = judge_answers([i["prediction"] for i in factual_items], [i["answer"] for i in factual_items],
                                     [i["question"] for i in factual_items], workers=None)
            factual_items = [i for i, v in zip(factual_items, verdicts) if not v.certain]
        template = load_template(judge_prompt)
        plan["judge"] = {"calls": client.pending(judge_requests(
            [i["prediction"] for i in factual_items], [i["answer"] for i in factual_items],
            [i["question"] for i in factual_items], template), template.parse), "exact": True}
    if "rag" in wanted and not simpleqa and items[0].get("retrieved_contexts") is not None:
        rag_items, _ = check_inputs([i["prediction"] for i in items], [i["answer"] for i in items],
                                    [i["question"] for i in items], [i["retrieved_contexts"] for i in items])
        plan.update(rag_calls_planned(rag_items, tuple(wanted["rag"]) if wanted["rag"] else ALL_METRICS, client))
    return plan


def check_rag_pair(model: dict, dataset: dict, other: dict, source) -> None:
    """The report pairs runs by model and dataset group: --rag-pair must be this model in the other RAG
    condition, on the same benchmark, config, split and dataset revision."""
    def describe(m):
        return f"{m['model']!r} {'with' if m.get('rag') else 'without'} RAG"

    theirs = other["model"]
    if theirs["model"] != model["model"] or bool(theirs.get("rag")) == bool(model.get("rag")):
        raise InputError(f"--rag-pair {source}: expected the results of {model['model']!r} "
                         f"{'without' if model.get('rag') else 'with'} RAG, got {describe(theirs)} "
                         "(runs are paired by model name; set it with --model or the metadata file)")
    ours = comparison_group({"dataset": dataset})
    if comparison_group(other) != ours:
        raise InputError(f"--rag-pair {source}: scored on {' / '.join(comparison_group(other))}, this run on "
                         f"{' / '.join(ours)} (benchmark / config / split / revision); only runs on the same "
                         "questions are paired")


PAIRING_ORDER = ("closed-book", "long", "rag")  # the order `chimdqa run` evaluates its modes in


def run_pairs(mode: str, written: dict) -> dict:
    """{"rag_pair", "document_pair"}: the results (paths) that `chimdqa run` pairs its `mode` run with, from
    `written` {mode: results path} of the modes evaluated before it (PAIRING_ORDER): a rag run with the long run
    (without RAG), a long or rag run with the closed-book run (without the document)."""
    def path(other):
        return str(written[other]) if other in written else None

    return {"rag_pair": path("long") if mode == "rag" else None,
            "document_pair": path("closed-book") if mode != "closed-book" else None}


def check_document_pair(model: dict, dataset: dict, other: dict, source) -> None:
    """--document-pair: the same model on the same questions, one of the two runs closed-book (without the
    document) and the other with it (long or RAG)."""
    ours = condition({"model": model, "generation": model.get("generation")})
    theirs = condition(other)
    if other["model"]["model"] != model["model"] or (ours == "closed-book") == (theirs == "closed-book"):
        wanted = "with the document (long or RAG)" if ours == "closed-book" else "closed-book (without the document)"
        raise InputError(f"--document-pair {source}: expected the results of {model['model']!r} {wanted}, got "
                         f"{other['model']['model']!r} {theirs} (a run is closed-book when `chimdqa generate "
                         "--mode closed-book` made it, its metadata's generation.mode; runs are paired by model name)")
    if comparison_group(other) != comparison_group({"dataset": dataset}):
        raise InputError(f"--document-pair {source}: scored on {' / '.join(comparison_group(other))}, this run on "
                         f"{' / '.join(comparison_group({'dataset': dataset}))} (benchmark / config / split / "
                         "revision); only runs on the same questions are paired")


def resolve_wanted(names) -> dict:
    """{family: None (all its metrics) | set of metric names} from --metrics: family names, the registry's
    metric names (bertscore_f1) or the libraries' (bertscore, RAG groups such as generator)."""
    if not names:
        return {f: None for f in FAMILY_NAMES}

    choices = {"open_ended": set(FAMILIES["open_ended"].metrics) | set(OPEN_METRICS),
               "rag": set(FAMILIES["rag"].metrics) | set(RAG_GROUPS)}
    wanted: dict = {}
    for name in names:
        if name in FAMILY_NAMES:
            wanted[name] = None
            continue
        owners = [f for f, known in choices.items() if name in known]
        if not owners:
            raise InputError(f"--metrics: unknown name {name!r}; expected families {', '.join(FAMILY_NAMES)}, "
                             f"open-ended metrics {', '.join(sorted(choices['open_ended']))} or RAG metrics / "
                             f"groups {', '.join(FAMILIES['rag'].metrics + tuple(RAG_GROUPS))}")
        for family in owners:
            if wanted.get(family, ()) is not None:
                wanted.setdefault(family, set()).add(name)
    return wanted


def load_questions(config: str, data_dir=None, data_files=None, split: str = "test"):
    """(question rows of the config and split, ids of the release outside them, the dataset block of
    results.json)."""
    if config == SIMPLEQA_CONFIG:
        if not data_files or len(data_files) != 1:
            raise InputError("--config chinese_simpleqa needs its jsonl as --data-files FILE")
        if split != "test":
            raise InputError("--config chinese_simpleqa has one split, test")
        rows = release.read_simpleqa(data_files[0])
        return rows, frozenset(), {"name": "Chinese SimpleQA", "config": config, "split": split,
                                   "revision": release.fingerprint(files=data_files), "source": str(data_files[0]),
                                   "n_questions": len(rows)}
    every = release.read_qa(data_dir, files=data_files)
    rows = release.select_qa(every, domains=None if config == "all" else (config,), question_types=QA_SPLITS[split])
    if not rows:
        raise InputError(f"the release has no questions in config {config}, split {split}")
    outside = frozenset(r["id"] for r in every) - {r["id"] for r in rows}
    source = ", ".join(map(str, data_files)) if data_files else str(release.release_dir(data_dir))
    return rows, outside, {"name": "ChiMDQA", "config": config, "split": split,
                           "revision": release.fingerprint(data_dir, files=data_files), "source": source,
                           "n_questions": len(rows)}


def score(items: list[dict], wanted: dict, settings: EvalConfig, *, simpleqa: bool = False, client=None):
    """(FamilyScores list, skipped families) for the joined items, family by family from the registry; one
    progress step per family. `client`: the run's one ChatClient (an LLM judge), shared by the judge and the RAG
    extractor/checker. The skip policy is the registry's (chimdqa_eval.families): a family that cannot run at
    all is an error when --metrics named it or one of its metrics, a skipped family otherwise."""
    if "IPython" in sys.modules:  # a notebook's widget bar; tqdm.auto's import pulls in asyncio (~50 ms) otherwise
        from tqdm.auto import tqdm
    else:
        from tqdm import tqdm

    stages, skipped = [], []
    for name, family in FAMILIES.items():
        own = family_items(family, items, simpleqa) if name in wanted else []
        if not own:
            continue
        try:
            preflight(family, own, settings)  # cheap checks first: a bad option must not cost a long run
        except FamilyUnavailable as err:
            _unavailable(family, err, settings, skipped)
            continue
        stages.append((family, own))
    families = []
    with tqdm(total=len(stages), desc="chimdqa evaluate", unit="stage", disable=None) as bar:
        for family, own in stages:
            bar.set_postfix_str(f"{family.name} ({len(own)} answers)")
            try:
                families.append(score_family(family, own, wanted[family.name], settings, client=client,
                                             simpleqa=simpleqa))
            except FamilyUnavailable as err:
                _unavailable(family, err, settings, skipped)
            bar.update()
    return families, skipped


def _unavailable(family, err, settings: EvalConfig, skipped: list) -> None:
    if settings.named:
        raise InputError(f"--metrics asks for {family.title.lower()} metrics, which cannot run: {err}") from None
    skipped.append({"family": family.name, "metric": None, "reason": str(err)})
