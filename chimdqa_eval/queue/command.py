"""`chimdqa queue submit | process | status`: the leaderboard's submission queue.

Participants run `submit`: the predictions are checked against the board's release exactly as `chimdqa
evaluate` checks them, then copied into the queue as a PENDING request. The maintainer runs `process`: it takes
each PENDING request, scores it with the board's pinned settings (leaderboard.yaml), stores its results folder,
marks it FINISHED — or FAILED with a reason the participant can act on — and rebuilds the board.
"""
from __future__ import annotations

import contextlib
import fcntl
import functools
import getpass
import os
import shutil
import socket
import sys
import threading
import time
import uuid
from pathlib import Path

from chimdqa_eval.jsonio import write_atomic
from chimdqa_eval.queue.board_config import CONFIG_FILE, BoardConfig, load_board_config, public_yaml
from chimdqa_eval.queue.store import DAY, Queue, arrived
from chimdqa_eval.queue.sync import files_under, mirror_for, pull_view, take_new_requests
from chimdqa_eval.report.results import file_sha256
from chimdqa_eval.schema import InputError

BOARD_FILES = ("leaderboard.csv", "leaderboard.md", "index.html", "README.md")


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    submit = sub.add_parser("submit", help="validate a predictions file and add it to the queue",
                            description="validate a predictions file against the board's release and add it to "
                                        "the queue as a PENDING request")
    submit.add_argument("predictions", metavar="PREDICTIONS", help="predictions jsonl (as for chimdqa evaluate)")
    submit.add_argument("--queue", required=True, metavar="DIR", help="the queue folder")
    submit.add_argument("--model", help="model name (default: the metadata's, else the file's stem)")
    submit.add_argument("--metadata", metavar="FILE", help="metadata JSON (default: <stem>.meta.json if present)")
    submit.add_argument("--submitter", help="who submits (default: the login name)")
    submit.add_argument("--allow-partial", action="store_true", help="accept a file that leaves questions out")
    submit.add_argument("--data-dir", metavar="DIR", help="where the board's release is on this machine "
                                                          "(default: the one leaderboard.yaml names)")
    process = sub.add_parser("process", help="score pending requests with the pinned settings, rebuild the board",
                             description="score PENDING requests (and those whose processor died) with the "
                                         "board's pinned settings, store their results, rebuild the board")
    process.add_argument("--queue", required=True, metavar="DIR", help="the queue folder")
    process.add_argument("--results", required=True, metavar="DIR", help="folder of one results folder per request")
    process.add_argument("--board", required=True, metavar="DIR", help="the leaderboard folder to rebuild")
    mode = process.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="one pass over the queue, then exit (default)")
    mode.add_argument("--watch", type=float, metavar="SECONDS", help="keep processing, looking again every SECONDS")
    status = sub.add_parser("status", help="print the queue", description="print every request with its status")
    status.add_argument("--queue", required=True, metavar="DIR", help="the queue folder")
    status.add_argument("--results", metavar="DIR", help="the processor's results folder (marks FINISHED requests "
                                                         "whose results are gone)")
    for p in (submit, process):
        p.add_argument("--config", metavar="FILE", help=f"the board's settings (default: {CONFIG_FILE} in the queue "
                                                        "folder; `process` never reads them from a mirror)")
        p.add_argument("--hub-requests", metavar="REPO",
                       help="mirror the queue to this Hub dataset repo (org/name) or folder")
    process.add_argument("--hub-results", metavar="REPO",
                         help="mirror the results to this Hub dataset repo (org/name) or folder")


def run(args) -> int:
    return {"submit": run_submit, "process": run_process, "status": run_status}[args.action](args)


def board_config(args) -> BoardConfig:
    return load_board_config(args.config or Path(args.queue) / CONFIG_FILE)


def load_questions(config: BoardConfig, data_dir=None):
    from chimdqa_eval.evaluation import load_questions as select

    selection = config.evaluation
    return select(selection.config, data_dir or selection.data_dir, selection.data_files, selection.split)


