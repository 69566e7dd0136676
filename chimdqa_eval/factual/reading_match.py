"""Finding the reference in an answer: _text_match tries its forms as whole words (_contains, _stands_alone), a
list's items, Latin spellings (pinyin, CLDR names: names.py), transliteration variants folded (data/translit.txt)
and CC-CEDICT glosses (_dictionary_match). Beside it, what tells a name apart when no form is found or one is found
in another name: 《titles》, a person's given names and surname, foreign names, names in the other script
(_script_alias), a longer name, a yes / no, a formula's atoms, and why an answer may still name the reference in a
form no table knows (_alias_risk)."""
from __future__ import annotations

import os
import re
import unicodedata
from functools import lru_cache

from chimdqa_eval.factual import aliases, dictionary, names, places, rules
from chimdqa_eval.factual import vocabulary as vocab
from chimdqa_eval.factual.decision import Verdict
from chimdqa_eval.factual.gate import Hinted
from chimdqa_eval.factual.reading_answer import _Answer, _refusal
from chimdqa_eval.factual.reading_question import _PERSON_QUESTION, _PLACE_QUESTION
from chimdqa_eval.factual.reading_reference import Reference, _FORMS_RE2, _PARSE_REFERENCE_RE4
from chimdqa_eval.factual.reading_text import (_bigrams, _BOLD, _CJK, _CLAUSE_END, _compiled, _LATIN, _LATIN_WORDS,
                                               _positions, _starts)
from chimdqa_eval.factual.rules import REFUSAL


PARTIAL_SOUND_ALIKE = 0.85   # a Latin word against a part of a Chinese reference: stricter than names.SOUND_ALIKE

# Suffixes a question usually implies (哪个市 -> 长崎 for 长崎市).
_SUFFIXES = aliases.LEVELS

# Characters interchanged when transliterating foreign names (托马斯/汤玛斯, 安娜/安纳, 莉莉/丽丽).
_TRANSLIT_CLASSES = vocab.words("translit_classes")  # data/translit.txt
_TRANSLIT = str.maketrans({ch: group[0] for group in _TRANSLIT_CLASSES for ch in group[1:]})

_LATIN_RUN = re.compile(r"(?=[a-z0-9]*[a-z][a-z0-9]*[a-z])[a-z0-9]+")  # a Latin word of two letters or more: tvn, avlink
_HAN = re.compile(r"[\u4e00-\u9fff]{2}")
_ANSWER_LEAD = re.compile(r"答案(?:应该)?(?:是|为)|我认为|我觉得|应该是|可能是|大概是")
# Filler a clause opens with (根据文档，…; 据我所知，…; data/cues.txt [filler_openings]), with what follows it at once
# (a comma, a colon, 是/为): no part of a name, whatever it sounds like.
_FILLER_OPENING = re.compile(r"(?:^|(?<=[,;。:!?\n\s*]))(?:\s*(?:" + "|".join(sorted(vocab.words("filler_openings"), key=len,
                                                                             reverse=True)) + r")\s*[,:]?\s*(?:是|为)?)+")
_LATIN_WORD = re.compile(r"[a-z][a-z0-9]+")  # a name, an abbreviation or a formula: un, co2, jupiter
_LATIN_FORM = re.compile(r"(?=.*[a-z])[a-z0-9]+")

# (Hinted, gate.py: every match holds a · or •; re tried the pattern at every place of a text, each run of
# characters taken whole and given back one by one)
_FOREIGN_NAME = Hinted(re.compile(r"[\u4e00-\u9fff]+(?:\s?[·•]\s?[\u4e00-\u9fff]+)+"), "[·•]")

_HYDRATE = re.compile(r"[·•][0-9a-z]")


