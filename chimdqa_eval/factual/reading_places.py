"""Places in an answer, read with the place table (places.py, data/places.tsv): _place_verdict grades an answer that
names known places but not the reference (a broader place: NA; one beside it: IN; one inside it: CO, unsure);
_place_parts finds a reference made of a place and what lies in it; _inside_other_place, _names_a_city and
_place_of_it tell a mention of the reference from a longer place name, another city or only where the thing is."""
from __future__ import annotations

import re

from chimdqa_eval.factual import places, rules
from chimdqa_eval.factual import vocabulary as vocab
from chimdqa_eval.factual.decision import Verdict
from chimdqa_eval.factual.gate import gated
from chimdqa_eval.factual.reading_answer import _Answer, _refusal
from chimdqa_eval.factual.reading_match import _alias_risk, _text_match
from chimdqa_eval.factual.reading_reference import Reference
from chimdqa_eval.factual.reading_text import _has_content, _starts
from chimdqa_eval.factual.rules import ALTERNATIVES


_BROADER_PLACE = re.compile(r"[\u4e00-\u9fff]{2,}(?:省|自治区)")
_REGION = gated(vocab.pattern("regions"))

_PLACE_WORDS = re.compile(r"自治区|特别行政区|自治州|地区|位于|地处|属于|[省市县区州盟在]")
_AREA = re.compile(vocab.pattern("areas"))
_PLACE_VERDICT_RE1 = re.compile(r"[\u4e00-\u9fff](?:市|县|区|镇)")


def _place_verdict(ref: Reference, answer: _Answer, question: str) -> Verdict | None:
    """The grade of an answer naming known places (places.tsv) but not the reference, a known place; None when
    the table cannot tell, a name is ambiguous or the answer refuses. Only places that contain the reference
    (瑞士 or 法国瑞士 for 日内瓦): less specific, NA. A place of its size or broader outside it (法国 for 日内瓦,
    台北市 for 高雄市, 河南 for 西安): IN, sure when it is the answer's one claim (places on one chain) and
    nothing else is said. Places inside it and none outside (临潼区 for 西安): more specific, CO, never sure.
    The reference by another name of the table (西贡 for 胡志明市): CO. Places the question names do not
    count."""
    target = places.place(ref.main)
    refusal = _refusal(answer)
    if target is None or refusal in ("refusal", "apology") or answer.asked:
        return None
    found = places.places_in(answer.affirmed)
    named = [places.place(n) for n in dict.fromkeys(found) if n not in question]
    if not named or None in named:
        return None
    broader = [p for p in named if places.within(p, target)]
    inside = [p for p in named if places.within(target, p)]
    outside = [p for p in named if p not in broader and p not in inside
               and places.RANK[p.level] <= max(places.RANK[target.level], places.RANK["city"])]
    residue = answer.affirmed_key
    for name in sorted(found, key=len, reverse=True):
        residue = residue.replace(name, "|")
    if _PLACE_VERDICT_RE1.search(residue):  # a place the table lacks (江油市): it cannot tell
        return None
    plain = refusal in ("", "guess") and not answer.alternative
    said_more = _has_content(_PLACE_WORDS.sub("", residue.replace("|", "")), question)
    if target in named:  # another name the table knows (西贡 for 胡志明市, 延边 for 延边朝鲜族自治州)
        if said_more:  # 阿里巴巴 for 阿里地区: inside a longer word; the name rules decide
            return None
        consistent = all(places.within(p, target) or places.within(target, p) for p in named)
        return Verdict("CO", plain and not said_more, "place_alias") if consistent else None
    if len(broader) == len(named):  # a hedged broader place is still less specific
        return Verdict("NA", plain and not said_more, "broader_place")
    if outside:  # sure unless more is said that may be another name of the reference (Genève, 靠近法国)
        mention = _text_match(ref, rules.key(answer.whole), answer.whole)  # 是京都还是东京？…答案是京都
        one_claim = all(places.within(a, b) or places.within(b, a) for a in named for b in named) \
            and not (mention and not _inside_other_place(ref, answer.whole, mention[0])) \
            and not _AREA.search(answer.affirmed)  # 南亚一带: a region around, perhaps holding it
        return Verdict("IN", plain and one_claim and (not said_more or _alias_risk(ref, answer, question)
                                                       in ("", "place_level")), "other_place")
    if inside and len(broader) + len(inside) == len(named):
        return Verdict("CO", False, "narrower_place")
    return None


