"""The rule judge's decision lists as a table (`chimdqa judge-rules`): every registered rule in order, per reference
kind, with its grade, reasons and certainty, and, given labelled answers, how often it decided and how often its
grade was the people's label (overall and when it was sure)."""
from __future__ import annotations

from collections import Counter
from typing import NamedTuple

from chimdqa_eval.factual.decision import Rule
from chimdqa_eval.factual.judge_rule import FAMILIES, GUARDS, trace_answers
from chimdqa_eval.grades import GRADES
from chimdqa_eval.release import read_jsonl
from chimdqa_eval.schema import InputError, where


class Figures(NamedTuple):
    fired: int      # answers it decided
    right: int      # of those, graded as the label
    certain: int    # decided and sure
    certain_right: int


def listed_rules() -> list[tuple[str, Rule]]:
    """(section, rule) for every rule in the order the engine tries them: each reference kind's own rules and the
    steps that settle its fallback verdicts ("numeric", "numeric: settles the fallback"…), the fallback rules
    every list ends with ("fallback"), then the engine's guards over the best reading ("engine")."""
    out, fallback = [], []
    for family in FAMILIES.values():
        own = [r for r in family.rules if not r.name.startswith("unmatched.")]
        fallback = fallback or [r for r in family.rules if r.name.startswith("unmatched.")]
        out += [(family.name, r) for r in own] + [(f"{family.name}: then the fallback, settled by", r)
                                                  for r in family.steps]
    return out + [("fallback: the end of every list", r) for r in fallback] + [("engine", g) for g in GUARDS]


def _simpleqa_rows(path) -> dict:
    rows = {}
    for _, row in read_jsonl(path):
        if isinstance(row.get("id"), str):
            rows[row["id"]] = (row.get("question"), row.get("answer"))
    return rows


def load_labels(path, simpleqa=None) -> list[dict]:
    """Labelled answers: jsonl of {id, question, reference, answer, label} (label CO / NA / IN); a record of source
    `simpleqa` names its question by simpleqa_id and takes question and reference from the Chinese SimpleQA file."""
    records, questions = [], None
    for number, record in read_jsonl(path):
        location = where(path, number, record.get("id"))
        if record.get("source") == "simpleqa" and "simpleqa_id" in record:
            if simpleqa is None:
                raise InputError(f"{location}: a record of source simpleqa needs --simpleqa PATH (the Chinese "
                                 "SimpleQA jsonl) for its question and reference")
            questions = questions if questions is not None else _simpleqa_rows(simpleqa)
            if record["simpleqa_id"] not in questions:
                raise InputError(f"{location}: simpleqa_id {record['simpleqa_id']!r} is not in {simpleqa}")
            record = {**record, **dict(zip(("question", "reference"), questions[record["simpleqa_id"]]))}
        for field in ("question", "reference", "answer"):
            if not isinstance(record.get(field), str):
                raise InputError(f"{location}: field {field} missing or not a string")
        if record.get("label") not in GRADES:
            raise InputError(f"{location}: label {record.get('label')!r} is not one of {', '.join(GRADES)}")
        records.append(record)
    if not records:
        raise InputError(f"{path}: no labelled answers")
    return records


def rule_figures(records) -> dict:
    """{rule name: Figures} over labelled records ({question, reference, answer, label})."""
    decisions = trace_answers([r["answer"] for r in records], [r["reference"] for r in records],
                              [r["question"] for r in records])
    counts = Counter()
    for record, d in zip(records, decisions):
        right = d.grade == record["label"]
        counts[d.rule, "fired"] += 1
        counts[d.rule, "right"] += right
        counts[d.rule, "certain"] += d.certain
        counts[d.rule, "certain_right"] += d.certain and right
    names = {name for name, _ in counts}
    return {name: Figures(*(counts[name, k] for k in Figures._fields)) for name in names}


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "     -"


def format_rulebook(figures: dict | None = None) -> str:
    """The decision lists as lines; with figures, per rule: fired, right %, certain, right % when certain."""
    head = f"{'#':>3}  {'rule':<34} {'grade':<9} {'certain':<10} reasons"
    if figures is not None:
        head += f"\n{'':>3}  {'':<34} fired  right  certain  right(certain)"
    lines, section = [head], None
    for number, (where_, r) in enumerate(listed_rules(), 1):
        if where_ != section:
            section = where_
            lines.append(f"-- {section}")
        sure = r.certain if len(r.certain) <= 10 else "when…"
        lines.append(f"{number:>3}  {r.name:<34} {r.grades:<9} {sure:<10} {', '.join(r.reasons)}")
        if figures is not None:
            f = figures.get(r.name, Figures(0, 0, 0, 0))
            lines.append(f"{'':>3}  {'':<34} {f.fired:>5} {_share(f.right, f.fired)} {f.certain:>7}  "
                         f"{_share(f.certain_right, f.certain)}")
    if figures is not None:
        total = sum(f.fired for f in figures.values())
        right = sum(f.right for f in figures.values())
        lines.append(f"\n{total} labelled answers: {_share(right, total).strip()} graded as labelled")
    return "\n".join(lines)
