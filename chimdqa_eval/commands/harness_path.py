"""`chimdqa harness-path lm-eval|lighteval`: where the ChiMDQA tasks for a harness are, to pass to it.

    lm_eval --include_path "$(chimdqa harness-path lm-eval)" --tasks chimdqa ...
    lighteval endpoint litellm ... "chimdqa_factual|0" --custom-tasks "$(chimdqa harness-path lighteval)"

It checks the installed harness against the versions the tasks were written for, so a mismatch is one clear
error here rather than a failure deep inside the harness.
"""
from __future__ import annotations

import argparse

from chimdqa_eval.harness import HARNESSES, check_version, task_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("harness", choices=HARNESSES,
                        help="lm-eval: the folder for --include_path; lighteval: the file for --custom-tasks")


def run(args) -> int:
    check_version(args.harness)
    print(task_path(args.harness))
    return 0
