"""Reading the question: what it asks for — a place, a city, a region, a person, a class, a book, a name of some
kind, a rank, pairs — the unit it asks in (_question_unit), the kind of thing it names (_asked_kind) and the option
it offers besides the reference (_other_option). The rules read a question through these patterns, never their own."""
from __future__ import annotations

import re
from functools import lru_cache

from chimdqa_eval.factual import rules
from chimdqa_eval.factual import vocabulary as vocab
from chimdqa_eval.factual.gate import gated
from chimdqa_eval.factual.reading_reference import Reference


_CITY_QUESTION = re.compile(r"城市|哪个市|哪座城|哪个县|哪个镇")
# Up to four characters between a question word and the kind it asks for (哪个法国地区, 哪一类动物门), not a
# person, a time or a count (哪位乡村教师, 哪一年建镇, 哪项运动).
_ASKED_GAP = r"(?:(?![的位年时天项])[\u4e00-\u9fff]){0,4}?"
_PLACE_QUESTION = re.compile(r"哪里|何地|何处|哪个地方|城市|哪座城|哪个市|哪个省|哪个县|哪个国家|哪国|位于|在哪|发源地|首都|省会"
                             r"|哪一?(?:个|座)?" + _ASKED_GAP + r"(?:城镇|省份|州|镇|乡|村|岛|港口)(?=的|[?,。]|$|境内|内|上)")
# A question for a region: a region answered may be a broader one or another one (东南亚, 东非 for 印度尼西亚群岛).
_REGION_QUESTION = re.compile(r"(?:哪一?个?|什么)" + _ASKED_GAP + r"(?:地区|区域)")
_PERSON_QUESTION = re.compile(vocab.pattern("person_question"))

# A question for a name of some kind (字, 号, 笔名, 原名, 别称, 谥号…), which another of the same person's names
# need not be.
_ASKS_NAME = re.compile(r"[字号名称](?:是|为|叫)?(?:什么|何|啥)|叫什么|自号|自称")

_QUESTION_UNIT = re.compile(r"(?:多少|几个?|哪一?个?|何)\s*((?:万亿|千万|百万|十万|亿|万|千|百)?(?:" + rules._UNIT_WORDS + "))"
                            r"|单位[是为:\s(]*(" + rules._UNIT_WORDS + ")")


@lru_cache(maxsize=4096)  # asked once per answer; a question has many answers
def _question_unit(cleaned_question: str) -> str:
    """The unit a question asks in (多少公里 -> 公里, 哪一年 -> 年, 多少亿元 -> 亿元), as written; '' if none."""
    m = _QUESTION_UNIT.search(cleaned_question)
    return (m.group(1) or m.group(2)) if m else ""


# A question for the class something belongs to: a wrong-looking class may be a broader one that holds the reference.
_CLASS_QUESTION = gated(r"(?:哪|什么|何)一?(?:个|种|类)?" + _ASKED_GAP +
                             r"(?:类|(?<!部)门|纲|目|科|学科|类别|范畴|领域|学派|流派|宗派|教派|族|运动|思潮|书体|(?<=[菜语])系)"
                             r"(?=的|[?,。]|$|闻名|著称|动物|植物|生物)"  # 哪一门动物？, 哪个艺术运动的…; not 哪个部门负责
                             r"|(?:宗教|教派|宗派|信仰)(?:是|为)(?:什么|哪)"  # 信奉的宗教是什么？ 基督教 for 科普特正教会
                             r"|(?:哪|何)一?类|(?:什么|哪种|哪个)类型")  # 哪一类抗生素？ β-内酰胺类 for 头孢菌素

_BOOK_QUESTION = re.compile(r"(?:哪|什么)一?(?:本|部|篇)?[^,;。?]{0,4}?(?:书|著作|典籍|书籍|作品|经典)|出自哪")


_ASKED_NOUN = re.compile(r"(?:什么|哪一?[个种位座家所类项部本条支名]?)([\u4e00-\u9fff]{1,3}?)"
                         r"(?=[?,。]|$|管辖|的|呢|是|在|上|中|里|内)")


@lru_cache(maxsize=4096)
def _asked_kind(question: str) -> str:
    """The kind of thing the question asks for (任什么军衔 -> 军衔); '' when it asks for no kind."""
    asked = _ASKED_NOUN.search(question)
    return asked.group(1) if asked else ""


_OPTIONS = re.compile(r"(?:是|为|在|属于|用|选)([^,;。?是为]{1,16}?)还是([^,;。?]{1,16}?)(?:呢)?\?")


def _other_option(ref: Reference, question: str) -> str:
    """The key of the option a question offers besides the reference (吸虫是无体腔动物还是假体腔动物？ for
    无体腔动物: 假体腔动物); '' when it offers none or the reference is not one of them."""
    m = _OPTIONS.search(question)
    if m is None:
        return ""
    first, second = rules.key(m.group(1)), rules.key(m.group(2))
    if not first or not second or first in second or second in first:
        return ""
    forms = ref.forms or (ref.main,)
    if any(f and f in first for f in forms) and not any(f and f in second for f in forms):
        return second
    if any(f and f in second for f in forms) and not any(f and f in first for f in forms):
        return first
    return ""


# A question for a place in an order: 第几任, 获得了什么名次, 排名第几, 属于哪个族号 (第2名, 第18族 answer it).
_RANK_QUESTION = re.compile(r"第(?:几|多少)|名次|排名|位次|排行|族号")

_PAIRS_ASKED = re.compile(r"(?:多少|几)(?:对|双)")
