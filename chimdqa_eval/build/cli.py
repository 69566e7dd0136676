"""`chimdqa build STAGE ...`: one sub-subcommand per stage; see chimdqa_eval.build."""
from __future__ import annotations

import importlib
import sys

# stage -> (module, its add-arguments function, its run function, one-line help)
STAGES = {
    "generate": ("chimdqa_eval.build.generate", "add_arguments", "run", "QA pairs from PDFs with an LLM"),
    "screen": ("chimdqa_eval.build.screen", "add_arguments", "run",
               "multi-model confidence, truncation consistency and L1 balancing"),
    "review-export": ("chimdqa_eval.build.review", "add_export_arguments", "run_export",
                      "reviewer sheets (CSV and Label Studio tasks)"),
    "review-import": ("chimdqa_eval.build.review", "add_import_arguments", "run_import",
                      "read reviewers' verdicts; arbitration sheet; Cohen's kappa"),
    "release": ("chimdqa_eval.build.publish", "add_release_arguments", "run_release",
                "write the kept pairs as a release folder with provenance"),
    "funnel": ("chimdqa_eval.build.publish", "add_funnel_arguments", "run_funnel",
               "generated -> screened -> reviewed -> kept, per domain and type"),
}


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="stage", required=True, metavar="STAGE")
    for name, (module_name, add, run, help_text) in STAGES.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=help_text, description=help_text)
        getattr(module, add)(p)
        p.set_defaults(_stage_run=getattr(module, run))


def run(args) -> int:
    from chimdqa_eval.llm import ChatError

    try:
        return args._stage_run(args)
    except ChatError as err:  # a bad key, an unknown model or URL: every request would fail alike
        print(f"chimdqa build {args.stage}: error: {err}", file=sys.stderr)
        print("answers received before the error are cached; fix the setting and run the same command again",
              file=sys.stderr)
        return 1
