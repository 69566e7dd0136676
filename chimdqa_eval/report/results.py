"""The results of one evaluation: a versioned JSON document (results.json) and its per-item file (items.jsonl).

Every number in results.json is derived from the per-item values in items.jsonl (grades, per-item scores),
so breakdowns, confidence intervals and paired comparisons never re-score anything. The layout is described
by results.schema.json, next to this file, and every results.json written or read is checked against it
(check_results); bump SCHEMA_VERSION's major part on any incompatible change.

A run folder is whole: results.json lists every other file of the run (items.jsonl, report.html) with its
sha256, and readers refuse a folder where a listed file is missing or differs, or where a file of a run lies
unlisted. A run is written into a scratch folder beside --out and swapped in only once complete (write_results),
so a run that fails or is killed leaves the previous one as it was; what a killed writer left is removed by the
next write into the folder.

    metrics: {family: {metric: {value, ci95: [low, high], n, [note: "no variation",] signature,
                                by: {column: {label: {value, ci95, n[, note]}}}}}}
    skipped: [{family, metric, reason}]
"""
from __future__ import annotations

import contextlib
import ctypes
import datetime
import errno
import functools
import hashlib
import json
import math
import os
import re
import shutil
import sys
import time
import uuid
from pathlib import Path
from collections.abc import Sequence
from typing import Callable

import jsonschema
import numpy as np

import chimdqa_eval
from chimdqa_eval.aggregate import DEFAULT_RESAMPLES, DEFAULT_SEED, NO_VARIATION, summarize
from chimdqa_eval.families import FamilyScores
from chimdqa_eval.jsonio import (MAX_FILE_BYTES, dumps, loads, read_capped, read_json, remove_stale_temporaries,
                                 write_atomic)
from chimdqa_eval.schema import (LABEL_ORDER, InputError, date_problem, described, field_name, raise_problems,
                                 schema_problems, surrogate_problem, url_problem)

try:
    import fcntl
except ImportError:  # Windows: scratch folders are then judged abandoned by their age
    fcntl = None

# 2.0: files.items_sha256 and run_id (1.x folders could be torn); 2.1: files.report_sha256 (a 2.0 folder could
# hold another run's report); 2.2: breakdowns by doc_length and evidence_position with document_breakdowns (how
# they were measured), document_pair (the closed-book run paired with one that had the document)
SCHEMA_VERSION = "2.2"
SCHEMA_PATH = Path(__file__).with_name("results.schema.json")
RESULTS_FILE, ITEMS_FILE, REPORT_FILE = "results.json", "items.jsonl", "report.html"
RESULTS_MAX_BYTES = 64 * 2**20  # a results.json of every config and breakdown stays under 1 MB
PAPER_REVISION = "paper"  # the revision of paper rows: the papers' full releases, not a fingerprint we can take


# ---- what a results document is: results.schema.json, and the few rules a JSON Schema cannot state --------

@functools.cache
def _validators():
    """(the validator of a whole results.json, the validator of its $defs/shown part): Draft 2020-12 validators
    built once. An integer is an int here (JSON's 2.0 is a float, as Python reads it), as the pages count."""
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    draft = jsonschema.Draft202012Validator
    checker = draft.TYPE_CHECKER.redefine(
        "integer", lambda _, value: isinstance(value, int) and not isinstance(value, bool))
    validator = jsonschema.validators.extend(draft, type_checker=checker)
    shown = {"$schema": schema["$schema"], **schema["$defs"]["shown"], "$defs": schema["$defs"]}
    return validator(schema), validator(shown)


