"""The rule judge's shortcuts (factual/rules.py, names.py) give what the long way gives: they only skip work whose
result is known in advance."""
import re
from dataclasses import FrozenInstanceError, fields, replace
from decimal import Decimal

import pytest

from chimdqa_eval.factual import names
from chimdqa_eval.factual.rules import Number, clean, find_numbers, key

_NOT_KEY = re.compile(r"[\W_]+")  # the key's definition


def test_a_key_is_the_text_without_what_is_no_word_character():
    # every character of the Basic Multilingual Plane, alone and inside a word: an alphanumeric text is its own key
    for code in range(0x10000):
        ch = chr(code)
        if 0xD800 <= code < 0xE000:
            continue
        assert key(ch) == _NOT_KEY.sub("", ch), hex(code)
        assert key(f"a{ch}1") == _NOT_KEY.sub("", f"a{ch}1"), hex(code)
    assert key("李白_（701年）") == "李白701年"


def test_an_alphanumeric_character_is_never_one_the_key_drops():
    # the shortcut's premise over every code point (outside the memo): str.isalnum() is exactly "not [\W_]"
    for code in range(0x110000):
        if 0xD800 <= code < 0xE000:
            continue
        ch = chr(code)
        assert ch.isalnum() == (_NOT_KEY.fullmatch(ch) is None), hex(code)
        assert key.__wrapped__(ch) == _NOT_KEY.sub("", ch), hex(code)


def test_a_number_is_a_frozen_dataclass_with_the_fields_defaults():
    n = Number(Decimal(5), Decimal(1))
    defaults = {f.name: f.default for f in fields(Number) if f.name not in ("value", "step")}
    assert {name: getattr(n, name) for name in defaults} == defaults
    assert n == Number(Decimal(5), Decimal(1), "exact") and hash(n) == hash(Number(Decimal(5), Decimal(1)))
    assert replace(n, ordinal=True).ordinal and not n.ordinal
    with pytest.raises(FrozenInstanceError):
        n.kind = "approx"
    with pytest.raises(TypeError):
        Number(Decimal(5), Decimal(1), colour="red")


@pytest.mark.parametrize("text, values", [
    ("用时2小时08分36秒", [7716]), (" 1分15秒", [75]), ("比赛在12:05:30结束", [43530]), ("约2小时", [7200]),
    ("5分多钟", [300]), ("第3分", [3]), ("-5度到8度", [-5, 8]), ("大约3500米", [3500]), ("超过3,000人", [3000]),
    ("it was may 5, 2001", [2001, 5, 5]), ("in december 1999", [1999, 12]), ("没有数字", []),
])
def test_numbers_after_the_scanning_shortcuts(text, values):
    assert sorted(n.value for n in find_numbers(clean(text))) == sorted(values)


def test_a_qualifier_needs_its_cue():
    assert [n.kind for n in find_numbers(clean("3500人左右，不到4000人，至少3000人，3000多人，整3000人"))] == \
        ["approx", "upper", "lower", "range", "exact"]


@pytest.mark.parametrize("han", ["李白", "杨利伟", "重庆", "吕布", "欧阳修", "司马相如传"])
def test_every_pinyin_form_of_a_name_passes_the_spelling_check(han):
    forms = names.pinyin_forms(han)
    assert forms and all(names._may_spell(han, {form}) for form in forms)
    assert not names._may_spell(han, {"einstein"})


def test_a_chinese_name_is_found_for_its_pinyin_and_not_for_another_name():
    assert names.find_han(clean("这首诗的作者是李白"), ["libai"]) == "李白"  # a span ends or begins a run
    assert names.find_han(clean("这首诗的作者是李白"), ["dufu"]) is None


def test_latin_sound_match_keeps_the_best_pair():
    cleaned = clean("the author is albert einstein, not isaac newton")
    assert names.latin_sound_match(["爱因斯坦"], cleaned, True) == max(
        names.sound_similarity("爱因斯坦", w) for w in ("albert", "einstein", "alberteinstein", "isaac", "newton",
                                                     "isaacnewton"))
    assert names._cldr_words(("united", "states", "of", "america")) == {0, 1}


def test_full_width_forms_replaced_before_nfkc_change_no_text():
    import unicodedata

    from chimdqa_eval.factual.rules import _FULL_WIDTH
    for code, written in _FULL_WIDTH.items():  # each as NFKC writes it: the same decomposition
        assert unicodedata.normalize("NFKD", written) == unicodedata.normalize("NFKD", chr(code))
    for text in ("Ａ\u0300", "（１９１９年）？", "ｶ\uff9e", "＝\u0338", "李　白，"):  # composing across the replacement
        assert unicodedata.normalize("NFKC", text.translate(_FULL_WIDTH)) == unicodedata.normalize("NFKC", text)
    assert clean("（１９１９年）？") == "(1919年)?"