def _name_ends(answer_key: str, name: str) -> bool:
    """The name ends a word: N(?:的|$) is found (not 朝阳公园, 朝阳门), with no pattern compiled per name."""
    return name + "的" in answer_key or answer_key.endswith(name) or answer_key.endswith(name + "\n")


def _place_parts(ref: Reference, answer_key: str) -> bool:
    """A reference made of a known place and what lies in it (浙江乌镇, 意大利博洛尼亚的圣多明我圣殿) whose parts
    the answer names in order, perhaps with levels between them (浙江省嘉兴市桐乡市乌镇) or in separate lines
    (城市：博洛尼亚 … 圣殿：圣多明我圣殿); the outer place may be left out when the rest opens with a known place
    inside it (朝阳市 for 辽宁省朝阳市, 东京 for 日本东京都, 博洛尼亚的圣多明我圣殿)."""
    main = ref.main
    if places.place(main):
        return False
    for cut in (2, 3, 4):
        head, tail = places.place(main[:cut]), main[cut:]
        if head is None or len(tail) < 2:
            continue
        at = [answer_key.find(n) for n in (head.name, *head.aliases) if n in answer_key]
        parts = [p for p in tail.split("的") if p]
        inner = places.place_spans(tail)
        inner = places.place(inner[0][2]) if inner and inner[0][0] == 0 else None
        if inner and places.within(head, inner) and inner != head:
            if inner.name == tail or tail in inner.aliases:  # 朝阳市 / 东京: any of its names, standing alone
                return inner.name in answer_key or any(_name_ends(answer_key, n) for n in inner.aliases)
            at = at or [0]
        if not at:
            continue
        position = min(at)
        for part in parts:
            position = answer_key.find(part, position)
            if position < 0:
                break
            position += len(part)
        else:
            return True
    return False


def _names_a_city(ref: Reference, answer_key: str, question: str) -> bool:
    """The answer names a known city, county or district that is not in the question nor part of the reference."""
    return any(p.level not in ("country", "province") and name not in question and name not in ref.main
               and not any(a in ref.main for a in p.aliases)
               for name in places.places_in(answer_key) for p in [places.place(name)] if p)


def _inside_other_place(ref: Reference, text: str, form: str) -> bool:
    """Every mention of the reference's form is part of the name of another known place, one that does not lie
    within the reference (吉林省 for 吉林市, 纽约州 for 纽约, 印度尼西亚 for 印度, 河北区 for 河北省)."""
    target = places.place(ref.main) if not ref.items else None
    if target is None:
        return False
    starts = _starts(text, form)
    spans = [(s, e, places.place(n)) for s, e, n in places.place_spans(text) if e - s > len(form)] if starts else []
    return bool(starts) and all(any(s <= i and i + len(form) <= e and p is not None and not places.within(target, p)
                                    for s, e, p in spans) for i in starts)


def _place_of_it(main: str, answer_key: str, question: str) -> bool:
    """The reference opens with a place (维也纳艺术史博物馆) and the answer names that place, or one that holds
    it, and nothing of the rest: where the thing is, not which one."""
    spans = places.place_spans(main)
    if not spans or spans[0][0] != 0 or spans[0][1] >= len(main) - 1:
        return False
    rest_of_ref = main[spans[0][1]:spans[0][1] + 2]
    named = places.places_in(answer_key)
    # that place, or one that holds it (在湖北省 for 黄石国家矿山公园)
    holds = any(name == spans[0][2] or places.contains(name, spans[0][2]) for name in named)
    if not holds or rest_of_ref in answer_key or ALTERNATIVES.search(answer_key):
        return False  # 意大利或者奥地利 for 奥地利帝国: candidates
    rest = answer_key
    for name in named:
        rest = rest.replace(name, "")
    return not _has_content(rest, question)
