"""Other names of the same entity in the rule judge: people's names from the alias table (字, 号, 笔名, 本名, 庙号)
and the short names of administrative divisions."""
import hashlib

import pytest

from chimdqa_eval.factual import aliases, compute_factual
from chimdqa_eval.factual.judge_rule import judge_answer
from chimdqa_eval.factual.rules import clean, key
from chimdqa_eval.factual.version import NORMALIZER_VERSION


def _key(name: str) -> str:
    return key(clean(name))


@pytest.mark.parametrize("question, reference, answer", [
    # a courtesy name or 号 for the name, and the name for a courtesy name or 号
    ("“过五关斩六将”说的是哪位三国人物？", "关羽", "这说的是关云长。"),
    ("“过五关斩六将”说的是哪位三国人物？", "关云长", "关羽"),
    ("《桃花源记》的作者是谁？", "陶渊明", "是陶潜写的。"),
    ("《桃花源记》的作者是谁？", "陶潜", "陶渊明"),
    ("《桃花源记》的作者是谁？", "陶渊明", "五柳先生"),
    ("《春望》的作者是谁？", "杜甫", "杜子美"),
    ("《出师表》是谁写的？", "诸葛亮", "孔明。"),
    ("《资治通鉴》的主编是谁？", "司马光", "司马君实"),
    # a pen name for the birth name and back
    ("《狂人日记》的作者是谁？", "鲁迅", "作者是周树人。"),
    ("《狂人日记》的作者是谁？", "周树人", "鲁迅"),
    ("《家》的作者是谁？", "巴金", "李尧棠"),
    ("《骆驼祥子》的作者是谁？", "舒庆春", "老舍"),
    ("《繁星》的作者是谁？", "冰心", "谢婉莹"),
    ("《雍正王朝》的原著作者是谁？", "二月河", "凌解放"),  # a name with numerals is a name, not a date
    # an emperor by his personal name, traditional characters included
    ("哪位清朝皇帝平定了三藩之乱？", "康熙帝", "爱新觉罗·玄烨"),
    ("哪位清朝皇帝平定了三藩之乱？", "康熙帝", "愛新覺羅·玄燁"),
    ("“过五关斩六将”说的是哪位三国人物？", "关羽", "關雲長"),
    # every item of a list, each by another name
    ("唐代古文运动的两位倡导者是谁？", "韩愈和柳宗元", "韩退之和柳子厚。"),
])
def test_another_name_of_the_person_is_a_certain_match(question, reference, answer):
    assert tuple(judge_answer(answer, reference, question)) == ("CO", True, "match")


@pytest.mark.parametrize("question, reference, answer", [
    ("《春望》的作者是谁？", "杜甫", "杜牧"),           # another poet of the same surname
    ("《春望》的作者是谁？", "杜甫", "杜牧之"),         # ... by his courtesy name
    ("《赤壁赋》的作者是谁？", "苏轼", "苏子由"),        # his brother's courtesy name
    ("“过五关斩六将”说的是哪位三国人物？", "关羽", "关平"),
])
def test_another_person_sharing_the_surname_is_not_a_match(question, reference, answer):
    assert judge_answer(answer, reference, question).grade == "IN"


@pytest.mark.parametrize("question, reference, answer", [
    ("《出师表》是谁写的？", "诸葛亮", "孔明灯"),                # an alias starting a longer word
    ("《秋声赋》是谁写的？", "欧阳修", "《醉翁亭记》是他写的。"),
    ("冈仁波齐峰位于西藏哪个地区？", "阿里地区", "阿里巴巴"),
])
def test_an_alias_inside_a_longer_word_does_not_count(question, reference, answer):
    verdict = judge_answer(answer, reference, question)
    assert verdict.grade != "CO" and not verdict.certain


def test_the_short_name_of_another_division_is_that_division():
    """海南省 is not 海南藏族自治州 (in Qinghai): the place table knows the province, so this is a sure IN."""
    assert tuple(judge_answer("海南省", "海南藏族自治州", "青海湖南岸属于哪个自治州？"))[:2] == ("IN", True)


def test_other_names_as_competing_candidates_stay_in():
    question = "“过五关斩六将”说的是哪位三国人物？"
    assert tuple(judge_answer("关云长或张翼德", "关羽", question)) == ("IN", True, "alternatives")
    assert judge_answer("可能是关云长，也可能是张翼德。", "关羽", question).grade == "IN"


def test_a_question_that_names_the_person_makes_other_names_no_certain_answer():
    # repeating the question's name is no answer; a third name may answer another question (its 字, not its 名)
    assert judge_answer("鲁迅", "周树人", "鲁迅的本名是什么？").grade == "IN"
    assert judge_answer("孔丘", "仲尼", "孔子的字是什么？").certain is False
    assert tuple(judge_answer("杜子美", "杜甫", "被称为“诗圣”的唐代诗人是谁？")) == ("CO", False, "match")
    assert tuple(judge_answer("杜甫", "杜甫", "被称为“诗圣”的唐代诗人是谁？")) == ("CO", True, "match")
    assert judge_answer("杜甫，号少陵野老。", "杜甫", "被称为“诗圣”的唐代诗人是谁？").certain  # the name itself


