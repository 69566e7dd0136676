"""Where a found form stands among the answer's claims, for the rules that ask whether a match is the answer: beside
another candidate (_competing, _others_of_kind, _other_candidate, _CANDIDATE_PAIR), in a list (_only_in_lists,
_extra_items, _only_some_items), in a clause that negates or compares (_doubt), set aside or turned from
(_set_aside, _frame, _turns_to_other), in a clause less like the question than another (_closer_clause,
_parallel), after another claim (_other_lead_claim), with a role the question does not ask (_role_after,
_split_roles); and a short claim before a refusal (_claim_before_refusal)."""
from __future__ import annotations

import re
from functools import lru_cache

from chimdqa_eval.factual import places, rules
from chimdqa_eval.factual import vocabulary as vocab
from chimdqa_eval.factual.gate import first_characters, gated
from chimdqa_eval.factual.reading_answer import _ALTERNATIVE_START, _Answer, _ASKS, _LEANS
from chimdqa_eval.factual.reading_kinds import _DESCRIPTION, _HEAD_LEAD, _KIND_WORDS
from chimdqa_eval.factual.reading_match import _FOREIGN_NAME, _text_match
from chimdqa_eval.factual.reading_question import _PLACE_QUESTION
from chimdqa_eval.factual.reading_reference import Reference
from chimdqa_eval.factual.reading_text import (_bigrams, _CLAUSE_END, _FILLER, _has_content, _LATIN_WORDS,
                                               _NEGATION, _PARENS, _positions, _SENTENCE_END, _split_clauses, _starts, _TITLE_IN,
                                               _TRUTH, _TURN_CLAUSE, _TURN_WORDS, _word_bigrams)
from chimdqa_eval.factual.rules import ALTERNATIVES, REFUSAL


SHORT_ANSWER = 40            # competing candidates make an answer this short IN (key characters)

# Last characters that name a kind of thing (a river, a temple, a prize): another word ending in the same
# character beside the reference is another candidate of the asked kind.
_KIND_SUFFIXES = frozenset(vocab.words("kind_suffixes"))

_ASSERTION = re.compile(r"是|(?<![作成因认以称行])为")

_NOT_HAPPENED = re.compile(r"尚未|并没有|并未|从未|未曾|还没有?")

_BEFORE_ANCHOR = "比|仅次于|次于|不如|除了|除|相比于|相较于|晚于|早于|继|接替|取代|超过|超越|胜过|低于|高于|大于|小于"
_AFTER_ANCHOR = "之后|之前|以外|以后|相比|相当|一样|那样|之外"

_ONLY_SOME_ITEMS_RE1 = re.compile(r"以及|和|与|及|还有")


def _only_some_items(items, answer_key: str) -> bool:
    """The answer names some items of a list reference and nothing else: incomplete, not contradictory."""
    found = [next(g for g in forms if g in answer_key) for forms in items if any(g in answer_key for g in forms)]
    for item in found:
        answer_key = answer_key.replace(item, "")
    return bool(found) and not _ONLY_SOME_ITEMS_RE1.sub("", answer_key)


def _clauses_with(text: str, needle) -> list[str]:
    """The clauses of text (between , ; 。 ! ? :) for which needle(clause) holds, each with the next one when
    that offers an alternative (可能是关羽，也可能是岳飞)."""
    clauses = _split_clauses(text)
    out = []
    for i, clause in enumerate(clauses):
        if needle(clause):
            out.append(clause)
            if i + 1 < len(clauses) and _ALTERNATIVE_START.match(clauses[i + 1].strip()):
                out.append(clauses[i + 1])
    return out


