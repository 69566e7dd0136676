"""The rule judge over many answers in several processes: each grades shares of them (the answers of one reference
in one share), forked from this one so that it starts with the tables (loaded here once, before the fork) and the
readings this process already holds.

Verdicts are pure functions of (answer, reference, question): the same in any number of processes, in the same
order. Processes are used only where forking is safe and pays: on a system with fork (Linux; macOS and Windows
start a fresh interpreter instead, which would load the tables again), from a process that runs no other Python
thread (a thread holding a lock at the fork would leave the child's copy locked forever; tqdm's monitor thread is
stopped first, see stop_progress_monitor) and is not itself a worker of another multiprocessing pool, and for at
least MIN_SHARE answers a process. Anything else grades here, in this process: Jupyter's kernel, the queue (its
heartbeat thread) and a process with a chat client's event loop running grade in one process.

Workers ignore Ctrl-C (the parent stops them: they are killed when the grading fails or is interrupted) and die with
the parent (Linux's parent-death signal), so none is left behind. Where no process can be forked (no memory or
process slots left) the answers are graded here.

How many: `workers` (a number; 0: one a CPU this process may use, at most MAX_DEFAULT), else (workers=None) the
CHIMDQA_JUDGE_WORKERS environment variable (how `chimdqa evaluate` and the evaluate modules are told), else one a
CPU; in every case at most one a MIN_SHARE answers.
"""
from __future__ import annotations

import ctypes
import gc
import inspect
import math
import multiprocessing
import operator
import os
import signal
import sys
import threading
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from chimdqa_eval.schema import InputError

ENV = "CHIMDQA_JUDGE_WORKERS"
MIN_SHARE = 1000       # answers a process grades at least (~0.3 s of work against a fork's few ms)
SHARES_PER_WORKER = 4  # a slow share (long answers, new references) does not hold the others back
MAX_SHARE = 5000       # and no share is longer than this (a worker empties its memos every RULE_BLOCK answers)
MAX_DEFAULT = 8        # processes when the number is left to the judge (each holds ~40-60 MB of its own)

_fork_failed = ""      # why this process grades here from now on (a fork failed once), see _submitted


def requested_workers(workers=None) -> int:
    """The number asked for: `workers`, else $CHIMDQA_JUDGE_WORKERS, else 0 (one a CPU)."""
    if workers is None:
        text = os.environ.get(ENV, "").strip()
        if not text:
            return 0
        if not (text.isascii() and text.isdigit()):
            raise InputError(f"{ENV}: expected a whole number of processes (0: one a CPU), got {text!r}")
        return int(text)
    try:
        number = operator.index(workers)  # an int, numpy's integers too; not 1.5 or "2"
    except TypeError:
        number = -1
    if isinstance(workers, bool) or number < 0:
        raise InputError(f"workers: expected a whole number of processes from 0 (0: one a CPU), got {workers!r}")
    return number


def _cgroup_files() -> list[tuple[str, str | None]]:
    """Where this process's CPU quota may be written: cgroup v2's cpu.max (one file: "quota period") and v1's
    cpu.cfs_quota_us with cpu.cfs_period_us, under this process's own cgroup (from /proc/self/cgroup) and at the
    mount's root (a container sees its own cgroup there)."""
    paths = {}
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if not controllers:
                    paths["v2"] = path
                elif "cpu" in controllers.split(","):
                    paths["v1"] = path
    except (OSError, ValueError):
        pass
    files = []
    for path in dict.fromkeys((paths.get("v2", "").rstrip("/"), "")):
        files.append((f"/sys/fs/cgroup{path}/cpu.max", None))
    for path in dict.fromkeys((paths.get("v1", "").rstrip("/"), "")):
        for mount in ("/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"):
            files.append((f"{mount}{path}/cpu.cfs_quota_us", f"{mount}{path}/cpu.cfs_period_us"))
    return files


def _read_quota(quota_file: str, period_file: str | None) -> float | None:
    """CPUs a quota allows (None: no quota there, or none readable)."""
    try:
        with open(quota_file, encoding="ascii") as f:
            fields = f.read().split()
        if period_file is not None:
            with open(period_file, encoding="ascii") as f:
                fields = fields[:1] + f.read().split()[:1]
        quota, period = fields[:2]
        if quota in ("max", "-1"):
            return None
        return int(quota) / int(period)
    except (OSError, ValueError, ArithmeticError):  # absent, unreadable, "100000 0"
        return None


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity, a container's cpuset) and, under a cgroup CPU quota
    (docker --cpus=2; cgroup v2 or v1), no more than the quota."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    for files in _cgroup_files():
        quota = _read_quota(*files)
        if quota is not None and quota > 0:
            return min(cpus, max(1, math.ceil(quota)))
    return cpus


