"""The rule judge on real Chinese short answers, one group of cases per rule of the grading definition."""
import json
import os
from decimal import Decimal

import pytest

from chimdqa_eval.factual.judge_rule import grade_answer, judge_answer
from chimdqa_eval.factual.rules import chinese_numerals_to_arabic, clean, find_numbers, formula_counts, key, whole_years
from shared_data import CHINESE_SIMPLEQA as SIMPLEQA


def assert_verdict(answer: str, reference: str, question: str, verdict: tuple) -> None:
    """The rule judge gives this answer the (grade, certain) expected; the message names the rule that decided."""
    v = judge_answer(answer, reference, question)
    assert (v.grade, v.certain) == verdict, v


@pytest.mark.parametrize("text, expected", [
    ("三千五百", "3500"), ("十五", "15"), ("一千零五", "1005"), ("一亿五千万", "150000000"),
    ("一九一九年", "1919年"), ("二〇二三年九月四日", "2023年9月4日"), ("百分之五", "5%"),
    ("百分之三十五点五", "35.5%"), ("三点五", "3.5"), ("第七届", "第7届"), ("两个", "2个"),
    # A final digit right after 百/千/万/亿 counts in the next lower unit; after 零 it is units.
    ("十", "10"), ("答案是三。", "答案是3。"), ("三大发明之一", "三大发明之一"), ("哪一年", "哪一年"),
    ("同一年", "同一年"),
    ("一千二", "1200"), ("三万五", "35000"), ("两百五", "250"), ("五万三千二", "53200"), ("一千零二", "1002"),
    # Not numbers: a lone numeral inside a word, and 万/千 starting an idiom.
    ("统一", "统一"), ("十分重要", "十分重要"), ("万一", "万一"), ("千万不要", "千万不要"),
])
def test_chinese_numerals(text, expected):
    assert chinese_numerals_to_arabic(text) == expected


def test_numbers_keep_their_precision_and_multiplier():
    [n] = find_numbers(clean("1.2万"))
    assert (n.value, n.step) == (12000, 1000)
    [n] = find_numbers(clean("3518.17"))
    assert (n.value, n.step) == (Decimal("3518.17"), Decimal("0.01"))
    assert [n.value for n in find_numbers(clean("10,537个"))] == [10537]
    assert [n.value for n in find_numbers(clean("零下五度"))] == [-5]
    assert find_numbers(clean("V08AA04")) == []  # a code, not a quantity
    assert find_numbers(clean("5G网络")) == find_numbers(clean("F-35B")) == []  # nor are these, not even in part
    assert [n.value for n in find_numbers(clean("In 1998 the war ended"))] == [1998]  # a word, not glued
    [n] = find_numbers(clean("100mg"))
    assert (n.value, n.unit) == (Decimal("0.1"), "克")
    [n] = find_numbers(clean("1.2千米"))
    assert (n.value, n.step, n.unit) == (1200, 100, "米")


def test_normalization_width_case_traditional_and_separators():
    assert key(clean("ＡＢＣ１２３")) == "abc123"
    assert key(clean("長崎（日本）")) == key(clean("长崎(日本)"))
    assert key(clean("杰里米·边沁")) == key(clean("杰里米 • 边沁")) == "杰里米边沁"
    assert key(clean("《桃花源记》")) == "桃花源记"
    assert clean("5公里") == clean("5千米")


CASES = [
    # numbers to the reference's last significant figure (the issue's own examples)
    ("3518", "3518.17", "CO"), ("3518.2", "3518.17", "CO"), ("3520", "3518.17", "IN"),
    ("3518.17", "3518", "CO"),
    # a multiplier does not loosen the answer's precision beyond the reference's written units
    ("3.5千", "3518.17", "IN"), ("1.2万", "12345", "IN"), ("12345", "1.2万", "CO"), ("1.2亿美元", "1.24亿美元", "CO"),
    ("3518万元", "3518.17万元", "CO"), ("0.35亿元", "3518.17万元", "IN"),
    # vague ranges: NA when the reference agrees with them, IN when it contradicts them
    ("大约3500", "3518.17", "NA"), ("超过3000", "3518.17", "NA"), ("3000多", "3518.17", "NA"),
    ("超过4000", "3518.17", "IN"), ("不到3000", "3518.17", "IN"), ("约5000", "3518.17", "IN"),
    # Chinese numerals, multipliers, percentages, units the question implies
    ("三千五百", "3500", "CO"), ("1.2万", "12000", "CO"), ("百分之五", "5%", "CO"), ("一九一九年", "1919年", "CO"),
    ("1919", "1919年", "CO"), ("1920年", "1919年", "IN"), ("第7届", "第七届", "CO"), ("15", "15英镑", "CO"),
    ("1.2千", "1200", "CO"), ("2百", "200", "CO"), ("It was founded in 1998 by two engineers.", "1998年", "CO"),
    # units: the same quantity in another unit matches, a different unit contradicts
    ("10000米", "10千米", "CO"), ("10kg", "10公斤", "CO"), ("50毫米", "5厘米", "CO"), ("10米", "10千米", "IN"),
    # a Latin unit after a space belongs to the number, it is not a name to find (1.8 mmol/L)
    ("2.6 mmol/L", "1.8 mmol/L", "IN"), ("空腹血糖1.80 mmol/L", "1.8 mmol/L", "CO"), ("120 km/h", "100 km/h", "IN"),
    ("3小时", "3分钟", "IN"), ("15美元", "15英镑", "IN"), ("5亿美元", "5亿元", "IN"), ("3年", "3个月", "IN"),
    ("3500人左右", "3518.17", "NA"), ("3000人以上", "3518.17", "NA"),
    ("约3.5万人", "35000", "CO"), ("十", "10", "CO"), ("一", "1", "CO"), ("答案：三。", "3", "CO"),
    # dates and codes made of several numbers: all must match; a missing part is not a contradiction
    # years before the common era keep their sign
    ("376年", "公元前376年", "IN"), ("前376年", "公元前376年", "CO"), ("公元前219年", "前219年", "CO"),
    ("2023-09-04", "2023年9月4日", "CO"), ("2023年9月", "2023年9月4日", "NA"), ("2023年9月5日", "2023年9月4日", "IN"),
    ("7783-63-3", "7783-63-3", "CO"), ("7783-63-2", "7783-63-3", "IN"),
    # refusals and hedges
    # asking for context
    ("请提供更多上下文。", "陶渊明", "NA"), ("需要更多背景信息才能回答", "1919年", "NA"),
    ("请问您指的是哪一年？", "1919年", "NA"),
    ("无法从文档中确定。", "第34条", "NA"), ("不能根据所给材料判断具体年份", "1919年", "NA"),
    ("文档信息不足，无从回答", "陶渊明", "NA"), ("文中没有提供该信息", "15英镑", "NA"),
    ("我不知道。", "陶渊明", "NA"), ("抱歉，文档中没有提到相关信息。", "1876", "NA"), ("", "1876", "NA"),
    ("我不确定，可能是李白", "陶渊明", "IN"), ("我不确定，可能是1920年", "1919年", "IN"),
    ("我不太确定，可能是陶渊明", "陶渊明", "CO"),
    # containment of the key content in a longer answer
    ("《桃花源记》的作者是东晋诗人陶渊明。", "陶渊明", "CO"), ("答案是锡。", "锡", "CO"),
    ("东汉", "汉", "IN"),  # a one-character reference is not found inside another word
    ("长崎", "长崎市", "CO"), ("清朝", "清代", "CO"), ("廣東省", "广东", "CO"),
    ("清朝", "清", "CO"), ("在清代", "清", "CO"), ("唐", "唐朝", "CO"), ("明朝", "清", "IN"),
    # denials: the reference named only to be denied contradicts it; a denied alternative does not
    ("不是北京", "北京", "IN"), ("答案不是1998年", "1998年", "IN"), ("不是托马斯·爱迪生", "托马斯·爱迪生", "IN"),
    ("不是第三届", "第三届", "IN"), ("他并不是北京人，而是上海人", "北京", "IN"),
    ("他并不是北京人，而是上海人", "上海", "CO"), ("北京，而不是上海", "北京", "CO"), ("北京，而不是上海", "上海", "IN"),
    ("不是1999年，而是1998年", "1998年", "CO"), ("不是", "是", "IN"),
    # several competing candidates
    ("陶渊明或李白", "陶渊明", "IN"), ("1919年或1920年", "1919年", "IN"), ("1919年或民国初年", "1919年", "IN"),
    ("8小时或以上", "8小时", "CO"),  # 或以上 bounds the value, it offers no second candidate
    ("陶渊明，或称陶潜", "陶渊明", "CO"),  # 或称 introduces an alias, not a second candidate
    # parentheses: either side suffices
    ("碳酸镁", "碳酸镁（MgCO3）", "CO"), ("MgCO3", "碳酸镁（MgCO3）", "CO"), ("碳酸钙", "碳酸镁（MgCO3）", "IN"),
    ("1613年", "万历41年（1613年）", "CO"), ("万历四十一年", "万历41年（1613年）", "CO"),
    ("1614年", "万历41年（1613年）", "IN"), ("ACFE", "Association of Certified Fraud Examiners (ACFE)", "CO"),
    # transliterations: separators, surname alone, original name, variant characters
    ("杰里米边沁", "杰里米·边沁（Jeremy Bentham）", "CO"), ("边沁", "杰里米·边沁（Jeremy Bentham）", "CO"),
    ("Jeremy Bentham", "杰里米·边沁（Jeremy Bentham）", "CO"), ("贝蒂·托马斯", "贝蒂·汤玛斯（Betty Thomas）", "CO"),
    ("贝蒂·戴维斯", "贝蒂·汤玛斯（Betty Thomas）", "IN"),
    # lists: every item, in any order and with any separator
    ("三氟化硼、氟化钠", "氟化钠和三氟化硼", "CO"), ("氟化钠和氯化钠", "氟化钠和三氟化硼", "IN"),
    ("氟化钠", "氟化钠和三氟化硼", "NA"),  # incomplete but contradicting nothing
]


@pytest.mark.parametrize("prediction, reference, expected", CASES)
def test_rule_judge(prediction, reference, expected):
    assert grade_answer(prediction, reference) == expected


def test_numbers_repeated_from_the_question_are_context():
    question = "根据2010年人口普查，埃尔托马塔尔聚居地的人口总数是多少？"
    assert grade_answer("根据2010年普查，人口为628人。", "628", question) == "CO"
    assert grade_answer("根据2010年普查，约630人。", "628", question) == "NA"
    assert grade_answer("根据2010普查，约630人。", "628") == "IN"  # without the question 2010 is a stray number
    assert grade_answer("根据2010年普查，约630人。", "628") == "NA"  # a year is no candidate for a count


def test_long_reference_needs_its_numbers_or_most_of_its_text():
    reference = "2019年公司实现营业收入3518.17万元，较上年同期增长12.5%，主要来自海外市场的扩张。"
    question = "2019年公司的营业收入是多少？"
    assert grade_answer("3518.17万元", reference, question) == "CO"
    assert grade_answer("约3518万元", reference, question) == "CO"
    assert grade_answer("4000万元", reference, question) == "IN"
    assert grade_answer("文档中没有提到营业收入。", reference, question) == "NA"


@pytest.mark.skipif(not SIMPLEQA.exists(), reason="Chinese SimpleQA file not available")
def test_chinese_simpleqa_answers_against_themselves_refusals_and_each_other():
    rows = [json.loads(line) for line in SIMPLEQA.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) >= 1000
    for r in rows:
        assert grade_answer(r["answer"], r["answer"], r["question"]) == "CO", r["answer"]
        assert grade_answer(f"根据资料，答案是{r['answer']}。", r["answer"], r["question"]) == "CO", r["answer"]
        assert grade_answer("抱歉，我无法确定这个问题的答案。", r["answer"], r["question"]) == "NA", r["answer"]
    # Each answer graded against the next row's reference: wrong unless the two answers coincide.
    shifted = rows[1:] + rows[:1]
    pairs = [(o["answer"], r) for o, r in zip(shifted, rows)
             if key(clean(o["answer"])) != key(clean(r["answer"]))]
    wrong = sum(grade_answer(p, r["answer"], r["question"]) == "IN" for p, r in pairs)
    assert wrong / len(pairs) > 0.98


def test_numbers_ranges_decades_compounds_and_articles():
    def read(text):
        return [(n.value, n.kind, n.high, n.unit) for n in find_numbers(clean(text))]
    assert read("19世纪90年代") == [(1890, "range", 1899, "年")]
    assert read("上世纪80年代") == [(1980, "range", 1989, "年")]
    assert read("1850年到1860年之间") == [(1850, "range", 1860, "年")]
    assert read("3到5万公里") == [(30000000, "range", 50000000, "米")]
    assert read("2023-09-04")[0][1] == "exact"  # a date, not a range from 2023 down to 9
    assert read("10亿1000万") == [(1010000000, "exact", None, None)]  # one number, not two
    assert read("二十公里") == read("20千米") == [(20000, "exact", None, "米")]  # 公里 is a unit, not 千 x 米
    assert read("作为一个AI") == read("不止一座") == []  # 一 before a measure word after a word is an article
    assert read("有一座") == [(1, "exact", None, None)] and read("两座桥") == [(2, "exact", None, None)]
    [n] = find_numbers(clean("约1850年"))
    assert (n.kind, n.loose) == ("approx", 10)  # approximate to its last non-zero digit
    [n] = find_numbers(clean("至少5人"), clean("至少需要多少人？"))
    assert n.kind == "exact"  # the question's own bound word frames the answer, it does not loosen it


