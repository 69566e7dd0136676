"""The LLM judge: an OpenAI-compatible chat model grades each answer with our own Chinese grader prompt.

The reply must end with exactly one verdict line ``结论：正确 | 错误 | 未作答``; anything else is unparseable, is
asked again (ChatClient.parse_retries) and, if still unparseable or the request failed, the item is graded
"UNGRADED" with its reason — never turned into NA. Edit the prompt only together with PROMPT_VERSION: cached
verdicts are keyed by the prompt text as well, but scores are compared by the version in their signature.
"""
from __future__ import annotations

import re

from chimdqa_eval.factual.scores import UNGRADED
from chimdqa_eval.llm import ChatClient, ChatRequest, prompt_key

PROMPT_VERSION = "zh-judge-1"

SYSTEM_PROMPT = """你是一名严谨的问答评测员。你会看到一个问题、该问题的标准答案，以及一个待评的回答。请判断待评回答与标准答案是否一致，并只给出以下三种结论之一：

正确：回答给出了标准答案的关键信息，且没有任何与标准答案相矛盾的内容。
- 只要关键信息齐全即可，标准答案中的附加说明不必复述；问题中已经隐含的部分（如单位、“市”“年”等后缀）可以省略。
- 人名、地名等外文译名用字不同（如“汤玛斯”与“托马斯”），或只给出外文原名、只给出括号内外任意一种写法，均视为一致。
- 数值须与标准答案在其末位有效数字上相符：标准答案为 3518.17 时，“3518”“3518.2”正确，“3520”不正确。
- 回答带有“可能”“我猜”等不确定语气，但给出的唯一答案与标准答案一致，仍判为正确。

错误：回答中有任何内容与标准答案相矛盾。
- 给出了错误的数值、实体、日期或结论。
- 同时列出多个候选答案而没有确定其一（即使其中包含标准答案）。
- 带着不确定语气给出了一个与标准答案不符的答案。

未作答：回答没有给出标准答案的关键信息，但也没有与其相矛盾。
- 拒绝回答、表示不知道、要求提供更多上下文。
- 只给出一个与标准答案不矛盾的模糊范围，如标准答案为 3518.17 时回答“大约3500”或“超过3000”。

判断时只比较回答与标准答案，不要用你自己的知识去质疑标准答案。先用一两句话说明理由，最后单独一行写出结论，格式严格为：
结论：正确
或
结论：错误
或
结论：未作答"""

USER_TEMPLATE = """【问题】
{question}

【标准答案】
{reference}

【待评回答】
{prediction}"""

VERDICTS = {"正确": "CO", "错误": "IN", "未作答": "NA"}
_VERDICT = re.compile(r"结论\s*[:：]\s*[*_`\s]*(正确|错误|未作答)[*_`\s。.]*$", re.MULTILINE)


def parse_verdict(reply: str) -> str:
    """'CO', 'NA' or 'IN' from a judge reply with exactly one verdict line; ValueError otherwise."""
    verdicts = _VERDICT.findall(reply)
    if len(verdicts) != 1:
        raise ValueError(f"expected one line '结论：正确|错误|未作答', found {len(verdicts)} in {reply[-200:]!r}")
    return VERDICTS[verdicts[0]]


def judge_request(prediction: str, reference: str, question: str) -> ChatRequest:
    user = USER_TEMPLATE.format(question=question or "（未提供）", reference=reference, prediction=prediction)
    return ChatRequest(({"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}),
                       prompt_key(PROMPT_VERSION, SYSTEM_PROMPT, USER_TEMPLATE, question, reference, prediction))


def judge_requests(predictions, references, questions) -> list[ChatRequest]:
    """One judge request per item (also what a dry run counts against the cache)."""
    return [judge_request(p, r, q) for p, r, q in zip(predictions, references, questions)]


def grade_answers_llm(predictions, references, questions, client: ChatClient):
    """(grades, errors): one grade per item, "UNGRADED" where the judge gave none; errors = [{index, error}]."""
    outcomes = client.complete_all(judge_requests(predictions, references, questions), parse_verdict,
                                   desc="chimdqa_factual judge", stage="judge")
    grades = [o.value if o.ok else UNGRADED for o in outcomes]
    errors = [{"index": i, "error": o.error} for i, o in enumerate(outcomes) if not o.ok]
    return grades, errors
