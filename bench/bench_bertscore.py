#!/usr/bin/env python3
"""BERTScore speed against bert_score's BERTScorer on the same model, same pairs, same run.

The model has bert-base's shape (BertConfig defaults: 12 layers, hidden 768, 512 positions) with random
weights and a character vocabulary built from the workload, saved locally; both scorers use layer 8 as
bert_score does for bert-base-chinese. Pairs are the open-ended (reference, prediction) pairs of a
ChiMDQA-shaped workload: ../shared/bench/make_workload.py's output when given or found, else generated the
same way. Timings exclude model loading, which is printed apart (ours includes hashing the weights).

  first run   both scorers on submission A; ours with an empty reference cache
  second run  submission B against the same references: bert_score again, ours with a new scorer object
              (as a new process would have) reading the references' embeddings from its disk cache

Usage: python bench/bench_bertscore.py [--workload FILE.jsonl] [--n 200]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED_WORKLOAD = ROOT.parent / "shared" / "bench" / "make_workload.py"


def open_pairs(path: Path, n: int) -> tuple[list[str], list[str]]:
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    records = [r for r in records if r.get("category") in ("open", "open_ended")][:n]
    return [r["prediction"] for r in records], [r["answer"] for r in records]


def bert_base_shaped(directory: Path, texts: list[str]) -> Path:
    """A randomly initialized bert-base (12 x 768) whose vocab has every character of the texts."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    sys.path.insert(0, str(ROOT / "tests"))
    from tiny_models import write_vocab

    directory.mkdir(parents=True)
    vocab = write_vocab(directory / "vocab.txt")
    known = set(vocab)
    extra = sorted({ch for text in texts for ch in text if not ch.isspace() and ch not in known})
    (directory / "vocab.txt").write_text("\n".join(vocab + extra) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(str(directory / "vocab.txt"), model_max_length=512)
    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=len(tokenizer))).eval()
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def timed(function, *args):
    """(value, wall seconds, CPU seconds of this process): the machine may be shared, and CPU time is
    the steadier measure when other processes compete for the cores."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = function(*args)
    return value, time.perf_counter() - wall, time.process_time() - cpu


def max_delta(ours, theirs) -> float:
    return max(max(abs(a - float(b)) for a, b in zip(o, t)) for o, t in zip(ours, theirs))


def compare(model_dir: Path, predictions: list[str], references: list[str], predictions_b: list[str]) -> list[str]:
    """Score submissions A then B against the same references with both scorers; one line per run.
    Set CHIMDQA_CACHE to an empty folder first, so that the first run starts cold."""
    import bert_score
    from chimdqa_eval.neural import BertScorer

    theirs, their_load, _ = timed(bert_score.BERTScorer, str(model_dir), 8)
    first, our_load, _ = timed(BertScorer, str(model_dir), 8)
    lines = [f"{len(predictions)} pairs; reference chars mean {sum(map(len, references)) / len(references):.0f}, "
             f"max {max(map(len, references))}; load: bert_score {their_load:.1f}s, ours {our_load:.1f}s"]
    expected_a, *their_a = timed(theirs.score, predictions, references)
    result_a, *our_a = timed(first.score, predictions, references)
    second = BertScorer(str(model_dir), 8)
    expected_b, *their_b = timed(theirs.score, predictions_b, references)
    result_b, *our_b = timed(second.score, predictions_b, references)
    for name, (their_wall, their_cpu), (our_wall, our_cpu), ours, expected in (
            ("BERTScore first run (cold cache)", their_a, our_a, result_a, expected_a),
            ("BERTScore second run (cached references)", their_b, our_b, result_b, expected_b)):
        delta = max_delta((ours.precision, ours.recall, ours.f1), expected)
        lines.append(f"{name}: wall bert_score {their_wall:.1f}s, ours {our_wall:.1f}s, speed-up "
                     f"{their_wall / our_wall:.2f}x | CPU bert_score {their_cpu:.1f}s, ours {our_cpu:.1f}s, speed-up "
                     f"{their_cpu / our_cpu:.2f}x | max |delta| P/R/F {delta:.2e}, truncated items {ours.truncated}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", type=Path, help="JSONL with category, answer, prediction")
    parser.add_argument("--n", type=int, default=200, help="number of open-ended pairs (default 200)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        os.environ["CHIMDQA_CACHE"] = str(work / "cache")  # a cold cache, thrown away afterwards
        workload = args.workload
        if workload is None:
            if not SHARED_WORKLOAD.is_file():
                print(f"no --workload given and {SHARED_WORKLOAD} is missing", file=sys.stderr)
                return 2
            workload = work / "workload.jsonl"
            subprocess.run([sys.executable, str(SHARED_WORKLOAD), str(workload)], check=True)
        predictions, references = open_pairs(workload, args.n)
        # Submission B: other texts of the same lengths (each prediction reversed), same references.
        predictions_b = [p[::-1] for p in predictions]
        model_dir = bert_base_shaped(work / "model", predictions + references + predictions_b)
        for line in compare(model_dir, predictions, references, predictions_b):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
