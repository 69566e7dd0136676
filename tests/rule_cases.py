"""Shared checks of the rule judge's case tables (tests/test_rule_*.py): each case is (answer, reference, question,
grade, certain, rule), keyed by the reason code it must get."""
from chimdqa_eval.factual.judge_rule import trace_answer


def assert_cases(reason: str, cases) -> None:
    """Every case gets its grade, certainty, this reason and its rule; the message lists all that do not."""
    wrong = []
    for answer, reference, question, grade, certain, rule in cases:
        got = trace_answer(answer, reference, question)
        if tuple(got) != (grade, certain, reason, rule):
            wrong.append(f"{answer!r} for {reference!r} ({question!r}): expected {grade} {certain} {reason} {rule}, "
                         f"got {' '.join(map(str, got))}")
    assert not wrong, "\n".join(wrong)


def assert_family(cases: dict, prefixes: tuple) -> None:
    """The table holds only rules of its family, and no case twice."""
    rules = {case[5] for group in cases.values() for case in group}
    assert all(r.startswith(prefixes) for r in rules), sorted(r for r in rules if not r.startswith(prefixes))
    keys = [case[:3] for group in cases.values() for case in group]
    assert len(keys) == len(set(keys))
