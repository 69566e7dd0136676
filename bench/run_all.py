"""Every benchmark in fresh processes, one after another, into bench/RESULTS.md (a maintainer script, not a test).

    python bench/run_all.py [--quick] [--only NAME ...] [--out bench/RESULTS.md]

`--only NAME ...` reruns those and keeps the other sections of the existing file, each marked with the date of
the run that measured it.

Each benchmark script runs as its own process with the arguments listed in BENCHMARKS (each script measures its
reference side in the same run, with equal repeats on both sides, and prints its own ratios); this script adds
what makes the figures readable later: the machine (CPU model, cores, memory), the date, the Python and package
versions, the load average before and after each benchmark, its wall time and exit status, and its whole
output. `--quick` runs every benchmark at a small size, to check that they all still run (the figures then say
little). A benchmark that fails is reported as failed in the file, and the others still run.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent

# name -> (script, full arguments, --quick arguments, what it compares)
BENCHMARKS = {
    "startup": ("bench_startup.py", ["--repeats", "3"], ["--repeats", "1"],
                "sample demo end to end vs the same run with the old eager imports"),
    "lexical": ("bench_open.py", ["--pairs", "1000", "--repeats", "3", "--bertscore-pairs", "0"],
                ["--pairs", "100", "--repeats", "1", "--bertscore-pairs", "0"],
                "ROUGE-L / METEOR / CIDEr / CIDEr-D vs jieba + rouge_score + NLTK + pycocoevalcap"),
    "tokenize": ("bench_tokenize.py", ["--repeats", "3"], ["--texts", "2000", "--repeats", "1"],
                 "text.tokenize vs jieba"),
    "bertscore": ("bench_bertscore.py", [], ["--n", "20"], "BERTScore vs bert_score's BERTScorer"),
    "rule judge": ("judge_targets.py", [], ["--no-speed"], "the rule judge against issue 23's targets"),
    "judges": ("bench_factual.py", [], ["--items", "300", "--llm-items", "48"],
               "rule judge grades/s; LLM judge vs the ideal rate"),
    "generation": ("bench_generate.py", [], ["--requests", "48", "--docs", "2", "--pages", "10"],
                   "generation vs an endpoint's ideal rate; BM25 indexing"),
    "generation at size": ("bench_generate.py",
                           ["--requests", "6068", "--docs", "1", "--pages", "2", "--queries", "10"],
                           ["--requests", "96", "--docs", "1", "--pages", "2", "--queries", "10"],
                           "generation over 6,068 requests (ChiMDQA's size) vs an endpoint's ideal rate"),
    "evaluate at scale": ("bench_evaluate.py", [], ["--sizes", "300", "600"],
                          "chimdqa evaluate at 6k / 30k / 100k items: time and peak memory"),
}


def machine() -> list[str]:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor() or "unknown") \
        if Path("/proc/cpuinfo").is_file() else platform.processor()
    memory = next((line.split(":", 1)[1].strip() for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal")), "?") if Path("/proc/meminfo").is_file() else "?"
    versions = []
    for package in ("chimdqa-eval", "numpy", "jieba", "rjieba", "torch", "transformers", "nltk", "rouge-score",
                    "pycocoevalcap", "bert-score", "httpx"):
        try:
            versions.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            pass
    return [f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}",
            f"- machine: {cpu}, {os.cpu_count()} cores, {memory} memory, {platform.platform()}",
            f"- Python {platform.python_version()}; " + ", ".join(versions)]


def load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def run_one(script: str, arguments: list[str]) -> tuple[int, float, str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(BENCH / script), *arguments], cwd=ROOT, capture_output=True,
                          text=True)
    output = done.stdout + (f"\n[stderr]\n{done.stderr[-3000:]}" if done.returncode else "")
    return done.returncode, time.perf_counter() - start, output.strip()


def kept_sections(out: Path, only: list[str]) -> dict[str, str]:
    """{name: section} of the benchmarks `--only` leaves out, as the previous RESULTS.md has them, each headed by
    the date of the run that measured it (a partial run keeps the rest of the file, visibly older)."""
    if not out.is_file():
        return {}
    text = out.read_text(encoding="utf-8")
    date = next((line[len("- date: "):] for line in text.splitlines() if line.startswith("- date: ")), "unknown")
    kept = {}
    for part in text.split("\n## ")[1:]:
        name = part.split(":", 1)[0]
        if name in BENCHMARKS and name not in only:
            heading, _, rest = part.partition("\n")
            if not heading.endswith(")") or "(kept from the run of" not in heading:
                heading += f" (kept from the run of {date})"
            kept[name] = f"## {heading}\n{rest.rstrip()}\n"
    return kept


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: check that every benchmark runs")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, metavar="NAME", help=", ".join(BENCHMARKS))
    parser.add_argument("--out", default=str(BENCH / "RESULTS.md"))
    args = parser.parse_args(argv)
    lines = ["# Benchmark results", "", "Written by `python bench/run_all.py"
             + (" --quick" if args.quick else "") + "`: every benchmark in its own fresh process, one after "
             "another; each compares against its reference measured in the same run. Load averages are the "
             "1 / 5 / 15-minute figures: on a loaded machine the ratios say more than the seconds.", "",
             *machine(), ""]
    kept = kept_sections(Path(args.out), args.only) if args.only else {}
    failed = 0
    for name in args.only or BENCHMARKS:
        script, full, quick, what = BENCHMARKS[name]
        arguments = quick if args.quick else full
        before = load()
        print(f"{name}: python bench/{script} {' '.join(arguments)} ...", flush=True)
        code, seconds, output = run_one(script, arguments)
        failed += code != 0
        kept[name] = "\n".join([f"## {name}: {what}", "",
                                f"`python bench/{script} {' '.join(arguments)}`".replace(" `", "`") + f" — exit "
                                f"{code}, {seconds:.0f} s, load before {before}, after {load()}", "", "```", output,
                                "```", ""])
        Path(args.out).write_text("\n".join(lines + [kept[n] for n in BENCHMARKS if n in kept]), encoding="utf-8")
        # written as it goes: a crash keeps the rest
    print(f"wrote {args.out} ({failed} failed)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
