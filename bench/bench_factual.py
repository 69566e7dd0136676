"""Throughput of chimdqa_factual's judges (a benchmark, not a test): prints figures and ratios.

    python bench/bench_factual.py [--items 3000] [--llm-items 480] [--latency 0.05] [--concurrency 16]

- rule judge: grades/s through compute_factual on Chinese SimpleQA answers (the shared file when present, else
  synthetic short answers), against a baseline measured in the same run: NFKC + exact string comparison, the
  least any judge must do; goal >= 10,000 grades/s. In one process, and as compute_factual grades by default (one
  forked process a CPU, factual/processes.py).
- LLM judge: grades/s against tests/chat_server.py on 127.0.0.1 with injected latency, against the ideal
  concurrency / latency; goal >= 30 grades/s at concurrency 16 and 50 ms.
- cached re-run of the same LLM grading: grades/s, against the first run; goal >= 5,000 grades/s.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chimdqa_eval.factual import compute_factual, processes  # noqa: E402
from chimdqa_eval.factual.judge_rule import clear_answer_caches, clear_caches  # noqa: E402
from tests.chat_server import ChatServer  # noqa: E402

# The team's shared/ folder sits beside the checkout.
SIMPLEQA = Path(__file__).resolve().parents[2] / "shared" / "data" / "chinese_simpleqa" / "chinese_simpleqa.jsonl"


def load_items(n: int, seed: int = 0):
    """(predictions, references, questions): a third correct in a sentence, a third refusals, a third wrong."""
    if SIMPLEQA.exists():
        rows = [json.loads(line) for line in SIMPLEQA.read_text(encoding="utf-8").splitlines() if line.strip()]
    else:
        rows = [{"question": f"第{i}个问题？", "answer": random.Random(i).choice(["陶渊明", "1919年", "3518.17"])}
                for i in range(3000)]
    rng = random.Random(seed)
    picked = [rows[i % len(rows)] for i in range(n)]
    predictions = []
    for i, row in enumerate(picked):
        kind = i % 3
        if kind == 0:
            predictions.append(f"根据资料，答案是{row['answer']}。")
        elif kind == 1:
            predictions.append("抱歉，我无法确定这个问题的答案。")
        else:
            predictions.append(rng.choice(rows)["answer"])
    return predictions, [r["answer"] for r in picked], [r["question"] for r in picked]


def rate(n: int, seconds: float) -> float:
    return n / seconds if seconds > 0 else float("inf")


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def best_of(repeats: int, fn, clear=clear_caches) -> float:
    """The fastest of a few runs, each after `clear` (by default the judge's caches of answers and references
    are emptied): the machine is shared and noisy."""
    times = []
    for _ in range(repeats):
        clear()
        times.append(timed(fn)[1])
    return min(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=3000)
    parser.add_argument("--llm-items", type=int, default=480)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args(argv)

    predictions, references, questions = load_items(args.items)
    baseline = best_of(3, lambda: [unicodedata.normalize("NFKC", p) == unicodedata.normalize("NFKC", r)
                                   for p, r in zip(predictions, references)])
    rule = best_of(3, lambda: compute_factual(predictions, references, questions, workers=1))
    print(f"rule judge:       {rate(args.items, rule):>10,.0f} grades/s  ({args.items} items, nothing cached, one "
          f"process; goal 10,000; {rate(args.items, rule) / 10_000:.1f}x goal; NFKC exact-match baseline "
          f"{rate(args.items, baseline):,.0f}/s, {rule / baseline:.0f}x slower than it)")
    # a leaderboard grades each new submission against the same references: their readings stay cached
    again = best_of(3, lambda: compute_factual(predictions, references, questions, workers=1),
                    clear=clear_answer_caches)
    print(f"  known references: {rate(args.items, again):>8,.0f} grades/s  (new answers to references read "
          f"before; goal 10,000; {rate(args.items, again) / 10_000:.1f}x goal)")
    count = processes.plan(args.items, None)  # what compute_factual does by default: one process a CPU
    spread = best_of(3, lambda: compute_factual(predictions, references, questions))
    print(f"  {count} processes:    {rate(args.items, spread):>8,.0f} grades/s  (nothing cached; as compute_factual "
          f"grades by default here; {rule / spread:.2f}x one process; goal 10,000)")

    predictions, references, questions = load_items(args.llm_items, seed=1)
    verdicts = ["结论：正确", "结论：未作答", "结论：错误"]
    with ChatServer(lambda body: "理由：略。\n" + random.choice(verdicts), latency=args.latency) as server, \
            tempfile.TemporaryDirectory() as tmp:
        kwargs = dict(judge="llm", judge_model="bench-grader", api_base=server.api_base,
                      concurrency=args.concurrency, cache_path=Path(tmp) / "bench.sqlite")
        first, cold = timed(lambda: compute_factual(predictions, references, questions, **kwargs))
        asked = len(server.requests)
        _, warm = timed(lambda: compute_factual(predictions, references, questions, **kwargs))
        assert len(server.requests) == asked and first["ungraded"] == 0
    ideal = args.concurrency / args.latency
    print(f"LLM judge:        {rate(args.llm_items, cold):>10,.0f} grades/s  ({args.llm_items} items, "
          f"{args.latency * 1000:.0f} ms latency, concurrency {args.concurrency}; goal 30; ideal {ideal:.0f}/s, "
          f"{rate(args.llm_items, cold) / ideal:.0%} of ideal)")
    print(f"cached re-run:    {rate(args.llm_items, warm):>10,.0f} grades/s  (goal 5,000; "
          f"{cold / warm:.0f}x the first run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