def _contains(answer_key: str, form: str, cleaned: str = "") -> bool:
    if len(form) < 2:
        return answer_key == form
    if form not in answer_key:
        return False
    if not cleaned or not _LATIN_FORM.fullmatch(form):
        return True
    compact = cleaned.replace(" ", "")  # na2so4·10h2o is another formula than na2so4
    if form in compact and all(_HYDRATE.match(compact, i + len(form)) for i in _starts(compact, form)):
        return False
    # a Latin name or code is whole words of the answer: h2o is not in h2o2, nor bentham in benthamite
    words = _LATIN_WORDS.findall(cleaned)
    for i in range(len(words)):
        joined = ""
        for word in words[i:]:
            joined += word
            if joined == form:
                return True
            if not form.startswith(joined):
                break
    return False


def _stands_alone(cleaned: str, form: str) -> bool:
    """A one-character answer (清, 锡, J) inside a sentence counts only as its own word: after 是/为 or
    punctuation and before punctuation, a final particle (吧, 呢) or the end, never inside another word (汉 in
    东汉)."""
    at, size = cleaned.find(form), len(form)
    while at >= 0:  # what (^|[是为作叫\W])FORM($|\W|[吧呢啊呀啦哦嘛吗了]) finds, with no pattern compiled per form
        if (at == 0 or _apart(cleaned[at - 1], _BEFORE_ALONE)) \
                and (at + size == len(cleaned) or _apart(cleaned[at + size], _AFTER_ALONE)):
            return True
        at = cleaned.find(form, at + 1)
    return False


_BEFORE_ALONE = frozenset("是为作叫")
_AFTER_ALONE = frozenset("吧呢啊呀啦哦嘛吗了")


def _apart(ch: str, words: frozenset) -> bool:
    r"""The character sets a form apart: one of the words, or no word character (\W: not alphanumeric, not _)."""
    return ch in words or not (ch.isalnum() or ch == "_")


def _text_match(ref: Reference, answer_key: str, cleaned: str) -> tuple[str, bool | None] | None:
    """(the form found, whether it identifies the reference fully: None for a name only the dictionary gives) or
    None."""
    for f in ref.forms:
        if _contains(answer_key, f, cleaned) or (len(f) == 1 and _stands_alone(cleaned, f)):
            if f in ref.aliases and not aliases.stands_as_name(cleaned, f, ref.level):
                continue  # 阿里巴巴 does not name 阿里地区, nor 海南省 海南藏族自治州
            return f, f not in ref.weak
    found = [next((f for f in forms if f in answer_key), None) for forms in ref.items]
    if found and all(found):
        return found[0], True
    if cleaned and _LATIN.search(answer_key):  # pinyin (Yang Liwei), a CLDR name (Switzerland, SGD)
        spelled = names.find_latin(cleaned, *names.latin_forms(tuple(f for f in ref.forms if f not in ref.weak),
                                                                ref.foreign))
        if spelled:  # sure only with no other Latin words, which the rules cannot read (not Beijing, but …)
            form = rules.key(spelled)
            return form, not _LATIN.search(answer_key.replace(form, ""))
        spelled = [names.find_latin(cleaned, *names.latin_forms(forms, ref.foreign)) for forms in ref.items]
        if spelled and all(spelled):  # every item of a list: China and Japan for 中国和日本
            rest = answer_key
            for form in map(rules.key, spelled):
                rest = rest.replace(form, "")
            return rules.key(spelled[0]), not _LATIN.search(rest.replace("and", ""))
    if cleaned and names.is_latin_name(ref.main) and _HAN.search(answer_key):  # 李白 for Li Bai
        spelled = names.find_han(cleaned, [names.fold(f) for f in ref.forms if f not in ref.weak])
        if spelled:
            return spelled, True
    if ref.foreign:
        folded = answer_key.translate(_TRANSLIT)
        for f in ref.forms:
            if _contains(folded, f.translate(_TRANSLIT)):
                return f, False
    by_dictionary = _dictionary_match(ref, answer_key, cleaned)
    if by_dictionary:  # The Last Emperor for 末代皇帝, 松下 for Panasonic: one sense of a gloss, never sure
        return by_dictionary, None
    return None


_DICTIONARY_MATCH_RE1 = re.compile(r"[a-z]+")


