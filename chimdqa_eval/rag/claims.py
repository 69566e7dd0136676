"""Claim extraction: turn an answer into a list of short, checkable statements.

Two extractors share one interface, ``extract(texts, questions) -> list[list[str]]`` plus a ``name`` for the
signature:
- `SentenceExtractor` (offline, the default): clause-level splitting of Chinese text;
- `LLMExtractor`: an OpenAI-compatible model asked with our Chinese prompt (versioned), cached and resumable
  through chimdqa_eval.llm.
"""
from __future__ import annotations

import re

from chimdqa_eval.jsonio import loads
from chimdqa_eval.llm import ChatRequest, prompt_key
from chimdqa_eval.schema import InputError

# A list-item marker at the start of a line or after a space, a colon or a sentence end: "1." "2、" "3)" "（一）"
# "(2)" "一、" "-" "•". "1.5" is a number, not a marker, hence the look-ahead.
_CN_NUM = "一二三四五六七八九十"
_MARKER = re.compile(
    r"(?:^|(?<=[\s:：。！？；;!?]))(?:\d{1,2}(?:[.．](?!\d)|[、)）])|[（(](?:\d{1,2}|[" + _CN_NUM + r"]{1,3})[)）]"
    r"|[" + _CN_NUM + r"]{1,3}、|[-•·●▪*]\s)\s*")
# Sentence ends, with any closing quotes or brackets that follow them; an ASCII "." ends a sentence only
# before a space or the end (so 3.5 and example.com stay whole).
_SENTENCE_END = re.compile(r"(?:[。！？!?；;…]+|\.(?=\s|$))[”’\"'）)】」』]*")
_CLAUSE_BREAKS = "，,"
_OPENERS, _CLOSERS = "（(《“‘「『【[", "）)》”’」』】]"
_CONTENT = re.compile(r"[0-9A-Za-z\u3400-\u9fff]")
# A clause with fewer content characters than this ("首先", "据统计", "2023年") is joined to its neighbour
# rather than standing as a claim of its own.
MIN_CLAUSE_CHARS = 6
# A clause opened by one of these only frames the clause after it (截至2023年底，…; 根据《民法典》第1165条规定，…;
# 由于原材料涨价，…), so it is joined to it whatever its length.
_LEAD_IN = re.compile(r"\s*(根据|依据|按照|截至|截止|随着|由于|因为|为了|如果|假如|倘若|虽然|尽管|除了|对于|关于)")
_TRIM = " \t\n，,、：:；;。.！!？?…"


def _content_length(text: str) -> int:
    return len(_CONTENT.findall(text))


def _top_level_commas(sentence: str) -> list[int]:
    """Positions of commas outside brackets and quotes, and not inside a number such as 1,000."""
    depth, cuts = 0, []
    for i, ch in enumerate(sentence):
        if ch in _OPENERS:
            depth += 1
        elif ch in _CLOSERS:
            depth = max(0, depth - 1)
        elif ch in _CLAUSE_BREAKS and depth == 0:
            between_digits = 0 < i < len(sentence) - 1 and sentence[i - 1].isdigit() and sentence[i + 1].isdigit()
            if not (ch == "," and between_digits):
                cuts.append(i)
    return cuts


def split_clauses(sentence: str) -> list[str]:
    """A sentence cut at its top-level commas; a short or framing piece (see _LEAD_IN) is joined to the next (at
    the end: previous) one."""
    pieces, start = [], 0
    for cut in _top_level_commas(sentence):
        pieces.append(sentence[start:cut + 1])
        start = cut + 1
    pieces.append(sentence[start:])
    clauses: list[str] = []
    pending = ""
    for piece in pieces:
        pending += piece
        if _content_length(piece) >= MIN_CLAUSE_CHARS and not _LEAD_IN.match(piece):
            clauses.append(pending)
            pending = ""
    if pending:
        if clauses:
            clauses[-1] += pending
        else:
            clauses.append(pending)
    return clauses


def split_sentences(text: str) -> list[str]:
    """Lines, then list items, then sentences; each piece keeps its own punctuation."""
    out = []
    for line in text.splitlines():
        starts = sorted({0, *(m.start() for m in _MARKER.finditer(line))})
        for a, b in zip(starts, [*starts[1:], len(line)]):
            item = _MARKER.sub("", line[a:b], count=1) if _MARKER.match(line[a:b]) else line[a:b]
            begin = 0
            for end in _SENTENCE_END.finditer(item):
                out.append(item[begin:end.end()])
                begin = end.end()
            out.append(item[begin:])
    return [s for s in out if s.strip()]


