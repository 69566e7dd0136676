"""The work folder every `chimdqa build` stage reads and writes, and the manifest that records each stage.

    WORK/manifest.json        per stage: the settings, versions, counts and date of its latest run, plus a history
    WORK/documents.jsonl      the documents (doc_id, domain, title, file), PDFs copied to WORK/pdf/
    WORK/pages.jsonl          the extracted text of every non-empty page (doc_id, page, text)
    WORK/generated.jsonl      every generated pair; near duplicates (`duplicate_of`) and pairs citing
                              missing pages (`invalid`) marked
    WORK/screened.jsonl       every non-duplicate pair with its screening scores, status and reason
    WORK/review/              reviewer sheets (CSV + Label Studio), the arbitration sheet, verdicts.jsonl
    WORK/llm-cache.sqlite     every LLM reply, so a stage re-run asks nothing again and an interrupted one resumes

Files are written whole and renamed into place, so an interrupted stage never leaves half a file.
"""
from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from pathlib import Path

import chimdqa_eval
from chimdqa_eval import jsonio
from chimdqa_eval.release import read_jsonl
from chimdqa_eval.schema import InputError

MANIFEST = "manifest.json"
DOCUMENTS = "documents.jsonl"
PAGES = "pages.jsonl"
GENERATED = "generated.jsonl"
SCREENED = "screened.jsonl"
REVIEW_DIR = "review"
VERDICTS = "review/verdicts.jsonl"
LLM_CACHE = "llm-cache.sqlite"

# The file each stage writes and the command that makes it, for "run this first" errors.
MADE_BY = {DOCUMENTS: "build generate", PAGES: "build generate", GENERATED: "build generate",
           SCREENED: "build screen", VERDICTS: "build review-import"}


def write_text(path: Path, text: str) -> None:
    """Write then rename (jsonio.write_atomic), so a reader never sees a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    jsonio.write_atomic(path, text)


def write_jsonl(path: Path, rows) -> None:
    write_text(path, "".join(jsonio.dumps(row, indent=None) for row in rows))


def write_json(path: Path, data) -> None:
    write_text(path, jsonio.dumps(data))


def read_rows(work: Path, name: str) -> list[dict]:
    """The records of a work file; InputError saying which stage to run when it is missing."""
    path = Path(work) / name
    if not path.is_file():
        raise InputError(f"{path}: not found; run `chimdqa {MADE_BY.get(name, 'build')}` first")
    return [record for _, record in read_jsonl(path)]


def work_dir(path) -> Path:
    path = Path(path)
    if not (path / MANIFEST).is_file():
        raise InputError(f"{path}: not a build work folder (no {MANIFEST}); run `chimdqa build generate` first")
    return path


def read_manifest(work: Path) -> dict:
    path = Path(work) / MANIFEST
    if not path.is_file():
        return {"stages": {}, "history": []}
    return jsonio.read_json(path, what="build manifest")


def file_digest(path: Path) -> str | None:
    path = Path(path)
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else None


def manifest_with_stage(work: Path, stage: str, settings: dict, counts: dict, inputs=(), **extra) -> tuple[dict, dict]:
    """(the manifest with this stage run recorded: its latest run and one line of history, the record), not
    written yet. `inputs` are the work files the stage read; their digests let later stages notice a re-run
    upstream."""
    entry = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
             "chimdqa_eval": chimdqa_eval.__version__, "settings": settings, "counts": counts,
             "inputs": {name: file_digest(Path(work) / name) for name in inputs}, **extra}
    manifest = read_manifest(work)
    manifest["stages"][stage] = entry
    manifest["history"].append({"stage": stage, "date": entry["date"], "counts": counts})
    return manifest, entry


def record_stage(work: Path, stage: str, settings: dict, counts: dict, inputs=(), **extra) -> dict:
    """Record a stage run in the manifest (manifest_with_stage) and return the record."""
    manifest, entry = manifest_with_stage(work, stage, settings, counts, inputs, **extra)
    write_json(Path(work) / MANIFEST, manifest)
    return entry


def check_fresh(work: Path, stages) -> None:
    """InputError when a file one of these stages read has changed since it ran (an earlier stage was run
    again with other results): its output no longer matches, so it must run again first."""
    recorded = read_manifest(work)["stages"]
    for stage in stages:
        for name, digest in recorded.get(stage, {}).get("inputs", {}).items():
            if file_digest(Path(work) / name) != digest:
                raise InputError(f"{Path(work) / name} has changed since `chimdqa build {stage}` ran; run "
                                 f"`chimdqa build {stage}` again first")


def stage_record(work: Path, stage: str) -> dict:
    """The manifest record of a stage's latest run; InputError when it has not run."""
    entry = read_manifest(work)["stages"].get(stage)
    if entry is None:
        raise InputError(f"{work}: stage {stage} has not run yet; run `chimdqa build {stage}` first")
    return entry


def pages_by_document(work: Path) -> dict:
    """doc_id -> {page number: text}, from WORK/pages.jsonl."""
    pages: dict = {}
    for row in read_rows(work, PAGES):
        pages.setdefault(row["doc_id"], {})[row["page"]] = row["text"]
    return pages