def _other_threads() -> list:
    """Python threads besides this one that are running; a thread Python only heard of (a native thread that
    once called into Python, kept by threading as a dummy forever) counts while it exists in /proc/self/task."""
    try:
        alive = set(os.listdir("/proc/self/task"))
    except OSError:
        alive = None
    this = threading.current_thread()
    return [t for t in threading.enumerate() if t is not this and not (
        alive is not None and isinstance(t, threading._DummyThread) and str(t.native_id) not in alive)]


def why_not_forked() -> str:
    """Why the judge would grade in this process only ('' when it may fork)."""
    if not hasattr(os, "fork") or sys.platform in ("darwin", "win32"):  # macOS: fork is unsafe with its libraries
        return "this system cannot fork"
    if multiprocessing.parent_process() is not None or multiprocessing.current_process().daemon:
        return "this process is a worker of a multiprocessing pool (no pools inside pools)"
    if _fork_failed:
        return _fork_failed
    others = _other_threads()
    if others:
        return f"{len(others)} other thread(s) running ({', '.join(t.name for t in others[:3])})"
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
    wanted = requested_workers(workers) or min(available_cpus(), MAX_DEFAULT)
    wanted = min(wanted, n // MIN_SHARE)
    if wanted <= 1:
        return 1
    stop_progress_monitor()
    return 1 if why_not_forked() else wanted


def shares(n: int, workers: int) -> list[range]:
    """Contiguous ranges covering 0..n: about SHARES_PER_WORKER a worker, none longer than MAX_SHARE."""
    if n == 0:
        return []
    count = max(workers * SHARES_PER_WORKER, -(-n // MAX_SHARE))
    size = -(-n // count)
    return [range(start, min(start + size, n)) for start in range(0, n, size)]


def by_reference(references) -> list[int]:
    """The answers' indices with those of one reference together (references in the order they first appear): cut
    into shares, a reference is then read in one process (two where its answers straddle two shares), not again
    in every process that grades one of its answers (reading the references is about half of a first grading)."""
    groups: dict = {}
    for i, reference in enumerate(references):
        groups.setdefault(reference if isinstance(reference, str) else (i,), []).append(i)
    return [i for indices in groups.values() for i in indices]


def judge_caches():
    """Every lru_cache-wrapped function defined in this package's loaded modules (the package included): the
    judge's tables (caches of one entry, or unbounded) and its memos (bounded to more than one)."""
    package = __package__
    for name, module in list(sys.modules.items()):
        if module is None or not (name == package or name.startswith(package + ".")):
            continue
        for value in list(vars(module).values()):
            if getattr(value, "cache_info", None) is not None and getattr(value, "__module__", None) == name:
                yield value


def load_tables() -> None:
    """Loads every table of the judge's modules (each function without parameters whose lru_cache holds one
    entry: names, places, aliases, CC-CEDICT), so that the workers share this process's copy instead of each
    loading its own (~0.2 s and ~20-40 MB each)."""
    for cached in judge_caches():
        if cached.cache_info().maxsize == 1 and all(
                p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                for p in inspect.signature(cached.__wrapped__).parameters.values()):
            cached()


def _worker_start(parent: int) -> None:
    """In each worker first: Ctrl-C is the parent's to handle (it kills the workers; the worker was forked with
    SIGINT blocked, so one that arrived meanwhile is dropped here), the worker dies with the parent (else a
    killed parent would leave workers blocked on their pipes forever, holding its output), and what it inherited
    is frozen out of the garbage collector's sight: its collections would otherwise walk (and so copy page by
    page) every object of the parent's, a submission's items included."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    gc.freeze()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux's libc: the check below still catches a parent already gone
    if os.getppid() != parent:
        os._exit(1)


class _NoCtrlC:
    """SIGINT held back in this thread for the whole grading: a Ctrl-C while workers are forked would leave one the
    pool does not know yet, and one while they are stopped would leave them running. let_through() hands a Ctrl-C
    that arrived meanwhile to the program's handler (KeyboardInterrupt by default) at a point where the workers
    can be stopped; one that arrives while they are stopped is raised when the block ends. (A native thread that
    does not block SIGINT, such as a BLAS pool, may still take it and interrupt anywhere.)"""

    def __enter__(self):
        self.mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())  # as it is: a Ctrl-C here changes nothing yet
        try:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        except BaseException:  # a Ctrl-C handled just as the mask changed
            signal.pthread_sigmask(signal.SIG_SETMASK, self.mask)
            raise
        return self

    def let_through(self) -> None:
        if signal.SIGINT in signal.sigpending():
            try:
                signal.pthread_sigmask(signal.SIG_SETMASK, self.mask)  # the handler runs here
            finally:
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})

    def __exit__(self, *exc):
        signal.pthread_sigmask(signal.SIG_SETMASK, self.mask)


def _stop(pool) -> None:
    """Kills the workers and waits for them, and for the pool's own thread when it was started."""
    workers = list((getattr(pool, "_processes", None) or {}).values())
    for process in workers:
        process.kill()
    thread = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=thread is None or thread.ident is not None, cancel_futures=True)
    for process in workers:
        process.join()


def _submitted(pool, grade, predictions, references, questions, workers: int):
    """The jobs, one a share (the first submit forks every worker); None when no process or thread could be
    started (no memory or process slots left): the caller grades here instead, and this process does not try
    again (each failed fork leaves the standard library's pipes open)."""
    global _fork_failed
    try:
        return [pool.submit(grade, predictions[s.start:s.stop], references[s.start:s.stop],
                            questions[s.start:s.stop]) for s in shares(len(predictions), workers)]
    except (OSError, RuntimeError) as err:  # fork's EAGAIN / ENOMEM; "can't start new thread"
        _fork_failed = f"forking failed earlier in this process ({err})"
        _stop(pool)
        return None


def _waited(jobs, ctrl_c: _NoCtrlC) -> None:
    """Until every job is done or one has failed, letting a Ctrl-C through every tenth of a second."""
    pending = set(jobs)
    while pending:
        done, pending = wait(pending, timeout=0.1, return_when=FIRST_EXCEPTION)
        if any(job.exception() is not None for job in done):
            return
        ctrl_c.let_through()


def _here(grade, predictions, references, questions) -> list:
    """The shares graded one after another in this process (a grading function that empties its memos between
    blocks, as compute_factual's does, gets blocks of at most MAX_SHARE answers)."""
    return [value for s in shares(len(predictions), 1)
            for value in grade(predictions[s.start:s.stop], references[s.start:s.stop], questions[s.start:s.stop])]


def _graded(grade, grouped, workers: int, ctrl_c: _NoCtrlC) -> list:
    try:
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                   initializer=_worker_start, initargs=(os.getpid(),))
    except OSError:  # no /dev/shm for its locks
        return _here(grade, *grouped)
    try:
        jobs = _submitted(pool, grade, *grouped, workers)
        if jobs is None:
            return _here(grade, *grouped)
        _waited(jobs, ctrl_c)
        out = [value for job in jobs for value in job.result()]
    except BrokenProcessPool as err:
        _stop(pool)
        raise RuntimeError(f"a process grading factual answers ended abruptly ({err}); {ENV}=1 grades them in "
                           "this process only") from None
    except BaseException:
        _stop(pool)  # a failed share or Ctrl-C: the other workers are killed, not waited for
        raise
    pool.shutdown(wait=True)
    return out


def graded_in_processes(grade, predictions, references, questions, workers: int) -> list:
    """grade(predictions, references, questions) -> list, run share by share in `workers` forked processes (the
    answers of one reference together, see by_reference), the results put back in the answers' order (graded
    here when no process can be forked). An exception raised by a share is raised here (with the worker's
    traceback as its cause) once the workers are stopped; a worker that dies (killed, out of memory) is a
    RuntimeError saying how to grade in one process; Ctrl-C stops the workers, then is raised."""
    if not len(predictions) == len(references) == len(questions):
        raise ValueError(f"{len(predictions)} answers, {len(references)} references, {len(questions)} questions")
    load_tables()
    order = by_reference(references)
    grouped = [[values[i] for i in order] for values in (predictions, references, questions)]
    with _NoCtrlC() as ctrl_c:
        out = _graded(grade, grouped, workers, ctrl_c)
    joined = [None] * len(order)
    for value, i in zip(out, order, strict=True):
        joined[i] = value
    return joined
