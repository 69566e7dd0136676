"""The one JSON reader with limits and the one atomic writer.

Every JSON or JSON Lines file the toolkit reads comes from someone else (a submission, its metadata, a results
folder, a queue mirror, a RAGChecker export, a review sheet), so every one is read here: text that is not UTF-8,
nesting deeper than MAX_DEPTH, an integer longer than MAX_INT_DIGITS digits or a file over its size cap is an
InputError naming the file and line, never a traceback deep inside the code that walks the document later.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import time
import uuid
from pathlib import Path
from typing import Iterator

from chimdqa_eval.schema import InputError

MAX_DEPTH = 64            # nested arrays/objects; real documents here stay under 10
MAX_INT_DIGITS = 100      # Python refuses to parse 4,300+ digits with a ValueError; we refuse far earlier
MAX_FILE_BYTES = 512 * 2**20
_LONG_INT = re.compile(r"-?\d{%d,}" % (MAX_INT_DIGITS + 1))


class _TooLong(ValueError):
    pass


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _TooLong(len(text.lstrip("-")))
    return int(text)


def _too_deep(value) -> bool:
    """Whether `value` nests arrays/objects deeper than MAX_DEPTH (iterative: no recursion limit to hit)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                if depth + 1 > MAX_DEPTH:
                    return True
                stack.append((child, depth + 1))
    return False


def _line_of(text: str | bytes, position: int) -> int:
    return text.count("\n" if isinstance(text, str) else b"\n", 0, position) + 1


def loads(text: str | bytes, location: str, *, first_line: int | None = None, bom: bool = True):
    """Parse one JSON document. `location` names it in errors. A whole file's errors name their line; a line of
    a JSON Lines file is given with `first_line` (its line number, which `location` already names)."""
    whole = first_line is None
    first_line = 1 if whole else first_line
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig" if bom else "utf-8")
        except UnicodeDecodeError as err:
            line = f", line {_line_of(text, err.start)}" if whole else ""
            raise InputError(f"{location}: not UTF-8 text ({err.reason} at byte {err.start}{line})") from None
    elif bom and text.startswith("\ufeff"):
        text = text[1:]
    try:
        value = json.loads(text, parse_int=_parse_int)
    except json.JSONDecodeError as err:
        raise InputError(f"{location}: not valid JSON ({err.msg} at line {first_line + err.lineno - 1}, "
                         f"column {err.colno})") from None
    except _TooLong as err:
        match = _LONG_INT.search(text)
        line = f"line {_line_of(text, match.start())}: " if whole and match else ""
        raise InputError(f"{location}: {line}an integer of {err.args[0]} digits (at most {MAX_INT_DIGITS} "
                         "are read)") from None
    except RecursionError:
        value = None
        deep = True
    else:
        deep = text.count("[") + text.count("{") > MAX_DEPTH and _too_deep(value)
    if deep:
        raise InputError(f"{location}: JSON nested more than {MAX_DEPTH} levels deep")
    return value


def read_json(path, *, what: str = "JSON file", max_bytes: int = MAX_FILE_BYTES, label: str | None = None):
    """The JSON document in the file at `path` (a byte-order mark allowed). Missing, a folder, over `max_bytes`,
    not UTF-8, not JSON, too deep: an InputError starting with `label` (default: the path)."""
    path = Path(path)
    label = label or str(path)
    data = read_capped(path, what=what, max_bytes=max_bytes, label=label)
    return loads(data, label)


def read_capped(path, *, what: str, max_bytes: int, label: str | None = None) -> bytes:
    """The bytes of a regular file, refusing folders, missing files and files over `max_bytes`."""
    path = Path(path)
    label = label or str(path)
    if path.is_dir():
        raise InputError(f"{label}: is a folder; expected a {what}")
    try:
        with path.open("rb") as f:
            data = f.read(max_bytes + 1)
    except FileNotFoundError:
        raise InputError(f"{label}: no such {what}") from None
    except OSError as err:
        raise InputError(f"{label}: cannot read the {what} ({err.strerror or err})") from None
    if len(data) > max_bytes:
        raise InputError(f"{label}: larger than {max_bytes:,} bytes, the most a {what} may hold")
    return data


