"""`chimdqa queue submit | process | status`: the leaderboard's submission queue (see chimdqa_eval.queue).

Participants run `submit`: the predictions are checked against the board's release exactly as `chimdqa
evaluate` checks them, then copied into the queue as a PENDING request. The maintainer runs `process`: it takes
each PENDING request, scores it with the board's pinned settings (leaderboard.yaml), stores its results folder,
marks it FINISHED — or FAILED with a reason the participant can act on — and rebuilds the board.
"""
from __future__ import annotations

import functools
import getpass
import os
import socket
import sys
import time
import uuid
from pathlib import Path

from chimdqa_eval.queue.board_config import CONFIG_FILE, BoardConfig, load_board_config
from chimdqa_eval.queue.processing import ProcessingError, preflight, process_once, validate
from chimdqa_eval.queue.store import Queue
from chimdqa_eval.queue.sync import files_under, mirror_for, pull_view
from chimdqa_eval.schema import InputError
from chimdqa_eval.submission import metadata_path_for


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


def run_submit(args) -> int:
    queue = Queue(args.queue)
    mirror = mirror_for(args.hub_requests)
    if mirror:
        pull_view(mirror, queue.root)
    config = board_config(args)
    submission = validate(config, args.predictions, metadata=args.metadata, model=args.model,
                          allow_partial=args.allow_partial, data_dir=args.data_dir)
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
