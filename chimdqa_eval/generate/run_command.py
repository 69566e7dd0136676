"""`chimdqa run`: generate, then evaluate, in one command, for one or more modes.

    chimdqa run --model qwen2.5-7b-instruct --api-base http://localhost:8000/v1 --mode long rag --out runs/qwen

Each mode writes runs/qwen/<mode>/predictions.jsonl (+ .meta.json) and evaluates it into the same folder
(results.json, items.jsonl, report.html). When a mode with retrieval (rag) and one without (long or
closed-book) are both asked, the rag run is evaluated with --rag-pair pointing at the one without, so its
report draws the paper's with-vs-without-RAG figures.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from chimdqa_eval.factual import JUDGES
from chimdqa_eval.generate.command import MODES, add_model_arguments, generate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mode", required=True, nargs="+", choices=MODES,
                        help="one or more of long, rag, closed-book")
    parser.add_argument("--out", required=True, metavar="DIR", help="one subfolder per mode")
    add_model_arguments(parser)
    ev = parser.add_argument_group("evaluation (as in chimdqa evaluate)")
    ev.add_argument("--judge", default="rule", choices=JUDGES, help="factual judge (default rule)")
    ev.add_argument("--judge-model", help="LLM judge model (--judge llm)")
    ev.add_argument("--judge-api-base", nargs="+", metavar="URL",
                    help="the LLM judge's endpoint(s) (--judge llm)")
    ev.add_argument("--metrics", nargs="+", metavar="NAME", help="families and/or metrics (default: all)")
    ev.add_argument("--resamples", type=int, help="bootstrap resamples for the 95%% CIs (default 1000)")
    ev.add_argument("--seed", type=int, help="bootstrap seed")
    for name in ("--bertscore-model", "--perplexity-model", "--nli-model"):
        ev.add_argument(name, metavar="NAME_OR_PATH", help=f"as {name} of chimdqa evaluate")


def evaluate_argv(args, predictions: Path, out: Path, rag_pair: Path | None) -> list[str]:
    """The `chimdqa evaluate` command line for one mode's predictions."""
    argv = ["--predictions", str(predictions), "--out", str(out), "--config", args.config, "--split", args.split,
            "--judge", args.judge]
    pairs = {"--data-dir": args.data_dir, "--judge-model": args.judge_model,
             "--resamples": args.resamples, "--seed": args.seed, "--bertscore-model": args.bertscore_model,
             "--perplexity-model": args.perplexity_model, "--nli-model": args.nli_model,
             "--rag-pair": rag_pair}
    for flag, value in pairs.items():
        if value is not None:
            argv += [flag, str(value)]
    if args.judge_api_base:
        argv += ["--api-base", *args.judge_api_base, "--api-key-env", args.api_key_env]
    for flag, values in (("--data-files", args.data_files), ("--metrics", args.metrics)):
        if values:
            argv += [flag, *map(str, values)]
    if args.allow_download:
        argv.append("--allow-download")
    return argv


def run(args) -> int:
    from chimdqa_eval import cli

    modes = list(dict.fromkeys(args.mode))
    # Without retrieval first, so the rag run can be paired with its results.
    modes.sort(key=lambda m: m == "rag")
    out = Path(args.out)
    written = {}
    for mode in modes:
        folder = out / mode
        result = generate(args, mode, folder / "predictions.jsonl")
        if result["dry_run"]:
            continue
        if not result["complete"]:
            print(f"chimdqa run: {mode}: not every question was answered; run the same command again "
                  "(answers received are cached) before it is evaluated")
            return 1
        plain = next((written[m] for m in ("long", "closed-book") if m in written), None)
        rag_pair = plain if mode == "rag" else None
        evaluate = cli.build_parser(["evaluate"]).parse_args(["evaluate", *evaluate_argv(args, result["path"], folder,
                                                                                           rag_pair)])
        code = evaluate._run(evaluate)
        if code:
            return code
        written[mode] = folder / "results.json"
    if len(written) > 1:
        print("\n" + "\n".join(f"{mode}: {path}" for mode, path in written.items()))
    return 0
