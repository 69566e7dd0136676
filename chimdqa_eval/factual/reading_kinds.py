"""Answers vaguer than the reference, which the rules grade less specific (NA) rather than wrong: a description by
kind instead of a name (一位英国作家: _DESCRIPTION, unless a name goes with it), the kind or class alone
(_kind_only, _nothing_else, _asked_kind_described), the head or the owner of a compound (_broader_head, _owner_only),
a broader taxon or a code's opening (_broader_rank, _code_prefix), a dynasty without its half
(_less_specific_dynasty) and a period instead of a year (_ERA, _AGES). Kind words come from data/kinds.txt."""
from __future__ import annotations

import re
from functools import lru_cache

from chimdqa_eval.factual import places, rules
from chimdqa_eval.factual import vocabulary as vocab
from chimdqa_eval.factual.gate import Hinted, gated
from chimdqa_eval.factual.reading_answer import _Answer
from chimdqa_eval.factual.reading_question import _asked_kind, _PERSON_QUESTION
from chimdqa_eval.factual.reading_reference import Reference
from chimdqa_eval.factual.reading_text import (_CJK, _clause_at, _compiled, _FILLER, _has_content,
                                               _positions, _split_clauses, _starts)
from chimdqa_eval.factual.rules import REFUSAL


_HALVES = {dynasty: line[0] for line in vocab.groups("dynasty_halves") for dynasty in line[1:]}  # 西汉 and 东汉 are 汉; 后汉, 南唐 are other states
_SPLIT_DYNASTY = re.compile(rf"^([东西南北前后])([{vocab.chars('dynasties')}])(?:代|朝)?")  # 西汉, 西晋太始年间
# A part of a period (新石器时代晚期, 明朝末年): the period without it is less specific.
_AGES = re.compile(vocab.pattern("ages"))  # ages, whose 代 names no dynasty
_AGE = re.compile(vocab.pattern("age_words"))
_PERIOD_PART = re.compile(rf"(.{{2,}}?)(?:{vocab.pattern('period_parts')})$")

# An indefinite description instead of a name (一位俄国化学家, 某位作家, 一座城市, 一种啮齿类动物, 一场工人运动来命名的;
# clean() writes 一 as 1): an indefinite kind of thing, then at most a verb phrase to the clause's end (…在20世纪初提出
# 的, …上连载的), so that no name follows it (一家公司西门子, 一位叫…的 name someone).
_KIND = vocab.pattern("kind_nouns")  # data/kinds.txt
_DESCRIPTION = gated(r"(?<![第\d.])(?:一|1|某)(?:位|个|座|种|名|家|部|本|类|场|项|则|款|所|条|支|首|篇|门|件|只|头|批"
                          r"|张|幅|颗|枚|块|片|艘|架|辆|台|间|栋|处|尊|把|根|匹|口|封|次|届|味|套|份)"
                          r"[^,;。!?\n]{0,24}?(?:" + _KIND + r")(?:(?:的|在|于|所|上|里|中|来|为|被|之|有关|相关|提出|命名|写|作|创|发明|发现|设计|建"
                          r"|开发|推出|主持|领导|拍|唱|演|奉|编|撰|著|批|评|选|认定|拿|获|得|取得|读|毕业|任教|工作|出版|发表"
                          r"|收藏|保存|演变|发展|改组|逐步|首次)"
                          r"[^,;。!?\n]{0,10})?(?=[,;。!?\n]|$)")
# Something named only by its kind (一种含氯的消毒液, 一档选秀节目, 某部骑士文学手稿), not an ordinal (第一个) or a count.
_INDEFINITE = re.compile(r"(?<![第\d.一二三四五六七八九十几])(?:一|1|某)(?:种|类|档|处|部|个|位|家|座|款|项|门)"
                         r"(?![一二三四五六七八九十\d])")
_NAMING = re.compile(r"叫|名为|称为|即|就是|是")

# A period without a number instead of a year (永乐年间): less specific, not a wrong year. Periods that are
# ranges (明朝, 19世纪) are read as numbers by rules.find_numbers.
_ERA = re.compile(r"年间|时期|初年|末年|年代|近代|现代|古代|当代|上个?世纪|战后|战前|期间|年前|前后|早年|晚年")