def _not_finite(value, path=()) -> str | None:
    """The first NaN or Infinity in a parsed JSON value (Python's json reads them; JSON Schema's numbers include
    them), as a problem naming its field, or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{field_name(path)} must be a finite number, got {described(value)}"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return next((found for key, item in items if (found := _not_finite(item, (*path, key)))), None)


def results_problems(doc: dict, *, whole: bool = True) -> list[str]:
    """Every way `doc` is not a results document: against results.schema.json (`whole`), or against its
    $defs/shown part only, the fields the pages and tables show (whole=False: documents that are no results file,
    such as the papers' rows or one built in Python). Beside the schema: no lone surrogate in any string, no NaN
    or Infinity, model.date a real calendar date, model.url printable (what a JSON Schema cannot state)."""
    doc = {k: v for k, v in doc.items() if k != "_path"}  # where read_results found it
    surrogate = surrogate_problem(doc)
    if surrogate:
        return [surrogate]
    validator = _validators()[0 if whole else 1]
    problems = schema_problems(validator.iter_errors(doc))
    model = doc.get("model") if isinstance(doc.get("model"), dict) else {}
    for name, problem in (("date", date_problem), ("url", url_problem)):
        if (isinstance(model.get(name), str) and not any(p.startswith(f"model.{name} ") for p in problems)
                and (bad := problem(f"model.{name}", model[name]))):
            problems.append(bad)
    if not_finite := _not_finite(doc):
        problems.append(not_finite)
    return problems


def check_results(doc: dict, path=None, *, whole: bool = True) -> dict:
    """`doc` itself when results_problems finds nothing; else InputError naming the file and each bad field."""
    if problems := results_problems(doc, whole=whole):
        raise_problems(problems, f"{path or doc.get('_path', 'results')}: invalid results file")
    return doc


def _entry(value, ci, n) -> dict:
    if ci is None:  # every resample would give the same value: no interval to report
        return {"value": _round(value), "ci95": [None, None], "n": n, "note": NO_VARIATION}
    return {"value": _round(value), "ci95": [_round(ci[0]), _round(ci[1])], "n": n}


def _round(x: float):
    return None if x is None or math.isnan(x) else round(float(x), 4)


def aggregate_family(scores: FamilyScores, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                     label_order: dict | None = None) -> dict:
    """{metric: {value, ci95, n, [note,] signature, by: {column: {label: {value, ci95, n[, note]}}}}} for one family:
    aggregate.summarize on its per-item values, rounded for the document; labels in the schema's order, those of
    `label_order` (the length buckets, the position bins) in its order."""
    summary = summarize(scores.per_item, scores.labels, statistic=scores.statistic, resamples=resamples, seed=seed,
                        label_order={**LABEL_ORDER, **(label_order or {})})
    return {metric: {**_entry(e["value"], e["ci95"], e["n"]), "signature": scores.signatures.get(metric, ""),
                     "by": {column: {label: _entry(c["value"], c["ci95"], c["n"]) for label, c in cells.items()}
                            for column, cells in e["by"].items()}}
            for metric, e in summary.items()}


def file_sha256(path) -> str:
    with Path(path).open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def build_results(*, model: dict, dataset: dict, submission: dict, settings: dict,
                  families: list[FamilyScores], skipped: list[dict] = (), label_order: dict | None = None) -> dict:
    """The results.json document. `skipped` lists whole families or metrics that did not run, with reasons;
    the CIs use settings' resamples and seed; `label_order` orders the labels of breakdown columns the schema has
    no vocabulary for (see aggregate_family)."""
    metrics = {f.family: aggregate_family(f, resamples=settings["resamples"], seed=settings["seed"],
                                          label_order=label_order)
               for f in families}
    all_skipped = list(skipped) + [{"family": f.family, "metric": m, "reason": r}
                                   for f in families for m, r in f.skipped.items()]
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": uuid.uuid4().hex,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "toolkit": {"name": "chimdqa_eval", "version": chimdqa_eval.__version__},
        "model": dict(model),
        "dataset": dict(dataset),
        "submission": dict(submission),
        "settings": dict(settings),
        "metrics": metrics,
        "skipped": all_skipped,
    }


def item_rows(items: list[dict], families: list[FamilyScores], label_columns) -> "ItemRows":
    """One items.jsonl row per scored question: its labels, then each family's per-item values (made as they are
    read, see ItemRows)."""
    return ItemRows(items, families, label_columns)


class ItemRows(Sequence):
    """The rows of items.jsonl, each made when it is read: a run's rows are never all in memory at once
    (write_results streams them into the file). Each family's items are the run's items it scores, in their
    order."""

    def __init__(self, items: list[dict], families: list[FamilyScores], label_columns):
        self.items, self.families, self.label_columns = items, list(families), tuple(label_columns)
        self._positions = None

    def __len__(self) -> int:
        return len(self.items)

    def _row(self, item: dict, positions) -> dict:
        row = {"id": item["id"], **{c: item[c] for c in self.label_columns if c in item}}
        for f, i in zip(self.families, positions):
            if i is not None:
                row[f.family] = {name: _plain(values[i]) for name, values in f.per_item.items()}
        return row

    def __iter__(self):
        cursors = [0] * len(self.families)
        for item in self.items:
            positions = []
            for k, f in enumerate(self.families):
                found = cursors[k] < len(f.ids) and f.ids[cursors[k]] == item["id"]
                positions.append(cursors[k] if found else None)
                cursors[k] += found
            yield self._row(item, positions)
        for f, cursor in zip(self.families, cursors):
            if cursor != len(f.ids):
                raise ValueError(f"{f.family}: its items are not the run's items in their order")

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if self._positions is None:
            self._positions = [{item_id: i for i, item_id in enumerate(f.ids)} for f in self.families]
        item = self.items[index]
        return self._row(item, [p.get(item["id"]) for p in self._positions])


def _plain(value):
    if isinstance(value, (np.floating, float)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def items_jsonl(items: list[dict]) -> str:
    return "".join(dumps(row, indent=None) for row in items)


def check_writable(folder, what: str = "--out") -> Path:
    """Create `folder` and a file in it (removed again), so an unusable output folder is found before any
    work is done."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-check.{uuid.uuid4().hex[:8]}"
        probe.open("x").close()
        probe.unlink()
    except OSError as err:
        raise InputError(f"{what} {folder}: cannot create or write into the folder ({err.strerror or err})") from None
    return folder