# (question, reference, answer, grade, certain): answers in the way chat models write them, labelled by reading.
VERBOSE_CASES = [
    # the reference appears, but it is not the answer: attributed and rejected, superseded, another event's date
    ("《梦溪笔谈》的作者是谁？", "沈括", "常有人说是沈括，其实《梦溪笔谈》的作者是苏轼。", "IN", True),
    ("《梦溪笔谈》的作者是谁？", "沈括", "很多人误以为《梦溪笔谈》是苏轼写的，其实它的作者是北宋科学家沈括。", "CO", True),
    ("明成祖在哪一年正式迁都北京？", "1421", "1420年，不对，是1421年正式迁都北京。", "CO", True),
    ("明成祖在哪一年正式迁都北京？", "1421", "是1421年。不对，我记错了，应该是1420年。", "IN", True),
    ("北京大学成立于哪一年？", "1912", "北京大学的前身京师大学堂于1898年筹建，1912年改名为国立北京大学。", "IN", False),
    ("伯利兹在何年正式独立？", "1981", "伯利兹在1973年改用现名，1981年正式独立，结束了英国的殖民统治。", "CO", False),
    ("《桃花源记》的作者是谁？", "陶渊明", "并不是李白，《桃花源记》是东晋的陶渊明写的。", "CO", True),
    ("《桃花源记》的作者是谁？", "陶渊明", "这篇文章不是陶渊明写的，而是出自谢灵运之手。", "IN", True),
    # refusals and requests for clarification, in many phrasings, with stray numerals that are no answer
    ("伏兔穴所属的经脉是什么？", "足阳明胃经", "这个问题我不太清楚，建议查阅中医经络学的相关书籍。", "NA", True),
    ("伯利兹在何年正式独立？", "1981", "我记不清伯利兹独立的具体年份了。", "NA", True),
    ("伯利兹在何年正式独立？", "1981", "抱歉，这个问题超出了我的知识范围。", "NA", True),
    ("琉球国哪位工匠以巧织龙袍入贡明朝？", "蔡红亨", "我没有查到关于这位工匠的可靠记载。", "NA", True),
    ("Who wrote the Dream Pool Essays?", "沈括", "I'm sorry, I don't have information about that.", "NA", True),
    ("SEA-ME-WE 3国际海底光缆的全长是多少公里？", "39000", "目前无法核实这一数据，不同来源说法不一。", "NA", True),
    ("金文最早出现在中国哪个朝代？", "商", "您是指哪一种金文？能否再具体说明一下？", "NA", True),
    ("伯利兹在何年正式独立？", "1981", "作为一个AI，我无法确定伯利兹独立的具体年份。", "NA", True),
    ("伯利兹在何年正式独立？", "1981", "这个问题我答不上来，可以参考第3条注释里的资料。", "NA", True),
    ("该桥共有几座桥塔？", "3", "不止一座，但具体数量我不清楚。", "NA", True),
    ("伯利兹在何年正式独立？", "1981", "我不太确定，可能是1980年前后吧。", "IN", False),  # a guess at 1980; 1981 rounds to it: not sure
    ("伯利兹在何年正式独立？", "1981", "我不太确定，可能是1980年。", "IN", True),
    ("伯利兹在何年正式独立？", "1981", "我不太确定，但我记得是1981年。", "CO", False),
    ("《千字文》的作者是谁？", "周兴嗣", "我不确定，但《千字文》的作者是王羲之。", "IN", False),
    # less specific but consistent: NA; an approximate value that is wrong at its own precision: IN
    ("水排是在哪个朝代由杜诗发明的？", "东汉", "水排是在汉代发明的，用于冶铁鼓风。", "NA", True),
    ("水排是在哪个朝代由杜诗发明的？", "东汉", "水排发明于西汉时期。", "IN", True),
    ("杜兰戈与锡尔弗顿窄轨铁路建于哪一年？", "1882", "这条铁路建于19世纪80年代。", "NA", True),
    # an approximate value that rounds to the reference is vague, but a reader may take it for a wrong guess
    ("杜兰戈与锡尔弗顿窄轨铁路建于哪一年？", "1882", "这条铁路大约在1880年左右建成。", "IN", False),  # a guess at 1880, which 1882 rounds to: not sure
    ("杜兰戈与锡尔弗顿窄轨铁路建于哪一年？", "1882", "这条铁路建于1870年到1890年之间。", "NA", True),
    ("杜兰戈与锡尔弗顿窄轨铁路建于哪一年？", "1882", "这条铁路建于20世纪初。", "IN", True),
    ("该条约签订于哪一年？", "1856", "大约是1850年左右签订的。", "IN", True),
    ("SEA-ME-WE 3国际海底光缆的全长是多少公里？", "39000", "全长约3.6万公里。", "IN", True),
    ("SEA-ME-WE 3国际海底光缆的全长是多少公里？", "39000", "全长约3.9万公里，连接了30多个国家和地区。", "CO", True),
    ("SEA-ME-WE 3国际海底光缆的全长是多少公里？", "39000", "全长在3万到4万公里之间。", "NA", True),
    ("该国的人口是多少？", "10.1亿", "该国人口约为10亿1000万人。", "CO", True),
    # units: the question names the unit of a bare reference; units we cannot compare leave the judge unsure
    ("港珠澳大桥桥隧全长多少千米？", "55", "港珠澳大桥全长约55公里。", "CO", True),
    ("港珠澳大桥桥隧全长多少千米？", "55", "港珠澳大桥全长55英里。", "IN", False),
    ("该地七月的平均最高气温是多少摄氏度？", "41", "平均最高气温约为41华氏度。", "IN", False),
    ("该电站的装机容量是多少？", "500兆瓦", "该电站的装机容量为500 MW。", "CO", True),  # MW is 兆瓦
    ("这台发动机的最大功率是多少？", "120马力", "最大功率为120 hp。", "CO", False),
    ("该邮票的面值是多少？", "15英镑", "面值是15新元。", "IN", False),
    ("成立该协会至少需要多少名成员？", "5", "至少需要5名成员。", "CO", True),
    ("电池直径小于多少毫米时不能被直钢针桥接？", "0.5", "当直径小于0.5毫米时不能被桥接。", "CO", True),
    ("该桥有几座主塔？", "2", "该桥共有两座主塔，均为钢筋混凝土结构。", "CO", True),
    # surface forms: traditional characters, courtesy names and English names the tables do not know
    ("《梦溪笔谈》的作者是谁？", "沈括", "《夢溪筆談》的作者是北宋的沈括。", "CO", True),
    ("便所欢乐主题餐厅的第一家店开在台湾哪个市？", "高雄市", "第一家店位於臺灣的高雄。", "CO", True),
    ("《西方哲学史》的作者是哪位英国哲学家？", "伯特兰·阿瑟·威廉·罗素 (Bertrand Arthur William Russell)",
     "作者是英国哲学家罗素。", "CO", False),
    # candidates: several offered is IN or unsure; a rhetorical 还是 that the answer resolves is no candidate
    ("《静夜思》的作者是谁？", "李白", "应该是李白、杜甫二人之一。", "IN", True),
    ("《静夜思》的作者是谁？", "李白", "李白/杜甫", "IN", True),
    ("《梦溪笔谈》的作者是谁？", "沈括", "作者是沈括，也有人说是苏轼。", "IN", False),
    ("五四运动爆发于哪一年？", "1919", "是1919年还是1920年？答案是1919年，那年5月4日爆发了五四运动。", "CO", True),
    # the reference among other things of its kind
    ("西迁节主要是哪个少数民族的节日？", "锡伯族", "西迁节是锡伯族的传统节日，与满族、蒙古族也有渊源。", "CO", False),
    ("桃园三结义的三人中，谁排行第二？", "关羽", "桃园三结义的是刘备、关羽、张飞三人。", "IN", False),  # no answer
    # plain verbose answers the rules are sure of
    ("伏兔穴所属的经脉是什么？", "足阳明胃经", "伏兔穴属于足阳明胃经。如需了解更多，建议咨询专业中医师。", "CO", True),
    ("伏兔穴所属的经脉是什么？", "足阳明胃经", "伏兔穴属于足太阴脾经，位于大腿前侧。", "IN", True),
    ("伯利兹在何年正式独立？", "1981", "伯利兹于1981年9月21日正式独立，结束了英国的殖民统治。", "CO", True),
    ("伯利兹在何年正式独立？", "1981", "伯利兹于1964年获得自治，1964年也是它改宪的一年。", "IN", True),
    ("蟳埔女习俗是在哪一年列入国家级非物质文化遗产名录的？", "2008", "根据第3条公告，该习俗于2008年列入名录。", "CO", True),
    ("《千字文》的作者是谁？", "周兴嗣", "《千字文》的作者是南朝梁的周兴嗣，他奉梁武帝之命编成此文。", "CO", True),
    # another person's name may be an alias no table lists (字, 号, 笔名): wrong, but not sure
    ("《千字文》的作者是谁？", "周兴嗣", "《千字文》由东晋书法家王羲之所作。", "IN", False),
    ("便所欢乐主题餐厅的第一家店开在台湾哪个市？", "高雄市", "第一家店开在台北市的西门町。", "IN", True),
    ("御夫座最亮的恒星是什么？", "五车二", "御夫座最亮的恒星是五车二（御夫座α），它是全天第六亮的恒星。", "CO", True),
    # conversions between unit systems are right or wrong, but never sure; SI prefixes are plain units
    ("该城市一月的平均气温是多少摄氏度？", "-5", "约为23华氏度。", "CO", False),
    ("这座山的海拔是多少米？", "3099", "海拔约10167英尺。", "CO", False),
    ("氮的沸点是多少摄氏度？", "-195.8", "约77.35 K。", "CO", False),
    ("该湖的面积是多少平方公里？", "45", "面积为45平方英里。", "IN", False),
    ("该发电机组的单机功率是多少？", "600 MW", "单机功率为60万千瓦。", "CO", True),
    ("该电台的频率是多少？", "98.6 MHz", "频率为98600 kHz。", "CO", True),
    ("该校的升学率是多少？", "92.5%", "升学率为0.925。", "CO", True),
    ("这部电影的片长是多少？", "2小时15分钟", "片长135分钟。", "CO", True),
    ("这部电影的片长是多少？", "2小时15分钟", "两个多小时。", "NA", True),
    # a dynasty for a year is a range: consistent is less specific, inconsistent is wrong
    ("赵州桥建于哪一年？", "595", "赵州桥建于隋朝，由工匠李春设计。", "NA", True),
    ("赵州桥建于哪一年？", "595", "赵州桥建于唐朝初年。", "IN", True),
    ("郑和第一次下西洋是在哪一年？", "1405", "郑和第一次下西洋是在明朝永乐年间。", "NA", True),
    # an approximate value equal to the reference only at its own coarser precision is less specific
    ("该公司2023年营收是多少？", "3.15亿元", "大约3亿元。", "NA", False),
    # self-corrections in other words; parallel claims; lists longer than the reference
    ("该桥全长多少米？", "1200", "全长1100米，等等，我重新算一下：应该是1200米。", "CO", True),
    ("长江和黄河中，哪条河是中国最长的河流？", "长江", "黄河是中国最长的河流，长江是第二长的河流。", "IN", False),
    ("太阳系中的类地行星有哪些？", "水星、金星、地球、火星", "类地行星有水星、金星、地球、火星和月球。", "IN", False),
    ("太阳系中的类地行星有哪些？", "水星、金星、地球、火星", "水星、金星和地球，还有一颗我想不起来了。", "NA", False),
    ("哪颗行星被称为“红色星球”？", "火星", "火星和金星。", "IN", False),
    # asking the user is not an answer; a rhetorical question the answer resolves is no refusal
    ("该公司的注册资本是多少？", "500万元", "您问的是哪一家分公司？总公司和分公司的注册资本不同。", "NA", True),
    ("日本的首都是哪座城市？", "东京", "是京都还是东京？很多人会弄混，其实答案是京都。", "IN", False),
    ("唐朝的开国皇帝是谁？", "李渊", "名义上是李渊，但实际掌权的是李世民，所以答案是李世民。", "IN", True),
    # N多 spans one more of its last digit; a description or a region instead of a name is less specific
    ("该塔的高度是多少米？", "632米", "大约400多米吧。", "IN", True),
    ("该塔的高度是多少米？", "632米", "600多米，是当地最高的建筑。", "NA", True),
    ("《天工开物》的作者是谁？", "宋应星", "是明代的一位科学家写的，名字我想不起来了。", "NA", True),
    ("《天工开物》的作者是谁？", "宋应星", "明末的一位学者所作。", "NA", False),
    ("秦始皇陵位于哪座城市？", "西安", "位于中国西北地区。", "NA", False),
    # more ways of not answering
    ("《天工开物》的作者是谁？", "宋应星", "这个问题我没有把握，就不乱说了。", "NA", True),
    ("该塔的高度是多少米？", "632米", "高度数据我忘了，只记得它是当时的第一高楼。", "NA", True),
    ("光在真空中一年走过的距离约为多少公里？", "约9.46万亿公里", "约9.46×10^12公里。", "CO", True),
    ("被称为“诗仙”的唐代诗人是谁？", "李白", "唐代诗人有李白、杜甫等等，其中被称为诗仙的是李白。", "CO", True),
    ("《梦溪笔谈》的作者是谁？", "沈括", "这本书不仅记录了科技成就，作者沈括本人也是一位政治家。", "CO", True),
    ("该公司是哪一年成立的？", "1998", "该公司于1998年成立，此后不断发展壮大。", "CO", True),
    ("美国第一任总统是谁？", "乔治·华盛顿", "第一任总统是乔治·华盛顿，而不是约翰·亚当斯。", "CO", True),
    ("美国第一任总统是谁？", "乔治·华盛顿", "约翰·亚当斯是第二任，第一任是华盛顿。", "CO", False),
    ("中国的首都是哪座城市？", "北京", "北京。", "CO", True),
    ("中国的首都是哪座城市？", "北京", "首都是北京市。", "CO", True),
    ("中国的首都是哪座城市？", "北京", "南京曾经是首都，但现在是北京。", "CO", True),
    ("中国的首都是哪座城市？", "北京", "北京和南京都曾是首都，现在的首都是北京。", "CO", True),
    ("该河流全长多少公里？", "6300", "全长约6300公里，流经11个省级行政区。", "CO", True),
    ("该河流全长多少公里？", "6300", "全长6,300千米。", "CO", True),
    ("该河流全长多少公里？", "6300", "全长6397公里。", "IN", True),
    ("该河流全长多少公里？", "6300", "我没办法确认这条河的长度。", "NA", True),
    ("该河流全长多少公里？", "6300", "全长6300公里吗？我不确定。", "NA", True),
    ("这部小说共有多少回？", "120回", "通行本共120回，其中后40回一般认为是高鹗续写。", "CO", False),
    ("这部小说共有多少回？", "120回", "共80回。", "IN", True),
    ("这部小说共有多少回？", "120回", "一百二十回。", "CO", True),
    ("《红楼梦》的作者是谁？", "曹雪芹", "曹雪芹（前80回），后40回通常认为是高鹗所续。", "CO", True),
    ("《红楼梦》的作者是谁？", "曹雪芹", "高鹗。", "IN", False),
    ("哪位科学家提出了相对论？", "阿尔伯特·爱因斯坦", "爱因斯坦。", "CO", False),
    ("哪位科学家提出了相对论？", "阿尔伯特·爱因斯坦", "是牛顿提出的。", "IN", False),
    ("DNA的全称是什么？", "脱氧核糖核酸", "DNA是脱氧核糖核酸（deoxyribonucleic acid）的缩写。", "CO", True),
    ("DNA的全称是什么？", "脱氧核糖核酸", "核糖核酸。", "IN", False),
    ("地球到太阳的平均距离约为多少亿公里？", "1.5", "约1.5亿公里，即一个天文单位。", "CO", True),
    ("地球到太阳的平均距离约为多少亿公里？", "1.5", "约1.5万公里。", "IN", True),
    ("地球到太阳的平均距离约为多少亿公里？", "1.5", "大约1亿5千万公里。", "CO", True),
    ("2008年夏季奥运会在哪座城市举办？", "北京", "2008年北京奥运会。", "CO", True),
    ("2008年夏季奥运会在哪座城市举办？", "北京", "2008年夏季奥运会在北京举办，2022年冬奥会也在北京。", "CO", True),
    # an apology is no refusal when an answer follows it; a refusal followed by an answer is a guess
    ("《本草纲目》的作者是谁？", "李时珍", "抱歉，答案是李时珍。", "CO", True),
    ("《本草纲目》的作者是谁？", "李时珍", "我不太确定，答案是孙思邈。", "IN", False),
    ("该赛事的原纪录是多少？", "2小时09分51秒", "抱歉，我这里没有原纪录的数据，无法计算。", "NA", True),
    # document questions: rates, counts, dates, doses, bounds
    ("公司2023年营业收入同比增长了多少？", "12.5%", "同比增长12.5%，达到48.6亿元。", "CO", True),
    ("公司2023年营业收入同比增长了多少？", "12.5%", "营业收入从43.2亿元增至48.6亿元，增长约12.5%。", "CO", True),
    ("公司2023年营业收入同比增长了多少？", "12.5%", "增长了15%左右。", "IN", True),
    ("公司2023年营业收入同比增长了多少？", "12.5%", "增长超过10%。", "NA", True),
    ("公司2023年营业收入同比增长了多少？", "12.5%", "文档只给了2023年的收入，没有上年数据，无法计算增长率。", "NA", True),
    ("公司2023年营业收入同比增长了多少？", "12.5%", "增长了0.125。", "CO", True),
    ("本次发行的股票数量是多少？", "5000万股", "本次公开发行股票5,000万股，占发行后总股本的25%。", "CO", False),
    ("本次发行的股票数量是多少？", "5000万股", "发行5000万股，每股面值1元。", "CO", True),
    ("本次发行的股票数量是多少？", "5000万股", "发行2亿股。", "IN", True),
    ("该条例自何时起施行？", "2024年5月1日", "自2024年5月1日起施行。", "CO", True),
    ("该条例自何时起施行？", "2024年5月1日", "2024年5月起施行。", "NA", True),
    ("该条例自何时起施行？", "2024年5月1日", "自2024年6月1日起施行。", "IN", True),
    ("该条例自何时起施行？", "2024年5月1日", "2024年3月1日通过，同年5月1日起施行。", "CO", False),
    ("该药物的成人每日最大剂量是多少？", "4g", "成人每日最大剂量为4克。", "CO", True),
    ("该药物的成人每日最大剂量是多少？", "4g", "每日不超过4000毫克。", "CO", False),
    ("该药物的成人每日最大剂量是多少？", "4g", "每日最大剂量为2克。", "IN", True),
    ("该药物的成人每日最大剂量是多少？", "4g", "每次0.5克，每日最多8次。", "IN", True),
    ("患者的空腹血糖应控制在多少以下？", "7.0 mmol/L", "空腹血糖应控制在7.0 mmol/L以下。", "CO", True),
    ("患者的空腹血糖应控制在多少以下？", "7.0 mmol/L", "应低于6.1 mmol/L。", "IN", True),
    ("该研究共纳入多少名受试者？", "1,024名", "共纳入1024名受试者，随机分为两组，每组512人。", "CO", False),
    ("该研究共纳入多少名受试者？", "1,024名", "共1000余名受试者。", "NA", True),
    ("该研究共纳入多少名受试者？", "1,024名", "共纳入512名受试者。", "IN", True),
    ("该研究共纳入多少名受试者？", "1,024名", "论文中没有提到具体人数。", "NA", True),
    ("该法规定的罚款上限是多少？", "五万元", "最高可处五万元罚款。", "CO", True),
    ("该法规定的罚款上限是多少？", "五万元", "最高罚款5万元，情节严重的可吊销执照。", "CO", True),
    ("该法规定的罚款上限是多少？", "五万元", "罚款一万元以上五万元以下。", "CO", False),
    ("该法规定的罚款上限是多少？", "五万元", "最高罚款十万元。", "IN", True),
    ("报告中提到的试点城市有几个？", "3个", "试点城市有3个，分别是北京、上海和深圳。", "CO", True),
    ("报告中提到的试点城市有几个？", "3个", "共有五个试点城市。", "IN", True),
    # the reference where the answer negates it, compares with it or dates it elsewhere: likely wrong, not sure
    ("该公司是哪一年成立的？", "1998", "截至1998年，该公司尚未成立。", "IN", False),
    ("《梦溪笔谈》的作者是谁？", "沈括", "沈括并没有写过《梦溪笔谈》，它的作者另有其人。", "IN", False),
    ("2008年夏季奥运会在哪座城市举办？", "北京", "是在伦敦举办的，北京是2022年冬奥会的主办城市。", "IN", False),
    ("公司2023年营业收入同比增长了多少？", "12.5%", "同比下降12.5%。", "IN", False),
    ("世界上面积最大的国家是哪个？", "俄罗斯", "加拿大，仅次于俄罗斯排在第二。", "IN", False),
    ("世界上面积最大的国家是哪个？", "俄罗斯", "比俄罗斯还大的是加拿大。", "IN", False),
    # general knowledge, many ways to answer
    ("世界上面积最大的国家是哪个？", "俄罗斯", "俄罗斯，面积约1709.8万平方公里。", "CO", True),
    ("世界上面积最大的国家是哪个？", "俄罗斯", "不同于人们常说的中国，面积最大的是俄罗斯。", "CO", True),
    ("世界上面积最大的国家是哪个？", "俄罗斯", "面积最大的国家是俄罗斯联邦。", "CO", True),
    ("世界上面积最大的国家是哪个？", "俄罗斯", "中国。", "IN", False),
    ("世界上面积最大的国家是哪个？", "俄罗斯", "应该是俄罗斯或者加拿大吧。", "IN", True),
    ("世界上面积最大的国家是哪个？", "俄罗斯", "俄罗斯（Russia）。", "CO", True),
    ("世界上面积最大的国家是哪个？", "俄罗斯", "这个我真的不清楚。", "NA", True),
    ("李白是哪个朝代的诗人？", "唐朝", "李白是唐代著名的浪漫主义诗人，与杜甫并称“李杜”。", "CO", True),
    ("李白是哪个朝代的诗人？", "唐朝", "宋朝。", "IN", False),
    ("李白是哪个朝代的诗人？", "唐朝", "李白生活在唐朝，杜甫也是唐朝人，而苏轼是宋朝人。", "CO", False),
    ("李白是哪个朝代的诗人？", "唐朝", "有人说他是隋朝人，其实是唐朝。", "CO", True),
    ("李白出生于哪一年？", "701年", "公元701年。", "CO", True),
    ("李白出生于哪一年？", "701年", "701年出生于碎叶城，762年去世。", "CO", False),
    ("李白出生于哪一年？", "701年", "约生于公元700年前后。", "IN", False),  # a guess at a calendar year
    ("李白出生于哪一年？", "701年", "他于762年去世，享年61岁。", "IN", True),
    ("李白出生于哪一年？", "701年", "八世纪初。", "NA", True),
    ("李白出生于哪一年？", "701年", "7世纪末。", "IN", True),
    ("李白出生于哪一年？", "701年", "唐朝。", "NA", True),
    ("《蒙娜丽莎》的作者是谁？", "列奥纳多·达·芬奇", "达·芬奇。", "CO", False),
    ("《蒙娜丽莎》的作者是谁？", "列奥纳多·达·芬奇", "达芬奇", "CO", False),
    ("《蒙娜丽莎》的作者是谁？", "列奥纳多·达·芬奇", "米开朗基罗。", "IN", False),
    ("《蒙娜丽莎》的作者是谁？", "列奥纳多·达·芬奇", "文艺复兴时期意大利的一位画家。", "NA", False),
    ("《蒙娜丽莎》现藏于哪个博物馆？", "卢浮宫", "卢浮宫博物馆，位于法国巴黎。", "CO", True),
    ("《蒙娜丽莎》现藏于哪个博物馆？", "卢浮宫", "大英博物馆。", "IN", False),
    ("《蒙娜丽莎》现藏于哪个博物馆？", "卢浮宫", "它曾被借展到东京国立博物馆，现在藏于卢浮宫。", "CO", True),
    # single-character references, codes, shares, reference ranges, ordinals
    ("宇宙中含量最多的元素是什么？", "氢", "氦。", "IN", True),
    ("中国的全称是什么？", "中华人民共和国", "中华人民共和国，简称中国。", "CO", True),
    ("该组织的英文缩写是什么？", "UNESCO", "联合国教科文组织的英文缩写是UNESCO。", "CO", True),
    ("该组织的英文缩写是什么？", "UNESCO", "UNICEF", "IN", False),
    ("地球表面约有多大比例被水覆盖？", "71%", "约71%。", "CO", True),
    ("地球表面约有多大比例被水覆盖？", "71%", "百分之七十一。", "CO", True),
    ("地球表面约有多大比例被水覆盖？", "71%", "大约29%，其余是陆地。", "IN", True),
    ("人的正常心率范围是每分钟多少次？", "60到100次", "每分钟60至100次。", "CO", True),
    ("人的正常心率范围是每分钟多少次？", "60到100次", "每分钟70次左右。", "NA", False),
    ("人的正常心率范围是每分钟多少次？", "60到100次", "每分钟50到80次。", "IN", True),
    ("一年有多少天？", "365天", "平年365天，闰年366天。", "CO", False),
    ("一年有多少天？", "365天", "360天。", "IN", True),
    ("周杰伦出道是哪一年？", "2000年", "2000年发行首张专辑《Jay》正式出道。", "CO", True),
    ("周杰伦出道是哪一年？", "2000年", "2000年代初。", "NA", True),
    ("该比赛是第几届？", "第十五届", "第15届。", "CO", True),
    ("该比赛是第几届？", "第十五届", "十五届。", "CO", True),
    # markdown, lists, English
    ("《梦溪笔谈》的作者是谁？", "沈括", "**答案：沈括**\n\n《梦溪笔谈》是北宋科学家沈括所著的笔记体著作，内容涉及天文、数学、物理等多个领域。", "CO", True),
    ("《梦溪笔谈》的作者是谁？", "沈括", "**答案：苏轼**\n\n苏轼是北宋文学家，代表作有《赤壁赋》等。", "IN", False),
    ("《梦溪笔谈》的作者是谁？", "沈括", "### 回答\n抱歉，我无法确定《梦溪笔谈》的作者。\n\n建议您查阅：\n1. 《宋史》\n2. 相关百科资料", "NA", True),
    ("伯利兹在何年正式独立？", "1981", "伯利兹的独立历程：\n- 1964年：获得内部自治\n- 1973年：改名为伯利兹\n- **1981年9月21日：正式独立**", "CO", False),
    ("伯利兹在何年正式独立？", "1981", "伯利兹的独立历程：\n- 1964年：获得内部自治\n- 1973年：正式独立", "IN", True),
    ("伯利兹在何年正式独立？", "1981", "伯利兹于**1981年**正式独立。", "CO", True),
    ("SEA-ME-WE 3国际海底光缆的全长是多少公里？", "39000", "SEA-ME-WE 3 全长约 **39,000 公里**，连接 33 个国家。", "CO", True),
    ("SEA-ME-WE 3国际海底光缆的全长是多少公里？", "39000", "根据公开资料，SEA-ME-WE 3 的长度约为 39,000 km。", "CO", True),
    ("SEA-ME-WE 3国际海底光缆的全长是多少公里？", "39000", "约 3.9 万千米。", "CO", True),
    ("SEA-ME-WE 3国际海底光缆的全长是多少公里？", "39000", "The total length is about 39,000 km.", "CO", True),
    ("SEA-ME-WE 3国际海底光缆的全长是多少公里？", "39000", "I'm not sure, but I think it's around 28,000 km.", "IN", True),
    ("御夫座最亮的恒星是什么？", "五车二", "御夫座最亮的恒星是**五车二**（Capella，御夫座α）。", "CO", True),
    ("御夫座最亮的恒星是什么？", "五车二", "是参宿四（Betelgeuse）。", "IN", False),
    # other names for the same thing are unsure (CO2, UN, 北大); plain other answers are sure
    ("人体最大的器官是什么？", "皮肤", "皮肤，成人皮肤面积约1.5到2平方米。", "CO", True),
    ("人体最大的器官是什么？", "皮肤", "肝脏。", "IN", True),
    ("该作品属于哪种文学体裁？", "长篇小说", "诗歌。", "IN", True),
    ("该病由哪种病原体引起？", "结核分枝杆菌", "病毒感染引起。", "IN", True),
    ("该战役中获胜的一方是哪国？", "英国", "法国。", "IN", True),  # places.tsv: another country / city
    ("太阳系中最大的行星是哪颗？", "木星", "木星，其质量是其他行星总和的2.5倍。", "CO", True),
    ("太阳系中最大的行星是哪颗？", "木星", "土星。", "IN", False),
    ("该奖项是哪一年设立的？", "1901年", "诺贝尔奖于1901年首次颁发。", "CO", True),
    ("该奖项是哪一年设立的？", "1901年", "1895年诺贝尔立下遗嘱，1901年首次颁奖。", "CO", False),
    # a second batch: one question, many ways to answer it
    ("中国第一颗人造卫星是哪一年发射的？", "1970", "中国第一颗人造卫星东方红一号于1970年4月24日发射成功。", "CO", True),
    ("中国第一颗人造卫星是哪一年发射的？", "1970", "东方红一号是在1971年发射的。", "IN", True),
    ("中国第一颗人造卫星是哪一年发射的？", "1970", "大概是上世纪70年代初。", "NA", True),
    ("中国第一颗人造卫星是哪一年发射的？", "1970", "抱歉，我不太记得具体年份。", "NA", True),
    ("中国第一颗人造卫星是哪一年发射的？", "1970", "1970年。同年日本也发射了第一颗卫星。", "CO", True),
    ("中国第一颗人造卫星是哪一年发射的？", "1970", "我记得好像是1968年，但不太确定。", "IN", True),
    ("中国第一颗人造卫星是哪一年发射的？", "1970", "东方红一号，1970年发射，重173公斤。", "CO", True),
    ("《本草纲目》的作者是谁？", "李时珍", "《本草纲目》是明代医药学家李时珍的著作，历时27年完成。", "CO", True),
    ("《本草纲目》的作者是谁？", "李时珍", "作者是孙思邈。", "IN", False),
    ("《本草纲目》的作者是谁？", "李时珍", "这本书的作者我一时想不起来，只知道是明朝人。", "NA", True),
    ("《本草纲目》的作者是谁？", "李时珍", "李时珍，字东璧，号濒湖。", "CO", True),
    ("《本草纲目》的作者是谁？", "李时珍", "是李时珍还是孙思邈来着？应该是李时珍。", "CO", True),
    ("珠穆朗玛峰位于哪两个国家的边境上？", "中国和尼泊尔", "位于中国与尼泊尔交界处。", "CO", True),
    ("珠穆朗玛峰位于哪两个国家的边境上？", "中国和尼泊尔", "位于中国和印度边境。", "IN", False),
    ("珠穆朗玛峰位于哪两个国家的边境上？", "中国和尼泊尔", "其中一个是中国，另一个我不确定。", "NA", False),
    ("长城全长约多少公里？", "21196.18公里", "根据2012年国家文物局公布的数据，长城总长度为21196.18公里。", "CO", True),
    ("长城全长约多少公里？", "21196.18公里", "约2.1万公里。", "NA", False),
    ("长城全长约多少公里？", "21196.18公里", "大约6700公里，这是明长城的长度。", "IN", True),
    ("长城全长约多少公里？", "21196.18公里", "两万多公里。", "NA", True),
    ("长城全长约多少公里？", "21196.18公里", "一万多公里吧。", "IN", True),
    ("水的化学式是什么？", "H2O", "水的化学式是H2O，由两个氢原子和一个氧原子组成。", "CO", True),
    ("水的化学式是什么？", "H2O", "H2O2", "IN", False),
    ("人体正常体温大约是多少摄氏度？", "37", "大约36.5到37.5摄氏度之间。", "NA", True),
    ("人体正常体温大约是多少摄氏度？", "37", "约37℃。", "CO", True),
    ("人体正常体温大约是多少摄氏度？", "37", "98.6华氏度，也就是37摄氏度。", "CO", False),
    ("人体正常体温大约是多少摄氏度？", "37", "39摄氏度左右。", "IN", True),
    ("第一届现代奥运会在哪座城市举办？", "雅典", "1896年第一届现代奥运会在希腊雅典举行。", "CO", True),
    ("第一届现代奥运会在哪座城市举办？", "雅典", "在巴黎举办的。", "IN", True),  # places.tsv: another country / city
    ("第一届现代奥运会在哪座城市举办？", "雅典", "很多人以为是雅典，其实是巴黎。", "IN", True),
    ("第一届现代奥运会在哪座城市举办？", "雅典", "有人说是奥林匹亚，实际上是雅典。", "CO", True),
    ("光绪皇帝是清朝第几位皇帝？", "第十一位", "第11位。", "CO", True),
    ("光绪皇帝是清朝第几位皇帝？", "第十一位", "光绪是清朝第十位皇帝。", "IN", True),
    ("一个标准足球场上场比赛每队有几名球员？", "11名", "每队11人，其中1名守门员。", "CO", True),
    ("一个标准足球场上场比赛每队有几名球员？", "11名", "每队上场10名球员。", "IN", True),
    ("该公司2022年净利润是多少？", "1.25亿元", "净利润为12,500万元。", "CO", True),
    ("该公司2022年净利润是多少？", "1.25亿元", "净利润约1.3亿元。", "NA", False),
    ("该公司2022年净利润是多少？", "1.25亿元", "净利润为1.52亿元，同比增长25%。", "IN", True),
    ("该公司2022年净利润是多少？", "1.25亿元", "文档里只提到了营业收入8.6亿元，没有给出净利润。", "NA", False),
]


