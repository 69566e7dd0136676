"""`chimdqa judge-audit A [B] [--labels LABELS.jsonl]`: how far two factual judges (or a judge and people) agree
on the same submission, and what their disagreement does to CO / NA / IN / CGA / F1.

A and B are results folders of one submission (same predictions file, same dataset revision) graded by
different judges; LABELS is a jsonl of {"id", "grade"} written by people. The audit reports agreement, Cohen's κ
and the confusion matrix overall and per domain / question type / level / category (and primary_category for
Chinese SimpleQA), the swing of the five scores between the two, and the items they disagree on, for review.
With labels, each judge's accuracy and κ against the people.
"""
from __future__ import annotations

import json
from pathlib import Path

from chimdqa_eval.agreement import agreement
from chimdqa_eval.factual.scores import GRADES, UNGRADED, scores_from_grades
from chimdqa_eval.schema import InputError, where

BREAKDOWN_COLUMNS = ("domain", "question_type", "level", "category", "primary_category")
LABEL_ORDER = (*GRADES, UNGRADED)


def audit_grades(first: dict, second: dict, rows: dict, *, names=("A", "B"), people: dict | None = None,
                 sources=("A", "B", "the labels")) -> dict:
    """The audit of two {id: grade} maps over the ids both graded; `rows` {id: item row} gives the breakdown
    labels and the prediction of each item; `people` {id: grade} adds each judge's accuracy against them.
    `sources` names the two gradings and the labels in error messages (their files)."""
    ids = [i for i in rows if i in first and i in second]
    if not ids:
        raise InputError(f"{sources[0]} and {sources[1]} have no item in common")
    a, b = [first[i] for i in ids], [second[i] for i in ids]
    out = {"names": list(names), **agreement(a, b, LABEL_ORDER), "by": {}}
    for column in BREAKDOWN_COLUMNS:
        groups: dict = {}
        for k, i in enumerate(ids):
            if rows[i].get(column) is not None:
                groups.setdefault(rows[i][column], []).append(k)
        if len(groups) > 1 or (groups and column != "category"):
            out["by"][column] = {label: {key: value for key, value in agreement(
                [a[k] for k in ks], [b[k] for k in ks], LABEL_ORDER).items() if key in ("n", "agreement", "kappa")}
                for label, ks in groups.items()}
    scores_a, scores_b = scores_from_grades(a), scores_from_grades(b)
    out["swing"] = {m: {names[0]: scores_a[m], names[1]: scores_b[m], "difference": scores_b[m] - scores_a[m]}
                    for m in scores_a}
    out["disagreements"] = [{"id": i, names[0]: first[i], names[1]: second[i],
                             **{c: rows[i][c] for c in ("domain", "question_type", "primary_category", "question",
                                                        "reference", "prediction") if rows[i].get(c) is not None}}
                            for i in ids if first[i] != second[i]]
    if people is not None:
        out["people"] = {}
        for name, grades in zip(names, (first, second)):
            common = [i for i in ids if i in people]
            if not common:
                raise InputError(f"{sources[2]}: no item of the labels is among the audited items")
            judged, labelled = [grades[i] for i in common], [people[i] for i in common]
            result = agreement(labelled, judged, LABEL_ORDER)
            out["people"][name] = {"n": result["n"], "accuracy": result["agreement"], "kappa": result["kappa"],
                                   "labels": result["labels"], "confusion": result["confusion"]}
    return out


def read_labels(path) -> dict:
    """{id: grade} from a jsonl of {"id": ..., "grade": "CO" | "NA" | "IN"} (more fields are allowed)."""
    from chimdqa_eval.release import read_jsonl

    labels, lines = {}, {}
    for number, record in read_jsonl(path):
        if not isinstance(record.get("id"), str):
            raise InputError(f"{where(path, number)}: expected an object with a string id")
        record_id, grade = record["id"], record.get("grade")
        if grade not in GRADES:
            raise InputError(f"{where(path, number, record_id)}: grade must be one of {', '.join(GRADES)}, "
                             f"got {grade!r}")
        if record_id in labels:
            raise InputError(f"{where(path, number, record_id)}: duplicate id (first on line {lines[record_id]})")
        labels[record_id], lines[record_id] = grade, number
    if not labels:
        raise InputError(f"{path}: no labels")
    return labels


def factual_grades(results: dict) -> tuple[dict, dict]:
    """({id: grade}, {id: item row}) of the factual items of a results document (read_results)."""
    from chimdqa_eval.report.results import read_items

    rows = {i: row for i, row in read_items(results).items() if isinstance(row.get("factual"), dict)}
    if not rows:
        raise InputError(f"{results['_path']}: no factual grades (the run scored no factual question)")
    return {i: row["factual"]["grade"] for i, row in rows.items()}, rows


def judge_name(results: dict) -> str:
    from chimdqa_eval.report.leaderboard import factual_judge

    return factual_judge(results) or "?"


def _with_release_text(rows: dict, results: dict) -> None:
    """Add each item's question and reference from the release the results name, when it is readable here."""
    from chimdqa_eval import release

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
    """The audit of two results folders of one submission, or of one folder against human labels."""
    from chimdqa_eval.report.results import read_results

    first = read_results(first_path)
    grades_a, rows = factual_grades(first)
    people = read_labels(labels_path) if labels_path else None
    if second_path is None:
        if people is None:
            raise InputError("judge-audit needs a second results folder or --labels")
        names = (judge_name(first), "people")
        grades_b, people_arg = people, None
    else:
        second = read_results(second_path)
        for key, what in (("sha256", "predictions file"),):
            if first["submission"].get(key) != second["submission"].get(key):
                raise InputError(f"{first_path} and {second_path} graded different submissions (their "
                                 f"{what}s differ): an audit compares judges on the same answers")
        if first["dataset"].get("revision") != second["dataset"].get("revision"):
            raise InputError(f"{first_path} and {second_path} are on different dataset revisions "
                             f"({first['dataset'].get('revision')} and {second['dataset'].get('revision')})")
        grades_b, _ = factual_grades(second)
        names = (judge_name(first), judge_name(second))
        if names[0] == names[1]:
            names = (f"{names[0]} (A)", f"{names[1]} (B)")
        people_arg = people
    _with_release_text(rows, first)
    result = audit_grades(grades_a, grades_b, rows, names=names, people=people_arg,
                          sources=(first_path, second_path or labels_path, labels_path))
    result["sources"] = [str(first_path), str(second_path or labels_path)]
    return result


# --------------------------------------------------------------------------------------------- command line

def add_arguments(parser) -> None:
    parser.add_argument("first", metavar="A", help="results folder (or results.json) graded by one judge")
    parser.add_argument("second", nargs="?", metavar="B",
                        help="results folder of the same submission graded by another judge")
    parser.add_argument("--labels", metavar="FILE", help="human grades: jsonl of {id, grade}")
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