def _competing(ref: Reference, clauses: list[str], form: str = "") -> bool:
    """Another candidate offered beside the answer in its own clause (A或B, A、B之一, A/B); with the form found,
    only an alternative next to it, or in a clause that opens with one (白芷是伞形科当归属植物白芷或杭白芷的
    干燥根: the species are alternatives, the family is not). (A match may start inside the form: 《…起源和基础》或《…》之一.)"""
    if ref.has_alternatives:
        return False
    for clause in clauses:
        for m in ALTERNATIVES.finditer(clause):
            if not form or _ALTERNATIVE_START.match(clause.strip()) or form in rules.key(m.group(0)) \
                    or form in rules.key(clause[max(0, m.start() - len(form) - 6):m.end()]) \
                    or form in rules.key(clause[m.end():m.end() + len(form) + 6]):
                return True
    return False


def _claim_before_refusal(answer: _Answer, question: str) -> bool:
    """The answer opens with a short claim of its own and only then refuses or disclaims (王晶。不过我不太确定;
    导演是王晶，建议查阅资料核实): a hedged guess, not a refusal. A preamble (关于这个问题，…; 这位学者的生平我了解
    不多) is no claim: it says nothing besides the question's words, or is long and refuses in itself."""
    cue = REFUSAL.search(answer.whole)
    if cue is None or answer.asked:  # 念奴娇是词牌名，…你问的是哪一首？ asks back: a clarification
        return False
    end = _CLAUSE_END.search(answer.whole, 0, cue.start())
    if end is None:  # the refusal is in the answer's first clause
        return False
    first = answer.whole[:end.start()]
    # a sentence of its own (王晶。) or an assertion (是王晶，…); not a lead-in (很遗憾，… / 说实话，… / 作为AI，…)
    claim = end.group(0) in "。!?\n" or _ASSERTION.search(first)
    key = rules.key(first)
    longest = 16 if _LEANS.search(first) else 10  # 我印象中这本书是甘阳写的，不过不太确定: a guess, told at length
    return bool(claim) and 0 < len(key) <= longest and _has_content(key, question) and not REFUSAL.search(first) \
        and not _ASKS.search(first) and not _DESCRIPTION.search(answer.whole) and not _TOPIC.search(key) \
        and not _FRAMED_RE1.search(first)  # 是一种菊科植物的根，具体是哪种我不确定; 他虽然是英国人，…


# What kind of question it is (这是微生物学里的术语, 这是个冷门的问题): a preamble, not a claim.
_TOPIC = re.compile(r"(?:术语|概念|名词|问题|领域|范畴|说法|叫法|知识点|话题|细节|冷门)$")


# Two named candidates for the slot (A和B二者之一, 两个都有可能, 不是A就是B), not a mere 或 (请咨询医生或药师).
_CANDIDATE_PAIR = gated(r"(?:是|为)[^,;。]{0,8}?[\u4e00-\u9fff]{2,4}或[\u4e00-\u9fff]{2,4}|" + rules.NAMED_PAIR)

_BEFORE_ANCHORS = tuple(_BEFORE_ANCHOR.split("|"))
_AFTER_ANCHORS = tuple(_AFTER_ANCHOR.split("|"))


def _anchored(form: str, text: str) -> bool:
    """The reference as a point of comparison in text: 仅次于俄罗斯, 比俄罗斯还大 (every place the form starts,
    overlaps included, as a regex search would; str methods: no pattern compiled per reference)."""
    i = text.find(form)
    while i >= 0:
        if text.endswith(_BEFORE_ANCHORS, 0, i) or text.startswith(_AFTER_ANCHORS, i + len(form)):
            return True
        i = text.find(form, i + 1)
    return False


_ONLY_IN_LISTS_RE1 = re.compile(r"[、/]")
_ONLY_IN_LISTS_RE2 = re.compile(r"和|与|及")