@pytest.mark.parametrize("question, reference, answer, grade, certain", VERBOSE_CASES)
def test_rule_judge_on_verbose_answers_knows_when_it_is_sure(question, reference, answer, grade, certain):
    judged, sure, reason = judge_answer(answer, reference, question)
    assert (judged, sure) == (grade, certain), reason


def test_compute_factual_reports_certainty_and_the_deciding_rule():
    from chimdqa_eval.factual import compute_factual
    question = "五四运动爆发于哪一年？"
    result = compute_factual(["1919年", "我不太确定，但我记得是1919年", "不知道", "1919年或1920年"], ["1919"] * 4,
                             [question] * 4)
    assert result["grades"] == ["CO", "CO", "NA", "IN"]
    assert result["certain"] == [True, False, True, True]
    assert result["reasons"] == ["number_match", "hedged_match", "refusal", "alternatives"]
    assert result["signature"] == compute_factual(["1919年"], ["1919"])["signature"]  # same rules, same signature


@pytest.mark.parametrize("question, reference, answer, reason", [
    # right answers by reading, in forms no table lists (the tables know 陶潜 and 关云长: test_judge_aliases.py):
    # a courtesy name, a pen name, an English name
    ("《帝京篇》的作者是谁？", "骆宾王", "作者是骆观光，初唐四杰之一。", "shared_surname"),
    ("《平凡的世界》的作者是谁？", "路遥", "作者是王卫国。", "person_alias"),
    ("《西方哲学史》的作者是哪位英国哲学家？", "罗素", "The author is Bertrand Russell.", "dictionary_name"),  # CO
    ("光合作用吸收的气体是什么？", "二氧化碳", "CO2。", "latin_name"),
    ("中国第一所国立综合性大学是哪所？", "北京大学", "北大。", "dictionary_name"),  # CO, by CC-CEDICT's synonym
    ("该病由哪种病原体引起？", "结核分枝杆菌", "结核杆菌。", "shared_characters"),
])
def test_what_the_rules_cannot_read_is_not_certain(question, reference, answer, reason):
    """Right answers by reading in a form the rules cannot see names the reference: they must not be sure of their
    grade (IN), so that the cascade sends these to the LLM judge."""
    verdict = judge_answer(answer, reference, question)
    assert (verdict.certain, verdict.reason) == (False, reason)


REFUSALS = ["我不确定。", "不太清楚。", "I'm not sure.", "这个我真不知道。", "不好说。", "很难说。", "记不清了。",
            "I don't know.", "Sorry, I can't answer that.", "这超出了我的知识范围。", "我对此没有把握。",
            "我查不到相关资料。", "暂时无法回答。", "我没有足够的信息来回答这个问题。", "我需要更多信息才能回答。",
            "无可奉告。", "没听说过。", "我没有这方面的知识。", "作为一个AI，我无法核实这一点。", "您指的是哪一个？",
            "恕我无法作答。", "对此我一无所知。", "不晓得。", "具体是谁我说不上来。", "这题超纲了，我不会。",
            "我印象里没有相关内容。", "这方面的信息我并不掌握。", "I have no idea.", "I don't recall."]


@pytest.mark.skipif(not SIMPLEQA.exists(), reason="Chinese SimpleQA file not available")
def test_refusals_in_many_phrasings_are_certain_na_for_every_real_reference():
    rows = [json.loads(line) for line in SIMPLEQA.read_text(encoding="utf-8").splitlines() if line.strip()]
    for phrase in REFUSALS:
        verdicts = [judge_answer(phrase, r["answer"], r["question"]) for r in rows]
        assert all(v.grade == "NA" and v.certain for v in verdicts), (phrase, next(
            (r["answer"], v) for r, v in zip(rows, verdicts) if v.grade != "NA" or not v.certain))

# Refusals built from the grammar of not knowing rather than listed phrases: a verb with a negated result
# (查不出来), knowledge said to be thin (了解得很有限), confidence or grounds lacking (没有十足把握), beyond what one
# knows, English forms. Written for this test, none taken from a validation set.
REFUSALS_BY_GRAMMAR = [
    "各家说法不一，我不好给出确定的答案。", "这串编码我没法逐位背出来。", "为了不误导你，建议到官网核对一下。",
    "你能多给我一点背景信息吗？", "我记不清了，不想瞎猜，你可以到官网查一下原文。",
    "这个我真答不好，怕误导你。",
    "说实话，这题把我难倒了。",
    "这一点我没有十足把握，就不随便回答了。",
    "这个问题我没法给出确切的回答，建议去查官方网站。",
    "这方面的信息我了解得很有限，没办法告诉你具体是谁。",
    "我不记得了，抱歉。",
    "恕我无法提供这个信息。",
    "我没能找到相关的记录。",
    "我对此没有印象。",
    "这个得查一下资料才能确定，我现在答不出。",
    "我对这家公司的历史不是很了解。",
    "我印象里没有相关内容。",
    "这超出了我目前的知识。",
    "老实讲，我不太了解这个奖项的来历。",
    "这个我没办法准确回答。",
    "我想不起来他具体是在哪一年去世的。",
    "我所知道的资料里没有提到这一点。",
    "这个我说不清楚。",
    "你问的这个我没有准确信息，可能需要查阅专业文献。",
    "I'm not able to answer that reliably.",
    "I'm afraid I don't know.",
    "I have no reliable data on this.",
    "Unfortunately I can't help with this one.",
    "I don't remember the exact year.",
    "No clue, sorry.",
    "Hmm, I genuinely don't know.",
    "这个我不太敢下结论。",
    "这个问题我回答不上。",
    "这个我无从得知。",
    "我也说不准是哪个。",
    "我对他的生平知之甚少。",
    "我没查到确切的说法。",
    "我一时想不出来。",
    "这个问题有点冷门，我不敢乱讲。",
    "我脑子里没有这个信息。",
    "这事儿我真不太清楚，你可以去维基百科看看。",
    "这个问题我无法准确作答，因为不同来源说法不一。",
    "这一问题目前学界尚无定论。",
    "这个人名我完全陌生。",
    "我并不掌握这方面的统计。",
    "这个我答不上来，不好意思。",
    "我不太能确定是哪一年。",
    "目前没有公开的可靠数据。",
    "很抱歉，这个超出我的能力范围了。",
    "I'm unsure about this one.",
    "I don't have enough knowledge to answer accurately.",
    "Can't recall, unfortunately.",
    "我不是很确定，可能需要你自己查一下。",
    "我连这个人是谁都不知道。",
    "这个问题对我来说太难了。",
]


@pytest.mark.skipif(not SIMPLEQA.exists(), reason="Chinese SimpleQA file not available")
def test_refusals_by_the_grammar_of_not_knowing_are_certain_na_for_every_real_reference():
    rows = [json.loads(line) for line in SIMPLEQA.read_text(encoding="utf-8").splitlines() if line.strip()]
    for phrase in REFUSALS_BY_GRAMMAR:
        verdicts = [judge_answer(phrase, r["answer"], r["question"]) for r in rows]
        assert all(v.grade == "NA" and v.certain for v in verdicts), (phrase, next(
            (r["answer"], v) for r, v in zip(rows, verdicts) if v.grade != "NA" or not v.certain))


@pytest.mark.parametrize("answer, reference, question, verdict", [
    ("是指二维定位还是三维定位呢？", "4", "GPS单点定位至少需要几颗卫星？", ("NA", True)),  # only asks back
    ("是问主桥长度吗？", "1200米", "该桥全长多少米？", ("NA", True)),
    ("你是说单系统吗？如果是单系统，至少需要4颗。", "4", "GPS单点定位至少需要几颗卫星？", ("CO", False)),
    ("你指的是《茶馆》吗？那是老舍写的。", "老舍", "这部作品的作者是谁？", ("CO", True)),
    # a wrong value after a question back: its grade hangs on the reply, so it is never sure
    ("你说的是主桥还是包括引桥在内的全长？主桥大约800米。", "1200米", "该桥全长多少米？", ("IN", False)),
])
def test_answers_that_ask_back(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)



@pytest.mark.skipif(not SIMPLEQA.exists(), reason="Chinese SimpleQA file not available")
@pytest.mark.parametrize("template", ["应该是{}吧。", "The answer is {}.", "关于这个问题，答案是：{}。希望对你有帮助！",
                                      "{}（据公开资料）", "我记得是{}，不过不太确定。"])
def test_real_references_in_sentences_are_correct(template):
    rows = [json.loads(line) for line in SIMPLEQA.read_text(encoding="utf-8").splitlines() if line.strip()]
    verdicts = [judge_answer(template.format(r["answer"]), r["answer"], r["question"]) for r in rows]
    assert [r["answer"] for r, v in zip(rows, verdicts) if v.grade != "CO"] == []
    certain = sum(v.certain for v in verdicts) / len(rows)
    assert certain == 0 if "不太确定" in template else certain > 0.99  # a refusing hedge is never sure


@pytest.mark.parametrize("prediction, reference, grade", [
    ("", "5", "NA"), ("。？！……", "5", "NA"), ("😀", "沈括", "NA"), ("沈括😀", "沈括", "CO"),
    ("−5", "-5", "CO"), ("-5", "−5", "CO"), ("−5", "5", "IN"), ("５", "5", "CO"), ("１２３４年", "1234年", "CO"),
    ("1e309", "1e309", "CO"),
    # a run of numerals longer than Python's int() reads (4,300 digits) must not raise
    ("一" * 20000, "5", "IN"), ("一" * 5000 + "年", "1912年", "IN"), ("一亿" * 700, "5", "IN"),
    # a 20,000-character answer (the scientific-notation rewrite was quadratic in a run of digits: 7 s here)
    ("1" * 20000, "5", "IN"), ("1" * 20000, "沈括", "IN"), ("1912年，" * 4000, "1912年", "CO"),
    # thousands of numbers (the stray-number and restatement checks compared every pair: 2 min for the first)
    ("5个6个" * 3000, "5个", "CO"), ("5（6）" * 4000, "5个", "CO"), ("1912年1913年" * 1500, "1912年", "CO"),
    ("至少5个" * 4000, "5个", "CO"), ("永乐18年(1420年)，" * 1500, "1420年", "CO"),
])
def test_odd_input_gets_a_grade_and_no_exception(prediction, reference, grade):
    assert judge_answer(prediction, reference, "哪一年？").grade == grade


@pytest.mark.parametrize("prediction, reference, verdict", [
    # a reference of only symbols or emoji gives the rules nothing to compare: not sure (the cascade asks the LLM)
    ("沈括", "😀", ("IN", False)), ("5", "。", ("IN", False)), ("1", "%", ("IN", False)),
    ("😀", "😀", ("CO", True)), (" 👍 ", "👍", ("CO", True)),  # the very same text
    ("", "😀", ("NA", True)), ("不知道", "😀", ("NA", True)),  # no answer is no answer
])
def test_a_reference_the_rules_cannot_read(prediction, reference, verdict):
    assert_verdict(prediction, reference, "", verdict)


@pytest.mark.parametrize("answer, reference", [
    ("截至2023年的资料中没有相关记载。", "2023"),
    ("根据2021年以前的资料，我无法确定。", "2021年"),
    ("我查到的2019年的报道里没有提到具体数字，无法确定。", "2019年"),
])
def test_a_year_that_only_dates_a_refusal_is_not_an_answer(answer, reference):
    """The reference's year inside 截至…的资料 / 根据…以前的信息 scopes what the refusal covers: NA, never a sure CO."""
    verdict = judge_answer(answer, reference, "该节目在哪一年首播？")
    assert verdict.grade == "NA" and not verdict.certain


def test_a_refusal_then_a_bare_year_is_still_a_hedged_answer():
    assert judge_answer("我不确定，1921年。", "1921年", "该党在哪一年成立？").grade == "CO"


@pytest.mark.parametrize("answer, reference, question", [
    ("一位中国现代作家。", "鲁迅", "《狂人日记》的作者是谁？"),
    ("应该是一位法国数学家，具体名字我记不起来了。", "伽罗瓦", "群论的奠基人之一、死于决斗的是谁？"),
    ("是南方的一座港口城市。", "厦门", "鼓浪屿位于哪座城市？"),
])
def test_an_indefinite_description_instead_of_a_name_is_less_specific(answer, reference, question):
    """一位…作家 names the kind of person, not which one: NA (clean() writes 一 as 1, which the rule must see)."""
    assert judge_answer(answer, reference, question).grade == "NA"


