"""The results of one evaluation: a versioned JSON document (results.json) and its per-item file (items.jsonl).

Every number in results.json is derived from the per-item values in items.jsonl (grades, per-item scores),
so breakdowns, confidence intervals and paired comparisons never re-score anything. The layout is described
by results.schema.json, next to this file; bump SCHEMA_VERSION's major part on any incompatible change.

A results folder is written so that it is never torn: each file goes to a temporary name in the same folder and
is renamed into place, results.json last, and results.json records the sha256 of the items.jsonl it was derived
from (and a run id). Readers refuse a folder whose items.jsonl does not match: a run killed halfway, two runs
into one folder or a full disk cannot leave a results.json beside another run's items.

    metrics: {family: {metric: {value, ci95: [low, high], n, [note: "no variation",] signature,
                                by: {column: {label: {value, ci95, n[, note]}}}}}}
    skipped: [{family, metric, reason}]
"""
from __future__ import annotations

import datetime
import hashlib
import json
import math
import os
import uuid
from pathlib import Path
from typing import Callable

import numpy as np

import chimdqa_eval
from chimdqa_eval.aggregate import DEFAULT_RESAMPLES, DEFAULT_SEED, NO_VARIATION, summarize
from chimdqa_eval.families import FamilyScores
from chimdqa_eval.schema import LABEL_ORDER, InputError

SCHEMA_VERSION = "2.0"  # 2: files.items_sha256 and run_id (1.x folders could be torn)
SCHEMA_PATH = Path(__file__).with_name("results.schema.json")
RESULTS_FILE, ITEMS_FILE, REPORT_FILE = "results.json", "items.jsonl", "report.html"
PAPER_REVISION = "paper"  # the revision of paper rows: the papers' full releases, not a fingerprint we can take


def _entry(value, ci, n) -> dict:
    if ci is None:  # every resample would give the same value: no interval to report
        return {"value": _round(value), "ci95": [None, None], "n": n, "note": NO_VARIATION}
    return {"value": _round(value), "ci95": [_round(ci[0]), _round(ci[1])], "n": n}


def _round(x: float):
    return None if x is None or math.isnan(x) else round(float(x), 4)


