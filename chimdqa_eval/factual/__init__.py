"""Factual-answer grading: a judge (rule or LLM) gives each answer CO / NA / IN, then CO, NA, IN, CGA and F1
overall and per domain, question type, level, category or any other grouping.

    >>> from chimdqa_eval.factual import compute_factual
    >>> r = compute_factual(["3518", "大约3500", "3520", "不知道"], ["3518.17"] * 4)
    >>> r["grades"], r["CO"], r["CGA"]
    (['CO', 'NA', 'IN', 'NA'], 25.0, 50.0)
"""
from __future__ import annotations

import warnings

from chimdqa_eval.aggregate import breakdown_values, factual_confidence_intervals, paired_factual_test, summarize
from chimdqa_eval.factual import processes
from chimdqa_eval.factual.judge_llm import grade_answers_llm, load_template
from chimdqa_eval.factual.judge_rule import (
    Verdict,
    grade_answer,
    grade_answers,
    judge_answer,
    judge_answers,
    trace_answers,
)
from chimdqa_eval.factual.version import NORMALIZER_VERSION
from chimdqa_eval.grades import GRADES, SCORE_NAMES, UNGRADED, scores_from_grades
from chimdqa_eval.llm import endpoint_from_keywords, open_client
from chimdqa_eval.schema import (
    BREAKDOWNS,
    LABEL_ORDER,
    InputError,
    breakdown_columns,
    check_answer_pairs,
    check_breakdowns,
    check_same_length,
    check_texts,
)
from chimdqa_eval.signature import make_signature

__all__ = ["compute_factual", "scores_from_grades", "factual_confidence_intervals", "paired_factual_test",
           "grade_answer", "grade_answers", "judge_answer", "judge_answers", "Verdict", "GRADES", "SCORE_NAMES", "UNGRADED", "JUDGES",
           "clear_judge_caches"]

JUDGES = ("rule", "llm", "cascade")
RULE_BLOCK = processes.MAX_SHARE  # answers the rule judge reads between two emptyings of its caches (see _traced)
LLM_JUDGES = ("llm", "cascade")  # the judges that ask an LLM endpoint

def _check_groups(groups, n: int) -> dict:
    if groups is None:
        return {}
    if not isinstance(groups, dict):
        raise InputError(f"groups: expected a dict of name -> labels, got {type(groups).__name__}")
    built_in = {column: argument for argument, (column, _, _) in BREAKDOWNS.items()}
    out = {}
    for name, labels in groups.items():
        if name in built_in:
            raise InputError(f"groups: {name!r} is a built-in breakdown; pass it as {built_in[name]}=")
        labels = check_texts(f"groups[{name!r}]", labels, allow_empty=False)
        if len(labels) != n:
            raise InputError(f"groups[{name!r}] has {len(labels)} labels for {n} items")
        out[name] = labels
    return out


def clear_judge_caches() -> None:
    """Empty the rule judge's memo caches (every lru_cache of this package's loaded modules bounded to more than
    one entry: readings of references, questions and answers, pinyin forms of name spans, compiled patterns); the
    vocabulary tables (caches of one entry, or unbounded ones of a function without arguments) stay loaded.
    `chimdqa evaluate` calls it once its factual answers are graded: on a 50,000-answer run the caches held
    ~600 MB that the open-ended metrics could not use otherwise. Grades do not change; the next run re-reads what it needs (a leaderboard: its references, once per submission)."""
    for cached in processes.judge_caches():
        if (cached.cache_info().maxsize or 1) > 1:
            cached.cache_clear()


