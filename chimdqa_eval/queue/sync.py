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
import os
import shutil
import stat
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from chimdqa_eval.jsonio import loads
from chimdqa_eval.queue.store import REQUEST_BYTES, SUBMITTED_SCHEMA, Queue, is_request_id, schema_problem
from chimdqa_eval.schema import InputError

PREDICTIONS_BYTES = 256 * 2**20   # 6,068 answers with five 400-character contexts each take ~40 MB
METADATA_BYTES = 2**20


def _regular_file(path: Path, what: str, cap: int) -> bytes:
    """The bytes of `path` if it is a regular file (opened without following a link, and without blocking on a
    pipe swapped in) within `cap`; InputError saying why not."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise InputError(f"{path.name}: no such {what}") from None
    except OSError:
        raise InputError(f"{path.name}: the {what} is not a regular file") from None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise InputError(f"{path.name}: the {what} is not a regular file")
        data = handle.read(cap + 1)
    if len(data) > cap:
        raise InputError(f"{path.name}: larger than {cap:,} bytes, the most a {what} may hold")
    return data


def _linked_folder(source: Path) -> str | None:
    """Why the mirror at `source` is not read at all: a folder of it that is a link (it could lead anywhere)."""
    for name in ("requests", "predictions"):
        if (Path(source) / name).is_symlink():
            return f"ignored the mirror's {name}/: it is a link, not a folder"
    return None


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
    linked = _linked_folder(source)
    if linked:
        return [linked]
    if not folder.is_dir():
        return lines
    for path in sorted(folder.iterdir()):
        try:
            line = _take_in(Path(source), path, queue, now)
        except Exception as err:  # noqa: BLE001 — one strange file is reported and skipped, never fatal
            line = f"ignored requests/{path.name[:80]!r}: {type(err).__name__}: {err}"
        if line:
            lines.append(line)
    return lines


def _take_in(source: Path, path: Path, queue: Queue, now) -> str | None:
    """Take in one request file of the mirror; the line to log, or None for nothing to say."""
    stem = path.name[:-len(".json")] if path.name.endswith(".json") else None
    if path.name.startswith(".") or stem is None:
        return None
    if not is_request_id(stem):
        return f"ignored requests/{path.name[:80]!r}: not a request file name"
    if queue.has(stem):
        return None  # taken in before: whatever the mirror says of it now is ignored
    try:
        doc = loads(_regular_file(path, "request file", REQUEST_BYTES), f"requests/{path.name}")
    except InputError as err:
        return f"ignored {err}"
    problem = schema_problem(doc, SUBMITTED_SCHEMA) if isinstance(doc, dict) else "not a JSON object"
    if problem is None and doc["id"] != stem:
        problem = "id: not the file's name"
    if problem:
        return f"ignored requests/{path.name}: not a request a participant could have submitted ({problem})"
    if doc["predictions"] == f"predictions/{stem}.jsonl" and not os.path.lexists(source / doc["predictions"]):
        return f"waiting for {stem}: its predictions file is not in the mirror yet"
    predictions, metadata, problem = _take_files(source, doc)
    received = queue.receive(doc, predictions, metadata, problem=problem, now=now)
    if received is None:
        return None
    return f"received {stem}" + (f": FAILED ({problem})" if problem else "")


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


def _replace_in(folder: Path, name: str, source: Path) -> None:
    """Put a copy of `source` at `folder`/`name` by renaming a new file over whatever is there (a link is replaced,
    not followed); a parent of it inside `folder` that is a link or a file stops it."""
    dest = folder / name
    parent = folder
    for part in Path(name).parts[:-1]:
        parent = parent / part
        if parent.is_symlink() or (parent.exists() and not parent.is_dir()):
            raise OSError(f"{parent} is a link or a file, not a folder")
        parent.mkdir(exist_ok=True)
    if dest.is_dir() and not dest.is_symlink():
        shutil.rmtree(dest)
    temporary = parent / f".{dest.name}.{uuid.uuid4().hex[:8]}.publish.tmp"
    try:  # created anew (O_EXCL, no link followed): nothing the mirror holds is written through
        with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644), "wb") as out, \
                open(source, "rb") as data:
            shutil.copyfileobj(data, out)
        os.replace(temporary, dest)
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)


class FolderMirror:
    """A plain folder as the remote copy."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.name = str(self.folder)
        self.reported: set[str] = set()

    @contextmanager
    def snapshot(self):
        yield self.folder

    def publish(self, files: list[tuple[str, Path]], message: str) -> list[str]:
        """Copy each file over the mirror's copy. The mirror is written by others: a link, folder or pipe in the
        way is replaced, never written through, and a folder of it that is a link is not entered. The problems,
        one line each (nothing published for them)."""
        problems = []
        self.folder.mkdir(parents=True, exist_ok=True)
        for name, path in files:
            try:
                _replace_in(self.folder, name, path)
            except OSError as err:
                problems.append(f"could not publish {name} to {self.name}: {err.strerror or err}")
        return problems


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

    def publish(self, files: list[tuple[str, Path]], message: str) -> list[str]:
        from huggingface_hub import CommitOperationAdd, HfApi

        operations = [CommitOperationAdd(path_in_repo=name, path_or_fileobj=str(path)) for name, path in files]
        HfApi().create_commit(self.repo_id, operations, commit_message=message, repo_type="dataset")
        return []


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
