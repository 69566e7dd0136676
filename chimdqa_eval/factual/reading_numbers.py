"""Reading an answer's numbers against a numeric reference: which of them can be its value (_comparable: unit,
counter, ordinal, date), which one the answer gives when it gives several (_likeliest: the one it sets in bold or
concludes with, else the one whose clause is most like the question: _ClauseScores), which restate or convert
another (Restatements, _converts_hit), the same value in another form (_as_single, _as_percent, _as_multiple),
rates, counters and a change told in the other direction (_opposite_direction). Counters and events come from
data/counters.txt."""
from __future__ import annotations

import bisect
import re
from dataclasses import replace
from functools import lru_cache

from chimdqa_eval.factual import rules
from chimdqa_eval.factual import vocabulary as vocab
from chimdqa_eval.factual.gate import gated
from chimdqa_eval.factual.reading_text import (_BOLD, _CLAUSE_END, _NEGATION, _SENTENCE_END, _TITLE_IN,
                                               _TRUTH, _TURN_CLAUSE, _word_bigrams)
from chimdqa_eval.factual.rules import Number


_CONCLUSION = gated(r"(即|所以|因此|故|答案|最终|结果|=|≈|也就是|就是|相当于|(降|升|增|减|涨|跌|提高|下降|上升|增长|减少)[至到])"
                         r"[^,;。\d]{0,4}$|(?:所以|因此|因而)[^,;。\d]{0,12}(?:应该|应)?(?:是|为)\s*$")  # 所以你问的这个载波应该是…
# A total said last (…146名乘客和6名机组人员，共152人) concludes when the question asks for a total.
_TOTAL = re.compile(r"[,;。]\s*(?:共计?|总共|一共|合计|总计)(?:有|是|为|达)?\s*$")
_TOTAL_QUESTION = re.compile(r"总数|总共|一共|合计|总计|共有|共计|总人数|总额")

_DIRECTIONS = {"up": re.compile(r"增长|增加|上升|提高|上涨|增幅|涨幅|多了"),
               "down": re.compile(r"下降|减少|降低|下跌|降幅|跌幅|缩减|少了")}

_DATE_UNITS = frozenset({"年", "月", "日", "周", "秒"})  # canonical units of dates and durations


def _opposite_direction(hits: list[Number], text: str, question: str) -> str:
    """'opposite_direction' when the question asks how much something rose and the answer says it fell by the
    value (同比下降12.5% for 增长了多少), or the other way round."""
    asked = {d for d, pattern in _DIRECTIONS.items() if pattern.search(question)}
    if len(asked) != 1:
        return ""
    said = {d for n in hits for d, pattern in _DIRECTIONS.items() if pattern.search(text[max(0, n.start - 5):n.start])}
    return "opposite_direction" if said and said != asked else ""


def _comparable(n: Number, r: Number) -> bool:
    """Could the answer's number n be its value for the reference's r? Not an ordinal (第3条) unless r is one,
    the same unit, not a counted thing (3个) for a value with a unit, no date for a plain count."""
    if n.ordinal != r.ordinal and n.ordinal:
        return False
    if n.counter[:1] in ("对", "双") and n.counter[:1] != r.counter[:1]:
        return False  # 28对 for 28 (染色体): pairs are twice as many
    if r.unit == "年" and r.kind == "exact" and abs(r.value) >= 1000 \
            and (n.unit is None and abs(n.value) < 1000 or n.unit == "年" and abs(n.value) < 100):
        return False  # 年过七十, 波音737-400, 嗣德二十五年 beside a year: an age, a model, a reign's year
    if r.unit == n.unit == "年" and r.kind == "exact" and abs(r.value) < 100 and abs(n.value) >= 1000:
        return False  # 2009年 beside 10年 (a span): a calendar year, not the span
    if r.unit is not None:  # 0 K beside -273.15°C: another unit
        return n.unit == r.unit or (n.unit is None and not n.counter and not n.unknown_unit)
    if n.unit in _DATE_UNITS:
        return n.unit == "年" and 1000 <= abs(r.value) <= 2100 and r.step == 1
    if (n.unit is not None and not (n.unit == "%" and not r.counter)) \
            or (n.counter and r.counter and _counted(n.counter) != _counted(r.counter)
                and "个" not in (_counted(n.counter), _counted(r.counter))):  # 4个阶段 for 4种: 个 counts anything
        return False  # 35% or 3个 for 412人: another quantity
    return True


