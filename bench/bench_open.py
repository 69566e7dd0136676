#!/usr/bin/env python3
"""Benchmark of chimdqa_open against the reference implementations, measured in the same run.

  python bench/bench_open.py [--workload W.jsonl] [--reference-sample N] [--bertscore-pairs N]

Workload: a JSONL of {question_type | category, answer, prediction} records such as
../shared/bench/make_workload.py writes (used when present, generated into a temporary file); otherwise one
generated here with the paper's reference lengths (Table 2: mean 162 characters, max 4,726) from the sentences
of data/sample. Only the open-ended records are scored.

1. Lexical metrics on identical jieba token lists: ROUGE-L + METEOR + CIDEr-D vs rouge_score + NLTK (no WordNet)
   + pycocoevalcap. The reference side runs on every pair unless --reference-sample is given (then it is
   extrapolated, and the output says so).
2. End to end with jieba: compute_open (tokenization included) with an empty token cache ("cold"), and again
   in a fresh memory with the references' tokens on disk ("cached references"), vs jieba + the reference
   implementations. jieba's dictionary is loaded beforehand for both sides.
3. BERTScore vs bert_score's BERTScorer: bench/bench_bertscore.py (a bert-base-shaped model with random weights,
   layer 8; a first run and a second submission against the same references) on the first --bertscore-pairs
   open-ended pairs of the same workload.
Every ratio is reference time / our time (ours: the best of 3 runs, which on a shared machine filters out bursts
from other processes; the reference implementations run once); max |delta| compares per-item scores before
scaling.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SHARED_WORKLOAD = REPO.parent / "shared" / "bench" / "make_workload.py"
OPEN_TYPES = ("inference", "expansion", "summarization", "suggestion", "generation")
REPEATS = 3


def fresh_stems():
    """Forget METEOR's memoized Porter stems, as a new process would (imports stay loaded, on both sides)."""
    from chimdqa_eval import lexical

    lexical.porter_stem.cache_clear()
    lexical.porter_stem()


def generated_workload(path: Path, n: int = 3029, seed: int = 0) -> None:
    """Open-ended pairs with Table 2's reference lengths, from the sentences of the sample release."""
    rng = random.Random(seed)
    pool = []
    for file in sorted((REPO / "data" / "sample" / "qa").glob("*.jsonl")):
        for line in file.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            pool.append(record["question"].rstrip("？?") + "，" + record["answer"] + "。")

    def text(length):
        out = ""
        while len(out) < length:
            out += rng.choice(pool)
        return out[:length]

    with open(path, "w", encoding="utf-8") as out:
        for i in range(n):
            sigma = 1.0
            length = int(min(4726, max(2, rng.lognormvariate(math.log(162) - sigma ** 2 / 2, sigma))))
            length = 4726 if i == 0 else length  # the longest reference answer of the paper
            answer = text(length)
            kept = "".join(c for c in answer if rng.random() > 0.15)
            prediction = kept + text(int(length * rng.uniform(0, 0.6)))
            record = {"id": f"gen-{i}", "category": "open_ended", "question_type": OPEN_TYPES[i % 5],
                      "answer": answer, "prediction": prediction}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


def load_pairs(path: Path):
    predictions, references = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("category") in ("open", "open_ended") or record.get("question_type") in OPEN_TYPES:
            predictions.append(record["prediction"])
            references.append(record["answer"])
    return predictions, references


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the tokenizer's worker processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(function, *args, **kwargs):
    """(value, np.array([wall seconds, CPU seconds])); CPU time is less disturbed by other processes."""
    wall, cpu = time.perf_counter(), cpu_seconds()
    value = function(*args, **kwargs)
    return value, np.array([time.perf_counter() - wall, cpu_seconds() - cpu])


