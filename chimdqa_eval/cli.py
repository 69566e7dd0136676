"""`chimdqa` console script. Each subcommand lives in its own module, imported only when it runs, and
exposes ``add_arguments(parser)`` and ``run(args) -> int``."""
from __future__ import annotations

import argparse
import importlib
import sys

from chimdqa_eval.schema import InputError

# name -> (module, one-line help)
COMMANDS = {
    "evaluate": ("chimdqa_eval.pipeline", "score a predictions file against the dataset (the leaderboard path)"),
    "stats": ("chimdqa_eval.stats", "print the paper's Table 2 and Table 3 for a release"),
    "export-hub": ("chimdqa_eval.hub.dataset", "write a script-free Hugging Face Hub dataset folder"),
    "rag-metrics": ("chimdqa_eval.rag.interop", "RAGChecker metrics for a RAGChecker results JSON file"),
    "compare": ("chimdqa_eval.report.compare", "per-metric differences between two results, with p-values"),
    "export": ("chimdqa_eval.hub.exports", "model-index / .eval_results YAML from a results directory"),
    "leaderboard": ("chimdqa_eval.report.leaderboard", "one table and a static page over many results"),
    "generate": ("chimdqa_eval.generate.command", "answer the questions with a model into a predictions file"),
    "run": ("chimdqa_eval.generate.run_command", "generate then evaluate, in one or more modes"),
    "judge-audit": ("chimdqa_eval.factual.audit", "agreement, kappa and score swing of two factual judges (or "
                                                  "a judge and human labels) on one submission"),
    "queue": ("chimdqa_eval.queue.command", "the leaderboard's submission queue: submit, process, status"),
    "build": ("chimdqa_eval.build.cli", "make a release: generate, screen, review, release, funnel"),
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