def _traced(predictions, references, questions, workers=None) -> list:
    """trace_answers over every answer: in forked processes where that is allowed and pays (factual.processes),
    each emptying its memo caches every RULE_BLOCK answers; else here, beyond RULE_BLOCK answers block by block with
    the judge's memo caches emptied between blocks, so that they hold at most one block's readings (15,010
    answers: peak RSS 435 -> 261 MB at the same CPU time; grades the same, the caches being memos)."""
    count = processes.plan(len(predictions), workers)
    if count > 1:
        return processes.graded_in_processes(_share, predictions, references, questions, count)
    if len(predictions) <= RULE_BLOCK:
        return trace_answers(predictions, references, questions)
    verdicts = []
    for start in range(0, len(predictions), RULE_BLOCK):
        block = slice(start, start + RULE_BLOCK)
        verdicts += trace_answers(predictions[block], references[block], questions[block])
        clear_judge_caches()
    return verdicts


_graded_since_clearing = 0  # in a worker process: answers graded since its memo caches were last emptied


def _share(predictions, references, questions) -> list:
    """One worker's share; the worker empties its memos once it has graded RULE_BLOCK answers since it last did,
    as one process does between blocks."""
    global _graded_since_clearing
    verdicts = trace_answers(predictions, references, questions)
    _graded_since_clearing += len(verdicts)
    if _graded_since_clearing >= RULE_BLOCK:
        clear_judge_caches()
        _graded_since_clearing = 0
    return verdicts


def _signature(judge: str, client, template) -> str:
    fields = {"metric": "chimdqa_factual", "judge": judge}
    if judge in ("rule", "cascade"):
        fields["rules"] = NORMALIZER_VERSION
    if judge in LLM_JUDGES:
        fields.update(template.signature_fields)
        fields.update(client.signature_fields)
    return make_signature(fields)


def compute_factual(predictions, references, questions=None, *, domains=None, question_types=None, levels=None,
                    categories=None, groups=None, judge="rule", judge_model=None, api_base=None,
                    api_key_env="OPENAI_API_KEY", concurrency=16, cache_path=None, endpoint=None,
                    judge_prompt=None, workers=None) -> dict:
    """Grade each prediction against its reference and aggregate.

    Returns {"CO", "NA", "IN", "CGA", "F1"} (floats, 0-100), "grades" (one of CO / NA / IN per item, or
    UNGRADED from the LLM judge), "by_domain" / "by_question_type" / "by_level" / "by_category" when those
    columns are given, "by_<name>" for each entry of `groups` (e.g. {"primary_category": [...]} for Chinese
    SimpleQA), and "signature". The rule judge adds "certain" (per item: were the rules sure of the grade?)
    and "reasons" (per item: the reason code, e.g. "number_match", "refusal") and "rules" (per item: the
    registered rule that decided, e.g. "numeric.number_match"; `chimdqa judge-rules` lists them). The LLM judge adds
    "ungraded" (count) and "judge_errors" ([{index, error}]).

    judge="cascade" grades with the rules where they are certain and asks the LLM judge for the rest: it adds
    "judged_by" (per item: "rule" or "llm"), "certain" and "reasons" (the rule judge's), and "cascade"
    {"rule": items the rules decided, "llm": items sent to the LLM judge, "llm_calls_saved": the former}.

    The LLM judge asks `endpoint` (a chimdqa_eval.llm.LLMEndpoint, or an open ChatClient shared with other
    stages, whose usage and call cap then cover them all), else the endpoint of judge_model=, api_base=,
    api_key_env=, concurrency= and cache_path=. judge_prompt= is the path of a grader template (YAML: version,
    system, user, verdict_regex, verdicts, parse, repair; see factual/templates/zh-judge-1.yaml, the default) or
    the name of a shipped one ("chinese-simpleqa-official", "simpleqa-official", with ":strict" to read replies
    our way; see factual.judge_llm); the signature names its version and sha256 (and prompt_parse:official).

    workers= is how many processes the rule judge grades in (None, the default: as $CHIMDQA_JUDGE_WORKERS says,
    else one a CPU; 1: this process only): forked copies of this one, each with at least 1,000 answers, where
    forking is safe (factual.processes). Grades are the same whatever the number.
    """
    predictions, references = check_answer_pairs(predictions, references)
    questions = check_texts("questions", questions) if questions is not None else None
    labels = check_breakdowns(domains=domains, question_types=question_types, levels=levels, categories=categories)
    n = check_same_length(predictions=predictions, references=references, questions=questions, **labels)
    groups = _check_groups(groups, n)
    questions = questions if questions is not None else [""] * n
    _check_judge(judge, judge_prompt=judge_prompt, judge_model=judge_model, api_base=api_base, endpoint=endpoint,
                 cache_path=cache_path)
    client, template, verdicts, errors, asked = None, None, None, [], []
    if judge in ("rule", "cascade"):
        verdicts = _traced(predictions, references, questions, workers)  # each with the registered rule that decided
        grades = [v.grade for v in verdicts]
    if judge in LLM_JUDGES:
        template = load_template(judge_prompt)
        asked = list(range(n)) if judge == "llm" else [i for i, v in enumerate(verdicts) if not v.certain]
        if endpoint is None:
            endpoint = endpoint_from_keywords(judge_model, api_base, api_key_env=api_key_env,
                                              concurrency=concurrency, cache_path=cache_path,
                                              needed_for=f"judge={judge!r}")
        llm_grades, errors, client = _asked_llm(asked, predictions, references, questions, endpoint, template)
        if judge == "llm":
            grades = [None] * n
        for i, grade in zip(asked, llm_grades):
            grades[i] = grade
    result = _scored(grades, breakdown_columns(labels) | groups)
    result.update(_judge_fields(judge, n, verdicts, asked, errors))
    result["signature"] = _signature(judge, client, template)
    return result


