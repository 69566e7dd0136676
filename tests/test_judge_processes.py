"""The rule judge in several forked processes (factual/processes.py): the same decisions in the same order as in one
process, shares that cover every answer once, processes only where forking is safe, and failures that reach the
caller."""
import os
import sys
import threading
from pathlib import Path

import pytest

from chimdqa_eval.factual import compute_factual, processes
from chimdqa_eval.factual.judge_rule import trace_answers
from chimdqa_eval.schema import InputError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from judge_golden import VALIDATION_SET, load_validation_set  # noqa: E402

pytestmark = pytest.mark.skipif(processes.why_not_forked() == "this system cannot fork", reason="no fork here")


@pytest.fixture
def small_shares(monkeypatch):
    """Processes for a few hundred answers (the real floor, 1,000 a process, is for speed, not correctness)."""
    monkeypatch.setattr(processes, "MIN_SHARE", 50)
    monkeypatch.delenv(processes.ENV, raising=False)


@pytest.fixture(scope="module")
def validation():
    records = load_validation_set(VALIDATION_SET)
    return ([r["answer"] for r in records], [r["reference"] for r in records], [r["question"] for r in records])


_BOTH = None  # a barrier of the two workers, made before the fork


def _pids(predictions, references, questions):  # a share's work: which process graded it
    _BOTH.wait(timeout=30)  # each share waits for one of the other worker: neither can take them all
    return [os.getpid()] * len(predictions)


def _fails_on(predictions, references, questions):
    if "boom" in predictions:
        raise ValueError(f"cannot grade {predictions.index('boom')}")
    return list(predictions)


def _dies(predictions, references, questions):
    os._exit(3)  # as a worker killed for memory would


def test_decisions_in_processes_are_those_of_one_process(small_shares, validation, prebuilt_dictionary):
    here = trace_answers(*validation)
    assert processes.plan(len(here), 2) == 2, (processes.why_not_forked(), threading.enumerate())
    assert trace_answers(*validation, workers=2) == here  # every field, in order (700 answers, 8 shares)
    assert trace_answers(*validation, workers=0) == here  # one a CPU


def test_compute_factual_gives_the_same_result_in_processes(small_shares, validation):
    one = compute_factual(*validation, workers=1)
    assert compute_factual(*validation, workers=2) == one
    assert len(one["rules"]) == len(validation[0]) and one["signature"]


def test_shares_are_graded_by_other_processes_and_joined_in_order(small_shares):
    global _BOTH
    import multiprocessing

    _BOTH = multiprocessing.get_context("fork").Barrier(2)
    n = 430
    pids = processes.graded_in_processes(_pids, list(range(n)), [""] * n, [""] * n, 2)
    assert len(pids) == n and os.getpid() not in pids and len(set(pids)) == 2
    echoed = processes.graded_in_processes(_fails_on, [str(i) for i in range(n)], [""] * n, [""] * n, 2)
    assert echoed == [str(i) for i in range(n)]
    cycling = [f"r{i % 7}" for i in range(n)]  # the answers of a reference graded together, put back in order
    assert processes.graded_in_processes(_fails_on, [str(i) for i in range(n)], cycling, [""] * n, 2) == echoed


def _references(predictions, references, questions):
    return [(os.getpid(), tuple(sorted(set(references))))] * len(predictions)


def test_a_reference_is_read_in_one_share(small_shares):
    n = 800
    references = [f"r{i % 8}" for i in range(n)]  # interleaved: contiguous shares would each hold all eight
    graded = processes.graded_in_processes(_references, list(range(n)), references, [""] * n, 2)
    share_of = {}
    for reference, (_, share) in zip(references, graded):
        share_of.setdefault(reference, set()).add(share)
    assert all(len(shares) == 1 for shares in share_of.values()), share_of
    assert processes.by_reference(["b", "a", "b", None, "a", None]) == [0, 2, 1, 4, 3, 5]  # any other: alone


@pytest.mark.parametrize("n, workers", [(1, 1), (7, 2), (999, 2), (1000, 2), (20001, 2), (12345, 16), (4, 16)])
def test_shares_cover_every_answer_once_none_too_long(n, workers):
    ranges = processes.shares(n, workers)
    assert [i for r in ranges for i in r] == list(range(n))
    assert all(0 < len(r) <= processes.MAX_SHARE for r in ranges)
    assert len(ranges) >= min(n, workers)