def aggregate_family(scores: FamilyScores, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> dict:
    """{metric: {value, ci95, n, [note,] signature, by: {column: {label: {value, ci95, n[, note]}}}}} for one family:
    aggregate.summarize on its per-item values, rounded for the document."""
    summary = summarize(scores.per_item, scores.labels, statistic=scores.statistic, resamples=resamples, seed=seed,
                        label_order=LABEL_ORDER)
    return {metric: {**_entry(e["value"], e["ci95"], e["n"]), "signature": scores.signatures.get(metric, ""),
                     "by": {column: {label: _entry(c["value"], c["ci95"], c["n"]) for label, c in cells.items()}
                            for column, cells in e["by"].items()}}
            for metric, e in summary.items()}


def file_sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def build_results(*, model: dict, dataset: dict, submission: dict, settings: dict,
                  families: list[FamilyScores], skipped: list[dict] = ()) -> dict:
    """The results.json document. `skipped` lists whole families or metrics that did not run, with reasons;
    the CIs use settings' resamples and seed."""
    metrics = {f.family: aggregate_family(f, resamples=settings["resamples"], seed=settings["seed"])
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
        "files": {"items": ITEMS_FILE, "report": REPORT_FILE},
    }


def item_rows(items: list[dict], families: list[FamilyScores], label_columns) -> list[dict]:
    """One items.jsonl row per scored question: its labels, then each family's per-item values."""
    rows = {item["id"]: {"id": item["id"], **{c: item[c] for c in label_columns if c in item}} for item in items}
    for f in families:
        for i, item_id in enumerate(f.ids):
            rows[item_id][f.family] = {name: _plain(values[i]) for name, values in f.per_item.items()}
    return list(rows.values())


def _plain(value):
    if isinstance(value, (np.floating, float)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def items_jsonl(items: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in items)


def replace_file(path, content: str | bytes) -> Path:
    """Write `content` (text as UTF-8) to a temporary file next to `path`, then rename it over `path`: readers
    see the old file or the new one, never half of one."""
    path = Path(path)
    data = content.encode("utf-8") if isinstance(content, str) else content  # encoding errors: before any write
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with temporary.open("wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return path


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


def write_results(out_dir, results: dict, items: list[dict], report: Callable[[dict], str] | None = None) -> Path:
    """Write items.jsonl, report.html (``report(results)``, when given) and results.json into `out_dir`, each
    atomically and results.json last; results.json records the sha256 of items.jsonl. Returns its path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    data = items_jsonl(items).encode("utf-8")
    results.setdefault("files", {}).update(items=ITEMS_FILE, items_sha256=hashlib.sha256(data).hexdigest())
    page = None if report is None else report(results).encode("utf-8")  # rendered before anything is replaced
    replace_file(out / ITEMS_FILE, data)
    if page is not None:
        replace_file(out / results["files"].get("report", REPORT_FILE), page)
    return replace_file(out / RESULTS_FILE, json.dumps(results, ensure_ascii=False, indent=1) + "\n")


def results_path(path) -> Path:
    """A results.json path from either the file or the folder holding it."""
    path = Path(path)
    return path / RESULTS_FILE if path.is_dir() else path


def read_results(path) -> dict:
    """Load a results.json (or the folder holding it), checking it is a results document we can read and that
    the items.jsonl beside it is the one it was derived from."""
    path = results_path(path)
    if not path.is_file():
        raise InputError(f"{path}: no results file (run `chimdqa evaluate --out DIR` first)")
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise InputError(f"{path}: not valid JSON ({err.msg} at line {err.lineno})") from None
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
    for key in ("model", "dataset", "metrics", "skipped", "files"):
        if key not in results:
            raise InputError(f"{path}: results file lacks '{key}'")
    # The leaderboard adds the papers' rows itself (never ranked, labelled as reported); a file is a measured run.
    if "reported" in results:
        raise InputError(f"{path}: 'reported' marks the papers' own rows, which the leaderboard adds itself "
                         "(--with-paper-rows); a results file holds a measured run")
    if isinstance(results["dataset"], dict) and results["dataset"].get("revision") == PAPER_REVISION:
        raise InputError(f"{path}: dataset.revision {PAPER_REVISION!r} is the one the papers' rows carry; a "
                         "measured run records the fingerprint of the release it was scored on")
    if not isinstance(results["files"], dict):
        raise InputError(f"{path}: files must be an object {{items, items_sha256, ...}}, got "
                         f"{type(results['files']).__name__}")
    results["_path"] = str(path)
    _checked_items_bytes(results)
    return results


def _items_path(results: dict) -> Path:
    name = str(results.get("files", {}).get("items", ITEMS_FILE))
    if Path(name).name != name or name in ("", ".", ".."):  # the items live next to results.json, nowhere else
        raise InputError(f"{results['_path']}: files.items must be a file name next to it, got {name!r}")
    return Path(results["_path"]).with_name(name)


def _checked_items_bytes(results: dict) -> bytes:
    """The bytes of the results' items.jsonl, after checking they are the ones results.json was written with."""
    files = results.get("files", {})
    path = _items_path(results)
    if not path.is_file():
        raise InputError(f"{path}: per-item file not found (it is written next to results.json)")
    data = path.read_bytes()
    expected = files.get("items_sha256")
    if hashlib.sha256(data).hexdigest() != expected:
        raise InputError(f"{path} does not match {Path(results['_path']).name} (sha256 {expected}; run "
                         f"{results.get('run_id')}): the folder holds files of different runs (an interrupted "
                         "run, or two runs into one --out); run `chimdqa evaluate` into it again")
    return data


def read_items(results: dict) -> dict[str, dict]:
    """{id: items.jsonl row} for a results document loaded with read_results (checked against its sha256)."""
    path = _items_path(results)
    rows = {}
    for line_no, text in enumerate(_checked_items_bytes(results).decode("utf-8").split("\n"), 1):
        if text.strip():
            try:
                row = json.loads(text)
            except json.JSONDecodeError as err:
                raise InputError(f"{path} line {line_no}: not valid JSON ({err.msg})") from None
            if not isinstance(row, dict) or not isinstance(row.get("id"), str):
                raise InputError(f"{path} line {line_no}: not an object with an id (each line is one scored question)")
            rows[row["id"]] = row
    return rows


def comparison_group(results: dict) -> tuple[str, str, str, str]:
    """(benchmark, config, split, dataset revision): only results in the same group were scored on the same
    questions, so only they are ranked, plotted or paired together."""
    ds = results["dataset"]
    return ds["name"], ds["config"], ds.get("split", "test"), ds["revision"]


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