def test_a_question_for_a_kind_of_name_makes_other_names_no_certain_answer():
    # the question wants the 号, not the name
    assert judge_answer("欧阳修", "六一居士", "《醉翁亭记》的作者晚年自号什么？").certain is False
    assert judge_answer("周树人", "鲁迅", "《狂人日记》作者的笔名是什么？").certain is False
    assert tuple(judge_answer("鲁迅", "鲁迅", "《狂人日记》作者的笔名是什么？")) == ("CO", True, "match")


@pytest.mark.parametrize("name, short", [
    ("新疆维吾尔自治区", {"新疆维吾尔", "新疆"}),
    ("广西壮族自治区", {"广西壮族", "广西"}),
    ("宁夏回族自治区", {"宁夏回族", "宁夏"}),
    ("内蒙古自治区", {"内蒙古"}),                    # 蒙古 is not stripped down to one character
    ("湘西土家族苗族自治州", {"湘西土家族苗族", "湘西土家族", "湘西"}),
    ("克孜勒苏柯尔克孜自治州", {"克孜勒苏柯尔克孜", "克孜勒苏"}),  # an ethnic name without 族
    ("香港特别行政区", {"香港"}),
    ("阿里地区", {"阿里"}),
    ("锡林郭勒盟", {"锡林郭勒"}),
    ("吉林省", {"吉林"}),
    ("西藏自治区", {"西藏"}),                        # 藏 is only an ethnic name as 藏族
    ("杭州", set()),                                  # one character would remain
    ("国际联盟", set()), ("五星红旗", set()),           # 盟 and 旗 ending a common noun
    ("长江", set()),
])
def test_division_short_names(name, short):
    assert aliases.division_short_names(name) == short


@pytest.mark.parametrize("question, reference, answer", [
    ("中国面积最大的省级行政区是哪个？", "新疆维吾尔自治区", "新疆，面积约166万平方公里。"),
    ("桂林位于哪个省级行政区？", "广西壮族自治区", "广西"),
    ("凤凰古城位于哪个自治州？", "湘西土家族苗族自治州", "湘西"),
    ("长白山天池北侧属于哪个自治州？", "延边朝鲜族自治州", "延边州"),
    ("黄山位于哪个省？", "安徽省", "安徽黄山市。"),     # a smaller division after the name, as in an address
])
def test_division_short_names_match(question, reference, answer):
    assert tuple(judge_answer(answer, reference, question)) == ("CO", True, "match")


def test_a_short_name_the_question_asks_to_expand_is_not_the_answer():
    verdict = judge_answer("延边", "延边朝鲜族自治州", "延边的全称是什么？")
    assert verdict.grade == "IN" and not verdict.certain


def test_the_fifty_six_ethnic_groups():
    assert len(set(aliases.ETHNIC_GROUPS)) == 56 and all(g.endswith("族") for g in aliases.ETHNIC_GROUPS)


def test_the_shipped_person_table():
    text = aliases.PERSON_TABLE.read_text(encoding="utf-8")
    rows = aliases.parse_person_table(text, _key)  # every row parses; no name on two rows, once normalized
    assert len(rows) >= 250
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert len(lines) == len(rows)
    canonical = [_key(line.split("\t")[0]) for line in lines]
    for line, row in zip(lines, rows):
        names = line.split("\t")[1].split("|")
        assert len(row) == len(set(_key(n) for n in names) | {_key(line.split("\t")[0])}) >= 2, line
        assert all(n.strip() == n and n for n in names), line
    # no alias is another row's canonical name (parse_person_table already refuses a name on two rows)
    owner = {name: i for i, row in enumerate(rows) for name in row}
    assert all(owner[c] == i for i, c in enumerate(canonical))
    assert aliases.person_aliases(_key("关羽")) >= {_key("关云长")}
    assert aliases.person_aliases(_key("關羽")) == aliases.person_aliases(_key("关羽"))


@pytest.mark.parametrize("text, error", [
    ("关羽\t关云长\n张飞\t关云长\n", "line 2: '关云长' is also on line 1"),
    ("关羽\t关云长\n关云长\t关公\n", "line 2: '关云长' is also on line 1"),
    ("# a comment\n关羽 关云长\n", "line 2: expected"),
    ("关羽\t关云长||关公\n", "line 1: expected"),
])
def test_a_broken_person_table_is_refused_naming_the_line(text, error):
    with pytest.raises(ValueError, match=error):
        aliases.parse_person_table(text)


def test_the_signature_names_the_alias_table():
    sha = hashlib.sha256(aliases.PERSON_TABLE.read_bytes()).hexdigest()[:12]
    assert aliases.TABLE_VERSION.endswith(sha) and aliases.TABLE_VERSION in NORMALIZER_VERSION
    assert aliases.TABLE_VERSION in compute_factual(["关云长"], ["关羽"])["signature"]