@pytest.mark.parametrize("answer, reference, question, grade", [
    # the question's own year picks the clause: 2019年 is asked, 2020年 is context
    ("2020年的产量是8.6万吨，2019年是7.9万吨。", "8.6万吨", "该厂2019年的产量是多少？", "IN"),
    ("2019年是7.9万吨，到2020年增加到8.6万吨。", "7.9万吨", "该厂2019年的产量是多少？", "CO"),
    # a date whose year and day match but whose month does not is another date
    ("该法于2015年8月29日通过，自2016年1月1日起施行。", "2015年8月29日", "该法自何时起施行？", "IN"),
    ("该法于2015年8月29日通过，自2016年1月1日起施行。", "2016年1月1日", "该法自何时起施行？", "CO"),
])
def test_among_several_values_the_questions_own_year_and_whole_dates_decide(answer, reference, question, grade):
    verdict = judge_answer(answer, reference, question)
    assert (verdict.grade, verdict.certain) == (grade, False)


@pytest.mark.parametrize("answer, reference, question, verdict", [
    # 1900 ends the 19th century by strict count and opens the 20th in common use: both phrasings agree with it
    ("19世纪末20世纪初成立的，具体年份我记不清了。", "1900年", "该党是哪一年成立的？", ("NA", True)),
    ("19世纪末。", "1900年", "该党是哪一年成立的？", ("NA", True)),
    ("20世纪初。", "1899年", "该党是哪一年成立的？", ("IN", True)),
    # one vague value agrees and one does not (the dynasty dates the object, the decade its finding): not sure
    ("这件银器是唐代文物，1970年代出土于陕西。", "1970年", "这件银器是哪一年出土的？", ("NA", False)),
    # a name given only in Latin letters, answered in Chinese (a translation the rules cannot check)
    ("狮头工作室。", "Lionhead Studios", "这款游戏是哪家公司开发的？", ("IN", False)),
    ("我没有关于这位作家入会年份的资料。", "1997", "她是哪一年加入作家协会的？", ("NA", True)),
])
def test_century_bounds_mixed_vague_values_translated_names_and_missing_records(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, verdict", [
    # a short claim first, then a disclaimer: a hedged wrong guess, not a refusal
    ("王晶。不过我不太确定。", ("IN", False)),
    ("是王晶，我不便透露更多。", ("IN", False)),
    ("张敏。不过我不太确定。", ("CO", False)),
    # a lead-in before the refusal is no claim
    ("很遗憾，我无法给出确切答案。", ("NA", True)),
    ("这部电影的导演，我不太清楚。", ("NA", True)),
    ("这位导演的生平资料我掌握得不够多，怕说错，就不乱猜了。", ("NA", True)),  # 不乱猜 refuses to guess
    ("对这部片子的导演我不太有把握，这个问题我就先不作答了。", ("NA", True)),
])
def test_a_claim_before_a_disclaimer_is_a_guess_and_a_lead_in_is_not_a_claim(answer, verdict):
    v = judge_answer(answer, "张敏", "这部电影的导演是谁？")
    assert (v.grade, v.certain) == verdict, v


def test_an_approximate_percentage_is_judged_at_its_own_precision():
    """大约是99% for 98.83%: the reference rounds to it, but it does not state 98.83%: NA, not a sure CO."""
    v = judge_answer("支持独立的比例大约是99%。", "98.83%", "支持独立的比例是多少？")
    assert v.grade == "NA" and not v.certain


@pytest.mark.parametrize("answer, reference, verdict", [
    ("洪武八年。", "1375年", ("CO", True)), ("雍正元年。", "1723", ("CO", True)),
    ("民国三十五年。", "1946", ("CO", True)), ("昭和61年发售的。", "1986", ("CO", True)),
    ("明治43年开始举办的。", "1910年", ("CO", True)),
    ("康熙二十二年。", "1684年", ("IN", True)), ("万历40年。", "万历41年（1613年）", ("IN", True)),
    ("至元八年。", "1271年", ("IN", False)),  # an era we do not list: its 8 is no year 8
])
def test_years_of_reign_eras_are_years(answer, reference, verdict):
    assert_verdict(answer, reference, "这件事发生在哪一年？", verdict)


@pytest.mark.parametrize("answer, reference, grade", [
    ("是一种啮齿类实验动物。", "小鼠", "NA"),
    ("它是以19世纪初英国的一场工人运动来命名的。", "卢德运动", "NA"),
    ("是在集英社旗下的一本漫画杂志上连载的。", "周刊少年Jump", "NA"),
    ("是一个叫王晶的导演拍的。", "张敏", "IN"),  # a description that goes on to name someone
    ("《一种缩减人口的经济学》。", "《人口原理》", "IN"),  # a title is a name, whatever its words
])
def test_descriptions_of_any_kind_are_less_specific_and_naming_ones_are_not(answer, reference, grade):
    assert judge_answer(answer, reference, "这是什么？").grade == grade


@pytest.mark.parametrize("answer, reference, grade", [
    ("张敏只是这部片的编剧，真正的导演是王晶。", "张敏", "IN"),
    ("王晶只是挂名，真正的导演是张敏。", "张敏", "CO"),
    ("林郑月娥是当时呼声最高的候选人，但最终当选的是曾俊华。", "林郑月娥", "IN"),
    ("常见说法是出自《六书本义》，但更早的版本见于《翼玄》，所以最早出处应该是《翼玄》。", "《六书本义》", "IN"),
    ("很多资料说是魏晋南北朝，但其实要到宋代才固定下来。", "魏晋南北朝", "IN"),
    ("沈括才是真正的作者。", "沈括", "CO"),
])
def test_a_final_or_true_answer_supersedes_what_came_first(answer, reference, grade):
    assert judge_answer(answer, reference, "是谁/是哪个？").grade == grade


@pytest.mark.parametrize("answer, reference, question, grade", [
    # the value or name a chat model sets in bold is its answer among several
    ("该社前身是1944年成立的座谈会，1945年改名，**1946年**5月正式成立。", "1946年", "该社是哪一年成立的？", "CO"),
    ("该社前身是1944年成立的座谈会，1945年改名，**1946年**5月正式成立。", "1944年", "该社是哪一年成立的？", "IN"),
    ("宪章在2000年的尼斯会议上宣布，但直到**《里斯本条约》**生效后才有法律效力，而非《尼斯条约》。", "《里斯本条约》",
     "宪章是通过哪一条约获得法律效力的？", "CO"),
    # 1. 2. 3. 4. number a list; they are not values
    ("他认为有四个阶段：1. 反映现实；2. 掩盖现实；3. 掩盖现实的缺席；4. 与现实无关。", "四种", "他认为有几种类型？", "CO"),
    ("5.", "5", "有几种？", "CO"),
    # a description that names someone is no description
    ("是德国的一家公司西门子开发的。", "博世", "这项技术是哪家公司开发的？", "IN"),
    ("北宋时期的一位科学家写的。", "沈括", "《梦溪笔谈》的作者是谁？", "NA"),
])
def test_bold_answers_list_numbering_and_naming_descriptions(answer, reference, question, grade):
    assert judge_answer(answer, reference, question).grade == grade


@pytest.mark.parametrize("answer, reference, question, verdict", [
    ("这个术语我给不出准确的名称。", "弗仑克尔缺陷", "这种缺陷叫什么？", ("NA", True)),
    ("这方面的信息我掌握得不太可靠，这个问题我就不硬答了。", "西山居", "这款游戏是哪家公司开发的？", ("NA", True)),
    ("I'm not entirely sure about this one.", "西山居", "这款游戏是哪家公司开发的？", ("NA", True)),
    # 相传 tells a legend; it does not attribute the answer to others
    ("相传由石匠马力诺于**公元301年9月3日**建立。", "301年9月3日", "该国是哪一天建立的？", ("CO", True)),
    # 真正…的人是 supersedes what came first
    ("张三参与了考试的设计，但第一个真正通过考试拿到认证的人是李四。", "张三", "第一个获得该认证的人是谁？", ("IN", True)),
    # another person of the reference's surname is another candidate, not the reference
    ("马赫环是以路德维希·马赫命名的，他是恩斯特·马赫的儿子。", "恩斯特·马赫", "马赫环是以谁命名的？", ("IN", False)),
    ("公元十一世纪。", "11", "这座城市始建于哪个世纪？", ("CO", True)),
    ("每人每日约0.28立方米。", "280", "每人每日用水量是多少公升？", ("CO", True)),
    ("大约74美制加仑。", "290", "每人每日用水量是多少公升？", ("IN", False)),
    ("在国际音标里，这个元音写作ɵ。", "ɵ", "这个元音用哪个字符表示？", ("CO", True)),
])
def test_refusal_phrasings_legends_true_answers_centuries_volumes_and_symbols(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, reference, question, verdict", [
    ("是该国**第5任**总理。", "5", "他是该国第几任总理？", ("CO", True)),
    ("位于北非。", "埃及", "这座古城位于哪个国家？", ("NA", False)),
    ("晋朝。", "西晋太始年间", "这部书成书于什么时候？", ("NA", True)),
    ("西晋。", "西晋太始年间", "这部书成书于什么时候？", ("NA", True)),
    ("东晋。", "西晋太始年间", "这部书成书于什么时候？", ("IN", True)),
    ("西晋咸宁年间。", "西晋太始年间", "这部书成书于什么时候？", ("IN", False)),
    ("新石器时代。", "新石器时代晚期", "部落联盟最早出现在什么时期？", ("NA", False)),
])
def test_ordinals_asked_regions_halves_of_dynasties_and_parts_of_periods(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, reference, question, verdict", [
    ("tvN。", "tvN频道", "该节目在哪个频道首播？", ("CO", False)),
    ("用的是AV.link协议。", "CENELEC标准的AV.link协议", "它基于哪个协议？", ("CO", False)),
    ("MBC。", "tvN频道", "该节目在哪个频道首播？", ("IN", False)),
    ("它是21世纪头十年推出的一批字体之一。", "2006", "这款字体是哪一年设计的？", ("NA", True)),
    # a clause opened by a turn (但, 不过, 而) holds the answer among several values
    ("这款字体虽然在2006年才公开发布，但它的设计其实是在2004年完成的。", "2006", "这款字体是哪一年设计的？",
     ("IN", False)),
])
def test_latin_cores_first_decades_and_turns(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, reference, question, verdict", [
    # counts said vaguely are ranges or bounds
    ("几千人。", "3500人", "有多少人参加？", ("NA", True)), ("几千人。", "350人", "有多少人参加？", ("IN", True)),
    ("十几个。", "15个", "有几个？", ("NA", True)), ("上万人。", "12000人", "有多少人参加？", ("NA", True)),
    ("好几百米。", "350米", "它有多高？", ("NA", True)),
    # years ago are no years; before a year is a bound
    ("两千多年前。", "公元前221年", "这是哪一年的事？", ("NA", False)),
    ("2000年前就建成了。", "1998年", "它是哪一年建成的？", ("NA", True)),
    ("大约5万年前。", "43,000年前", "现代人是什么时候到达这里的？", ("IN", True)),  # 4万 at its precision
    ("于1965年前往美国纽约。", "1964", "他哪一年去的美国？", ("IN", True)),  # 前往 is no 前
    # periods without numbers for a year
    ("是在第二次世界大战期间建立的。", "1943", "实验室是哪一年建立的？", ("NA", False)),
    ("近代。", "1895年", "这是哪一年的事？", ("NA", False)),
])
def test_vague_counts_years_ago_and_periods(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, reference, question, grade", [
    ("是英国作家。", "狄更斯", "《雾都孤儿》的作者是谁？", "NA"),   # a kind of person, no name
    ("德国化学家。", "李比希", "这条定律是谁提出的？", "NA"),
    ("是狄更斯，一位英国作家。", "莎士比亚", "《哈姆雷特》的作者是谁？", "IN"),  # describes the name it gives
    ("吉林大学。", "北京大学", "他毕业于哪所大学？", "IN"),  # a name made of a kind word is still a name
    ("《摩天动物园》。", "《潇湘晨光》", "这个节目叫什么？", "IN"),
])
def test_a_kind_without_a_name_is_less_specific_and_a_name_with_a_kind_is_a_name(answer, reference, question, grade):
    assert judge_answer(answer, reference, question).grade == grade


@pytest.mark.parametrize("answer, reference, question, verdict", [
    # another clause shares much more of the question: it holds the answer, the reference is context
    ("李元吉是当时的太子，被尉迟敬德射杀的齐王是李建成。", "李元吉", "玄武门之变中被尉迟敬德射杀的齐王是谁？",
     ("IN", False)),
    ("虞茂是他的族兄，虞预本名虞豫。", "虞茂", "虞预本名是什么？", ("IN", False)),
    # a bare answer first, or contrast clauses after it, keep the match sure
    ("杜甫，字子美；李白则被称为诗仙。", "杜甫", "被称为诗圣的唐代诗人是谁？", ("CO", True)),
    ("杨利伟，2003年乘神舟五号进入太空；翟志刚则是中国第一位出舱行走的航天员。", "杨利伟",
     "第一位进入太空的中国航天员是谁？", ("CO", True)),
    # a turn to another claim that is new besides the question (FDA): likelier that claim answers
    ("DailyMed现在由美国国家医学图书馆维护，但最初是由FDA运营的。", "美国国家医学图书馆",
     "DailyMed最初是由哪个机构运营的？", ("IN", False)),
])
def test_a_clause_closer_to_the_question_holds_the_answer(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, reference, question, verdict", [
    ("不是2001年就是2006年。", "2006", "这项纪录是哪一年创下的？", ("IN", True)),
    ("NLM和FDA二者之一，具体是哪个我记不清了。", "美国国家医学图书馆", "它最初由哪个机构运营？", ("IN", False)),
    ("弗朗西斯·蒲福，也有人认为是他的兄长丹尼尔·蒲福。", "弗朗西斯·蒲福", "这种风级是以谁命名的？", ("IN", False)),
    ("K0IIIp，另有星表给的是K1III，两个都有可能。", "K0IIIp", "它的光谱类型是什么？", ("IN", False)),
    ("属于锥体的一种。", "正棱锥", "这种几何体叫什么？", ("NA", False)),
    ("属于被子植物门。", "木兰纲", "它属于哪个纲？", ("NA", False)),
    ("欧芹属于伞形目。", "伞形科", "欧芹属于哪个科？", ("NA", False)),
    ("属于伞形科。", "伞形科", "欧芹属于哪个科？", ("CO", True)),
    ("在欧洲。", "意大利", "这座城市位于哪个国家？", ("NA", False)),
    ("抱歉，我没有找到可靠记录，建议查阅厂商或社区的资料。", "2010", "它哪一年开售？", ("NA", True)),
])
def test_candidate_pairs_other_candidates_kinds_of_things_and_ranks(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, verdict", [
    ("中国的中古时期。", ("NA", False)),
    ("唐朝。", ("CO", True)),
    ("宋朝时期。", ("IN", True)),
])
def test_an_age_without_a_dynasty_is_less_specific_than_the_dynasty(answer, verdict):
    v = judge_answer(answer, "唐朝", "这种制度始于哪个朝代？")
    assert (v.grade, v.certain) == verdict, v


def test_a_question_in_millions_of_a_unit_gives_a_bare_reference_that_unit():
    question = "2014年全世界核桃（含壳）的总产量是多少百万公吨？"
    assert judge_answer("产量是346万吨，也就是3.46百万公吨。", "3.46", question).grade == "CO"
    assert judge_answer("3.64百万公吨。", "3.46", question).grade == "IN"


def test_a_hedge_on_another_candidate_does_not_vouch_for_the_reference():
    """应该是cF16 hedges cF16, not the cF8 named for copper in the clause before."""
    v = judge_answer("cF8 对应的是铜那样的面心立方结构，金刚石型应该是 cF16。", "cF8", "金刚石型结构的皮尔逊符号是什么？")
    assert (v.grade, v.certain) == ("IN", False)
    assert tuple(judge_answer("应该是cF8吧。", "cF8", "金刚石型结构的皮尔逊符号是什么？"))[:2] == ("CO", True)


@pytest.mark.parametrize("answer, reference, question, verdict", [
    ("他是在20世纪60年代获封爵士的，那时他已年过七十。", "1966", "他是哪一年获封爵士的？", ("NA", True)),  # 70 is an age
    ("L2是1227.60 MHz，L1是1575.42 MHz，所以你问的这个载波应该是1227.60 MHz。", "1575.42 MHz",
     "GPS的L1载波频率是多少？", ("IN", False)),
    ("是浙江省的一所高校。", "绍兴文理学院", "他毕业于哪所学校？", ("NA", False)),
    ("I don't have the founding year of this party at hand, unfortunately.", "1905", "该党哪一年成立？", ("NA", True)),
    ("这类展览的历届获奖记录我没有掌握，不好回答。", "第七届", "他在第几届获奖？", ("NA", True)),
])
def test_ages_beside_years_concluded_values_schools_and_more_refusals(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, reference, question, verdict", [
    ("上世纪50年代初。", "1959", "这家厂是哪一年建成的？", ("IN", True)),
    ("上世纪50年代初。", "1952", "这家厂是哪一年建成的？", ("NA", True)),
    ("1980年代末。", "1988", "这家厂是哪一年建成的？", ("NA", True)),
    ("28对。", "28", "东方草莓的染色体数目是多少？", ("IN", False)),  # pairs: 56 chromosomes
    ("应该是执行豁免或者作证义务的豁免。", "执行豁免", "这属于哪种豁免？", ("IN", True)),  # 或者作证 is no alias
])
def test_parts_of_decades_pairs_and_or_before_a_word(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, reference, question, grade", [
    ("这属于康复治疗的操作细节，我不太敢乱讲，最好当面问一下你的物理治疗师。", "骨头突出处", "冰敷时应避开哪里？", "NA"),
    ("这个问题比较冷门，我不想给你一个可能有误的年份，建议直接看官网的介绍页面。", "1990", "它哪一年成立？", "NA"),
    ("他练的是一门北派拳术，后来带到了南方，具体拳种名称我就说不准了。", "迷踪罗汉拳", "他练的是什么拳？", "NA"),
])
def test_more_refusals_and_descriptions(answer, reference, question, grade):
    assert judge_answer(answer, reference, question).grade == grade


@pytest.mark.parametrize("answer, reference, verdict", [
    ("他练的是一门北派拳术，后来带到了南方。", "迷踪罗汉拳", ("NA", False)),  # more about it, no other name
    ("是一位德国社会学家，古典社会学的奠基人之一。", "斐迪南·滕尼斯", ("NA", False)),
    ("是一张关于欧洲难民危机的新闻照片。", "艾兰·库尔迪的照片", ("NA", False)),
    ("是狄更斯，一位英国作家。", "莎士比亚", ("IN", False)),  # a name beside the description
])
def test_a_description_with_more_about_it_is_less_specific_and_one_beside_a_name_is_not(answer, reference, verdict):
    assert_verdict(answer, reference, "是谁/是什么？", verdict)