def _dictionary_match(ref: Reference, answer_key: str, cleaned: str) -> str:
    """The key of an English name of a Chinese reference in the answer (Poisson distribution for 泊松分布), of a
    Chinese name of an English one (谷歌 for Google) or of a Chinese word with the reference's English name (白金 for
    铂), by CC-CEDICT (dictionary.py); '' if none."""
    strong = [f for f in ref.forms if f not in ref.weak]
    if not cleaned or not strong:
        return ""
    if _LATIN.search(answer_key):
        english = frozenset().union(*(dictionary.english_names(f) | dictionary.composed_names(f)
                                      for f in strong if _CJK.search(f)))
        spelled = names.find_latin(cleaned, english) if english else None
        if spelled:
            return rules.key(spelled)
    if _CJK.search(answer_key):
        if not any(_CJK.search(f) for f in strong):  # 谷歌 for Google (not 安卓 for Android 5.0: words only)
            found = set().union(*(dictionary.chinese_names(f) for f in strong if _DICTIONARY_MATCH_RE1.fullmatch(names.fold(f))))
        else:  # 白金 for 铂: of the reference itself, not of a list's items or the words in its parentheses
            found = set() if ref.items else dictionary.synonyms(ref.main)
        for chinese in sorted(found - set(ref.forms), key=len, reverse=True):  # its forms: the rules' own matter
            if _contains(answer_key, chinese, cleaned):
                return chinese
    return ""


_LONGER_NAME_END = re.compile(r"[\u4e00-\u9fff](?=[,;。!?\n]|$)")  # one more character, then the clause ends


_LONGER_NAME_RE1 = re.compile(r"[\u4e00-\u9fff]{2,3}")


def _longer_name(ref: Reference, text: str, form: str, question: str) -> bool:
    """A person's short Chinese name found only as the start of a longer name that ends its clause (制作人是冯骥才。
    for 冯骥; not 冯骥是…, 冯骥的…)."""
    if form != ref.main or not _LONGER_NAME_RE1.fullmatch(form) or not _PERSON_QUESTION.search(question):
        return False
    ends = [at + len(form) for at in _starts(text, form)]
    return bool(ends) and all(_LONGER_NAME_END.match(text, e) and text[e] not in aliases.NAME_FOLLOWERS for e in ends)


_ALIAS_RISK_RE1 = re.compile(r"[\u4e00-\u9fff]{2,4}")


def _alias_risk(ref: Reference, answer: _Answer, question: str) -> str:
    """Why the answer might name the reference in a form the tables do not know ('' if no reason): Latin words
    for a Chinese reference (an English name); a name with the reference's first character (骆观光 for 骆宾王);
    two of its characters in order (全马 for 全程马拉松, 宾州 for 宾夕法尼亚州, 阿姆斯壮 for 阿姆斯特朗);
    most of a longer reference reworded; any other name for a person (字, 号, 笔名: 王卫国 for 路遥) or a place at
    another level (瑞士 for 日内瓦), which no table lists."""
    answer_key = answer.affirmed_key
    main = ref.main or (ref.forms[0] if ref.forms else "")
    if not _LATIN_WORD.search(main) and _LATIN_WORD.search(answer_key):  # (GTA 5 for 侠盗猎车手V)
        return "latin_name"
    if _LATIN.search(main) and not _CJK.search(main) and _CJK.search(answer_key) and not names.chinese_names(main):
        return "translated_name"  # 狮头工作室 for Lionhead Studios (Switzerland has a Chinese name: the place rules)
    if 2 <= len(main) <= 4 and any(answer_key[i:i + 2] not in question for i in _positions(answer_key, main[0])):
        return "shared_surname"
    order = {ch: i for i, ch in reversed(list(enumerate(main)))}
    if any(a in order and b in order and order[a] < order[b] and a + b not in question
           for a, b in zip(answer_key, answer_key[1:])):
        return "shared_characters"
    if len(main) >= 4 and len(_bigrams(main) & _bigrams(answer_key)) * 2 >= len(_bigrams(main)):
        return "reworded"
    if ref.foreign or (_PERSON_QUESTION.search(question) and _ALIAS_RISK_RE1.fullmatch(main)):
        return "person_alias"
    if _PLACE_QUESTION.search(question) or main.endswith(_SUFFIXES):
        suffix = next((x for x in _SUFFIXES if main.endswith(x)), None)
        if not suffix or not _after_two_han(answer.affirmed, suffix):
            return "place_level"  # another place of the same level (台北市 for 高雄市) is a contradiction
    return ""