_ASKED_COUNTER = re.compile(rf"(?:多少|几)([{rules.MEASURE_CHARS}])([\u4e00-\u9fff]?)")


def _other_counter(hits: list[Number], question: str) -> bool:
    """Every matching number counts other things than the question asks for: another counter (222卷 for 多少篇)
    or, for 多少个字, a counter that is not the thing (9353卷). 个 counts anything (三座 for 几个城市), people are
    counted by 人, 名 or 位 and books by 本, 卷, 册 or 部; units of measure are left to the unit rules."""
    asked = _ASKED_COUNTER.search(question)
    if not asked or asked.group(1) in _NOT_COUNTERS or asked.group(1) == "个" and asked.group(2) not in _COUNTERS:
        return False
    thing = asked.group(2) if asked.group(1) == "个" else asked.group(1)
    said = [(n.counter or n.unknown_unit)[:1] for n in hits]
    return all(c and c in _COUNTERS and c != "个" and _counter_kind(c) != _counter_kind(thing) for c in said)


_NOT_COUNTERS = vocab.chars("not_counters")
_COUNTERS = "".join(ch for ch in rules.MEASURE_CHARS if ch not in _NOT_COUNTERS)


_SAME_COUNTERS = tuple("".join(group) for group in vocab.groups("same_counters"))


def _counter_kind(counter: str) -> str:
    """The class of a counter: counters of one class count the same things (305首 = 305篇 of poems)."""
    return next((kind[0] for kind in _SAME_COUNTERS if counter in kind), counter)


def _counted(counter: str) -> str:
    """人 / 名 / 位 all count people."""
    ch = counter.lstrip("多余")[:1]
    return "人" if ch in "人名位" else ch


# Words for the same kind of event, so that a clause can be matched to the question's event (成立 / 筹建).
_EVENT_WORDS = tuple(" ".join(group) for group in vocab.groups("event_words"))
_EVENTS = [(i, re.compile("|".join(words.split()))) for i, words in enumerate(_EVENT_WORDS)]


@lru_cache(maxsize=1024)  # a value's clause is asked for by score and segment alike, the question for every answer
def _events(text: str) -> frozenset[int]:
    return frozenset(i for i, pattern in _EVENTS if pattern.search(text))


_TURN_INSIDE = re.compile(rf"则是|才是|{_TRUTH}")  # a turn inside a value's own clause, before it
_VALUE_ONLY = re.compile(rf"[\d.,%]|{rules._UNIT_WORDS}|[{rules.MEASURE_CHARS}]")  # what a bare value is made of
_OPERAND = re.compile(r"[\d.,]+\s*[×*/÷+]")

_MONTH_ONLY = re.compile(r"\d+月")


def _said_value(candidates: list[Number], text: str, question: str) -> tuple[Number | None, list[Number]]:
    """(the value the answer plainly gives, or None; the candidates left to compare): the one it sets in bold, the
    last one it concludes with (所以是50倍, 即86.4%, = 40元, 降至60.2), or a bare first sentence's (8颗。…).
    Operands of a calculation (12 in 12×0.8=9.6) are no values given."""
    bold = [m.span(1) for m in _BOLD.finditer(text)]
    bolded = [n for n in candidates if any(lo <= n.start < hi for lo, hi in bold)]
    if bolded and len(bold) <= 2:  # 参数量为**110亿**: the value a chat model sets in bold is its answer
        return bolded[-1], candidates
    operands = [n for n in candidates if _OPERAND.match(text, n.start)]
    candidates = [n for n in candidates if n not in operands] or candidates
    total = _TOTAL_QUESTION.search(question)
    cues = {n: _CONCLUSION.search(text[max(0, n.start - 16):n.start])
            or (total and _TOTAL.search(text[max(0, n.start - 16):n.start])) for n in candidates}
    concluded = [n for n in candidates if cues[n]]
    # several values each after = are side by side (有理数时D(x)=1，无理数时D(x)=0): the question tells them apart
    if concluded and not (len(concluded) > 1 and all(cues[n].group(0) in "=≈" for n in concluded)):
        return concluded[-1], candidates
    lead = _SENTENCE_END.split(text, maxsplit=1)[0]
    if len(_VALUE_ONLY.sub("", rules.key(lead))) <= 1:
        return candidates[0], candidates  # 8颗。冥王星…此前是9颗: a bare first sentence is the answer
    return None, candidates


