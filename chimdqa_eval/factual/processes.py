"""The rule judge over many answers in several processes: each grades a contiguous share, forked from this one so
that it starts with the tables and the readings this process already holds (no import, no second warm-up).

Verdicts are pure functions of (answer, reference, question): the same in any number of processes, in the same
order. Processes are used only where forking is safe and pays: on a system with fork (Linux; macOS and Windows
start a fresh interpreter instead, which would load the tables again), from a process that runs no other thread
(a thread holding a lock at the fork would leave the child's copy locked forever) and is not itself a daemonic
worker (tqdm's monitor thread is stopped first, see stop_progress_monitor), and for at least MIN_SHARE answers a
process. Anything else grades here, in this process.

How many: `workers` (a number; 0 or None: one a CPU this process may use), else the CHIMDQA_JUDGE_WORKERS
environment variable (how `chimdqa evaluate`, the evaluate modules and the queue are told), capped so that each
process has MIN_SHARE answers.
"""
from __future__ import annotations

import gc
import multiprocessing
import os
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from chimdqa_eval.schema import InputError

ENV = "CHIMDQA_JUDGE_WORKERS"
MIN_SHARE = 1000       # answers a process grades at least (~0.3 s of work against a fork's few ms)
SHARES_PER_WORKER = 4  # a slow share (long answers, new references) does not hold the others back
MAX_SHARE = 5000       # and no share is longer than this: a worker empties its memos between shares (RULE_BLOCK)


def requested_workers(workers=None) -> int:
    """The number asked for: `workers`, else $CHIMDQA_JUDGE_WORKERS, else 0 (one a CPU)."""
    if workers is None:
        text = os.environ.get(ENV, "").strip()
        if not text:
            return 0
        if not text.isdigit():
            raise InputError(f"{ENV}: expected a whole number of processes (0: one a CPU), got {text!r}")
        workers = int(text)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise InputError(f"workers: expected a whole number of processes from 0 (0: one a CPU), got {workers!r}")
    return workers


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the CPUs this process may run on (a container's cpuset)
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def why_not_forked() -> str:
    """Why the judge would grade in this process only ('' when it may fork)."""
    if not hasattr(os, "fork") or sys.platform in ("darwin", "win32"):  # macOS: fork is unsafe with its libraries
        return "this system cannot fork"
    if multiprocessing.current_process().daemon:
        return "this process is a daemonic worker, which may not start processes"
    if threading.active_count() > 1:
        return f"{threading.active_count() - 1} other thread(s) running"
    return ""


def stop_progress_monitor() -> None:
    """tqdm's monitor, a thread a progress bar starts (datasets' bars while a release loads) that wakes every 10 s
    to look at slow bars, is stopped: with it running the judge would not fork. tqdm starts it again with its next
    bar."""
    monitor = sys.modules.get("tqdm._monitor")
    if monitor is None:
        return
    for thread in threading.enumerate():
        if isinstance(thread, monitor.TMonitor):
            thread.exit()  # wakes it and waits for its end


def plan(n: int, workers=None) -> int:
    """Processes to grade n answers with (1: here, in this process)."""
    wanted = requested_workers(workers) or available_cpus()
    wanted = min(wanted, n // MIN_SHARE)
    if wanted <= 1:
        return 1
    stop_progress_monitor()
    return 1 if why_not_forked() else wanted


def shares(n: int, workers: int) -> list[range]:
    """Contiguous ranges covering 0..n: about SHARES_PER_WORKER a worker, none longer than MAX_SHARE."""
    count = max(workers * SHARES_PER_WORKER, -(-n // MAX_SHARE))
    size = -(-n // count)
    return [range(start, min(start + size, n)) for start in range(0, n, size)]


def graded_in_processes(grade, predictions, references, questions, workers: int) -> list:
    """grade(predictions, references, questions) -> list, run share by share in `workers` forked processes, the
    lists joined in order. An exception raised by a share is raised here (with the worker's traceback as its
    cause); a worker that dies (killed, out of memory) is a RuntimeError saying how to grade in one process."""
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
    out = []
    try:
        # the first submit forks every worker (with fork they start at once). What this process holds is frozen
        # out of the garbage collector's sight meanwhile: a worker's collections would otherwise walk (and so copy
        # page by page) every object it inherited, a submission's items included
        gc.freeze()
        try:
            jobs = [pool.submit(grade, predictions[s.start:s.stop], references[s.start:s.stop],
                                questions[s.start:s.stop]) for s in shares(len(predictions), workers)]
        finally:
            gc.unfreeze()
        for job in jobs:
            out += job.result()
    except BrokenProcessPool as err:
        raise RuntimeError(f"a process grading factual answers ended abruptly ({err}); {ENV}=1 grades them in "
                           "this process only") from None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # a failed share: the rest are not started
    return out