def write_results(out_dir, results: dict, items, report: Callable[[dict], str] | None = None) -> Path:
    """Write a run into `out_dir`: items.jsonl (`items`: its rows, a list or any iterable, e.g. ItemRows, written
    as they come), report.html (``report(results)``, when given) and results.json, whose `files` lists the other
    two with their sha256. Everything is written into a scratch folder and swapped in only once complete
    (_swap_in): a failure or a kill leaves the previous run as it was.
    Returns the path of results.json."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    out = Path(out_dir).resolve()  # --out as a link: the run goes into the folder it points to, the link stays
    _remove_leftovers(out)
    with _scratch_folder(out) as staged:
        digest = hashlib.sha256()
        write_atomic(staged / ITEMS_FILE, (dumps(row, indent=None) for row in items), digest=digest)
        results["files"] = {"items": ITEMS_FILE, "items_sha256": digest.hexdigest()}
        # what every reader checks, checked before the report is rendered: a document no reader would take fails
        # the run here, naming the field, and leaves the previous run in place (the report's two entries below
        # are this function's own constant and checksum)
        check_results(results, out / RESULTS_FILE)
        contents = {}
        if report is not None:
            contents[REPORT_FILE] = report(results).encode("utf-8")
            results["files"].update(report=REPORT_FILE,
                                    report_sha256=hashlib.sha256(contents[REPORT_FILE]).hexdigest())
        contents[RESULTS_FILE] = dumps(results).encode("utf-8")
        for name, content in contents.items():
            write_atomic(staged / name, content)
        _swap_in(staged, out)
    return Path(out_dir) / RESULTS_FILE


_RUN_NAMES = (ITEMS_FILE, REPORT_FILE, RESULTS_FILE)  # moved into a shared folder in this order: results.json last
_NAMES = "|".join(map(re.escape, _RUN_NAMES))
# what a folder holding nothing but a run holds: its files, temporary files of earlier writers, write checks
_RUN_ENTRY = re.compile(rf"(?:{_NAMES})|\.(?:{_NAMES})\.[0-9a-f]{{8}}\.tmp|\.write-check\.[0-9a-f]{{8}}")
_ABANDONED_AFTER = 3600.0  # where there are no locks: a scratch folder this old belongs to a writer that died
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def _scratch_pattern(out: Path) -> re.Pattern:
    return re.compile(re.escape(f".{out.name}.run-") + r"[0-9a-f]{8}\.tmp")


@contextlib.contextmanager
def _scratch_folder(out: Path):
    """A new folder to stage a run in: beside `out`, or inside it where the parent cannot take it. It is locked
    while its writer lives, so that no other writer takes it for abandoned, and removed at the end: after a swap
    it holds the previous run, after a failure the unfinished new one."""
    staged, lock = _claim(out, out.parent) or _claim(out, out)
    try:
        yield staged
    finally:
        shutil.rmtree(staged, ignore_errors=True)
        if lock is not None:
            os.close(lock)


def _claim(out: Path, base: Path):
    """(a new scratch folder for `out` in `base`, the descriptor holding its lock or None where there are no
    locks), or None where `base` cannot hold it: a parent that is not writable, or on another filesystem than
    `out` (a mount point), where a rename into `out` would not be one step."""
    for _ in range(3):
        staged = base / f".{out.name}.run-{uuid.uuid4().hex[:8]}.tmp"
        try:
            staged.mkdir()
            if staged.stat().st_dev != out.stat().st_dev:
                staged.rmdir()
                return None
        except OSError:
            if base == out:
                raise
            return None
        if fcntl is None:
            return staged, None
        try:
            lock = os.open(staged, os.O_RDONLY)
        except FileNotFoundError:
            continue  # another writer's clean-up took the folder before it was locked: take another
        held = _try_lock(lock)
        if held is not False and os.fstat(lock).st_nlink:
            if held:
                return staged, lock
            os.close(lock)
            return staged, None
        os.close(lock)  # another writer's clean-up took the folder in the instant before the lock: take another
    raise OSError(errno.EBUSY, "another writer keeps removing the scratch folders beside it", str(out))


def _try_lock(descriptor: int) -> bool | None:
    """Lock an open folder for this process (released when closed or when the process dies): True, or False when
    another process holds its lock, or None where the filesystem has no such locks."""
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return None
    return True


def _remove_leftovers(out: Path) -> None:
    """Remove what killed writers left: their scratch folders (beside `out` or inside it), and temporary files of
    the run's files in `out` that writers before schema 2.1 left (jsonio's rule: over an hour old)."""
    pattern = _scratch_pattern(out)
    for base in (out.parent, out):
        try:
            with os.scandir(base) as entries:
                found = [Path(e.path) for e in entries if pattern.fullmatch(e.name) and e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for folder in found:
            _remove_if_abandoned(folder)
    for name in _RUN_NAMES:
        remove_stale_temporaries(out / name)


def _remove_if_abandoned(folder: Path) -> None:
    """Remove a scratch folder whose writer is gone: no process holds its lock (where there are no locks: it is
    over an hour old). The lock is held while removing, so a writer creating the folder this instant notices."""
    try:
        descriptor = None if fcntl is None else os.open(folder, os.O_RDONLY)
    except OSError:
        return  # removed already
    try:
        held = None if descriptor is None else _try_lock(descriptor)
        if held is False or (held is None and not _older_than(folder, _ABANDONED_AFTER)):
            return
        shutil.rmtree(folder, ignore_errors=True)
    finally:
        if descriptor is not None:
            os.close(descriptor)


def _older_than(path: Path, seconds: float) -> bool:
    try:
        return time.time() - path.stat().st_mtime > seconds
    except OSError:
        return False


def _swap_in(staged: Path, out: Path) -> None:
    """Put the run staged beside `out` in its place. A folder that holds nothing but a run (or nothing) is swapped
    whole in one step (_exchange), so a reader finds the old run or the new one at every moment. A folder that
    holds other files too keeps them: the run's own files are moved in one by one, results.json last; a kill
    between two of these moves leaves a folder that readers refuse by its checksums, never one read as a run."""
    if staged.parent == out.parent and _holds_only_a_run(out):
        shutil.copymode(out, staged)  # the folder keeps its permissions
        if _exchange(staged, out):
            _return_strays(staged, out)
            return
    for name in _RUN_NAMES:
        if (staged / name).exists():
            os.replace(staged / name, out / name)
        else:  # a run written without a report: the previous run's must not stay, unlisted
            (out / name).unlink(missing_ok=True)


def _return_strays(old: Path, out: Path) -> None:
    """Move back into `out` what arrived in it between the check that it held only a run and the swap (another
    program's file, now in the old folder, which is removed next): by name, never over an entry of the new run."""
    with os.scandir(old) as entries:
        strays = [e.name for e in entries if not _RUN_ENTRY.fullmatch(e.name) or e.is_dir(follow_symlinks=False)]
    for name in strays:
        if not os.path.lexists(out / name):
            with contextlib.suppress(OSError):  # gone meanwhile, or arrived in both: it stays where it is
                os.rename(old / name, out / name)


def _holds_only_a_run(out: Path) -> bool:
    with os.scandir(out) as entries:
        return all(_RUN_ENTRY.fullmatch(e.name) and not e.is_dir(follow_symlinks=False) for e in entries)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one step (Linux's renameat2 with RENAME_EXCHANGE, glibc 2.28 on). False where it did
    not happen, which leaves both as they were: another system, a kernel or filesystem without the call, a sticky
    folder where `b` belongs to another user."""
    renameat2 = getattr(ctypes.CDLL(None), "renameat2", None) if sys.platform == "linux" else None
    if renameat2 is None:
        return False
    renameat2.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    return renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0


def results_path(path) -> Path:
    """A results.json path from either the file or the folder holding it."""
    path = Path(path)
    return path / RESULTS_FILE if path.is_dir() else path


def read_results(path) -> dict:
    """Load a results.json (or the folder holding it), checking it is a results document we can read (a 2.x
    schema_version, then results.schema.json: check_results) and that the files of its run beside it are the
    ones it was written with (_check_run_files)."""
    path = results_path(path)
    if not path.is_file():
        raise InputError(f"{path}: no results file (run `chimdqa evaluate --out DIR` first)")
    results = read_json(path, what="results file", max_bytes=RESULTS_MAX_BYTES)
    if not isinstance(results, dict) or "schema_version" not in results:
        raise InputError(f"{path}: not a chimdqa results file (no schema_version)")
    major = str(results["schema_version"]).split(".")[0]
    if major == "1":
        raise InputError(f"{path}: results schema {results['schema_version']} records no checksum of its "
                         f"{ITEMS_FILE}, so a torn folder cannot be told from a whole one; run the same "
                         "`chimdqa evaluate --predictions ... --out DIR` again to rewrite it")
    if major != SCHEMA_VERSION.split(".")[0]:
        raise InputError(f"{path}: results schema {results['schema_version']} is not readable by this version "
                         f"(reads {SCHEMA_VERSION.split('.')[0]}.x)")
    # The leaderboard adds the papers' rows itself (never ranked, labelled as reported); a file is a measured run.
    if "reported" in results:
        raise InputError(f"{path}: 'reported' marks the papers' own rows, which the leaderboard adds itself "
                         "(--with-paper-rows); a results file holds a measured run")
    if isinstance(results.get("dataset"), dict) and results["dataset"].get("revision") == PAPER_REVISION:
        raise InputError(f"{path}: dataset.revision {PAPER_REVISION!r} is the one the papers' rows carry; a "
                         "measured run records the fingerprint of the release it was scored on")
    check_results(results, path)
    results["_path"] = str(path)
    _check_run_files(results)
    return results


_WHAT = {"items": "per-item file", "report": "report"}


def _run_file(results: dict, key: str) -> Path:
    """The path of the run's file that `files.<key>` names: a file name next to results.json, nowhere else."""
    name = results["files"].get(key, ITEMS_FILE if key == "items" else None)
    if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
        raise InputError(f"{results['_path']}: files.{key} must be a file name next to it, got {name!r}")
    return Path(results["_path"]).with_name(name)


def _check_run_files(results: dict) -> None:
    """Every file results.json lists is there with the sha256 it records, and no file of a run lies beside it
    unlisted: a folder holding files of different runs is refused, naming the file. Schema 2.0 recorded no
    checksum of the report; such a report is left unchecked (no reader uses it)."""
    files, source = results["files"], Path(results["_path"])
    listed = {_run_file(results, "items")}
    _checked_bytes(results, "items")
    if "report" in files:
        listed.add(_run_file(results, "report"))
        if "report_sha256" in files or results["schema_version"] != "2.0":
            _checked_bytes(results, "report")
    for name in (ITEMS_FILE, REPORT_FILE):
        if source.with_name(name) not in listed and source.with_name(name).exists():
            raise InputError(f"{source.with_name(name)}: a file of a run, but not listed in {source.name} (run "
                             f"{results.get('run_id')}): the folder holds files of different runs (an interrupted "
                             "run, or two runs into one --out); run `chimdqa evaluate` into it again")


def _checked_bytes(results: dict, key: str) -> bytes:
    """The bytes of the run's file `files.<key>`, after checking they are the ones results.json was written with."""
    path = _run_file(results, key)
    expected = results["files"].get(f"{key}_sha256")
    if expected is None:
        raise InputError(f"{results['_path']}: files.{key}_sha256 missing: results.json records the checksum of "
                         f"every file of its run (from schema 2.1 on, of its {key} too)")
    if not path.is_file():
        raise InputError(f"{path}: {_WHAT[key]} not found, listed in {Path(results['_path']).name} beside it")
    data = read_capped(path, what=_WHAT[key], max_bytes=MAX_FILE_BYTES)
    if hashlib.sha256(data).hexdigest() != expected:
        raise InputError(f"{path} does not match {Path(results['_path']).name} (sha256 {expected}; run "
                         f"{results.get('run_id')}): the folder holds files of different runs (an interrupted "
                         "run, or two runs into one --out); run `chimdqa evaluate` into it again")
    return data


def read_items(results: dict) -> dict[str, dict]:
    """{id: items.jsonl row} for a results document loaded with read_results (checked against its sha256), each
    line read within jsonio's limits."""
    path = _run_file(results, "items")
    rows = {}
    for line_no, line in enumerate(_checked_bytes(results, "items").split(b"\n"), 1):
        if line.strip():
            row = loads(line, f"{path} line {line_no}", first_line=line_no, bom=False)
            if not isinstance(row, dict) or not isinstance(row.get("id"), str):
                raise InputError(f"{path} line {line_no}: not an object with an id (each line is one scored question)")
            rows[row["id"]] = row
    return rows


def comparison_group(results: dict) -> tuple[str, str, str, str]:
    """(benchmark, config, split, dataset revision): only results in the same group were scored on the same
    questions, so only they are ranked, plotted or paired together."""
    ds = results["dataset"]
    return ds["name"], ds["config"], ds.get("split", "test"), ds["revision"]


CONDITIONS = ("closed-book", "long", "rag")  # without the document, with it whole (packed), with retrieved passages


def condition(results: dict) -> str:
    """How the model saw the document: "closed-book" (not at all), "long" or "rag"; the mode `chimdqa generate`
    recorded (generation.mode), else "rag" when the run had retrieved contexts and "long" otherwise (predictions
    made elsewhere say closed-book with {"generation": {"mode": "closed-book"}} in their metadata)."""
    mode = (results.get("generation") or {}).get("mode")
    if mode in CONDITIONS:
        return mode
    return "rag" if results["model"].get("rag") else "long"


def metric_value(results: dict, family: str, metric: str, column: str | None = None, label: str | None = None):
    """A value from a results document (None when absent): overall, or of one breakdown label."""
    entry = results.get("metrics", {}).get(family, {}).get(metric)
    if entry is None:
        return None
    if column is not None:
        entry = entry.get("by", {}).get(column, {}).get(label)
    return None if entry is None else entry.get("value")


def skip_reason(results: dict, family: str, metric: str) -> str | None:
    for s in results.get("skipped", []):
        if s["family"] == family and s.get("metric") in (metric, None):
            return s["reason"]
    return None
