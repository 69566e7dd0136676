"""The engine's guards over the best reading of the reference (factual/judge_rule.py GUARDS): cases keyed by the reason code they must get, each as (answer, reference, question,
grade, certain, the registered rule that decides). `chimdqa judge-rules` lists the rules in order."""
import pytest

from rule_cases import assert_cases, assert_family

CASES = {
    'empty': [
        ('', '1876', '', 'NA', True, 'answer.empty'),
        ('', '😀', '', 'NA', True, 'answer.empty'),
    ],
    'no_match': [
        ('沈括', '😀', '', 'IN', False, 'guard.unreadable_reference'),
        ('5', '。', '', 'IN', False, 'guard.unreadable_reference'),
        ('1', '%', '', 'IN', False, 'guard.unreadable_reference'),
    ],
    'same_formula': [
        ('C6H5COONa。', 'C7H5NaO2', '苯甲酸钠的分子式是什么？', 'CO', False, 'guard.same_formula'),
        ('Be₃Al₂Si₆O₁₈', 'Be3Al2(SiO3)6', '绿柱石的化学式是什么？', 'CO', False, 'guard.same_formula'),
    ],
    'same_text': [
        ('😀', '😀', '', 'CO', True, 'answer.empty'),
        (' 👍 ', '👍', '', 'CO', True, 'answer.empty'),
    ],
}


@pytest.mark.parametrize("reason", sorted(CASES))
def test_guards_reason(reason):
    assert_cases(reason, CASES[reason])


def test_the_cases_are_decided_by_guards_rules():
    assert_family(CASES, ('guard.', 'answer.'))
