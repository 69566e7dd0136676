"""`chimdqa import-samples lm-eval|lighteval PATH --out preds.jsonl`: a harness run's per-sample log of the
ChiMDQA tasks as a submission (predictions + metadata) for `chimdqa evaluate` and `chimdqa queue submit`.

    chimdqa import-samples lm-eval runs/lm-eval --out preds.jsonl          # lm_eval ... --log_samples
    chimdqa import-samples lighteval runs/lighteval --out preds.jsonl      # lighteval ... --save-details
    chimdqa evaluate --predictions preds.jsonl --out results/
"""
from __future__ import annotations

import argparse

from chimdqa_eval.harness import HARNESSES, samples


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("harness", choices=HARNESSES, help="the harness that wrote the log")
    parser.add_argument("path", metavar="PATH",
                        help="lm-eval: its --output_path folder (one run) or a results_<time>.json; lighteval: its "
                             "--output-dir (one run) or a details folder")
    parser.add_argument("--out", required=True, metavar="PREDICTIONS.jsonl",
                        help="predictions file; its metadata goes to <stem>.meta.json beside it")
    parser.add_argument("--benchmark", choices=samples.BENCHMARKS,
                        help="which answers to write when the run has both ChiMDQA and Chinese SimpleQA tasks")
    parser.add_argument("--model", help="model name in the metadata (default: the harness's)")


def run(args) -> int:
    read = samples.read_lm_eval if args.harness == "lm-eval" else samples.read_lighteval
    harvest = read(args.path)
    written = samples.write_submission(harvest, args.out, args.benchmark, args.model)
    generation = written["metadata"]["generation"]
    config = generation["dataset"]["config"]
    print(f"wrote {written['n']} predictions of {written['metadata']['model']} ({args.harness} "
          f"{harvest.version or 'version unknown'}, tasks {', '.join(harvest.tasks)}) to {written['path']} and "
          f"{written['metadata_path']}")
    data = " --data-files CHINESE_SIMPLEQA.jsonl" if config == "chinese_simpleqa" else ""
    print(f"score them with: chimdqa evaluate --predictions {written['path']} --config {config}{data} --out RESULTS")
    return 0