_APPOSED_NAME_RE1 = re.compile(r"[,;]\s*$")


def _apposed_name(before: str, question: str) -> bool:
    """The description follows a comma right after a short name of its own (是狄更斯，一位英国作家): it is of that
    name."""
    if not _APPOSED_NAME_RE1.search(before):
        return False
    clauses = [c for c in _split_clauses(before) if rules.key(c)]
    named = "".join(ch for ch in rules.key(clauses[-1]) if ch not in _FILLER and ch not in question) if clauses else ""
    return 2 <= len(named) <= 4


_KIND_WORD = re.compile(f"(?:{_KIND})")
# What may follow the kind in a description (一种…细菌引起的, 一家公司开发的): particles and verbs, not a name.
_AFTER_KIND = frozenset("的是为在所由被把将了着过上中里内来去之和与及或也都就还又乃即,;。!?\n开发创设制推提出建引写拍唱演主领研生产"
                        "用做作成组构负担位于属")


_NAMED_AFTER_KIND_RE1 = re.compile(r"[\u4e00-\u9fff·]{2,5}?(?=[开发创设制推提出建引写拍唱演主领研生产用])")


def _named_after_kind(text: str, indefinite: re.Match) -> bool:
    """A name follows the kind the description gives (是德国的一家公司西门子开发的): it names, not describes."""
    clause = _clause_at(text[indefinite.start():], 0)
    for kind in _KIND_WORD.finditer(clause, len(indefinite.group(0))):
        name = _NAMED_AFTER_KIND_RE1.match(clause[kind.end():])
        if len(kind.group(0)) >= 2 and name and not set(name.group(0)) & _AFTER_KIND:
            return True  # 一家公司|西门子|开发的
    return False


_DESCRIBED_NAME_RE1 = re.compile(r"([\u4e00-\u9fff]{2,6})(?:是|为)\s*$")


def _described_name(text: str, indefinite: re.Match, question: str) -> bool:
    """The description is of a name the answer gives as its subject (牛顿是一位英国科学家, 上海是一座大都市)."""
    subject = _DESCRIBED_NAME_RE1.search(text[:indefinite.start()])
    return bool(subject) and subject.group(1)[0] not in "它他她这那其该此" and \
        len([ch for ch in subject.group(1) if ch not in _FILLER and ch not in question]) >= 2


def _named_rival(ref: Reference, text: str, indefinite: re.Match, question: str) -> bool:
    """Beside the thing named by its kind, a name of the reference's own kind (its last character: 鲸鱼座 for
    双鱼座, 平安时代 for 江户时代, 甘肃省 for 青海省) outside that description (一项双边协定 for 冲绳归还协定 is the
    description itself): a rival answer, not only a vaguer one."""
    last = ref.main[-1:] if ref.main and _CJK.search(ref.main[-1]) else ""
    if not last:
        return False
    own = (indefinite.start(), indefinite.start() + len(_clause_at(text[indefinite.start():], 0)))
    for at in _positions(text, last):  # a word of one to three characters and the last one (鲸鱼座), not in the description
        word = text[max(0, at - 3):at + 1]
        word = word[next((i for i in range(len(word) - 1, -1, -1) if not _CJK.match(word[i])), -1) + 1:]
        if len(word) >= 2 and not own[0] <= at < own[1] and word not in ref.main and word not in question:
            return True
    return False


_WORK_OF = re.compile(r"[\u4e00-\u9fff]的(?:一部|某部|一本|一篇|某篇|一首)?(?:著作|作品|书|医书|诗集|文集|文章|小说|散文|随笔"
                      r"|杂文|诗|诗歌|剧本|戏剧)(?=[,;。!?\n]|$)")


def _asked_kind_described(text: str, question: str) -> bool:
    """The answer only says that it is one of the kind the question asks for (任什么军衔？ 是一个士官级别的低阶军衔;
    哪一个县？ 广州府下辖的一个县): a description, no name."""
    kind = _asked_kind(question)
    return bool(kind) and kind in text and any(not _NAMING.search(span) for span in _ones_of_kind(text, kind))


