"""`chimdqa evaluate`: score a submission against the dataset and write results.json, items.jsonl and report.html.

Factual questions go to the factual metric, open-ended ones to the open-ended metrics, and, when the
submission carries retrieved contexts, every question also goes to the RAG metrics. Offline and without
model weights it still completes: the rule judge and the lexical metrics run, the model-based metrics are
listed as skipped with the reason.
"""
from __future__ import annotations

import argparse

from chimdqa_eval.aggregate import DEFAULT_RESAMPLES, DEFAULT_SEED
from chimdqa_eval.factual import JUDGES, LLM_JUDGES
from chimdqa_eval.families import FAMILIES, FAMILY_NAMES, ScoringSettings
from chimdqa_eval.llm import add_endpoint_arguments, endpoint_from_args
from chimdqa_eval.neural import DEFAULT_PERPLEXITY_MODEL
from chimdqa_eval.schema import DOMAINS, QA_SPLITS, InputError

SIMPLEQA_CONFIG = "chinese_simpleqa"
CONFIGS = ("all", *DOMAINS, SIMPLEQA_CONFIG)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--predictions", required=True, metavar="FILE",
                        help="predictions jsonl: one {id, prediction[, retrieved_contexts][, logprobs][, confidence]} "
                        "per line")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for results.json, items.jsonl, "
                        "report.html")
    parser.add_argument("--metadata", metavar="FILE",
                        help="submission metadata JSON (default: <predictions stem>.meta.json next to it)")
    parser.add_argument("--model", help="model name (overrides the metadata file)")
    parser.add_argument("--config", default="all", choices=CONFIGS, help="dataset config (default all)")
    parser.add_argument("--split", default="test", choices=tuple(QA_SPLITS),
                        help="the loader's splits: test (all), factual, open_ended or one question type")
    parser.add_argument("--data-dir", metavar="DIR", help="release folder (default: the bundled sample)")
    parser.add_argument("--data-files", nargs="+", metavar="FILE",
                        help="QA jsonl files to use instead of a release folder (for chinese_simpleqa: its jsonl)")
    parser.add_argument("--metrics", nargs="+", metavar="NAME",
                        help="families (factual open_ended rag) and/or metric names to run (default: all)")
    parser.add_argument("--allow-partial", action="store_true",
                        help="score the covered questions when some have no prediction (coverage is recorded)")
    judge = parser.add_argument_group("factual judge")
    judge.add_argument("--judge", choices=JUDGES, default="rule",
                       help="rule: offline and deterministic (default); llm: an OpenAI-compatible endpoint, which "
                            "then also extracts and checks the RAG claims; cascade: the rules where they are "
                            "certain, the LLM judge for the rest (and the LLM for the RAG claims)")
    judge.add_argument("--judge-prompt", metavar="FILE",
                       help="grader template of the LLM judge (YAML: version, system, user, verdict_regex, verdicts; "
                            "default: the built-in zh-judge-1)")
    add_endpoint_arguments(judge, model_flag="--judge-model", model_help="LLM judge model name (--judge llm)")
    models = parser.add_argument_group("model-based metrics (local paths or Hub names)")
    models.add_argument("--tokenizer", default="jieba", help="tokenizer of the lexical metrics (default jieba)")
    models.add_argument("--bertscore-model", default="bert-base-chinese",
                        help="BERTScore's encoder (default bert-base-chinese)")
    models.add_argument("--bertscore-num-layers", type=int, metavar="N",
                        help="BERTScore's layer (default: the library's choice for bert-base-chinese, 8)")
    models.add_argument("--perplexity-model",
                        help="causal LM that scores perplexity when the predictions carry no logprobs (default "
                             f"{DEFAULT_PERPLEXITY_MODEL}); predictions with logprobs get perplexity from them, "
                             "without a model, and this option is then an error")
    models.add_argument("--nli-model", help="NLI model of the RAG claim checker")
    models.add_argument("--allow-download", action="store_true",
                        help="let Hugging Face models download (by default the Hub is used offline)")
    stats = parser.add_argument_group("statistics and report")
    stats.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES,
                       help="bootstrap resamples for the 95%% CIs (0: no CIs)")
    stats.add_argument("--seed", type=int, default=DEFAULT_SEED, help="bootstrap seed")
    stats.add_argument("--rag-pair", metavar="RESULTS",
                       help="results.json of the same model in the other RAG condition, for the report's "
                            "with-vs-without-RAG plot")


