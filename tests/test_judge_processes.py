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


def _pids(predictions, references, questions):  # a share's work: which process graded it
    return [os.getpid()] * len(predictions)


def _fails_on(predictions, references, questions):
    if "boom" in predictions:
        raise ValueError(f"cannot grade {predictions.index('boom')}")
    return list(predictions)


def _dies(predictions, references, questions):
    os._exit(3)  # as a worker killed for memory would


def test_decisions_in_processes_are_those_of_one_process(small_shares, validation):
    here = trace_answers(*validation)
    assert processes.plan(len(here), 2) == 2, (processes.why_not_forked(), threading.enumerate())
    assert trace_answers(*validation, workers=2) == here  # every field, in order (700 answers, 8 shares)
    assert trace_answers(*validation, workers=0) == here  # one a CPU


def test_compute_factual_gives_the_same_result_in_processes(small_shares, validation):
    one = compute_factual(*validation, workers=1)
    assert compute_factual(*validation, workers=2) == one
    assert len(one["rules"]) == len(validation[0]) and one["signature"]


def test_shares_are_graded_by_other_processes_and_joined_in_order(small_shares):
    n = 430
    pids = processes.graded_in_processes(_pids, list(range(n)), [""] * n, [""] * n, 2)
    assert len(pids) == n and os.getpid() not in pids and len(set(pids)) == 2
    echoed = processes.graded_in_processes(_fails_on, [str(i) for i in range(n)], [""] * n, [""] * n, 2)
    assert echoed == [str(i) for i in range(n)]


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


def test_no_fork_while_another_thread_runs_or_from_a_daemonic_worker(small_shares, monkeypatch, validation):
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert "other thread" in processes.why_not_forked()
        assert processes.plan(1000, 2) == 1
        assert trace_answers(*validation, workers=2) == trace_answers(*validation)  # graded here instead
    finally:
        stop.set()
        thread.join()
    assert processes.plan(1000, 2) == 2
    import multiprocessing

    monkeypatch.setattr(multiprocessing.current_process(), "_config", {"daemon": True})
    assert "daemonic" in processes.why_not_forked() and processes.plan(1000, 2) == 1


def test_a_progress_bars_monitor_thread_is_stopped_rather_than_keeping_the_judge_in_one_process(small_shares):
    from tqdm import tqdm

    with tqdm(total=1, disable=False, file=open(os.devnull, "w")) as bar:  # noqa: SIM115 - closed with the bar
        bar.update()
    assert tqdm.monitor is not None and tqdm.monitor.is_alive()  # as datasets' bars leave it while a release loads
    assert "other thread" in processes.why_not_forked()
    assert processes.plan(1000, 2) == 2
    assert not tqdm.monitor.is_alive() and processes.why_not_forked() == ""