# One (一个, 某) of some kind: where _ones_of_kind's spans may start. 某's counter is optional.
_ONE_OF_A_KIND = re.compile(r"(?<![第\d.])(?:[一1][个种位座家所类项部本条支名处片]|某)")
_KIND_COUNTERS = frozenset("个种位座家所类项部本条支名处片")
_CLAUSE_STOP = re.compile(r"[,;。!?\n]")


def _ones_of_kind(text: str, kind: str) -> list[str]:
    r"""The spans that one of the kind (一个…军衔, 某…县) fills to a clause's end, as finditer gives the matches of
    (?<![第\d.])(?:[一1][个种…]|某[个种…]?)[^,;。!?\n]{0,24}?KIND(?=[,;。!?\n]|$) for a kind of Chinese
    characters, without a pattern compiled for each kind (a compile costs 1 ms, a question's kind is new each time).
    Nothing between may end a clause, so a span runs from its start to the first clause end after it, and it is one
    when that end comes right after the kind, 0 to 24 characters after the counter (before or after 某's own)."""
    spans, at = [], 0
    while (one := _ONE_OF_A_KIND.search(text, at)) is not None:
        stop = _CLAUSE_STOP.search(text, one.end())
        end = stop.start() if stop else len(text)
        start, opening = end - len(kind), one.end()
        widest = opening + 1 if text[one.start()] == "某" and text[opening:opening + 1] in _KIND_COUNTERS else opening
        if opening <= start <= widest + 24 and text.startswith(kind, start):
            spans.append(text[one.start():end])
            at = end
        else:
            at = one.start() + 1
    return spans


def _less_specific_dynasty(ref: Reference, answer: _Answer) -> bool:
    """汉代 for 西汉, 宋朝 for 北宋: the dynasty without the reference's 东/西/南/北/前/后, and no other half."""
    split = _SPLIT_DYNASTY.match(ref.main)
    if not split:
        return False
    name = split.group(2)
    if _compiled(rf"[东西南北前后]{name}").search(answer.affirmed):
        return False
    return _compiled(rf"{name}(?:代|朝)|(?<![\u4e00-\u9fff]){name}(?![\u4e00-\u9fff])").search(answer.affirmed) is not None


# Words that name a kind of person or thing, not one of them (作家, 化学家, 哺乳动物, 自然灾害).
# (Hinted, gate.py: every match holds one of the words; the pattern, opening with a repeat, was tried at every place
# of a text, each place with up to four starts of the word list)
_KIND_WORDS = Hinted(re.compile(rf"[\u4e00-\u9fff]{{0,3}}(?:{vocab.pattern('kind_words')})|{vocab.pattern('thing_kinds')}"),
                     f"{vocab.pattern('kind_words')}|{vocab.pattern('thing_kinds')}")
_NATIONALITY = re.compile(r"[\u4e00-\u9fff]{1,4}(?:国|洲)(?:的)?|[东西南北中]部|古代|现代|当代|近代|著名的?|知名的?|一位|某位|某个|一种|某种")


_KIND_OF = re.compile(r"(?:的|之)(?:一|1)(?:种|类|个分支|个品种)(?=[,;。!?\n]|$)")
_ONE_OF = re.compile(r"[\u4e00-\u9fff\d]{2,6}(?:之一|[中里]的[一1][部个种位本首篇座支])(?=[,;。!?\n]|$)")
# (出自儒家的五经之一, 出自二十四史中的一部: one of a named set)
_RANKS = "界门纲目科属"  # taxonomic ranks, broadest first


_CODE_PREFIX_RE1 = re.compile(r"([a-z]|\d+)[a-z0-9]+")
_CODE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")  # [a-z0-9]: ASCII only
_TYPE_WORDS = frozenset("型类级")