def best_of(repeats, function, *args, setup=lambda: None, **kwargs):
    """(value, fastest wall and CPU times of `repeats` calls), `setup` run untimed before each: ours take
    seconds, so the minimum filters out bursts from other processes on a shared machine."""
    best = np.array([math.inf, math.inf])
    for _ in range(repeats):
        setup()
        value, seconds = timed(function, *args, **kwargs)
        best = np.minimum(best, seconds)
    return value, best


def compare(theirs, ours) -> str:
    return (f"wall {theirs[0]:7.2f} s / {ours[0]:6.3f} s = {theirs[0] / ours[0]:6.1f}x   "
            f"CPU {theirs[1]:7.2f} s / {ours[1]:6.3f} s = {theirs[1] / ours[1]:6.1f}x")


def reference_lexical(preds, refs):
    """Per-item scores and seconds of rouge_score, NLTK and pycocoevalcap on the given token lists."""
    from nltk.translate.meteor_score import meteor_score
    from pycocoevalcap.cider.cider import Cider
    from rouge_score import rouge_scorer

    class NoWordNet:
        def synsets(self, word):
            return []

    class Tokens:  # hands rouge_score our token lists
        def tokenize(self, index):
            return lookup[index]

    lookup = {}
    for i, (p, r) in enumerate(zip(preds, refs)):
        lookup[("p", i)], lookup[("r", i)] = p, r
    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=Tokens())
    rouge, t_rouge = timed(lambda: [scorer.score(("r", i), ("p", i))["rougeL"].fmeasure for i in range(len(preds))])
    wordnet = NoWordNet()
    meteor, t_meteor = timed(lambda: [meteor_score([r], p, wordnet=wordnet) for p, r in zip(preds, refs)])
    cider, t_cider = timed(lambda: list(Cider().compute_score({i: [" ".join(r)] for i, r in enumerate(refs)},
                                                              {i: [" ".join(p)] for i, p in enumerate(preds)})[1]))
    return {"rouge_l": rouge, "meteor": meteor, "cider": cider}, {"rouge_l": t_rouge, "meteor": t_meteor,
                                                                 "cider": t_cider}


def bench_lexical(predictions, references, sample):
    from chimdqa_eval import lexical
    from chimdqa_eval.text import tokenize

    (ref_tokens, t_tok_refs) = timed(lambda: [tokenize(r) for r in references])
    (pred_tokens, t_tok_preds) = timed(lambda: [tokenize(p) for p in predictions])
    print(f"jieba: references {t_tok_refs[0]:.2f} s, predictions {t_tok_preds[0]:.2f} s "
          f"({sum(map(len, ref_tokens))} + {sum(map(len, pred_tokens))} tokens)")
    ours, ours_t = {}, {}
    for name, function in (("rouge_l", lexical.rouge_l), ("meteor", lexical.meteor), ("cider", lexical.cider_d)):
        ours[name], ours_t[name] = best_of(REPEATS, function, pred_tokens, ref_tokens, setup=fresh_stems)

    n = len(predictions)
    index = list(range(n)) if sample is None else sorted(random.Random(0).sample(range(n), min(sample, n)))
    if sample is None:
        theirs, theirs_t = reference_lexical(pred_tokens, ref_tokens)
        compared = ours
        scale = 1.0
    else:
        # CIDEr's document frequencies depend on the whole corpus: compare it on the subsample by itself.
        sub_p, sub_r = [pred_tokens[i] for i in index], [ref_tokens[i] for i in index]
        theirs, theirs_t = reference_lexical(sub_p, sub_r)
        compared = {"rouge_l": [ours["rouge_l"][i] for i in index], "meteor": [ours["meteor"][i] for i in index],
                    "cider": lexical.cider_d(sub_p, sub_r)}
        scale = n / len(index)
        print(f"NOTE: reference implementations measured on {len(index)} of {n} pairs and their time "
              f"extrapolated x{scale:.2f}")
    print(f"\n[1] lexical metrics on identical token lists, {n} pairs (ours: best of {REPEATS})")
    for name in ("rouge_l", "meteor", "cider"):
        delta = float(np.max(np.abs(np.array(compared[name]) - np.array(theirs[name]))))
        print(f"  {name:8s} reference / ours: {compare(theirs_t[name] * scale, ours_t[name])}   "
              f"max|delta| {delta:.2e}")
    total_ours, total_theirs = sum(ours_t.values()), sum(theirs_t.values()) * scale
    print(f"  all three  reference / ours: {compare(total_theirs, total_ours)}   (target >= 20x)")
    return total_theirs + t_tok_refs + t_tok_preds, ours


