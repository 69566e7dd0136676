"""The rule judge's shape: decision lists of named rules whose examples they decide and whose verdicts they
declare, vocabulary as versioned data without repeated entries, regexes compiled once, short functions, the
`judge-rules` command, and the filler-opening and bracketed-figure guards (issue 23)."""
import argparse
import ast
import copy
import re
import shutil
import sys
from pathlib import Path

import pytest

from chimdqa_eval.commands import judge_rules
from chimdqa_eval.factual import rules, version, vocabulary
from chimdqa_eval.factual.decision import REFUSAL_KINDS, Decision, Family
from chimdqa_eval.factual.judge_rule import FAMILIES, trace_answer, trace_answers
from chimdqa_eval.factual.rulebook import listed_rules, rule_figures
from shared_data import CHINESE_SIMPLEQA

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from judge_accuracy import HELDOUT_SET, VALIDATION_SET, load_validation_set  # noqa: E402

FACTUAL = Path(__file__).resolve().parents[1] / "chimdqa_eval" / "factual"
LONGEST_FUNCTION = 60


def test_no_function_in_factual_is_longer_than_60_lines():
    long = []
    for path in sorted(FACTUAL.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and node.end_lineno - node.lineno + 1 > LONGEST_FUNCTION:
                long.append(f"{path.name}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert long == []


def _functions(tree):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


@pytest.mark.parametrize("module", [*sorted(p.name for p in FACTUAL.glob("reading_*.py")), "rules.py", "names.py",
                                    "places.py", "case.py", "decision.py",
                                    "stages_text.py", "stages_numeric.py", "stages_long.py", "stages_unmatched.py",
                                    "judge_rule.py", "aliases.py", "vocabulary.py"])
def test_regexes_are_compiled_once_not_per_call(module):
    """Inside functions: no re.search(r"literal", …) (a module constant), and re.compile only in a cached helper."""
    inline = []
    for function in _functions(ast.parse((FACTUAL / module).read_text(encoding="utf-8"))):
        cached = any("lru_cache" in ast.unparse(d) for d in function.decorator_list)
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" \
                    and node.func.attr not in ("escape",) and not (node.func.attr == "compile" and cached):
                inline.append(f"{function.name}:{node.lineno} re.{node.func.attr}")
    assert inline == []


def test_every_rule_is_registered_once_and_its_list_is_ordered():
    names = [r.name for _, r in listed_rules()]
    assert len(names) == len(set(names))
    fallback = [r.name for r in FAMILIES["text"].rules if r.name.startswith("unmatched.")]
    for kind, family in FAMILIES.items():
        own = [r for r in family.rules if not r.name.startswith("unmatched.")]
        assert all(r.name.startswith(kind + ".") and callable(r.test) for r in own)
        assert [r.name for r in family.rules[len(own):]] == fallback  # every list ends with the same fallback
        assert family.rules[-1].name == "unmatched.no_match"  # which always decides
    for _, r in listed_rules():
        assert r.grades and set(r.grades.split("/")) <= {"CO", "NA", "IN"} and r.reasons and r.certain, r.name
        assert r.unless <= REFUSAL_KINDS and r.when in ("", "found", "missing"), r.name


@pytest.mark.parametrize("name, rule", [(r.name, r) for _, r in listed_rules()], ids=lambda x: x
                         if isinstance(x, str) else "")
def test_each_rule_decides_its_own_examples(name, rule):
    assert rule.examples, f"{name} has no example"
    for answer, reference, question in rule.examples:
        decision = trace_answer(answer, reference, question)
        assert decision.rule == name, (answer, reference, decision)
        assert decision.grade in rule.grades.split("/")


def test_on_the_validation_set_each_verdict_is_one_its_rule_declares():
    records = load_validation_set(VALIDATION_SET)
    declared = {r.name: r for _, r in listed_rules()}
    for record, d in zip(records, trace_answers([r["answer"] for r in records], [r["reference"] for r in records],
                                                [r["question"] for r in records])):
        r = declared[d.rule]
        assert d.grade in r.grades.split("/") or r.test is None, (record["id"], d)
        assert d.reason in r.reasons or r.reasons == ("(the rule's)",), (record["id"], d)
        assert not (d.certain and r.certain == "no"), (record["id"], d)


def _every_rule_tried(family, case):
    """The decision list as written: every rule tried in order, a verdict that the answer's refusal kind (unless) or
    alternatives (alone) overrule dropped; what the engine's shortcuts must always agree with."""
    for r in family.rules:
        if r.test is None or r.when not in ("", "found" if case.found else "missing"):
            continue
        verdict = r.test(case)
        if verdict is not None and not (r.unless and case.refusal in r.unless) \
                and not (r.alone and case.offers_alternatives):
            decision = Decision(*verdict, r.name)
            return family.settle(case, decision) if family.settle else decision
    raise AssertionError(f"{family.name} ended without a verdict")


def _engine_against_every_rule_tried(monkeypatch, records):
    """Each reading of each record decided by the engine and by _every_rule_tried, on fresh copies of its Case."""
    compared, differ = [], []
    decide = Family.decide

    def both(family, case):
        engine, full = decide(family, copy.copy(case)), _every_rule_tried(family, copy.copy(case))
        compared.append(1)
        if engine != full:
            differ.append((case.answer.whole, case.ref.main, engine, full))
        return engine

    monkeypatch.setattr(Family, "decide", both)
    trace_answers([r["answer"] for r in records], [r["reference"] for r in records], [r["question"] for r in records])
    assert len(compared) >= len(records) and differ == []


def test_the_engine_skips_no_rule_that_would_decide(monkeypatch):
    """The engine does not try a rule whose verdict would be overruled (and may skip rules by what a Case
    cannot hold): on every labelled answer it decides as the list tried rule by rule does."""
    _engine_against_every_rule_tried(monkeypatch, load_validation_set(VALIDATION_SET))


@pytest.mark.slow
@pytest.mark.skipif(not CHINESE_SIMPLEQA.is_file(), reason="no Chinese SimpleQA file for the held-out answers")
def test_the_engine_skips_no_rule_that_would_decide_on_the_held_out_answers(monkeypatch):
    _engine_against_every_rule_tried(monkeypatch, load_validation_set(HELDOUT_SET, CHINESE_SIMPLEQA))


def test_vocabulary_lists_hold_no_entry_twice():
    assert set(vocabulary.list_names()) >= {"turn_words", "truth_words", "filler_openings", "kind_nouns",
                                            "kind_suffixes", "regions", "translit_classes", "same_counters",
                                            "measure_chars", "event_words"}
    for name in vocabulary.list_names():
        entries = vocabulary.words(name)
        assert len(entries) == len(set(entries)), (name, sorted({e for e in entries if entries.count(e) > 1}))
    classes = "".join(vocabulary.words("translit_classes"))  # a character folds to one class only
    assert len(classes) == len(set(classes))
    counted = "".join(vocabulary.words("same_counters"))
    assert len(counted) == len(set(counted))
    units, converted = vocabulary.units()
    assert converted <= set(units) and len(units) >= 100


def test_vocabulary_files_say_where_they_are_wrong():
    with pytest.raises(vocabulary.VocabularyError, match=r"x\.txt:3: list name 'a' empty or given twice"):
        vocabulary.parse_lists("[a]\nb c\n[a]\n", "x.txt")
    with pytest.raises(vocabulary.VocabularyError, match=r"x\.txt:1: entries before any"):
        vocabulary.parse_lists("b c\n", "x.txt")
    with pytest.raises(vocabulary.VocabularyError, match=r"units\.tsv:2: .*each spelling once"):
        vocabulary.parse_units("米\t米\t1\n米\t米\t1\n")
    assert vocabulary.parse_lists("# note\n[a]  \nb c  # d\ne\n") == {"a": (("b", "c"), ("e",))}
    assert vocabulary.parse_units("°f\t°c\t5/9\t-32\tconverted\n")[0]["°f"][1:] == (rules.Decimal(5) / 9, -32)
    with pytest.raises(vocabulary.VocabularyError, match="no vocabulary list 'nothing'"):
        vocabulary.words("nothing")


def test_the_signature_names_a_digest_of_every_vocabulary_file(tmp_path, monkeypatch):
    assert version.NORMALIZER_VERSION.endswith("+" + vocabulary.VERSION)
    assert set(vocabulary.FILES) == {p.name for p in vocabulary.DATA.iterdir() if p.suffix in (".txt", ".tsv")} \
        - {"person_aliases.tsv", "places.tsv"}  # those two are versioned by aliases.py and places.py
    for file in vocabulary.FILES:
        shutil.copytree(vocabulary.DATA, tmp_path / file, dirs_exist_ok=True)
        edited = tmp_path / file / file
        edited.write_text(edited.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
        monkeypatch.setattr(vocabulary, "DATA", tmp_path / file)
        assert vocabulary._version() != vocabulary.VERSION, file


def test_a_turn_word_is_spelled_once_and_reaches_every_pattern_that_turns():
    truth = vocabulary.words("truth_words")
    assert set(truth) <= set(vocabulary.words("turn_words"))
    source = "".join(p.read_text(encoding="utf-8") for p in sorted(FACTUAL.glob("reading_*.py")))  # the readers
    assert not any(re.search(rf"r\"[^\"]*{w}", source) for w in truth)  # no pattern spells them itself


def _latin_references() -> dict:
    records = load_validation_set(VALIDATION_SET)
    if CHINESE_SIMPLEQA.exists():
        records += load_validation_set(HELDOUT_SET, CHINESE_SIMPLEQA)
    latin = {}
    for r in records:
        if re.search(r"[A-Za-z]", r["reference"]) and not re.search(r"[\u4e00-\u9fff]", r["reference"]):
            latin.setdefault(r["reference"], r["question"])
    return latin


FILLERS = ["答案是3.15亿元。", "是1998年。", "这个问题我不太确定。", "北京市。", "张伟。", "42%。", "第三章。"]


@pytest.mark.slow  # every Latin-script reference of the labelled sets, every opening: ~5,000 gradings of names
def test_filler_openings_never_create_a_match_for_any_latin_reference():
    """根据文档，答案是3.15亿元。 for W.J. Youden was CO through a sound-alike: no opening (data/cues.txt), with a comma
    or without, before an answer that names nothing, may match a Latin-script reference of the labelled sets."""
    references = _latin_references()
    assert len(references) >= 20
    matched = []
    for reference, question in references.items():
        for i, opening in enumerate(vocabulary.words("filler_openings")):
            for answer in (f"{opening}，{FILLERS[i % len(FILLERS)]}", f"{opening}{FILLERS[(i + 1) % len(FILLERS)]}"):
                if trace_answer(answer, reference, question).grade == "CO":
                    matched.append((answer, reference))
        for value in FILLERS[-3:]:  # the wrong value alone (张伟 for Ching & S. K. Wu was a sound-alike)
            if trace_answer(value, reference, question).grade == "CO":
                matched.append((value, reference))
    assert matched == []


def test_filler_openings_create_no_match_for_the_latin_references_they_fooled():
    """The cases that were CO through a sound-alike or a place (the loop over every reference is the slow test
    above), and a name after an opening that stays CO."""
    assert trace_answer("根据文档，答案是3.15亿元。", "W.J. Youden", "约登指数是谁提出的？").grade != "CO"
    assert trace_answer("据报道，3.15亿元。", "Cryptoki", "PKCS #11 标准定义的编程接口叫什么？").grade != "CO"
    assert trace_answer("北京市。", "Stuart Biggs", "谁设计了这个标志？").grade != "CO"  # a known place, no name
    assert trace_answer("根据文档，张伟。", "Ching & S. K. Wu", "苏铁蕨的命名人是谁？").grade != "CO"  # too little of it
    assert trace_answer("据我所知，是哈贝马斯。", "Habermas", "交往行为理论是谁提出的？").grade == "CO"  # a name stays


def test_a_bracketed_figure_that_differs_is_no_certain_match():
    question = "哪个业务的收入占比最高？"
    assert tuple(trace_answer("储能电池（28.07%）", "储能电池（18.3%）", question)) == \
        ("CO", False, "match", "guard.readings_disagree")
    assert tuple(trace_answer("储能电池（18.3%）", "储能电池（18.3%）", question))[:2] == ("CO", True)
    assert tuple(trace_answer("储能电池", "储能电池（18.3%）", question))[:2] == ("CO", True)
    assert tuple(trace_answer("3.5元", "3.50元（含税）", "每10股派发多少现金红利？"))[:2] == ("CO", True)


def _run_judge_rules(argv, capsys) -> str:
    parser = argparse.ArgumentParser()
    judge_rules.add_arguments(parser)
    assert judge_rules.run(parser.parse_args(argv)) == 0
    return capsys.readouterr().out


def test_judge_rules_prints_the_decision_lists_in_order(capsys):
    out = _run_judge_rules([], capsys)
    printed = re.findall(r"^\s*\d+\s+(\S+)", out, flags=re.M)
    assert printed == [r.name for _, r in listed_rules()]
    assert "fired" not in out


def test_judge_rules_counts_each_rules_firings_and_hits_on_the_labels(capsys):
    out = _run_judge_rules(["--labels", str(VALIDATION_SET)], capsys)
    records = load_validation_set(VALIDATION_SET)
    figures = rule_figures(records)
    assert sum(f.fired for f in figures.values()) == len(records)
    rows = dict(re.findall(r"^\s*\d+\s+(\S+).*\n\s+(\d+ .*)$", out, flags=re.M))
    for name, f in figures.items():
        assert rows[name].split()[0] == str(f.fired) and rows[name].split()[2] == str(f.certain), name
    refusal = figures["unmatched.refusal"]
    assert refusal.fired > 50 and refusal.right == refusal.certain_right  # sure every time it refuses
    assert f"{len(records)} labelled answers" in out


def test_judge_rules_names_a_bad_labels_file(tmp_path, capsys):
    bad = tmp_path / "labels.jsonl"
    bad.write_text('{"id": "a", "question": "q", "reference": "1", "answer": "1", "label": "maybe"}\n',
                   encoding="utf-8")
    with pytest.raises(Exception, match=r"labels\.jsonl.*label 'maybe' is not one of CO, NA, IN"):
        _run_judge_rules(["--labels", str(bad)], capsys)
