"""How far two factual judges (or a judge and people) agree on the same submission, and what their disagreement
does to CO / NA / IN / CGA / F1: the pure functions behind `chimdqa judge-audit` (chimdqa_eval.commands.judge_audit
reads the results folders or items.jsonl files and prints).

A and B are gradings of one submission (same predictions file, same dataset revision) by different judges (a
Grading: their {id: grade}, their items.jsonl rows, the results document when there is one); an items.jsonl
file read on its own names its judge from its rows, and A and B must hold the same prediction for every id they
share. LABELS is a jsonl of {"id", "grade"} written by people, every id of which must be a factual item of A. The
audit reports agreement, Cohen's κ and the confusion matrix overall and per domain / question type / level /
category (and primary_category for Chinese SimpleQA), the swing of the five scores between the two, and the
items they disagree on, for review. With labels, each judge's accuracy and κ against the people.
"""
from __future__ import annotations

from dataclasses import dataclass

from chimdqa_eval.agreement import agreement
from chimdqa_eval.grades import GRADES, UNGRADED, scores_from_grades
from chimdqa_eval.release import read_jsonl
from chimdqa_eval.schema import InputError, shown, where

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
    return read_labels_with_lines(path)[0]


def read_labels_with_lines(path) -> tuple[dict, dict]:
    """({id: grade}, {id: line number}) of a labels file; InputError naming the file, line and id."""
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
    return labels, lines


def check_label_ids(labels: dict, lines: dict, known, path, graded_by) -> None:
    """InputError naming the file, line and id of the first label whose id is not in `known` (the factual items
    of the grading `graded_by`), with how many more there are and the first few of them: a label for an item
    the audit cannot see is a typo or a labels file of another release, never silently left out."""
    unknown = [i for i in labels if i not in known]
    if not unknown:
        return
    first = unknown[0]
    more = ""
    if len(unknown) > 1:
        shown_ids = ", ".join(f"{i} (line {lines[i]})" for i in unknown[1:6])
        more = f"; {len(unknown) - 1} more unknown id(s): {shown_ids}" + (", ..." if len(unknown) > 6 else "")
    raise InputError(f"{where(path, lines[first], first)}: unknown id: no factual item with this id in "
                     f"{graded_by} ({len(unknown)} of {len(labels)} labels are unknown{more})")


@dataclass
class Grading:
    """One side of an audit: the factual grades of a run, from its results folder or an items.jsonl file."""
    source: str                  # the path as given
    judge: str                   # "rule", "llm:<model>", "cascade:<model>"; from the rows alone: rule / llm / cascade
    grades: dict                 # {id: grade}
    rows: dict                   # {id: items.jsonl row}
    results: dict | None = None  # the results document, when the run's results.json vouches for the rows


def factual_rows(items: dict, source) -> tuple[dict, dict]:
    """({id: grade}, {id: row}) of the rows of an items.jsonl ({id: row}) that carry a factual grade."""
    rows = {i: row for i, row in items.items() if isinstance(row.get("factual"), dict)}
    if not rows:
        raise InputError(f"{source}: no factual grades (the run scored no factual question)")
    return {i: row["factual"]["grade"] for i, row in rows.items()}, rows


def read_item_rows(path) -> dict:
    """{id: row} of an items.jsonl file read on its own, every line checked; InputError naming file, line, id."""
    rows, lines = {}, {}
    for number, record in read_jsonl(path):
        record_id = record.get("id")
        if not isinstance(record_id, str) or not record_id:
            raise InputError(f"{where(path, number)}: not an object with an id (each line is one scored question)")
        if record_id in lines:
            raise InputError(f"{where(path, number, record_id)}: duplicate id (first on line {lines[record_id]})")
        lines[record_id] = number
        factual = record.get("factual")
        if factual is not None and (not isinstance(factual, dict) or factual.get("grade") not in LABEL_ORDER):
            raise InputError(f"{where(path, number, record_id)}: 'factual' must be an object whose grade is one of "
                             f"{', '.join(LABEL_ORDER)}, got {shown(factual)}")
        rows[record_id] = record
    return rows


def judge_from_rows(rows) -> str:
    """Which judge wrote items.jsonl rows: the cascade records who judged each item, the rule judge its trace."""
    rows = list(rows)
    if any("judged_by" in r["factual"] for r in rows):
        return "cascade"
    return "rule" if all("certain" in r["factual"] for r in rows) else "llm"


def grading_of_items(path) -> Grading:
    """The Grading of an items.jsonl file read on its own (no results.json vouching for it)."""
    grades, rows = factual_rows(read_item_rows(path), path)
    return Grading(str(path), judge_from_rows(rows.values()), grades, rows)


def check_same_answers(a: Grading, b: Grading) -> None:
    """InputError unless A and B graded the same answers: the same predictions file and dataset revision when
    both runs say so, and (always) the same prediction for every id they share."""
    if a.results is not None and b.results is not None:
        if a.results["submission"].get("sha256") != b.results["submission"].get("sha256"):
            raise InputError(f"{a.source} and {b.source} graded different submissions (their predictions files "
                             "differ): an audit compares judges on the same answers")
        if a.results["dataset"].get("revision") != b.results["dataset"].get("revision"):
            raise InputError(f"{a.source} and {b.source} are on different dataset revisions "
                             f"({a.results['dataset'].get('revision')} and {b.results['dataset'].get('revision')})")
    for i, row in a.rows.items():
        if i in b.rows and "prediction" in row and "prediction" in b.rows[i] \
                and row["prediction"] != b.rows[i]["prediction"]:
            raise InputError(f"{a.source} and {b.source} graded different submissions: id {i} has another "
                             "prediction in each; an audit compares judges on the same answers")


def audit_gradings(first: Grading, second: Grading | None = None, labels_path=None) -> dict:
    """The audit of two gradings of one submission, or of one against the human labels in `labels_path`.
    Every label must name a factual item of the first (check_label_ids)."""
    people = None
    if labels_path:
        people, lines = read_labels_with_lines(labels_path)
        check_label_ids(people, lines, first.rows, labels_path, first.source)
    if second is None:
        if people is None:
            raise InputError("judge-audit needs a second results folder or --labels (B may also be an items.jsonl "
                             "file)")
        names = (first.judge, "people")
        grades_b, people_arg = people, None
    else:
        check_same_answers(first, second)
        grades_b = second.grades
        names = (first.judge, second.judge)
        if names[0] == names[1]:
            names = (f"{names[0]} (A)", f"{names[1]} (B)")
        people_arg = people
    result = audit_grades(first.grades, grades_b, first.rows, names=names, people=people_arg,
                          sources=(first.source, second.source if second else labels_path, labels_path))
    result["sources"] = [first.source, str(second.source if second else labels_path)]
    return result
