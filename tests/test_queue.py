"""The submission queue end to end on the sample release, with local folders standing in for the Hub repos:
participants submit, the maintainer's processors score every request once with the pinned settings, a killed
processor's request is taken over, and the board has one row per finished request with the pinned signature."""
import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chat_server import ChatServer
from chimdqa_eval import cli, release
from chimdqa_eval.queue.board_config import load_board_config
from chimdqa_eval.queue.processing import load_questions, process_once
from chimdqa_eval.queue.store import Queue
from chimdqa_eval.schema import InputError

REPO = Path(__file__).resolve().parents[1]
SAMPLE = release.SAMPLE_DIR / "predictions.jsonl"
BOARD = """title: Test board
scoring:
  judge: rule
  resamples: 20
  seed: 7
limits:
  per_submitter_per_day: 2
stale_after: 600
"""


@pytest.fixture(autouse=True)
def offline(monkeypatch, unrendered_plots):
    """Offline; the pages' plots are not rasterised in this process (the queue's bookkeeping is what is tested)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def queue_cli(*args) -> int:
    return cli.main(["queue", *map(str, args)])


def variant(tmp_path, name: str, changes: dict) -> Path:
    """The sample predictions with some answers replaced (a different submission, a different sha256)."""
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:
        row["prediction"] = changes.get(row["id"], row["prediction"])
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def board(tmp_path):
    queue = tmp_path / "queue"
    queue.mkdir()
    (queue / "leaderboard.yaml").write_text(BOARD, encoding="utf-8")
    return queue, tmp_path / "results", tmp_path / "board"


def statuses(queue_dir) -> dict:
    return {r["model"]: r["status"] for r in Queue(queue_dir).requests()}


def test_round_trip(board, tmp_path, capsys):
    queue, results, board_dir = board
    bob = variant(tmp_path, "bob-model", {"aca-ret-001": "不知道", "fin-ret-001": "4.2亿元"})
    assert queue_cli("submit", SAMPLE, "--queue", queue, "--submitter", "alice") == 0
    assert queue_cli("submit", bob, "--queue", queue, "--submitter", "bob") == 0
    # the same file again is refused, naming the earlier request
    assert queue_cli("submit", SAMPLE, "--queue", queue, "--submitter", "carol") == 2
    err = capsys.readouterr().err
    first = Queue(queue).requests()[0]
    assert first["id"] in err and "already in the queue" in err
    # a wrong id is refused on the participant's machine...
    wrong = variant(tmp_path, "wrong", {})
    wrong.write_text(wrong.read_text(encoding="utf-8").replace('"aca-ret-001"', '"aca-ret-999"'), encoding="utf-8")
    assert queue_cli("submit", wrong, "--queue", queue, "--submitter", "dave") == 2
    assert "aca-ret-999" in capsys.readouterr().err
    # ...and a request that skipped that check (e.g. uploaded to the Hub repo by hand) FAILS with the reason
    Queue(queue).add(wrong, model="wrong-model", submitter="dave")
    assert statuses(queue) == {"sample-system": "PENDING", "bob-model": "PENDING", "wrong-model": "PENDING"}

    assert queue_cli("process", "--queue", queue, "--results", results, "--board", board_dir, "--once") == 0
    requests = {r["model"]: r for r in Queue(queue).requests()}
    assert {m: r["status"] for m, r in requests.items()} == {
        "sample-system": "FINISHED", "bob-model": "FINISHED", "wrong-model": "FAILED"}
    reason = requests["wrong-model"]["reason"]
    assert "aca-ret-999" in reason and "aca-ret-001" in reason  # unknown id and the missing one
    # one results folder per finished request, scored with the pinned settings
    for model in ("sample-system", "bob-model"):
        doc = json.loads((results / requests[model]["results"] / "results.json").read_text(encoding="utf-8"))
        assert doc["model"]["model"] == model
        assert doc["settings"]["resamples"] == 20 and doc["settings"]["seed"] == 7
    assert sorted(p.name for p in results.iterdir()) == sorted(requests[m]["id"] for m in ("sample-system",
                                                                                          "bob-model"))
    rows = list(csv.DictReader((board_dir / "leaderboard.csv").open(encoding="utf-8")))
    assert sorted(r["model"] for r in rows) == ["bob-model", "sample-system"]
    config = load_board_config(queue / "leaderboard.yaml")
    signature = config.signature(load_questions(config)[2]["revision"])
    assert signature in (board_dir / "index.html").read_text(encoding="utf-8")
    # bob answered one more question wrongly and one fewer: the board ranks alice's run first
    assert rows[0]["model"] == "sample-system"
    # a second pass has nothing to do
    assert queue_cli("process", "--queue", queue, "--results", results, "--board", board_dir) == 0
    assert "processed 0 request(s)" in capsys.readouterr().out
    assert queue_cli("status", "--queue", queue) == 0
    out = capsys.readouterr().out
    assert "2 finished, 1 failed" in out and "aca-ret-999" in out


def test_daily_limit(board, tmp_path, capsys):
    queue, results, board_dir = board
    for i in range(2):
        assert queue_cli("submit", variant(tmp_path, f"m{i}", {"aca-ret-001": str(i)}), "--queue", queue,
                         "--submitter", "eve") == 0
    assert queue_cli("submit", variant(tmp_path, "m2", {"aca-ret-001": "2"}), "--queue", queue,
                     "--submitter", "eve") == 2
    assert "accepts 2 per day" in capsys.readouterr().err
    # requests that bypassed the local check are held to the limit by the processor
    Queue(queue).add(variant(tmp_path, "m3", {"aca-ret-001": "3"}), model="m3", submitter="eve")
    process_once(Queue(queue), load_board_config(queue / "leaderboard.yaml"), results, board_dir, worker="w")
    assert statuses(queue) == {"m0": "FINISHED", "m1": "FINISHED", "m3": "FAILED"}
    assert "2 per day" in {r["model"]: r for r in Queue(queue).requests()}["m3"]["reason"]


def test_board_config_errors_name_the_file_and_key(tmp_path):
    path = tmp_path / "leaderboard.yaml"
    for text, expected in (("scoring:\n  judge: rule\n  tokeniser: jieba\n", "scoring.tokeniser"),
                           ("scoring:\n  out: x\n", "scoring.out"),
                           ("scoring:\n  judge: oracle\n", "--judge"),
                           ("limits:\n  per_submitter_per_day: 0\n", "per_submitter_per_day"),
                           ("benchmark: chinese_simpleqa\n", "data_files"),
                           ("colour: red\n", "colour")):
        path.write_text(text, encoding="utf-8")
        with pytest.raises(InputError, match=expected) as err:
            load_board_config(path)
        assert str(path) in str(err.value)


def test_two_processors_at_once_score_each_request_exactly_once(board, tmp_path, prebuilt_dictionary):
    queue, results, board_dir = board
    for i in range(3):
        assert queue_cli("submit", variant(tmp_path, f"model-{i}", {"aca-ret-001": f"{i}字"}), "--queue", queue,
                         "--submitter", f"team{i}") == 0
    command = [sys.executable, "-m", "chimdqa_eval.cli", "queue", "process", "--queue", str(queue),
               "--results", str(results), "--board", str(board_dir), "--once"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for _ in range(2)]
    outputs = [p.communicate(timeout=300)[0].decode() for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    requests = Queue(queue).requests()
    assert [r["status"] for r in requests] == ["FINISHED"] * 3
    for r in requests:  # one claim, by one worker, that finished
        runs = [h for h in r["history"] if h["status"] == "RUNNING"]
        assert len(runs) == 1 and r["attempts"] == 1
    scored = sum(out.count(": FINISHED") for out in outputs)
    assert scored == 3
    assert sorted(p.name for p in results.iterdir()) == sorted(r["id"] for r in requests)  # no scratch left
    rows = list(csv.DictReader((board_dir / "leaderboard.csv").open(encoding="utf-8")))
    assert sorted(r["model"] for r in rows) == ["model-0", "model-1", "model-2"]


def test_a_killed_processor_is_taken_over(tmp_path, monkeypatch):
    """A processor killed while scoring (its LLM judge never answers) leaves a RUNNING request; once its heartbeat
    is older than stale_after the next processor takes the request over and finishes it."""
    queue, results, board_dir = tmp_path / "queue", tmp_path / "results", tmp_path / "board"
    queue.mkdir()
    with ChatServer(lambda body: "结论：正确") as server:
        (queue / "leaderboard.yaml").write_text(
            f"scoring:\n  judge: llm\n  judge_model: judge-x\n  api_base: {server.api_base}\n  resamples: 0\n"
            "stale_after: 1.5\n", encoding="utf-8")
        assert queue_cli("submit", SAMPLE, "--queue", queue, "--submitter", "alice") == 0
        server.latency = 120
        child = subprocess.Popen([sys.executable, "-m", "chimdqa_eval.cli", "queue", "process", "--queue",
                                  str(queue), "--results", str(results), "--board", str(board_dir)],
                                 cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while not server.requests and time.monotonic() < deadline:  # it is scoring: the judge was asked
                time.sleep(0.1)
            assert server.requests, "the first processor never reached the judge"
            [running] = Queue(queue).requests()
            assert running["status"] == "RUNNING"
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
        config = load_board_config(queue / "leaderboard.yaml")
        # while its heartbeat is fresh the request is not taken
        assert Queue(queue).claim("early", stale_after=60, max_attempts=3) is None
        time.sleep(config.stale_after + 0.5)
        server.latency = 0
        done = process_once(Queue(queue), config, results, board_dir, worker="second")
    [request] = Queue(queue).requests()
    assert done == {request["id"]: "FINISHED"} and request["status"] == "FINISHED"
    assert request["attempts"] == 2
    assert "taken over from" in [h for h in request["history"] if h["status"] == "RUNNING"][-1]["note"]
    doc = json.loads((results / request["id"] / "results.json").read_text(encoding="utf-8"))
    assert doc["settings"]["judge"] == "llm"
    assert not [p for p in results.iterdir() if p.name.startswith(".")]  # the dead run's scratch is not kept


def test_a_request_whose_processors_keep_dying_fails(board):
    queue_dir, _, _ = board
    queue = Queue(queue_dir)
    request = queue.add(SAMPLE, model="m", submitter="s", now=1000.0)
    for attempt in range(2):
        assert queue.claim(f"w{attempt}", stale_after=10, max_attempts=2, now=2000.0 + 100 * attempt)["id"] == \
            request["id"]
    assert queue.claim("w3", stale_after=10, max_attempts=2, now=3000.0) is None
    done = queue.read(request["id"])
    assert done["status"] == "FAILED" and "interrupted 2 times" in done["reason"]


def test_hub_mirrors_on_folders(board, tmp_path):
    """--hub-requests / --hub-results take a Hub repo id or a folder; the same code syncs both."""
    queue, results, board_dir = board
    remote_requests, remote_results = tmp_path / "hub-requests", tmp_path / "hub-results"
    participant = tmp_path / "participant-queue"
    remote_requests.mkdir()
    (remote_requests / "leaderboard.yaml").write_text(BOARD, encoding="utf-8")
    assert queue_cli("submit", SAMPLE, "--queue", participant, "--submitter", "alice",
                     "--hub-requests", remote_requests) == 0
    [pending] = json.loads(next((remote_requests / "requests").glob("*.json")).read_text(encoding="utf-8")),
    assert pending["status"] == "PENDING"
    assert queue_cli("process", "--queue", queue, "--results", results, "--board", board_dir,
                     "--hub-requests", remote_requests, "--hub-results", remote_results) == 0
    remote = json.loads((remote_requests / "requests" / f"{pending['id']}.json").read_text(encoding="utf-8"))
    assert remote["status"] == "FINISHED"
    assert (remote_results / pending["id"] / "results.json").is_file()
    # the participant sees the outcome after pulling
    from chimdqa_eval.queue.sync import mirror_for, pull_view

    pull_view(mirror_for(str(remote_requests)), participant)
    assert Queue(participant).read(pending["id"])["status"] == "FINISHED"


def test_a_failure_on_the_boards_side_puts_the_request_back(tmp_path, capsys):
    """A judge that cannot grade is the maintainer's problem, not the participant's: the request goes back to
    PENDING, the processor exits 1 naming it, and a later run with a working judge finishes it."""
    queue, results, board_dir = tmp_path / "queue", tmp_path / "results", tmp_path / "board"
    queue.mkdir()
    with ChatServer(lambda body: "我无法判断") as server:
        (queue / "leaderboard.yaml").write_text(
            f"scoring:\n  judge: llm\n  judge_model: judge-x\n  api_base: {server.api_base}\n  resamples: 0\n",
            encoding="utf-8")
        assert queue_cli("submit", SAMPLE, "--queue", queue, "--submitter", "alice") == 0
        assert queue_cli("process", "--queue", queue, "--results", results, "--board", board_dir) == 1
        [request] = Queue(queue).requests()
        assert request["status"] == "PENDING" and request["id"] in capsys.readouterr().err
        assert "scoring error" in request["history"][-1]["note"]
        server.handler = lambda body: "结论：正确"
        assert queue_cli("process", "--queue", queue, "--results", results, "--board", board_dir) == 0
    [request] = Queue(queue).requests()
    assert request["status"] == "FINISHED" and request["attempts"] == 2
