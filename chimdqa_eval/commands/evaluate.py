"""`chimdqa evaluate`: score a submission against the dataset and write results.json, items.jsonl and report.html.
The command parses its flags into an EvalConfig and calls chimdqa_eval.evaluation.evaluate, as every other
caller does.
"""
from __future__ import annotations

import argparse

from chimdqa_eval.aggregate import DEFAULT_RESAMPLES, DEFAULT_SEED
from chimdqa_eval.commands._options import add_endpoint_arguments
from chimdqa_eval.evaluation import CONFIGS, EvalConfig, prepare
from chimdqa_eval.factual import JUDGES
from chimdqa_eval.families import METRIC_LABELS
from chimdqa_eval.llm import format_plan
from chimdqa_eval.longdoc import DEFAULT_LENGTH_BUCKETS, DEFAULT_POSITION_BINS, length_labels
from chimdqa_eval.neural import DEFAULT_PERPLEXITY_MODEL
from chimdqa_eval.report.results import ITEMS_FILE, REPORT_FILE, check_writable
from chimdqa_eval.schema import QA_SPLITS


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
    parser.add_argument("--allow-partial", action="store_true",
                        help="score the covered questions when some have no prediction (coverage is recorded)")
    add_scoring_arguments(parser)
    parser.add_argument("--allow-download", action="store_true",
                        help="let Hugging Face models download (by default the Hub is used offline)")
    parser.add_argument("--rag-pair", metavar="RESULTS",
                        help="results.json of the same model in the other RAG condition, for the report's "
                             "with-vs-without-RAG plot")
    parser.add_argument("--document-pair", metavar="RESULTS",
                        help="results.json of the same model without the document (closed-book), or with it for a "
                             "closed-book run: the report shows the two side by side")


def add_scoring_arguments(parser: argparse.ArgumentParser, *, endpoint_prefix: str = "") -> None:
    """How answers are scored: the options `chimdqa evaluate` and `chimdqa run` share under the same names (the
    judge's endpoint options are also --judge-api-base etc., which is how `run` spells them beside the
    generating model's --api-base; `endpoint_prefix="judge-"` adds only that spelling)."""
    parser.add_argument("--metrics", nargs="+", metavar="NAME",
                        help="families (factual open_ended rag) and/or metric names to run (default: all)")
    judge = parser.add_argument_group("factual judge")
    judge.add_argument("--judge", choices=JUDGES, default="rule",
                       help="rule: offline and deterministic (default); llm: an OpenAI-compatible endpoint, which "
                            "then also extracts and checks the RAG claims; cascade: the rules where they are "
                            "certain, the LLM judge for the rest (and the LLM for the RAG claims)")
    judge.add_argument("--judge-prompt", metavar="FILE|NAME",
                       help="grader template of the LLM judge: a YAML file (version, system, user, verdict_regex, "
                            "verdicts, parse, repair) or a shipped one by name: zh-judge-1 (the default, ours), "
                            "chinese-simpleqa-official or simpleqa-official (the official graders' A/B/C rules, read "
                            "by their rule: the first letter decides, none is C); NAME:strict reads replies our way")
    add_endpoint_arguments(judge, prefix=endpoint_prefix, model_flag="--judge-model",
                           model_help="LLM judge model name (--judge llm)",
                           alias=None if endpoint_prefix else "judge-", dry_run=not endpoint_prefix)
    models = parser.add_argument_group("model-based metrics (local paths or Hub names)")
    models.add_argument("--tokenizer", default="jieba",
                        help="tokenizer of the lexical metrics and of the documents' lengths (default jieba)")
    models.add_argument("--bertscore-model", default="bert-base-chinese",
                        help="BERTScore's encoder (default bert-base-chinese)")
    models.add_argument("--bertscore-num-layers", type=int, metavar="N",
                        help="BERTScore's layer (default: the library's choice for bert-base-chinese, 8)")
    models.add_argument("--perplexity-model",
                        help="causal LM that scores perplexity when the predictions carry no logprobs (default "
                             f"{DEFAULT_PERPLEXITY_MODEL}); predictions with logprobs get perplexity from them, "
                             "without a model, and this option is then an error")
    models.add_argument("--nli-model", help="NLI model of the RAG claim checker")
    longdoc = parser.add_argument_group("breakdowns by document length and evidence position")
    longdoc.add_argument("--length-buckets", type=int, nargs="+", metavar="TOKENS", default=DEFAULT_LENGTH_BUCKETS,
                         help="bounds of the document-length buckets in --tokenizer tokens (default "
                              f"{' '.join(map(str, DEFAULT_LENGTH_BUCKETS))}: buckets "
                              f"{', '.join(length_labels(DEFAULT_LENGTH_BUCKETS))})")
    longdoc.add_argument("--position-bins", type=int, metavar="N", default=DEFAULT_POSITION_BINS,
                         help="equal parts of a document that the evidence page's place falls in (default "
                              f"{DEFAULT_POSITION_BINS}: thirds)")
    stats = parser.add_argument_group("statistics")
    stats.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES,
                       help="bootstrap resamples for the 95%% CIs (0: no CIs)")
    stats.add_argument("--seed", type=int, default=DEFAULT_SEED, help="bootstrap seed")


def run(args) -> int:
    prepared = prepare(args.predictions, EvalConfig.from_args(args), metadata=args.metadata, model=args.model)
    if args.dry_run:
        plan = prepared.llm_plan()
        if plan is None:
            print("no LLM calls: the rule judge and the offline metrics ask no LLM (--judge llm would)")
        else:
            print(format_plan(plan))
        return 0
    out = check_writable(args.out)  # before scoring: a bad --out must not cost a long LLM or model run
    scored = prepared.score()
    path = scored.write(out)
    print(summary_table(scored.results))
    print(f"\nwrote {out / ITEMS_FILE}, {out / REPORT_FILE} and {path}")
    return 0


def summary_table(results: dict) -> str:
    """A plain-text table of every overall score with its 95% CI, then what was skipped."""
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
    if "calibration" in results:
        cal = results["calibration"]
        lines.append(f"{'calibration':<11} {'ECE':<24} {cal['ece']:>8.2f}  {'(lower is better)':<17} {cal['n']:>6}")
    if "cascade" in results:
        lines.append(cascade_line(results["cascade"]))
    for s in results["skipped"]:
        lines.append(f"skipped: {s['family']}{'.' + s['metric'] if s['metric'] else ''}: {s['reason']}")
    return "\n".join(lines)


def cascade_line(cascade: dict) -> str:
    return (f"cascade: the rules decided {cascade['rule']} factual grades, the LLM judge {cascade['llm']} "
            f"({cascade['llm_calls_saved']} LLM calls saved)")
