"""Claim checking: is each claim entailed by a premise (the other answer, or one retrieved chunk)?

Every checker answers `CheckTask`s — one premise and the claims to check against it — with RAGChecker's labels
"Entailment" / "Neutral" / "Contradiction", through ``check(tasks) -> list[list[str]]`` and carries a ``name``
for the signature:
- `NLIChecker`: any transformers sequence-classification NLI model, label names read from its config;
- `LLMChecker`: an OpenAI-compatible model with our Chinese prompt (versioned), several claims per request,
  cached and resumable through chimdqa_eval.llm;
(Labels the caller already has — checker="precomputed" — never reach a checker.)
A task without claims needs no answer and a task with an empty premise entails nothing: no model sees either.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from chimdqa_eval.llm import ChatRequest, prompt_key
from chimdqa_eval.models import LOADED_PER_KIND, ModelUnavailable, load_model, pair_logits
from chimdqa_eval.rag.claims import raise_failures, reply_array


class CheckTask(NamedTuple):
    question: str
    premise: str
    claims: list
    where: str  # names the query (and structure, chunk) in error messages


class _Checker:
    name = "?"

    def check(self, tasks) -> list[list[str]]:
        labels = [["Neutral"] * len(t.claims) for t in tasks]
        asked = [i for i, t in enumerate(tasks) if t.claims and t.premise.strip()]
        for i, answer in zip(asked, self._check([tasks[i] for i in asked]) if asked else []):
            labels[i] = answer
        return labels

    def _check(self, tasks) -> list[list[str]]:
        raise NotImplementedError


# ---------------------------------------------------------------- NLI

_NLI_NAMES = (("not", "Neutral"), ("non", "Neutral"), ("entail", "Entailment"), ("neutral", "Neutral"),
              ("contradict", "Contradiction"), ("蕴含", "Entailment"), ("中立", "Neutral"), ("矛盾", "Contradiction"))


def nli_label(name: str) -> str | None:
    """RAGChecker label for a model's class name: entailment / ENTAILMENT / entails -> Entailment,
    neutral -> Neutral, contradiction -> Contradiction, not_entailment -> Neutral; None if unrecognised."""
    key = name.strip().lower()
    return next((label for prefix, label in _NLI_NAMES if key.startswith(prefix)), None)


def label_map(id2label: dict) -> dict:
    """{class index: RAGChecker label} from a model config's id2label; ModelUnavailable if it is not NLI."""
    mapping = {int(i): nli_label(str(name)) for i, name in id2label.items()}
    if None in mapping.values() or list(mapping.values()).count("Entailment") != 1:
        raise ModelUnavailable(f"the model's config.id2label {dict(id2label)} does not name NLI classes: expected "
                               "one 'entailment' class and the others 'neutral' / 'contradiction' (or "
                               "'not_entailment'); set id2label in its config.json")
    return mapping


