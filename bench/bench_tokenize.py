#!/usr/bin/env python3
"""Speed of chimdqa_eval's jieba tokenization (rjieba doing the dictionary work) against jieba itself.

  python bench/bench_tokenize.py [--workload W.jsonl] [--texts N] [--repeats R]

Texts: the questions, reference answers and predictions of ../shared/bench/make_workload.py's workload (made
into a temporary file when --workload is not given), the first --texts of them.

1. In this process, both libraries loaded beforehand: jieba.lcut (whitespace tokens dropped, as tokenize() does)
   and chimdqa_eval.text.tokenize over all texts, --repeats times each, interleaved; tokenize()'s memo of HMM
   runs is emptied before each run. Every text's tokens are compared.
2. In new processes: import, load the dictionary and tokenize all texts, --repeats times each side, interleaved;
   wall-clock and CPU seconds of each child process from start to exit.
3. tokenize() over all texts in this process against the same split across two forked worker processes (how
   tokenize_many() spreads jieba itself when a changed dictionary makes jieba segment).
Ratios are jieba / ours of the medians (min-max beside).
"""
from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED_WORKLOAD = REPO.parent / "shared" / "bench" / "make_workload.py"


def load_texts(path: Path, limit: int) -> list[str]:
    texts = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        texts += [record["question"], record["answer"], record["prediction"]]
    return texts[:limit]


def jieba_tokens(text: str) -> list[str]:
    import jieba

    return " ".join(jieba.lcut(text)).split()


def child(side: str, texts_path: str) -> None:
    texts = json.loads(Path(texts_path).read_text(encoding="utf-8"))
    if side == "jieba":
        import jieba

        jieba.setLogLevel(logging.WARNING)
        for text in texts:
            jieba.lcut(text)
    else:
        from chimdqa_eval.text import tokenize

        for text in texts:
            tokenize(text)


def run_child(side: str, texts_path: Path) -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu, wall = usage.ru_utime + usage.ru_stime, time.perf_counter()
    subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", side, str(texts_path)], cwd=REPO,
                   check=True)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter() - wall, usage.ru_utime + usage.ru_stime - cpu


def spread(values) -> str:
    return f"{statistics.median(values):6.2f} s ({min(values):.2f}-{max(values):.2f})"


def _joined(text: str) -> str:
    from chimdqa_eval.text import tokenize

    return " ".join(tokenize(text))


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", type=Path)
    parser.add_argument("--texts", type=int, default=6000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workload = args.workload
        if workload is None:
            workload = Path(tmp) / "workload.jsonl"
            subprocess.run([sys.executable, str(SHARED_WORKLOAD), str(workload)], check=True)
        texts = load_texts(workload, args.texts)
        texts_path = Path(tmp) / "texts.json"
        texts_path.write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
        print(f"{len(texts)} texts, {sum(map(len, texts))} characters")

        import jieba

        from chimdqa_eval import text as ours

        jieba.setLogLevel(logging.WARNING)
        jieba.initialize()
        ours.tokenize("预热")
        theirs_t, ours_t, same = [], [], True
        for _ in range(args.repeats):
            start = time.perf_counter()
            theirs = [jieba_tokens(t) for t in texts]
            theirs_t.append(time.perf_counter() - start)
            ours._HMM_MEMO.clear()
            start = time.perf_counter()
            mine = [ours.tokenize(t) for t in texts]
            ours_t.append(time.perf_counter() - start)
            same = same and mine == theirs
        print(f"\n[1] in this process, {args.repeats} runs each: jieba {spread(theirs_t)}   ours {spread(ours_t)}   "
              f"{statistics.median(theirs_t) / statistics.median(ours_t):5.1f}x   every text's tokens equal: {same}")

        runs = {"jieba": [], "ours": []}
        for _ in range(args.repeats):
            for side in runs:
                runs[side].append(run_child(side, texts_path))
        (theirs_wall, theirs_cpu), (ours_wall, ours_cpu) = ([[r[i] for r in runs[s]] for i in (0, 1)] for s in runs)
        wall_ratio = statistics.median(theirs_wall) / statistics.median(ours_wall)
        cpu_ratio = statistics.median(theirs_cpu) / statistics.median(ours_cpu)
        print(f"\n[2] new processes (import, dictionary, tokenize), {args.repeats} runs each: jieba wall "
              f"{spread(theirs_wall)}, CPU {statistics.median(theirs_cpu):.2f} s   ours wall {spread(ours_wall)}, "
              f"CPU {statistics.median(ours_cpu):.2f} s   {wall_ratio:5.1f}x wall, {cpu_ratio:5.1f}x CPU")

        one, two = [], []
        for _ in range(args.repeats):
            ours._HMM_MEMO.clear()
            start = time.perf_counter()
            [ours.tokenize(t) for t in texts]
            one.append(time.perf_counter() - start)
            ours._HMM_MEMO.clear()
            start = time.perf_counter()
            with multiprocessing.get_context("fork").Pool(2) as pool:
                [j.split() for j in pool.map(_joined, texts, chunksize=max(1, len(texts) // 16))]
            two.append(time.perf_counter() - start)
        print(f"\n[3] ours in one process {spread(one)}, split across two forked workers {spread(two)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