def iter_jsonl(path, *, what: str = "JSON Lines file", max_bytes: int = MAX_FILE_BYTES,
               label: str | None = None) -> Iterator[tuple[int, object, str | None]]:
    """(line number, record, problem) for every non-blank line of a JSON Lines file: `problem` is None and
    `record` the parsed value, or `record` is the raw text of the line and `problem` says what is wrong with it
    (not UTF-8, not JSON, too deep, a huge integer), so a caller can list every bad line at once. A byte-order
    mark on the first line is allowed. The file as a whole over `max_bytes` is an InputError."""
    path = Path(path)
    label = label or path.name
    if path.is_dir():
        raise InputError(f"{path}: is a folder; expected a {what}")
    if not path.is_file():
        raise InputError(f"{path}: no such {what}")
    size = path.stat().st_size
    if size > max_bytes:
        raise InputError(f"{path}: {size:,} bytes, larger than {max_bytes:,}, the most a {what} may hold")
    with path.open("rb") as f:
        for line_no, raw in enumerate(f, 1):
            try:
                text = raw.decode("utf-8-sig" if line_no == 1 else "utf-8")
            except UnicodeDecodeError as err:
                yield line_no, raw.decode("utf-8", "replace"), f"not UTF-8 text ({err.reason} at byte {err.start})"
                continue
            if not text.strip():
                continue
            try:
                record = loads(text.rstrip("\r\n"), f"{label} line {line_no}", first_line=line_no, bom=False)
            except InputError as err:
                yield line_no, text, str(err).split(": ", 1)[1]
                continue
            yield line_no, record, None


def dumps(value, *, indent: int | None = 1) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent) + "\n"


_WRITE_BUFFER = 2**20  # bytes gathered before a write, when the content comes in pieces


def _sync_folder(folder: Path) -> None:
    """fsync a folder, so a rename in it is on disk; where folders cannot be opened (Windows) the rename stands
    as the file system keeps it."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass  # some file systems refuse fsync on a folder: the rename is as durable as they make it
    finally:
        os.close(descriptor)


def write_atomic(path, content, *, digest=None) -> Path:
    """Write `content` (text as UTF-8) to a temporary file next to `path`, then rename it over `path`: readers
    see the old file or the new one, never half of one. Temporary files a killed writer left behind for the
    same target are removed first.

    `content` is a str or bytes, or an iterable of them written one after another (JSON Lines made row by row:
    the whole file is never in memory); an error while they are made, like any other, leaves `path` as it was.
    `digest` (a hashlib object) is updated with every byte written. A file replaced keeps its permission bits
    (a new one gets the umask's); the folder is synced after the rename, so the new name outlives a power cut."""
    path = Path(path)
    if isinstance(content, (str, bytes)):  # encoding errors: before any write
        pieces = [content.encode("utf-8") if isinstance(content, str) else content]
    else:
        pieces = (piece.encode("utf-8") if isinstance(piece, str) else piece for piece in content)
    remove_stale_temporaries(path)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with temporary.open("xb", buffering=_WRITE_BUFFER) as f:
            for piece in pieces:
                f.write(piece)
                if digest is not None:
                    digest.update(piece)
            f.flush()
            os.fsync(f.fileno())
        with contextlib.suppress(FileNotFoundError):
            os.chmod(temporary, path.stat().st_mode & 0o777)
        os.replace(temporary, path)
        _sync_folder(path.parent)
    except OSError as err:  # name the file the caller asked for, not our temporary one
        raise OSError(err.errno, err.strerror, str(path)) from None
    finally:
        with contextlib.suppress(OSError):  # gone already, or its folder was never there
            temporary.unlink()
    return path


def write_json_atomic(path, value, *, indent: int | None = 1) -> Path:
    return write_atomic(path, dumps(value, indent=indent))


_STALE_AFTER = 3600.0  # a temporary file this old belongs to a writer that died, not to one still writing


def remove_stale_temporaries(path, *, older_than: float = _STALE_AFTER) -> int:
    """Remove `.NAME.xxxxxxxx.tmp` files beside `path` that a killed writer left (only ones older than
    `older_than` seconds, so a concurrent writer's file is never taken away). The count removed."""
    path = Path(path)
    pattern = re.compile(r"\." + re.escape(path.name) + r"\.[0-9a-f]{8}\.tmp")
    removed = 0
    try:
        candidates = list(path.parent.iterdir())
    except OSError:
        return 0
    now = time.time()
    for candidate in candidates:
        if not pattern.fullmatch(candidate.name):
            continue
        try:
            if now - candidate.lstat().st_mtime > older_than:
                candidate.unlink()
                removed += 1
        except OSError:
            continue
    return removed

