"""A Case: one answer read against one reading of its reference and its question. The answer is read once
(reading_answer._read_answer: what it asserts, takes back, reports, asks back); what the rules ask of it (its refusal
kind, hedge, bold text, clauses, the reference's form found in it, its numbers) is worked out on first asking and
kept. TextCase, NumericCase and LongCase add what the rules of their reference kind ask.
"""
from __future__ import annotations

from dataclasses import replace

from chimdqa_eval.factual import (reading_answer, reading_claims, reading_kinds, reading_match, reading_numbers,
                                  reading_places, reading_question, reading_reference, reading_text, rules)
from chimdqa_eval.factual.rules import ALTERNATIVES, GUESS, HEDGE, REFUSAL


class cached_property:  # noqa: N801 - functools.cached_property without its lock (3.11), for speed
    """A value worked out on first asking and kept in the instance."""

    def __init__(self, fn):
        self.fn, self.name, self.__doc__ = fn, fn.__name__, fn.__doc__

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        value = self.fn(obj)
        setattr(obj, self.name, value)  # not obj.__dict__[…]: that turns the instance's inline attribute values
        return value                    # into a dict of its own, and every later read of a Case gets slower


class Case:
    def __init__(self, ref: reading_reference.Reference, answer: reading_answer._Answer, question: str,
                 question_numbers=()):
        self.ref = ref
        self.answer = answer
        self.question = question                  # cleaned
        self.question_numbers = question_numbers

    found = None  # the text family's match; other kinds find no form
    risk = ""     # why an answer without the reference may still name it (the fallback rules' reason)

    @property
    def whole(self) -> str:
        return self.answer.whole

    @property
    def affirmed(self) -> str:
        return self.answer.affirmed

    @property
    def key(self) -> str:
        return self.answer.affirmed_key

    @cached_property
    def refusal(self) -> str:
        """'' | refusal | apology | guess | refusal_then_claim (reading_answer._refusal)."""
        return reading_answer._refusal(self.answer)

    @cached_property
    def hedge(self):
        return HEDGE.search(self.answer.whole)

    @cached_property
    def refuses(self):
        """A refusal cue anywhere in the answer (whatever else it says)."""
        return REFUSAL.search(self.answer.whole)

    @cached_property
    def offers_alternatives(self) -> bool:
        return ALTERNATIVES.search(self.answer.affirmed) is not None

    @cached_property
    def content(self) -> bool:
        """The answer asserts something besides the question's words and filler."""
        return reading_text._has_content(self.key, self.question)

    @cached_property
    def short(self) -> bool:
        return len(self.key) <= reading_claims.SHORT_ANSWER

    @cached_property
    def bold(self) -> list:
        return [rules.key(b) for b in reading_text._BOLD.findall(self.answer.affirmed)]

    @cached_property
    def alternative_content(self) -> bool:
        alt = self.answer.alternative
        return bool(alt) and reading_text._has_content(rules.key(alt), self.question)

    @cached_property
    def described(self) -> bool:
        """The answer describes a thing by its kind (一位英国剧作家, 是一个士官级别的军衔)."""
        affirmed = reading_text._TITLE.sub("", self.answer.affirmed)
        return any(not reading_kinds._NAMING.search(m.group(0))
                   for m in reading_kinds._DESCRIPTION.finditer(affirmed)) \
            or reading_kinds._asked_kind_described(self.answer.affirmed, self.question)


