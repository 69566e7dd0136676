"""`chimdqa build STAGE ...`: make a release the way the paper made it, one sub-subcommand per stage (see
chimdqa_eval.build): generate, screen, review-export, review-import, release, funnel."""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from chimdqa_eval.build import work as W
from chimdqa_eval.build.endpoints import check_cap, parse_judge, probe_if_needed
from chimdqa_eval.build.generate import QUESTION_TYPES, generate, generation_requests, level_targets, prepare_documents
from chimdqa_eval.build.publish import render_funnel, write_release
from chimdqa_eval.build.review import ARBITER, review_export, review_import
from chimdqa_eval.build.screen import ScreenSettings, check_judges, screen, screen_plan
from chimdqa_eval.commands._options import add_endpoint_arguments
from chimdqa_eval.llm import ChatError, LLMEndpoint, endpoint_from_args, format_plan
from chimdqa_eval.schema import InputError

# stage -> (its add-arguments function, its run function, one-line help); filled in at the end of the module
STAGES: dict = {}


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="stage", required=True, metavar="STAGE")
    for name, (add, run_stage, help_text) in STAGES.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        add(p)
        p.set_defaults(_stage_run=run_stage)


def run(args) -> int:
    try:
        return args._stage_run(args)
    except ChatError as err:  # a bad key, an unknown model or URL: every request would fail alike
        print(f"chimdqa build {args.stage}: error: {err}", file=sys.stderr)
        print("answers received before the error are cached; fix the setting and run the same command again",
              file=sys.stderr)
        return 1


# -- the endpoints a stage asks ---------------------------------------------------------------------------
def add_llm_arguments(parser, *, model_flag: str | None, temperature: float) -> None:
    """The shared endpoint options, with this stage's default sampling temperature."""
    add_endpoint_arguments(parser, model_flag=model_flag, model_help="generator model name at the endpoint")
    parser.add_argument("--temperature", type=float, default=temperature, metavar="T",
                        help=f"sampling temperature (default: {temperature})")


def _in_work(endpoint: LLMEndpoint, args, work: Path) -> LLMEndpoint:
    return endpoint if args.llm_cache else replace(endpoint, cache_path=Path(work) / W.LLM_CACHE)


def generator_endpoint(args, work: Path) -> LLMEndpoint:
    return _in_work(endpoint_from_args(args, model_attr="model", needed_for="build generate"), args, work)


def judge_endpoints(args, work: Path) -> dict:
    """judge name (its model) -> LLMEndpoint, one per --judges entry, sharing the other endpoint options."""
    endpoints = {}
    for spec in args.judges:
        model, bases = parse_judge(spec, args.api_base)
        if model in endpoints:
            raise InputError(f"--judges: model {model} is given twice")
        one = argparse.Namespace(**{**vars(args), "judge_model": model, "api_base": bases})
        try:
            endpoints[model] = _in_work(endpoint_from_args(one, needed_for="--judges"), args, work)
        except InputError as err:
            raise InputError(f"--judges {spec}: {err}") from None
    return endpoints


def dry_run(plan: dict) -> int:
    print(format_plan(plan))
    return 0


# -- generate ------------------------------------------------------------------------------------------------
def add_generate_arguments(parser) -> None:
    parser.add_argument("docs_dir", metavar="DOCS_DIR", help="folder with documents.jsonl and the PDFs it names")
    parser.add_argument("--out", required=True, metavar="WORK", help="the work folder (created if missing)")
    parser.add_argument("--l1", type=int, default=3, metavar="N", help="L1 pairs per document and type (default: 3)")
    parser.add_argument("--l2", type=int, default=2, metavar="N", help="L2 pairs per document and type (default: 2)")
    parser.add_argument("--types", nargs="+", choices=QUESTION_TYPES, default=list(QUESTION_TYPES),
                        metavar="TYPE", help="question types to generate (default: all ten)")
    parser.add_argument("--type-targets", nargs="+", default=(), metavar="TYPE=L1,L2",
                        help="per-type L1,L2 targets overriding --l1/--l2, e.g. summarization=1,1 retrieval=4,2")
    parser.add_argument("--max-context-chars", type=int, default=24000, metavar="N",
                        help="document text per request; longer documents are split into segments (default: 24000)")
    parser.add_argument("--dedup-threshold", type=float, default=0.8, metavar="J",
                        help="bigram Jaccard at which a question is a near duplicate (default: 0.8)")
    # varied questions; the cache still makes a re-run repeat them
    add_llm_arguments(parser, model_flag="--model", temperature=0.7)