def test_a_share_that_raises_raises_in_the_caller(small_shares):
    answers = ["a"] * 300 + ["boom"] + ["b"] * 100
    with pytest.raises(ValueError, match=r"cannot grade \d+"):
        processes.graded_in_processes(_fails_on, answers, answers, answers, 2)


def test_a_worker_that_dies_is_an_error_saying_how_to_grade_in_one_process():
    with pytest.raises(RuntimeError, match=f"ended abruptly.*{processes.ENV}=1"):
        processes.graded_in_processes(_dies, ["x"] * 10, ["x"] * 10, ["x"] * 10, 2)


def test_how_many_processes(small_shares, monkeypatch):
    monkeypatch.setattr(processes, "available_cpus", lambda: 4)
    assert processes.plan(1000, 1) == 1          # asked for one
    assert processes.plan(1000, 0) == 4          # one a CPU
    assert processes.plan(120, 0) == 2           # at least MIN_SHARE answers a process
    assert processes.plan(60, 0) == 1
    assert processes.plan(1000, 8) == 8          # a number asked for is taken as it is
    assert processes.plan(1000, None) == 4       # nothing asked, no variable: one a CPU
    monkeypatch.setenv(processes.ENV, "1")
    assert processes.plan(1000, None) == 1       # the variable when the caller leaves it to it
    assert processes.plan(1000, 3) == 3          # the caller's number wins
    monkeypatch.setenv(processes.ENV, "two")
    with pytest.raises(InputError, match=f"{processes.ENV}: expected a whole number.*'two'"):
        processes.plan(1000, None)
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(InputError, match="workers: expected a whole number"):
            processes.plan(1000, bad)


def test_no_fork_while_another_thread_runs(small_shares, validation):
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, name="waiting")
    thread.start()
    try:
        assert "1 other thread(s) running (waiting)" == processes.why_not_forked()
        assert processes.plan(1000, 2) == 1
        assert trace_answers(*validation, workers=2) == trace_answers(*validation)  # graded here instead
    finally:
        stop.set()
        thread.join()
    assert processes.plan(1000, 2) == 2


def test_a_native_thread_python_heard_of_counts_only_while_it_runs(small_shares):
    import _thread

    done = threading.Event()
    _thread.start_new_thread(lambda: (threading.current_thread(), done.set()), ())  # leaves a dummy Thread behind
    done.wait(5)
    for _ in range(500):  # until the OS thread has ended
        if processes.why_not_forked() == "":
            break
        threading.Event().wait(0.01)
    assert any(isinstance(t, threading._DummyThread) for t in threading.enumerate())
    assert processes.why_not_forked() == "" and processes.plan(1000, 2) == 2


def _plan_inside(_):
    return processes.plan(1000, 2), processes.why_not_forked()


def test_no_pool_inside_a_pool(small_shares):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(1, mp_context=context) as pool:  # its workers are not daemonic
        count, why = pool.submit(_plan_inside, 0).result()
    assert count == 1 and "worker of a multiprocessing pool" in why
    with context.Pool(1) as pool:  # daemonic workers
        count, why = pool.apply(_plan_inside, (0,))
    assert count == 1 and "worker of a multiprocessing pool" in why


def test_any_iterables_in_one_process_and_numpy_counts():
    import numpy as np

    assert [d.grade for d in trace_answers(iter(["3518", "不知道"]), (r for r in ["3518.17"] * 2))] == ["CO", "NA"]
    assert processes.requested_workers(np.int64(3)) == 3
    assert processes.requested_workers(np.int64(0)) == 0
    for bad in (True, 1.0):  # equal to 1, yet not a number of processes
        with pytest.raises(InputError, match="workers: expected a whole number"):
            trace_answers(["3518"], ["3518.17"], workers=bad)


def _frozen(predictions, references, questions):
    import gc

    return [gc.get_freeze_count()] * len(predictions)


def test_a_worker_freezes_what_it_inherited_and_the_program_is_left_as_it_was(small_shares):
    import gc

    objects = [object() for _ in range(1000)]  # the parent's, inherited by every worker
    counts = processes.graded_in_processes(_frozen, ["a"] * 200, ["a"] * 200, ["a"] * 200, 2)
    assert min(counts) >= len(objects) and gc.get_freeze_count() == 0  # frozen in the workers only
    gc.freeze()  # a program that froze its own objects
    try:
        frozen = gc.get_freeze_count()
        processes.graded_in_processes(_fails_on, ["a"] * 200, ["a"] * 200, ["a"] * 200, 2)
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