def run(args) -> int:
    from chimdqa_eval.report import html, results as res
    from chimdqa_eval.report.safe import check_results_values

    if args.resamples < 0:
        raise InputError(f"--resamples: expected 0 (no CIs) or a positive number, got {args.resamples}")
    endpoint = endpoint_from_args(args, needed_for=f"--judge {args.judge}" if args.judge in LLM_JUDGES else None)
    if args.judge_prompt and args.judge not in LLM_JUDGES:
        raise InputError("--judge-prompt is the LLM judge's template: use it with --judge llm or --judge cascade")
    if args.judge_prompt:
        from chimdqa_eval.factual.judge_llm import load_template

        load_template(args.judge_prompt)  # a bad template is an error before anything is scored
    wanted = resolve_wanted(args.metrics)
    questions, outside_ids, dataset = load_questions(args.config, args.data_dir, args.data_files, args.split)
    from chimdqa_eval.submission import load_submission

    submission = load_submission(args.predictions, questions, metadata_path=args.metadata,
                                 metadata_overrides={"model": args.model}, allow_partial=args.allow_partial,
                                 outside_ids=outside_ids)
    if args.perplexity_model and submission.items[0].get("logprobs") is not None:
        raise InputError(f"--perplexity-model {args.perplexity_model}: the predictions carry logprobs, from which "
                         "perplexity is computed without a model; leave out one of the two")
    rag_pair = check_results_values(res.read_results(args.rag_pair)) if args.rag_pair else None
    if rag_pair is not None:
        check_rag_pair(submission.metadata, dataset, rag_pair, args.rag_pair)
    simpleqa = args.config == SIMPLEQA_CONFIG
    if args.dry_run and endpoint is None:
        print("no LLM calls: the rule judge and the offline metrics ask no LLM (--judge llm would)")
        return 0
    client = endpoint.client() if endpoint is not None else None
    try:
        if client is not None and plan_or_probe(client, submission.items, wanted, simpleqa, args):
            return 0  # a dry run: the plan is printed, nothing asked
        out = res.check_writable(args.out)  # before scoring: a bad --out must not cost a long LLM or model run
        families, skipped = score_with_llm(client, submission.items, wanted, ScoringSettings.from_args(args),
                                           simpleqa)
    finally:
        if client is not None:
            client.close()
    settings = settings_of(args)
    if client is not None:
        settings["llm_usage"] = client.usage_report()
    model = {k: v for k, v in submission.metadata.items() if k != "generation"}
    results = res.build_results(
        model=model, dataset=dataset,
        submission={"file": str(submission.path), "sha256": res.file_sha256(submission.path),
                    "n_scored": len(submission.items), "coverage": round(submission.coverage, 6),
                    "missing_ids": submission.missing_ids, "n_outside_config": submission.n_outside},
        settings=settings, families=families, skipped=skipped)
    if "generation" in submission.metadata:  # how `chimdqa generate` made the predictions (retrieval quality too)
        results["generation"] = submission.metadata["generation"]
    calibration = calibration_of(submission.items, families, args.judge)
    if calibration is not None:
        results["calibration"] = calibration
    label_columns = ("domain", "question_type", "category", "level", "primary_category", "secondary_category",
                     "prediction") + (("confidence",) if calibration is not None else ())
    path = res.write_results(out, results, res.item_rows(submission.items, families, label_columns),
                             report=lambda doc: html.report_html(doc, [rag_pair] if rag_pair else []))
    print(summary_table(results))
    print(f"\nwrote {out / res.ITEMS_FILE}, {out / res.REPORT_FILE} and {path}")
    return 0


def calibration_of(items: list[dict], families, judge: str) -> dict | None:
    """ECE and reliability bins of the stated confidences against the factual grades (correct = CO), overall and
    per breakdown label; None without confidences or factual grades."""
    factual = next((f for f in families if f.family == "factual"), None)
    confidence = {i["id"]: i.get("confidence") for i in items}
    if factual is None or all(confidence[i] is None for i in factual.ids):
        return None
    from chimdqa_eval.calibration import calibration_summary

    return calibration_summary([confidence[i] for i in factual.ids], [g == "CO" for g in factual.per_item["grade"]],
                               factual.labels, correctness=f"factual-grade-CO-{judge}-judge")


def plan_or_probe(client, items, wanted, simpleqa: bool, args) -> bool:
    """A dry run prints the LLM calls planned and returns True. Otherwise, when anything is to be asked, the
    endpoint is probed: a wrong URL or a server that is down stops the run here, not after minutes of retries."""
    from chimdqa_eval.llm import format_plan

    plan = llm_calls_planned(items, wanted, client, simpleqa=simpleqa, judge=args.judge,
                             judge_prompt=args.judge_prompt)
    if args.dry_run:
        print(format_plan(plan))
        return True
    if any(stage["calls"] for stage in plan.values()):
        client.probe()
    return False