def run_generate(args) -> int:
    if args.l1 < 0 or args.l2 < 0:
        raise InputError("--l1 and --l2 must be >= 0")
    targets = level_targets(args.types, args.l1, args.l2, args.type_targets)
    work = Path(args.out)
    endpoint = generator_endpoint(args, work)
    work.mkdir(parents=True, exist_ok=True)
    documents, pages = prepare_documents(args.docs_dir, work)
    with endpoint.client() as client:
        requests = generation_requests(documents, pages, targets, args.max_context_chars)
        if args.dry_run:
            return dry_run({"build-generate": {"calls": client.pending(requests), "exact": True}})
        probe_if_needed(client, requests)
        record = generate(work, documents, pages, client, targets=targets, max_context_chars=args.max_context_chars,
                          dedup_threshold=args.dedup_threshold, source=args.docs_dir)
    counts = record["counts"]
    print(f"{work}: {counts['generated']} pairs from {counts['documents']} documents "
          f"({counts['near_duplicates']} near duplicates and {counts['invalid']} citing missing pages marked, "
          f"{len(record['shortfalls'])} requests short of their targets)")
    check_cap({"generator": client}, "the generation")
    for failure in record["failed"]:
        print(f"  failed: {failure['doc_id']} {failure['question_type']}: {failure['error']}")
    if record["failed"]:
        print(f"{len(record['failed'])} requests failed; run the same command again to retry them "
              "(answers already received are cached)")
        return 1
    return 0


# -- screen --------------------------------------------------------------------------------------------------
def add_screen_arguments(parser) -> None:
    d = ScreenSettings()
    parser.add_argument("work", metavar="WORK", help="the work folder of `build generate`")
    parser.add_argument("--judges", nargs="+", required=True, metavar="MODEL@URL",
                        help="the judge models, each MODEL@URL (or MODEL with --api-base)")
    parser.add_argument("--confidence-threshold", type=float, default=d.confidence_threshold,
                        metavar="C", help="a judge votes for a pair when its confidence is above this "
                                          f"(default: {d.confidence_threshold})")
    parser.add_argument("--min-votes", metavar="N", type=int, default=d.min_votes,
                        help=f"judges that must vote for a pair (default: {d.min_votes})")
    parser.add_argument("--truncation-keep", metavar="SHARE", type=float, default=d.truncation_keep,
                        help="share of the context's pages each truncated reading keeps "
                             f"(default: {d.truncation_keep})")
    parser.add_argument("--min-agreement", metavar="SHARE", type=float, default=d.min_agreement,
                        help=f"share of truncated answers that must agree (default: {d.min_agreement})")
    parser.add_argument("--open-agreement", metavar="F", type=float, default=d.open_agreement,
                        help=f"ROUGE-L F at which open-ended answers agree (default: {d.open_agreement})")
    parser.add_argument("--max-l1-share", metavar="SHARE", type=float, default=d.max_l1_share,
                        help=f"largest L1 share (default: {d.max_l1_share})")
    parser.add_argument("--balance-within", choices=("domain", "all"), default=d.balance_within,
                        help="hold the L1 share within each domain (default) or over all pairs together")
    parser.add_argument("--max-context-chars", metavar="N", type=int, default=d.max_context_chars,
                        help=f"document text a judge reads (default: {d.max_context_chars})")
    add_llm_arguments(parser, model_flag=None, temperature=0.0)


def run_screen(args) -> int:
    work = W.work_dir(args.work)
    failed = W.stage_record(work, "generate").get("failed")
    if failed:
        print(f"note: {len(failed)} generation requests failed; their pairs are missing (re-run `build generate`)")
    settings = ScreenSettings(args.confidence_threshold, args.min_votes, args.truncation_keep, args.min_agreement,
                              args.open_agreement, args.max_l1_share, args.balance_within, args.max_context_chars)
    endpoints = judge_endpoints(args, work)  # --api-base: the API bases of judges named without @URL
    check_judges(endpoints, settings)
    judges = {name: endpoint.client() for name, endpoint in endpoints.items()}
    try:
        plan = screen_plan(work, judges, settings)
        if args.dry_run:
            return dry_run(plan)
        for name, client in judges.items():
            if plan[f"build-confidence {name}"]["calls"] or plan[f"build-truncation {name}"]["calls"]:
                client.probe()
        record = screen(work, judges, settings)
    finally:
        for client in judges.values():
            client.close()
    c = record["counts"]
    print(f"{work}: screened {c['screened']} pairs: {c['kept']} kept, {c['dropped']} dropped (confidence "
          f"{c['dropped_confidence']}, truncation {c['dropped_truncation']}, balance {c['dropped_balance']}), "
          f"{c['errors']} errors")
    check_cap(judges, "the screen")
    if c["errors"]:
        print("some judges gave no answer; run the same command again to retry them (answers received are cached)")
        return 1
    return 0


# -- review --------------------------------------------------------------------------------------------------
def add_export_arguments(parser) -> None:
    parser.add_argument("work", metavar="WORK", help="the work folder, after `build screen`")
    parser.add_argument("--reviewers", type=int, default=2, metavar="N", help="number of reviewers (default: 2)")
    parser.add_argument("--names", nargs="+", metavar="NAME", help="reviewer names (default: reviewer-1 ...)")
    parser.add_argument("--force", action="store_true", help="overwrite existing sheets (they may hold verdicts)")