def _check_judge(judge, **llm_only) -> None:
    if judge not in JUDGES:
        raise InputError(f"judge: unknown judge {judge!r}; expected one of {', '.join(JUDGES)}")
    if judge not in LLM_JUDGES:
        unused = [f"{name}=" for name, value in llm_only.items() if value is not None]
        if unused:
            raise InputError(f"{', '.join(unused)} {'is' if len(unused) == 1 else 'are'} for the LLM judge and "
                             f"would be ignored with judge={judge!r}: use judge='llm' or judge='cascade'")


def _asked_llm(asked, predictions, references, questions, endpoint, template):
    """The LLM judge's grades of the items `asked` (indices), its errors indexed like the items, and the client."""
    client, owned = open_client(endpoint)
    try:
        grades, errors = grade_answers_llm([predictions[i] for i in asked], [references[i] for i in asked],
                                           [questions[i] for i in asked], client, template)
    finally:
        if owned:
            client.close()
    return grades, [{**e, "index": asked[e["index"]]} for e in errors], client


def _scored(grades, columns) -> dict:
    result = scores_from_grades(grades)
    result["grades"] = grades
    summary = summarize({"grade": grades}, columns, statistic="grades", label_order=LABEL_ORDER)
    for column, values in columns.items():
        result[f"by_{column}"] = breakdown_values(summary, column, values)
    return result


def _judge_fields(judge, n, verdicts, asked, errors) -> dict:
    """What the judge adds: the rules' certainty, reasons and rules; the cascade's split; the LLM judge's errors."""
    out = {}
    if verdicts is not None:
        out["certain"] = [v.certain for v in verdicts]
        out["reasons"] = [v.reason for v in verdicts]
        out["rules"] = [v.rule for v in verdicts]
    if judge == "cascade":
        sent = set(asked)
        out["judged_by"] = ["llm" if i in sent else "rule" for i in range(n)]
        out["cascade"] = {"rule": n - len(sent), "llm": len(sent), "llm_calls_saved": n - len(sent)}
    if judge in LLM_JUDGES:
        out["ungraded"] = len(errors)
        out["judge_errors"] = errors
        if errors:
            warnings.warn(f"chimdqa_factual: the judge gave no verdict for {len(errors)} of {n} items (graded "
                          f"{UNGRADED}, left out of CO/NA/IN); first: item {errors[0]['index']}: "
                          f"{errors[0]['error']}", stacklevel=3)
    return out