def validate(config: BoardConfig, predictions, *, metadata=None, model=None, allow_partial=False, data_dir=None):
    """The checks `chimdqa evaluate` makes before scoring; the Submission on success, InputError otherwise."""
    from chimdqa_eval.submission import load_submission

    questions, outside, _ = load_questions(config, data_dir)
    return load_submission(predictions, questions, metadata_path=metadata, metadata_overrides={"model": model},
                           allow_partial=allow_partial, outside_ids=outside)


# -- participant ----------------------------------------------------------------------------------------------
def run_submit(args) -> int:
    queue = Queue(args.queue)
    mirror = mirror_for(args.hub_requests)
    if mirror:
        pull_view(mirror, queue.root)
    config = board_config(args)
    submission = validate(config, args.predictions, metadata=args.metadata, model=args.model,
                          allow_partial=args.allow_partial, data_dir=args.data_dir)
    from chimdqa_eval.submission import metadata_path_for

    metadata = args.metadata or (metadata_path_for(args.predictions)
                                 if metadata_path_for(args.predictions).is_file() else None)
    request = queue.add(args.predictions, model=submission.metadata["model"],
                        submitter=args.submitter or getpass.getuser(), metadata=metadata,
                        allow_partial=args.allow_partial, per_day=config.per_submitter_per_day)
    queue.report_unreadable()
    if mirror:  # only this request's files: the rest of the mirror is the board's, not the participant's
        names = [request["predictions"], *([request["metadata"]] if request["metadata"] else []),
                 f"requests/{request['id']}.json"]
        problems = mirror.publish(files_under(queue.root, names), f"submit {request['id']}")
        if problems:
            raise InputError("the request could not be put in the mirror:\n  " + "\n  ".join(problems))
    print(f"queued {request['id']}: model {request['model']!r}, {len(submission.items)} questions "
          f"(coverage {100 * submission.coverage:.1f}%), status PENDING")
    return 0


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
    from chimdqa_eval.evaluation import evaluate

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
    from chimdqa_eval.report.results import read_results

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
    from chimdqa_eval.report.leaderboard import write_leaderboard

    signature = config.signature(revision)
    with open(queue.root / ".board.lock", "a+") as handle:  # not in the board folder: that one is published
        fcntl.flock(handle, fcntl.LOCK_EX)
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
    from chimdqa_eval.report.results import check_writable

    config.evaluation.check_judge()
    check_writable(results_dir, "--results")


def run_process(args) -> int:
    config = board_config(args)
    preflight(config, Path(args.results))
    queue = Queue(args.queue)
    worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
    mirrors = {"requests_mirror": mirror_for(args.hub_requests), "results_mirror": mirror_for(args.hub_results)}
    log = functools.partial(print, flush=True)
    while True:
        try:
            done = process_once(queue, config, Path(args.results), Path(args.board), worker=worker, log=log,
                                **mirrors)
        except ProcessingError as err:
            print(f"chimdqa queue process: {err}\n(the request is back in the queue; fix the cause and run again)",
                  file=sys.stderr)
            return 1
        print(f"processed {len(done)} request(s)" + (f": {done}" if done else ""), flush=True)
        if args.watch is None:
            return 0
        time.sleep(args.watch)


def run_status(args) -> int:
    queue = Queue(args.queue)
    requests = queue.requests()
    queue.report_unreadable(sys.stdout)
    if not requests:
        print(f"{args.queue}: no readable request in the queue")
        return 0
    print(f"{'request':<52} {'status':<9} {'submitter':<14} date")
    for r in requests:
        shown_status = r["status"]
        if args.results and r["status"] == "FINISHED" and not (Path(args.results) / r["id"]).is_dir():
            shown_status += " (results missing)"
        print(f"{r['id']:<52} {shown_status:<9} {r['submitter'][:14]:<14} {r['date']}")
        for line in (r.get("reason") or "").splitlines():  # a FAILED request's reason, in full
            print(f"    {line}")
    counts = {s: sum(r["status"] == s for r in requests) for s in ("PENDING", "RUNNING", "FINISHED", "FAILED")}
    print(", ".join(f"{n} {s.lower()}" for s, n in counts.items()))
    return 0