class TextCase(Case):
    """A short text reference (a name, a term, a place): the form of it the answer names, and what the rules ask
    about that form. A question that already uses another name of the reference (鲁迅的本名是什么 for 周树人) or
    asks for a name of some kind (自号什么) makes that name a mere repetition (`alias_question`)."""

    def __init__(self, ref, answer, question, question_numbers=()):
        question_key = rules.key(question) if ref.aliases else ""
        repeated = {a for a in ref.aliases if a in question_key}
        self.alias_question = bool(repeated or (ref.aliases and reading_question._ASKS_NAME.search(question)))
        if self.alias_question:
            ref = replace(ref, forms=tuple(f for f in ref.forms if f not in repeated), aliases=ref.aliases - repeated)
        super().__init__(ref, answer, question, question_numbers)

    @cached_property
    def found(self):
        """(the form found, True when it names the reference fully, False in part, None by the dictionary only),
        or None: the reference's form, unless it is only part of another place, its opposite (非对称), a compound
        (碘化氢 for 氢), the question's own term, another book's title or the question's own name for it."""
        ref, key, affirmed = self.ref, self.key, self.affirmed
        found = reading_match._text_match(ref, key, affirmed)
        if found and reading_places._inside_other_place(ref, affirmed, found[0]):
            return None  # 吉林省 for 吉林市, 印度尼西亚 for 印度
        if found and reading_match._only_negated_or_compound(key, found[0]):
            return None
        if found and found[0] in ref.weak \
                and reading_match._only_in_question_terms(key, found[0], rules.key(self.question)):
            return None  # 阿贝数是由…夫琅和费提出的 for 恩斯特·阿贝
        if found and "《" in affirmed:  # 《新元史》 for 《元史》, 《李太白全集》 for 李白: another book's title
            masked = reading_match._other_titles_masked(ref, affirmed)
            found = reading_match._text_match(ref, rules.key(masked), masked) if masked != affirmed else found
        if found and found[1] is None and found[0] in rules.key(self.question):
            return None  # 延边 for 延边朝鲜族自治州 when asked 延边的全称
        return found

    @property
    def form(self) -> str:
        return self.found[0]

    @cached_property
    def partly(self) -> str:
        """Why a found form names the reference only in part ('' when fully)."""
        form, full = self.found
        return "dictionary_name" if full is None else "" if full else \
            "partial_name" if form in self.ref.forms else "latin_sentence"

    @cached_property
    def bolded(self) -> bool:
        """The answer sets the form in bold (at most two bold spans)."""
        return 0 < len(self.bold) <= 2 and any(self.form in b for b in self.bold)

    @cached_property
    def whole_list(self) -> bool:
        """Every item of a list reference is named."""
        return bool(self.ref.items) and all(any(g in self.key for g in forms) for forms in self.ref.items)

    @cached_property
    def closer(self) -> str:
        return "" if self.bolded or self.whole_list \
            else reading_claims._closer_clause(self.answer, self.form, self.question)

    @cached_property
    def role(self) -> str:
        return reading_claims._role_after(self.affirmed, self.form, self.question)

    @cached_property
    def others(self) -> str:
        return "" if self.role == "own" \
            else reading_claims._others_of_kind(self.ref, self.answer, self.form, self.question)

    @cached_property
    def doubt(self) -> str:
        form = self.form
        return reading_claims._doubt(self.affirmed, form, lambda part: form in rules.key(part), self.question,
                                     years=True)

    @cached_property
    def other_option(self) -> str:
        return reading_question._other_option(self.ref, self.question)

    @cached_property
    def alias(self) -> str:
        return reading_match._script_alias(self.ref, self.answer, self.question)

    @cached_property
    def risk(self) -> str:
        return self.alias or reading_match._alias_risk(self.ref, self.answer, self.question) \
            or ("described_with_more" if self.described else "")

    @cached_property
    def dynasty(self):
        """(the reference's split dynasty match or None, the halves of it the answer names)."""
        split = reading_kinds._SPLIT_DYNASTY.match(self.ref.main)
        halves = {m.group(0)[0] for m in reading_kinds._half_pattern(split.group(2)).finditer(self.affirmed)} \
            if split else set()
        return split, halves

    def only_alias(self) -> bool:
        """The answer names the reference only by another name (when the question already uses one)."""
        ref = self.ref
        own = replace(ref, forms=tuple(f for f in ref.forms if f not in ref.aliases), aliases=frozenset())
        return bool(reading_match._text_match(ref, self.key, self.affirmed)) \
            and not reading_match._text_match(own, self.key, self.affirmed)