def _only_in_lists(text: str, form: str, question: str) -> bool:
    """Every mention of the reference is an item of a list (A、B, A和B) in its clause, beside an item the
    question does not name (黑吉豆和白米 for 黑吉豆和什么: no list) and not in a clause that restates (也就是关圣帝君、
    关云长)."""
    question_key = rules.key(question)
    mentions = 0
    for clause in _split_clauses(_PARENS.sub("", _ONLY_IN_LISTS_RE1.sub("和", text))):
        key = rules.key(clause)
        for i in _starts(key, form):
            mentions += 1
            if _RESTATES.match(key):
                return False
            before = key[i - 1:i] in ("和", "与", "及") and _ONLY_IN_LISTS_RE2.split(key[:i - 1])[-1]
            end = i + len(form)
            after = key[end:end + 1] in ("和", "与", "及") and key[end + 1:end + 2] != "其" \
                and _ONLY_IN_LISTS_RE2.split(key[end + 1:])[0]
            others = [x for x in (before and before[-3:], after and after[:3]) if x and x not in question_key]
            if not others:
                return False
    return mentions > 0


def _others_of_kind(ref: Reference, answer: _Answer, form: str, question: str) -> str:
    """'listed_with_others' when the reference is listed with other things (A、B, A和B); 'other_candidates'
    when other things of its kind stand beside it (another 《title》, another foreign name, another word with the
    same kind suffix: another 寺, another 奖); '' when neither."""
    text = answer.affirmed
    if ref.listed == 1 and _only_in_lists(text, form, question):
        return "listed_with_others"  # every mention of it is in a list (A、B), none stands alone
    return "other_candidates" if _other_candidate(ref, text, form, question) else ""


_OTHER_CANDIDATE_RE1 = re.compile(r"《([^》]+)》")


def _other_candidate(ref: Reference, text: str, form: str, question: str) -> bool:
    """The text names another thing of the reference's kind: another 《title》, another foreign name, another word
    with the same kind suffix (another 寺, another 奖; not the question's own 补给站 and 医疗站)."""
    titles = [rules.key(t) for t in _OTHER_CANDIDATE_RE1.findall(text) if t not in question]
    if any(form not in t and t not in form for t in titles):
        return True
    names = [rules.key(n) for n in _FOREIGN_NAME.findall(text)] if ref.foreign else []
    strong = [f for f in ref.forms if f not in ref.weak]  # 路德维希·马赫 is another Mach than 恩斯特·马赫
    if any(not any(n in f or f in n for f in strong) for n in names):
        return True
    rest = rules.key(text).replace(form, "|")
    last = (ref.main or form)[-1:]
    return last in _KIND_SUFFIXES and any(rest[i - 1:i + 1] not in question and "\u4e00" <= rest[i - 1] <= "\u9fff"
                                          for i in _positions(rest, last) if i > 0)


_PARALLEL_RE1 = re.compile(r"不|没|未|非|虽")


def _parallel(answer: _Answer, form: str, question: str) -> str:
    """'' unless another clause makes a claim of the same shape as the one naming the reference (two shared
    character bigrams besides it); then 'CO' or 'IN' by which of the two is more like the question."""
    clauses = [rules.key(c) for c in _split_clauses(_PARENS.sub("", answer.affirmed))]  # not (Capella，御夫座α)
    own = next((c for c in clauses if form in c), "")
    frame = _bigrams(own.replace(form, "|"))
    others = [c for c in clauses if c and form not in c and len(frame & _bigrams(c)) >= 2
              and c[0] not in "它他她其该这此"  # 它是全天第六亮的恒星 goes on about the same thing
              and not _PARALLEL_RE1.search(c)]  # 西岭区…不满足条件: an alternative it rules out
    if not own or not others:
        return ""
    asked = _bigrams(question)
    best_other = max(len(_bigrams(c) & asked) for c in others)
    return "IN" if best_other > len(_bigrams(own.replace(form, "|")) & asked) else "CO"


_RESTATES = gated(r"也就是|即|就是|亦即|又称|或称|也叫|俗称|简称|笔名|本名|原名|又名|艺名|别名|化名|全称|英文名"
                       r"|(?:中文|汉语|国内)(?:名|里|中)?(?:一般|通常|常|多)?(?:叫|称|译|写)")  # 中文一般叫…
