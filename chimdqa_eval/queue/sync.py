"""Mirror a queue or results folder to where the board's participants and Space see it: a Hugging Face Hub
dataset repo (`org/name`) or, for tests and self-hosted boards, another folder. The processor pulls before it
takes requests and pushes after every change of status, so the Hub repos are the queue's public copy.

Pulling copies the remote's files over the local ones, except request files the local side has moved further
(a local RUNNING / FINISHED / FAILED is never replaced by the remote's older status). One processor per queue
when mirroring through the Hub: the lock that keeps processors apart is a local file lock.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

ORDER = {"PENDING": 0, "RUNNING": 1, "FINISHED": 2, "FAILED": 2}


def _status(path: Path):
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return ORDER.get(doc.get("status"), -1), len(doc.get("history", []))
    except (OSError, ValueError, AttributeError):
        return -1, -1


def merge_into(source: Path, target: Path) -> None:
    """Copy every file of `source` into `target`; a request file only when it is not behind the target's."""
    for path in sorted(source.rglob("*")):
        if not path.is_file() or any(part.startswith(".") for part in path.relative_to(source).parts):
            continue
        dest = target / path.relative_to(source)
        if dest.is_file() and dest.parent.name == "requests" and dest.suffix == ".json":
            if _status(path) <= _status(dest):
                continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)


class FolderMirror:
    """A plain folder as the remote copy."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.name = str(self.folder)

    def pull(self, local: Path) -> None:
        if self.folder.is_dir():
            merge_into(self.folder, Path(local))

    def push(self, local: Path, message: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        merge_into(Path(local), self.folder)


class HubMirror:
    """A Hub dataset repo as the remote copy (snapshot download in, folder upload out)."""

    def __init__(self, repo_id: str):
        self.repo_id = repo_id
        self.name = f"hf://datasets/{repo_id}"

    def pull(self, local: Path) -> None:
        import tempfile

        from huggingface_hub import snapshot_download

        with tempfile.TemporaryDirectory() as tmp:
            snapshot_download(self.repo_id, repo_type="dataset", local_dir=tmp)
            merge_into(Path(tmp), Path(local))

    def push(self, local: Path, message: str) -> None:
        from huggingface_hub import HfApi

        HfApi().upload_folder(folder_path=str(local), repo_id=self.repo_id, repo_type="dataset",
                              commit_message=message, ignore_patterns=[".*", "**/.*"])


def mirror_for(spec: str | None):
    """`org/name` -> the Hub dataset repo; an existing folder, or `file://PATH` -> that folder; None -> None."""
    if not spec:
        return None
    if spec.startswith("file://"):
        return FolderMirror(spec[len("file://"):])
    if Path(spec).is_dir() or spec.startswith((".", "/")):
        return FolderMirror(spec)
    return HubMirror(spec)