@pytest.mark.parametrize("han", ["李白", "杨利伟", "重庆", "吕布", "绿色", "欧阳修", "乐山大佛", "单田芳"])
def test_every_option_of_a_name_is_in_the_syllable_inventory(han):
    spelled, _ = names._read_as()
    options = names._pinyin_options(han)
    assert options
    assert all(option in spelled for choices in options for option in choices)
    assert all(names._could_be_pinyin(form) for form in names.pinyin_forms(han))


def test_a_key_that_is_no_run_of_syllables_skips_the_spans():
    assert names._could_be_pinyin("libai") and names._could_be_pinyin("lyubu")
    assert not names._could_be_pinyin("johndalton") and not names._could_be_pinyin("arnenaess")
    assert names.find_han(clean("我认为是约翰·道尔顿"), ["johndalton", "dalton"]) is None


def test_the_answer_memos_are_emptied_with_the_answer_caches():
    # a benchmark that empties the answer caches between runs measures answers read afresh (bench_factual.py)
    from chimdqa_eval.factual.judge_rule import clear_answer_caches, judge_answer
    judge_answer("作者是李白，写于公元750年。", "Li Bai", "这首诗的作者是谁？")
    assert clean.cache_info().currsize and key.cache_info().currsize
    names._latin_word_skeleton("dalton")  # whether the answer above asks it depends on the memos before it
    assert names._latin_word_skeleton.cache_info().currsize
    clear_answer_caches()
    assert clean.cache_info().currsize == key.cache_info().currsize == names._pinyin_options.cache_info().currsize == 0
    assert names._latin_word_skeleton.cache_info().currsize == 0


def test_a_long_run_of_spaces_is_read_in_linear_time():
    """A duration's lookahead looks at one character: `(?=\\s*\\d)` looked over a whole run of spaces from each of
    its places (200,000 spaces: minutes); an answer that ends in thousands of line breaks is common from models."""
    import time

    text = clean("用时1分15秒" + " " * 200_000 + "分" + "\n" * 50_000 + "（完）")
    start = time.process_time()
    numbers = find_numbers(text)
    assert time.process_time() - start < 2
    assert [n.value for n in numbers] == [Decimal(75)]


# -- patterns no longer compiled per reference, question or answer: the long way is the pattern itself -----------