_CONTRAST = re.compile(r"虽|则|但|不过|然而|而|也|另|其他|其余|对照|相比|只有|仅")  # 李白则被称为诗仙: context by contrast
_NAMED_AS = gated(r"(?:被|也|又|一般|通常)?(?:称为|称作|叫做|叫|名为)")
# Where the answer first names the reference, it sets it aside (李东阳则是…, 高畑勋只是…, 后来才在…重播).
_ASIDE = re.compile(rf"则|只是|仅是|仅仅是|{_TRUTH}|而(?!是)|并非|不是|没(?!有?记?错)|并未|(?:后来|之后|随后)才")
_CLOSER_TURN = re.compile(rf"{_TRUTH}|才(?:是|叫|为)|而是|则")  # a closer clause that turns to the answer


_ROLL = frozenset("、和与及")


_CLOSER_CLAUSE_RE1 = re.compile(r"^(?:种|类|个|些)")


@lru_cache(maxsize=4096)  # one question's answers find the same forms
def _asked_besides(question: str, form: str) -> frozenset:
    """The question's word bigrams that share no character with the form (a Latin word is one token, <woff20>: it
    shares the form when it holds it). A bigram of characters has two: b[0] and b[1] are all of set(b)."""
    return frozenset(b for b in _word_bigrams(rules.key(question))
                     if ((form not in b) if b.startswith("<") else b[0] not in form and b[1] not in form))


def _closer_clause(answer: _Answer, form: str, question: str) -> str:
    """'closer_clause' when a clause without the reference shares at least two more character bigrams with the
    question than the reference's own clause, and the answer turns to that clause or sets the reference aside
    (虞茂是他的族兄，虞预本名虞豫 for 虞预本名什么): that clause is the answer and the reference only context;
    'competing_clause' when one shares as many, two or more, or when the closer clause only leads up to the
    reference (释迦牟尼出家前是…太子悉达多，他娶了表妹耶输陀罗: the question's subject introduced first); '' else.
    Negated clauses and clauses that restate the question only (它是…) do not compete."""
    asked = _asked_besides(question, form)
    said = _split_clauses(_PARENS.sub("", answer.affirmed))
    clauses = [rules.key(c) for c in said]
    if clauses and form in clauses[0] and len(clauses[0]) <= len(form) + 4:
        return ""  # 杜甫，字子美…: a bare answer first; what follows is about it or about others
    if any(form in c and _RESTATES.match(c) for c in clauses):
        return ""  # …任教于University of Groningen，也就是格罗宁根大学: the reference restates that clause
    own = {i: len(_word_bigrams(c.replace(form, "|")) & asked) for i, c in enumerate(clauses) if form in c}
    listing = {i for i in own if sum(said[i].count(ch) for ch in _ROLL) >= 2  # three names or more
               and any(said[i][max(0, at - 1):at] in _ROLL or said[i][at + len(form):at + len(form) + 1] in _ROLL
                       for at in _starts(said[i], form))}
    if own.keys() - listing:  # 乘组是翟志刚、刘伯明和景海鹏: a roll of names is context, a clause of its own decides
        own = {i: n for i, n in own.items() if i not in listing}
    others = {i: len(_word_bigrams(c) & asked) - (1 if _CONTRAST.search(c) else 0)  # 导演则是…: a contrast must be
              for i, c in enumerate(clauses) if c and form not in c and not _NEGATION.search(c)  # clearly closer
              and not _DESCRIPTION.search(c)  # 钇铁石榴石是一种亚铁磁性材料: describes what is asked about
              and (c[0] not in "它他她其该这此" or c[1:3] == "本人" or c.startswith("其中")  # 其中…的是刘伯明
                   or _NAMED_AS.match(_CLOSER_CLAUSE_RE1.sub("", c[1:])))  # 它被称为…, 这种叫低副
              and any(ch not in question and ch not in _FILLER for ch in c)}  # 虞预本名虞豫: 豫 is new
    if not own or not others:
        return ""
    best, mine = max(others.values()), max(own.values())
    if best >= mine + 2:
        closest = [i for i, n in others.items() if n == best]
        turned = any(i > min(own) and (_TURN_CLAUSE.match("," + said[i]) or _CLOSER_TURN.search(said[i]))
                     for i in closest)  # …，但…其实是在古巴哈瓦那签署的; 《淞滨琐话》则出自…; …才叫解析函数
        turned = turned or any("**" in said[i] for i in closest) and not any("**" in said[i] for i in own)
        first = min(own)  # where the answer first names the reference, it sets it aside: 刘大田是他父亲的名字;
        aside = clauses[first].startswith(form) or _ASIDE.search(said[first]) \
            or _RELATIVE.search(said[first])  # 高畑勋只是担任制片; 他是恩斯特·马赫的儿子
        return "closer_clause" if turned or aside else "competing_clause"
    return "competing_clause" if best >= 2 and best >= mine else ""


