"""`chimdqa judge-audit A [B] [--labels LABELS.jsonl]`: how far two factual judges (or a judge and people) agree
on the same submission, and what their disagreement does to CO / NA / IN / CGA / F1.

A and B are each a results folder, its results.json, or an items.jsonl file. An items.jsonl that the results.json
beside it lists with its current sha256 is read as that run (the judge from its signature, the questions and
references from its release); any other (one whose grades were reviewed by hand, or copied out of its folder) is
read as it is, its judge named from its rows. This module reads them and prints; chimdqa_eval.factual.audit
computes the audit."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from chimdqa_eval import release
from chimdqa_eval.factual.audit import Grading, audit_gradings, factual_rows, grading_of_items
from chimdqa_eval.jsonio import read_json
from chimdqa_eval.report.leaderboard import factual_judge
from chimdqa_eval.report.results import ITEMS_FILE, RESULTS_FILE, read_items, read_results
from chimdqa_eval.schema import InputError


def read_grading(path) -> Grading:
    """The factual grades at `path`: a results folder or results.json (read and checked by read_results), or an
    items.jsonl file (read as its run when that run's results.json vouches for it, else on its own)."""
    path = Path(path)
    if path.is_dir() or path.suffix != ".jsonl":
        return _grading_of_run(read_results(path), str(path))
    if not path.is_file():
        raise InputError(f"{path}: no such items file (give a results folder, its {RESULTS_FILE}, or an "
                         f"{ITEMS_FILE})")
    run = _run_vouching_for(path)
    return _grading_of_run(run, str(path)) if run is not None else grading_of_items(path)


def _grading_of_run(results: dict, source: str) -> Grading:
    grades, rows = factual_rows(read_items(results), results["_path"])
    _with_release_text(rows, results)
    return Grading(source, factual_judge(results) or "?", grades, rows, results)


def _run_vouching_for(items_path: Path) -> dict | None:
    """The results document beside `items_path` when it lists that very file with its current sha256."""
    beside = items_path.with_name(RESULTS_FILE)
    if not beside.is_file():
        return None
    try:
        doc = read_json(beside, what="results file")
        files = doc.get("files") if isinstance(doc, dict) else None
        if not isinstance(files, dict) or files.get("items") != items_path.name:
            return None
        if files.get("items_sha256") != hashlib.sha256(items_path.read_bytes()).hexdigest():
            return None  # edited since the run (e.g. grades reviewed by hand): read as the file it is now
        return read_results(beside)
    except InputError:
        return None


def _with_release_text(rows: dict, results: dict) -> None:
    """Add each item's question and reference from the release the results name, when it is readable here."""
    dataset = results["dataset"]
    source = dataset.get("source")
    try:
        if dataset.get("config") == "chinese_simpleqa":
            qa = release.read_simpleqa(source)
        else:
            qa = release.read_qa(None if source is None else source)
    except (InputError, OSError, TypeError):
        return  # the listing then shows ids and predictions only
    by_id = {q["id"]: q for q in qa}
    for i, row in rows.items():
        if i in by_id:
            row.setdefault("question", by_id[i]["question"])
            row.setdefault("reference", by_id[i]["answer"])


def audit_results(first_path, second_path=None, labels_path=None) -> dict:
    """The audit of two gradings of one submission (results folders, results.json or items.jsonl files), or of
    one against human labels; every label must name a factual item of the first."""
    first = read_grading(first_path)
    second = read_grading(second_path) if second_path is not None else None
    return audit_gradings(first, second, labels_path)


def add_arguments(parser) -> None:
    parser.add_argument("first", metavar="A",
                        help="the grades of one judge: a results folder, its results.json, or an items.jsonl file")
    parser.add_argument("second", nargs="?", metavar="B",
                        help="the same submission graded by another judge (folder, results.json or items.jsonl)")
    parser.add_argument("--labels", metavar="FILE",
                        help="human grades: jsonl of {id, grade}; every id must be a factual item of A")
    parser.add_argument("--json", metavar="FILE", help="write the whole audit as JSON")
    parser.add_argument("--list", type=int, default=20, metavar="N",
                        help="disagreeing items to print (default 20; all are in --json)")


def _fmt(value, digits=1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def format_audit(audit: dict, listed: int = 20) -> str:
    a, b = audit["names"]
    lines = [f"judge audit: A = {a}, B = {b}; {audit['n']} factual items graded by both",
             f"agreement {_fmt(audit['agreement'])}%   Cohen's kappa {_fmt(audit['kappa'], 3)}", "",
             "confusion (rows A, columns B):", "        " + "".join(f"{x:>10}" for x in audit["labels"])]
    for label, row in zip(audit["labels"], audit["confusion"]):
        lines.append(f"  {label:<6}" + "".join(f"{x:>10}" for x in row))
    lines += ["", f"{'score':<6} {'A':>8} {'B':>8} {'B - A':>8}"]
    for metric, s in audit["swing"].items():
        lines.append(f"{metric:<6} {s[a]:>8.2f} {s[b]:>8.2f} {s['difference']:>+8.2f}")
    for column, groups in audit["by"].items():
        lines += ["", f"{'by ' + column:<24} {'n':>5} {'agree%':>8} {'kappa':>7}"]
        for label, g in groups.items():
            lines.append(f"  {str(label):<22} {g['n']:>5} {_fmt(g['agreement']):>8} {_fmt(g['kappa'], 3):>7}")
    for name, p in audit.get("people", {}).items():
        lines.append(f"\nagainst people: {name}: accuracy {_fmt(p['accuracy'])}% , kappa {_fmt(p['kappa'], 3)} "
                     f"(n {p['n']})")
    items = audit["disagreements"]
    lines += ["", f"{len(items)} disagreement(s)" + (f", the first {listed}:" if len(items) > listed else ":")]
    for item in items[:listed]:
        text = " | ".join(str(item[k]) for k in ("question", "reference", "prediction") if k in item)
        lines.append(f"  {item['id']}: A {item[a]}, B {item[b]}  {text}".replace("\n", " "))
    return "\n".join(lines)


def run(args) -> int:
    audit = audit_results(args.first, args.second, args.labels)
    print(format_audit(audit, args.list))
    if args.json:
        Path(args.json).write_text(json.dumps(audit, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"\nwrote {args.json}")
    return 0
