"""Reading the answer, once per answer: _read_answer splits it into what it asserts (affirmed), what it takes back
(a self-correction, a denial, an attribution turned down: rejected), what it only reports others saying
(alternative), the notes it brackets, and whether it asks the user something back (_Answer); _refusal says whether
and how it refuses (refusal, apology, guess, refusal_then_claim). The cue words come from data/cues.txt."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from chimdqa_eval.factual import rules
from chimdqa_eval.factual import vocabulary as vocab
from chimdqa_eval.factual.gate import Hinted, gated
from chimdqa_eval.factual.reading_text import _FILLER, _has_content, _LATIN_WORDS, _PARENS, _TRUTH, _word_bigrams
from chimdqa_eval.factual.rules import DENIAL, GUESS, REFUSAL


# A strong self-correction: what precedes the last one is superseded.
_REMARK_WORDS = vocab.pattern("remarks")
_CORRECTION = Hinted(gated(r"不对|(?<=,)不(?=,)|更正|纠正一下|说错了|口误|我记错了|(?<=[,。!?—\s])等等(?=[,!])|重算|重新算|"
                         + _REMARK_WORDS +  # data/cues.txt [remarks]: 准确地说, 严格来说…
                         r"|\bno,? wait\b|\bwait,? no\b|\bsorry,? i mean\b|\bscratch that\b|\bcorrection:"
                         # a final or true answer after what came first (但最终当选的是…, 真正的导演是…, 所以最早出处应该是…)
                         r"|(?:但|而|可|不过)(?:是)?最终[^,;。!?]{0,8}的(?:是|为)"
                         r"|(?:所以|因此|因而|故)(?:最早|最终|正确|真正)[^,;。!?]{0,6}(?:应该|应)?(?:是|为)"
                         r"|(?:所以|因此|因而|故)(?:最终|正确)?(?:的)?答案(?:应该)?(?:是|为)"),  # an explicit final answer
                         # (Hinted, gate.py: what every match holds, which re skips ahead to)
                         r"不对|,不,|更正|纠正一下|说错了|口误|我记错了|等等|重算|重新算|" + _REMARK_WORDS
                         + r"|wait|sorry|scratch that|correction:|最终|最早|正确|真正|答案")
# The true one, said of what the question asks (真正把社会学分为一般社会学和特殊社会学的是…, 真正的导演是…,
# 但真正面世是1967年): a correction; not 真正出名是在… nor 他本人真正的偶像是… when the question asks neither.
_TRUE_CLAIM = re.compile(r"真正的([^,;。!?]{1,12}?)(?:是|为)|真正([^,;。!?]{1,20}?)的[^,;。!?]{0,4}?(?:是|为)"
                         r"|(?:但|而|可|不过)真正([^,;。!?]{1,8}?)(?:是|为)")
# A claim attributed to others, up to the end of its clause.
_ATTRIBUTION_CUES = (
    r"(?:(?:也|还|常|经常|常常|曾)?(?:有人|有些人|很多人|许多人|不少人|一些人|部分人|民间|坊间|网上|有的?资料|有学者"
    r"|(?:很多|许多|不少|一些|有些|部分|多数|有的)(?:资料|文献|书|教材|文章|网站|媒体|报道))"
    r"(?:会|都|也|常|往往)?(?:说|认为|称|以为|觉得|误认为|误以为|流传|传说|提出|提到|提及|记载|写)|也有(?:说法|观点|资料)|一说"
    r"|常见的?说法|通常的说法|流行的说法|另一?种?说法|另有一说|另有[^,;。!?\n]{0,8}(?:给|说|称|认为|记载|写)|据说|据传"
    r"|误认为|误以为|误传|讹传|常被误|被误认为)")
_ATTRIBUTED = Hinted(gated(_ATTRIBUTION_CUES + r"[^,;。!?\n)]*"),  # (the words every match holds: its verb or lead)
                     r"说|认为|称|以为|觉得|流传|提出|提到|提及|记载|写|也有|另有|据传|误传|讹传|被误")
# What every match holds: 真正 (_TRUE_CLAIM), one of these words (DENIAL). A text without them is not searched with
# the patterns, which re tries at every place (a plain list of words: re skips ahead to where one can begin).
_DENIAL_HINT = re.compile(r"不是|并非|而非|不在|不属于|not|isn|wasn")


def _names_candidate(report: str, question: str) -> bool:
    """A report names a candidate of its own: 是/为/称/叫 and a short name (也有人说是格莱德温·杰布), not a remark
    (据说这首诗写于扬州)."""
    named = _ATTRIBUTION_LEAD.match(report)
    rest = "".join(ch for ch in rules.key(report[named.end():]) if ch not in _FILLER and ch not in question) \
        if named else ""
    return 2 <= len(rest) <= 10


_ATTRIBUTION_CUE = re.compile(_ATTRIBUTION_CUES)  # where each report starts
# The words that report a view, before what it names (也有人说是 in 也有人说是特里格韦·赖伊).
_ATTRIBUTION_LEAD = re.compile(r"^[^是为称叫]*(?:是|为|称|叫)")
# The common view (一般认为, 通常认为): the answer itself, unless the next clause turns it down.
_COMMON_VIEW = re.compile(r"(?:一般|通常|普遍|大多|大家|人们)(?:都)?(?:认为|以为|觉得|说)[^,;。!?\n)]*")
# What turns the common view down: a next clause that says what is really so (但…其实…, 实际上…); a caveat
# (不过说法不一) does not.
_VIEW_REJECTED = re.compile(rf"[,;\s]*(?:但是?|然而|可是)?[^,;。!?\n]{{0,12}}?(?:{_TRUTH}|才是|真正)"
                            r"(?![^,;。!?\n]{0,4}(?:确实|的确|如此|也是))")  # not 实际上也确实如此
# What turns an attributed claim down: the next clause opens with it, or the claim itself calls it mistaken.
_REJECTS = re.compile(rf"[,;。\s]*(?:{_TRUTH}|但|然而|不过|可是|正确|真正)")
# A sentence that asks something; as a question back to the user (您是指哪一年？) it asserts nothing.
_SENTENCE = re.compile(r"[^。!?\n]*[。!?\n]?")
_ASKS = gated(r"哪|什么|吗|呢|是否|还是|谁|多少|几|您|你|\b(?:how|what|which|who|do you|could you)\b")
_ALTERNATIVE_START = gated(r"[也亦]?(?:有)?可能|或者|或是|还是|抑或")
_POLITE = re.compile(r"抱歉|对不起|请问")
_TURN = gated(r"(?:但|不过|可是|然而|\bbut\b|\bhowever\b)(?:是|我)?|答案(?:应该)?(?:是|为)")
_TO_USER = gated(r"您|你|请问|告诉我|能否|可否|\byou\b")
# Words that date or source what a refusal covers (截至2023年的资料, 根据2021年以前的信息): a number in such a clause
# is the scope of the refusal, not an answer.
_SCOPE = re.compile(r"截至|截止|以前|之前|以来|资料|记载|信息|数据|知识|文献|记录|报道")


@dataclass(frozen=True)
class _Answer:
    """What an answer asserts, and what it takes back or only reports."""
    whole: str           # cleaned answer
    affirmed: str        # what it asserts
    rejected: str        # superseded, denied, or attributed and turned down
    alternative: str     # attributed to others and left standing
    asked: bool          # it asks the user something back
    notes: tuple = ()    # (the key of the text before it, note): attributions in brackets (牟子(一说牟融))
    question: str = ""   # the cleaned question it answers

    def __post_init__(self):
        # the key of what it asserts, asked for by nearly every answer's rules (5 times an answer on the held-out
        # answers): a plain attribute beside the frozen fields, read without a property's call
        object.__setattr__(self, "affirmed_key", rules.key(self.affirmed))


# Correction words that as often only add a remark (严格来说…): a bold answer before them stands.
_REMARKS = frozenset(vocab.words("remarks"))


def _read_answer(cleaned: str, question: str = "") -> _Answer:
    rejected, alternative, notes, asked = [], [], [], False
    text = cleaned
    last = None
    for last in _CORRECTION.finditer(text):
        pass
    for true in _TRUE_CLAIM.finditer(text) if "真正" in text else ():  # 真正把社会学分为…的是齐美尔, not 两人真正大获成功的是…
        claimed = rules.key(next(g for g in true.groups() if g))
        if (last is None or true.start() > last.start()) \
                and (not question or any(ch in question and ch not in _FILLER for ch in claimed)):
            last = true
    if last is not None and last.group(0) in _REMARKS and "**" in text[:last.start()] and "**" not in text[last.end():]:
        last = None  # 共设**五个**奖项…严格来说并不属于…: the bold answer stands, what follows is a remark
    if last is not None and rules.key(text[last.end():]):  # the final answer wins
        rejected.append(text[:last.start()])
        text = text[last.end():]
    kept, sentences, said = [], _SENTENCE.findall(text), False
    for sentence in sentences:
        said = said or bool(kept and rules.key(kept[-1]))  # something kept says something (linear, not per sentence)
        if said and _ALTERNATIVE_START.match(sentence.strip()):
            kept.append(sentence)  # 1875年？还是1878年？: a second candidate, not a question to anyone
        elif sentence.endswith("?") and _ASKS.search(sentence) and not _LEANS.search(sentence):  # 可能改成了安平县？
            asked = asked or bool(_TO_USER.search(sentence))  # 您是问…？ asks the user; A还是B？ asks itself
        else:
            kept.append(sentence)
    asked = asked or (len(kept) < len(sentences) and not rules.key("".join(kept))  # 是指A还是B？
                      and not GUESS.search(text))  # 我记得好像是吴作栋，那时候他还是总理吧？ guesses
    text = "".join(kept)

    def attributed(m: re.Match) -> str:
        if m.string[m.start() - 1:m.start()] == "(":  # 牟子(一说牟融)所撰: a note on the word before it
            notes.append((rules.key(m.string[:m.start() - 1]), m.group(0)))
            return " "
        turned_down = "误" in m.group(0) or _REJECTS.match(m.string, m.end()) is not None
        (rejected if turned_down else alternative).append(m.group(0))
        return " "

    text = _ATTRIBUTED.sub(attributed, text)

    def common_view(m: re.Match) -> str:  # 一般认为…是陆皓东设计的，但…其实出自孙中山之手: the common view, turned down
        if _VIEW_REJECTED.match(m.string, m.end()) is None:
            return m.group(0)  # 一般认为是方七娘(，不过说法不一): the answer, told as the common view
        rejected.append(m.group(0))
        return " "

    text = _COMMON_VIEW.sub(common_view, text)

    def denied(m: re.Match) -> str:
        rejected.append(m.group(0))
        return " "

    text = DENIAL.sub(denied, text) if _DENIAL_HINT.search(text) else text
    return _Answer(cleaned, text, " ".join(rejected), " ".join(alternative), asked, tuple(notes), question)


_ASSUMED = re.compile(r"吧\s*\?")
_NUMBER_QUESTION = re.compile(r"多少|几|哪一?年|何年|何时|什么时候|哪一天")


def _answers_question(text: str, question: str) -> bool:
    """Text says something the question asks for: a number for a number question, else words of the question."""
    if _NUMBER_QUESTION.search(question):  # (松下是1家日本公司: 1家 is the article, no number)
        return any(not (n.value == 1 and n.counter) for n in rules.find_numbers(text))
    return bool(_word_bigrams(rules.key(text)) & _word_bigrams(rules.key(question)))


_REFUSAL_RE1 = re.compile(r"\?|确认|澄清")


@lru_cache(maxsize=4096)  # asked for by many rules of one answer, and once per reading of its reference
def _refusal(answer: _Answer) -> str:
    """'' when the answer does not refuse; 'refusal' when it does and offers no candidate; 'refusal_then_claim'
    when a claim follows the refusal (我不确定，但…是苏轼; 抱歉，答案是孙思邈); 'guess' when it leans to a candidate
    (可能是…). An apology alone (抱歉, 对不起) refuses only an answer that says nothing else."""
    if GUESS.search(answer.whole):
        return "guess"
    found = list(REFUSAL.finditer(answer.whole))  # one scan: the first is what REFUSAL.search finds
    cues = [m for m in found if not _POLITE.fullmatch(m.group(0))]
    polite = found[0] if found else None
    if not cues and polite:
        return "refusal" if not _has_content(rules.key(_POLITE.sub("", answer.whole)), "") else "apology"
    if not cues:
        return "" if not (answer.asked and not _has_content(answer.affirmed_key, "")) else "refusal"
    end = (cues[0] if not polite or polite.start() > cues[0].start() else polite).end()
    turn = _TURN.search(answer.whole, end)
    # 您是指…吧？它是1905年在大阪成立的: a question back that only assumes what was meant, then an answer
    assumed = _ASSUMED.search(answer.whole, end)
    asked_back = assumed.end() - 1 if assumed and "?" not in answer.whole[end:assumed.start()] else -1
    rest = answer.whole[turn.end():] if turn else answer.whole[asked_back + 1:] if asked_back >= 0 else ""
    if rules.key(rest) and not REFUSAL.search(rest) and _has_content(rules.key(rest), "") \
            and not (asked_back >= 0 and not turn and (_REFUSAL_RE1.search(rest)  # …吧？我先确认一下题意
                                                       or not _answers_question(rest, answer.question))):
        return "refusal_then_claim"
    return "refusal"


_LEANS = gated(r"(?<![不没])(?<![不没].)(?:印象中|记得|好像|似乎|大概|也许|或许|可能|应该)[^,;。?]{0,8}?(?:是|为|成|叫|在)")

# Hearsay about the answer itself (据说他一夜之间完成, 相传她…): a story, not another candidate (也有人认为是他的兄长
# names one).
_ABOUT_IT = re.compile(r"^\W*(?:据说|相传|传说|据传)[^,;。]*?(?<!其)(?:他|她|它)(?![们])")


def _long_story(text: str, question: str) -> bool:
    """An attribution too long to offer a candidate for the slot (据说得名于这种行动像老虎一样事先长时间潜伏跟踪猎物):
    more than 15 characters besides the question's and filler."""
    key = rules.key(_PARENS.sub("", text + ")"))  # 施旺(Theodor Schwann): a gloss adds nothing
    return sum(ch not in question and ch not in _FILLER for ch in _LATIN_WORDS.sub("a", key)) > 15