def run_export(args) -> int:
    names = args.names or [f"reviewer-{i}" for i in range(1, args.reviewers + 1)]
    if len(names) < 2 or len(set(names)) != len(names) or ARBITER in names:
        raise InputError(f"reviewers: need at least two distinct names other than {ARBITER!r}, got {names}")
    if any(not n.replace("-", "").replace("_", "").isalnum() for n in names):
        raise InputError(f"--names: reviewer names become file names; use letters, digits, - and _ ({names})")
    record = review_export(args.work, names, args.force)
    print(f"{record['counts']['pairs']} pairs for {len(names)} reviewers in {Path(args.work) / W.REVIEW_DIR}")
    for path in record["written"]:
        print(f"  wrote {path}")
    if len(record["written"]) < 2 * len(names):
        print("  existing sheets were kept (--force overwrites them)")
    return 0


def add_import_arguments(parser) -> None:
    parser.add_argument("work", metavar="WORK", help="the work folder, after `build review-export`")
    parser.add_argument("files", nargs="+", metavar="FILE", help="filled CSV sheets or Label Studio JSON exports")


def run_import(args) -> int:
    record = review_import(args.work, args.files)
    c = record["counts"]
    print(f"decisions: {c['accept']} accept, {c['edit']} edit, {c['reject']} reject, {c['pending']} pending, "
          f"{c['disagreement']} undecided")
    for k in record["kappa"]:
        kappa = "undefined" if k["kappa"] is None else f"{k['kappa']:.3f}"
        share = "-" if k["agreement"] is None else f"{k['agreement']:.1f}%"
        print(f"Cohen's kappa {k['reviewers'][0]} vs {k['reviewers'][1]}: {kappa} over {k['n']} pairs "
              f"(raw agreement {share})")
    if record["stale"]:
        print(f"{len(record['stale'])} verdicts were given on an earlier text of their pair (generated again since) "
              f"and no longer count, e.g. {record['stale'][0][1]} on {record['stale'][0][0]}; export the sheets "
              "again (`chimdqa build review-export --force`)")
    sheet = Path(args.work) / W.REVIEW_DIR / "arbitration.csv"
    if record["disputed"]:
        print(_disagreements_line(len(record["disputed"]), len(record["awaiting_arbiter"]), sheet))
    if record["arbitration_sheet_kept"]:
        print(f"{sheet} holds verdicts not imported yet ({record['arbitration_sheet_kept'][0]} ...); it was left "
              "as it is: import it")
    return 0


def _disagreements_line(disputed: int, awaiting: int, sheet: Path) -> str:
    """How many pairs the reviewers disagree on, how many of them the arbiter decided, and where the rest wait."""
    head = f"{disputed} disagreement{'s' if disputed != 1 else ''} between the reviewers, "
    if not awaiting:
        return head + f"all decided by the {ARBITER}"
    decided = f"{disputed - awaiting} decided by the {ARBITER}, " if awaiting < disputed else ""
    return head + decided + f"{awaiting} awaiting the {ARBITER} in {sheet} (and .labelstudio.json)"


# -- release and funnel --------------------------------------------------------------------------------------
def add_release_arguments(parser) -> None:
    parser.add_argument("work", metavar="WORK", help="the work folder")
    parser.add_argument("--out", required=True, metavar="RELEASE", help="the release folder to write")
    parser.add_argument("--skip-review", action="store_true",
                        help="release the screened pairs without human review (recorded in build.json)")


def run_release(args) -> int:
    record = write_release(args.work, args.out, args.skip_review)
    c = record["counts"]
    print(f"wrote {args.out}: {c['released']} pairs ({c['edited']} edited by reviewers) over {c['documents']} "
          f"documents, fingerprint {record['fingerprint']}")
    return 0


def add_funnel_arguments(parser) -> None:
    parser.add_argument("work", metavar="WORK", help="the work folder")
    parser.add_argument("--cells", action="store_true", help="also one row per domain and question type")


def run_funnel(args) -> int:
    print(render_funnel(args.work, args.cells))
    return 0


STAGES.update({
    "generate": (add_generate_arguments, run_generate, "QA pairs from PDFs with an LLM"),
    "screen": (add_screen_arguments, run_screen, "multi-model confidence, truncation consistency and L1 balancing"),
    "review-export": (add_export_arguments, run_export, "reviewer sheets (CSV and Label Studio tasks)"),
    "review-import": (add_import_arguments, run_import, "read reviewers' verdicts; arbitration sheet; Cohen's kappa"),
    "release": (add_release_arguments, run_release, "write the kept pairs as a release folder with provenance"),
    "funnel": (add_funnel_arguments, run_funnel, "generated -> screened -> reviewed -> kept, per domain and type"),
})