def sentence_claims(text: str) -> list[str]:
    """Clause-level claims of a Chinese (or mixed) text; never an empty or punctuation-only claim."""
    claims = []
    for sentence in split_sentences(text):
        for clause in split_clauses(sentence):
            clause = clause.strip(_TRIM)
            if _CONTENT.search(clause):
                claims.append(clause)
    return claims


class SentenceExtractor:
    """Offline claims: one per clause (see `sentence_claims`)."""

    name = "sentence-v2"

    def extract(self, texts, questions=None, names=None) -> list[list[str]]:
        return [sentence_claims(text) for text in texts]


EXTRACT_PROMPT_VERSION = "rag-extract-zh-v1"
EXTRACT_SYSTEM = "你是一名严谨的事实核查助理，负责把回答拆解为可以逐条核实的事实陈述。"
EXTRACT_TEMPLATE = """请把下面的【回答】拆解成若干条独立的事实陈述（claim）。要求：
1. 每条陈述只包含一个可以单独判断真假的事实，例如一个数值、一个属性、一个因果或比较关系；
2. 每条陈述都要能脱离上下文理解：把"它""该公司""上述"等指代换成具体的名称，必要时补上问题中的主语；
3. 只改写回答中出现的内容，不要补充回答之外的知识，不要评价回答的好坏；
4. 寒暄、重复问题、"无法回答"之类不含事实的话不要列出；回答里没有任何事实时输出空列表 []。

只输出一个 JSON 字符串数组，不要输出其他文字。例如：["甲公司2023年营业收入为12亿元", "甲公司2023年营业收入同比增长8%"]

【问题】
{question}

【回答】
{text}"""


def reply_array(raw: str) -> object:
    """The JSON value from a reply's first '[' to its last ']' (code fences and chatter around it allowed), read
    within jsonio's limits; ValueError when there is none or it is not JSON (the client asks again)."""
    start, end = raw.find("["), raw.rfind("]")
    if start < 0 or end < start:
        raise ValueError("no JSON array in the reply")
    try:
        return loads(raw[start:end + 1], "the array", bom=False)
    except InputError as err:
        raise ValueError(str(err)) from None


def parse_claim_list(raw: str) -> list[str]:
    """The JSON array of strings in a reply (code fences and surrounding chatter allowed); ValueError if none."""
    items = reply_array(raw)
    if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
        raise ValueError("expected a JSON array of strings")
    return [x.strip() for x in items if x.strip()]


class LLMExtractor:
    """Claims extracted by a chat model with the prompt above; every reply is cached by chimdqa_eval.llm."""

    def __init__(self, client):
        self.client = client
        self.name = f"llm-{EXTRACT_PROMPT_VERSION}:{client.model}"

    @staticmethod
    def requests(texts, questions=None) -> tuple[list[int], list]:
        """(indices of the texts asked, their ChatRequests): an empty text has no claims and asks nothing."""
        questions = questions or [""] * len(texts)
        asked = [i for i, text in enumerate(texts) if text.strip()]
        return asked, [ChatRequest(
            [{"role": "system", "content": EXTRACT_SYSTEM},
             {"role": "user", "content": EXTRACT_TEMPLATE.format(question=questions[i], text=texts[i])}],
            prompt_key(EXTRACT_PROMPT_VERSION, EXTRACT_SYSTEM, EXTRACT_TEMPLATE, questions[i], texts[i]))
            for i in asked]

    def extract(self, texts, questions=None, names=None) -> list[list[str]]:
        """`names` label each text in error messages (default: its index)."""
        names = names or [f"item {i}" for i in range(len(texts))]
        asked, requests = self.requests(texts, questions)
        outcomes = self.client.complete_all(requests, parse_claim_list, desc="extracting claims",
                                            stage="rag_extract")
        raise_failures("claim extraction", [(names[i], o) for i, o in zip(asked, outcomes) if not o.ok])
        claims = [[] for _ in texts]
        for i, outcome in zip(asked, outcomes):
            claims[i] = outcome.value
        return claims


class LLMFailure(RuntimeError):
    """Some LLM requests failed for good; every answer received is cached, so running again resumes."""


def raise_failures(stage: str, failed) -> None:
    """LLMFailure listing the failed (name, outcome) pairs, if any."""
    if failed:
        shown = "; ".join(f"{name}: {o.error}" for name, o in failed[:5])
        more = f" (and {len(failed) - 5} more)" if len(failed) > 5 else ""
        raise LLMFailure(f"{stage}: {len(failed)} request(s) failed — {shown}{more}. The answers received are "
                         "cached; run again to resume with only the failed requests.")
