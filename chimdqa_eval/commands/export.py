"""`chimdqa export DIR --format model-index|eval-results`: the Hub's model-card and .eval_results YAML of a run."""
from __future__ import annotations

import sys
from pathlib import Path

from chimdqa_eval.hub.exports import (
    check_dataset_names,
    eval_results,
    eval_results_filename,
    model_index,
    to_yaml,
    without_value,
)
from chimdqa_eval.report.results import read_results


def add_arguments(parser) -> None:
    parser.add_argument("results", metavar="DIR", help="results folder (or its results.json)")
    parser.add_argument("--format", required=True, choices=("model-index", "eval-results"))
    parser.add_argument("--dataset-id", required=True, metavar="ORG/NAME",
                        help="the Hub dataset the results refer to (where `chimdqa export-hub` was uploaded)")
    parser.add_argument("--out", metavar="PATH", help="model-index: a YAML file; eval-results: the model repo "
                        "folder (the file goes to PATH/.eval_results/). Default: print to stdout")


def run(args) -> int:
    results = check_dataset_names(read_results(args.results))  # checked against results.schema.json
    for family, metric in without_value(results):
        print(f"{results['_path']}: {family} {metric} has no value (null) and is left out (the Hub needs a number)",
              file=sys.stderr)
    if args.format == "model-index":
        text = to_yaml(model_index(results, args.dataset_id))
        target = Path(args.out) if args.out else None
    else:
        text = to_yaml(eval_results(results, args.dataset_id))
        target = Path(args.out) / ".eval_results" / eval_results_filename(results) if args.out else None
    if target is None:
        sys.stdout.write(text)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target}")
    return 0