# The bounds of clauses and sentences (_ClauseScores) are sorted places, 0 first and len(text) + 1 last: the one
# up to a place in the text and the one after it, found by bisection instead of a scan of them all.
def _last_upto(bounds: list[int], at: int) -> int:
    """max(b for b in bounds if b <= at)"""
    return bounds[bisect.bisect_right(bounds, at) - 1]


def _first_after(bounds: list[int], at: int) -> int:
    """min(b for b in bounds if b > at), or `at` when none is"""
    i = bisect.bisect_right(bounds, at)
    return bounds[i] if i < len(bounds) else at


class _ClauseScores:
    """How like the question each value's clause and sentence are: shared character bigrams, an event word of the
    question's kind (double), the question's own year, a turn before the value; less for a negated clause or
    another event (_likeliest's last step)."""

    def __init__(self, candidates: list[Number], text: str, question: str):
        # the question's titles name what it is about, which any clause may repeat: they tell no clause apart,
        # unless the answer names other titles too (第10本是《列王纪上》，《撒母耳记下》是第9本)
        titles = set(_TITLE_IN.findall(question))
        plain = titles and set(_TITLE_IN.findall(text)) <= titles
        self.asked = _word_bigrams(rules.key(_TITLE_IN.sub("|", question) if plain else question))
        self.candidates, self.text, self.events = candidates, text, _events(question)
        self.clauses = [0] + [m.end() for m in _CLAUSE_END.finditer(text)] + [len(text) + 1]
        self.sentences = [0] + [m.end() for m in _SENTENCE_END.finditer(text)] + [len(text) + 1]
        self.years = {n.value for n in rules.find_numbers(question) if n.unit == "年" and n.kind == "exact"}
        self.turns = [m.end() for m in _TURN_CLAUSE.finditer(text)]
        self.told, self.numbers, self.reached = _events(text), rules.find_numbers(text), {}

    def around(self, n: Number, bounds: list[int]) -> str:
        return rules.key(self.text[_last_upto(bounds, n.start):_first_after(bounds, n.start)])

    def clause(self, n: Number) -> str:
        """_clause_at(text, n.start), from the clause bounds: from the last bound up to n to the mark before the
        first bound after it (a bound is the place after a mark; the last, len(text) + 1, stands for the end)."""
        return self.text[_last_upto(self.clauses, n.start):_first_after(self.clauses, n.start) - 1]

    def dated(self, n: Number) -> int:
        """+1 when n's clause names a year the question names (2022年是55.9% for 2022年的近视率), -1 when it
        names only other years (2023年的近视率是54.1%), 0 when the question names none or the clause has none."""
        clause = self.clause(n)
        if not self.years or "年" not in clause:  # an exact year is always written with 年 (年, 周年, 洪武8年):
            return 0                               # its clause is not read for numbers
        found = {m.value for m in rules.find_numbers(clause) if m.unit == "年" and m.kind == "exact"}
        found -= {n.value} if n.unit == "年" else set()
        return 0 if not found else 1 if found & self.years else -1

    def turned(self, n: Number) -> int:
        """1 when a clause between n's sentence start and n opens with a turn (，但它的设计其实是在2004年; ，不过…，
        定在9月28日) and no other candidate of the sentence stands between that turn and n."""
        start = _last_upto(self.sentences, n.start)
        turn = self.turns[bisect.bisect_right(self.turns, n.start) - 1] if self.turns else -1
        turn = turn if start <= turn <= n.start else None  # the last turn from the sentence's start up to n
        if _TURN_INSIDE.search(self.text, _last_upto(self.clauses, n.start), n.start):
            return 1  # 国家级名录则是2008年才列入的: a turn inside n's own clause
        own = self.around(n, self.clauses)  # 9月 of n's own date does not count
        return int(turn is not None and not any(turn <= m.start < n.start and self.around(m, self.clauses) != own
                                                for m in self.candidates))

    def reach(self, n: Number) -> int:
        """The end of n's clause; a date said alone (1980年5月，第33届大会宣布…) reaches over the clause after it,
        whose claim it dates. (Worked out once per value: segment asks for it of every earlier value.)"""
        if n.start not in self.reached:
            clauses, text = self.clauses, self.text
            end = _first_after(clauses, n.start)
            bare = not _VALUE_ONLY.sub("", rules.key(text[_last_upto(clauses, n.start):end]))
            self.reached[n.start] = _first_after(clauses, end) if bare and end < len(text) else end
        return self.reached[n.start]

    def other_event(self, n: Number) -> int:
        """1 when n's own clause names an event of another kind than the question's (1955年取得专利)."""
        said = _events(self.text[_last_upto(self.clauses, n.start):self.reach(n)])
        return int(bool(said) and not said & self.events)

    def segment(self, n: Number) -> str:
        """n's clause, reaching back to the previous candidate of its sentence (而台湾以孔子诞辰为教师节，定在9月28日)."""
        clauses, text = self.clauses, self.text
        own = _last_upto(clauses, n.start)
        if self.other_event(n) and self.events & self.told:  # 1955年取得专利 for 哪一年发明: its own event
            return rules.key(text[own:self.reach(n)])
        before = [m for m in self.numbers if m.start < own]  # values of earlier clauses, the question's too
        after_previous = max(self.reach(m) for m in before) if before else 0
        previous = clauses[bisect.bisect_left(clauses, own) - 1] if own else 0  # one clause back at most
        start = min(max(_last_upto(self.sentences, n.start), after_previous, previous), own)
        return rules.key(text[start:self.reach(n)])

    def score(self, n: Number) -> int:
        clause, asked, events = self.segment(n), self.asked, self.events
        negated = _NEGATION.search(self.clause(n)) is not None  # 1981年公布的名单里并没有它
        return (len(_word_bigrams(clause) & asked) + len(_word_bigrams(self.around(n, self.sentences)) & asked)
                + 2 * len(_events(clause) & events) + 3 * self.dated(n) + 3 * self.turned(n) - 6 * negated
                - 3 * (self.other_event(n) if events & self.told else 0))  # the question's event told elsewhere