def bench_end_to_end(predictions, references, reference_total, lexical_scores):
    from chimdqa_eval import text
    from chimdqa_eval.open_ended import LEXICAL_METRICS, compute_open

    print(f"\n[2] end to end with jieba (reference side: jieba once + the three implementations; "
          f"ours: compute_open, best of {REPEATS})")
    base = Path(os.environ["CHIMDQA_CACHE"])
    base.mkdir(parents=True, exist_ok=True)

    def cold_caches():  # an empty token cache each time; the last one stays for the cached runs
        os.environ["CHIMDQA_CACHE"] = tempfile.mkdtemp(dir=base)
        new_process()

    def new_process():  # the references' tokens come from disk, if anywhere
        text._memory_cache.clear()
        fresh_stems()

    _, t_cold = best_of(REPEATS, compute_open, predictions, references, metrics=LEXICAL_METRICS,
                        setup=cold_caches)
    warm, t_warm = best_of(REPEATS, compute_open, predictions, references, metrics=LEXICAL_METRICS,
                           setup=new_process)
    for label, seconds, target in (("cold", t_cold, 5), ("cached references", t_warm, 15)):
        print(f"  {label:18s} reference / ours: {compare(reference_total, seconds)}   (target >= {target}x)")
    scale = {"rouge_l": 100, "meteor": 100, "cider": 100}
    delta = max(abs(a / scale[m] - b) for m in scale for a, b in zip(warm["per_item"][m], lexical_scores[m]))
    print(f"  max|delta| against the token-list run: {delta:.2e}")


def bench_bertscore(workload: Path, pairs: int) -> None:
    """BERTScore lives in chimdqa_eval.neural and has its own benchmark; run it on the same workload."""
    script = REPO / "bench" / "bench_bertscore.py"
    print(f"\n[3] BERTScore vs bert_score's BERTScorer ({script.name}, first {pairs} open-ended pairs)", flush=True)
    if not script.exists():
        print(f"  skipped: {script} is missing")
        return
    subprocess.run([sys.executable, str(script), "--workload", str(workload), "--n", str(pairs)], check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", type=Path)
    parser.add_argument("--reference-sample", type=int, default=None,
                        help="time the reference implementations on this many pairs and extrapolate")
    parser.add_argument("--bertscore-pairs", type=int, default=30, help="pairs for the BERTScore part (0: skip)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        os.environ["CHIMDQA_CACHE"] = str(workdir / "cache")  # cold caches, and nothing left behind
        workload = args.workload
        if workload is None:
            workload = workdir / "workload.jsonl"
            if SHARED_WORKLOAD.exists():
                subprocess.run([sys.executable, str(SHARED_WORKLOAD), str(workload)], check=True)
                print(f"workload: {SHARED_WORKLOAD.name} (default arguments)")
            else:
                generated_workload(workload)
                print("workload: generated here (Table 2 reference lengths, data/sample sentences)")
        predictions, references = load_pairs(workload)
        lengths = [len(r) for r in references]
        print(f"{len(references)} open-ended pairs; reference length mean {np.mean(lengths):.1f}, "
              f"max {max(lengths)} characters")
        from chimdqa_eval.text import tokenize

        tokenize("预热")  # load jieba's dictionary outside every timing
        reference_total, lexical_scores = bench_lexical(predictions, references, args.reference_sample)
        bench_end_to_end(predictions, references, reference_total, lexical_scores)
        if args.bertscore_pairs:
            bench_bertscore(workload, args.bertscore_pairs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