def _after_two_han(text: str, suffix: str) -> bool:
    r"""The suffix comes after two Chinese characters ([\u4e00-\u9fff]{2}SUFFIX is found)."""
    at = text.find(suffix, 2)
    while at >= 0:
        if "\u4e00" <= text[at - 2] <= "\u9fff" and "\u4e00" <= text[at - 1] <= "\u9fff":
            return True
        at = text.find(suffix, at + 1)
    return False


_AFRICA = frozenset(vocab.words("africa"))  # 非 of Africa before a place, not a negation
_ELEMENTS = frozenset(vocab.words("elements"))


def _only_in_question_terms(answer_key: str, form: str, question_key: str) -> bool:
    """Every mention of the form runs on into a word of the question (阿贝数 for 阿贝 when the question asks about
    阿贝数)."""
    starts = _starts(answer_key, form)
    return bool(starts) and all(i + len(form) < len(answer_key)
                                and answer_key[i:i + len(form) + 1] in question_key for i in starts)


def _book_not_chapter(ref: Reference, answer: _Answer) -> bool:
    """The reference is a book's chapter (《礼记·学记》) and the answer names the book only (出自《礼记》)."""
    titles = [rules.key(t) for t in _OTHER_TITLES_MASKED_RE1.findall(answer.affirmed)]
    return bool(ref.book) and bool(titles) and all(t == ref.book for t in titles)


def _transliterated(ref: Reference, answer_key: str) -> bool:
    """A reference of four Chinese characters or more, found once the characters that transliterations use
    interchangeably are folded (北卡罗来纳 for 北卡罗莱纳): likely the same name, spelt otherwise."""
    if ref.foreign or len(ref.main) < 4 or not _CJK.fullmatch(ref.main[0]):
        return False
    folded = answer_key.translate(_TRANSLIT)
    return any(len(f) >= 4 and f not in answer_key and f.translate(_TRANSLIT) in folded for f in ref.forms)


def _full_title(title: str, form: str) -> bool:
    """The title is the reference's full name: the reference last, after a phrase with 的
    (《关于消耗臭氧层物质的蒙特利尔议定书》 for 蒙特利尔议定书)."""
    return title.endswith(form) and title[:-len(form)].endswith("的")


_OTHER_TITLES_MASKED_RE1 = re.compile(r"《([^》]*)》")
_OTHER_TITLES_MASKED_RE2 = re.compile(r"[·•:：]")


def _other_titles_masked(ref: Reference, text: str) -> str:
    """The text without the 《titles》 that hold the reference inside a longer name and are neither the reference
    nor have it as a part (《新元史》 for 元史,
    《李太白全集》 for 李白; 《史记·项羽本纪》 and 《书经·洪范》 stay for 史记 and 尚书·洪范)."""
    def other(m: re.Match) -> str:
        title = m.group(1)
        keys = {rules.key(title), *(rules.key(part) for part in _OTHER_TITLES_MASKED_RE2.split(title))}
        inside = any(f in key and f != key and not _full_title(key, f) for f in ref.forms for key in keys)
        return "《》" if inside and not keys & set(ref.forms) else m.group(0)
    return _OTHER_TITLES_MASKED_RE1.sub(other, text)


_NO = frozenset(vocab.words("no"))
_YES = frozenset(vocab.words("yes"))


def _yes_no(ref: Reference, answer: _Answer) -> Verdict | None:
    """A yes / no reference (否, 是) and an answer whose first clause is a bare yes or no (没有。…)."""
    polarity = "no" if ref.main in _NO else "yes" if ref.main in _YES else None
    first = rules.key(_CLAUSE_END.split(answer.whole.strip(), maxsplit=1)[0])
    said = "no" if first in _NO else "yes" if first in _YES else None
    if polarity is None or said is None:
        return None
    return Verdict("CO" if said == polarity else "IN", True, "yes_no")


