"""The offline clause-level claim extractor on Chinese (and mixed) text."""
import pytest

from chimdqa_eval.rag import SentenceExtractor, sentence_claims
from chimdqa_eval.rag.claims import parse_claim_list


@pytest.mark.parametrize("text, claims", [
    # Sentence ends: 。！？； and their ASCII forms.
    ("净利润为1,200万元；毛利率下降。现金流充足！", ["净利润为1,200万元", "毛利率下降", "现金流充足"]),
    # Commas split clauses, but a short lead-in ("首先", "据统计", "2023年") joins the clause after it and a short
    # tail joins the clause before it; a comma inside a number or brackets never splits.
    ("首先，公司2023年营业收入为12.5亿元，同比增长8%。",
     ["首先，公司2023年营业收入为12.5亿元，同比增长8%"]),
    ("据统计，2023年，该市GDP（含第一、第二产业）达到5000亿元，位居全省第一。",
     ["据统计，2023年，该市GDP（含第一、第二产业）达到5000亿元", "位居全省第一"]),
    ("患者出现持续高热症状，医生建议立即住院观察", ["患者出现持续高热症状", "医生建议立即住院观察"]),
    # A framing clause (截至, 根据, 由于, ...) is no claim of its own: it joins the clause it frames.
    ("截至2023年底，公司共有员工3,518人，其中研发人员占比约为35%。",
     ["截至2023年底，公司共有员工3,518人", "其中研发人员占比约为35%"]),
    ("根据《民法典》第1165条规定，行为人因过错侵害他人民事权益造成损害的，应当承担侵权责任。",
     ["根据《民法典》第1165条规定，行为人因过错侵害他人民事权益造成损害的", "应当承担侵权责任"]),
    ("公司本年度出现亏损，因为原材料价格大幅上涨。", ["公司本年度出现亏损，因为原材料价格大幅上涨"]),
    # List items: numbered, Chinese-numbered, bracketed, bullets; markers are dropped.
    ("主要措施如下：1. 加强监管；2. 完善制度。3. 提高透明度",
     ["主要措施如下", "加强监管", "完善制度", "提高透明度"]),
    ("（一）总则\n（二）适用范围：本办法适用于全国。\n- 第一项内容\n• 第二项内容",
     ["总则", "适用范围：本办法适用于全国", "第一项内容", "第二项内容"]),
    ("一、背景介绍\n二、研究方法，包括问卷调查和访谈", ["背景介绍", "研究方法，包括问卷调查和访谈"]),
    ("步骤：1、准备材料 2、开始实验", ["步骤", "准备材料", "开始实验"]),
    # Decimals and a number like "1.5" are not list markers or sentence ends.
    ("增长了1.5倍。利率为3.25%", ["增长了1.5倍", "利率为3.25%"]),
    ("The Nile is long. It is 6,650 km long.", ["The Nile is long", "It is 6,650 km long"]),
    # Closing quotes stay with their sentence.
    ("他说：“今天天气很好。”然后离开了。", ["他说：“今天天气很好。”", "然后离开了"]),
    # Nothing to claim.
    ("", []), ("。。。\n\n！", []), ("   ", []),
])
def test_sentence_claims(text, claims):
    assert sentence_claims(text) == claims


def test_no_claim_is_empty_or_punctuation_only():
    text = "，，。1.\n- \n（一）\n；；好的，。"
    claims = sentence_claims(text)
    assert claims == ["好的"]


def test_extractor_object_maps_texts_in_order():
    extractor = SentenceExtractor()
    assert extractor.extract(["甲。乙。", ""], ["q1", "q2"]) == [["甲", "乙"], []]
    assert extractor.name == "sentence-v2"


def test_parse_claim_list_tolerates_fences_and_rejects_garbage():
    assert parse_claim_list('```json\n["甲公司成立于2001年", " ", "总部在北京"]\n```') == ["甲公司成立于2001年", "总部在北京"]
    assert parse_claim_list("[]") == []
    for bad in ("没有事实", '["a", 3]', '["a",'):
        with pytest.raises(ValueError):
            parse_claim_list(bad)
