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

from chimdqa_eval.generate.command import MODES, add_model_arguments, exit_code, generate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from chimdqa_eval.pipeline import add_scoring_arguments

    parser.add_argument("--mode", required=True, nargs="+", choices=MODES,
                        help="one or more of long, rag, closed-book")
    parser.add_argument("--out", required=True, metavar="DIR", help="one subfolder per mode")
    add_model_arguments(parser)
    # evaluate's options under their own names; the judge's endpoint as --judge-api-base etc. (--api-base is the
    # generating model's)
    add_scoring_arguments(parser, endpoint_prefix="judge-")


def run(args) -> int:
    from chimdqa_eval.evaluation import EvalConfig, evaluate
    from chimdqa_eval.pipeline import summary_table

    config = EvalConfig.from_args(args, endpoint_prefix="judge_")  # checked before anything is generated
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
            return exit_code(result)
        plain = next((written[m] for m in ("long", "closed-book") if m in written), None)
        rag_pair = str(plain) if mode == "rag" and plain else None
        scored = evaluate(result["path"], config.replace(rag_pair=rag_pair))
        written[mode] = scored.write(folder)
        print(summary_table(scored.results))
        print(f"\nwrote {folder}")
    if len(written) > 1:
        print("\n" + "\n".join(f"{mode}: {path}" for mode, path in written.items()))
    return 0