def test_where_no_process_can_be_forked_the_answers_are_graded_here(small_shares, monkeypatch):
    tried = []

    def no_fork():
        tried.append(1)
        raise BlockingIOError(11, "Resource temporarily unavailable")  # as fork says with no process slot left

    monkeypatch.setattr(os, "fork", no_fork)
    monkeypatch.setattr(processes, "_fork_failed", "")  # restored after the test: the next ones fork again
    answers = [f"a{i}" for i in range(200)]
    assert processes.graded_in_processes(_frozen, answers, answers, answers, 2) == [0] * 200  # here: not frozen
    assert tried and not _children(os.getpid())
    assert "forking failed earlier in this process" in processes.why_not_forked()  # not tried again
    assert processes.plan(1000, 2) == 1
    assert processes.graded_in_processes(_fails_on, answers, answers, answers, 2) == answers


def _sizes(predictions, references, questions):
    return [len(predictions)] * len(predictions)


def test_graded_here_the_shares_are_blocks_a_grading_can_empty_its_memos_between(monkeypatch):
    monkeypatch.setattr(processes, "MAX_SHARE", 300)
    answers = ["a"] * 1000
    sizes = processes._here(_sizes, answers, answers, answers)
    assert len(sizes) == 1000 and max(sizes) <= 300
    assert processes._here(_sizes, [], [], []) == [] and processes.shares(0, 2) == []
    with pytest.raises(ValueError, match="3 answers, 2 references, 3 questions"):
        processes.graded_in_processes(_sizes, ["a"] * 3, ["a"] * 2, ["a"] * 3, 2)


@pytest.mark.parametrize(("files", "cpus"), [
    ({"cpu.max": "200000 100000\n"}, 2),
    ({"cpu.max": "150000 100000\n"}, 2),      # 1.5 CPUs: two processes, one of them half the time
    ({"cpu.max": "50000 100000\n"}, 1),
    ({"cpu.max": "max 100000\n"}, 16),
    ({"cpu.max": "100000 0\n"}, 16),          # unreadable: no quota
    ({"cpu.max": "garbled"}, 16),
    ({"q": "300000\n", "p": "100000\n"}, 3),  # cgroup v1
    ({"q": "-1\n", "p": "100000\n"}, 16),
    ({}, 16),
])
def test_a_cgroup_cpu_quota_caps_the_default(tmp_path, monkeypatch, files, cpus):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    where = [(str(tmp_path / "cpu.max"), None)] if "q" not in files else [(str(tmp_path / "q"), str(tmp_path / "p"))]
    monkeypatch.setattr(processes, "_cgroup_files", lambda: where)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(16)))
    assert processes.available_cpus() == cpus


GRADER = """
import sys, time
from chimdqa_eval.factual import judge_answers
n = 40000
answers = [f"据我所知，答案是{i}年。" for i in range(n)]
print("ready", flush=True)
judge_answers(answers, [str(1000 + i % 900) for i in range(n)], ["哪一年？"] * n, workers=2)
print("finished", flush=True)
"""


def _children(pid: int) -> set:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
            return {int(c) for c in f.read().split()}
    except OSError:
        return set()


def _gone(pids, seconds: float) -> bool:
    end = __import__("time").monotonic() + seconds
    while __import__("time").monotonic() < end:
        if not any(os.path.exists(f"/proc/{p}") and "Z" not in _state(p) for p in pids):
            return True
        threading.Event().wait(0.05)
    return False


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def _grader_with_workers():
    import subprocess

    proc = subprocess.Popen([sys.executable, "-c", GRADER], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, processes.ENV: ""})
    assert proc.stdout.readline().strip() == "ready"
    for _ in range(600):  # until both workers run
        workers = _children(proc.pid)
        if len(workers) == 2:
            return proc, workers
        threading.Event().wait(0.05)
    proc.kill()
    raise AssertionError("the grader started no workers")


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads /proc")
def test_ctrl_c_twice_stops_the_grading_and_its_workers_at_once(prebuilt_dictionary):
    import signal
    import subprocess

    proc, workers = _grader_with_workers()
    proc.send_signal(signal.SIGINT)
    threading.Event().wait(0.005)  # the second while the first is being handled (the workers being stopped)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("the grader hung after Ctrl-C") from None
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    assert "Process ForkProcess" not in err, err  # the workers ignore Ctrl-C and are killed
    assert _gone(workers, 10)


