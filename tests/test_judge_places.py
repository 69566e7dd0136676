"""The rule judge on place questions with the containment table data/places.tsv: a broader place that contains
the reference is NA, another place is IN, a more specific one CO; and the table itself is well formed."""
from __future__ import annotations

import pytest

from chimdqa_eval.factual import places, rules, version
from chimdqa_eval.factual.judge_rule import judge_answer

CITY = "武侯祠位于哪座城市？"
BIRTHPLACE = "莫扎特出生在哪座城市？"


@pytest.mark.parametrize("answer, reference, question, grade, certain, reason", [
    # a province, a country, or both for a city: less specific, consistent
    ("四川省。", "成都", CITY, "NA", True, "broader_place"),
    ("在四川", "成都", CITY, "NA", True, "broader_place"),
    ("奥地利", "萨尔茨堡", BIRTHPLACE, "NA", True, "broader_place"),
    ("中国西藏", "日喀则", "扎什伦布寺位于哪座城市？", "NA", True, "broader_place"),
    ("新疆", "阿勒泰", "喀纳斯湖位于哪个地区？", "NA", True, "broader_place"),
    ("美国加州", "洛杉矶", "好莱坞位于哪座城市？", "NA", True, "broader_place"),
    # a hedged broader place is still less specific
    ("应该是在四川吧", "成都", CITY, "NA", True, "broader_place"),
    # a wrong province or country, another city of the same level
    ("湖北省", "成都", CITY, "IN", True, "other_place"),
    ("德国", "萨尔茨堡", BIRTHPLACE, "IN", True, "other_place"),
    ("维也纳", "萨尔茨堡", BIRTHPLACE, "IN", True, "other_place"),
    ("台中市", "高雄市", "莲池潭位于哪个城市？", "IN", True, "other_place"),
    ("广东", "厦门", "鼓浪屿位于哪座城市？", "IN", True, "other_place"),
    ("福建泉州", "厦门", "鼓浪屿位于哪座城市？", "IN", True, "other_place"),  # one claim: 泉州 in 福建
    ("可能是湖北", "成都", CITY, "IN", True, "other_place"),  # a hedged wrong guess
    ("南京", "北京", "故宫位于哪座城市？", "IN", True, "other_place"),  # a city for a municipality
    # a more specific answer: the reference's name inside it, or only a place inside it
    ("成都市武侯区", "成都", CITY, "CO", True, "match"),
    ("海淀区", "北京", "清华大学位于哪座城市？", "CO", False, "narrower_place"),
    # the reference's name inside another place's name is that other place
    ("吉林省", "吉林市", "雾凇岛位于哪座城市？", "NA", True, "broader_place"),
    ("纽约州", "纽约", "联合国总部位于哪座城市？", "NA", True, "broader_place"),
    ("印度尼西亚", "印度", "泰姬陵位于哪个国家？", "IN", True, "other_place"),
    ("罗马尼亚", "罗马", "斗兽场位于哪座城市？", "IN", True, "other_place"),
    ("天津河北区", "河北省", "白洋淀位于哪个省？", "IN", True, "other_place"),
    ("吉林市", "吉林省", "松花湖位于哪个省？", "CO", False, "narrower_place"),  # a place inside: more specific
    # the reference by another name the table gives it
    ("西贡", "胡志明市", "越南最大的城市是哪座？", "CO", True, "place_alias"),
    ("吉林省延边", "延边朝鲜族自治州", "长白山天池位于哪个自治州？", "CO", True, "match"),  # its short name
])
def test_place_answers(answer, reference, question, grade, certain, reason):
    assert tuple(judge_answer(answer, reference, question)) == (grade, certain, reason)


def test_refusals_keep_their_grade():
    assert judge_answer("在四川，具体哪个城市我记不清了", "成都", CITY) == ("NA", True, "refusal")
    assert judge_answer("这个我不知道。", "成都", CITY) == ("NA", True, "refusal")
    # a claim after a refusal is read, but not surely
    assert tuple(judge_answer("我不太清楚，但是在湖北", "成都", CITY))[:2] == ("IN", False)
    assert tuple(judge_answer("我不太清楚，但是在四川", "成都", CITY))[:2] == ("NA", False)


