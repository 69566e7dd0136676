"""The queue folder: the maintainer's own record of every request and the predictions it names.

    QUEUE/requests/<id>.json       id, model, submitter, date, sha256, status, attempts, history, reason, …
    QUEUE/predictions/<id>.jsonl   the submitted predictions (+ <id>.meta.json when metadata was given)
    QUEUE/.lock                    held (filelock) for every read-modify-write of a request file

A request moves PENDING -> RUNNING -> FINISHED or FAILED. Every change happens under the queue's lock and is
written to a temporary file that replaces the old one, so a reader never sees half a request and two processors
never take the same one. A RUNNING request carries its processor's heartbeat; one whose heartbeat is older than
the board's `stale_after` belonged to a processor that died and is taken over (up to `max_attempts`).

Paths are never taken from a request file: a request's predictions are `predictions/<id>.jsonl` and its results
`<results>/<id>/`, with ids of one fixed shape, so no file can name a place outside the queue.
"""
from __future__ import annotations

import datetime
import math
import re
import shutil
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import jsonschema
from filelock import FileLock

from chimdqa_eval.jsonio import read_json, write_json_atomic
from chimdqa_eval.report.results import file_sha256
from chimdqa_eval.schema import METADATA_LIMITS, InputError, schema_problems, shown

STATUSES = ("PENDING", "RUNNING", "FINISHED", "FAILED")
DAY = 24 * 3600.0
# <UTC time>-<model slug>-<sha256 prefix>, as `add` makes them; nothing else is a request id
ID_PATTERN = r"^[0-9]{8}T[0-9]{6}-[A-Za-z0-9._-]{1,40}-[0-9a-f]{8}$"
REQUEST_BYTES = 64 * 2**10
SUBMITTER_LIMIT = 100

# text shown in tables and terminals: no control characters (an escape sequence) and no lone surrogates
_TEXT = {"type": "string", "minLength": 1, "pattern": r"^[^\x00-\x1f\x7f-\x9f\ud800-\udfff]*$"}
# What a participant writes when submitting: the only fields ever read from a mirror.
SUBMITTED = {
    "id": {"type": "string", "pattern": ID_PATTERN},
    "model": {**_TEXT, "maxLength": METADATA_LIMITS["model"]},
    "submitter": {**_TEXT, "maxLength": SUBMITTER_LIMIT},
    "date": {**_TEXT, "maxLength": 40},
    "submitted_at": {"type": "number", "minimum": 0, "maximum": 1e11},  # and finite: see schema_problem
    "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    "predictions": {"type": "string"},
    "metadata": {"type": ["string", "null"]},
    "allow_partial": {"type": "boolean"},
}
_NULLABLE_TEXT = {"type": ["string", "null"], "maxLength": 20000}
_TIME = {"type": ["number", "null"]}
# What the processor adds, in its own queue folder only.
REQUEST_SCHEMA = {
    "type": "object",
    "properties": {
        **SUBMITTED,
        "status": {"enum": list(STATUSES)},
        "attempts": {"type": "integer", "minimum": 0},
        "worker": _NULLABLE_TEXT, "heartbeat": _TIME, "reason": _NULLABLE_TEXT, "results": _NULLABLE_TEXT,
        "received_at": _TIME, "board": _NULLABLE_TEXT,
        "history": {"type": "array", "items": {"type": "object", "required": ["status", "at", "by"]}},
    },
    "required": [*SUBMITTED, "status", "attempts", "worker", "heartbeat", "reason", "results", "history"],
}
SUBMITTED_SCHEMA = {"type": "object", "properties": SUBMITTED, "required": list(SUBMITTED)}


def iso(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc).isoformat(timespec="seconds")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:40] or "model"


def arrived(request: dict) -> float:
    """When the queue got a request: the processor's own clock for one taken from a mirror (a participant's
    `submitted_at` is only what they wrote), the submitting command's for one added here."""
    return request.get("received_at") or request["submitted_at"]


def is_request_id(text: str) -> bool:
    return re.fullmatch(ID_PATTERN, text) is not None


def schema_problem(doc, schema: dict) -> str | None:
    """The first way `doc` breaks `schema`, in the words of schema.schema_problems (naming the field); None when it
    fits. Numbers must be finite (JSON Schema's bounds let NaN through)."""
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=lambda e: list(map(str, e.path)))
    problems = schema_problems(errors, whole="the request")
    if problems:
        return problems[0]
    for key, value in doc.items():
        if isinstance(value, float) and not math.isfinite(value):
            return f"{key}: not a finite number"
    return None