class NLIChecker(_Checker):
    """Premise = chunk or answer, hypothesis = claim. A premise too long for the model is cut into windows that
    fit: a claim is entailed when some window entails it, contradicted when none does and some contradicts it."""

    def __init__(self, model: str, device=None, batch_size: int = 32, download=None):
        if not model:
            raise ModelUnavailable("the NLI claim checker needs a model (nli_model= in Python, --nli-model on the "
                                   "command line): the path or Hub name of a transformers "
                                   "sequence-classification NLI model (e.g. a Chinese NLI fine-tune of "
                                   "bert-base-chinese); nothing is downloaded unless you name one")
        # The labels are checked on the config, before any weights are read.
        self.model = load_model("classifier", model, "NLI", device=device, download=download,
                                check_config=lambda config: label_map(config.id2label))
        self.tokenizer = self.model.tokenizer
        self.labels = label_map(self.model.config.id2label)
        self.max_length = self.model.max_length
        self.batch_size = batch_size
        # The weights' hash, as BERTScore's and perplexity's signatures carry: a path names no model version.
        self.name = f"nli:{model}:max_len={self.max_length}:weights={self.model.fingerprint[:12]}"

    def logits(self, pairs) -> np.ndarray:
        """(n, n_classes) logits for (premise, hypothesis) pairs, in order; batched by similar length."""
        return pair_logits(self.model, pairs, max_items=self.batch_size)

    def windows(self, premise: str, claim: str, offsets=None) -> list[str]:
        """The premise whole when premise + claim fit the model, else overlapping pieces that do, together
        covering it. `offsets` are the premise's token offsets, when the caller already has them."""
        budget = (self.max_length - len(self.tokenizer.tokenize(claim))
                  - self.tokenizer.num_special_tokens_to_add(pair=True))
        budget = max(budget, self.max_length // 2)  # a huge claim is truncated rather than starving the premise
        if offsets is None:
            offsets = self._offsets(premise)
        if len(offsets) <= budget:
            return [premise]
        # Windows overlap by at least a quarter so a sentence cut at one edge is whole in the next one.
        starts = [*range(0, len(offsets) - budget, budget - budget // 4), len(offsets) - budget]
        return [premise[offsets[i][0]:offsets[i + budget - 1][1]] for i in starts]

    def _offsets(self, text: str) -> list:
        # verbose=False: a premise longer than the model is expected here (it is cut into windows next).
        return self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True,
                              verbose=False)["offset_mapping"]

    def _check(self, tasks):
        unique: dict = {}  # (window, claim) -> row in the logits: a pair repeated across queries runs once
        owners = []  # (task, claim, row)
        for t, task in enumerate(tasks):
            offsets = self._offsets(task.premise)
            for c, claim in enumerate(task.claims):
                for window in self.windows(task.premise, claim, offsets):
                    owners.append((t, c, unique.setdefault((window, claim), len(unique))))
        predicted = self.logits(list(unique)).argmax(axis=1)
        seen = [[set() for _ in task.claims] for task in tasks]
        for t, c, row in owners:
            seen[t][c].add(self.labels[int(predicted[row])])
        return [[_combine(s) for s in row] for row in seen]


@functools.lru_cache(maxsize=LOADED_PER_KIND)
def nli_checker(model, device=None, download=None) -> NLIChecker:
    """The NLI checker for a model, kept loaded for reuse by later calls."""
    return NLIChecker(model, device, download=download)


def _combine(window_labels: set) -> str:
    for label in ("Entailment", "Contradiction"):
        if label in window_labels:
            return label
    return "Neutral"


# ---------------------------------------------------------------- LLM

CHECK_PROMPT_VERSION = "rag-check-zh-v1"
CHECK_SYSTEM = "你是一名严谨的事实核查员，只依据给定的参考文本判断陈述是否成立，不使用任何外部知识。"
CHECK_TEMPLATE = """下面给出一段【参考文本】和若干条编号的【待核查陈述】。请逐条判断：仅凭参考文本，该陈述能否成立。
- 蕴含：参考文本明确写出或能直接推出该陈述；
- 矛盾：参考文本中的内容与该陈述相冲突（例如数值、时间、主体不一致）；
- 中立：参考文本既不能证明也不能否定该陈述，或者根本没有提到。
数值、单位、日期和主体必须与参考文本一致才算蕴含；不要因为陈述"听起来合理"就判为蕴含。

只输出一个 JSON 数组，按编号顺序给出每条陈述的判断，数组长度必须等于陈述条数，元素只能是 "蕴含"、"中立"、"矛盾" 之一。
例如三条陈述时输出：["蕴含", "中立", "矛盾"]

【问题】（仅供理解语境）
{question}

【参考文本】
{premise}

【待核查陈述】
{claims}"""

_LLM_LABELS = {"蕴含": "Entailment", "支持": "Entailment", "entailment": "Entailment",
               "中立": "Neutral", "无关": "Neutral", "neutral": "Neutral",
               "矛盾": "Contradiction", "contradiction": "Contradiction"}


def parse_check_reply(raw: str, n_claims: int) -> list[str]:
    """Exactly `n_claims` RAGChecker labels from the reply's JSON array; ValueError otherwise."""
    items = reply_array(raw)
    if not isinstance(items, list) or len(items) != n_claims:
        raise ValueError(f"expected {n_claims} labels, got {len(items) if isinstance(items, list) else items!r}")
    labels = [_LLM_LABELS.get(str(x).strip().lower()) for x in items]
    if None in labels:
        raise ValueError(f"unknown label in {items!r}; expected 蕴含 / 中立 / 矛盾")
    return labels


class LLMChecker(_Checker):
    """The prompt above, `claims_per_request` claims of one premise per request."""

    def __init__(self, client, claims_per_request: int = 8):
        self.client = client
        self.claims_per_request = claims_per_request
        self.name = f"llm-{CHECK_PROMPT_VERSION}:{client.model}:k={claims_per_request}"

    def requests(self, tasks) -> tuple[list, list]:
        """(ChatRequests, owners): owners[r] = (task index, index of the request's first claim)."""
        requests, owners = [], []
        for t, task in enumerate(tasks):
            for start in range(0, len(task.claims), self.claims_per_request):
                claims = task.claims[start:start + self.claims_per_request]
                numbered = "\n".join(f"{k}. {claim}" for k, claim in enumerate(claims, 1))
                prompt = CHECK_TEMPLATE.format(question=task.question, premise=task.premise, claims=numbered)
                requests.append(ChatRequest([{"role": "system", "content": CHECK_SYSTEM},
                                             {"role": "user", "content": prompt}],
                                            prompt_key(CHECK_PROMPT_VERSION, CHECK_SYSTEM, CHECK_TEMPLATE,
                                                       task.question, task.premise, *claims)))
                owners.append((t, start))
        return requests, owners

    def _check(self, tasks):
        requests, owners = self.requests(tasks)
        # Replies are parsed per request, and requests differ in claim count: parse each with its own count.
        by_count = {}  # claim count -> request indices
        for r, (t, start) in enumerate(owners):
            count = min(self.claims_per_request, len(tasks[t].claims) - start)
            by_count.setdefault(count, []).append(r)
        outcomes = [None] * len(requests)
        for n, members in by_count.items():
            answers = self.client.complete_all([requests[r] for r in members],
                                               lambda raw, n=n: parse_check_reply(raw, n), desc="checking claims",
                                               stage="rag_check")
            for r, outcome in zip(members, answers):
                outcomes[r] = outcome
        raise_failures("claim checking", [(tasks[owners[r][0]].where, o) for r, o in enumerate(outcomes)
                                          if not o.ok])
        labels = [[None] * len(task.claims) for task in tasks]
        for (t, start), outcome in zip(owners, outcomes):
            labels[t][start:start + len(outcome.value)] = outcome.value
        return labels
