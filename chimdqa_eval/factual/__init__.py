"""Factual-answer grading: a judge (rule or LLM) gives each answer CO / NA / IN, then CO, NA, IN, CGA and F1
overall and per domain, question type, level, category or any other grouping.

    >>> from chimdqa_eval.factual import compute_factual
    >>> r = compute_factual(["3518", "大约3500", "3520", "不知道"], ["3518.17"] * 4)
    >>> r["grades"], r["CO"], r["CGA"]
    (['CO', 'NA', 'IN', 'NA'], 25.0, 50.0)
"""
from __future__ import annotations

import warnings

from chimdqa_eval.aggregate import factual_confidence_intervals, group_indices, paired_factual_test
from chimdqa_eval.factual.judge_rule import grade_answer, grade_answers
from chimdqa_eval.factual.rules import NORMALIZER_VERSION
from chimdqa_eval.factual.scores import GRADES, SCORE_NAMES, UNGRADED, scores_from_grades
from chimdqa_eval.schema import (BREAKDOWNS, InputError, check_answer_pairs, check_breakdowns, check_same_length,
                                 check_texts)
from chimdqa_eval.signature import make_signature

__all__ = ["compute_factual", "scores_from_grades", "factual_confidence_intervals", "paired_factual_test",
           "grade_answer", "grade_answers", "GRADES", "SCORE_NAMES", "UNGRADED", "JUDGES"]

JUDGES = ("rule", "llm")

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


def _signature(judge: str, client) -> str:
    if judge == "rule":
        return make_signature({"metric": "chimdqa_factual", "judge": "rule", "rules": NORMALIZER_VERSION})
    from chimdqa_eval.factual.judge_llm import PROMPT_VERSION
    fields = {"metric": "chimdqa_factual", "judge": "llm", "prompt": PROMPT_VERSION}
    fields.update(client.signature_fields)
    return make_signature(fields)


def compute_factual(predictions, references, questions=None, *, domains=None, question_types=None, levels=None,
                    categories=None, groups=None, judge="rule", judge_model=None, api_base=None,
                    api_key_env="OPENAI_API_KEY", concurrency=16, cache_path=None, endpoint=None) -> dict:
    """Grade each prediction against its reference and aggregate.

    Returns {"CO", "NA", "IN", "CGA", "F1"} (floats, 0-100), "grades" (one of CO / NA / IN per item, or
    UNGRADED from the LLM judge), "by_domain" / "by_question_type" / "by_level" / "by_category" when those
    columns are given, "by_<name>" for each entry of `groups` (e.g. {"primary_category": [...]} for Chinese
    SimpleQA), and "signature". The LLM judge adds "ungraded" (count) and "judge_errors" ([{index, error}]).

    The LLM judge asks `endpoint` (a chimdqa_eval.llm.LLMEndpoint, or an open ChatClient shared with other
    stages, whose usage and call cap then cover them all), else the endpoint of judge_model=, api_base=,
    api_key_env=, concurrency= and cache_path=.
    """
    predictions, references = check_answer_pairs(predictions, references)
    questions = check_texts("questions", questions) if questions is not None else None
    labels = check_breakdowns(domains=domains, question_types=question_types, levels=levels, categories=categories)
    n = check_same_length(predictions=predictions, references=references, questions=questions, **labels)
    groups = _check_groups(groups, n)
    questions = questions if questions is not None else [""] * n

    client = None
    if judge == "rule":
        grades, errors = grade_answers(predictions, references, questions), []
    elif judge == "llm":
        from chimdqa_eval.factual.judge_llm import grade_answers_llm
        from chimdqa_eval.llm import endpoint_from_keywords, open_client

        if endpoint is None:
            endpoint = endpoint_from_keywords(judge_model, api_base, api_key_env=api_key_env,
                                              concurrency=concurrency, cache_path=cache_path, needed_for="judge='llm'")
        client, owned = open_client(endpoint)
        try:
            grades, errors = grade_answers_llm(predictions, references, questions, client)
        finally:
            if owned:
                client.close()
    else:
        raise InputError(f"judge: unknown judge {judge!r}; expected one of {', '.join(JUDGES)}")

    result = scores_from_grades(grades)
    result["grades"] = grades
    columns = [(*BREAKDOWNS[argument][:2], values) for argument, values in labels.items()]
    for column, order, values in columns + [(name, (), values) for name, values in groups.items()]:
        result[f"by_{column}"] = {label: scores_from_grades([grades[i] for i in idx])
                                  for label, idx in group_indices(values, order).items()}
    if judge == "llm":
        result["ungraded"] = len(errors)
        result["judge_errors"] = errors
        if errors:
            warnings.warn(f"chimdqa_factual: the judge gave no verdict for {len(errors)} of {n} items (graded "
                          f"{UNGRADED}, left out of CO/NA/IN); first: item {errors[0]['index']}: "
                          f"{errors[0]['error']}", stacklevel=2)
    result["signature"] = _signature(judge, client)
    return result
