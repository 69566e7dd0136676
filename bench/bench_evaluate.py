"""`chimdqa evaluate` at scale (a benchmark, not a test): wall time and peak memory of whole runs in new processes.

    python bench/bench_evaluate.py [--sizes 6068 30000 100000] [--generator PATH] [--keep DIR] [--against CHECKOUT]

For each size, a synthetic release and its predictions are written by the shared workload generator
(../shared/bench/make_workload.py, found as the tests find shared data, or --generator), then `chimdqa evaluate
--data-dir RELEASE --predictions PRED --resamples 1000` runs in a fresh process: its wall time, CPU time and peak
resident memory (the child's ru_maxrss) are printed, with the memory per item beyond the smallest run's. Issue
27's targets: linear in items, <= 10 KB per item beyond start-up, 100,000 items under 1.5 GB.

With --against CHECKOUT (another checkout of the toolkit, e.g. `git worktree add /tmp/old 4b1999e`), each size
also runs with that checkout first on PYTHONPATH, interleaved with this one (old, new, per size, on the same
files), and the two runs' items.jsonl and results.json (less run_id, created, the report's checksum and
dataset.source) are compared.
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


def find_generator(given: str | None) -> Path | None:
    candidates = [Path(given)] if given else []
    if os.environ.get("CHIMDQA_SHARED"):
        candidates.append(Path(os.environ["CHIMDQA_SHARED"]) / "bench" / "make_workload.py")
    candidates += [ROOT.parent / "shared" / "bench" / "make_workload.py"]
    return next((p for p in candidates if p.is_file()), None)


# A fresh wrapper whose only child is the measured command: its RUSAGE_CHILDREN is that command's alone.
_WRAPPER = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]); "
            "usage = resource.getrusage(resource.RUSAGE_CHILDREN); "
            "print(usage.ru_utime + usage.ru_stime, usage.ru_maxrss, file=sys.stderr); sys.exit(done.returncode)")


def run_child(argv: list[str], env: dict | None = None, cwd=None) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one command in a new process; it must succeed."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _WRAPPER, *argv], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    cpu, max_rss_kb = done.stderr.strip().splitlines()[-1].split()
    return wall, float(cpu), int(max_rss_kb) / 1024


def write_predictions(workload: Path, out: Path) -> None:
    """The workload's {id, prediction} as a submission (its other fields are the questions' own)."""
    with workload.open(encoding="utf-8") as rows, out.open("w", encoding="utf-8") as f:
        for line in rows:
            if line.strip():
                record = json.loads(line)
                f.write(json.dumps({"id": record["id"], "prediction": record["prediction"]}, ensure_ascii=False) + "\n")


def checkout_env(checkout: Path) -> dict:
    """The environment that runs `checkout`'s chimdqa_eval (first on PYTHONPATH)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(checkout), *filter(None, [env.get("PYTHONPATH")])])
    return env


def same_run(a: Path, b: Path) -> str:
    """Whether two run folders hold the same items.jsonl bytes and the same results.json apart from what differs
    between any two runs (run_id, created, the report's checksum, dataset.source: the checkout's sample path)."""
    def results(folder):
        doc = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        for key in ("run_id", "created"):
            doc.pop(key)
        doc["files"].pop("report_sha256", None)
        doc["dataset"].pop("source", None)
        return doc

    items = (a / "items.jsonl").read_bytes() == (b / "items.jsonl").read_bytes()
    return f"items.jsonl identical: {items}, results.json identical: {results(a) == results(b)}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[6068, 30000, 100000])
    parser.add_argument("--generator", help="make_workload.py (default: the shared one)")
    parser.add_argument("--keep", help="write the workloads here and keep them (default: a temporary folder)")
    parser.add_argument("--against", help="another checkout of the toolkit to run interleaved with this one")
    args = parser.parse_args(argv)
    sides = [("this", checkout_env(ROOT))]
    if args.against:
        sides.insert(0, ("against", checkout_env(Path(args.against).resolve())))
    generator = find_generator(args.generator)
    if generator is None:
        print("skipped: no workload generator (../shared/bench/make_workload.py or --generator)")
        return 0
    chimdqa = [sys.executable, "-m", "chimdqa_eval.cli"]
    rows = []
    with tempfile.TemporaryDirectory() as temporary:
        base = Path(args.keep or temporary).resolve()
        for n in sorted(args.sizes):
            folder = base / f"n{n}"
            folder.mkdir(parents=True, exist_ok=True)
            workload, pred, release = folder / "workload.jsonl", folder / "predictions.jsonl", folder / "release"
            if not pred.is_file():
                subprocess.run([sys.executable, str(generator), str(workload), "--n", str(n), "--release",
                                str(release)], check=True, capture_output=True)
                write_predictions(workload, pred)
            for side, env in sides:
                wall, cpu, rss = run_child([*chimdqa, "evaluate", "--data-dir", str(release), "--predictions",
                                            str(pred), "--out", str(folder / f"out-{side}"), "--resamples", "1000"],
                                           env, cwd=folder)  # not this checkout: `-m` puts the cwd first
                rows.append((side, n, wall, cpu, rss))
                print(f"{side:>8} {n:>7} items: {wall:7.1f} s wall, {cpu:7.1f} s CPU, peak {rss:7.0f} MB, "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)
            if args.against:
                print(f"{'':>8} {n:>7} items: {same_run(folder / 'out-against', folder / 'out-this')}", flush=True)
    for side, _ in sides:
        mine = [row[1:] for row in rows if row[0] == side]
        n0, _, _, rss0 = mine[0]
        print(f"\n{side if args.against else ''}\n{'items':>7} {'wall s':>8} {'CPU ms/item':>12} {'peak MB':>8} "
              f"{'KB/item beyond the first':>25}")
        for n, wall, cpu, rss in mine:
            beyond = "" if n == n0 else f"{(rss - rss0) * 1024 / (n - n0):.1f}"
            print(f"{n:>7} {wall:>8.1f} {1000 * cpu / n:>12.2f} {rss:>8.0f} {beyond:>25}")
    print("\ntargets (issue 27): <= 10 KB per item beyond start-up; 100,000 items under 1,536 MB")
    print(f"load average after: {os.getloadavg()[0]:.1f} (on {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
