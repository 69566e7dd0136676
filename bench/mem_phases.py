"""Where `chimdqa evaluate`'s memory goes (a benchmark, not a test): resident memory by phase of one run.

    python bench/mem_phases.py [--depth 4] [--every 0.01] -- EVALUATE ARGUMENTS...
    e.g. python bench/mem_phases.py -- --data-dir n30000/release --predictions n30000/predictions.jsonl --out o

Runs `chimdqa evaluate` in this process while a thread reads the resident set size (/proc/self/statm) and the
main thread's stack (its chimdqa_eval frames) every --every seconds. Prints the peak, the stack at the peak, and
for each phase (the outermost --depth chimdqa_eval frames below the command's driver) when it ran and the
lowest and highest RSS sampled in it: the phase whose highest stands out sets the run's peak. Linux only (it
reads /proc). bench/bench_evaluate.py measures whole runs in fresh processes; this says which phase costs.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import threading
import time

# The driver's frames, left out of the phase names: every sample is under them.
_DRIVER = {"cli.main", "evaluate.run", "evaluation.score", "evaluation.score_with_llm", "families.score_family"}


def resident_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def chimdqa_frames(frame) -> tuple[str, ...]:
    """module.function of the chimdqa_eval frames of a stack, outermost first."""
    names = []
    while frame is not None:
        code = frame.f_code
        if f"chimdqa_eval{os.sep}" in code.co_filename:
            names.append(f"{os.path.basename(code.co_filename)[:-3]}.{code.co_name}")
        frame = frame.f_back
    return tuple(reversed(names))


def sample(thread_id: int, every: float, samples: list, stop: threading.Event) -> None:
    while not stop.is_set():
        frame = sys._current_frames().get(thread_id)
        samples.append((time.perf_counter(), resident_mb(), chimdqa_frames(frame)))
        del frame
        stop.wait(every)


def phases(samples: list, depth: int) -> dict:
    """{phase: (lowest MB, highest MB, first seen, last seen)} in order of first appearance. A sample whose stack
    does not reach the command (a generator resumed from C code shows no caller) counts to the phase before it."""
    found: dict = {}
    key = "(start-up)"
    for when, mb, frames in samples:
        if frames[:1] == ("cli.main",):
            key = " > ".join([f for f in frames if f not in _DRIVER][:depth]) or "(the command itself)"
        low, high, first, _ = found.get(key, (mb, mb, when, when))
        found[key] = (min(low, mb), max(high, mb), first, when)
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=4, help="frames that name a phase (default 4)")
    parser.add_argument("--every", type=float, default=0.01, help="seconds between samples (default 0.01)")
    parser.add_argument("evaluate", nargs=argparse.REMAINDER, help="`chimdqa evaluate`'s arguments, after --")
    args = parser.parse_args(argv)
    evaluate_args = args.evaluate[1:] if args.evaluate[:1] == ["--"] else args.evaluate
    from chimdqa_eval import cli

    samples: list = []
    stop = threading.Event()
    sampler = threading.Thread(target=sample, args=(threading.get_ident(), args.every, samples, stop), daemon=True)
    start = time.perf_counter()
    sampler.start()
    try:
        code = cli.main(["evaluate", *evaluate_args])
    finally:
        stop.set()
        sampler.join()
    when, peak, frames = max(samples, key=lambda s: s[1])
    print(f"\npeak {peak:.0f} MB sampled at {when - start:.1f} s (ru_maxrss "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB), in {' > '.join(frames[-6:])}")
    print(f"{'seconds':>15} {'MB low-high':>12}  phase")
    for key, (low, high, first, last) in phases(samples, args.depth).items():
        if last - first >= 0.05 or high > peak - 100:
            print(f"{first - start:7.2f}-{last - start:7.2f} {low:5.0f}-{high:6.0f}  {key}")
    print(f"at the end {samples[-1][1]:.0f} MB; load average {os.getloadavg()[0]:.1f}")
    return code or 0


if __name__ == "__main__":
    sys.exit(main())
