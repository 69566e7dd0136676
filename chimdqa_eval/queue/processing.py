"""What the leaderboard's queue does with a request: check a submission as `chimdqa evaluate` would (`validate`),
score a PENDING request with the board's pinned settings into its own results folder and mark it FINISHED or
FAILED with a reason the participant can act on (`process_once`), and rebuild the board from the FINISHED rows.
The command that drives it is chimdqa_eval.commands.queue."""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
from pathlib import Path

from filelock import FileLock

from chimdqa_eval.evaluation import evaluate
from chimdqa_eval.evaluation import load_questions as select
from chimdqa_eval.jsonio import write_atomic
from chimdqa_eval.queue.board_config import BoardConfig, public_yaml
from chimdqa_eval.queue.store import DAY, Queue, arrived
from chimdqa_eval.queue.sync import files_under, take_new_requests
from chimdqa_eval.report.leaderboard import write_leaderboard
from chimdqa_eval.report.results import check_writable, file_sha256, read_results
from chimdqa_eval.schema import InputError
from chimdqa_eval.submission import load_submission

BOARD_FILES = ("leaderboard.csv", "leaderboard.md", "index.html", "README.md")


def load_questions(config: BoardConfig, data_dir=None):
    selection = config.evaluation
    return select(selection.config, data_dir or selection.data_dir, selection.data_files, selection.split)


def validate(config: BoardConfig, predictions, *, metadata=None, model=None, allow_partial=False, data_dir=None):
    """The checks `chimdqa evaluate` makes before scoring; the Submission on success, InputError otherwise."""
    questions, outside, _ = load_questions(config, data_dir)
    return load_submission(predictions, questions, metadata_path=metadata, metadata_overrides={"model": model},
                           allow_partial=allow_partial, outside_ids=outside)


# -- maintainer -----------------------------------------------------------------------------------------------
class Heartbeat:
    """Refresh a request's heartbeat in the background while it is scored."""

    def __init__(self, queue: Queue, request_id: str, worker: str, interval: float):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, args=(queue, request_id, worker, interval), daemon=True)

    def _beat(self, queue, request_id, worker, interval):
        while not self._stop.wait(interval):
            if not queue.beat(request_id, worker):
                return

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


class ProcessingError(RuntimeError):
    """Scoring failed for a reason on the maintainer's side (e.g. an unreachable judge endpoint)."""


def over_daily_limit(queue: Queue, request: dict, per_day: int | None) -> str | None:
    if per_day is None:
        return None
    earlier = [r for r in queue.requests() if r["submitter"] == request["submitter"] and r["id"] != request["id"]
               and 0 <= arrived(request) - arrived(r) < DAY and r["status"] != "FAILED"]
    if len(earlier) < per_day:
        return None
    return (f"submitter {request['submitter']!r} already has {len(earlier)} request(s) in the 24 hours before this "
            f"one ({', '.join(r['id'] for r in earlier)}); this board accepts {per_day} per day")


def score_request(queue: Queue, request: dict, config: BoardConfig, results_dir: Path, worker: str,
                  board: str) -> str:
    """Score one RUNNING request; returns its final status. Problems with the submission FAIL it with their
    message; problems on the maintainer's side put it back in the queue and raise ProcessingError."""
    rid = request["id"]
    limit = over_daily_limit(queue, request, config.per_submitter_per_day)
    if limit:
        queue.settle(rid, worker, "FAILED", reason=limit)
        return "FAILED"
    predictions, metadata = queue.predictions_path(request), queue.metadata_path(request)
    try:
        if not predictions.is_file() or file_sha256(predictions) != request["sha256"]:
            raise InputError(f"the predictions file is missing or changed since submission (sha256 "
                             f"{request['sha256'][:12]}… recorded when it was submitted); submit it again")
        validate(config, predictions, metadata=metadata, model=request["model"],
                 allow_partial=request.get("allow_partial", False))
    except InputError as err:  # everything in the participant's files is checked here, before scoring
        queue.settle(rid, worker, "FAILED", reason=str(err).replace(str(queue.root) + os.sep, ""))
        return "FAILED"
    # an interrupted attempt's half-written folder, and the scratch folder evaluate keeps beside it
    for left in [*results_dir.glob(f".{rid}.*"), *results_dir.glob(f"..{rid}.*")]:
        shutil.rmtree(left, ignore_errors=True)
    scratch = results_dir / f".{rid}.{worker.replace(':', '-')}"
    try:
        with contextlib.redirect_stdout(sys.stderr):  # progress of the scoring is not the processor's output
            scored = evaluate(predictions, config.evaluation.replace(allow_partial=bool(request["allow_partial"])),
                              metadata=metadata, model=request["model"])
            scored.write(scratch)
    except Exception as err:  # noqa: BLE001 — whatever broke, the request goes back and the maintainer is told
        shutil.rmtree(scratch, ignore_errors=True)
        give_up = request["attempts"] >= config.max_attempts
        # what is recorded is published: the details (endpoint, paths, server replies) go to the maintainer's log
        reason = (f"scoring failed on the board's side after {request['attempts']} attempt(s); the board's "
                  "maintainers have the details")
        if not queue.settle(rid, worker, "FAILED" if give_up else "PENDING", reason=reason if give_up else None,
                            note="scoring error on the board's side"):
            return "TAKEN OVER"  # another processor holds it now; its run counts
        raise ProcessingError(f"request {rid}: {err}") from err
    final = results_dir / rid

    def install():  # under the queue lock, only while this worker still holds the request
        if final.exists():
            shutil.rmtree(final)
        os.replace(scratch, final)

    if not queue.settle(rid, worker, "FINISHED", results=rid, board=board, on_owned=install):
        shutil.rmtree(scratch, ignore_errors=True)  # another processor took it over; its run counts
        return "TAKEN OVER"
    return "FINISHED"