_HONORIFICS = frozenset(vocab.words("honorifics"))


_PARTICLES = frozenset({"", *vocab.words("name_particles")})


# How alike two given names must sound to be one (于尔根 / 尤尔根, jürgen): stricter than for surnames, since given
# names are short and many sound half alike (ronald / irving, 奥拉齐奥 / 阿尔泰米西娅).
GIVEN_SOUND_ALIKE = 0.7
_FULL_NAME_OF = re.compile(r"(?:全名|全称|本名|原名|名字)[^,;。]{0,6}$")


def _same_given(said: str, given: str) -> bool:
    """Two given names that are one: equal, one the other's start (路易 / 路易斯), or sounding alike."""
    return said == given or min(len(said), len(given)) >= 2 and (said.startswith(given) or given.startswith(said)) \
        or names.sound_alike(said, given, GIVEN_SOUND_ALIKE)


_OTHER_GIVEN_NAME_RE1 = re.compile(r"[·•\s]+")
_OTHER_GIVEN_NAME_RE2 = re.compile(r"^[^·•]*[是为叫即由的和与及家者国]")


def _other_given_name(ref: Reference, answer: _Answer, surname: str) -> bool:
    """Every mention of the reference's surname comes with another given name or genus than the reference's
    (威廉·道尔顿 or William Dalton for 约翰·道尔顿, Daphnia tibetana for Daphniopsis tibetana): another person or
    species. Initials (J. Dalton) and titles (Dr. Dalton) are no other name."""
    text = answer.affirmed.replace("*", "")
    latin = _LATIN.search(surname)
    if not ref.given or surname not in text or not latin and "·" not in text and "•" not in text:
        return False  # no given name before the surname can be found (a Chinese one ends in ·: 谢尔盖耶维奇·)
    found = _names_before(text, surname, bool(latin))  # (start, the surname's start)
    chains = [[rules.key(p) for p in _OTHER_GIVEN_NAME_RE1.split(_OTHER_GIVEN_NAME_RE2.sub("", text[start:given]))
               if rules.key(p) not in _PARTICLES]
              for start, given in found]  # 科西莫·德·美第奇: 德 is no given name; 作品是奥拉齐奥·…, 法国科学家路易·…: no part of it
    if not chains or any(not chain or len(chain[-1]) < 2 or chain[-1] in _HONORIFICS
                         or any(_same_given(n, g) for n in chain for g in ref.given) for chain in chains):
        return False  # 于尔根 for 尤尔根, 加齐·阿吉勒·亚瓦尔 for 加齐·亚瓦尔: the same name, spelt or told otherwise
    if any(len(g) >= 3 and _latin_word_in(text, g) for g in ref.given):
        return False  # 乔治·欧拉(George Andrew Olah) for 安德鲁·欧拉(George A. Olah): its own given name is there
    if any(_FULL_NAME_OF.search(text, 0, start) for start, _ in found):
        return True  # 是苏格兰人贝尔，全名好像是亚历山大·贝尔: the bare surname is the person named in full
    spots = {given + len(surname) for _, given in found}
    return all(end in spots for end in _surname_ends(text, surname, bool(latin)))


# The patterns of a surname's mentions (_names_before, _surname_ends) hold the surname, so each surname would need
# patterns of its own, compiled at 1 ms each (a reference's surname is new each time). These functions find what
# finditer finds with them, from precompiled patterns of what surrounds the surname and str.find for the surname.
# One name: it ends where its letters (characters) end, so a surname that follows one to three names can follow
# only the third, second or first of them.
_LATIN_NAME = re.compile(r"[a-z][a-z-]*\.?\s+")
_HAN_NAME = re.compile(r"[\u4e00-\u9fff]{1,7}[·•]")
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")  # [a-z]: ASCII only


def _odd_surname(surname: str) -> bool:
    """A surname the shortcuts do not read (never a key): empty, or beginning or ending with a space."""
    return not surname or surname[0].isspace() or surname[-1].isspace()


