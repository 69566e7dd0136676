"""`chimdqa judge-rules [--labels FILE] [--simpleqa PATH]`: the rule judge's decision lists in the order it tries
them (reason, grade, certainty per rule) and, given labelled answers, how often each rule decided and how often it
was right (chimdqa_eval.factual.rulebook computes it; this module parses the flags and prints)."""
from __future__ import annotations

from chimdqa_eval.factual.rulebook import format_rulebook, load_labels, rule_figures


def add_arguments(parser) -> None:
    parser.add_argument("--labels", metavar="FILE",
                        help="labelled answers (jsonl: question, reference, answer, label CO/NA/IN), e.g. "
                             "data/judge_validation/validation.jsonl: adds how often each rule fires and is right")
    parser.add_argument("--simpleqa", metavar="PATH",
                        help="the Chinese SimpleQA jsonl that --labels records of source simpleqa name by "
                             "simpleqa_id (simpleqa_heldout.jsonl)")


def run(args) -> int:
    figures = rule_figures(load_labels(args.labels, args.simpleqa)) if args.labels else None
    print(format_rulebook(figures))
    return 0
