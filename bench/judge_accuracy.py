"""How often a factual judge agrees with the hand labels of data/judge_validation (a benchmark, not a test).

    python bench/judge_accuracy.py [--judge rule|llm|...] [--judge-model M --api-base URL] [--json OUT]
    python bench/judge_accuracy.py --set data/judge_validation/simpleqa_heldout.jsonl --simpleqa CHINESE_SIMPLEQA.jsonl

Prints, against the people's labels: accuracy per label and per failure class, the confusion matrix, and, when
the judge says per item whether it is sure (`certain` in compute_factual's result; a judge without it counts
every item as certain), the certain coverage and the accuracy on certain items per label, overall and per
class; then the wrong items with the labeller's reason. The set's README explains the labels and classes.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chimdqa_eval.factual import GRADES, JUDGES, compute_factual  # noqa: E402
from chimdqa_eval.release import read_jsonl  # noqa: E402
from chimdqa_eval.schema import InputError, where  # noqa: E402

VALIDATION_SET = Path(__file__).resolve().parents[1] / "data" / "judge_validation" / "validation.jsonl"
HELDOUT_SET = VALIDATION_SET.with_name("simpleqa_heldout.jsonl")
FIELDS = ("id", "source", "question", "reference", "answer", "label", "class", "reason")
# simpleqa: an answer to a real Chinese SimpleQA question, which the record names by `simpleqa_id` only; the
# question and reference come from the Chinese SimpleQA file given with --simpleqa.
SOURCES = ("sample", "simpleqa-style", "simpleqa")
# dev: answers looked at while the rules were written; test … test5: measured only in aggregate (see the set's
# README); test2 was written after zh-rule-5, test3 after zh-rule-6 and test4 after zh-rule-7, each by new writers on
# questions no earlier part used; test5 after zh-rule-8, on 120 new questions its writers wrote (source simpleqa-style);
# test6 the same way late in the zh-rule-9 work, measured blind and never read.
SPLITS = ("dev", "test", "test2", "test3", "test4", "test5", "test6")
CLASSES = ("plain", "verbose", "hedged", "reference_not_answer", "refusal", "clarification", "less_specific",
           "too_tolerant", "units", "surface_forms", "candidates", "partial")


def _simpleqa_questions(path) -> dict:
    """{id: (question, answer)} of a Chinese SimpleQA jsonl file."""
    rows = {}
    for number, row in read_jsonl(path):
        if not all(isinstance(row.get(k), str) and row[k].strip() for k in ("id", "question", "answer")):
            raise InputError(f"{where(path, number, row.get('id'))}: a Chinese SimpleQA row needs id, question and "
                             "answer strings")
        rows[row["id"]] = (row["question"], row["answer"])
    return rows


def load_validation_set(path=VALIDATION_SET, simpleqa=None) -> list[dict]:
    """The labelled records; InputError naming the line and id of a record that is incomplete or invalid.
    Records of source `simpleqa` take their question and reference from the Chinese SimpleQA file `simpleqa`."""
    records, seen, questions = [], {}, None
    for number, record in read_jsonl(path):
        location = where(path, number, record.get("id"))
        if record.get("source") == "simpleqa":
            if not isinstance(record.get("simpleqa_id"), str) or not record["simpleqa_id"].strip():
                raise InputError(f"{location}: field simpleqa_id missing or not a non-empty string")
            if simpleqa is None:
                raise InputError(f"{location}: a record of source simpleqa needs the Chinese SimpleQA file "
                                 "(--simpleqa PATH) for its question and reference")
            questions = questions if questions is not None else _simpleqa_questions(simpleqa)
            if record["simpleqa_id"] not in questions:
                raise InputError(f"{location}: simpleqa_id {record['simpleqa_id']!r} is not in {simpleqa}")
            record = {**record, **dict(zip(("question", "reference"), questions[record["simpleqa_id"]]))}
        for field in FIELDS + (("question_id",) if record.get("source") == "sample" else ()):
            if not isinstance(record.get(field), str) or not record[field].strip():
                raise InputError(f"{location}: field {field} missing or not a non-empty string")
        if record.get("split", "dev") not in SPLITS:
            raise InputError(f"{location}: split {record['split']!r} is not one of {', '.join(SPLITS)}")
        for field, allowed in (("source", SOURCES), ("label", GRADES), ("class", CLASSES)):
            if record[field] not in allowed:
                raise InputError(f"{location}: {field} {record[field]!r} is not one of {', '.join(allowed)}")
        if record["id"] in seen:
            raise InputError(f"{location}: duplicate id, first seen at line {seen[record['id']]}")
        seen[record["id"]] = number
        records.append(record)
    if not records:
        raise InputError(f"{path}: no records")
    return records


def _share(hits: int, total: int):
    return round(100 * hits / total, 1) if total else None


def _by_label(labels, grades, certain) -> dict:
    """Per label (and "all"): n, accuracy, certain coverage, accuracy on the certain items (percentages)."""
    out = {}
    for label in (*GRADES, "all"):
        idx = [i for i, x in enumerate(labels) if label in ("all", x)]
        sure = [i for i in idx if certain[i]]
        out[label] = {"n": len(idx),
                      "accuracy": _share(sum(grades[i] == labels[i] for i in idx), len(idx)),
                      "certain_coverage": _share(len(sure), len(idx)),
                      "certain_accuracy": _share(sum(grades[i] == labels[i] for i in sure), len(sure))}
    return out


def judge_accuracy(labels, grades, certain, classes) -> dict:
    """Agreement of a judge's grades with the labels: overall / per label, per class (each per label too) and
    the confusion matrix {label: {grade: count}}. `certain` is one bool per item."""
    if not len(labels) == len(grades) == len(certain) == len(classes):
        raise ValueError("labels, grades, certain and classes differ in length")
    by_class = {}
    for name in sorted(set(classes), key=lambda c: (CLASSES.index(c) if c in CLASSES else len(CLASSES), c)):
        idx = [i for i, c in enumerate(classes) if c == name]
        by_class[name] = _by_label([labels[i] for i in idx], [grades[i] for i in idx], [certain[i] for i in idx])
    confusion = {label: dict(Counter(g for x, g in zip(labels, grades) if x == label)) for label in GRADES}
    return {"by_label": _by_label(labels, grades, certain), "by_class": by_class, "confusion": confusion,
            "certain_grades": _certain_grades(labels, grades, certain)}


def _certain_grades(labels, grades, certain) -> dict:
    """Per grade the judge gave with certainty: how many, and how many of them the labels agree with (%): the
    trust a cascade puts in a certain grade."""
    out = {}
    for grade in GRADES:
        idx = [i for i, g in enumerate(grades) if g == grade and certain[i]]
        out[grade] = {"n": len(idx), "right": _share(sum(labels[i] == grade for i in idx), len(idx))}
    return out


def _row(name: str, stats: dict) -> str:
    def cell(value):
        return f"{value:6.1f}" if value is not None else "     -"
    return "".join([f"{name:<22}"] + [f"{stats[x]['n']:>5} {cell(stats[x]['accuracy'])} "
                                       f"{cell(stats[x]['certain_coverage'])} {cell(stats[x]['certain_accuracy'])}"
                                       for x in (*GRADES, "all")])


def print_report(report: dict, wrong: list[dict], max_wrong: int) -> None:
    print(f"judge: {report['judge']}   signature: {report['signature']}   items: {report['items']}"
          + ("" if report["judge_reports_certain"] else "   (judge reports no `certain`: every item counted certain)"))
    head = "".join(f"{x:>5} {'acc':>6} {'cov':>6} {'c-acc':>6}" for x in (*GRADES, "all"))
    print(f"\n{'':<22}{head}\n{'':<22}(n, accuracy %, certain coverage %, accuracy on certain items %)")
    print(_row("all classes", report["by_label"]))
    for name, stats in report["by_class"].items():
        print(_row(name, stats))
    sure = report["certain_grades"]
    print("\ncertain grades right (per grade given): " + ", ".join(
        f"{g} {sure[g]['right'] if sure[g]['right'] is not None else '-'}% of {sure[g]['n']}" for g in GRADES))
    grades_seen = sorted({g for row in report["confusion"].values() for g in row},
                         key=lambda g: (GRADES + (g,)).index(g))
    print("\nconfusion (rows: label, columns: judge)\n      " + "".join(f"{g:>9}" for g in grades_seen))
    for label, row in report["confusion"].items():
        print(f"{label:<6}" + "".join(f"{row.get(g, 0):>9}" for g in grades_seen))
    print(f"\nwrong items: {len(wrong)} (first {min(max_wrong, len(wrong))})")
    for item in wrong[:max_wrong]:
        sure = "certain" if item["certain"] else "uncertain"
        print(f"- {item['id']} [{item['class']}] label {item['label']}, judge {item['grade']} ({sure}): "
              f"ref {item['reference']!r} | answer {item['answer'][:80]!r} | {item['reason']}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default=str(VALIDATION_SET), help="validation jsonl (default: the shipped set; "
                        f"the held-out answers to real Chinese SimpleQA questions are {HELDOUT_SET.name})")
    parser.add_argument("--split", choices=SPLITS, help="only the records of this split (records without one are dev)")
    parser.add_argument("--simpleqa", help="the Chinese SimpleQA jsonl (id, question, answer) that records of "
                        "source simpleqa name by simpleqa_id")
    parser.add_argument("--judge", default="rule", choices=JUDGES)
    parser.add_argument("--judge-model", help="model name at the OpenAI-compatible endpoint (LLM judges)")
    parser.add_argument("--api-base", help="OpenAI-compatible API base, e.g. http://localhost:8000/v1")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--show-wrong", type=int, default=40, help="how many wrong items to print")
    parser.add_argument("--json", dest="json_out", help="also write the report (with every wrong item) here")
    args = parser.parse_args(argv)

    try:
        records = load_validation_set(args.set, args.simpleqa)
        if args.split:
            records = [r for r in records if r.get("split", "dev") == args.split]
            if not records:
                raise InputError(f"{args.set}: no records of split {args.split}")
        kwargs = {}
        if args.judge != "rule":
            kwargs = dict(judge_model=args.judge_model, api_base=args.api_base, api_key_env=args.api_key_env,
                          concurrency=args.concurrency)
        result = compute_factual([r["answer"] for r in records], [r["reference"] for r in records],
                                 [r["question"] for r in records], judge=args.judge, **kwargs)
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    grades = result["grades"]
    certain = result.get("certain") or [True] * len(records)
    labels, classes = [r["label"] for r in records], [r["class"] for r in records]
    report = {"judge": args.judge, "signature": result["signature"], "set": str(args.set), "items": len(records),
              "judge_reports_certain": "certain" in result,
              **judge_accuracy(labels, grades, certain, classes)}
    wrong = [{**{k: r[k] for k in ("id", "class", "label", "reference", "answer", "reason")},
              "grade": g, "certain": c} for r, g, c in zip(records, grades, certain) if g != r["label"]]
    print_report(report, wrong, args.show_wrong)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({**report, "wrong": wrong}, ensure_ascii=False, indent=1),
                                       encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