def _names_before(text: str, surname: str, latin: bool) -> list[tuple[int, int]]:
    r"""(start, the surname's start) of each match of ((?:[a-z][a-z-]*\.?\s+){1,3})SURNAME(?![a-z]) (latin) or
    ((?:[\u4e00-\u9fff]{1,7}[·•]){1,3})SURNAME, in finditer's order: one to three names, then the surname."""
    if _odd_surname(surname):
        before = (rf"((?:[a-z][a-z-]*\.?\s+){{1,3}}){re.escape(surname)}(?![a-z])" if latin
                  else rf"((?:[\u4e00-\u9fff]{{1,7}}[·•]){{1,3}}){re.escape(surname)}")
        return [(m.start(), m.end(1)) for m in _compiled(before).finditer(text)]
    name, found, at, size = _LATIN_NAME if latin else _HAN_NAME, [], 0, len(surname)
    while (first := name.search(text, at)) is not None:
        if text.find(surname, first.end()) < 0:
            break  # a surname follows a name, and no name that starts later ends before this one
        ends = [first.end()]
        while len(ends) < 3 and (more := name.match(text, ends[-1])) is not None:
            ends.append(more.end())
        at = first.start() + 1  # no surname after these names: the next match starts further on
        for end in reversed(ends):  # the most names first, as the pattern's {1,3} tries them
            if text.startswith(surname, end) and not (latin and text[end + size:end + size + 1] in _LOWER):
                found.append((first.start(), end))
                at = end + size
                break
    return found


def _surname_ends(text: str, surname: str, latin: bool) -> list[int]:
    r"""Where each match of (?<![a-z.\s])\s*SURNAME(?![a-z])|(?<![a-z])\sSURNAME(?![a-z]) (latin) or
    (?<![·•])SURNAME ends, in finditer's order: the surname's mentions, given names or none before them."""
    if _odd_surname(surname):
        bare = (rf"(?<![a-z.\s])\s*{re.escape(surname)}(?![a-z])|(?<![a-z])\s{re.escape(surname)}(?![a-z])" if latin
                else rf"(?<![·•]){re.escape(surname)}")
        return [m.end() for m in _compiled(bare).finditer(text)]
    ends, size, at = [], len(surname), text.find(surname)
    while at >= 0:
        if _mentioned_at(text, at, size, latin):
            ends.append(at + size)
            at = text.find(surname, at + size)  # matches do not overlap
        else:
            at = text.find(surname, at + 1)
    return ends


def _mentioned_at(text: str, at: int, size: int, latin: bool) -> bool:
    r"""The surname at `at` is a match of _surname_ends' pattern. In Latin: the spaces before it (\s*) follow no
    letter or full stop, or it follows one space that follows no letter; no letter follows it."""
    if not latin:
        return at == 0 or text[at - 1] not in "·•"
    if text[at + size:at + size + 1] in _LOWER:
        return False
    start = at
    while start and text[start - 1].isspace():
        start -= 1
    if start == 0 or text[start - 1] not in _LOWER and text[start - 1] != ".":
        return True
    return at >= 1 and text[at - 1].isspace() and (at == 1 or text[at - 2] not in _LOWER)


def _latin_word_in(text: str, word: str) -> bool:
    """(?<![a-z])WORD(?![a-z]) is found in the text: the word, not inside a longer Latin one."""
    at = text.find(word)
    while at >= 0:
        if (at == 0 or text[at - 1] not in _LOWER) and text[at + len(word):at + len(word) + 1] not in _LOWER:
            return True
        at = text.find(word, at + 1)
    return False


def _bold_near(main: str, answer: _Answer) -> bool:
    """The answer sets in bold (one or two spans) something that holds at least 60% of a reference's character
    bigrams, at least four characters long: the answer it gives, in other words (**古田县的临水宫** for 古田临水宫,
    **1054年东西教会大分裂** for 1054年的教会大分裂)."""
    spans = [rules.key(b) for b in _BOLD.findall(answer.affirmed)]
    wanted = _bigrams(_PARSE_REFERENCE_RE4.sub("", main))
    if not 0 < len(spans) <= 2 or len(main) < 4 or not wanted or "《" in answer.affirmed:
        return False  # a title is a name: 《中国哲学史》 is not 《中国哲学简史》
    return any(len(_bigrams(b) & wanted) >= 0.6 * len(wanted) for b in spans)