def _code_prefix(reference: str, text: str) -> bool:
    """The reference is a code of a letter or digits and more (F4IV, M1IIIab, 2B) and the answer gives only its
    opening as a type or class (F型恒星, M型红巨星, 2类): what kind it is, less specific."""
    code = _CODE_PREFIX_RE1.fullmatch(reference)
    if not code:
        return False
    after = _after_code_openings(text, code.group(1))
    if any(ch in _CODE_CHARS for ch in after):  # 可能是F5V: another code
        return False
    return any(ch in _TYPE_WORDS for ch in after)


def _after_code_openings(text: str, opening: str) -> list[str]:
    """The character after each place where the code's opening starts, not inside a code ('' at the end): what
    (?<![a-z0-9])OPENING may be followed by, without a pattern compiled for each reference."""
    out, at = [], text.find(opening)
    while at >= 0:
        if at == 0 or text[at - 1] not in _CODE_CHARS:
            out.append(text[at + len(opening):at + len(opening) + 1])
        at = text.find(opening, at + 1)
    return out


def _broader_rank(reference: str, text: str) -> bool:
    """The reference names a taxon of one rank (木兰纲, 伞形科) and the answer one of a broader rank only
    (被子植物门, 伞形目): what it belongs to, less specific."""
    rank = reference[-1:] if len(reference) >= 2 else ""
    if not rank or rank not in _RANKS:
        return False
    narrower = _RANKS[_RANKS.index(rank):]
    found = {m.group(1) for m in _compiled(rf"[\u4e00-\u9fff]{{2,}}?([{_RANKS}])(?:植物|动物|真菌|细菌)?[上中里内]?"
                                             r"(?![\u4e00-\u9fff])").finditer(text)}  # 伞形科植物, 寄生在樟科植物上
    return bool(found) and not found & set(narrower)


_NOTHING_ELSE_RE1 = re.compile(r"\s*(?:在|按照?|根据)[^,;。]*(?:里|中|内|上|来看|来说|看)\s*")
_NOTHING_ELSE_RE2 = re.compile(r"[a-z]{2,}")
_NOTHING_ELSE_RE3 = re.compile(r"《|·")
_NOTHING_ELSE_RE4 = re.compile(r"\s*(?:它|他|她|其)?(?:叫|名叫|名为|称为|叫做)")


def _nothing_else(answer: _Answer, question: str) -> bool:
    """No clause besides the description reads as a name of its own: a short clause (是狄更斯，一位英国作家), a
    Latin word, a 《title》 or a foreign name with ·. Longer clauses that say more about it (古典社会学的奠基人之一,
    卢瑟福的学生, 姓我记不住了) leave it a description."""
    def names_one(clause: str) -> bool:
        if _NOTHING_ELSE_RE1.fullmatch(clause):
            return False  # 在APG IV系统里: the setting, not a name
        key = "".join(ch for ch in rules.key(clause) if ch not in _FILLER and ch not in question)
        latin = set(_NOTHING_ELSE_RE2.findall(clause)) - set(_NOTHING_ELSE_RE2.findall(question.lower()))  # 在APG体系里
        return 0 < len(key) <= 4 or bool(latin) or bool(_NOTHING_ELSE_RE3.search(clause)) \
            or bool(_NOTHING_ELSE_RE4.match(clause))  # …，叫民族阵线

    return not any(names_one(c) for c in _split_clauses(answer.affirmed)
                   if not _DESCRIPTION.search(c) and not REFUSAL.search(c) and not _asked_kind_described(c, question))


_HAN_ONLY = re.compile(r"[\u4e00-\u9fff]+")
_HEAD_LEAD = frozenset("是为在的叫到用了即")  # what may stand before a head said on its own (属于佛教, 骑的是白象)
_TAXON_RANKS = frozenset("界门纲目科属种族")  # a taxon's name is a name, not a compound: 蝉科 is not broader than 蜡蝉科


_BROADER_HEAD_RE1 = re.compile(r"[反非无不逆脱去抗]")