class Queue:
    def __init__(self, root):
        self.root = Path(root)
        self.requests_dir = self.root / "requests"
        self.predictions_dir = self.root / "predictions"
        self.unreadable: dict[str, str] = {}  # request file -> why it was skipped, from the last requests()

    # -- storage ----------------------------------------------------------------------------------------------
    @contextmanager
    def lock(self):
        self.root.mkdir(parents=True, exist_ok=True)
        with FileLock(self.root / ".lock"):
            yield

    def _path(self, request_id: str) -> Path:
        if not is_request_id(request_id):
            raise InputError(f"{shown(request_id)}: not a request id")
        return self.requests_dir / f"{request_id}.json"

    def has(self, request_id: str) -> bool:
        return self._path(request_id).exists()

    def read(self, request_id: str) -> dict:
        path = self._path(request_id)
        if not path.exists():
            raise InputError(f"{path}: no such request")
        doc = read_json(path, what="request file", max_bytes=REQUEST_BYTES * 16)
        problem = schema_problem(doc, REQUEST_SCHEMA)
        if problem is None and doc["id"] != request_id:
            problem = f"id: {shown(doc['id'])} is not the file's name"
        if problem:
            raise InputError(f"{path}: not a request file ({problem})")
        return doc

    def requests(self) -> list[dict]:
        """Every readable request, oldest first. A request file that cannot be read is left out and recorded in
        `self.unreadable` with the reason (see `report_unreadable`), so one bad file stops nobody."""
        self.unreadable = {}
        if not self.requests_dir.is_dir():
            return []
        docs = []
        for path in sorted(self.requests_dir.glob("*.json")):
            if path.name.startswith("."):
                continue
            try:
                docs.append(self.read(path.stem))
            except InputError as err:
                self.unreadable[str(path)] = str(err)
        return sorted(docs, key=lambda d: (arrived(d), d["id"]))

    def report_unreadable(self, out=None) -> None:
        for reason in self.unreadable.values():
            print(f"warning: skipped {reason}", file=out or sys.stderr)

    def _save(self, doc: dict) -> None:
        self.requests_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self._path(doc["id"]), doc)

    def predictions_path(self, request: dict) -> Path:
        self._path(request["id"])  # checks the id's shape
        return self.predictions_dir / f"{request['id']}.jsonl"

    def metadata_path(self, request: dict) -> Path | None:
        self._path(request["id"])
        return self.predictions_dir / f"{request['id']}.meta.json" if request.get("metadata") else None

    # -- participant side -------------------------------------------------------------------------------------
    def add(self, predictions, *, model: str, submitter: str, metadata=None, allow_partial: bool = False,
            per_day: int | None = None, now: float | None = None) -> dict:
        """Copy a (validated) predictions file into the queue as a PENDING request. An identical file already in
        the queue, or a submitter over the daily limit, is refused naming the earlier request(s)."""
        now = time.time() if now is None else now
        sha = file_sha256(predictions)
        with self.lock():
            earlier = self.requests()
            same = next((r for r in earlier if r["sha256"] == sha and r["status"] != "FAILED"), None)
            if same is not None:
                raise InputError(f"{predictions}: the same predictions file (sha256 {sha[:12]}…) is already in the "
                                 f"queue as request {same['id']} ({same['status']}, model {same['model']!r}, "
                                 f"submitted {same['date']})")
            recent = [r for r in earlier if r["submitter"] == submitter and now - arrived(r) < DAY]
            if per_day is not None and len(recent) >= per_day:
                raise InputError(f"submitter {submitter!r} has already submitted {len(recent)} request(s) in the "
                                 f"last 24 hours ({', '.join(r['id'] for r in recent)}); this board accepts "
                                 f"{per_day} per day")
            stamp = now
            while True:  # a file submitted again (after its request FAILED) gets an id of its own
                request_id = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime(stamp))}-{_slug(model)}-{sha[:8]}"
                if not self.has(request_id):
                    break
                stamp += 1
            self.predictions_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(predictions, self.predictions_dir / f"{request_id}.jsonl")
            meta_name = None
            if metadata is not None:
                meta_name = f"predictions/{request_id}.meta.json"
                shutil.copyfile(metadata, self.root / meta_name)
            doc = {"id": request_id, "model": model, "submitter": submitter, "date": iso(now), "submitted_at": now,
                   "sha256": sha, "status": "PENDING", "predictions": f"predictions/{request_id}.jsonl",
                   "metadata": meta_name, "allow_partial": allow_partial, "attempts": 0, "worker": None,
                   "heartbeat": None, "reason": None, "results": None,
                   "history": [{"status": "PENDING", "at": iso(now), "by": submitter}]}
            problem = schema_problem(doc, REQUEST_SCHEMA)
            if problem:
                raise InputError(f"{predictions}: cannot be submitted ({problem})")
            self._save(doc)  # last: a request file only ever names predictions that are already there
        return doc

    # -- maintainer side --------------------------------------------------------------------------------------
    def receive(self, submitted: dict, predictions: bytes | None, metadata: bytes | None, *, problem: str | None,
                now: float | None = None) -> dict | None:
        """Record a request taken in from a mirror: the participant's own fields (already checked against
        SUBMITTED_SCHEMA), a status this processor sets — PENDING, or FAILED with `problem` — and the verified
        bytes of its files. None when the queue already holds a request with that id (a mirror never changes it)."""
        now = time.time() if now is None else now
        rid = submitted["id"]
        with self.lock():
            if self.has(rid):
                return None
            if problem is None:
                self.predictions_dir.mkdir(parents=True, exist_ok=True)
                write_bytes = {f"{rid}.jsonl": predictions, f"{rid}.meta.json": metadata}
                for name, data in write_bytes.items():
                    if data is not None:
                        (self.predictions_dir / name).write_bytes(data)
            doc = {**{k: submitted[k] for k in SUBMITTED}, "predictions": f"predictions/{rid}.jsonl",
                   "metadata": f"predictions/{rid}.meta.json" if metadata is not None else None,
                   "status": "PENDING", "attempts": 0, "worker": None, "heartbeat": None, "reason": None,
                   "results": None, "received_at": now,
                   "history": [{"status": "PENDING", "at": iso(now), "by": "intake"}]}
            if problem:
                doc["reason"] = problem
                self._move(doc, "FAILED", "intake", now, "refused at intake")
            self._save(doc)
        return doc

    def _move(self, doc: dict, status: str, by: str, now: float, note: str | None = None) -> None:
        doc["status"] = status
        doc["history"].append({"status": status, "at": iso(now), "by": by, **({"note": note} if note else {})})

    def claim(self, worker: str, *, stale_after: float, max_attempts: int, now: float | None = None) -> dict | None:
        """Take the oldest PENDING request, or a RUNNING one whose processor stopped beating, as RUNNING for
        `worker`; None when there is nothing to do. A request whose processors died `max_attempts` times is
        FAILED instead of being tried again."""
        now = time.time() if now is None else now
        with self.lock():
            for doc in self.requests():
                stale = doc["status"] == "RUNNING" and now - (doc["heartbeat"] or 0) > stale_after
                if doc["status"] != "PENDING" and not stale:
                    continue
                if stale and doc["attempts"] >= max_attempts:
                    doc["reason"] = (f"scoring was interrupted {doc['attempts']} times (processors stopped without "
                                     "finishing); contact the board's maintainers")
                    self._move(doc, "FAILED", worker, now, "too many interrupted attempts")
                    self._save(doc)
                    continue
                note = f"taken over from {doc['worker']} (no heartbeat for {now - (doc['heartbeat'] or 0):.0f} s)" \
                    if stale else None
                doc.update(worker=worker, heartbeat=now, attempts=doc["attempts"] + 1)
                self._move(doc, "RUNNING", worker, now, note)
                self._save(doc)
                return doc
        return None

    def requeue_other_settings(self, board: str, by: str, now: float | None = None) -> list[str]:
        """Put every FINISHED request scored under settings other than `board` (the board's signature) back to
        PENDING, so no row is ranked under settings it was not scored with. The ids put back."""
        now = time.time() if now is None else now
        moved = []
        with self.lock():
            for doc in self.requests():
                if doc["status"] != "FINISHED" or doc.get("board") == board:
                    continue
                doc.update(attempts=0, worker=None, reason=None)
                self._move(doc, "PENDING", by, now, f"the board's settings changed (was {doc.get('board')}); "
                                                    "to be scored again")
                self._save(doc)
                moved.append(doc["id"])
        return moved

    def beat(self, request_id: str, worker: str, now: float | None = None) -> bool:
        """Refresh the heartbeat of a request `worker` holds; False when it no longer holds it."""
        with self.lock():
            doc = self.read(request_id)
            if doc["status"] != "RUNNING" or doc["worker"] != worker:
                return False
            doc["heartbeat"] = time.time() if now is None else now
            self._save(doc)
            return True

    def settle(self, request_id: str, worker: str, status: str, *, reason: str | None = None,
               results: str | None = None, board: str | None = None, note: str | None = None,
               on_owned=None) -> bool:
        """End `worker`'s attempt: FINISHED (with the board signature it was scored under), FAILED (with a reason
        the participant can act on) or PENDING (back in the queue). `on_owned()` runs under the lock just before,
        only while the worker still holds the request (e.g. moving its results into place). False when another
        processor has taken the request over."""
        now = time.time()
        with self.lock():
            doc = self.read(request_id)
            if doc["status"] != "RUNNING" or doc["worker"] != worker:
                return False
            if on_owned is not None:
                on_owned()
            doc.update(reason=reason, results=results, worker=None if status == "PENDING" else worker,
                       heartbeat=None, board=board)
            self._move(doc, status, worker, now, note)
            self._save(doc)
            return True