_OTHER_FOREIGN_NAME_RE1 = re.compile(r"\s?[·•]\s?")


def _other_foreign_name(ref: Reference, answer: _Answer) -> bool:
    """The reference is a foreign person's name and the answer gives foreign names (·) that share no part with it
    (安布鲁瓦兹·帕雷 for 皮埃尔·费查): another person, whatever its Latin words sound like."""
    if not ref.given:
        return False
    mine = {rules.key(p) for f in ref.forms for p in _FORMS_RE2.split(f)} | set(ref.weak) | set(ref.given)
    said = [{rules.key(p) for p in _OTHER_FOREIGN_NAME_RE1.split(name)} for name in _FOREIGN_NAME.findall(answer.affirmed)]
    return bool(said) and not any(parts & mine for parts in said)


def _sibling(term: str, form: str) -> bool:
    """Another term of the same kind as the reference's form: as long, ending as it does, opening otherwise (低副 for
    高副, 南宋 for 北宋)."""
    return term != form and len(term) == len(form) >= 2 and term[-1] == form[-1] and term[0] != form[0]


_OTHER_WORDS_BEFORE_RE1 = re.compile(r"[\u4e00-\u9fff]+$")


def _other_words_before(main: str, answer_key: str, core: str) -> bool:
    """The Chinese words right before a reference's Latin core end as the answer's do but differ before that
    (月刊少年Jump for 周刊少年Jump): another name built on the same words (阿敏塔 Aminta for 阿密塔Aminta is a
    transliteration, not that)."""
    mine = _OTHER_WORDS_BEFORE_RE1.search(main[:main.rfind(core)])
    if not mine:
        return False
    mine = mine.group(0)
    said = [m.group(0)[-len(mine):] for m in _compiled(r"[\u4e00-\u9fff]+(?=" + re.escape(core) + ")").finditer(answer_key)]
    return any(s != mine and len(os.path.commonprefix([s[::-1], mine[::-1]])) >= 2 for s in said)


_PARTLY_SOUNDS_LIKE_RE1 = re.compile(r"[\u4e00-\u9fff]{3,12}")


def _partly_sounds_like(main: str, answer: _Answer) -> bool:
    """A Latin word of the answer sounds like a transliterated part (three to five characters) of a Chinese
    reference: 菲尔兹 in 菲尔兹奖 and Fields, 格罗宁根 in 格罗宁根大学 and Groningen, 泊松 in 泊松分布 and Poisson."""
    if not _PARTLY_SOUNDS_LIKE_RE1.fullmatch(main) or not _LATIN_WORD.search(answer.affirmed_key):
        return False
    parts = {main[i:j] for i in range(len(main)) for j in range(i + 3, min(i + 5, len(main)) + 1)}
    return names.latin_sound_match(sorted(parts), answer.affirmed, True) >= PARTIAL_SOUND_ALIKE


_LATIN_GLOSS = re.compile(r"[\u4e00-\u9fff]\s*\(\s*([a-z][a-z .'-]*[a-z])\s*\)")  # 普朗克(max planck)


_SCRIPT_ALIAS_RE1 = re.compile(r"[\u4e00-\u9fff]{2,}")
_SCRIPT_ALIAS_RE2 = re.compile(r"[\u4e00-\u9fff]{2}\s*\(\s*[a-z]")
_SCRIPT_ALIAS_RE3 = re.compile(r"[a-z]{4}")
_SCRIPT_ALIAS_RE4 = re.compile(r"[a-z]{3,}")