def board_rows(queue: Queue, results_dir: Path, board: str, log=print) -> list[dict]:
    """The results of every FINISHED request scored under `board` (the current settings). A request whose
    results folder is gone or unreadable is reported through `log` and left off; the others still count."""
    rows = []
    for request in queue.requests():
        if request["status"] != "FINISHED" or request.get("board") != board:
            continue
        try:
            rows.append(read_results(results_dir / request["id"]))
        except InputError as err:
            log(f"warning: {request['id']} is FINISHED but its results cannot be read, so it is not on the board: "
                f"{err}")
    return rows


def rebuild_board(queue: Queue, config: BoardConfig, results_dir: Path, board_dir: Path, revision: str,
                  log=print) -> int:
    """Rewrite the board from every FINISHED request scored with the current settings. Under the board's own
    lock, reading the queue inside it: of two processors finishing at once, the one that writes last has read
    the later state, so the board never goes back to fewer rows. With no such request the board's pages are
    removed rather than left showing rows scored otherwise."""
    signature = config.signature(revision)
    with FileLock(queue.root / ".board.lock"):  # not in the board folder: that one is published
        results = board_rows(queue, results_dir, signature, log)
        if not results:
            for name in BOARD_FILES:
                (board_dir / name).unlink(missing_ok=True)
            return 0
        write_leaderboard(board_dir, results, title=config.title,
                          note=f"Every row was scored by the board's maintainers with the same pinned settings: "
                               f"{signature}")
        return len(results)


def process_once(queue: Queue, config: BoardConfig, results_dir: Path, board_dir: Path, *, worker: str,
                 requests_mirror=None, results_mirror=None, log=print) -> dict:
    """Score every request there is to score; {request id: final status}. New requests come from the mirror
    through `intake` only; the queue's own records are published back over the mirror after every change."""
    results_dir.mkdir(parents=True, exist_ok=True)
    revision = load_questions(config)[2]["revision"]
    board = config.signature(revision)
    done: dict = {}
    again = queue.requeue_other_settings(board, worker)
    if again:
        log(f"the board's settings changed: {len(again)} finished request(s) will be scored again")
        rebuild_board(queue, config, results_dir, board_dir, revision, log)
    public = queue.root / ".leaderboard.public.yaml"
    write_atomic(public, public_yaml(config))

    def publish(message):  # the processor's records and settings, over whatever the mirror holds of them
        if requests_mirror:
            for problem in requests_mirror.publish(files_under(queue.root, ("requests",)) +
                                                   [("leaderboard.yaml", public)], message):
                log(f"warning: {problem}")

    while True:
        if requests_mirror:
            take_new_requests(requests_mirror, queue, log)
            publish("queue state")
        request = queue.claim(worker, stale_after=config.stale_after, max_attempts=config.max_attempts)
        if request is None:
            break
        publish(f"{request['id']}: RUNNING")
        log(f"scoring {request['id']} (model {request['model']!r}, attempt {request['attempts']})")
        try:
            with Heartbeat(queue, request["id"], worker, interval=max(0.2, config.stale_after / 4)):
                status = score_request(queue, request, config, results_dir, worker, board)
        finally:
            publish(f"{request['id']}: settled")
        done[request["id"]] = status
        log(f"{request['id']}: {status}")
        if status == "FINISHED":
            rebuild_board(queue, config, results_dir, board_dir, revision, log)
            if results_mirror:
                for problem in results_mirror.publish(files_under(results_dir, [request["id"]]),
                                                      f"results of {request['id']}"):
                    log(f"warning: {problem}")
    queue.report_unreadable()
    return done


def preflight(config: BoardConfig, results_dir: Path) -> None:
    """The board's own settings, checked once before any request is taken, so that a mistake in them is the
    maintainer's error (exit 2) and never FAILs or holds up a participant's request."""
    config.evaluation.check_judge()
    check_writable(results_dir, "--results")