class NumericCase(Case):
    """A numeric reference: the answer's numbers of the reference's kind (candidates), those equal to a reference
    number (hits), and those that differ exactly (stray) or vaguely (vague)."""
    risk = "no_number"

    def __init__(self, ref, answer, question, question_numbers=()):
        if reading_question._RANK_QUESTION.search(question) and not any(r.ordinal for r in ref.numbers):  # 第几任 -> 5 is 第5
            ref = replace(ref, numbers=tuple(replace(r, ordinal=True) for r in ref.numbers),
                          bare=tuple(replace(r, ordinal=True) for r in ref.bare))
        super().__init__(ref, answer, question, question_numbers)
        # pairs counted one by one (12对 for 多少条, 24) unless the question or the reference counts pairs
        self.pairs_asked = bool(reading_question._PAIRS_ASKED.search(question)) \
            or any(r.counter.startswith(("对", "双")) for r in ref.numbers)
        self.pairs = list(zip(ref.numbers, ref.bare or ref.numbers))  # (in the question's unit, as written)
        self.percent = all(r.unit == "%" for r in ref.numbers)

    @staticmethod
    def target(n, pair):
        """A bare answer number is in the question's unit, as the reference."""
        return pair[1] if n.unit is None else pair[0]

    def hit(self, n) -> bool:
        """Equal to a reference number; an approximate value only at the reference's own precision (约3亿 is
        less specific than 3.15亿, not equal to it)."""
        if n.kind not in ("exact", "approx", "range"):
            return False
        return any(n.matches(t) and (n.kind != "approx"
                                     or abs(n.value - t.value) <= max(t.step, n.step if n.converted else 0) / 2)
                   for t in (self.target(n, p) for p in self.pairs))

    def _as_asked(self, n):
        """n as the question and reference count: a percentage, a multiple, pairs one by one or as pairs."""
        if self.percent:
            return reading_numbers._as_percent(n)
        if "倍" in self.question:
            return reading_numbers._as_multiple(n, self.affirmed)
        if n.counter.startswith(("对", "双")):
            if not self.pairs_asked:
                return reading_numbers._as_single(n)
            if not any(r.counter for r in self.ref.numbers):
                return replace(n, counter=n.counter[1:])  # 31对 for 31
        return n

    @cached_property
    def numbers(self) -> list:
        """The answer's numbers, as asked, without those it repeats from the question (根据2010年普查...)."""
        found = [self._as_asked(n) for n in rules.find_numbers(self.affirmed, self.question)]
        return [n for n in found if self.hit(n) or not any(n.matches(q) and n.kind == q.kind in ("exact", "range")
                                                           and n.unit == q.unit  # not 1984年 for GB 4764-1984
                                                           for q in self.question_numbers)]

    @cached_property
    def candidates(self) -> list:
        return [n for n in self.numbers if any(reading_numbers._comparable(n, r) for r in self.ref.numbers)]

    @cached_property
    def hits(self) -> list:
        return [n for n in self.candidates if self.hit(n)]

    @cached_property
    def matched(self) -> list:
        """Per reference number: does a hit match it."""
        return [any(n.matches(self.target(n, p)) for n in self.hits) for p in self.pairs]

    @cached_property
    def all_matched(self) -> bool:
        return all(self.matched)

    @cached_property
    def bounds(self) -> list:
        return [n for n in self.candidates if n.kind in ("lower", "upper")
                and any(n.value == self.target(n, p).value for p in self.pairs)]

    @cached_property
    def _others(self) -> tuple:
        """(stray, vague): candidates that are no hit and neither restate a hit nor convert it."""
        text, hits = self.affirmed, self.hits
        hit_set = set(hits)
        restates = reading_numbers.Restatements(hits, text)
        rest = [n for n in self.candidates
                if n not in hit_set and not restates(n) and not reading_numbers._converts_hit(n, text, hits)]
        return [n for n in rest if n.kind == "exact"], [n for n in rest if n.kind != "exact"]

    @property
    def stray(self) -> list:
        return self._others[0]

    @property
    def vague(self) -> list:
        return self._others[1]

    @cached_property
    def unsure_unit(self) -> bool:
        return bool(any(n.unknown_unit and not any(n.unknown_unit == r.unknown_unit for r in self.ref.numbers)
                        for n in self.hits + self.stray)
                    or reading_numbers._rates(self.affirmed) - reading_numbers._rates(self.question, said=False))  # 每秒67米 for 多少公里/小时

    @cached_property
    def clauses(self) -> list:
        return reading_claims._clauses_with(self.affirmed, lambda c: any(ch.isdigit() for ch in c))

    @cached_property
    def guesses(self) -> bool:
        return GUESS.search(self.whole) is not None

    def likeliest(self, candidates, hits):
        return reading_numbers._likeliest(candidates, hits, self.affirmed, self.question)

    def consistent(self, n) -> bool:
        return any(n.consistent_with(self.target(n, p)) for p in self.pairs)


class LongCase(Case):
    """A long reference (more than LONG_REFERENCE characters): its numbers and its bigrams."""
    risk = "long_no_match"

    @cached_property
    def numbers(self) -> list:
        return [n for n in rules.find_numbers(self.affirmed) if not any(n.matches(q) for q in self.question_numbers)]


CASES = {"text": TextCase, "numeric": NumericCase, "long": LongCase}
