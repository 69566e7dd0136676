"""`chimdqa` console script. Each subcommand lives in its own module, imported only when it runs, and
exposes ``add_arguments(parser)`` and ``run(args) -> int``."""
from __future__ import annotations

import argparse
import importlib
import sys

from chimdqa_eval.schema import InputError

# name -> (module, one-line help)
COMMANDS = {
    "evaluate": ("chimdqa_eval.commands.evaluate",
                 "score a predictions file against the dataset (the leaderboard path)"),
    "stats": ("chimdqa_eval.commands.stats", "print the paper's Table 2 and Table 3 for a release"),
    "export-hub": ("chimdqa_eval.commands.export_hub", "write a script-free Hugging Face Hub dataset folder"),
    "rag-metrics": ("chimdqa_eval.commands.rag_metrics", "RAGChecker metrics for a RAGChecker results JSON file"),
    "compare": ("chimdqa_eval.commands.compare", "per-metric differences between two results, with p-values"),
    "export": ("chimdqa_eval.commands.export", "model-index / .eval_results YAML from a results directory"),
    "leaderboard": ("chimdqa_eval.commands.leaderboard", "one table and a static page over many results"),
    "generate": ("chimdqa_eval.commands.generate", "answer the questions with a model into a predictions file"),
    "run": ("chimdqa_eval.commands.run", "generate then evaluate, in one or more modes"),
    "judge-audit": ("chimdqa_eval.commands.judge_audit", "agreement, kappa and score swing of two factual judges (or "
                                                  "a judge and human labels) on one submission"),
    "judge-rules": ("chimdqa_eval.commands.judge_rules",
                    "the rule judge's decision lists; with --labels how often each rule fires and is right"),
    "queue": ("chimdqa_eval.commands.queue", "the leaderboard's submission queue: submit, process, status"),
    "build": ("chimdqa_eval.commands.build", "make a release: generate, screen, review, release, funnel"),
    "harness-path": ("chimdqa_eval.commands.harness_path", "where the lm-eval / lighteval ChiMDQA tasks are"),
    "import-samples": ("chimdqa_eval.commands.import_samples", "an lm-eval or lighteval sample log as a submission"),
}


def build_parser(argv) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chimdqa", description="ChiMDQA evaluation toolkit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = next((a for a in argv if not a.startswith("-")), None)
    for name, (module_name, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == wanted:  # import only the module that will run
            module = importlib.import_module(module_name)
            module.add_arguments(p)
            p.set_defaults(_run=module.run)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv).parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except InputError as err:
        print(f"chimdqa {args.command}: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # e.g. an output path that is a file, a folder that cannot be created, a full disk
        where = f"{err.filename}: " if err.filename else ""
        print(f"chimdqa {args.command}: error: {where}{err.strerror or err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