def test_what_the_table_cannot_settle_is_not_sure():
    # 吉林 is a province and a city: the province contains 长春, the city does not
    verdict = judge_answer("吉林", "长春", "一汽的总部位于哪座城市？")
    assert verdict.reason not in ("broader_place", "other_place") and not verdict.certain
    # 德州 is 山东德州市 and, commonly, Texas
    verdict = judge_answer("德州", "休斯敦", "约翰逊航天中心位于美国哪座城市？")
    assert verdict.reason != "other_place" and not verdict.certain
    # two places not on one chain: competing candidates, not one claim
    assert tuple(judge_answer("湖北或者湖南", "成都", CITY))[:2] == ("IN", False)
    # a place the table lacks beside a known one: 江油市 is a county-level city of 四川
    assert judge_answer("四川省江油市", "成都", CITY).reason not in ("broader_place", "other_place")
    # more than places: 四川省会 describes 成都
    assert not judge_answer("四川省会", "成都", CITY).certain
    # a reference the table does not know
    assert not judge_answer("甘肃省", "敦煌", "鸣沙山位于哪座城市？").certain  # 敦煌 is a county-level city


def test_places_the_question_names_do_not_count():
    verdict = judge_answer("澳大利亚", "堪培拉", "澳大利亚的首都是哪座城市？")
    assert verdict.reason not in ("broader_place", "other_place")


def test_containment_functions():
    assert places.contains("瑞士", "日内瓦") is True
    assert places.contains("法国", "日内瓦") is False
    assert places.contains("中国", "拉萨") is True and places.contains("西藏", "拉萨") is True
    assert places.contains("吉林", "长春") is None  # readings disagree
    assert places.contains("吉林", "中国") is False  # no reading of 吉林 contains China
    assert places.contains("吉林省", "长春") is True and places.contains("吉林市", "长春") is False
    assert places.contains("亚特兰蒂斯", "日内瓦") is None
    assert places.ancestors("拉萨") == ("西藏自治区", "中国")
    assert places.ancestors("延边") == ("吉林省", "中国")
    assert places.ancestors("吉林") == () and places.place("吉林") is None
    assert places.place("德州") is None and None in places.readings("德州")
    assert places.place("新疆").name == "新疆维吾尔自治区" and places.place("新疆").level == "province"


def test_places_in_finds_longest_names_not_inside_other_words():
    assert places.places_in("西藏自治区首府拉萨") == ["西藏自治区", "拉萨"]
    assert places.places_in("陕西西安") == ["陕西", "西安"]
    assert places.places_in("天津河北区") == ["天津", "河北区"]  # 河 starts a name, not a river
    assert places.place_spans("在印度尼西亚") == [(1, 6, "印度尼西亚")]
    assert places.places_in("延边朝鲜族自治州") == ["延边朝鲜族自治州"]
    assert places.places_in("南澳大利亚州的阿德莱德") == ["南澳大利亚州", "阿德莱德"]
    assert places.places_in("青海湖在青海") == ["青海"]  # not the lake
    assert places.places_in("乔治·华盛顿") == []  # a person
    assert places.places_in("朝鲜族") == [] and places.places_in("朝鲜半岛") == []
    assert places.places_in(rules.clean("三門峽")) == [rules.key(rules.clean("三门峡"))]


def test_the_table_is_well_formed():
    rows = places.parse_table(places._table_bytes().decode("utf-8"))
    by_name = {}
    for row in rows:
        assert row.name not in by_name, f"two rows named {row.name}"
        by_name[row.name] = row
    assert len(rows) > 1000
    for row in rows:
        assert (row.level == "country") == (row.parent == ""), row
        if row.parent:
            parent = by_name[row.parent]  # every parent exists
            assert places.RANK[parent.level] < places.RANK[row.level] or row.note, row
        seen, current = {row.name}, row
        while current.parent:  # no cycles
            current = by_name[current.parent]
            assert current.name not in seen, f"cycle through {row.name}"
            seen.add(current.name)
        for name in (row.name, *row.aliases):
            assert name == name.strip() and rules.key(name) == name, f"{name!r}: not a bare name"
            assert row in places.readings(name), name
    # a name two rows share is noted on both
    owners = {}
    for row in rows:
        for name in (row.name, *row.aliases):
            owners.setdefault(rules.key(rules.clean(name)), []).append(row)
    for name, shared in owners.items():
        if len(shared) > 1:
            assert all(r.note for r in shared), name
    # the scope: China's 34 provincial-level divisions and all of its 333 prefecture-level divisions, plus 台湾省's
    china = [r for r in rows if r.parent == "中国"]
    assert len(china) == 34
    mainland = [r for r in rows if r.level == "prefecture" and by_name[r.parent].parent == "中国"
                and r.parent != "台湾省"] + [r for r in rows if r.parent == "伊犁哈萨克自治州"]
    assert len(mainland) == 333
    assert sum(r.level == "country" for r in rows) >= 193


def test_a_bad_row_is_named():
    with pytest.raises(ValueError, match="line 2"):
        places.parse_table("# comment\n日内瓦\t瑞士\ttown\n")


def test_the_table_version_is_in_the_signature():
    assert places.TABLE_VERSION in version.NORMALIZER_VERSION