FORK_INTERRUPTED = """
import os, signal, time
from chimdqa_eval.factual import processes
real = os.fork
def fork():  # Ctrl-C that arrives while the first worker is being forked
    pid = real()
    if pid and not getattr(fork, "done", False):
        fork.done = True
        os.kill(os.getpid(), signal.SIGINT)
    return pid
os.fork = fork
processes.load_tables = lambda: None  # not what this is about (and seconds without a prebuilt cache)
try:
    processes.graded_in_processes(processes.shares, [1] * 8000, [1] * 8000, [1] * 8000, 2)
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted")
me = os.getpid()
print("children:", open(f"/proc/{me}/task/{me}/children").read().split())
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads /proc")
def test_ctrl_c_while_the_workers_are_forked_leaves_none_behind():
    import subprocess

    done = subprocess.run([sys.executable, "-c", FORK_INTERRUPTED], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == ["interrupted", "children: []"], done.stdout + done.stderr
    assert "Process ForkProcess" not in done.stderr, done.stderr


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads /proc")
def test_workers_die_with_a_killed_parent(prebuilt_dictionary):
    import signal

    proc, workers = _grader_with_workers()
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert _gone(workers, 10), [(_state(p), p) for p in workers]


def test_a_progress_bars_monitor_thread_is_stopped_rather_than_keeping_the_judge_in_one_process(small_shares):
    from tqdm import tqdm

    with tqdm(total=1, disable=False, file=open(os.devnull, "w")) as bar:  # noqa: SIM115 - closed with the bar
        bar.update()
    assert tqdm.monitor is not None and tqdm.monitor.is_alive()  # as datasets' bars leave it while a release loads
    assert "other thread" in processes.why_not_forked()
    assert processes.plan(1000, 2) == 2
    assert not tqdm.monitor.is_alive() and processes.why_not_forked() == ""


SECOND_CTRL_C = """
import os, signal, sys, threading, time
from chimdqa_eval.factual import processes
processes.load_tables = lambda: None
def slow(p, r, q):
    time.sleep(0.4)
    return list(p)
n = 8000
refs = [str(i % 50) for i in range(n)]
if sys.argv[1] == "handler":  # the program's own handler, which does not stop it: the grading goes on
    seen = []
    signal.signal(signal.SIGINT, lambda *_: seen.append(1))
    threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    out = processes.graded_in_processes(slow, list(range(n)), refs, [""] * n, 2)
    print("handled", len(seen), out == list(range(n)))
else:
    real_stop = processes._stop
    def stop(pool):  # a second Ctrl-C as the workers are about to be stopped
        os.kill(os.getpid(), signal.SIGINT)
        real_stop(pool)
    processes._stop = stop
    threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    start = time.monotonic()
    try:
        processes.graded_in_processes(slow, list(range(n)), refs, [""] * n, 2)
    except KeyboardInterrupt:
        print("interrupted", time.monotonic() - start < 1.5)
me = os.getpid()
print("children:", open(f"/proc/{me}/task/{me}/children").read().split())
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads /proc")
@pytest.mark.parametrize(("how", "expected"), [("second", ["interrupted True", "children: []"]),
                                                ("handler", ["handled 1 True", "children: []"])])
def test_ctrl_c_reaches_the_programs_handler_and_a_second_one_cannot_stop_the_stopping(how, expected):
    import subprocess

    done = subprocess.run([sys.executable, "-c", SECOND_CTRL_C, how], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == expected, done.stdout + done.stderr


def test_answers_references_and_questions_of_different_numbers_are_an_error():
    for lists in ((["1", "2"], ["1"], None), (["1"], ["1"], ["q", "q"])):
        with pytest.raises(InputError, match="differ in number"):
            trace_answers(*lists)
    with pytest.raises(ValueError, match="shorter|longer"):  # iterables: found as they are read
        trace_answers(iter(["1", "2"]), iter(["1"]))