def _validation_texts() -> list[tuple[str, str, str]]:
    """(answer, reference, question) of data/judge_validation/validation.jsonl, cleaned as the judge reads them."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "data" / "judge_validation" / "validation.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(clean(r["answer"]), clean(r["reference"]), clean(r["question"])) for r in rows]


def _random_texts(seed: int, alphabet: list, count: int, longest: int = 14):
    """(word, text) pairs from a small alphabet that holds the word too, so that it occurs, overlaps and repeats."""
    import random

    rnd = random.Random(seed)
    for _ in range(count):
        word = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 3)))
        yield word, "".join(rnd.choice(alphabet + [word]) for _ in range(rnd.randint(0, longest)))


def test_one_of_the_asked_kind_is_found_as_its_pattern_finds_it():
    from chimdqa_eval.factual.reading_kinds import _ones_of_kind
    from chimdqa_eval.factual.reading_question import _asked_kind

    def long_way(text, kind):
        return [m.group(0) for m in re.finditer(
            rf"(?<![第\d.])(?:[一1][个种位座家所类项部本条支名处片]|某[个种位座家所类项部本条支名处片]?)"
            rf"[^,;。!?\n]{{0,24}}?{re.escape(kind)}(?=[,;。!?\n]|$)", text)]

    kinds = {"个", "县", "军衔", "城市", "作家"}
    for answer, _, question in _validation_texts():
        for kind in kinds | {_asked_kind(question)} - {""}:
            assert _ones_of_kind(answer, kind) == long_way(answer, kind), (answer, kind)
    alphabet = list("一1某个位种县军衔第.٣3,;。!?\n的是 a") + ["军衔", "某位", "x" * 23]
    for kind, text in _random_texts(5, alphabet, 20_000, 30):
        kind = "".join(ch for ch in kind if "\u4e00" <= ch <= "\u9fff")  # a kind is Chinese characters
        if kind:
            assert _ones_of_kind(text, kind) == long_way(text, kind), (text, kind)
    assert _ones_of_kind("是一个士官级别的低阶军衔", "军衔") == ["一个士官级别的低阶军衔"]
    assert _ones_of_kind("某位", "位") == ["某位"] and _ones_of_kind("第一个县", "县") == []


def test_a_code_opening_is_found_as_its_patterns_find_it():
    from chimdqa_eval.factual.reading_kinds import _CODE_PREFIX_RE1, _code_prefix

    def long_way(reference, text):
        code = _CODE_PREFIX_RE1.fullmatch(reference)
        if not code or re.search(rf"(?<![a-z0-9]){code.group(1)}[a-z0-9]+", text):
            return False
        return re.search(rf"(?<![a-z0-9]){code.group(1)}(?:型|类|级)", text) is not None

    for answer, reference, _ in _validation_texts():
        for code in (key(reference), "f4iv", "m1iiiab", "2b", "g2v"):
            assert _code_prefix(code, answer) == long_way(code, answer), (code, answer)
    alphabet = list("fm2٣3aA型类级星 .-_Ｆ") + ["f4", "22", "٣b"]
    for code, text in _random_texts(6, alphabet, 20_000):
        assert _code_prefix(code, text) == long_way(code, text), (code, text)
    assert _code_prefix("f4iv", "f型恒星") and not _code_prefix("f4iv", "可能是f5v,f型") and not _code_prefix("", "型")


def _surname_long_ways(text, surname, latin):
    s = re.escape(surname)
    before = rf"((?:[a-z][a-z-]*\.?\s+){{1,3}}){s}(?![a-z])" if latin else rf"((?:[\u4e00-\u9fff]{{1,7}}[·•]){{1,3}}){s}"
    bare = rf"(?<![a-z.\s])\s*{s}(?![a-z])|(?<![a-z])\s{s}(?![a-z])" if latin else rf"(?<![·•]){s}"
    return [(m.start(), m.end(1)) for m in re.finditer(before, text)], [m.end() for m in re.finditer(bare, text)]


def test_a_surname_and_the_names_before_it_are_found_as_their_patterns_find_them():
    from chimdqa_eval.factual.reading_match import _names_before, _surname_ends

    for answer, reference, _ in _validation_texts():
        text = answer.replace("*", "")
        for surname in {key(w) for w in re.split(r"[·•\s]+", reference)} | {"dalton", "贝尔", "c++", ""}:
            for latin in (True, False):
                assert (_names_before(text, surname, latin), _surname_ends(text, surname, latin)) == \
                    _surname_long_ways(text, surname, latin), (text, surname, latin)
    for alphabet, latin in ((list("ab .-\t\u3000\n.A1+") + ["ab", "b a", "a.b"], True),
                            (list("约翰道尔·•顿 a.\u3000*") + ["道尔", "约翰·", "约翰约翰约翰约翰·"], False)):
        for surname, text in _random_texts(7, alphabet, 30_000, 16):  # surnames with spaces: the regex fallback
            assert (_names_before(text, surname, latin), _surname_ends(text, surname, latin)) == \
                _surname_long_ways(text, surname, latin), (text, surname, latin)
    assert _names_before("william j. dalton, dalton", "dalton", True) == [(0, 11)]
    assert _surname_ends("william j. dalton, dalton", "dalton", True) == [17, 25]


def test_a_given_name_is_found_as_its_pattern_finds_it():
    from chimdqa_eval.factual.reading_match import _latin_word_in

    for word, text in _random_texts(8, list("abc ab.é\u3000\n*") + ["abc", "bca"], 30_000):
        if word:
            assert _latin_word_in(text, word) == (re.search(rf"(?<![a-z]){re.escape(word)}(?![a-z])", text)
                                                  is not None), (word, text)


def test_a_one_character_form_stands_alone_as_its_pattern_says():
    from chimdqa_eval.factual.reading_match import _stands_alone

    def long_way(text, form):
        return re.search(rf"(^|[是为作叫\W]){re.escape(form)}($|\W|[吧呢啊呀啦哦嘛吗了])", text) is not None

    for answer, reference, _ in _validation_texts():
        for form in set(key(reference)[:1]) | set("清锡汉j是"):
            assert _stands_alone(answer, form) == long_way(answer, form), (answer, form)
    alphabet = list("清锡J是为叫吧了 ,。_a1٣\n.*+?\u3000ⅷ²") + ["\u4e00", "\u9fff"]
    for form, text in _random_texts(9, alphabet, 30_000):
        assert _stands_alone(text, form) == long_way(text, form), (text, form)
    assert _stands_alone("答案是清。", "清") and not _stands_alone("东汉", "汉")
    assert _stands_alone("清 ?", "?") and not _stands_alone("清_?", "?")  # _ is a word character (\w)


def test_names_suffixes_and_joined_roles_are_found_as_their_patterns_find_them():
    from chimdqa_eval.factual.aliases import LEVELS
    from chimdqa_eval.factual.reading_claims import _JOINTS
    from chimdqa_eval.factual.reading_match import _after_two_han
    from chimdqa_eval.factual.reading_places import _name_ends

    alphabet = list("市省北京的 ,_a.*+\n\u4e00\u9fff\u3400") + list(LEVELS)
    for word, text in _random_texts(10, alphabet, 30_000):
        assert _name_ends(text, word) == (re.search(re.escape(word) + r"(?:的|$)", text) is not None), (text, word)
        if word in LEVELS:
            assert _after_two_han(text, word) == (re.search(rf"[\u4e00-\u9fff]{{2}}{word}", text) is not None)
    for answer, _, _ in _validation_texts():
        for suffix in LEVELS:
            assert _after_two_han(answer, suffix) == (re.search(rf"[\u4e00-\u9fff]{{2}}{suffix}", answer) is not None)
    assert "|".join(_JOINTS) == "及|和|与|兼|以及|、"  # joined(): x + joint + y is in the question, as the pattern


def test_an_answers_key_is_worked_out_with_it_and_the_question_unit_memo_is_emptied_with_the_caches():
    from chimdqa_eval.factual.judge_rule import clear_answer_caches, clear_caches, judge_answer
    from chimdqa_eval.factual.reading_answer import _read_answer
    from chimdqa_eval.factual.reading_question import _question_unit

    answer = _read_answer(clean("不是杜甫，其实是**李白**。"), clean("这首诗的作者是谁？"))
    assert answer.affirmed_key == key(answer.affirmed) and answer.affirmed_key
    assert replace(answer, affirmed="杜甫 ").affirmed_key == "杜甫"  # a changed answer has its own key
    assert replace(answer, affirmed="").affirmed_key == ""
    judge_answer("3518米", "3518.17", "金山铁路黄浦江特大桥的全长是多少米？")
    assert _question_unit.cache_info().currsize and _question_unit(clean("全长是多少米？")) == "米"
    clear_answer_caches()
    assert _question_unit.cache_info().currsize  # a question's unit outlives its answers
    clear_caches()
    assert _question_unit.cache_info().currsize == 0


def test_clause_bounds_found_by_bisection_are_those_a_scan_finds():
    import random

    from chimdqa_eval.factual.reading_numbers import _ClauseScores, _first_after, _last_upto
    from chimdqa_eval.factual.reading_text import _clause_at

    rnd = random.Random(11)
    for _ in range(5_000):
        size = rnd.randint(0, 30)
        bounds = sorted({0, size + 1, *(rnd.randint(1, size) for _ in range(rnd.randint(0, 8)) if size)})
        for at in range(size + 1):
            assert _last_upto(bounds, at) == max(b for b in bounds if b <= at)
            assert _first_after(bounds, at) == min((b for b in bounds if b > at), default=at)
    for answer, _, question in _validation_texts() + [("", "", ""), (",,2000年;", "", "哪一年？")]:
        numbers = find_numbers(answer)
        scores = _ClauseScores(numbers, answer, question)
        for n in numbers:
            assert scores.clause(n) == _clause_at(answer, n.start), (answer, n.start)
    for answer, _, question in _validation_texts() + [("但是2004年，不过1999年。其实2010年", "", "哪一年？")]:
        numbers = find_numbers(answer)
        scores, long_way = _ClauseScores(numbers, answer, question), _ClauseScores(numbers, answer, question)
        for n in numbers:
            assert scores.turned(n) == _long_turned(long_way, n) and scores.segment(n) == _long_segment(long_way, n)


def _long_turned(self, n):  # _ClauseScores.turned as it was written with scans of the bounds
    from chimdqa_eval.factual.reading_numbers import _TURN_INSIDE

    start = max(b for b in self.sentences if b <= n.start)
    turn = max((t for t in self.turns if start <= t <= n.start), default=None)
    if _TURN_INSIDE.search(self.text, max(b for b in self.clauses if b <= n.start), n.start):
        return 1
    own = self.around(n, self.clauses)
    return int(turn is not None and not any(turn <= m.start < n.start and self.around(m, self.clauses) != own
                                            for m in self.candidates))


def _long_segment(self, n):  # _ClauseScores.segment and reach as they were written with scans of the bounds
    from chimdqa_eval.factual.reading_numbers import _VALUE_ONLY

    def reach(n):
        clauses, text = self.clauses, self.text
        end = min(b for b in clauses if b > n.start)
        bare = not _VALUE_ONLY.sub("", key(text[max(b for b in clauses if b <= n.start):end]))
        return min((b for b in clauses if b > end), default=end) if bare and end < len(text) else end

    clauses, text = self.clauses, self.text
    own = max(b for b in clauses if b <= n.start)
    said = self.other_event(n)
    if said and self.events & self.told:
        return key(text[own:reach(n)])
    before = [m for m in self.numbers if m.start < own]
    after_previous = max(reach(m) for m in before) if before else 0
    previous = max((b for b in clauses if b < own), default=0)
    start = min(max(max(b for b in self.sentences if b <= n.start), after_previous, previous), own)
    return key(text[start:reach(n)])


# -- judge-speed5 -------------------------------------------------------------------------------------------------

def _generated_texts(source: str, count: int, seed: int, more=()) -> list[str]:
    """Random texts of the words written in a pattern's source (its Chinese runs and Latin words), pieces of them,
    punctuation, spaces, digits and other characters, cleaned and not: what a cue list may or may not find."""
    import random

    rnd = random.Random(seed)
    words = re.findall(r"[\u4e00-\u9fff]+|[a-z']+", source) + list(more) or ["x"]
    extra = list("，。,.;!?？！ \n不没我是的了吗呢a1２（）()、：:") + ["2000年", "也", "请问", "您", "**"]
    out = []
    for _ in range(count):
        parts = []
        for _ in range(rnd.randint(0, 7)):
            word = rnd.choice(words)
            if rnd.random() < 0.3 and len(word) > 1:  # a piece of a word: it begins a cue and breaks off
                cut = rnd.randint(1, len(word) - 1)
                word = word[:cut] if rnd.random() < 0.5 else word[cut:]
            parts.append(word if rnd.random() < 0.7 else rnd.choice(extra))
        text = "".join(parts)
        out.append(clean(text) if rnd.random() < 0.5 else text)
    return out


def test_a_pattern_is_split_into_its_top_level_alternatives():
    from chimdqa_eval.factual.gate import alternatives

    assert alternatives(r"a|b(c|d)|[|]|\||[]|]x|[^]|]|(?:e|f)g") == ["a", "b(c|d)", "[|]", r"\|", "[]|]x", "[^]|]",
                                                                       "(?:e|f)g"]
    assert alternatives(r"(?<=[,。])等等(?=[,!])|x") == [r"(?<=[,。])等等(?=[,!])", "x"]
    assert alternatives(r"(?i)a|b") is None and alternatives(r"(?P<x>a)|b") is None
    source = rules_module().REFUSAL.whole.pattern[5 + rules_module().REFUSAL.whole.pattern.index("])(?:"):-1]
    assert "|".join(alternatives(source)) == source and len(alternatives(source)) > 100


def rules_module():
    from chimdqa_eval.factual import rules
    return rules


def test_the_scanned_refusal_list_finds_what_the_whole_pattern_finds():
    """REFUSAL tries each place that can begin a cue with the cues that can begin there: the same matches (spans
    and groups) from search and finditer as the gated pattern itself, on every validation answer, question and
    reference and on 30,000 generated texts; the other methods are the pattern's."""
    from chimdqa_eval.factual.gate import Scanned

    refusal = rules_module().REFUSAL
    assert isinstance(refusal, Scanned)
    whole = refusal.whole
    texts = [t for row in _validation_texts() for t in row]
    texts += _generated_texts(whole.pattern, 30_000, seed=5) + ["", "n/a", "N/A", "抱歉", "不", "i don't know"]
    found = 0
    for text in texts:
        got = [(m.span(), m.groups()) for m in refusal.finditer(text)]
        assert got == [(m.span(), m.groups()) for m in whole.finditer(text)], text
        for pos in (0, 1, len(text) // 2):
            m, w = refusal.search(text, pos), whole.search(text, pos)
            assert (m and (m.span(), m.groups())) == (w and (w.span(), w.groups())), (text, pos)
        found += bool(got)
    assert found > 3_000  # the generated texts hold cues, not only near misses
    assert refusal.sub("#", "我不知道，抱歉") == whole.sub("#", "我不知道，抱歉") == "我#，#"


@pytest.mark.parametrize("name", ["_ARABIC", "_DECADE", "_VAGUE_COUNT"])
def test_a_pattern_tried_from_its_starts_finds_what_it_finds(name):
    """The number patterns that open with a lookbehind are tried only where their first character stands: the same
    matches (spans and groups) from search and finditer, at several start positions, on every validation text
    and 30,000 generated ones with digits, minus signs and the patterns' words."""
    from chimdqa_eval.factual.gate import FromStarts

    pattern = getattr(rules_module(), name)
    assert isinstance(pattern, FromStarts)
    whole = pattern.whole
    texts = [t for row in _validation_texts() for t in row] + ["", "-", "-5", "a-5", "1,000,000", "√2", "x1.5万"]
    generated = _generated_texts(whole.pattern, 30_000, seed=7, more="0 1 2 3 5 9 10 90 300 1850 12,345 3.5 - -4 2万3000 "
                                 "19世纪 公元前3世纪 20世纪80年代 1890年代 90年代 上个世纪 好几 十几 几千 有多次 20几".split() * 3)
    found = 0
    for text in texts + generated:
        got = [(m.span(), m.groups()) for m in pattern.finditer(text)]
        assert got == [(m.span(), m.groups()) for m in whole.finditer(text)], text
        for pos in (1, len(text) // 2):
            assert [m.span() for m in pattern.finditer(text, pos)] == [m.span() for m in whole.finditer(text, pos)]
            m, w = pattern.search(text, pos), whole.search(text, pos)
            assert (m and (m.span(), m.groups())) == (w and (w.span(), w.groups())), (text, pos)
        found += bool(got)
    assert found > 2_000


def test_an_answer_without_the_hint_words_has_no_true_claim_nor_denial():
    """_read_answer searches for _TRUE_CLAIM only in a text with 真正 and for DENIAL only where _DENIAL_HINT finds
    one of its words: on every validation text and 30,000 generated ones, a text the hint passes over is one the
    pattern finds nothing in (the long way), and the hint finds a word in every match."""
    from chimdqa_eval.factual import reading_answer
    from chimdqa_eval.factual.rules import DENIAL

    texts = [t for row in _validation_texts() for t in row]
    for pattern, hint, more in ((reading_answer._TRUE_CLAIM, lambda t: "真正" in t, ["真正", "真", "正"]),
                                (DENIAL, reading_answer._DENIAL_HINT.search,
                                 "不是 并非 而非 不在 不属于 not isn't wasn't isnt wasnt no t 不 是 而是 但".split())):
        generated = _generated_texts(pattern.pattern, 30_000, seed=3, more=more * 3)
        found = 0
        for text in texts + generated:
            matches = list(pattern.finditer(text))
            assert all(hint(m.group(0)) for m in matches), text
            if not hint(text):
                assert not matches, text
            found += bool(matches)
        assert found > 500


def test_full_width_forms_are_replaced_as_translate_replaces_them():
    """clean() replaces the full-width forms one str.replace per form present (_half_width): the same text as
    str.translate with the table, on every code point of the forms' range and around it, every raw validation
    text and 30,000 generated texts of full-width, half-width and Chinese characters."""
    import json
    import random
    from pathlib import Path

    from chimdqa_eval.factual.rules import _FULL_WIDTH, _half_width

    assert all(len(v) == 1 and not ("\u3000" == v or "\uff01" <= v <= "\uff5e") for v in _FULL_WIDTH.values())
    texts = [chr(code) for code in range(0x2ff0, 0x3010)] + [chr(code) for code in range(0xff00, 0xff70)]
    path = Path(__file__).resolve().parents[1] / "data" / "judge_validation" / "validation.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts += [r[k] for r in rows for k in ("answer", "reference", "question")]
    rnd = random.Random(13)
    pool = [chr(c) for c in (0x3000, *range(0xff01, 0xff5f))] + list("李白，。！? 1ａＡ（）\u3001\uff60\uff00")
    texts += ["".join(rnd.choice(pool) for _ in range(rnd.randint(0, 30))) for _ in range(30_000)]
    for text in texts:
        assert _half_width(text) == text.translate(_FULL_WIDTH), text


def test_the_question_bigrams_besides_a_form_are_those_the_set_test_keeps():
    """_closer_clause's bigrams of the question that share no character with the form, kept per (question, form):
    what {b for b in _word_bigrams(...) if ((form not in b) if b.startswith("<") else not set(b) & set(form))}
    keeps, on every validation question with every key of 2-4 characters of its reference and answer, and with
    Latin words, numbers and '<' in the question; the memo is emptied with the question caches."""
    from chimdqa_eval.factual.judge_rule import clear_caches
    from chimdqa_eval.factual.reading_claims import _asked_besides
    from chimdqa_eval.factual.reading_text import _word_bigrams

    def long_way(question, form):
        return {b for b in _word_bigrams(key(question))
                if ((form not in b) if b.startswith("<") else not set(b) & set(form))}

    rows = _validation_texts() + [("woff20格式", "woff20", "哪种格式用 woff20 压缩？"), ("a<b", "<b", "a<b 是什么 <b>？"),
                                  ("HD 19789", "hd19789", "HD 19789 是哪颗星？")]
    for answer, reference, question in rows:
        forms = {key(reference), key(answer)[:2], key(answer)[:4], key(reference)[-2:], "<", "a", "19789"}
        for form in forms:
            assert _asked_besides(question, form) == long_way(question, form), (question, form)
    for b in _word_bigrams(key("李白是唐代诗人, woff20 and 3.5 <x>")):  # the premise: a bigram of two characters
        assert b.startswith("<") or len(b) == 2
    clear_caches()
    assert _asked_besides.cache_info().currsize == 0


def test_a_clause_without_a_year_is_dated_without_reading_its_numbers():
    """_ClauseScores.dated returns 0 without reading the clause's numbers when the question names no year or the
    clause has no 年 (every exact number in years is written with 年): what the long way (read the clause's years,
    then compare) gives for every value of every validation answer, against its own question and against
    questions that name years; _events is kept per text (a frozenset) and emptied with the answer caches."""
    from chimdqa_eval.factual import reading_numbers
    from chimdqa_eval.factual.judge_rule import clear_answer_caches
    from chimdqa_eval.factual.reading_numbers import _ClauseScores

    def long_way(scores, n):  # dated as it was written
        found = {m.value for m in find_numbers(scores.clause(n)) if m.unit == "年" and m.kind == "exact"}
        found -= {n.value} if n.unit == "年" else set()
        return 0 if not scores.years or not found else 1 if found & scores.years else -1

    questions = ["2022年的近视率是多少？", "1949年至1956年间建成了多少座？", "哪一年？", "周年庆是在2001年吗？"]
    answers = [a for a, _, _ in _validation_texts()] + ["2022年是55.9%，2023年是54.1%", "建国10周年（1959年）时有3座",
                                                       "洪武8年（1375年）建成，共5座", "明朝2001年，约1950年前后"]
    checked = 0
    for answer in answers:
        numbers = find_numbers(answer)
        for question in questions + [answer[:12]]:
            scores = _ClauseScores(numbers, answer, clean(question))
            for n in numbers:
                assert scores.dated(n) == long_way(scores, n), (answer, question, n)
                checked += 1
    assert checked > 1_000
    for text in ("成立于1898年", "", "他于1955年去世，1950年出生"):
        assert reading_numbers._events(text) == {i for i, p in reading_numbers._EVENTS if p.search(text)}
    clear_answer_caches()
    assert reading_numbers._events.cache_info().currsize == 0


def test_a_question_without_a_cue_reads_numbers_as_no_framing_does():
    """find_numbers reads a text framed by a question that holds no cue _qualifier could find in it from the memo of
    the text without framing. Every cue of two characters or more the qualifier patterns find begins with one of
    _FRAMING_CUES (generated texts of their words); the numbers read with each validation question (the long way)
    equal those read without one whenever _framing drops the question, and a question with a cue is kept."""
    from chimdqa_eval.factual import rules

    patterns = (rules._APPROX_BEFORE, rules._LOWER_BEFORE, rules._UPPER_BEFORE, rules._APPROX_AFTER,
                rules._LOWER_AFTER, rules._UPPER_AFTER)
    for pattern in patterns:
        seen = 0
        for text in _generated_texts(pattern.pattern, 5_000, seed=17, more=[" ", "个", "+", "3"] * 5):
            for m in (pattern.search(text), pattern.match(text)):
                if m is not None and len(m.group(1)) > 1:
                    assert m.group(1)[:2] in rules._FRAMING_CUES, (pattern.pattern, m.group(1))
                    seen += 1
        assert seen or pattern in (rules._LOWER_AFTER,), pattern.pattern
    rows = _validation_texts()
    questions = sorted({q for _, _, q in rows}) + ["至少需要多少人？", "大约多少年前？", "超过多少米？"]
    answers = [a for a, _, _ in rows] + ["至少5人，大约3000年前，超过100米，不到20岁，3000多人，50岁左右"]
    dropped = 0
    for question in questions:
        if rules._framing(question):
            assert rules._framing(question) == question and any(c in question for c in rules._FRAMING_CUES)
            continue
        dropped += 1
        for answer in answers[:: max(1, len(answers) // 60)] + answers[-1:]:
            assert rules._find_numbers.__wrapped__(answer, question, True) == \
                rules._find_numbers.__wrapped__(answer, "", True), (answer, question)
    assert dropped > 50 and rules._framing("至少需要多少人？") == "至少需要多少人？"


# -- judge-speed6 -------------------------------------------------------------------------------------------------

def _raw_validation_texts() -> list[str]:
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "data" / "judge_validation" / "validation.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r[k] for r in rows for k in ("answer", "reference", "question")]


def test_clean_skips_the_superscript_and_spaced_digit_patterns_only_where_they_find_nothing():
    """clean() runs _SUPERSCRIPT_POWER only where _SUPERSCRIPT_DIGIT finds a superscript digit and _SPACED_DIGITS
    only where _SPACED_HINT finds a digit, a space and a digit: on every validation text (raw and cleaned) and
    30,000 generated ones, the hint finds something in every match, and a text it passes over is one the
    pattern finds nothing in (so sub would return it as it is)."""
    from chimdqa_eval.factual import rules

    texts = _raw_validation_texts() + [t for row in _validation_texts() for t in row]
    more = "10 １０ 1０ ⁰ ¹ ² ³ ⁴ ⁹ ⁻ ⁺ 10⁸ 10⁻³⁴ １０⁻² 3×10⁸ 149 597 870 700 12 345 6 1 2 345 1.5 000 .5 ,3 000 ٣ ٣٣٣ 7 ".split()
    for pattern, hint in ((rules._SUPERSCRIPT_POWER, rules._SUPERSCRIPT_DIGIT), (rules._SPACED_DIGITS, rules._SPACED_HINT)):
        found = 0
        for text in texts + _generated_texts(pattern.pattern, 30_000, seed=19, more=more * 3 + [" "] * 20):
            matches = list(pattern.finditer(text))
            assert all(hint.search(m.group(0)) for m in matches), (pattern.pattern, text)
            if hint.search(text) is None:
                assert not matches, (pattern.pattern, text)
            found += bool(matches)
        assert found > 200, pattern.pattern
    assert clean("3×10⁸米") == "3亿米" and clean("149 597 870 700 km") == "149597870700公里"


def test_a_key_drops_one_character_a_match_as_the_run_pattern_drops_runs():
    """key() removes [\\W_] one character a match (re skips ahead to the class) where the definition removes runs
    ([\\W_]+): the same text on every validation text (raw and cleaned) and 30,000 generated texts with runs of
    punctuation, spaces, underscores and symbols between words."""
    import random

    from chimdqa_eval.factual import rules

    assert rules._NOT_KEY.pattern == r"[\W_]"
    rnd = random.Random(23)
    pool = list("李白，。, .;!?？！ \n_－-—·•《》()（）*%1２٣aé\u3000\u200b\U0001f600") + ["  ", "__", "...", "——"]
    texts = _raw_validation_texts() + [t for row in _validation_texts() for t in row]
    texts += ["".join(rnd.choice(pool) for _ in range(rnd.randint(0, 25))) for _ in range(30_000)]
    for text in texts:
        assert key.__wrapped__(text) == _NOT_KEY.sub("", text), text


@pytest.mark.parametrize("module, name", [("rules", "GUESS"), ("rules", "HEDGE"), ("rules", "ALTERNATIVES"),
                                          ("reading_answer", "_CORRECTION"), ("reading_answer", "_ATTRIBUTED"),
                                          ("reading_kinds", "_KIND_WORDS"), ("reading_match", "_FOREIGN_NAME")])
def test_a_hinted_cue_list_finds_nothing_where_its_hint_finds_nothing(module, name):
    """The gated cue lists are tried only in a text where their hint finds a word (gate.Hinted): on every validation
    text (raw and cleaned) and 30,000 generated texts of the pattern's words, pieces of them and the hint's words,
    the hint finds a word within every match (with the character before and after it: a lookaround's), a text
    it passes over has no match, and search, finditer and sub give what the pattern's own give."""
    import importlib

    from chimdqa_eval.factual.gate import Hinted

    pattern = getattr(importlib.import_module(f"chimdqa_eval.factual.{module}"), name)
    assert isinstance(pattern, Hinted)
    whole, hint = pattern.whole, pattern.hint
    texts = _raw_validation_texts() + [t for row in _validation_texts() for t in row] + ["", ",不,", "等等!", "a/b"]
    more = re.findall(r"[\u4e00-\u9fff]+|[a-z:/ ]+|,", hint.pattern) + list("或/,不!等·•") + ["1999/2000", "李白/杜甫",
                                                                                            "约翰 · 道尔顿", "乔治•华盛顿"]
    found = 0
    for text in texts + _generated_texts(whole.pattern, 30_000, seed=29, more=more * 3):
        matches = list(whole.finditer(text))
        for m in matches:
            assert hint.search(text, max(0, m.start() - 1), m.end() + 1), (name, text, m.group(0))
        if hint.search(text) is None:
            assert not matches, (name, text)
        assert [m.span() for m in pattern.finditer(text)] == [m.span() for m in matches], text
        got, want = pattern.search(text, 1), whole.search(text, 1)
        assert (got and (got.span(), got.groups())) == (want and (want.span(), want.groups())), text
        assert pattern.sub("#", text) == whole.sub("#", text) and pattern.findall(text) == whole.findall(text), text
        found += bool(matches)
    assert found > 1_000, name


def test_clauses_split_once_per_text_give_the_verdicts_the_split_gives(monkeypatch):
    """reading_text._split_clauses keeps each text's clauses (a tuple: no caller may change them) and is emptied
    with the answer caches: every validation answer is graded as with _CLAUSE_END.split called afresh each time
    (a list, the long way), and a second split of a text is the kept one."""
    import json
    from pathlib import Path

    from chimdqa_eval.factual import reading_claims, reading_kinds, reading_text
    from chimdqa_eval.factual.judge_rule import clear_answer_caches, clear_caches, trace_answer

    path = Path(__file__).resolve().parents[1] / "data" / "judge_validation" / "validation.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def grade_all():
        clear_caches()
        return [trace_answer(r["answer"], r["reference"], r["question"]) for r in rows]

    kept = grade_all()
    assert reading_text._split_clauses.cache_info().hits > 1_000  # answers' texts are split again and again
    text = "可能是关羽,也可能是岳飞。"
    assert reading_text._split_clauses(text) is reading_text._split_clauses(text) == ("可能是关羽", "也可能是岳飞", "")
    clear_answer_caches()
    assert reading_text._split_clauses.cache_info().currsize == 0
    def long_way(text):
        return reading_text._CLAUSE_END.split(text)

    long_way.cache_clear = lambda: None  # (the caches' clearing asks it of every memo)
    for module in (reading_claims, reading_kinds, reading_text):
        monkeypatch.setattr(module, "_split_clauses", long_way)
    assert grade_all() == kept


def test_chinese_numerals_are_rewritten_as_the_patterns_sub_rewrites_them():
    """chinese_numerals_to_arabic matches _CN_NUMERAL from each numeral character in turn: the same text as
    _CN_NUMERAL.sub(_replace_numeral, text) on every validation text (raw and cleaned) and 30,000 generated texts
    of numerals, 百分之, 点, counters, units and digits."""
    from chimdqa_eval.factual import rules

    more = list("零〇一二两三四五六七八九十百千万亿点第个年分钟米是为哪同") + ["百分之", "百分之五", "三点五", "一九四九", "万一", "1.2", "十分"]
    texts = _raw_validation_texts() + [t for row in _validation_texts() for t in row] + ["", "一", "百分之", "百分之百"]
    changed = 0
    for text in texts + _generated_texts("", 30_000, seed=41, more=more * 3):
        want = rules._CN_NUMERAL.sub(rules._replace_numeral, text)
        assert rules.chinese_numerals_to_arabic(text) == want, text
        changed += want != text
    assert changed > 3_000