def _broader_head(ref: Reference, answer: _Answer, question: str) -> bool:
    """The answer names only the head of the reference's compound, the broader kind it is one of (佛教 for 藏传佛教,
    政治学 for 地缘政治学, 白象 for 六牙白象), standing on its own (not 流感嗜血杆菌 for 百日咳杆菌) and with little
    else said. Chinese compounds put the head last; a person's or a place's name is no compound of this kind."""
    main = ref.main
    opens_with_place = any(start == 0 for start, _, _ in places.place_spans(main))
    if ref.foreign or ref.items or len(main) < 3 or not _HAN_ONLY.fullmatch(main) or main[-1] in _TAXON_RANKS \
            or _PERSON_QUESTION.search(question) or answer.alternative or opens_with_place:
        return False  # 乾隆帝 for 清高宗乾隆帝; 蝉科 for 蜡蝉科; 瓦努阿图…岛
    question_key, text = rules.key(question), answer.affirmed_key
    k = next((k for k in range(1, len(main) - 1) if main[k:] in text and main[k:] not in question_key), 0)
    # (硝化作用 for 反硝化作用, 核糖核酸 for 脱氧核糖核酸: a prefix that negates or removes makes another thing)
    head = main[k:] if k and not _BROADER_HEAD_RE1.search(main[:k]) else ""
    if not head:
        return False
    alone = all(i == 0 or text[i - 1] in _HEAD_LEAD or text[i - 2:i] == "属于" for i in _starts(text, head))
    return alone and _little_else(text.replace(head, ""), question_key)


def _owner_only(ref: Reference, answer: _Answer, question: str) -> bool:
    """The answer names only the opening words of the reference, what it belongs to (凤凰卫视 for 凤凰卫视资讯台,
    乌拉尔语系 for 乌拉尔语系萨莫耶德语族), standing on its own (not 凤凰卫视中文台) and with little else said."""
    main = ref.main
    if ref.foreign or ref.items or len(main) < 5 or not _HAN_ONLY.fullmatch(main) or _PERSON_QUESTION.search(question) \
            or answer.alternative:
        return False
    question_key = rules.key(question)
    owner = next((main[:k] for k in range(len(main) - 2, 2, -1)
                  if main[:k] not in question_key and main[:k] in answer.affirmed_key), "")
    if not owner or len(owner) * 5 < len(main) * 2:  # at least 40% of it
        return False
    ends = [answer.affirmed[at + len(owner):] for at in _starts(answer.affirmed, owner)]
    alone = bool(ends) and all(_OWNER_END.match(e) for e in ends)
    return alone and _little_else(answer.affirmed_key.replace(owner, ""), question_key)


def _little_else(rest_key: str, question_key: str) -> bool:
    """At most four characters said besides the question's words and filler (what is left once a name is taken out)."""
    return sum(ch not in question_key and ch not in _FILLER for ch in rest_key) <= 4


_OWNER_END = re.compile(r"\s*(?:[,;。!?\n*)]|的|旗下|下属|$)")


def _kind_only(answer: _Answer, question: str) -> bool:
    """The answer names a kind of person or thing and perhaps where it is from, and nothing else (是英国作家,
    德国化学家): less specific than a name. Not for a title (《…》), which is a name whatever its words."""
    if "《" in answer.affirmed:
        return False
    text = rules.key(answer.affirmed)
    rest = _KIND_WORDS.sub("", text)
    if rest == text:
        return False
    rest = _NATIONALITY.sub("", rest)
    for name in places.places_in(rest):
        rest = rest.replace(name, "")
    return not _has_content(rest, question)


@lru_cache(maxsize=64)
def _half_pattern(dynasty: str) -> re.Pattern:
    """A half of a split dynasty (东汉, 西汉 for 汉)."""
    return re.compile(rf"[东西南北前后]{dynasty}")


@lru_cache(maxsize=16)
def _half_in_text(dynasty: str) -> re.Pattern:
    """One half of a dynasty that has halves (西汉 for 汉), not a street or district named after it (东汉路)."""
    return re.compile(rf"[{_HALVES[dynasty]}]{dynasty}(?![\u4e00-\u9fff]{{0,2}}(?:路|街|区|县|市|省))")


_DYNASTY_IN_TEXT = re.compile(r"[\u4e00-\u9fff](?:代|朝)")