_LEAD_CLAIM = re.compile(r"(?:(?:应该|可能|大概|也许|我认为|我觉得|答案)(?:就)?|这|它|那)?(?:是|为)(?![一某]|不是)")


def _other_lead_claim(ref: Reference, answer: _Answer, form: str, question: str) -> bool:
    """The answer opens with a short claim of its own that does not hold the reference (是范·诺利。索古要到1928年
    以后才当上国王; 应该是EP《Deserve》。《Antares》其实是…), and the reference comes later, not as a restatement
    of it (也就是…, 笔名…) nor in brackets: what the answer gives is the first claim."""
    text = _PARENS.sub("", answer.affirmed)
    end = _CLAUSE_END.search(text)
    lead = text[:end.start()] if end else text
    lead_key = rules.key(lead)
    if not lead_key or _text_match(ref, lead_key, lead) or not _LEAD_CLAIM.match(lead.strip()) \
            or not rules.key(_PARENS.sub("", answer.whole)).startswith(lead_key):  # not what a denial left
        return False
    new = "".join(ch for ch in lead_key if ch not in question and ch not in _FILLER)
    if not 2 <= len(new) <= 12 or _DESCRIPTION.search(lead) or _KIND_WORDS.search(lead) or REFUSAL.search(lead):
        return False
    rest = [rules.key(c) for c in _split_clauses(text[len(lead):])]
    # …，钱钟书。 alone, or 具体在深圳: the reference names what the claim described
    return not any(form in c and (_RESTATES.match(c) or len(c) <= len(form) + 1 or c.startswith("具体"))
                   for c in rest) and form in "".join(rest)


_DEMOTED = re.compile(rf"只是|仅仅?是|不过是|(?:{_TRUTH})是|只负责|只担任|而已$")
_LATER = re.compile(r"(?:后来|之后|随后)才")  # what came later (后来才转入…, …是后来才跟进采用的)


_SET_ASIDE_RE1 = re.compile(r"最终|后来|现在|目前|如今|现藏")
_SET_ASIDE_RE2 = re.compile(r"的?名字?命名")


def _set_aside(text: str, form: str, question: str) -> bool:
    """The reference, where each clause first names it, is followed by words that give it a lesser or another role
    (雅卡尔只是后来的推广者, 清代只是翻刻流传而已, 伏安其实是无功功率的单位), or only names what was named after it
    when the question does not ask for that (后来才以卡内基的名字命名), or is only where things went later
    (后来才转入大英博物馆) when the question does not ask what came later: it is not the answer."""
    question_key = rules.key(question)
    mentions = [c.partition(form) for c in map(rules.key, _split_clauses(text)) if form in c]
    said = [(before, rest) for before, _, rest in mentions
            if form + rest[:1] not in question_key]  # not in the question's own words: 卡内基自然史博物馆
    named = "命名" not in question
    later = not _SET_ASIDE_RE1.search(question)  # 后来才转入大英博物馆 for 1802年被哪个…收藏
    return bool(said) and all(_DEMOTED.search(rest) or named and _SET_ASIDE_RE2.match(rest)
                              or later and (_LATER.search(before) or _LATER.match(rest.lstrip("是")))
                              for before, rest in said)


