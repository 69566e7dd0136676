"""`chimdqa run`: generate, then evaluate, in one command, for one or more modes.

    chimdqa run --model qwen2.5-7b-instruct --api-base http://localhost:8000/v1 --mode long rag --out runs/qwen

Each mode writes runs/qwen/<mode>/predictions.jsonl (+ .meta.json) and evaluates it into the same folder
(results.json, items.jsonl, report.html). When a mode with retrieval (rag) and one without (long or
closed-book) are both asked, the rag run is evaluated with --rag-pair pointing at the one without, so its
report draws the paper's with-vs-without-RAG figures; a closed-book run is the long and rag runs' --document-pair,
the no-document baseline beside them (evaluation.run_pairs).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from chimdqa_eval.commands.evaluate import add_scoring_arguments, summary_table
from chimdqa_eval.commands.generate import add_model_arguments, config_of
from chimdqa_eval.evaluation import PAIRING_ORDER, EvalConfig, evaluate, run_pairs
from chimdqa_eval.generate.config import MODES
from chimdqa_eval.generate.generation import exit_code, generate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mode", required=True, nargs="+", choices=MODES,
                        help="one or more of long, rag, closed-book; the runs are paired in the reports (rag with "
                             "long: with vs without RAG; closed-book with both: without document)")
    parser.add_argument("--out", required=True, metavar="DIR", help="one subfolder per mode")
    add_model_arguments(parser)
    # evaluate's options under their own names; the judge's endpoint as --judge-api-base etc. (--api-base is the
    # generating model's)
    add_scoring_arguments(parser, endpoint_prefix="judge-")


def run(args) -> int:
    config = EvalConfig.from_args(args, endpoint_prefix="judge_")  # checked before anything is generated
    generation = config_of(args)
    modes = list(dict.fromkeys(args.mode))
    modes.sort(key=PAIRING_ORDER.index)  # each run is paired with those before it (run_pairs)
    out = Path(args.out)
    written = {}
    for mode in modes:
        folder = out / mode
        result = generate(generation, mode, folder / "predictions.jsonl")
        if result["dry_run"]:
            continue
        if not result["complete"]:
            print(f"chimdqa run: {mode}: not every question was answered; run the same command again "
                  "(answers received are cached) before it is evaluated")
            return exit_code(result)
        scored = evaluate(result["path"], config.replace(**run_pairs(mode, written)))
        written[mode] = scored.write(folder)
        print(summary_table(scored.results))
        print(f"\nwrote {folder}")
    if len(written) > 1:
        print("\n" + "\n".join(f"{mode}: {path}" for mode, path in written.items()))
    return 0
