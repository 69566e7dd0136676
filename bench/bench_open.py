#!/usr/bin/env python3
"""Benchmark of chimdqa_open's lexical metrics against the reference implementations, measured in the same run.

  python bench/bench_open.py [--workload W.jsonl] [--pairs N] [--repeats R] [--bertscore-pairs N]

Workload: a JSONL of {question_type | category, answer, prediction} records such as
../shared/bench/make_workload.py writes (used when present, generated into a temporary file); otherwise one
generated here with the paper's reference lengths (Table 2: mean 162 characters, max 4,726) from the sentences
of data/sample. Only the open-ended records are scored (the first --pairs of them when given).

The reference side (the anchor stack): jieba's accurate mode, rouge_score's RougeScorer(["rougeL"]), NLTK's
meteor_score (no WordNet), pycocoevalcap's Cider (CIDEr-D) and, for CIDEr, Vedantam et al.'s formula written
out with dictionaries (pycocoevalcap has only CIDEr-D). Ours: chimdqa_eval's tokenize (jieba's tokens, rjieba
doing the dictionary work), rouge_l, meteor and cider_and_cider_d (both CIDEr variants from one pass).

1. Lexical metrics on identical jieba token lists, in this process: each side scores all pairs --repeats times
   (ours with METEOR's stem memo cleared before each run).
2. End to end in new processes: one fresh Python process per run, which imports its libraries, reads the pairs,
   tokenizes and scores all four metrics. The reference stack; ours "cold" (compute_open with an empty token
   cache); ours "second run" (a new process again, the references' tokens on disk from the cold run before
   it). --repeats runs of each, interleaved; times are the child processes' wall-clock and CPU seconds from
   start to exit, with their peak RSS. jieba's own dictionary cache file is present for both sides.
3. BERTScore vs bert_score's BERTScorer: bench/bench_bertscore.py (a bert-base-shaped model with random weights,
   layer 8; a first run and a second submission against the same references) on the first --bertscore-pairs
   open-ended pairs of the same workload.

Every ratio is reference / ours of the medians of the same number of runs on each side, measured on the same
machine in the same run (the spread, min-max, is printed beside). Parity lines give the per-item max |delta|
between the two sides, metric by metric, like compared with like: in [1] on the libraries' scales (0-1,
CIDEr-D 0-10), in [2] on compute_open's (x100), the reference's scores multiplied by 100 as compute_open does.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ["CHIMDQA_SHARED"]) if os.environ.get("CHIMDQA_SHARED") else REPO.parent / "shared"
SHARED_WORKLOAD = SHARED / "bench" / "make_workload.py"
OPEN_TYPES = ("inference", "expansion", "summarization", "suggestion", "generation")
METRICS = ("rouge_l", "meteor", "cider_d", "cider")


# ---- workload -------------------------------------------------------------------------------------------------

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


def load_pairs(path: Path, limit: int | None):
    predictions, references = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("category") in ("open", "open_ended") or record.get("question_type") in OPEN_TYPES:
            predictions.append(record["prediction"])
            references.append(record["answer"])
    return predictions[:limit], references[:limit]


# ---- the reference implementations ----------------------------------------------------------------------------

def paper_cider(predictions, references, n=4):
    """CIDEr as Vedantam et al. 2015 define it, one reference per item, with dictionaries: g_k(s) =
    h_k(s) / sum_l h_l(s) * log(|I| / max(1, df_k)); per n the cosine of g^n(prediction) and g^n(reference);
    the mean over n = 1..4."""
    def grams(tokens, k):
        return Counter(tuple(tokens[i:i + k]) for i in range(len(tokens) - k + 1))

    n_items = len(references)
    scores = [0.0] * len(predictions)
    for k in range(1, n + 1):
        ref_grams = [grams(r, k) for r in references]
        df = Counter()
        for counts in ref_grams:
            df.update(counts.keys())

        def vector(counts):
            total = sum(counts.values())
            return {g: c / total * math.log(n_items / max(1, df[g])) for g, c in counts.items()}

        for i, prediction in enumerate(predictions):
            u, v = vector(grams(prediction, k)), vector(ref_grams[i])
            norm_u, norm_v = math.sqrt(sum(x * x for x in u.values())), math.sqrt(sum(x * x for x in v.values()))
            dot = sum(x * v.get(g, 0.0) for g, x in u.items())
            scores[i] += (dot / (norm_u * norm_v) if norm_u and norm_v else 0.0) / n
    return scores


def reference_scores(pred_tokens, ref_tokens):
    """Per-item scores and seconds of the reference implementations on the given token lists."""
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
    for i, (p, r) in enumerate(zip(pred_tokens, ref_tokens)):
        lookup[("p", i)], lookup[("r", i)] = p, r
    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=Tokens())
    wordnet = NoWordNet()
    runs = {
        "rouge_l": lambda: [scorer.score(("r", i), ("p", i))["rougeL"].fmeasure for i in range(len(pred_tokens))],
        "meteor": lambda: [meteor_score([r], p, wordnet=wordnet) for p, r in zip(pred_tokens, ref_tokens)],
        "cider_d": lambda: list(Cider().compute_score({i: [" ".join(r)] for i, r in enumerate(ref_tokens)},
                                                      {i: [" ".join(p)] for i, p in enumerate(pred_tokens)})[1]),
        "cider": lambda: paper_cider(pred_tokens, ref_tokens),
    }
    scores, seconds = {}, {}
    for name, run in runs.items():
        start = time.perf_counter()
        scores[name] = [float(s) for s in run()]
        seconds[name] = time.perf_counter() - start
    return scores, seconds


def our_scores(pred_tokens, ref_tokens):
    from chimdqa_eval import lexical

    lexical.porter_stem.cache_clear()  # METEOR's stem memo, as a new process has it
    scores, seconds = {}, {}
    for name, run in (("rouge_l", lexical.rouge_l), ("meteor", lexical.meteor),
                      ("cider", lexical.cider_and_cider_d)):
        start = time.perf_counter()
        scores[name] = run(pred_tokens, ref_tokens)
        seconds[name] = time.perf_counter() - start
    scores["cider"], scores["cider_d"] = scores["cider"]
    return scores, seconds


# ---- one run in a new process ---------------------------------------------------------------------------------

def child(side: str, pairs_path: str, out_path: str) -> None:
    """One end-to-end run: imports, reading the pairs, tokenizing and scoring, as a user's new process does."""
    start = time.perf_counter()
    if side == "reference":
        import logging

        import jieba
        import nltk.translate.meteor_score  # noqa: F401  (the anchor stack's imports, timed as such)
        import pycocoevalcap.cider.cider  # noqa: F401
        import rouge_score.rouge_scorer  # noqa: F401

        jieba.setLogLevel(logging.WARNING)
    else:
        from chimdqa_eval import lexical
        from chimdqa_eval.open_ended import LEXICAL_METRICS, compute_open

        lexical.porter_stem()  # the stemmer (chimdqa_eval.porter, no NLTK), built with the imports
    imported = time.perf_counter()
    pairs = json.loads(Path(pairs_path).read_text(encoding="utf-8"))
    predictions, references = pairs["predictions"], pairs["references"]
    if side == "reference":
        ref_tokens = [" ".join(jieba.lcut(t)).split() for t in references]
        pred_tokens = [" ".join(jieba.lcut(t)).split() for t in predictions]
        tokenized = time.perf_counter()
        scores, _ = reference_scores(pred_tokens, ref_tokens)
        scores = {m: [100 * s for s in values] for m, values in scores.items()}  # compute_open's scale
        breakdown = {"import": imported - start, "tokenize": tokenized - imported,
                     "score": time.perf_counter() - tokenized}
    else:
        result = compute_open(predictions, references, metrics=list(LEXICAL_METRICS))
        scores = {m: result["per_item"][m] for m in METRICS}
        breakdown = {"import": imported - start, "tokenize + score": time.perf_counter() - imported}
    Path(out_path).write_text(json.dumps({"scores": scores, "breakdown": breakdown, "peak_kb": peak_rss_kb()}),
                              encoding="utf-8")


