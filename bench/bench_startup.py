"""Start-up of small runs (a benchmark, not a test): the sample demo end to end and what the lazy imports save.

    python bench/bench_startup.py [--repeats 3]

Every figure is the minimum over `--repeats` fresh processes (wall clock, and the peak RSS of that run), so that
caches on disk are warm and nothing stays loaded between runs; on a loaded machine take the minimum of several
invocations too.

- `import chimdqa_eval.cli`, and `chimdqa evaluate --predictions data/sample/predictions.jsonl` (rule judge,
  lexical metrics, report) as a user runs it; goal <= 2 s. Its CPU time (user + system) is printed beside it:
  on a loaded machine the wall clock grows with the load, the CPU time much less.
- The same evaluate with what it used to import up front imported first (torch and transformers, to find that no
  BERTScore / perplexity model is there; NLTK, for the Porter stemmer): the ratio is what the lazy imports save.
- CC-CEDICT's tables for the rule judge: opening the cached file (looked up in place) against unpacking the same
  tables into dicts with marshal, as before.
"""
from __future__ import annotations

import argparse
import json
import marshal
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample" / "predictions.jsonl"
EAGER = "import torch, transformers, transformers.models.auto, nltk.stem.porter\n"


def run(code: str, repeats: int) -> tuple[float, float, float]:
    """(min seconds, peak RSS MB and CPU seconds (user + system) of that run) of `code` in fresh interpreters."""
    best = (float("inf"), 0.0, 0.0)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(repeats):
        with tempfile.TemporaryFile() as errors:
            start = time.perf_counter()
            child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=errors,
                                     env=env, cwd=ROOT)
            _, status, usage = os.wait4(child.pid, 0)  # this child's own peak RSS
            elapsed = time.perf_counter() - start
            child.returncode = os.waitstatus_to_exitcode(status)
            if child.returncode != 0:
                errors.seek(0)
                raise SystemExit(errors.read().decode(errors="replace")[-2000:])
        best = min(best, (elapsed, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime))
    return best


def evaluate_code(out: Path, before: str = "") -> str:
    return (before + "from chimdqa_eval.cli import main\n"
            f"assert main(['evaluate', '--predictions', {str(SAMPLE)!r}, '--out', {str(out)!r}]) == 0\n")


def tables(repeats: int) -> None:
    from chimdqa_eval.factual import dictionary

    dictionary._tables()  # built and cached once, if need be
    opened = min(_timed(lambda: (dictionary._tables.cache_clear(), dictionary._tables())) for _ in range(repeats))
    data = marshal.dumps(tuple(dict(t.items()) for t in dictionary._tables()))
    unpacked = min(_timed(lambda: marshal.loads(data)) for _ in range(repeats))
    print(f"CC-CEDICT tables: opened in {opened * 1000:.1f} ms; unpacked with marshal in {unpacked * 1000:.0f} ms "
          f"({len(data) / 1e6:.1f} MB): {unpacked / opened:.0f}x")


def _timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, "
          f"min of {args.repeats} fresh processes")
    seconds, _, _ = run("import chimdqa_eval.cli", args.repeats)
    print(f"import chimdqa_eval.cli: {seconds:.2f} s")
    with tempfile.TemporaryDirectory() as folder:
        lazy, lazy_peak, lazy_cpu = run(evaluate_code(Path(folder) / "a"), args.repeats)
        eager, eager_peak, _ = run(evaluate_code(Path(folder) / "b", EAGER), args.repeats)
        same = (json.loads((Path(folder) / "a" / "results.json").read_text())["metrics"]
                == json.loads((Path(folder) / "b" / "results.json").read_text())["metrics"])
    print(f"sample evaluate: {lazy:.2f} s (goal <= 2 s), CPU {lazy_cpu:.2f} s, peak RSS {lazy_peak:.0f} MB; load "
          f"average {os.getloadavg()[0]:.2f} after")
    print(f"  with torch, transformers and NLTK imported first: {eager:.2f} s, {eager_peak:.0f} MB -> "
          f"{eager / lazy:.2f}x the time; metrics equal: {same}")
    tables(args.repeats)


if __name__ == "__main__":
    main()