_ROLE_CLAIM = re.compile(r"^(.{2,6}?)(?:是|为|由)(.+)$")


_ROLE_WORDS = vocab.pattern("roles")
_ASKED_ROLE = re.compile(_ROLE_WORDS)
# A name (a run of Chinese, ·, or a note in brackets after it) right before the role it had.
_NAME_ROLE = re.compile(rf"([\u4e00-\u9fff·]{{2,12}}?)(?:\([^()]*\))?(?:负责|担任)?({_ROLE_WORDS})")


_ROLE_AFTER_RE1 = re.compile(r"^.*?由")


def _role_after(text: str, form: str, question: str) -> str:
    """Names each followed by their role (由孙仪作词、翁清溪作曲): 'own' when the reference is followed by the role
    the question asks for, 'other' when another name is and the reference has another role; '' otherwise."""
    asked = _ASKED_ROLE.search(question)
    if not asked:
        return ""
    pairs = [(rules.key(m.group(1)), m.group(2)) for m in _NAME_ROLE.finditer(_ROLE_AFTER_RE1.sub("", text))]
    if len({role for _, role in pairs}) < 2:
        return ""  # one role only: nothing to tell the names apart
    own = {role for name, role in pairs if name.endswith(form)}
    if asked.group(0) in own:
        return "own"
    if own and any(role == asked.group(0) for name, role in pairs if form not in name):
        return "other"
    return ""


_SPLIT_ROLES_RE1 = re.compile(r"(?:则|就|却|也|都)$")
_SPLIT_ROLES_RE2 = re.compile(r"(?:负责|担任|做|写)的?$")


_JOINTS = ("及", "和", "与", "兼", "以及", "、")  # 作曲及填词: what joins two roles asked for together


def _split_roles(text: str, form: str, question: str) -> bool:
    """The answer gives two roles the question asks about to two different names, the reference in one of them
    (作曲是顾嘉辉，填词是黄霑 or 黄霑负责的是填词，作曲则是顾嘉辉 for 作曲及填词者是谁): the question asked for one
    person in both."""
    roles = []
    for m in filter(None, (_ROLE_CLAIM.match(rules.key(c)) for c in _split_clauses(text))):
        role, said = _SPLIT_ROLES_RE1.sub("", m.group(1)), m.group(2)
        if role not in question and said in question:  # 黄霑负责的是填词: the name first, then its role
            role, said = said, _SPLIT_ROLES_RE2.sub("", m.group(1))
        if role in question:
            roles.append((role, said))
    own = {r for r, said in roles if form in said}
    asked = rules.key(question)

    def joined(a: str, b: str) -> bool:  # 作曲及填词: the question asks for both roles together
        return any(x + joint + y in asked for x, y in ((a, b), (b, a)) for joint in _JOINTS)

    return any(r not in own and form not in said and _has_content(said, question) and any(joined(o, r) for o in own)
               for r, said in roles)


_EXTRA_ITEMS_RE1 = re.compile(r"[,;。!?:\n]")
_EXTRA_ITEMS_RE2 = re.compile(r"\s*(?:还有|以及|和|及|与)")
_EXTRA_ITEMS_RE3 = re.compile(r"[是有为在由]")
_EXTRA_ITEMS_RE4 = re.compile(r"以及|还有|和|与|及|、")