@pytest.mark.parametrize("answer, reference, question, verdict", [
    ("第VII届。", "7", "他在第几届双年展上获奖？", ("CO", True)),
    ("第VIII届。", "7", "他在第几届双年展上获奖？", ("IN", True)),
    ("Xibe（锡伯人）的节日。", "锡伯族", "这是哪个民族的节日？", ("CO", True)),
    ("他早年赴日本留学，在**国立筑波大学**取得硕士学位。", "日本国立筑波大学", "他在哪所大学取得硕士学位？",
     ("CO", False)),
    ("陈靖姑信俗以福建**古田县的临水宫**祖庙为发祥地。", "古田临水宫", "陈靖姑信俗的发祥地是哪里？", ("CO", False)),
    ("他长期任教于荷兰的University of Groningen，也就是格罗宁根大学。", "格罗宁根大学", "他长期任教于哪所大学？",
     ("CO", True)),
])
def test_roman_numerals_peoples_bold_near_matches_and_restatements(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, reference, question, grade", [
    # a Latin name shared with the question counts as one word, so the turn decides
    ("Consolas虽然在2006年才随Vista公开发布，但它的设计其实是在2004年完成的。", "2006", "Consolas字体是哪一年设计出来的？", "IN"),
    # the value in a negated clause is what it is not
    ("甘肃省1981年公布的第一批名单里并没有这座石窟，它要到1993年那一批才入选。", "1981", "这座石窟哪一年被列入省保名单？", "IN"),
    ("甘肃省1981年公布的第一批名单里并没有这座石窟，它要到1993年那一批才入选。", "1993", "这座石窟哪一年被列入省保名单？", "CO"),
])
def test_latin_words_count_once_and_negated_values_lose(answer, reference, question, grade):
    assert judge_answer(answer, reference, question).grade == grade


@pytest.mark.parametrize("answer, reference, question, verdict", [
    ("鲁迅是他的老师，他本人是作家萧红的同学。", "鲁迅", "他的老师是谁？", ("CO", True)),  # nothing set against it
    ("A0V 是它伴星的光谱型，这颗恒星本身是 F5V。", "A0V", "这颗恒星的光谱型是什么？", ("IN", False)),
    ("他的哥哥是空军出身，他本人原属于海军陆战队。", "空军", "他原本属于哪个军种？", ("IN", False)),
    ("他父亲是医生，他本人也是医生。", "医生", "他的职业是什么？", ("CO", True)),  # the reference again, last
])
def test_the_asked_thing_itself_set_against_the_reference(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


def test_the_asked_thing_itself_after_a_relative_the_question_asks_about():
    v = judge_answer("他的父亲是画家齐白石，他本人是一位雕塑家。", "齐白石", "他的父亲是谁？")
    assert (v.grade, v.certain) == ("CO", True), v


@pytest.mark.parametrize("answer, reference, question, verdict", [
    # an approximate calendar year is a guess at that year (people grade 2000年前后 for 2006 wrong)
    ("大约是2000年前后成立的。", "2006", "该公司成立于哪一年？", ("IN", False)),
    ("大概1990年左右启用的。", "1994", "车站是哪一年启用的？", ("IN", False)),
    ("大约是1994年启用的。", "1994", "车站是哪一年启用的？", ("CO", True)),
    ("上世纪90年代。", "1994", "车站是哪一年启用的？", ("NA", True)),  # a decade is a range, not a guess
    ("大约400人。", "412人", "共有多少人参加？", ("NA", False)),  # a count still rounds at its precision
    # a guess that ends in a question is still a guess; only asking back is a clarification
    ("我记得好像是吴作栋提出的，那时候他还是总理吧？", "李显龙", "这是哪位领导人提出的？", ("IN", False)),
    # 北部省 names a province; 北部 alone is a region
    ("北部省。", "铜带省", "该市位于赞比亚的哪个省？", ("IN", True)),
    # a range the question already gives (2011-2020年) is not the answer's value
    ("按照《纲要（2011-2020年）》，要到**2020年**实现。", "2015", "《纲要（2011-2020年）》要求在哪一年实现该目标？",
     ("IN", True)),
    # the question offers two options: the other one is a contradiction
    ("假体腔动物。", "无体腔动物", "吸虫是无体腔动物还是假体腔动物？", ("IN", True)),
    ("吸虫属于无体腔动物，不是假体腔动物。", "无体腔动物", "吸虫是无体腔动物还是假体腔动物？", ("CO", True)),
    ("我觉得应该是火成岩吧。", "沉积岩", "这种岩石属于火成岩还是沉积岩？", ("IN", False)),
    ("这个我不确定是火成岩还是沉积岩。", "沉积岩", "这种岩石属于火成岩还是沉积岩？", ("NA", True)),
])
def test_approximate_years_guesses_asking_provinces_and_the_questions_own_options(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, reference, question, verdict", [
    ("Na2SO4·10H2O。", "Na2SO4", "芒硝的化学式是什么？", ("IN", False)),  # a hydrate is another formula
    ("Na2SO4·10H2O。", "Na2SO4·10H2O", "芒硝的化学式是什么？", ("CO", True)),
    ("作者是浙江作家徐磊，笔名南派三叔。", "南派三叔", "这部小说的作者是谁？", ("CO", True)),  # a pen name restates
    # 创办人之一 is one of the founders, not one of two candidates (二者之一 is: NLM和FDA二者之一, above)
    ("他是丰子恺的同学、师范学校的创办人之一，但那本教材叫什么我记不清了。", "《乐理初步》", "这本教材叫什么？",
     ("NA", True)),
])
def test_hydrates_pen_names_and_one_of_the_founders(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, reference, question, verdict", [
    ("这是安全边际，盈亏平衡点只是用来计算它的中间量。", "盈亏平衡点", "哪项指标衡量总收入等于总成本的销量？",
     ("IN", False)),
    ("应该是EP《Deserve》。《Antares》其实是他2019年才推出的专辑。", "《Antares》", "他在2018年发行了哪张专辑？",
     ("IN", False)),
    ("是范·诺利（Fan Noli）。索古要到1928年以后才当上国王。", "索古", "1925-1928年阿尔巴尼亚总统是谁？", ("IN", False)),
    # the reference after the first claim names what it described, restates it or refines it
    ("是钱钟书，他的夫人杨绛也是作家。", "钱钟书", "这本书的作者是谁？", ("CO", True)),
    ("是一位著名学者，也就是钱钟书。", "钱钟书", "这本书的作者是谁？", ("CO", True)),
    ("是方鸿渐的创造者，钱钟书。", "钱钟书", "这本书的作者是谁？", ("CO", True)),
    ("是在广东省，具体在深圳。", "深圳", "该公司总部在哪个城市？", ("CO", True)),
    # one hedged candidate; the name inside another book's title (《李太白全集》) is no mention of its own
    ("应该是李白吧，我记得这首收在《李太白全集》里。", "李白", "这首诗是哪位诗人所作？", ("CO", True)),
])
def test_a_first_claim_without_the_reference(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, reference, question, verdict", [
    ("是伊朗的一个左翼政党。", "人民党", "1954年被审判的组织是哪个？", ("NA", False)),
    ("是1978年召开的一次中共中央的重要会议。", "十一届三中全会", "在1978年召开的哪次会议上作出了该决定？", ("NA", False)),
    ("茨藻目的种类被并入了单子叶植物中的另一个目。", "泽泻目", "茨藻目被重新归入哪个目？", ("NA", False)),
    ("是唐代的一位史学家奉诏编撰的。", "李百药", "《北齐书》的作者是哪位历史学家？", ("NA", False)),
    ("是中国科学院下属的一个研究所。", "中国科学院上海有机化学研究所", "哪个机构的研究员做了这项研究？", ("NA", False)),
    ("是伊朗的一个左翼政党，叫民族阵线。", "人民党", "1954年被审判的组织是哪个？", ("IN", False)),  # then a name
])
def test_descriptions_of_parties_meetings_taxa_and_institutes(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, reference, question, verdict", [
    # a bracketed attribution is a note on the word before it: a candidate only when that word is the answer
    ("一般认为是东汉末年牟子（一说牟融）所撰的《理惑论》，又称《牟子理惑论》。", "牟子理惑论", "中国最早的佛教论书是什么？",
     ("CO", False)),
    ("质量数（有的教材也说表示相对原子质量）。", "质量数", "元素符号左上角的数字表示什么？", ("IN", False)),
    # a long story told by 据说 offers no candidate; a short one does, a Latin gloss counting as one word
    ("源于**北爱尔兰共和军**在北爱冲突期间的战术。据说得名于这种行动像老虎一样事先长时间潜伏跟踪猎物。", "北爱尔兰共和军",
     "虎式绑架起源于哪个组织的战术？", ("CO", True)),
    ("一般认为是巴斯德，也有人说是施旺（Theodor Schwann）。", "巴斯德", "谁最早将酵母与发酵联系起来？", ("IN", False)),
    ("是1924年。虽然常有人提到1908年伦敦奥运会，但那次只算表演。", "1908", "花式滑冰最早在哪一年成为奥运正式项目？",
     ("IN", True)),
])
def test_bracketed_notes_long_stories_and_what_people_mention(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, reference, verdict", [
    ("是威廉·哈姆斯（William Hammes）。", "John W. Hammes", ("IN", False)),  # the surname, another given name
    ("是威廉·道尔顿。", "约翰·道尔顿", ("IN", False)),
    ("是哈姆斯（Hammes）。", "John W. Hammes", ("CO", False)),  # the surname alone, an initial, a title
    ("是J. Hammes。", "John W. Hammes", ("CO", False)),
    ("是Dr. Hammes。", "John W. Hammes", ("CO", False)),
    ("是于尔根·哈贝马斯。", "尤尔根·哈贝马斯（Jürgen Habermas）", ("CO", False)),  # the given name spelt otherwise
    ("是希罗尼穆斯·波希（Jheronimus Bosch）。", "耶罗尼米斯·博斯（Hieronymus Bosch）", ("CO", False)),
    ("是英国化学家道尔顿，不是他的兄弟乔纳森·道尔顿。", "约翰·道尔顿", ("CO", False)),
    ("作者是**巴鲁赫·斯宾诺莎**（Baruch Spinoza）。", "巴鲁赫·斯宾诺莎（Benedict De Spinoza）", ("CO", True)),
])
def test_a_surname_with_another_given_name_is_another_person(answer, reference, verdict):
    assert_verdict(answer, reference, "是谁提出的？", verdict)


def test_reference_forms_are_in_a_fixed_order_whatever_the_hash_seed():
    """Forms of one length were ordered by set iteration, so a grade could change with PYTHONHASHSEED."""
    import subprocess
    import sys
    code = ("from chimdqa_eval.factual.judge_rule import parse_reference as p;"
            "print(p('巴鲁赫·斯宾诺莎（Benedict De Spinoza）').forms)")
    seen = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in (1, 2, 3, 4)}
    assert len(seen) == 1, seen


@pytest.mark.parametrize("answer, reference, question, verdict", [
    ("我印象中这本书是甘阳写的，不过不太确定。", "汪晖", "这本书的作者是谁？", ("IN", False)),  # a guess, at length
    ("我不记得这本书是谁写的，不太确定。", "汪晖", "这本书的作者是谁？", ("NA", True)),
    ("我印象中这本书是汪晖写的，不过不太确定。", "汪晖", "这本书的作者是谁？", ("CO", False)),
    # the reference named as someone's relative, before it as after it
    ("唯名论影响深远的是阿伯拉尔，他的老师罗瑟林也有类似倾向。", "罗瑟林", "中世纪唯名论的创始者是哪位哲学家？",
     ("IN", False)),
    ("他的老师罗瑟林。", "罗瑟林", "阿伯拉尔的老师是谁？", ("CO", True)),
])
def test_guesses_told_at_length_and_relatives_named_first(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, reference, question, verdict", [
    # 真正出名是在… is not a correction; 但真正面世是… and 真正…的是… are
    ("Stability AI 大概是在2010年代末成立的，真正出名是在2022年发布 Stable Diffusion 之后。", "2019",
     "Stability AI是在哪一年创立的？", ("IN", False)),  # a vague value that agrees beside an exact one: not sure
    ("PAL虽然在1963年就提出了方案，但真正面世是1967年在西德开播的时候。", "1963", "PAL制式是哪一年面世的？",
     ("IN", True)),
    ("常被提到的有滕尼斯和韦伯；真正把社会学分为一般社会学和特殊社会学的是齐美尔。", "滕尼斯", "是谁把社会学分为两类的？",
     ("IN", True)),
])
def test_what_counts_as_a_true_answer_after_others(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, reference, verdict", [
    ("浙江省嘉兴市桐乡市乌镇。", "浙江乌镇", ("CO", False)),  # a known place and a smaller one, levels between
    ("每年在浙江举办，永久会址设在杭州，活动集中在杭州国际博览中心一带。", "浙江乌镇", ("IN", False)),  # a city named
    ("在浙江北部一带。", "浙江乌镇", ("NA", False)),  # only a region
])
def test_places_in_parts_and_a_city_beside_a_region(answer, reference, verdict):
    assert_verdict(answer, reference, "世界互联网大会的永久会址位于哪座城市？", verdict)


