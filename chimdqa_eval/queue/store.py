"""The queue folder: one JSON file per request and the predictions it names.

    QUEUE/requests/<id>.json       id, model, submitter, date, sha256, status, attempts, history, reason, …
    QUEUE/predictions/<id>.jsonl   the submitted predictions (+ <id>.meta.json when metadata was given)
    QUEUE/.lock                    held (flock) for every read-modify-write of a request file

A request moves PENDING -> RUNNING -> FINISHED or FAILED. Every change happens under the queue's lock and is
written to a temporary file that replaces the old one, so a reader never sees half a request and two processors
never take the same one. A RUNNING request carries its processor's heartbeat; one whose heartbeat is older than
the board's `stale_after` belonged to a processor that died and is taken over (up to `max_attempts`).
"""
from __future__ import annotations

import datetime
import fcntl
import json
import re
import shutil
import time
from contextlib import contextmanager
from pathlib import Path

from chimdqa_eval.report.results import file_sha256, replace_file
from chimdqa_eval.schema import InputError

STATUSES = ("PENDING", "RUNNING", "FINISHED", "FAILED")
DAY = 24 * 3600.0


def iso(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc).isoformat(timespec="seconds")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:40] or "model"


def write_json_atomic(path: Path, doc: dict) -> None:
    replace_file(path, json.dumps(doc, ensure_ascii=False, indent=1) + "\n")


class Queue:
    def __init__(self, root):
        self.root = Path(root)
        self.requests_dir = self.root / "requests"
        self.predictions_dir = self.root / "predictions"

    # -- storage ----------------------------------------------------------------------------------------------
    @contextmanager
    def lock(self):
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _path(self, request_id: str) -> Path:
        return self.requests_dir / f"{request_id}.json"

    def read(self, request_id: str) -> dict:
        path = self._path(request_id)
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(f"{path}: no such request") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise InputError(f"{path}: not a readable request file ({err})") from None
        if not isinstance(doc, dict) or doc.get("status") not in STATUSES or doc.get("id") != request_id:
            raise InputError(f"{path}: not a request file (needs id {request_id!r} and a status)")
        return doc

    def requests(self) -> list[dict]:
        """Every request, oldest first."""
        if not self.requests_dir.is_dir():
            return []
        docs = [self.read(p.stem) for p in self.requests_dir.glob("*.json") if not p.name.startswith(".")]
        return sorted(docs, key=lambda d: (d["submitted_at"], d["id"]))

    def _save(self, doc: dict) -> None:
        self.requests_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self._path(doc["id"]), doc)

    def predictions_path(self, request: dict) -> Path:
        return self.root / request["predictions"]

    def metadata_path(self, request: dict) -> Path | None:
        return self.root / request["metadata"] if request.get("metadata") else None

    # -- participant side -------------------------------------------------------------------------------------
    def add(self, predictions, *, model: str, submitter: str, metadata=None, allow_partial: bool = False,
            per_day: int | None = None, now: float | None = None) -> dict:
        """Copy a (validated) predictions file into the queue as a PENDING request. An identical file already in
        the queue, or a submitter over the daily limit, is refused naming the earlier request(s)."""
        now = time.time() if now is None else now
        sha = file_sha256(predictions)
        with self.lock():
            earlier = self.requests()
            same = next((r for r in earlier if r["sha256"] == sha), None)
            if same is not None:
                raise InputError(f"{predictions}: the same predictions file (sha256 {sha[:12]}…) is already in the "
                                 f"queue as request {same['id']} ({same['status']}, model {same['model']!r}, "
                                 f"submitted {same['date']})")
            recent = [r for r in earlier if r["submitter"] == submitter and now - r["submitted_at"] < DAY]
            if per_day is not None and len(recent) >= per_day:
                raise InputError(f"submitter {submitter!r} has already submitted {len(recent)} request(s) in the "
                                 f"last 24 hours ({', '.join(r['id'] for r in recent)}); this board accepts "
                                 f"{per_day} per day")
            request_id = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime(now))}-{_slug(model)}-{sha[:8]}"
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
            self._save(doc)  # last: a request file only ever names predictions that are already there
        return doc

    # -- maintainer side --------------------------------------------------------------------------------------
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
                note = f"taken over from {doc['worker']} (no heartbeat for {now - doc['heartbeat']:.0f} s)" \
                    if stale else None
                doc.update(worker=worker, heartbeat=now, attempts=doc["attempts"] + 1)
                self._move(doc, "RUNNING", worker, now, note)
                self._save(doc)
                return doc
        return None

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
               results: str | None = None, note: str | None = None, on_owned=None) -> bool:
        """End `worker`'s attempt: FINISHED, FAILED (with a reason the participant can act on) or PENDING (back in
        the queue). `on_owned()` runs under the lock just before, only while the worker still holds the request
        (e.g. moving its results into place). False when another processor has taken the request over."""
        now = time.time()
        with self.lock():
            doc = self.read(request_id)
            if doc["status"] != "RUNNING" or doc["worker"] != worker:
                return False
            if on_owned is not None:
                on_owned()
            doc.update(reason=reason, results=results, worker=None if status == "PENDING" else worker,
                       heartbeat=None)
            self._move(doc, status, worker, now, note)
            self._save(doc)
            return True
