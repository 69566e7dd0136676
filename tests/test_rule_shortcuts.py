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