def _one_date(stray: Number, h: Number, text: str) -> bool:
    """stray is a wrong part of hit h's date: its month or day after a right year or month (2024年5月1日; a bare
    day right after its month: 1月16), or its month before a right day (正月十五 for 七月十五日)."""
    if h.unit in ("年", "月") and 0 < stray.start - h.start <= 8:
        return bool(stray.unit) or (h.unit == "月" and _MONTH_ONLY.fullmatch(text[h.start:stray.start]) is not None)
    return stray.unit == "月" and h.unit in (None, "日") \
        and _MONTH_ONLY.fullmatch(text[stray.start:h.start]) is not None


def _likeliest(candidates: list[Number], hits: list[Number], text: str, question: str) -> Number:
    """The answer's own value among several: the one it plainly gives (_said_value); else the one whose clause is
    most like the question (_ClauseScores: 1898年筹建 for 成立于哪一年, 中位数是12,000人); on a tie a match if there
    is one, unless a tied stray value is a wrong part of a matching date."""
    said, candidates = _said_value(candidates, text, question)
    if said is not None:
        return said
    scores = _ClauseScores(candidates, text, question)
    scored = [scores.score(n) for n in candidates]
    tied = [n for n, score in zip(candidates, scored) if score == max(scored)]
    hits = set(hits)
    for stray in (n for n in tied if n not in hits and n.unit in ("月", "日", None)):
        if any(_one_date(stray, h, text) for h in tied if h in hits):
            return stray  # its year, month or day is right, its date as a whole is not
    return next((n for n in tied if n in hits), tied[0])


_OPENED = re.compile(r"\([^,;。()]{0,3}\Z")
_CLAUSE_MARKS = ",;。()"


def _restating_clause(n: Number, text: str) -> tuple[int, int] | None:
    """(start, end): where a number that `n` restates may start, when n is at most 3 characters into a
    parenthesis: from the clause's start up to the parenthesis, with no , ; 。 or parenthesis in between; None
    when n is not in one. Found in constant time from n's side, so a long answer stays linear."""
    opened = _OPENED.search(text, max(0, n.start - 4), n.start)
    if opened is None:
        return None
    return max(text.rfind(mark, 0, opened.start()) for mark in _CLAUSE_MARKS) + 1, opened.start()


def _as_single(n: Number) -> Number:
    """12对 counted one by one (24条) for a question that does not ask for pairs: converted, so never sure."""
    return replace(n, value=n.value * 2, step=n.step * 2, loose=n.loose * 2, counter="", converted=True)