def _extra_items(ref: Reference, answer: _Answer, form: str) -> bool:
    """A list answer with more items than the reference (造纸术、印刷术、火药、指南针，还有瓷器; 魏、蜀、吴、晋)."""
    first = ref.items[0] if ref.items else (form,)
    segments = []
    for segment in _EXTRA_ITEMS_RE1.split(answer.affirmed):  # ，还有瓷器 goes on with the list
        if segments and _EXTRA_ITEMS_RE2.match(segment):
            segments[-1] += "、" + segment
        else:
            segments.append(segment)
    clause = next((c for c in segments if any(f in rules.key(c) for f in first)), "")
    parts = [_EXTRA_ITEMS_RE3.split(p)[-1] for p in _EXTRA_ITEMS_RE4.split(clause)]  # 类地行星有|水星
    return sum(_has_content(rules.key(p), "") for p in parts) > ref.listed


def _doubt(text: str, form: str, holds, question: str, years: bool) -> str:
    """Why a plain match may not be the answer ('' if none): its clause negates something (沈括并没有写过…) or
    compares with it (仅次于俄罗斯), its
    sentence says something has not happened (截至1998年，该公司尚未成立), or, with `years`, its clause dates it to
    another year than the question's (北京是2022年冬奥会的主办城市 for 2008)."""
    sentences = [s for s in _SENTENCE_END.split(text) if holds(s)]
    clauses = [c for s in sentences for c in _split_clauses(s) if holds(c)]

    question_key = rules.key(question)

    def negated(part: str, pattern: re.Pattern) -> bool:
        """A negation in the part, not inside a bracketed note (至少3人（不包括凶手本人）), a place's name (那不勒斯,
        新不伦瑞克省) or words of the question."""
        key = rules.key(_PARENS.sub("", part))
        starts = first_characters(pattern.pattern, pattern.flags)
        if starts is not None and "|" not in starts and starts.isdisjoint(key):
            return False  # no negation can begin anywhere in it (masking places and the form below adds only |)
        for name in places.places_in(key):
            key = key.replace(name, "|")
        key = key.replace(form, "|") if form else key
        return any(key[max(0, m.start() - 1):m.end() + 2] not in question_key for m in pattern.finditer(key))

    if clauses and all(negated(c, _NEGATION) for c in clauses):
        return "negated_clause"
    if form and clauses and all(_anchored(form, rules.key(c)) for c in clauses):
        return "compared_to"  # 仅次于俄罗斯, 比俄罗斯还大: the reference as a point of comparison
    if sentences and all(any(negated(c, _NOT_HAPPENED) and _word_bigrams(rules.key(c)) & _word_bigrams(question_key)
                             for c in _split_clauses(s)) for s in sentences):
        return "negated_sentence"  # 截至1998年，该公司尚未成立; not …，他们此前从未接触过现代社会
    asked = {n.value for n in rules.find_numbers(_TITLE_IN.sub("", question)) if n.unit == "年"}  # 《二十一世纪…》
    def other_year(clause: str) -> bool:
        found = {n.value for n in rules.find_numbers(clause) if n.unit == "年" and n.kind == "exact"}
        return bool(found) and not found & asked

    if years and asked and clauses and all(other_year(c) for c in clauses):
        return "other_year"
    return ""


_RELATIVES = vocab.pattern("relatives")
_RELATIVE = re.compile(rf"的(?:{_RELATIVES})|之(?:子|女|妻|夫|兄|弟|姊|妹|孙|侄|婿)")  # 严嵩之子; not 计算机科学之父
_RELATIVE_BEFORE = re.compile(rf"(?:他|她|其|它)的?(?:{_RELATIVES})\Z")  # 他的老师罗瑟林
_LATER_TURN = re.compile(rf"(?:{_TURN_WORDS}|而是)")
# The asked thing itself, set against what the reference was said of (…是它伴星的分类，HD 19789 本身是 G8III; 他的
# 战友是海豹部队出身，他本人原属于游骑兵): a turn inside the clause.
_SELF_CONTRAST = re.compile(rf"(?:本身|本人|自身|自己)(?:则|却|{_TRUTH}|倒)?(?:原本|原来|原|最初)?(?:是|为|属于|来自|出自|叫)")