def peak_rss_kb() -> int:
    """This process's peak resident set since it started its program: VmHWM (ru_maxrss would carry the
    parent's peak over the fork and exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def cpu_seconds_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_child(side: str, pairs_path: Path, out_path: Path, cache: Path) -> dict:
    """Runs one end-to-end child; its wall and CPU seconds (start to exit) and peak RSS."""
    env = {**os.environ, "CHIMDQA_CACHE": str(cache)}
    command = [sys.executable, str(Path(__file__).resolve()), "--child", side, str(pairs_path), str(out_path)]
    wall, cpu = time.perf_counter(), cpu_seconds_of_children()
    done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - wall, cpu_seconds_of_children() - cpu
    if done.returncode:
        sys.exit(f"{side} run failed:\n{done.stderr}")
    out = json.loads(out_path.read_text(encoding="utf-8"))
    out.update(wall=wall, cpu=cpu)
    return out


# ---- report ---------------------------------------------------------------------------------------------------

def spread(values) -> str:
    return f"{statistics.median(values):7.2f} s ({min(values):.2f}-{max(values):.2f})"


def max_delta(a: dict, b: dict) -> str:
    return ", ".join(f"{m} {max((abs(x - y) for x, y in zip(a[m], b[m])), default=0.0):.1e}" for m in METRICS)


def bench_lexical(predictions, references, repeats: int) -> None:
    from chimdqa_eval.text import tokenize

    pred_tokens, ref_tokens = [tokenize(p) for p in predictions], [tokenize(r) for r in references]
    print(f"\n[1] lexical metrics on identical jieba token lists, {len(predictions)} pairs, in this process, "
          f"{repeats} runs each side (median, min-max)")
    theirs_runs, ours_runs = [], []
    for _ in range(repeats):
        theirs, theirs_seconds = reference_scores(pred_tokens, ref_tokens)
        ours, ours_seconds = our_scores(pred_tokens, ref_tokens)
        theirs_runs.append(theirs_seconds)
        ours_runs.append(ours_seconds)
    rows = (("ROUGE-L", ("rouge_l",), ("rouge_l",)), ("METEOR", ("meteor",), ("meteor",)),
            ("CIDEr + CIDEr-D", ("cider", "cider_d"), ("cider",)),
            ("all four", tuple(METRICS), ("rouge_l", "meteor", "cider")))
    for label, their_keys, our_keys in rows:
        theirs_t = [sum(run[k] for k in their_keys) for run in theirs_runs]
        ours_t = [sum(run[k] for k in our_keys) for run in ours_runs]
        print(f"  {label:16s} reference {spread(theirs_t)}   ours {spread(ours_t)}   "
              f"{statistics.median(theirs_t) / statistics.median(ours_t):6.1f}x")
    print(f"  parity, max |delta| per item: {max_delta(ours, theirs)}")


def bench_end_to_end(predictions, references, repeats: int, workdir: Path) -> None:
    pairs = workdir / "pairs.json"
    pairs.write_text(json.dumps({"predictions": predictions, "references": references}, ensure_ascii=False),
                     encoding="utf-8")
    print(f"\n[2] end to end in new processes (imports, tokenizing, all four metrics), {len(predictions)} pairs, "
          f"{repeats} runs each side, interleaved (median, min-max)")
    runs = {"reference": [], "cold": [], "second": []}
    for r in range(repeats):
        cache = workdir / f"cache-{r}"  # empty for the cold run, the references' tokens in it for the second
        for label, side in (("reference", "reference"), ("cold", "ours"), ("second", "ours")):
            runs[label].append(run_child(side, pairs, workdir / f"{label}-{r}.json", cache))
    for label, name in (("reference", "reference stack"), ("cold", "ours, cold"), ("second", "ours, second run")):
        wall = [run["wall"] for run in runs[label]]
        cpu = [run["cpu"] for run in runs[label]]
        peak = max(run["peak_kb"] for run in runs[label]) / 1024
        parts = ", ".join(f"{k} {statistics.median(run['breakdown'][k] for run in runs[label]):.2f} s"
                          for k in runs[label][0]["breakdown"])
        print(f"  {name:17s} wall {spread(wall)}   CPU {statistics.median(cpu):6.2f} s   peak RSS {peak:4.0f} MB"
              f"   ({parts})")
    theirs_wall = [run["wall"] for run in runs["reference"]]
    theirs_cpu = [run["cpu"] for run in runs["reference"]]
    for label, target in (("cold", 20), ("second", 25)):
        ours_wall, ours_cpu = [run["wall"] for run in runs[label]], [run["cpu"] for run in runs[label]]
        print(f"  reference / ours, {label + ':':8s} wall "
              f"{statistics.median(theirs_wall) / statistics.median(ours_wall):5.1f}x   CPU "
              f"{statistics.median(theirs_cpu) / statistics.median(ours_cpu):5.1f}x   (target >= {target}x)")
    reference_scores_, cold, second = (runs[k][-1]["scores"] for k in ("reference", "cold", "second"))
    print(f"  parity, max |delta| per item (compute_open's scale, x100), ours (cold) vs reference: "
          f"{max_delta(cold, reference_scores_)}")
    print(f"  ours second run == ours cold, every item: {cold == second}")


def bench_bertscore(workload: Path, pairs: int) -> None:
    """BERTScore lives in chimdqa_eval.neural and has its own benchmark; run it on the same workload."""
    script = REPO / "bench" / "bench_bertscore.py"
    print(f"\n[3] BERTScore vs bert_score's BERTScorer ({script.name}, first {pairs} open-ended pairs)", flush=True)
    subprocess.run([sys.executable, str(script), "--workload", str(workload), "--n", str(pairs)], check=True)


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(*sys.argv[2:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", type=Path)
    parser.add_argument("--pairs", type=int, default=None, help="score only the first N open-ended pairs")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each side in [1] and [2]")
    parser.add_argument("--bertscore-pairs", type=int, default=30, help="pairs for the BERTScore part (0: skip)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        os.environ["CHIMDQA_CACHE"] = str(workdir / "cache")  # nothing read from or left in the user's caches
        workload = args.workload
        if workload is None:
            workload = workdir / "workload.jsonl"
            if SHARED_WORKLOAD.exists():
                subprocess.run([sys.executable, str(SHARED_WORKLOAD), str(workload)], check=True)
                print(f"workload: {SHARED_WORKLOAD.name} (default arguments)")
            else:
                generated_workload(workload)
                print("workload: generated here (Table 2 reference lengths, data/sample sentences)")
        predictions, references = load_pairs(workload, args.pairs)
        lengths = [len(r) for r in references]
        print(f"{len(references)} open-ended pairs; reference length mean {statistics.mean(lengths):.1f}, "
              f"max {max(lengths)} characters; machine: {os.cpu_count()} CPUs, load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        bench_lexical(predictions, references, args.repeats)
        bench_end_to_end(predictions, references, args.repeats, workdir)
        if args.bertscore_pairs:
            bench_bertscore(workload, args.bertscore_pairs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