def _as_percent(n: Number) -> Number:
    """0.241 for a percentage reference is 24.1%."""
    if n.unit is None and not n.counter and n.step < 1 and abs(n.value) <= 1:
        return replace(n, value=n.value * 100, step=n.step * 100, loose=n.loose * 100, unit="%")
    return n


# Rates, which the rules read as their quantity only (240公里/小时 as 240 km): another rate is not sure.
_RATE = re.compile(r"每(秒|分|小时|时)钟?(?=\s*(?:约|大约|可达|达)?\s*\d)|(?<=\d)[^\d,;。]{0,4}?/(秒|分|小时|时|s|h|min)"
                   r"(?![a-z])|(时|秒)速|(?<=\d)(节)(?![日目课假])")
_ASKED_RATE = re.compile(r"每(秒|分|小时|时)|/(秒|分|小时|时|s|h|min)(?![a-z])|(时|秒)速|(节)")
_TIME = {"s": "秒", "h": "小时", "时": "小时", "min": "分"}


def _as_multiple(n: Number, text: str) -> Number:
    """A percentage read as the multiple a 倍 question asks for (400% -> 4), converted: never a sure match. Not a
    change (增长了400% is five times as much)."""
    if n.unit != "%" or _CHANGE_BEFORE.search(text, max(0, n.start - 6), n.start):
        return n
    return replace(n, value=n.value / 100, step=n.step / 100, scale=n.scale / 100, loose=n.loose / 100,
                   high=n.high / 100 if n.high is not None else None, unit=None, converted=True)


_CHANGE_BEFORE = re.compile(r"(?:增长|增加|提高|上升|上涨|下降|减少|降低|涨|跌)了?(?:约|大约)?\s*$")


def _rates(text: str, said: bool = True) -> set:
    """The time units of the rates in the text (每秒67米, 240公里/小时, 130节: 秒, 小时, 节); `said=False` for a
    question, whose rate need not stand beside a number (每分钟多少次)."""
    if not any(ch in text for ch in "每/速节"):  # most texts have no rate: skip the regex
        return set()
    found = (_RATE if said else _ASKED_RATE).findall(text)
    return {_TIME.get(unit, unit) for groups in found for unit in groups if unit}


# Two values offered for the slot (1995年或1996年, 2005/2006年), not an alternative beside one value (还是你自己查查吧).
_VALUE_PAIR = re.compile(r"\d[^,;。!?\d]{0,3}(?:或者?|还是|/)[^,;。!?\d]{0,3}\d")
_CONVERTS = re.compile(r"折合|换算(?:成|为|过来)?|约合|相当于")


class Restatements:
    """Does a number restate a hit, or a hit restate it (its value again in brackets: 1.5万（15000）)? The clauses
    of restatements never overlap: a set of sorted positions keeps a long answer with thousands of numbers fast."""

    def __init__(self, hits, text: str):
        self.text = text
        self.hit_starts = sorted(h.start for h in hits)
        self.restated_by_hit = sorted(filter(None, (_restating_clause(h, text) for h in hits)))

    def __call__(self, n: Number) -> bool:
        i = bisect.bisect_right(self.restated_by_hit, (n.start, len(self.text)))
        if i and self.restated_by_hit[i - 1][0] <= n.start <= self.restated_by_hit[i - 1][1]:
            return True
        clause = _restating_clause(n, self.text)
        return clause is not None and \
            bisect.bisect_left(self.hit_starts, clause[0]) < bisect.bisect_right(self.hit_starts, clause[1])


def _converts_hit(n: Number, text: str, hits) -> bool:
    """n, or a value before it in its clause, follows a conversion word (折合约29.3 MJ/kg（29307 kJ/kg）) after a
    hit in the same sentence: the hit said in other units."""
    clause_start = max(text.rfind(ch, 0, n.start) for ch in ",;。!?\n:") + 1
    cue = _CONVERTS.search(text, clause_start, n.start)
    sentence_start = max(text.rfind(ch, 0, n.start) for ch in "。!?\n") + 1
    return cue is not None and any(sentence_start <= h.start < cue.start() for h in hits)


@lru_cache(maxsize=1024)
def _code_pattern(code: str) -> re.Pattern:
    """A code such as 2B standing as a word of its own."""
    return re.compile(rf"(?<![a-z0-9.]){re.escape(code)}(?![a-z0-9])")