def score_with_llm(client, items, wanted, settings: ScoringSettings, simpleqa):
    """score() with the run's one LLM client (or None): an LLM failure or the call cap becomes one clear error
    that says how to resume."""
    from chimdqa_eval.llm import ChatError, cap_message
    from chimdqa_eval.rag.claims import LLMFailure

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
    from chimdqa_eval.families import family_items

    factual_items = family_items(FAMILIES["factual"], items, simpleqa)
    plan = {}
    if "factual" in wanted and factual_items:
        from chimdqa_eval.factual.judge_llm import judge_requests, load_template
        from chimdqa_eval.factual.judge_rule import judge_answers

        if judge == "cascade":  # only what the rules are unsure of goes to the LLM
            verdicts = judge_answers([i["prediction"] for i in factual_items], [i["answer"] for i in factual_items],
                                     [i["question"] for i in factual_items])
            factual_items = [i for i, v in zip(factual_items, verdicts) if not v.certain]
        template = load_template(judge_prompt)
        plan["judge"] = {"calls": client.pending(judge_requests(
            [i["prediction"] for i in factual_items], [i["answer"] for i in factual_items],
            [i["question"] for i in factual_items], template), template.parse), "exact": True}
    if "rag" in wanted and not simpleqa and items[0].get("retrieved_contexts") is not None:
        from chimdqa_eval.rag.metrics import ALL_METRICS
        from chimdqa_eval.rag.scoring import check_inputs, llm_calls_planned as rag_calls_planned

        rag_items, _ = check_inputs([i["prediction"] for i in items], [i["answer"] for i in items],
                                       [i["question"] for i in items], [i["retrieved_contexts"] for i in items])
        plan.update(rag_calls_planned(rag_items, tuple(wanted["rag"]) if wanted["rag"] else ALL_METRICS, client))
    return plan


def check_rag_pair(model: dict, dataset: dict, other: dict, source) -> None:
    """The report pairs runs by model and dataset group: --rag-pair must be this model in the other RAG
    condition, on the same benchmark, config, split and dataset revision."""
    from chimdqa_eval.report.results import comparison_group

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


def resolve_wanted(names) -> dict:
    """{family: None (all its metrics) | set of metric names} from --metrics: family names, the registry's
    metric names (bertscore_f1) or the libraries' (bertscore, RAG groups such as generator)."""
    if not names:
        return {f: None for f in FAMILY_NAMES}
    from chimdqa_eval.open_ended import METRICS as OPEN_METRICS
    from chimdqa_eval.rag.metrics import GROUPS as RAG_GROUPS

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
    from chimdqa_eval import release

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


def settings_of(args) -> dict:
    template = None
    if args.judge in LLM_JUDGES:
        from chimdqa_eval.factual.judge_llm import load_template

        loaded = load_template(args.judge_prompt)
        template = {"version": loaded.version, "sha256": loaded.sha256, "source": args.judge_prompt or "built-in"}
    return {"judge": args.judge, "judge_model": args.judge_model, "judge_prompt": template,
            "tokenizer": args.tokenizer,
            "bertscore_model": args.bertscore_model, "bertscore_num_layers": args.bertscore_num_layers,
            "perplexity_model": args.perplexity_model,
            "nli_model": args.nli_model, "metrics": args.metrics or ["all"], "resamples": args.resamples,
            "seed": args.seed, "confidence": 0.95}


def score(items: list[dict], wanted: dict, settings: ScoringSettings, *, simpleqa: bool = False, client=None):
    """(FamilyScores list, skipped families) for the joined items, family by family from the registry; one
    progress step per family. `client`: the run's one ChatClient (an LLM judge), shared by the judge and the RAG
    extractor/checker. The skip policy is the registry's (chimdqa_eval.families): a family that cannot run at
    all is an error when --metrics named it or one of its metrics, a skipped family otherwise."""
    from tqdm.auto import tqdm

    from chimdqa_eval.families import FamilyUnavailable, family_items, preflight, score_family

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


def _unavailable(family, err, settings: ScoringSettings, skipped: list) -> None:
    if settings.named:
        raise InputError(f"--metrics asks for {family.title.lower()} metrics, which cannot run: {err}") from None
    skipped.append({"family": family.name, "metric": None, "reason": str(err)})


def summary_table(results: dict) -> str:
    """A plain-text table of every overall score with its 95% CI, then what was skipped."""
    from chimdqa_eval.families import METRIC_LABELS

    model = results["model"]["model"]
    ds = results["dataset"]
    sub = results["submission"]
    lines = [f"{model} on {ds['name']} ({ds['config']}, revision {ds['revision']}), {sub['n_scored']} questions "
             f"scored, coverage {100 * sub['coverage']:.1f}%"]
    if sub.get("n_outside_config"):
        lines.append(f"({sub['n_outside_config']} predictions for questions outside config {ds['config']}, "
                     f"split {ds['split']} were not scored)")
    lines.append("")
    lines.append(f"{'family':<11} {'metric':<24} {'value':>8}  {'95% CI':<17} {'n':>6}")
    for family, metrics in results["metrics"].items():
        for metric, e in metrics.items():
            ci = e.get("note", "") if e["ci95"][0] is None else f"[{e['ci95'][0]:.1f}, {e['ci95'][1]:.1f}]"
            label = METRIC_LABELS.get(family, {}).get(metric, metric)
            lines.append(f"{family:<11} {label:<24} {e['value']:>8.2f}  {ci:<17} {e['n']:>6}")
    for s in results["skipped"]:
        lines.append(f"skipped: {s['family']}{'.' + s['metric'] if s['metric'] else ''}: {s['reason']}")
    return "\n".join(lines)