def _frame(answer: _Answer, form: str, question: str) -> str:
    """Why a plain match is not sure ('' if none): every mention of the reference names someone's relative or
    predecessor (恩斯特·马赫的儿子, 京师大学堂的前身), or a clause after the last mention turns (但/其实/不过…) to
    another claim that does not repeat it."""
    return _framed(answer, form, question)[0]


_FRAMED_RE1 = re.compile(r"虽|尽管")
_FRAMED_RE2 = re.compile(r"[\u4e00-\u9fff]{2}(?:市|县|州|城|镇|省|岛)")


def _framed(answer: _Answer, form: str, question: str) -> tuple[str, str]:
    """_frame's reason and, for 'turn_after', the clause that turns."""
    text = answer.affirmed
    cleaned_key = rules.key(text)
    starts = _starts(cleaned_key, form)
    about_relative = _RELATIVE.search(rules.key(question))  # 他的老师是谁？…，他本人是…: about someone else
    if starts and not about_relative \
            and all(_RELATIVE.match(cleaned_key, i + len(form)) or _RELATIVE_BEFORE.search(cleaned_key, 0, i)
                    for i in starts):
        return "relative_of", ""
    clauses = _split_clauses(text)
    last = max((i for i, c in enumerate(clauses) if form in rules.key(c)), default=None)
    if last is None:
        return "", ""
    later = clauses[last + 1:]
    turn = next((i for i, c in enumerate(later)
                 if _LATER_TURN.match(c.strip()) or (_SELF_CONTRAST.search(c) and not about_relative)), None)
    if turn is None:
        return "", ""
    at = text.find(later[turn].strip())
    sentence = text[max(text.rfind(ch, 0, at) for ch in "。;!?\n") + 1:at]
    conceded = _FRAMED_RE1.search(sentence)
    if conceded and form not in rules.key(sentence[conceded.start():]):
        return "", ""  # …虽然有1,200个问题，但平均长度15.6万字: a concession about something else
    # (龙门派虽然是从丘处机那一脉传下来的，但所尊的祖师是王重阳: the reference conceded, the turn answers)
    rest = "".join(later[turn:])
    rest_key = rules.key(rest)
    if len(form) >= 3 and any(i == 0 or rest_key[i - 1] in _HEAD_LEAD for i in _starts(rest_key, form[1:])):
        return "", ""  # 有人以为是避汉武帝，其实不是——‘启’正是景帝的名字: the turn comes back to the reference
    latin = set(_LATIN_WORDS.findall(rest)) - set(_LATIN_WORDS.findall(question))  # FDA is new beside DailyMed
    named = [p for p in places.places_in(rest_key) if p not in question] or _PLACE_QUESTION.search(question) \
        and [p for p in _FRAMED_RE2.findall(rest_key) if p not in question]
    # (a place named in the turn is content, whatever filler its characters are: 但首都其实是东方市)
    if REFUSAL.search(rest) or not (latin or named or _has_content(rules.key(_LATER_TURN.sub("", rest)), question)):
        return "", ""
    return "turn_after", later[turn]


def _turns_to_other(ref: Reference, answer: _Answer, form: str, question: str) -> bool:
    """After its last mention of the reference the answer turns (但/其实/不过…) and, in that clause, names another
    thing of the reference's kind (…，但最高峰是豆蔻山脉的索莫山); a negated clause asserts nothing else
    (…获得菲尔兹奖，但他没有到场领奖)."""
    reason, turn = _framed(answer, form, question)
    return reason == "turn_after" and not _NEGATION.search(turn) and _other_candidate(ref, turn, form, question)
