"""Mirror a queue or results folder to where the board's participants and Space see it: a Hugging Face Hub
dataset repo (`org/name`) or, for tests and self-hosted boards, another folder.

A requests mirror is written by strangers, so it is untrusted input, read only through `intake`:
- the processor takes from it only request files it has never seen, each checked against the fields a
  participant writes (id, model, submitter, date, sha256, allow_partial), and their predictions and metadata at
  the fixed paths `predictions/<id>.jsonl` / `<id>.meta.json`, as regular files under size caps, with the
  predictions' sha256 equal to the one recorded at submission;
- everything else a mirror says is ignored: its statuses, attempts, results paths and reasons, any later edit of
  a request already taken in, and its `leaderboard.yaml` (the processor's settings come only from its own file);
- the processor's own records and settings are published back over the mirror's copies, which undoes edits.
Participants read the mirror as the board's public state (`pull_view`) and publish only their new request.
"""
from __future__ import annotations

import hashlib
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from chimdqa_eval.jsonio import loads, read_capped
from chimdqa_eval.queue.store import REQUEST_BYTES, SUBMITTED_SCHEMA, Queue, is_request_id, schema_problem
from chimdqa_eval.schema import InputError

PREDICTIONS_BYTES = 256 * 2**20   # 6,068 answers with five 400-character contexts each take ~40 MB
METADATA_BYTES = 2**20


def _regular_file(path: Path, what: str, cap: int) -> bytes:
    """The bytes of `path` if it is a regular file (not a link) within `cap`; InputError saying why not."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise InputError(f"{path.name}: the {what} is not a regular file")
    return read_capped(path, what=what, max_bytes=cap, label=path.name)


def _take_files(source: Path, doc: dict) -> tuple[bytes | None, bytes | None, str | None]:
    """(predictions, metadata, problem) of a request found in a mirror. `problem` is the reason to FAIL it."""
    rid = doc["id"]
    if doc["predictions"] != f"predictions/{rid}.jsonl":
        return None, None, f"predictions: expected 'predictions/{rid}.jsonl'; a request names no other path"
    if doc["metadata"] not in (None, f"predictions/{rid}.meta.json"):
        return None, None, f"metadata: expected null or 'predictions/{rid}.meta.json'; a request names no other path"
    try:
        predictions = _regular_file(source / doc["predictions"], "predictions file", PREDICTIONS_BYTES)
        metadata = None if doc["metadata"] is None else \
            _regular_file(source / doc["metadata"], "metadata file", METADATA_BYTES)
    except InputError as err:
        return None, None, str(err)
    actual = hashlib.sha256(predictions).hexdigest()
    if actual != doc["sha256"]:
        return None, None, (f"the predictions file changed since submission (sha256 {doc['sha256'][:12]}… recorded "
                            f"when it was submitted, {actual[:12]}… now); submit it again")
    return predictions, metadata, None


def intake(source: Path, queue: Queue, *, now: float | None = None) -> list[str]:
    """Take new requests from the mirror copy at `source` into `queue` (see the module's doc). Returns one line
    per request taken in or refused, and per file that could not be a request (left where it is)."""
    lines = []
    folder = Path(source) / "requests"
    if not folder.is_dir():
        return lines
    for path in sorted(folder.iterdir()):
        stem = path.name[:-len(".json")] if path.name.endswith(".json") else None
        if path.name.startswith(".") or stem is None:
            continue
        if not is_request_id(stem):
            lines.append(f"ignored requests/{path.name[:80]}: not a request file name")
            continue
        if queue.has(stem):
            continue  # taken in before: whatever the mirror says of it now is ignored
        try:
            doc = loads(_regular_file(path, "request file", REQUEST_BYTES), f"requests/{path.name}")
        except InputError as err:
            lines.append(f"ignored {err}")
            continue
        problem = schema_problem(doc, SUBMITTED_SCHEMA)
        if problem is None and doc["id"] != stem:
            problem = "id: not the file's name"
        if problem:
            lines.append(f"ignored requests/{path.name}: not a request a participant could have submitted ({problem})")
            continue
        if not (Path(source) / doc["predictions"]).exists() and doc["predictions"] == f"predictions/{stem}.jsonl":
            lines.append(f"waiting for {stem}: its predictions file is not in the mirror yet")
            continue
        predictions, metadata, problem = _take_files(Path(source), doc)
        received = queue.receive(doc, predictions, metadata, problem=problem, now=now)
        if received is not None:
            lines.append(f"received {stem}" + (f": FAILED ({problem})" if problem else ""))
    return lines


def files_under(root: Path, names) -> list[tuple[str, Path]]:
    """(relative name, path) of every regular file under `root`/<name> for each of `names` (a file or a
    folder); links and dot files are left out."""
    found = []
    for name in names:
        top = Path(root) / name
        paths = [top] if top.is_file() else sorted(top.rglob("*")) if top.is_dir() else []
        for path in paths:
            relative = path.relative_to(root)
            if path.is_symlink() or not path.is_file() or any(p.startswith(".") for p in relative.parts):
                continue
            found.append((relative.as_posix(), path))
    return found


class FolderMirror:
    """A plain folder as the remote copy."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.name = str(self.folder)
        self.reported: set[str] = set()

    @contextmanager
    def snapshot(self):
        yield self.folder

    def publish(self, files: list[tuple[str, Path]], message: str) -> None:
        for name, path in files:
            dest = self.folder / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)


class HubMirror:
    """A Hub dataset repo as the remote copy (snapshot download in, one commit of files out)."""

    def __init__(self, repo_id: str):
        self.repo_id = repo_id
        self.name = f"hf://datasets/{repo_id}"
        self.reported: set[str] = set()

    @contextmanager
    def snapshot(self):
        from huggingface_hub import snapshot_download

        with tempfile.TemporaryDirectory() as tmp:
            snapshot_download(self.repo_id, repo_type="dataset", local_dir=tmp)
            yield Path(tmp)

    def publish(self, files: list[tuple[str, Path]], message: str) -> None:
        from huggingface_hub import CommitOperationAdd, HfApi

        operations = [CommitOperationAdd(path_in_repo=name, path_or_fileobj=str(path)) for name, path in files]
        HfApi().create_commit(self.repo_id, operations, commit_message=message, repo_type="dataset")


def pull_view(mirror, local: Path) -> None:
    """A participant's copy of the board's public state (its settings and requests), to validate against."""
    with mirror.snapshot() as source:  # not the predictions: other participants' files are of no use here
        for name, path in files_under(source, ("leaderboard.yaml", "requests")):
            dest = Path(local) / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)


def take_new_requests(mirror, queue: Queue, log) -> int:
    """`intake` from the mirror, each line passed to `log` once per processor; the number received."""
    with mirror.snapshot() as source:
        lines = intake(source, queue, now=time.time())
    for line in lines:
        if line not in mirror.reported:
            mirror.reported.add(line)
            log(line)
    return sum(line.startswith("received ") for line in lines)


def mirror_for(spec: str | None):
    """`org/name` -> the Hub dataset repo; an existing folder, or `file://PATH` -> that folder; None -> None."""
    if not spec:
        return None
    if spec.startswith("file://"):
        return FolderMirror(spec[len("file://"):])
    if Path(spec).is_dir() or spec.startswith((".", "/")):
        return FolderMirror(spec)
    return HubMirror(spec)
