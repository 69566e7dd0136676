"""A long reference's decision list (factual/stages_long.py): cases keyed by the reason code they must get, each as (answer, reference, question,
grade, certain, the registered rule that decides). `chimdqa judge-rules` lists the rules in order."""
import pytest

from rule_cases import assert_cases, assert_family

CASES = {
    'long_match': [
        ('3518.17万元', '2019年公司实现营业收入3518.17万元，较上年同期增长12.5%，主要来自海外市场的扩张。', '2019年公司的营业收入是多少？', 'CO', False, 'long.match'),
        ('约3518万元', '2019年公司实现营业收入3518.17万元，较上年同期增长12.5%，主要来自海外市场的扩张。', '2019年公司的营业收入是多少？', 'CO', False, 'long.match'),
    ],
    'long_number_mismatch': [
        ('4000万元', '2019年公司实现营业收入3518.17万元，较上年同期增长12.5%，主要来自海外市场的扩张。', '2019年公司的营业收入是多少？', 'IN', False, 'long.number_mismatch'),
    ],
}


@pytest.mark.parametrize("reason", sorted(CASES))
def test_long_reason(reason):
    assert_cases(reason, CASES[reason])


def test_the_cases_are_decided_by_long_rules():
    assert_family(CASES, ('long.',))
