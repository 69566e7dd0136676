"""The rule judge against the targets of issue 23 (item 5), on the labelled answers of data/judge_validation (a
benchmark, not a test):

    python bench/judge_targets.py [--simpleqa CHINESE_SIMPLEQA.jsonl] [--json OUT]

Accuracy, for each of simpleqa_heldout.jsonl's test splits together (test … test6: answers to questions the rules
were never developed on, the figures the targets are about), test5 + test6 (new questions, never read), its dev
split, and validation.jsonl, each measured apart:
- accuracy per label: of the answers people labelled CO (NA, IN), the share the judge graded so, all grades counted;
- certain accuracy per label: the same over the grades the judge calls certain; and per grade given: of its
  certain CO (NA, IN) grades, the share people agree with (the trust a cascade puts in a certain grade);
- certain coverage: the share of answers graded with certainty.
Speed and size, each in a new process (python's own start counted, nothing cached from another run):
- seconds from starting a new process to the first grade (a transliterated name against a Latin-script
  reference, which loads the name tables; and a number);
- grades per second warm: after a warm-up on validation.jsonl, one pass over every held-out answer (never seen
  by that process), then the same pass again; and cold (the first pass right after import); and the warm first
  pass in one forked worker process a CPU (judge_answers(workers=0), factual/processes.py), its CPU clock counting
  the workers' CPU time;
- the judge's tables in memory: resident set (VmRSS) after import and the first grade, minus that of a bare
  interpreter (python -c 'pass' under the same venv); and after grading every held-out answer. Each also without
  what chimdqa_eval.factual imports besides the rule judge (NOT_THE_JUDGE: numpy, the HTTP client), measured in
  a process that imports only those: the judge's own modules, tables and caches.
Filler openings: every Latin-script reference of the labelled sets against answers that open with filler words
(根据文档, 据我所知, 答案是, 参考资料显示 …) followed by a wrong value, with the record's question as `evaluate`
passes it; none may be graded CO.

Only the public API of chimdqa_eval.factual is used (compute_factual, judge_answers), so the script measures
whatever the judge's internals become. Records of source `simpleqa` need the Chinese SimpleQA file (--simpleqa;
default: the shared data the tests use); without it only validation.jsonl and the simpleqa-style splits are measured.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

GRADES = ("CO", "NA", "IN")
TEST_SPLITS = ("test", "test2", "test3", "test4", "test5", "test6")
TARGETS = {"accuracy": 92.0, "certain_accuracy": 98.5, "coverage": 55.0, "grades_per_s": 10_000,
           "first_grade_s": 2.0, "tables_mb": 80.0, "filler_co": 0}
FILLERS = ("根据文档，", "据我所知，", "答案是", "参考资料显示，", "根据文档，答案是", "据我所知，答案是",
           "参考资料显示，答案是", "根据资料，", "文档中提到，", "据报道，")
WRONG_VALUES = ("3.15亿元", "1987年", "张伟", "北京市", "42%", "第三章")
_LATIN = re.compile(r"[A-Za-z\u00C0-\u024F]")
_OTHER_LETTER = re.compile(r"[^\W\d_A-Za-z\u00C0-\u024F]")  # a letter of another script (CJK, Cyrillic ...)
# The child processes' work: what runs in a fresh interpreter, measured from the outside or reported back as JSON.
# The modules chimdqa_eval.factual's __init__ imports for compute_factual and the LLM judge, not for the rule judge
# (numpy, the HTTP client): a process that grades holds them too, but they are none of the judge's tables.
NOT_THE_JUDGE = ("chimdqa_eval.aggregate", "chimdqa_eval.grades", "chimdqa_eval.llm", "chimdqa_eval.schema",
                 "chimdqa_eval.signature")
FIRST_ITEMS = {"name": ("阿恩·奈斯", "Arne Næss", "深层生态学是由哪位哲学家提出的？"),
               "number": ("3518米", "3518.17", "金山铁路黄浦江特大桥的全长是多少米？")}


# -- records ----------------------------------------------------------------------------------------------------

def _records(simpleqa) -> dict:
    """{name: [records]} of the sets measured; held-out records of source simpleqa only with the SimpleQA file."""
    from judge_accuracy import HELDOUT_SET, VALIDATION_SET, load_validation_set

    sets = {"validation.jsonl": load_validation_set(VALIDATION_SET)}
    if simpleqa is not None:
        heldout = load_validation_set(HELDOUT_SET, simpleqa)
    else:  # the simpleqa-style records carry their question and reference
        heldout = _style_records(HELDOUT_SET, load_validation_set)
    split = {}
    for r in heldout:
        split.setdefault(r.get("split", "dev"), []).append(r)
    sets = {f"held-out test splits{'' if simpleqa else ' (simpleqa-style only)'}":
            [r for s in TEST_SPLITS for r in split.get(s, [])],
            "held-out test5 + test6": split.get("test5", []) + split.get("test6", []),
            "held-out dev": split.get("dev", []), **sets}
    return {name: records for name, records in sets.items() if records}


def _style_records(path, load):
    import tempfile

    lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines()
             if line.strip() and json.loads(line).get("source") != "simpleqa"]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", encoding="utf-8", delete=False) as f:
        f.write("\n".join(lines) + "\n")
    try:
        return load(f.name)
    finally:
        os.unlink(f.name)


# -- accuracy ---------------------------------------------------------------------------------------------------

def _pct(hits, total):
    return 100 * hits / total if total else None


def accuracy(records) -> dict:
    from chimdqa_eval.factual import compute_factual

    result = compute_factual([r["answer"] for r in records], [r["reference"] for r in records],
                             [r["question"] for r in records])
    grades, certain = result["grades"], result["certain"]
    labels = [r["label"] for r in records]
    out = {"n": len(records), "signature": result["signature"],
           "coverage": _pct(sum(certain), len(records)),
           "accuracy": _pct(sum(g == x for g, x in zip(grades, labels)), len(records))}
    for label in GRADES:
        idx = [i for i, x in enumerate(labels) if x == label]
        sure = [i for i in idx if certain[i]]
        given = [i for i, g in enumerate(grades) if g == label and certain[i]]
        out[label] = {"n": len(idx), "accuracy": _pct(sum(grades[i] == label for i in idx), len(idx)),
                      "certain_n": len(sure),
                      "certain_accuracy": _pct(sum(grades[i] == label for i in sure), len(sure)),
                      "certain_given": len(given),
                      "certain_given_right": _pct(sum(labels[i] == label for i in given), len(given))}
    return out


# -- filler openings --------------------------------------------------------------------------------------------

def latin_script(reference: str) -> bool:
    """A reference written in Latin script: Latin letters, and no letter of another script (digits, spaces and
    punctuation aside), e.g. `W.J. Youden`, `Arne Næss`."""
    return bool(_LATIN.search(reference)) and not _OTHER_LETTER.search(reference)


def filler_check(sets: dict) -> dict:
    from chimdqa_eval.factual import compute_factual

    pairs = {}
    for records in sets.values():
        for r in records:
            if latin_script(r["reference"]):
                pairs.setdefault((r["question"], r["reference"]), r["id"])
    answers, refs, questions, owners, values = [], [], [], [], []
    for (question, reference), owner in pairs.items():
        for filler in ("",) + FILLERS:  # "": the wrong value alone, to tell what the filler adds
            for value in WRONG_VALUES:
                answers.append(f"{filler}{value}。")
                refs.append(reference)
                questions.append(question)
                owners.append(owner)
                values.append((question, reference, value) if filler else None)
    if not answers:
        return {"references": 0, "answers": 0, "CO": 0, "NA": 0, "IN": 0, "created_by_filler": 0, "matches": []}
    result = compute_factual(answers, refs, questions)
    grades = result["grades"]
    bare_co = {(questions[i], refs[i], answers[i][:-1]) for i, g in enumerate(grades) if values[i] is None
               and g == "CO"}
    with_filler = [i for i, v in enumerate(values) if v is not None]
    counts = {g: sum(grades[i] == g for i in with_filler) for g in GRADES}
    matches = [{"id": owners[i], "reference": refs[i], "answer": answers[i], "reason": result["reasons"][i],
                "certain": result["certain"][i], "bare_value_co": values[i] in bare_co}
               for i in with_filler if grades[i] == "CO"]
    return {"references": len(pairs), "answers": len(with_filler), **counts,
            "created_by_filler": sum(not m["bare_value_co"] for m in matches),
            "bare_values_co": len(bare_co), "bare_values": len(answers) - len(with_filler), "matches": matches}


# -- processes --------------------------------------------------------------------------------------------------

def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return kb / 1024


def _cpu_seconds() -> float:
    """CPU time of this process and of its ended child processes (a grading's worker processes, once reaped)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _child(mode: str, payload_path: str | None) -> None:
    """Runs in a fresh interpreter; prints one JSON line."""
    if mode == "bare":
        print(json.dumps({"rss_mb": _rss_mb()}))
        return
    if mode == "deps":  # what chimdqa_eval.factual imports besides the rule judge (compute_factual, the LLM judge)
        import importlib

        for name in NOT_THE_JUDGE:
            importlib.import_module(name)
        print(json.dumps({"rss_mb": _rss_mb()}))
        return
    if mode.startswith("first:"):
        from chimdqa_eval.factual import judge_answers

        answer, reference, question = FIRST_ITEMS[mode.split(":", 1)[1]]
        [verdict] = judge_answers([answer], [reference], [question])
        print(json.dumps({"done": time.time(), "cpu": time.process_time(), "grade": verdict.grade,
                          "rss_mb": _rss_mb()}))
        return
    payload = json.loads(Path(payload_path).read_text(encoding="utf-8"))
    from chimdqa_eval.factual import judge_answers

    def run(items, workers=1):  # grades per second of wall-clock time and of CPU time (its worker processes' too)
        start, cpu = time.perf_counter(), _cpu_seconds()
        judge_answers([a for a, _, _ in items], [r for _, r, _ in items], [q for _, _, q in items], workers=workers)
        return [len(items) / (time.perf_counter() - start), len(items) / (_cpu_seconds() - cpu)]

    out = {}
    if mode == "speed-cold":
        out["cold"] = run(payload["measured"])
    elif mode == "speed-processes":  # warm, then the first pass in one forked process a CPU
        from chimdqa_eval.factual import processes

        run(payload["warmup"])
        out["processes"] = processes.plan(len(payload["measured"]), 0)
        out["warm_first_pass_processes"] = run(payload["measured"], workers=0)
    else:
        run(payload["warmup"])
        out["warm_first_pass"] = run(payload["measured"])
        out["warm_repeat"] = run(payload["measured"])
        out["rss_after_all_mb"] = _rss_mb()
    print(json.dumps(out))


def _spawn(mode: str, payload: str | None = None) -> dict:
    start = time.time()
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", mode] + ([payload] if payload else [])
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"child {mode} failed:\n{done.stderr[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["started"] = start
    return out


def speed_and_memory(sets: dict, warmup: list, measured: list, repeats: int) -> dict:
    import statistics
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8", delete=False) as f:
        json.dump({"warmup": [(r["answer"], r["reference"], r["question"]) for r in warmup],
                   "measured": [(r["answer"], r["reference"], r["question"]) for r in measured]}, f,
                  ensure_ascii=False)
    try:
        bare = statistics.median(_spawn("bare")["rss_mb"] for _ in range(repeats))
        deps = statistics.median(_spawn("deps")["rss_mb"] for _ in range(repeats)) - bare
        first = {}
        for item in FIRST_ITEMS:
            runs = [_spawn(f"first:{item}") for _ in range(repeats)]
            first[item] = {"seconds": statistics.median(r["done"] - r["started"] for r in runs),
                           "cpu_seconds": statistics.median(r["cpu"] for r in runs),
                           "tables_mb": statistics.median(r["rss_mb"] for r in runs) - bare,
                           "grade": runs[0]["grade"]}
        warm = [_spawn("speed-warm", f.name) for _ in range(repeats)]
        cold = [_spawn("speed-cold", f.name) for _ in range(repeats)]
        spread = [_spawn("speed-processes", f.name) for _ in range(repeats)]
    finally:
        os.unlink(f.name)
    return {"bare_rss_mb": bare, "not_the_judge_mb": deps, "first_grade": first, "measured_items": len(measured),
            "warmup_items": len(warmup),
            **{f"{key}{suffix}": statistics.median(run[key][k] for run in runs)
               for key, runs in (("warm_first_pass", warm), ("warm_repeat", warm), ("cold", cold),
                                 ("warm_first_pass_processes", spread))
               for k, suffix in ((0, ""), (1, "_cpu"))},
            "processes": spread[0]["processes"],
            "tables_after_all_mb": statistics.median(w["rss_after_all_mb"] for w in warm) - bare}


# -- report -----------------------------------------------------------------------------------------------------

def _cell(value, unit="%"):
    if value is None:
        return "-"
    if unit == "%":
        return f"{value:.1f}%"
    if unit == "/s":
        return f"{value:,.0f}/s"
    if unit == "s":
        return f"{value:.2f} s"
    if unit == "MB":
        return f"{value:.0f} MB"
    return str(value)


def _met(value, target, higher=True):
    if value is None:
        return ""
    return "yes" if (value >= target if higher else value <= target) else "NO"


def print_table(report: dict) -> None:
    rows = []  # (figure, set, value, target, met)
    for name, acc in report["accuracy"].items():
        for label in GRADES:
            a = acc[label]
            rows.append((f"accuracy {label} (all grades, n {a['n']})", name, _cell(a["accuracy"]),
                         f"≥{TARGETS['accuracy']:.0f}%", _met(a["accuracy"], TARGETS["accuracy"])))
        for label in GRADES:
            a = acc[label]
            rows.append((f"certain accuracy, label {label} (n {a['certain_n']})", name, _cell(a["certain_accuracy"]),
                         f"≥{TARGETS['certain_accuracy']}%", _met(a["certain_accuracy"], TARGETS["certain_accuracy"])))
        for label in GRADES:
            a = acc[label]
            rows.append((f"certain {label} grades right (n {a['certain_given']})", name,
                         _cell(a["certain_given_right"]), f"≥{TARGETS['certain_accuracy']}%",
                         _met(a["certain_given_right"], TARGETS["certain_accuracy"])))
        rows.append((f"certain coverage (n {acc['n']})", name, _cell(acc["coverage"]), f"≥{TARGETS['coverage']:.0f}%",
                     _met(acc["coverage"], TARGETS["coverage"])))
        rows.append(("accuracy, all labels", name, _cell(acc["accuracy"]), "", ""))
    s = report.get("speed")
    if s:
        per = f"{s['measured_items']:,} held-out answers"
        for key, what in (("warm_first_pass", "warm, first pass"), ("warm_repeat", "warm, same answers again"),
                          ("cold", "cold (first pass after import)"),
                          ("warm_first_pass_processes", f"warm, first pass, {s['processes']} processes")):
            for suffix, clock in (("", "wall"), ("_cpu", "CPU")):
                # cold has no target; with several processes the target is of the wall clock (CPU time is spread)
                targeted = key != "cold" and not (suffix and key.endswith("_processes"))
                rows.append((f"grades/s {what}, {clock} clock", per, _cell(s[key + suffix], "/s"),
                             f"≥{TARGETS['grades_per_s']:,}/s" if targeted else "",
                             _met(s[key + suffix], TARGETS["grades_per_s"]) if targeted else ""))
        for item, f in s["first_grade"].items():
            rows.append((f"new process to first grade ({item})", "one answer, wall clock", _cell(f["seconds"], "s"),
                         f"≤{TARGETS['first_grade_s']:.0f} s", _met(f["seconds"], TARGETS["first_grade_s"], False)))
            rows.append((f"  its CPU time ({item})", "one answer, the process's CPU", _cell(f["cpu_seconds"], "s"),
                         f"≤{TARGETS['first_grade_s']:.0f} s", _met(f["cpu_seconds"], TARGETS["first_grade_s"],
                                                                    False)))
        for item, f in s["first_grade"].items():
            rows.append((f"tables resident after first grade ({item})", f"bare python {s['bare_rss_mb']:.0f} MB",
                         _cell(f["tables_mb"], "MB"), f"≤{TARGETS['tables_mb']:.0f} MB",
                         _met(f["tables_mb"], TARGETS["tables_mb"], False)))
        rows.append(("resident after grading all held-out answers", "minus bare python",
                     _cell(s["tables_after_all_mb"], "MB"), f"≤{TARGETS['tables_mb']:.0f} MB",
                     _met(s["tables_after_all_mb"], TARGETS["tables_mb"], False)))
        other = f"minus numpy, HTTP client ({s['not_the_judge_mb']:.0f} MB)"
        for item, f in s["first_grade"].items():
            own = f["tables_mb"] - s["not_the_judge_mb"]
            rows.append((f"  the judge's own after first grade ({item})", other, _cell(own, "MB"),
                         f"≤{TARGETS['tables_mb']:.0f} MB", _met(own, TARGETS["tables_mb"], False)))
        own = s["tables_after_all_mb"] - s["not_the_judge_mb"]
        rows.append(("  the judge's own after all held-out answers", other, _cell(own, "MB"),
                     f"≤{TARGETS['tables_mb']:.0f} MB", _met(own, TARGETS["tables_mb"], False)))
    fill = report["filler"]
    rows.append((f"filler openings graded CO ({fill['answers']:,} answers)",
                 f"{fill['references']} Latin-script references", str(fill["CO"]), "0", _met(fill["CO"], 0, False)))
    rows.append(("  of which the filler made the match", "(the wrong value alone is not CO)",
                 str(fill["created_by_filler"]), "0", _met(fill["created_by_filler"], 0, False)))
    widths = [max(len(r[k]) for r in rows + [("figure", "set", "value", "target", "met")]) for k in range(5)]
    print("  ".join(h.ljust(w) for h, w in zip(("figure", "set", "value", "target", "met"), widths)))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    print(f"\nfiller openings: {fill['CO']} CO, {fill['NA']} NA, {fill['IN']} IN; {fill['created_by_filler']} of the "
          f"CO made by the filler; the wrong values alone: {fill['bare_values_co']} CO of {fill['bare_values']}")
    by_reference = {}
    for m in fill["matches"]:
        by_reference.setdefault((m["reference"], m["id"]), []).append(m)
    for (reference, record), found in by_reference.items():
        made = [m for m in found if not m["bare_value_co"]]
        reasons = ", ".join(sorted({f"{m['reason']} ({'certain' if m['certain'] else 'uncertain'})" for m in found}))
        print(f"  {reference!r} (question of {record}): {len(found)} CO, {len(made)} made by the filler; {reasons}; "
              f"e.g. {(made or found)[0]['answer']!r}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simpleqa", help="the Chinese SimpleQA jsonl that held-out records name by simpleqa_id "
                                           "(default: the shared data, when present)")
    parser.add_argument("--repeats", type=int, default=3, help="new processes per speed / memory figure (median)")
    parser.add_argument("--no-speed", action="store_true", help="accuracy and the filler check only")
    parser.add_argument("--json", dest="json_out", help="also write every figure here")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child[0], args.child[1] if len(args.child) > 1 else None)
        return 0

    from shared_data import CHINESE_SIMPLEQA

    simpleqa = args.simpleqa or (str(CHINESE_SIMPLEQA) if CHINESE_SIMPLEQA.is_file() else None)
    if simpleqa is None:
        print("note: no Chinese SimpleQA file: held-out records of source simpleqa are left out", file=sys.stderr)
    sets = _records(simpleqa)
    report = {"accuracy": {name: accuracy(records) for name, records in sets.items()}}
    report["signature"] = next(iter(report["accuracy"].values()))["signature"]
    report["filler"] = filler_check(sets)
    if not args.no_speed:
        heldout = [r for name, records in sets.items() if name.startswith("held-out") and "test5 +" not in name
                   for r in records]
        report["speed"] = speed_and_memory(sets, sets["validation.jsonl"], heldout, args.repeats)
    print(f"rule judge: {report['signature']}\n")
    print_table(report)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