@pytest.mark.parametrize("answer, reference, question, verdict", [
    ("狄利克雷函数 D(x) 的定义是：x 为有理数时 D(x)=1，x 为无理数时 D(x)=0。", "1", "自变量为有理数时函数的值是多少？",
     ("CO", False)),
    ("狄利克雷函数 D(x) 的定义是：x 为有理数时 D(x)=1，x 为无理数时 D(x)=0。", "0", "自变量为有理数时函数的值是多少？",
     ("IN", False)),
    ("总价=3×4=12元，打八折后=12×0.8=9.6元。", "9.6元", "打八折后一共多少钱？", ("CO", False)),
    ("总价=3×4=12元，打八折后=12×0.8=9.6元。", "12元", "打八折后一共多少钱？", ("IN", False)),
])
def test_values_side_by_side_after_equals_signs(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, reference, question, verdict", [
    # a first claim beats a later surname too; what a denial leaves is no first claim
    ("是范·诺利（Fan Noli）。索古要到1928年以后才当上国王。", "艾哈迈德·索古（Ahmed Zogolli）", "1925-1928年的总统是谁？",
     ("IN", False)),
    ("不是霍布斯（他写的是《利维坦》），《神学政治论》是斯宾诺莎1670年匿名出版的。", "巴鲁赫·斯宾诺莎",
     "《神学政治论》的作者是谁？", ("CO", False)),
    # a long description of a kind of thing
    ("它颁布的是一部限制外国船只参与英国及其殖民地贸易的航海类法令。", "《航海条例》", "英国颁布了什么？", ("NA", False)),
])
def test_first_claims_before_a_surname_and_long_descriptions(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, reference, question, verdict", [
    # 不确定性 is a noun (uncertainty), no refusal and no hedge
    ("1921年出版这本书的是英国经济学家凯恩斯，同年他还出版了《概率论》，两本书都讨论了不确定性问题。", "弗兰克·奈特",
     "哪位经济学家在1921年出版了《风险、不确定性与利润》？", ("IN", False)),
    ("这本的作者我一时对不上号，怕说错。", "顾栋高", "《春秋大事表》的作者是谁？", ("NA", True)),
    ("我不太记得是谁合成的，可能需要查一下文献。", "Wudl", "它是由哪位科学家首次合成的？", ("NA", True)),
    ("不超过50人。", "50", "股东人数限制是不超过多少人？", ("CO", True)),  # a bound the question uses
    ("我记得是安德鲁·贝尔（Andrew Bell）。", "汤马斯·贝尔（Thomas Bell）", "专利是由哪位苏格兰人申请的？", ("IN", False)),
    ("Ghazi al-Yawer（加齐·阿吉勒·亚瓦尔）。", "加齐·亚瓦尔", "2004年担任伊拉克临时政府总统的是谁？", ("CO", False)),
    ("可能改成了安平县？这个我不是很确定。", "太平县", "永宁县在那一年改名为什么？", ("IN", False)),  # a guess
    ("启功是康熙或雍正的九世孙，具体我记不太清。", "乾隆", "启功是哪位清朝皇帝的九世孙？", ("IN", False)),
    ("zoome在2007年上线，后来用户流失，在2011年停止了服务。", "2011", "zoome网站是在哪一年结束运营的？", ("CO", False)),
    ("2019年频道调整时天气台其实还保留着，真正停播是在2020年。", "2019", "天气台于哪一年停播?", ("IN", False)),
    ("0.7 微秒。", "700纳秒", "它的寿命是多少？", ("CO", True)),
    ("大约700微秒。", "700纳秒", "它的寿命是多少？", ("IN", True)),
])
def test_nouns_that_look_like_refusals_guesses_ending_in_questions_endings_and_small_times(answer, reference, question,
                                                                                        verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, reference, question, verdict", [
    ("把黑吉豆（urad dal）和白米分别浸泡后磨成糊。", "白米", "印度蒸米浆糕是黑吉豆和什么磨成糊？", ("CO", True)),
    ("Keturah，和合本译作基土拉。", "基土拉 (Keturah)", "米甸是亚伯拉罕与哪位妻室所生？", ("CO", True)),
    ("是关羽，也就是关圣帝君、关云长。", "关羽", "这位武财神是谁？", ("CO", True)),
    ("白米和小米。", "白米", "印度蒸米浆糕是黑吉豆和什么磨成糊？", ("IN", False)),  # a list of its own
])
def test_a_list_with_the_questions_own_item_or_a_restatement_is_no_list(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


def test_two_names_joined_by_he_are_still_two_candidates():
    v = judge_answer("是Svante Wold和Bruce Kowalski两人共同创造的。", "Svante Wold", "这一方法是由谁创造的？")
    assert (v.grade, v.certain) == ("IN", False), v


@pytest.mark.parametrize("answer, reference, question, verdict", [
    ("起源于加勒比海地区。", "牙买加", "Skank舞蹈最初起源于哪个国家？", ("NA", False)),  # 海地 is not in 加勒比海地区
    ("是卖给了台湾本地的一家媒体集团。", "年代集团", "壹电视的交易对象是谁？", ("NA", False)),
    ("出自儒家的五经之一。", "《尚书·洪范》", "这段话出自哪本书籍？", ("NA", False)),
    ("是江西省内的一个城市批的。", "南昌", "它被哪个市批为非物质文化遗产项目？", ("NA", False)),
    ("我印象中是鹿特丹市中心的某个城市公园，具体名字实在记不清了。", "博物馆公园", "这个公园叫什么？", ("NA", False)),
    # one of a set, said beside a name, is context
    ("和利玛窦一起编写辞典的是郭居静，他也是最早为汉语标注声调的传教士之一。", "罗明坚", "谁和利玛窦一起编写了辞典？",
     ("IN", False)),
])
def test_places_inside_words_groups_sets_and_parks_described(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


@pytest.mark.parametrize("answer, reference, verdict", [
    ("没有。《百家姓》收录了五百多个姓，里面并没有“草”这个姓。", "否", ("CO", True)),
    ("有，排在第300位。", "否", ("IN", True)),
    ("不是。", "否", ("CO", True)),
    ("是的，他获得过。", "是", ("CO", True)),
    ("我不确定。", "否", ("NA", True)),
])
def test_yes_and_no(answer, reference, verdict):
    assert_verdict(answer, reference, "是否有这样的记录？", verdict)


# zh-rule-7: answers written the way chat models answer, each labelled by reading; the comment above each group
# names the rule it probes.
ZH_RULE_7_CASES = [
    # a clause closer to the question that only introduces its subject, before the reference: context, not sure
    ("悉尼歌剧院位于澳大利亚悉尼港的便利朗角，1973年正式落成，设计者是丹麦建筑师约恩·乌松，他凭这座建筑获得了普利兹克奖。",
     "约恩·乌松", "悉尼歌剧院的设计者是谁？", ("CO", False)),
    # the reference's own clause sets it aside (只是, 是他的学生): the closer clause is the answer
    ("《悲惨世界》的作者是大仲马，雨果只是为它写过序言。", "雨果", "《悲惨世界》的作者是谁？", ("IN", False)),
    ("《悲惨世界》的作者是大仲马，雨果是他的学生。", "雨果", "《悲惨世界》的作者是谁？", ("IN", False)),
    # refusals: daring not to say, no way to say which, easy to get wrong, fear of wrong information
    ("这个称号好几位诗人都被人用过，我不敢随便说是哪一位。", "杜甫", "唐代的“诗圣”是谁？", ("NA", True)),
    ("核函数的写法各本教材不一样，我没法说哪个是标准。", "K", "卷积积分中核函数通常用什么符号？", ("NA", True)),
    ("这类编号我很容易记错，建议你到化学数据库里查一下。", "64-17-5", "乙醇的CAS号是多少？", ("NA", True)),
    ("这个得看你问的是哪次会议，我怕给你错误的信息。", "2019", "这次会议讨论了哪一年的预算？", ("NA", True)),
    # a first clause that only says what kind of question it is, is no claim before the refusal
    ("这是植物生理学里的术语，我不太确定标准叫法，怕说错就不答了。", "卡尔文循环",
     "光合作用中把二氧化碳固定为有机物的循环叫什么？", ("NA", True)),
    # a bound before a sign word: 低于零下40度
    ("要低于零下40度才会变脆。", "-42°C", "这种合金在什么温度下变脆？", ("NA", True)),
    ("要低于零下50度才会变脆。", "-42°C", "这种合金在什么温度下变脆？", ("IN", True)),
    # periods before the dynasties: 春秋 holds 前551年, 战国 does not
    ("春秋时期。", "前551年", "孔子出生于哪一年？", ("NA", True)),
    ("战国时期。", "前551年", "孔子出生于哪一年？", ("IN", True)),
    # descriptions: 一味…药材, 在…体系里 as a setting before 一个目
    ("是一味清热燥湿的根茎类药材。", "黄连", "黄连根茎晒干后得到的中药叫什么？", ("NA", False)),
    ("在APG IV系统里，葡萄科属于蔷薇类分支下的一个目。", "葡萄目", "按照APG IV系统，葡萄科属于哪个目？", ("NA", False)),
    # the reference given a lesser or another role in every clause that names it
    ("最早的蒸汽机车是特里维西克造的，史蒂芬孙只是后来的改进者。", "史蒂芬孙", "蒸汽机车是由谁发明的？", ("IN", False)),
    ("不是欧姆，电阻用西门子表示，欧姆其实是电导的单位。", "欧姆", "电路中电阻的单位是什么？", ("IN", False)),
    # two roles the question joins, given to two names
    ("编剧是伊明，导演是吴贻弓。", "吴贻弓", "电影《城南旧事》的编剧及导演是谁？", ("IN", False)),
    ("《城南旧事》是一部1983年的电影，导演是吴贻弓。", "吴贻弓", "电影《城南旧事》的导演是谁？", ("CO", True)),
    # a state by its short name; a Chinese name that restates a Latin first claim
    ("内罗毕是肯尼亚的首都，也是东非最大的城市之一。", "肯尼亚共和国", "内罗毕是哪个国家的首都？", ("CO", True)),
    ("是Qatar Airways，中文一般叫卡塔尔航空，是海湾地区的大型航空公司。", "卡塔尔航空", "哪家航空公司的总部设在多哈？",
     ("CO", True)),
    # 元 inside a word is no currency; 卷 counts Chinese numerals
    ("共有65个元字符。", "65", "Unicode中一共定义了多少个控制字符？", ("CO", True)),
    ("全书共二百九十四卷，记载了1362年的历史。", "294", "《资治通鉴》全书共有多少卷？", ("CO", False)),
    # a wrong-looking class for a question about a class may be a broader one: not sure
    ("海葵属于无脊椎动物。", "刺胞动物门", "海葵属于哪一门动物？", ("IN", False)),
    ("这部法典颁布后已经几十年了，具体修订过几次我记不准。", "3", "这部法典一共修订过几次？", ("NA", True)),
    # a date said alone dates the clause after it; a later year with an event of its own does not reach back
    ("1980年5月，第33届世界卫生大会正式宣布全球消灭天花，而最后一例自然感染的天花病例出现在1977年的索马里。", "1980",
     "世界卫生组织在哪一年宣布全球消灭了天花？", ("CO", False)),
    ("他在1948年外出打猎后注意到狗毛上粘着的刺果，由此发明了钩毛搭扣，1955年取得专利。", "1948",
     "瑞士工程师在哪一年发明了钩毛搭扣？", ("CO", False)),
    ("他在1948年外出打猎后注意到狗毛上粘着的刺果，由此发明了钩毛搭扣，1955年取得专利。", "1955",
     "瑞士工程师在哪一年发明了钩毛搭扣？", ("IN", False)),
    # a model number beside a year is no year (波音737-400)
    ("这架飞机是波音737-400，2007年1月1日坠入望加锡海峡，机上102人遇难。", "2007", "亚当航空574号班机空难发生在哪一年？",
     ("CO", True)),
    # the reference conceded (虽然…), the turn answers
    ("全真教虽然是从王重阳那里开创的，但北宗所尊的祖师是东华帝君。", "王重阳", "全真教北宗尊哪位人物为祖师？", ("IN", False)),
    # a year is no repeat of the same digits inside the question's code (GB 2312-1980)
    ("1980年开始实施的，1981年只是做了修订。", "1981", "我国在哪一年开始实施国家标准GB 2312-1980？", ("IN", False)),
    # the reference inside another title (《续资治通鉴》) is no mention of it
    ("是《资治通鉴》还是《续资治通鉴》呢？我觉得应该是《续资治通鉴》。", "资治通鉴", "这部书仿效的对象是哪部史书？",
     ("IN", False)),
    # a reference date without its century (07年1月9日)
    ("2007年1月9日。", "07年1月9日", "iPhone是在哪一天发布的？", ("CO", True)),
    ("2008年1月9日。", "07年1月9日", "iPhone是在哪一天发布的？", ("IN", True)),
    # a broader taxon said with 植物; a kind of symbol said with 一个…字母
    ("香菜属于伞形科植物。", "芫荽属", "香菜属于哪个植物分类属？", ("NA", False)),
    ("一般用一个小写的希腊字母来表示。", "λ", "物理学中波长通常用什么符号表示？", ("NA", False)),
    # refusals: afraid to write it wrong, no confidence to speak of, no wish to name someone at random
    ("化学式我不想凭印象写，怕写错。", "C2H6O", "这种化合物的化学式是什么？", ("NA", True)),
    ("这个我没什么把握，不想随便给出一个名字。", "玻尔", "这项理论是谁提出的？", ("NA", True)),
    # a total said last answers a question for the total
    ("机上有45名乘客和7名机组人员全部遇难，共52人。", "52", "那次事故中遇难者总数是多少？", ("CO", False)),
    ("该法于2015年12月经全国人大常委会通过，自2016年3月1日起施行。", "2016", "这部法律是在哪一年实施的？", ("CO", False)),
    # a number in a code after a hyphen (GPT-3.5) is no value; a month for a date is less specific
    ("ChatGPT（基于GPT-3.5）是在2022年11月底发布的。", "22年11月30日", "ChatGPT是在哪一天发布的？", ("NA", True)),
    # another rate than the question's (节, 每秒…米 for 公里/小时), which the rules read as lengths: not sure
    ("最大速度约为1300节，折合每秒约670米。", "2400", "这架战机的最大速度约为多少公里/小时？", ("IN", False)),
    # a full title that ends in the reference after 的 names it
    ("《关于消耗臭氧层物质的蒙特利尔议定书》。", "蒙特利尔议定书", "1987年签署的限制氟氯碳化合物的协议叫什么？", ("CO", True)),
    # a closer clause that only continues the story after the reference is no turn away from it
    ("周星驰凭借刘镇伟执导的《大话西游》中饰演的至尊宝，在香港电影金像奖上获得提名，这部片后来成了经典。", "《大话西游》",
     "周星驰在哪一部电影中凭借饰演至尊宝获得香港电影金像奖提名？", ("CO", False)),
    # the answer given first (而是热动说); what it goes on to say of it (热动说则认为…) does not set it aside
    ("不是热质说，而是热动说。热质说把热看成一种流体，热动说则认为热是微粒运动的表现。", "热动说",
     "什么学说解释了热是微粒运动的表现？", ("CO", True)),
    # a closer clause that turns (则) after the reference's own
    ("《聊斋志异》是蒲松龄写的，《阅微草堂笔记》则出自纪昀之手。", "蒲松龄", "《阅微草堂笔记》是清朝哪位作家创作的？",
     ("IN", False)),
    # alternatives count beside the reference only (the species are alternatives, the family is not)
    ("当归是伞形科当归属植物当归或东当归的干燥根，能补血活血。", "伞形科", "中药当归是什么科的植物？", ("CO", True)),
    ("伞形科或五加科。", "伞形科", "中药当归是什么科的植物？", ("IN", True)),
    # a Latin word of the question is one token (HTTP/2), so a clause that repeats it is closer; the reference
    # named first as the subject of a later claim is set aside
    ("HTTP/1.1 不压缩头部，HTTP/2 改用了 gzip 压缩；HPACK 是后来 HTTP/3 才采用的。", "HPACK",
     "HTTP/2 使用的头部压缩算法是什么？", ("IN", False)),
    # a region for a town is broader; a region for a region may be broader or another one: not sure
    ("在意大利中部托斯卡纳大区的山区。", "芬奇镇", "这座博物馆在意大利哪个城镇？", ("NA", False)),
    ("起源于西班牙南部的沿海地区。", "安达卢西亚", "这种舞蹈最初起源于哪个西班牙地区？", ("IN", False)),
    ("加泰罗尼亚。", "安达卢西亚", "这种舞蹈最初起源于哪个西班牙地区？", ("IN", True)),
    # a later value reaches back one clause at most, not over what the earlier value's story said
    ("2019年12月，武汉市卫健委通报了不明原因肺炎病例，这是该病首次被官方通报，随后疫情蔓延，导致2020年全球大流行。", "2019",
     "新冠肺炎是哪一年首次被官方通报的？", ("CO", False)),
    # a year of a reign era we do not list (嗣德二十五年) restates, it is no other year
    ("我记得是1872年刊印的，也就是阮朝嗣德二十五年。", "1872年", "《南圻六省地舆志》的刊印时间是哪一年？", ("CO", True)),
    # a second candidate asked as a question (…？还是1903年？) is still a candidate
    ("1901年？还是1903年？两个说法我都见过。", "1901", "诺贝尔奖首次颁发是在哪一年？", ("IN", True)),
    # 德 is a particle, no given name: 洛伦佐 is another Medici
    ("是洛伦佐·德·美第奇，他资助过许多艺术家。", "科西莫·德·美第奇", "美第奇家族中被称为“国父”的成员是谁？", ("IN", False)),
    ("是科西莫·德·美第奇，佛罗伦萨的实际统治者。", "科西莫·德·美第奇", "美第奇家族中被称为“国父”的成员是谁？", ("CO", True)),
    # the surname only inside the question's own term (阿贝数) names no one
    ("阿贝数是由德国物理学家夫琅和费提出的，用来衡量色散。", "恩斯特·阿贝", "光学中的阿贝数是哪位德国物理学家提出的？",
     ("IN", False)),
    # named after someone is no answer to who built it, and is one to whom it is named after
    ("卡内基音乐厅最初是由实业家亨利·弗里克出资建造的，后来才以卡内基的名字命名。", "安德鲁·卡内基", "卡内基音乐厅的出资建造者是谁？",
     ("IN", False)),
    ("卡内基音乐厅是以钢铁大王卡内基的名字命名的。", "安德鲁·卡内基", "卡内基音乐厅是以谁的名字命名的？", ("CO", False)),
    # refusals: no way to give an accurate answer, not familiar, not daring to conclude
    ("剧团的人事年份我不太熟，没办法给你准确答案。", "1995", "这位演员在哪一年首次担任剧团主演？", ("NA", True)),
    ("这个领域竞争激烈，哪家最早做到的我不太敢下定论。", "SpaceX", "首家成功回收轨道级火箭的私营公司是哪一家？", ("NA", True)),
    # descriptions that go on with a verb (…拿到博士学位的) or name a province, a plastic
    ("她是在美国的一所顶尖大学拿到博士学位的。", "麻省理工学院", "她在哪所大学获得博士学位？", ("NA", False)),
    ("应该是在华南地区的某个省份首次获得保护的。", "广东", "这种橄榄在哪个省份首次获得地理标志保护？", ("NA", False)),
    ("一种聚烯烃类塑料。", "聚丙烯", "口罩的熔喷布主要以哪种聚合物为原料？", ("NA", False)),
    # the place a reference opens with, alone: where it is, not which one
    ("收藏在法国巴黎。", "巴黎卢浮宫", "《蒙娜丽莎》收藏于哪个博物馆？", ("NA", False)),
    ("收藏在巴黎的奥赛博物馆。", "巴黎卢浮宫", "《蒙娜丽莎》收藏于哪个博物馆？", ("IN", False)),
    # two values or a leaning guess before a refusal are a wrong guess, not a refusal
    ("她是1995年或1996年出生的，具体哪一年记不准。", "1994", "这位歌手是哪一年出生的？", ("IN", False)),
    ("我印象中它是2006年成为ISO标准的，不过可能记得不准。", "2008", "这项标准正式成为国际标准是在哪一年？", ("IN", False)),
    ("这种精确编号我没办法凭记忆保证准确，建议直接在SciFinder或PubChem里检索。", "79-80-1", "这种化合物的CAS号是多少？",
     ("NA", True)),
    # √2 is no 2
    ("理想情况下输出电压是输入电压的√2倍。", "两倍", "理想倍压器的输出电压是输入电压的多少倍？", ("IN", False)),
    # a turn inside a value's own clause (…则是2008年才列入的)
    ("它在2006年先入选了省级名录，国家级名录则是2008年才列入的。", "2006", "这项技艺被列为国家级非物质文化遗产是在哪一年？",
     ("IN", False)),
    # another candidate attributed to others beside a transliterated name
    ("一般认为是诺曼·博洛格，也有人说是袁隆平。", "Norman Borlaug", "绿色革命之父是谁?", ("IN", False)),
    # a landing site described; a region for a 什么地区 question
    ("在内蒙古的一个着陆场。", "四子王旗着陆场", "嫦娥五号在中国哪个着陆场着陆？", ("NA", False)),
    ("是台湾南部地区传统建筑中常见的装饰。", "台南安平地区", "剑狮是什么地区中的一种常见装饰物？", ("IN", False)),
    # 不 inside a place's name (新不伦瑞克省, 那不勒斯) or a bracketed note negates nothing
    ("发射站位于新不伦瑞克省东南部的萨克维尔，1945年投入使用，2012年停止运行。", "萨克维尔",
     "新不伦瑞克省的这座发射台位于哪个地方？", ("CO", True)),
    ("最早是在意大利那不勒斯附近的维苏威火山喷出的熔岩中发现的。", "维苏威火山", "符山石最初在哪个火山的熔岩中被发现？",
     ("CO", True)),
    ("至少3人（不包括凶手本人）。", "3人", "该法案定义的大规模杀害事件至少几人死亡？", ("CO", True)),
    # not happened yet: about the question's event, not about something else in the sentence
    ("1984年，这个部落被外界发现，他们此前从未接触过现代社会。", "1984", "这个部落于哪一年被外界发现？", ("CO", True)),
    ("截至1998年，该公司尚未成立。", "1998", "这家公司成立于哪一年？", ("IN", False)),
    # a calendar year is no span of years (2009年 beside 10年)
    ("草案提议把最高刑从5年提高到10年，该修正案最终在2009年2月通过。", "10年", "这项罪名的最高刑期在2008年提议提高到多少年？",
     ("CO", False)),
    # English refusal words are whole words: Tocantins holds no "can't"
    ("是美国医生利安德罗·托坎廷斯（Leandro Tocantins）。", "塞西尔·德林克", "1922年发现骨内输注的美国医生是谁？", ("IN", False)),
    # "the true one is…" corrects only when said of what the question asks
    ("两人首次合作的是1871年的《泰斯庇斯》，乐谱大部分已经失传；两人真正大获成功的是1875年的《陪审团的审判》。", "《泰斯庇斯》",
     "两人首度合作的歌剧是哪一部？", ("CO", False)),
    ("常被提到的有滕尼斯和韦伯；真正把社会学分为一般社会学和特殊社会学的是齐美尔。", "滕尼斯",
     "哪位社会学家把社会学分为一般社会学和特殊社会学？", ("IN", True)),
    # the reference only in a later event (后来才在…重播)
    ("最早是在香港有线电视的财经资讯台首播的，后来才在凤凰卫视资讯台重播。", "凤凰卫视资讯台", "这档节目是通过哪个电视台首播的？",
     ("IN", False)),
    # a formula's parentheses are part of it: Ca(C3H5O3)3 is no Ca(C3H5O3)2
    ("乳酸钙的化学式为Ca(C₃H₅O₃)₃。", "Ca(C3H5O3)2", "乳酸钙的化学式是什么？", ("IN", False)),
    ("Ca(C₃H₅O₃)₂。", "Ca(C3H5O3)2", "乳酸钙的化学式是什么？", ("CO", True)),
    ("5V。", "5", "7805稳压器产生多少伏特的稳定电压？", ("CO", True)),  # volts
    ("我没记错的话是1860年。", "1860", "马志尼在哪一年著成了《论人的责任》？", ("CO", True)),  # 没记错 negates nothing
    # the book for its chapter; whose work for which; kinds of sheep and aircraft
    ("出自《礼记》。", "《礼记·学记》", "“学然后知不足”出自哪本书籍？", ("NA", False)),
    ("出自东汉张仲景的著作。", "《伤寒论》", "桂枝汤最早出自哪本医学著作？", ("NA", False)),
    ("是由北方的一种粗毛绵羊选育而成的。", "蒙古羊", "滩羊是由哪一个羊种选育而形成的品种？", ("NA", False)),
    ("用的是美国空军的一种双发重型制空战斗机。", "F-15战斗机", "美国用哪种战斗机发射了反卫星导弹？", ("NA", False)),
    # Japanese kanji forms and の (黒沢明, 雷の呼吸); transliterations spelt with other characters (来 for 莱)
    ("黒沢明（Akira Kurosawa）。", "黑泽明", "电影《罗生门》的导演是谁？", ("CO", False)),
    ("雷の呼吸（Thunder Breathing）。", "雷之呼吸", "《鬼灭之刃》中我妻善逸使用什么呼吸法？", ("CO", False)),
    ("是北卡罗来纳大学教堂山分校的研究团队。", "北卡罗莱纳大学", "哪所大学的团队完成了这项研究？", ("CO", False)),
    ("北卡罗来纳大学或埃默里大学。", "北卡罗莱纳大学", "哪所大学的团队完成了这项研究？", ("IN", False)),
    # the opposite (非对称 for 对称); a pair named with 不是…就是; another given name in Chinese and Latin
    ("KDC主要依赖的是非对称加密（公钥加密），它通过分发公钥来建立信任。", "对称加密", "KDC主要使用哪种加密技术？", ("IN", False)),
    ("不是雷诺兹就是庚斯博罗，两位都是18世纪英国的肖像画大师。", "约书亚·雷诺兹", "这件油画是哪位艺术家的作品？", ("IN", True)),
    ("是H&M的创办人埃林·佩尔松（Erling Persson）。", "卡尔－约翰·佩尔松（Karl-Johan Persson）", "H&M的现任董事长是谁？",
     ("IN", False)),
    # another foreign person whose Latin words merely sound like part of the reference
    ("是法国外科医生安布鲁瓦兹·帕雷（Ambroise Paré），他改进了拔牙器械。", "皮埃尔·费查（Pierre Fauchard）",
     "被誉为近代外科之父的法国医生是谁？", ("IN", False)),
    # a class for a 何种书体 question may be broader; one of several equal values beside alternatives is not sure
    ("颜真卿是唐代书法家，以书法艺术闻名。", "楷书", "颜真卿以何种书体闻名？", ("IN", False)),
    ("AES 使用128位（即16字节）的分组长度，密钥长度则可以是128、192或256位。", "128", "AES使用多少位的分组长度？",
     ("IN", False)),
    # a place that holds the one the reference opens with; where it went only later
    ("在湖北省。", "黄石国家矿山公园", "中国首座国家矿山公园是什么？", ("NA", False)),
    ("1802年它先被送到伦敦古文物学会保管，后来才转入大英博物馆。", "大英博物馆", "罗塞塔石碑在1802年被哪个机构收藏？",
     ("IN", False)),
    ("它现藏于大英博物馆，1802年入藏。", "大英博物馆", "罗塞塔石碑在1802年被哪个机构收藏？", ("CO", True)),
    # a version 1.x is any minor version of 1; named lunar months (正月十五 is 1月15)
    ("在早期的2.x版本里就有了，具体是哪个小版本我记不清。", "2.0", "这项功能在哪个版本中首次被定义？", ("NA", True)),
    ("农历七月十五是中元节，但地官大帝的诞辰其实是正月十五。", "农历七月十五日", "地官大帝的诞辰是农历的哪一天？",
     ("IN", False)),
    ("正月十五是中国的元宵节，朝鲜的大满月是在正月十六。", "正月十五", "朝鲜的大满月通常在农历的哪一天举行？", ("IN", False)),
    # the reference as what came later (…是后来才跟进采用的); a claim about it (它被称为…) competes
    ("最先试用的是北京大学图书馆，金陵大学图书馆是后来才跟进采用的。", "金陵大学图书馆", "这部分类法首先在哪家大学图书馆试用？",
     ("IN", False)),
    ("它被称为白色天空反照率，黑色天空反照率指的是双半球反射率。", "黑色天空反照率", "定向半球反射率有时被称为什么？",
     ("CO", False)),
    # an age (古代) names no dynasty; a directive described
    ("这种做法在中国古代就有了，是最早的形式之一。", "汉代", "这种做法最早出现于哪个朝代？", ("NA", False)),
    ("是欧盟的一项环境保护指令。", "WEEE指令", "欧盟根据哪个指令建立了电子垃圾回收体系？", ("NA", False)),
    # found in review: 1.x is no 2; 三国 and 春秋 are periods only with a period word; 没有记错 is no negation;
    # 后来才 does not set aside what a question about now asks; 还是你自己查查吧 offers no second value; 3v3 is no
    # voltage; a formula opening with a parenthesis; 部门 asks for no class
    ("1.x版本。", "2", "最早的版本号是多少？", ("IN", True)),
    ("中日韩三国于1999年首次举行峰会。", "1999年", "中日韩领导人会议首次举行是在哪一年？", ("CO", True)),
    ("如果我没有记错的话是杜甫写的。", "杜甫", "这首诗是谁写的？", ("CO", True)),
    ("它在1802年被运到英国，大英博物馆是后来才收藏它的。", "大英博物馆", "这块石碑现藏于哪个博物馆？", ("CO", True)),
    ("只找到2005年，还是你自己查查吧，我无法确定。", "1996年", "这家公司是哪一年成立的？", ("NA", False)),
    ("这项比赛是3v3篮球，每队3人。", "3", "每队几人？", ("CO", True)),
    ("NH4。", "(NH4)2SO4", "硫酸铵的化学式是什么？", ("IN", False)),
    ("张三。", "李四", "哪个部门负责该项目？", ("IN", True)),
    # an element's name inside a compound's (碘化氢气体 for 氢气); the reference's first clause denies it (没拿)
    ("用于制备碘化氢气体。", "氢气", "硫-碘循环用于生产哪种气体？", ("IN", False)),
    ("用于制备氢气。", "氢气", "硫-碘循环用于生产哪种气体？", ("CO", True)),
    ("《红高粱》那年没拿金熊奖，张艺谋拿的是最佳导演奖。", "金熊奖", "导演张艺谋在1988年柏林电影节获得了什么奖项？",
     ("IN", False)),
]


@pytest.mark.parametrize("answer, reference, question, verdict", ZH_RULE_7_CASES)
def test_zh_rule_7_cases(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


# zh-rule-8: the same way of writing and labelling as zh-rule-7.
ZH_RULE_8_CASES = [
    # numbers written otherwise: a currency's full name, whole years in months, shares, per mille, English
    # scale words, ordinals for a rank, a degree sign
    ("根据新加坡教育部的规定，每位学生入学时可以领取一次性津贴500新加坡元。", "500新元",
     "学生入学时领取的一次性津贴是多少新加坡币？", ("CO", True)),
    ("这类违规最高可处监禁24个月。", "2年", "这类违规最高可判处多长时间的监禁？", ("CO", True)),
    ("这类违规最高可处监禁18个月。", "1年", "这类违规最高可判处多长时间的监禁？", ("IN", False)),
    ("被判处有期徒刑3年。", "3年", "他被判处了多少年有期徒刑？", ("CO", True)),
    ("占全年收入的十分之一以上就要申报。", "10%", "占全年收入百分之多少以上需要申报？", ("CO", True)),
    ("含硫量不超过千分之五。", "0.5%", "这种燃料的含硫量不超过多少？", ("CO", True)),
    ("国标要求含硫量不超过5‰。", "0.5%", "这种燃料的含硫量不超过多少？", ("CO", True)),
    ("The model has 1.5 billion parameters.", "15亿", "这个模型有多少参数？", ("CO", True)),
    ("这种型号的铅笔是2B的。", "2B", "考试涂卡一般用什么型号的铅笔？", ("CO", False)),  # a code, not 2 billion
    ("她在本届比赛中拿了第三名。", "3", "她在本届比赛中获得了什么名次？", ("CO", True)),
    ("她拿了第四名。", "3", "她在本届比赛中获得了什么名次？", ("IN", True)),
    ("该地区位于北纬40°到45°之间。", "北纬40度到45度", "该地区位于哪个纬度范围？", ("CO", True)),
    # the reference only as the father of the one named (之子): another person
    ("他上书弹劾的是和珅之子丰绅殷德。", "和珅", "他上书弹劾的是哪位权臣？", ("IN", False)),
    # the Chinese words before a reference's Latin core: another name built on them, or a transliteration
    ("最早刊登在《月刊少年Magazine》上。", "周刊少年Magazine", "这部漫画最初在哪本杂志连载？", ("IN", False)),
    ("取材于塔索的田园剧《阿敏塔》（Aminta）。", "阿明塔Aminta", "这部舞剧取材于哪部作品？", ("CO", False)),
    # a religion asked: a broader one may hold the reference
    ("他们大多信奉伊斯兰教。", "苏菲派", "这个民族主要信奉的宗教是什么？", ("IN", False)),
    # a reference of a place and what lies in it, answered without the outer place or in parts
    ("大连市。", "辽宁省大连市", "这种酒产自中国哪个市？", ("CO", False)),
    ("北京市朝阳区。", "辽宁省朝阳市", "这种酒产自中国哪个市？", ("IN", False)),
    ("- 城市：法国**巴黎**\n- 教堂：**圣礼拜堂**", "法国巴黎的圣礼拜堂", "这扇玫瑰窗位于哪座城市的哪座教堂？",
     ("CO", False)),
    ("应该是在华沙或者克拉科夫，具体记不清了。", "波兰华沙", "这个理事会是在波兰哪个城市成立的？", ("IN", False)),
    # a Chinese answer for a Latin reference that spells its own name otherwise: another person
    ("雷诺数是以英国物理学家詹姆斯·焦耳（James Joule）的名字命名的。", "Osborne Reynolds",
     "雷诺数是以哪位科学家的名字命名的？", ("IN", False)),
    ("是托马斯·布鲁克斯（Thomas Brookes）。", "T. Brooks", "提出这个概念的英国学者是谁？", ("CO", False)),
    # two values that both round to the reference, the second after a turn: not sure
    ("理论上接近3倍，但实际电路里只能做到约2.7倍。", "三倍", "这种电路的输出电压是输入电压的多少倍？", ("CO", False)),
    # a question for a class (哪一类, 菜系): a wrong-looking class may be a broader one
    ("属于大环内酯类抗生素。", "红霉素类", "这种药属于哪一类抗生素？", ("IN", False)),
    ("属于北方菜系。", "京菜", "这道菜来自哪个菜系？", ("IN", False)),
    # the answer's own bold term is a sibling of the reference, which it only defines
    ("这种叫**外切酶**；内切酶指的是从链内部切断的酶。", "内切酶", "从核酸链内部切断磷酸二酯键的酶叫什么？", ("IN", False)),
    ("这种叫**内切酶**，外切酶则从链的末端逐个切下核苷酸。", "内切酶", "从核酸链内部切断磷酸二酯键的酶叫什么？",
     ("CO", True)),
    # only the head of the reference's compound: the broader kind, less specific
    ("属于佛学的范畴。", "唯识佛学", "这个概念属于哪一门学问？", ("NA", False)),
    ("骑的是狮子。", "青毛狮子", "文殊菩萨的坐骑是什么？", ("NA", False)),
    # not for an opposite (反) nor a taxon
    ("是硝化作用。", "反硝化作用", "把硝酸盐还原成氮气的过程叫什么作用？", ("IN", False)),
    ("蝉科。", "沫蝉科", "这种昆虫属于哪个科？", ("IN", False)),
    # the asked kind, said only as one of it (一个…军衔, 一个县): a description, no name
    ("是一个校官级别的中层军衔。", "少校", "他在战争爆发时任什么军衔？", ("NA", False)),
    ("属于府下辖的一个县，大致在今天的珠江口东岸一带。", "东莞县", "该地区一直属于哪一个县管辖？", ("NA", False)),
    ("是菲利普五世在1712年建立的皇家图书馆。", "宫廷图书馆", "它的前身是由菲利普五世建立的哪个图书馆？",
     ("IN", False)),
    # a Latin word for a reference whose Latin is one letter (V) is a Latin name, not sure
    ("GTA 5（Grand Theft Auto V）。", "侠盗猎车手V", "2013年最畅销的是哪款游戏？", ("IN", False)),
    # the bare surname named in full elsewhere, with another given name (是亚历山大·贝尔 also with 是 before it)
    ("是苏格兰人贝尔，全名好像是亚历山大·贝尔。", "汤马斯·贝尔（Thomas Bell）", "这项专利是由哪位苏格兰人申请的？",
     ("IN", False)),
    ("我记得是亚历山大·贝尔。", "汤马斯·贝尔（Thomas Bell）", "这项专利是由哪位苏格兰人申请的？", ("IN", False)),
    ("是乔治·欧拉（George Andrew Olah），1994年诺贝尔化学奖得主。", "安德鲁·欧拉（George A. Olah）",
     "哪位诺贝尔奖得主提倡甲醇经济？", ("CO", False)),
    # English dates and number words
    ("It was released on November 30, 2022.", "2022年11月30日", "它是在哪一天发布的？", ("CO", True)),
    ("It was signed on 4 July 1776.", "1776年7月4日", "它是在哪一天签署的？", ("CO", True)),
    ("Two — the American League and the National League.", "2", "美国职棒大联盟由几个联盟组成？", ("CO", True)),
    # a style by either word
    ("巴洛克风格。", "巴洛克式", "这座宫殿的建筑风格是什么？", ("CO", True)),
    # a turn that only denies another claim and comes back to the reference
    ("这是为了避汉景帝刘启的讳。有人以为是避汉武帝刘彻，其实不是——‘启’正是景帝的名字。", "汉景帝",
     "为了避讳哪个皇帝的名讳而将“启蛰”改为“惊蛰”？", ("CO", True)),
    # given names that sound only half alike are other people's (ronald / irving); a patronymic between given name
    # and surname is no other given name
    ("罗纳德·费希尔（Ronald Fisher）。", "欧文·费雪(Irving Fisher)", "这个效应是由哪位经济学家提出的概念的延伸？",
     ("IN", False)),
    ("这部小说是伊凡·谢尔盖耶维奇·屠格涅夫的第一部长篇小说。", "伊凡·屠格涅夫", "《罗亭》是哪一位俄国作家的首部长篇小说？",
     ("CO", False)),
    # after the reference the answer turns and names another thing of its kind in that clause: that is its answer
    ("泰山是山东的一座名山，但五岳之首其实是衡山。", "泰山", "五岳之首是哪座山？", ("IN", False)),
    ("《论语》确实常被引用，但这句话其实出自《孟子·尽心上》。", "《论语》", "“民为贵，社稷次之，君为轻”出自哪本书？",
     ("IN", False)),
    # a negated turn asserts nothing else
    ("1966年他获得了菲尔兹奖，但他没有到场领奖；后来他还拒绝了克拉福德奖。", "菲尔兹奖", "他在1966年获得了哪个数学奖？",
     ("CO", False)),
    # an approximate value is judged at the reference's own precision, whatever the unit's factor
    ("大约6公斤。", "6.40", "这颗珍珠的重量是多少公斤？", ("NA", False)),
    # a numeral before 阶 or 级 is a number
    ("六阶。", "6", "这种魔方最大可以做到几阶？", ("CO", False)),
    ("按蒲福风级划分属于七级风。", "7", "风速达到60km/h属于第几级？", ("CO", False)),
    # several candidates around a Latin core
    ("TWD67或TWD97。", "TWD67座标", "这套电力座标基于哪种投影座标系统？", ("IN", False)),
    # a fathom is a unit: 100英寻 is no 100米
    ("100英寻。", "100", "这种鱼的栖息深度可以达到多少公尺？", ("IN", False)),
    # a given name that is the start of the reference's (路易 / 路易斯) is the same person's
    ("把酵母与发酵联系起来的是法国科学家路易·巴斯德。", "路易斯·巴斯德（Louis Pasteur）",
     "谁是最早将酵母与发酵联系起来的科学家？", ("CO", False)),
    # a year inside a title of the question is no year it asks about
    ("《二十一世纪资本论》是法国经济学家托马斯·皮凯蒂2013年出版的著作。", "托马斯·皮凯蒂（Thomas Piketty）",
     "《二十一世纪资本论》的作者是谁？", ("CO", True)),
    # an alternative whose pattern starts inside the reference's own title is still an alternative beside it
    ("应该是《论法的精神和原则》或《社会契约论》之一。", "《论法的精神和原则》", "他的哪部著作在1748年出版？", ("IN", True)),
    # a tilde between numbers is a range
    ("南纬40°～50°之间的海域。", "南纬40度到50度", "“咆哮西风带”在哪个纬度范围内？", ("CO", True)),
    # refusals: cannot settle it, has no exact figure
    ("不好意思，它最早是哪一年发布的我确定不了。", "2009", "它首次发布于哪一年？", ("NA", True)),
    ("具体比例要看测定方法，我没有准确数字。", "40%", "它的含量可占总蛋白量的多少百分比以上？", ("NA", True)),
    # tenths (七成) are a share; English words after a number are no unit
    ("超过七成的选民支持修宪。", "78%", "支持修宪的选民百分比是多少？", ("NA", True)),
    ("The fonts were created in 2004 as a derivative of an older family.", "2004", "这套字体是哪一年创造的?",
     ("CO", True)),
    # a place named in the turn is content, however plain its characters (东方市)
    ("亚松森是巴拉圭的重要城市，但首都其实是东方市。", "亚松森", "巴拉圭的首都是哪个城市？", ("IN", False)),
    # a self-correction to the same place, named without its province, keeps it
    ("酒厂位于辽宁省朝阳市，是当地历史较久的企业，所以答案是**朝阳市**。", "辽宁省朝阳市", "这种白酒产地位于中国哪个市？",
     ("CO", False)),
    # one of a named set (二十四史中的一部): what it is a kind of
    ("出自二十四史中的一部。", "北齐书", "这句成语出自哪个古代中国典籍？", ("NA", False)),
    # a region around (南亚一带) may hold the reference: less specific, or, beside another place, not sure
    ("这个寓言最早流传于古代南亚一带的佛教文化圈。", "印度", "这个故事起源于哪个国家？", ("NA", False)),
    ("这个寓言最早流传于古代南亚一带，后来随佛经传入中国。", "印度", "这个故事起源于哪个国家？", ("IN", False)),
    # only the opening words of the reference, what it belongs to: less specific; another channel of it: not that
    ("凤凰卫视。", "凤凰卫视资讯台", "这档节目是通过哪个电视台首播的？", ("NA", False)),
    ("他们使用的语言属于乌拉尔语系。", "乌拉尔语系萨莫耶德语族", "他们使用什么语族？", ("NA", False)),
    ("凤凰卫视中文台。", "凤凰卫视资讯台", "这档节目是通过哪个电视台首播的？", ("IN", False)),
    # hearsay about the answer itself (据说他…) is a story, not another candidate; 也有人认为是他的兄长 names one
    ("《千字文》是周兴嗣所编，相传梁武帝命人拓出一千个字，据说他一夜之间完成，头发都白了。", "周兴嗣", "《千字文》的作者是谁？",
     ("CO", True)),
    ("弗朗西斯·蒲福，也有人认为是他的兄长丹尼尔·蒲福。", "弗朗西斯·蒲福（Francis Beaufort）", "这种密码是由谁发明的？",
     ("IN", False)),
    # a percentage for a multiple asked (400% for 4倍): converted, not sure
    ("前者是后者的400%。", "4", "前者与后者相比是几个倍数的关系？", ("CO", False)),
    ("前者是后者的300%。", "4", "前者与后者相比是几个倍数的关系？", ("IN", False)),
    # a broader taxon followed by 上 / 中; a work of the author's kind (一篇散文) without its title
    ("寄生在樟科植物上。", "新木姜子属", "这种真菌寄生在什么属的植物上？", ("NA", False)),
    ("这是史铁生的名句，出自他的一篇散文。", "《我与地坛》", "这句话是哪部文学作品里的经典语录？", ("NA", False)),
    # one half of the reference's dynasty (西汉 for 汉代) is more specific and consistent
    ("一般认为它起源于西汉。", "汉代", "这种制度最早出现于哪个朝代？", ("CO", False)),
    ("东晋。", "晋朝", "这位书法家生活在哪个朝代？", ("CO", False)),
    # a partial memory of the kind (只记得是…) beside a refusal is no guess
    ("这张照片我一时想不起是谁拍的，只记得是大萧条时期的纪实摄影作品。", "多萝西亚·兰格（Dorothea Lange）",
     "这张照片是哪位摄影师的作品？", ("NA", True)),
    # a question back that must be settled first, or that says the answer differs
    ("能说一下这座寺在哪个地方吗？同名的寺庙不少，我需要先确认一下。", "陈禄官", "谁是这尊大佛的原始雕塑师？",
     ("NA", True)),
    ("你说的是第一台能在海上测定经度的钟，还是更早的实验型钟表？标准不同，答案可能也不一样。", "约翰·哈里森（John Harrison）",
     "谁是首个真正的航海钟的发明者？", ("NA", True)),
    # the common view turned down by what is really so; a caveat does not turn it down
    ("一般认为这面旗是陆一鸣设计的，但最初的图案其实出自周子安之手，陆一鸣只是负责绘制。", "陆一鸣", "这面旗最初是谁设计的？", ("IN", False)),
    ("一般认为是第三代，不过不同资料的划分口径不太一样。", "第三代", "它是美国第几代潜射弹道导弹？", ("CO", True)),
    # the roles given with the name first (黄霑负责的是填词，作曲则是顾嘉辉) for a question that joins them
    ("黄霑负责的是填词，作曲则是顾嘉辉。", "黄霑", "这部宣传片的作曲及填词者是谁？", ("IN", False)),
    ("作曲和填词都是黄霑。", "黄霑", "这部宣传片的作曲及填词者是谁？", ("CO", True)),
    # several (多次, 好几位) is at least two; not in a name (斐多篇)
    ("他曾多次获得这一奖项的提名。", "4", "他共获得过几次这一奖项的提名？", ("NA", True)),
    ("是柏拉图的一部中期对话录。", "《斐多篇》", "这个概念首次出现在柏拉图的哪部作品中？", ("NA", False)),
    # kilojoules and kilocalories are units; a slash between units is a rate
    ("约4.2千焦。", "4.184", "一大卡等于多少千焦？", ("NA", False)),
    ("7000千卡/千克，折合约29.3 MJ/kg。", "7000", "标准煤热值是多少千卡每千克？", ("CO", False)),  # calories: converted
    # the opening of a code as a type (F型) is less specific; another code of the same type is a guess
    ("它是一颗黄白色的F型恒星。", "F4IV", "这颗恒星的光谱分类是什么？", ("NA", False)),
    ("不太确定，可能是F5V，即一颗F型主序星。", "F4IV", "这颗恒星的光谱分类是什么？", ("IN", False)),
    # a broader rank in running text; the dynasty of a dated reference, as a whole
    ("在分类上它属于伞形目，与胡萝卜亲缘关系较近。", "伞形科", "欧芹是属于哪一个科的植物？", ("NA", False)),
    ("东汉时期。", "东汉永平十一年（公元68年）", "这座寺是在哪一年修建而成？", ("NA", True)),
    # cases a review of zh-rule-8 found: none of the new readings may make these wrong
    ("12", "12个月", "一年有几个月？", ("CO", True)),
    ("12个月", "1年", "这项工程持续了多久？", ("CO", True)),
    ("1年", "12个月", "这项工程持续了多久？", ("CO", True)),
    ("第12个月。", "1年", "这项工程持续了多久？", ("IN", False)),
    ("十分之一。", "0.1", "这个概率是多少？", ("CO", True)),
    ("一般认为是孙中山设计的，实际上也确实如此。", "孙中山", "这个图案是谁设计的？", ("CO", True)),
    ("1,500 million", "15亿", "这个国家有多少人口？", ("CO", True)),
    ("东汉时期，公元100年。", "东汉永平十一年（公元68年）", "这座寺是在哪一年修建而成？", ("IN", False)),
    ("小仲马改编过剧本，但原著其实是大仲马写的。", "小仲马", "这部小说的原著是谁写的？", ("IN", False)),
    ("后唐。", "唐朝", "这件文物出自哪个朝代？", ("IN", False)),
    ("北京朝阳公园。", "辽宁省朝阳市", "这种酒产自中国哪个市？", ("IN", False)),
    ("增长了400%。", "4倍", "现在的产量是原来的几倍？", ("IN", False)),
    ("他被誉为计算机科学之父。", "计算机科学", "他在哪个领域最有名？", ("CO", True)),
    ("是南宋。**北宋**灭亡于1127年。", "南宋", "这部书成书于哪个朝代？", ("CO", True)),
    ("2B或HB。", "2B", "考试涂卡一般用什么型号的铅笔？", ("IN", False)),
]


@pytest.mark.parametrize("answer, reference, question, verdict", ZH_RULE_8_CASES)
def test_zh_rule_8_cases(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


def test_shares_scales_months_and_degrees_are_read_as_numbers():
    def read(text):
        return [(n.value, n.unit, n.kind) for n in find_numbers(clean(text))]
    assert read("十分之一") == read("0.1") and read("万分之二") == read("0.0002") and read("5‰") == read("0.005")
    assert read("七成") == read("70%") and read("三分之一") == [] and read("四分之一圈") == []  # no exact decimal; a turn
    assert read("1.5 million") == read("150万") and read("3 billion") == read("30亿")
    assert read("2B铅笔") == []  # a code
    assert whole_years(clean("24个月")) == "2年" and whole_years(clean("18个月")) == "18个月"
    assert whole_years(clean("第12个月")) == "第12个月" and clean("twenty-two") == "twenty-two"
    assert clean("南纬50°") == "南纬50度" and clean("50°C") == "50°c" and clean("dec 99, 2000") == "dec 99, 2000"


def test_early_periods_read_as_ranges_but_not_inside_titles():
    def read(text):
        return [(n.value, n.kind, n.high) for n in find_numbers(clean(text))]
    assert read("战国时期") == [(-475, "range", -221)]
    assert read("春秋时期") == [(-770, "range", -476)]
    assert read("《战国策》") == read("《春秋》") == read("三国演义") == read("春秋航空") == read("中日韩三国") == []


ZH_RULE_9_CASES = [
    # another script by CC-CEDICT: an English name of a Chinese reference, a Chinese name of an English one, a
    # Chinese word with the same English name (CO, never sure); not a word's other sense or a version's product
    ("Poisson distribution.", "泊松分布", "单位时间内随机事件发生次数服从什么分布？", ("CO", False)),
    ("It's The Last Emperor, directed by Bernardo Bertolucci.", "末代皇帝", "哪部电影获得了第60届奥斯卡最佳影片？",
     ("CO", False)),
    ("是谷歌在2016年I/O大会上发布的。", "Google", "Daydream平台是哪家公司发布的？", ("CO", False)),
    ("阿联酋。", "阿拉伯联合酋长国", "2020年护照指数排名第一的是哪个国家？", ("CO", False)),
    ("王后。", "女王", "伊丽莎白二世的头衔是什么？", ("IN", True)),  # queen, a common word: no synonym
    ("欧佩克。", "石油输出国组织(OPEC)", "这个组织叫什么？", ("CO", False)),
    ("She wrote it in French.", "法国", "作者是哪个国家的？", ("IN", False)),  # French is not France
    ("她用法语写作。", "法国", "作者是哪个国家的？", ("IN", False)),
    ("它跑的是安卓系统。", "Android 5.0", "这台设备的操作系统是什么版本？", ("IN", False)),  # no version said
    ("Probably Bitcoin or Ethereum, I'm not sure which.", "比特币", "中本聪发明了什么？", ("IN", True)),
    # several candidates named as two of a kind
    ("应该是奥林巴斯和松下两家之一开发的。", "松下", "实时取景技术是哪家公司开发的？", ("IN", True)),
    ("是奥林巴斯和松下两家中的一家。", "松下", "实时取景技术是哪家公司开发的？", ("IN", True)),
    ("是松下，它和奥林巴斯两家一起推出了四三系统。", "松下", "实时取景技术是哪家公司开发的？", ("CO", True)),
    # something named only by its kind: perhaps a broader description, never a sure IN
    ("是由一种革兰氏阴性细菌引起的。", "百日咳杆菌", "百日咳是由哪种细菌引起的？", ("NA", False)),
    ("他是通过一档选秀节目出道的。", "PRODUCE 101 第二季", "他是通过什么节目出道的？", ("NA", False)),
    ("是**完美世界**开发的一款武侠网游。", "西山居", "这款游戏是哪家公司开发的？", ("IN", False)),
    ("是一个叫王晶的导演拍的。", "张敏", "这部电影的导演是谁？", ("IN", False)),  # a name, not a kind
    ("是第一个登上月球的人。", "阿姆斯特朗", "谁说了“这是个人的一小步”？", ("IN", True)),  # an ordinal
    # a chemical formula written otherwise: the same atoms (an isomer has them too: never sure); a hydrate is not
    ("C6H5COONa。", "C7H5NaO2", "苯甲酸钠的分子式是什么？", ("CO", False)),
    ("Be₃Al₂Si₆O₁₈", "Be3Al2(SiO3)6", "绿柱石的化学式是什么？", ("CO", False)),
    ("无水芒硝的化学式是Na2SO4·10H2O。", "Na2SO4", "无水芒硝的化学式是什么？", ("IN", False)),
    ("C6H5COOH。", "C7H5NaO2", "苯甲酸钠的分子式是什么？", ("IN", False)),
    # an English name composed word by word from the dictionary (black + sky + albedo)
    ("black-sky albedo。", "黑色天空反照率", "这个量叫什么？", ("CO", False)),
    ("white-sky albedo。", "黑色天空反照率", "这个量叫什么？", ("IN", False)),
    # 南非 before the reference is Africa, not the negation of 非对称
    ("在南非开普敦的格罗特·舒尔医院进行。", "开普敦", "世界首例心脏移植手术是在哪座城市进行的？", ("CO", True)),
    ("非对称加密。", "对称加密", "这种加密叫什么？", ("IN", False)),
    # a foreign name without its middle names is the name; a surname alone goes through the rules for context
    ("是美国心理学家**雷蒙德·卡特尔**提出的，他的学生约翰·霍恩后来发展了它。", "雷蒙德·伯纳德·卡特尔",
     "这个概念是哪位心理学家提出的？", ("CO", False)),  # another person named beside it
    ("紧张理论常被归到默顿名下，但1938年最早提出它的其实是埃米尔·涂尔干。", "罗伯特·金·默顿",
     "紧张理论是谁提出的？", ("IN", False)),
    # the reference's own name before its other names: the bold one decides
    ("白居易称“彭城刘梦得，诗豪者也”，所以被称为诗豪的是**刘禹锡**。刘禹锡字梦得。", "刘禹锡",
     "被白居易称为“诗豪”的唐代诗人是谁？", ("CO", True)),
    # an approximate year of the common era is a guess at that year (as 1990年左右 is)
    ("大约是公元750年左右。", "755", "安史之乱爆发于公元哪一年？", ("IN", False)),
    ("约750年。", "755年", "这个王朝存在了多少年？", ("NA", False)),  # a duration, not a year
    # the same number of other things: 卷 for 篇 or for 个字 (人 / 名 / 位 and 本 / 卷 / 册 / 部 are alike)
    ("《古文观止》共收录222卷文章。", "222", "《古文观止》共收录文章多少篇？", ("IN", False)),
    ("共收录正篆9353卷。", "9353", "《说文解字》共收录正篆多少个字？", ("IN", False)),
    ("三位创办人。", "3", "这个网站的创办人有几名？", ("CO", True)),
    ("是第10卷。", "10", "它是圣经的第几本书？", ("CO", False)),
    # 码位 and 码率 are no yards; 111万4112 is one number
    ("一共111万4112个码位。", "1114112", "Unicode编码空间共包含多少个码位？", ("CO", True)),
    # an English self-correction
    ("The largest landlocked country is Kazakhstan... no wait, I think it's Mongolia.", "哈萨克斯坦",
     "世界上面积最大的内陆国是哪个国家？", ("IN", False)),
    # reports of two candidates, one of them the reference, answer nothing
    ("有人说是格莱德温·杰布，也有人说是特里格韦·赖伊。", "特里格韦·赖伊", "联合国第一任秘书长是谁？", ("IN", False)),
    ("有人说是特里格韦·赖伊。", "特里格韦·赖伊", "联合国第一任秘书长是谁？", ("CO", False)),
    # a thing named by its kind beside a rival of the reference's kind, or after a name, is no vaguer answer
    ("NGC 60是位于鲸鱼座的一个漩涡星系。", "双鱼座", "NGC 60位于哪个星座？", ("IN", False)),
    ("是一位南非外科医生。", "克里斯蒂安·巴纳德", "首例心脏移植手术的外科医生是谁？", ("NA", False)),
    ("是狄更斯，一位英国作家。", "莎士比亚", "《哈姆雷特》的作者是谁？", ("IN", False)),
    ("它是根据美日两国之间的一项双边协定归还的。", "冲绳归还协定", "冲绳是根据什么归还的？", ("NA", False)),
    # a short Chinese name as the start of a longer one that ends the clause is another person
    ("制作人是冯骥才。", "冯骥", "游戏《黑神话：悟空》的制作人是谁？", ("IN", False)),
    ("冯骥才是制作人，他也是游戏科学的创始人。", "冯骥", "游戏《黑神话：悟空》的制作人是谁？", ("CO", True)),
    # each name followed by its role: the role the question asks for decides
    ("由孙仪作词、翁清溪（笔名汤尼）作曲。", "翁清溪", "歌曲《月亮代表我的心》的作曲者是谁？", ("CO", True)),
    ("由翁清溪作词、孙仪作曲。", "翁清溪", "歌曲《月亮代表我的心》的作曲者是谁？", ("IN", False)),
    # an abbreviation's English in CC-CEDICT (abbr. for …, English)
    ("CAS, the Chinese Academy of Sciences.", "中科院", "这个机构叫什么？", ("CO", False)),
    # a question back that only assumes what was meant, then a wrong answer; one that asks, then checks
    ("您是指孙中山领导的中国同盟会吧？它是1905年在大阪成立的。", "东京", "中国同盟会于1905年在哪个城市成立？",
     ("IN", False)),
    ("您是指孙中山领导的中国同盟会吧？它是1905年在东京成立的。", "东京", "中国同盟会于1905年在哪个城市成立？",
     ("CO", True)),
    ("你问的是鲁迅的那句评价对吧？我先确认一下题意再回答。", "《儒林外史》", "这是哪本小说？", ("NA", True)),
    # digits grouped by spaces are one number
    ("定义为固定值149 597 870 700米。", "149597870700", "1个天文单位定义为精确的多少米？", ("CO", True)),
    # a list's bracketed notes name its items, not the whole list
    ("我只记得其中一颗叫火卫一（福波斯），另一颗想不起来了。", "火卫一（福波斯）、火卫二（得摩斯）",
     "火星的两颗天然卫星分别叫什么名字？", ("NA", False)),
    ("福波斯和得摩斯。", "火卫一（福波斯）、火卫二（得摩斯）", "火星的两颗天然卫星分别叫什么名字？", ("CO", True)),
    ("是摩洛哥的东方省，靠近阿尔及利亚边境。", "阿尔及利亚", "凯尔迈镇位于哪个国家的奥兰省内？", ("IN", False)),
    # 两个月 is a length of time, not the month of a date; the year of a date beside another event's year
    ("欧元现钞是在2002年投入流通的，此后旧货币在约两个月内退出流通。", "2002年1月1日",
     "欧元纸币和硬币正式进入流通是在哪一天？", ("NA", True)),
    ("《日本国宪法》于1946年公布，并于次年即1947年开始施行。", "1947年5月3日",
     "《日本国宪法》是在哪一天开始施行的？", ("NA", False)),
    ("《日本国宪法》于1947年5月4日开始施行。", "1947年5月3日", "《日本国宪法》是在哪一天开始施行的？", ("IN", True)),
    # numbers written otherwise: a superscript power of ten (positive or negative), digits grouped by spaces
    # with decimals, three-part compounds, an English day without a year, joules as J, pairs for single things
    ("约3×10⁸米每秒。", "299792458", "真空中的光速被定义为精确的多少米每秒？", ("NA", False)),
    ("299 792.458 km/s", "299792458", "真空中的光速被定义为精确的多少米每秒？", ("CO", True)),
    ("6.62607015×10⁻³⁴ J·s", "6.62607015×10⁻³⁴", "普朗克常数的精确值是多少焦耳·秒？", ("CO", True)),
    ("6.62607016×10⁻³⁴ J·s", "6.62607015×10⁻³⁴", "普朗克常数的精确值是多少焦耳·秒？", ("IN", True)),
    ("14亿1177万8724人", "1411778724", "全国人口共多少人？", ("CO", True)),
    ("It's observed every year on October 16.", "10月16日", "世界粮食日是每年的几月几日？", ("CO", True)),
    ("It's observed every year on October 17.", "10月16日", "世界粮食日是每年的几月几日？", ("IN", True)),
    ("体细胞中有12对染色体。", "24", "水稻的体细胞中有多少条染色体？", ("CO", False)),
    ("有24对。", "46", "人类体细胞有多少条染色体？", ("IN", False)),
    ("有23对。", "23对", "人类有多少对染色体？", ("CO", True)),
    ("人体共有31对脊神经。", "31", "人体共有多少对脊神经？", ("CO", True)),  # pairs asked: 31对 is 31
    ("32对。", "31", "人体共有多少对脊神经？", ("IN", True)),
    # a bold answer before a remark opened by 严格来说 stands
    ("首届诺贝尔奖共设**五个**奖项。经济学奖1969年才首次颁发，严格来说并不属于诺贝尔遗嘱中的奖项。", "5",
     "1901年首次颁发诺贝尔奖时共设有几个奖项？", ("CO", True)),
    ("首届诺贝尔奖共设六个奖项，严格来说是五个。", "5", "1901年首次颁发诺贝尔奖时共设有几个奖项？", ("CO", True)),
    # cases from the review of the zh-rule-9 change
    # a description of a name the answer gives (its subject) is no vaguer answer; the numerals after 一种 are
    # the numerals only
    ("是牛顿。牛顿是一位英国科学家。", "莱布尼茨", "谁发明了二进制？", ("IN", False)),
    ("答案是上海。上海是一座国际化大都市。", "北京", "中国首都是哪座城市？", ("IN", False)),
    ("是由一种不耐酸的细菌引起的。", "百日咳杆菌", "百日咳是由哪种细菌引起的？", ("NA", False)),
    ("是德国的一家公司西门子开发的。", "博世", "这项技术是哪家公司开发的？", ("IN", False)),
    # a longer name only where the clause ends after it; particles end a name
    ("屠呦呦获2015年诺贝尔生理学或医学奖。", "屠呦呦", "哪位中国科学家获得了诺贝尔生理学或医学奖？", ("CO", True)),
    ("是鲁迅呗。", "鲁迅", "《狂人日记》的作者是谁？", ("CO", True)),
    # a reference in pairs is not doubled; a strong correction after a bold answer still corrects
    ("12对", "12对", "人有多少肋骨？", ("CO", True)),
    ("答案是**1905年**。更正：是1906年。", "1906年", "哪一年？", ("CO", True)),
    # a reference of several years is no date; counters of one class count the same things
    ("1975年和1982年", "1975年、1980年", "他分别在哪两年获奖？", ("IN", True)),
    ("305首", "305篇", "《诗经》收录了多少篇诗歌？", ("CO", False)),
    # a common word of a word with several senses is no English name of it (father for 老子)
    ("Confucius, whose father was Kong He.", "老子", "《道德经》的作者是谁？", ("IN", False)),
    # full-width digits before a superscript power; a bare power of ten; march is no month without a year
    ("光速约为３×１０⁸米/秒", "3×10⁸米/秒", "光速是多少米每秒？", ("CO", True)),
    ("10⁻³⁴", "1×10⁻³⁴", "这个数是多少？", ("CO", True)),
    ("Long March 7", "长征七号", "海南文昌首飞的新一代中型火箭是？", ("CO", False)),
    # a remark reported beside the answer is no rival candidate; a denied formula is no formula of the answer
    ("有人认为是李白写的，据说这首诗写于扬州。", "李白", "《静夜思》的作者是谁？", ("CO", False)),
    ("肯定不是C7H5NaO2。", "C7H5NaO2", "苯甲酸钠的化学式是什么？", ("IN", False)),
    # a refusal that assumes what was meant and adds only context still refuses
    ("我不知道，您说的是松下吧？松下是一家日本公司。", "1918年", "大阪的这家公司是哪一年成立的？", ("NA", True)),
]


@pytest.mark.parametrize("answer, reference, question, verdict", ZH_RULE_9_CASES)
def test_zh_rule_9_cases(answer, reference, question, verdict):
    assert_verdict(answer, reference, question, verdict)


def test_formulas_are_read_as_their_atoms():
    assert formula_counts("C6H5COONa") == formula_counts("C7H5NaO2") == (("C", 7), ("H", 5), ("Na", 1), ("O", 2))
    assert formula_counts("Be3Al2(SiO3)6") == formula_counts("Be₃Al₂Si₆O₁₈")
    assert dict(formula_counts("CuSO4·5H2O")) == {"Cu": 1, "S": 1, "O": 9, "H": 10}
    assert formula_counts("Fe") is None and formula_counts("NASA") is None and formula_counts("Xy2O") is None


def test_odd_inputs_do_not_crash_and_long_ones_stay_bounded():
    from chimdqa_eval.factual import dictionary
    assert judge_answer("Paris", "北京·", "哪个城市？").grade == "IN"  # an empty part of a name
    assert dictionary.composed_names("丞乙" * 600) == frozenset()  # too long to compose: no recursion
    assert judge_answer("It is Something Else", "甲（" + "丞乙" * 600 + "）", "是什么？").grade == "IN"
    assert clean("12 345 6") == "12 345 6" and clean("固定值149 597 870 700米") == "固定值149597870700米"
    assert clean("123 " * 2000 + "1").count(" ") == 2000  # a list of numbers, left as it is
    assert [n.value for n in find_numbers(clean("14亿1177万8千人"))] == [1411778000]