def _script_alias(ref: Reference, answer: _Answer, question: str) -> str:
    """For a name asked in one script and answered in the other: 'transliteration_alias' when the answer has a
    name that sounds like the reference (Newton for 牛顿, each of Watson and Crick for 沃森和克里克, 哈贝马斯 for
    Habermas), a likely alias; 'chinese_name' when a Chinese answer for a Latin name sounds unlike it (it may
    be its Chinese name all the same); '' when neither, or when the answer refuses."""
    answer_key = answer.affirmed_key
    latin_answer = _LATIN.search(answer_key) and _SCRIPT_ALIAS_RE1.fullmatch(ref.main)
    if not (latin_answer or names.is_latin_name(ref.main)) or _refusal(answer) == "refusal" \
            or not (ref.foreign or _PERSON_QUESTION.search(question) or _PLACE_QUESTION.search(question)):
        return ""
    if latin_answer:
        if any(_LATIN.search(f) for f in ref.forms) or _SCRIPT_ALIAS_RE2.search(answer.affirmed):
            return ""  # the reference's own Latin form was not matched; 斯宾诺莎(Spinoza) glosses another name
        wanted = ref.items or ((ref.main, *ref.weak),)  # every item of a list: Watson and Crick
        alike = all(names.latin_sound_match(forms, answer.affirmed, ref.foreign) >= names.SOUND_ALIKE
                    for forms in wanted)
        return "transliteration_alias" if alike else ""
    if _HAN.search(answer_key) and not any(_HAN.search(f) for f in ref.forms):  # (瑞士 for Switzerland: matched)
        glosses = [g for g in _LATIN_GLOSS.findall(answer.affirmed) if _SCRIPT_ALIAS_RE3.search(g)]  # not 普朗特数(Pr)
        if glosses and not any(w[:4] in ref.main for g in glosses for w in _SCRIPT_ALIAS_RE4.findall(g)):
            return "chinese_name"  # 马克斯·普朗克(Max Planck) for Ludwig Prandtl: its own spelling names another
            # (Brookes for Brooks: the same first four letters, a spelling variant)
        # 根据文档, 答案是, 我不太确定: no part of a name, whatever they sound like
        said = REFUSAL.sub(" ", _ANSWER_LEAD.sub("", _FILLER_OPENING.sub(" ", answer.affirmed)))
        if not _PLACE_QUESTION.search(question):  # 北京市 for Stuart Biggs: a known place is no person's name
            for place in sorted(places.places_in(said), key=len, reverse=True):
                said = said.replace(place, " ")
        alike = names.chinese_sound_match([names.fold(f) for f in (ref.main, *ref.weak)], said)
        return "transliteration_alias" if alike >= names.SOUND_ALIKE else "chinese_name"
    return ""


def _same_formula(reference: str, prediction: str, affirmed: str) -> bool:
    """The reference is a chemical formula with a count (C7H5NaO2) and every formula the answer asserts (read with
    its case from the prediction, kept if its affirmed text still holds it: not 肯定不是…) has its atoms (C6H5COONa;
    Be₃Al₂Si₆O₁₈ for Be3Al2(SiO3)6). Isomers share them too, so this is never sure."""
    atoms = _formula_atoms(reference)
    if atoms is None:
        return False
    written = [rules.formula_counts(m.group(0)) for m in rules.FORMULA.finditer(unicodedata.normalize("NFKC", prediction))
               if m.group(0).lower() in affirmed]
    written = [w for w in written if w]
    return bool(written) and all(w == atoms for w in written)


@lru_cache(maxsize=4096)
def _formula_atoms(reference: str):
    reference = unicodedata.normalize("NFKC", reference.strip())
    return rules.formula_counts(reference) if _PARSE_REFERENCE_RE4.search(reference) else None


def _only_negated_or_compound(answer_key: str, form: str) -> bool:
    """Every mention of the form is its opposite (非对称加密 for 对称加密; not 南非开普敦) or, for an element, a
    compound's name (碘化氢气体 for 氢气)."""
    starts = _starts(answer_key, form)
    return bool(starts) and all(i > 0 and (answer_key[i - 1] in "非反无" and answer_key[i - 2:i] not in _AFRICA
                                           or answer_key[i - 1] == "化" and form[0] in _ELEMENTS) for i in starts)
