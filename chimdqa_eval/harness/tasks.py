"""What the lm-eval and lighteval task files call: the questions of a task with their prompts, the answer taken
from a reply, and the scores of a set of answers, each exactly as the toolkit's own commands make them.

- Prompts: `chimdqa generate`'s template (prompts.py) with the question's document packed by its rule
  (packing.py: `--max-context-tokens`, `--truncation`, the approximate counter or a tokenizer) for ChiMDQA,
  closed-book for Chinese SimpleQA. The chat messages are [system, user], as `generate` sends them.
- Scores: `chimdqa evaluate`'s families (families.score_family) on the answers, aggregated by its one
  summarize(): CO / NA / IN / CGA / F1 from the grades of the whole set (F1 is a ratio of aggregates, never a
  mean of per-item values), METEOR / ROUGE-L as means of per-item scores, CIDEr with its document frequencies
  from the task's own references, as `chimdqa evaluate` computes them on the same questions.

Settings come from the environment (ENVIRONMENT), so that a harness command line needs nothing new; lm-eval's
`--metadata` may also give `release` and `simpleqa`. The release folder defaults to the bundled sample.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
from dataclasses import dataclass

from chimdqa_eval import release
from chimdqa_eval.aggregate import summarize
from chimdqa_eval.evaluation import SIMPLEQA_CONFIG, EvalConfig, load_questions
from chimdqa_eval.families import FAMILIES, score_family
from chimdqa_eval.generate import packing, prompts
from chimdqa_eval.llm import ChatError
from chimdqa_eval.models import ModelUnavailable, load_tokenizer
from chimdqa_eval.schema import CATEGORIES, DOMAINS, QA_SPLITS, QUESTION_TYPES, InputError, category_of
from chimdqa_eval.signature import make_signature

ENVIRONMENT = {
    "release": "CHIMDQA_RELEASE",                      # release folder (default: the bundled sample)
    "simpleqa": "CHIMDQA_SIMPLEQA",                    # Chinese SimpleQA jsonl (the chinese_simpleqa task)
    "max_context_tokens": "CHIMDQA_MAX_CONTEXT_TOKENS",  # as generate's --max-context-tokens (32000)
    "truncation": "CHIMDQA_TRUNCATION",                # middle (default) | head | tail
    "context_tokenizer": "CHIMDQA_CONTEXT_TOKENIZER",  # the served model's tokenizer (default: the approx counter)
    "prompt": "CHIMDQA_PROMPT",                        # prompt template YAML (default: the bundled one)
    "judge": "CHIMDQA_JUDGE",                          # rule (default) | llm | cascade
    "judge_model": "CHIMDQA_JUDGE_MODEL",
    "api_base": "CHIMDQA_JUDGE_API_BASE",              # one or more URLs, separated by spaces
    "api_key_env": "CHIMDQA_JUDGE_API_KEY_ENV",
    "judge_prompt": "CHIMDQA_JUDGE_PROMPT",
    "llm_cache": "CHIMDQA_JUDGE_CACHE",
}
SIMPLEQA_TASK = "chinese_simpleqa"
# task -> (config, split) as `chimdqa evaluate --config --split` select the same questions
TASKS = {
    "chimdqa_factual": ("all", "factual"),
    "chimdqa_open_ended": ("all", "open_ended"),
    **{f"chimdqa_{domain}": (domain, "test") for domain in DOMAINS},
    **{f"chimdqa_{qtype}": ("all", qtype) for qtype in QUESTION_TYPES},
    SIMPLEQA_TASK: ("chinese_simpleqa", "test"),
}
# Each group asks every question of the release once; the headline numbers are the tasks of `chimdqa`.
GROUPS = {
    "chimdqa": ("chimdqa_factual", "chimdqa_open_ended"),
    "chimdqa_domains": tuple(f"chimdqa_{domain}" for domain in DOMAINS),
    "chimdqa_types": tuple(f"chimdqa_{qtype}" for qtype in QUESTION_TYPES),
}
FACTUAL_METRICS = ("CO", "NA", "IN", "CGA", "F1")
OPEN_METRICS = ("meteor", "rouge_l", "cider")   # the lexical ones: no model to load inside a harness
MAX_TOKENS = 512                                  # generate's --max-tokens default
DOC_KEYS = ("id", "category", "question", "answer")  # what scoring reads from a task's document


@dataclass(frozen=True)
class PromptSettings:
    release: str | None = None
    simpleqa: str | None = None
    max_context_tokens: int = packing.DEFAULT_MAX_CONTEXT_TOKENS
    truncation: str = packing.DEFAULT_TRUNCATION
    context_tokenizer: str | None = None
    prompt: str | None = None

    @classmethod
    def from_environment(cls, **given) -> "PromptSettings":
        """The settings from ENVIRONMENT, `given` (non-None values, e.g. lm-eval's --metadata) first."""
        values = {name: os.environ.get(ENVIRONMENT[name]) or None for name in
                  ("release", "simpleqa", "max_context_tokens", "truncation", "context_tokenizer", "prompt")}
        values.update({k: v for k, v in given.items() if v is not None and k in values})
        budget = values["max_context_tokens"] or packing.DEFAULT_MAX_CONTEXT_TOKENS
        try:
            budget = int(budget)
        except (TypeError, ValueError):
            budget = 0
        if budget < 1:
            raise InputError(f"{ENVIRONMENT['max_context_tokens']}: expected a whole number of at least 1, got "
                             f"{values['max_context_tokens']!r}")
        truncation = values["truncation"] or packing.DEFAULT_TRUNCATION
        if truncation not in packing.TRUNCATIONS:
            raise InputError(f"{ENVIRONMENT['truncation']}: expected one of {', '.join(packing.TRUNCATIONS)}, got "
                             f"{truncation!r}")
        return cls(values["release"], values["simpleqa"], budget, truncation, values["context_tokenizer"],
                   values["prompt"])


    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "PromptSettings":
        return cls(**json.loads(text))


def task_selection(task: str) -> tuple[str, str]:
    if task not in TASKS:
        raise InputError(f"unknown task {task!r}; the ChiMDQA tasks are {', '.join(TASKS)}")
    return TASKS[task]


def task_categories(task: str) -> tuple[str, ...]:
    """The question categories a task holds (factual, open_ended or both): which metrics it reports."""
    config, split = task_selection(task)
    if config == "chinese_simpleqa":
        return ("factual",)
    return tuple(c for c in CATEGORIES if any(category_of(t) == c for t in QA_SPLITS[split]))


def load_docs(task: str, settings: PromptSettings | None = None) -> list[dict]:
    """The task's questions, each with its labels, "system" and "user" (the chat messages' texts) and
    "generation" (what made the prompt: mode, template, truncation; the importer's metadata)."""
    return [dict(doc) for doc in _docs(task, settings or PromptSettings.from_environment())]


def user_prompt(task: str, settings: PromptSettings, question_id: str) -> str:
    """The user message of one question of a task (what load_docs gives as "user"), from the task's cached
    documents: a harness may log a slim document and ask for its prompt when it builds the request."""
    return _prompts(task, settings)[question_id]


@functools.lru_cache(maxsize=32)
def _prompts(task: str, settings: PromptSettings) -> dict:
    return {doc["id"]: doc["user"] for doc in _docs(task, settings)}


@functools.lru_cache(maxsize=32)
def _docs(task: str, settings: PromptSettings) -> tuple:
    config, split = task_selection(task)
    simpleqa = config == SIMPLEQA_CONFIG
    if simpleqa and not settings.simpleqa:
        raise InputError(f"the {SIMPLEQA_TASK} task needs its jsonl: set {ENVIRONMENT['simpleqa']}=PATH")
    rows, _, dataset = load_questions(config, None if simpleqa else settings.release,
                                      (settings.simpleqa,) if simpleqa else None, split)
    template = prompts.load_template(settings.prompt)
    generation = {"mode": "closed-book" if simpleqa else "long", "template": template.metadata(),
                  "temperature": 0.0, "max_tokens": MAX_TOKENS,
                  "dataset": {k: dataset[k] for k in ("name", "config", "split", "revision")}}
    packed = {} if simpleqa else _packed_documents(settings, frozenset(r["doc_id"] for r in rows))
    if packed:
        generation["context"] = packed.pop(None)
    evidence = {} if simpleqa else release.read_evidence(settings.release)
    docs = []
    for row in rows:
        category = row.get("category", "factual")
        doc = {key: row[key] for key in ("id", "domain", "question_type", "level", "doc_id", "primary_category",
                                         "secondary_category") if key in row}
        doc.update(category=category, question=row["question"], answer=row["answer"])
        if simpleqa:
            messages = prompts.render_messages(template, row["question"], category)
            prompt = {}
        else:
            text, title, info = packed[row["doc_id"]]
            messages = prompts.render_messages(template, row["question"], category, context=text, title=title)
            prompt = {"tokens": info["tokens"], "document": {"doc_id": row["doc_id"], **{
                k: info[k] for k in ("pages_kept", "pages_total", "tokens", "tokens_total", "truncated")}}}
            if row["id"] in evidence:  # an evidence page the document does not have counts as cut
                prompt["evidence"] = {str(page): packing.survival(info["page_shares"].get(page, 0.0))
                                      for page in evidence[row["id"]]}
        doc.update(system=messages[0]["content"], user=messages[1]["content"],
                   generation={**generation, **({"prompt": prompt} if prompt else {})})
        docs.append(doc)
    return tuple(docs)


def _packed_documents(settings: PromptSettings, doc_ids: frozenset) -> dict:
    """{doc_id: (packed text, title, packing info)} and, under None, the context block of the metadata."""
    count, counter_name, counter_id = _counter(settings.context_tokenizer)
    pages, titles = {}, {}
    for page in release.read_documents(settings.release):
        if page["doc_id"] in doc_ids:
            pages.setdefault(page["doc_id"], []).append((page["page"], page["text"]))
            titles[page["doc_id"]] = page["title"]
    missing = sorted(doc_ids - set(pages))
    if missing:
        raise InputError(f"{release.release_dir(settings.release)}: documents {', '.join(map(repr, missing))}, which "
                         f"questions ask about, are not in its documents.jsonl; set {ENVIRONMENT['release']} to the "
                         "release folder")
    out = {}
    for doc_id, doc_pages in pages.items():
        text, info = packing.pack_pages(doc_pages, settings.max_context_tokens, count, settings.truncation)
        out[doc_id] = (text, titles[doc_id], info)
    out[None] = {"truncation": settings.truncation, "truncation_rule": packing.TRUNCATION_RULES[settings.truncation],
                 "max_context_tokens": settings.max_context_tokens, "token_counter": counter_name,
                 "signature": make_signature({"truncation": settings.truncation, "budget": settings.max_context_tokens,
                                              "tokens": counter_id.replace("|", "/")})}
    return out


def _counter(tokenizer_name: str | None):
    """(count, what the metadata calls it, its name in the signature), as `chimdqa generate` counts."""
    if not tokenizer_name:
        return packing.approx_tokens, packing.APPROX_COUNTER, "approx"
    try:
        tokenizer = load_tokenizer(tokenizer_name, "context tokenizer", download=False)
    except ModelUnavailable as err:
        raise InputError(f"{ENVIRONMENT['context_tokenizer']}: {err}") from None
    return packing.tokenizer_counter(tokenizer), f"tokenizer of {tokenizer_name}", f"hf:{tokenizer_name}"


def context_block(docs) -> dict:
    """The metadata's generation.context for the long-mode documents `docs` (as load_docs made them), in the
    shape `chimdqa generate` writes: the rule, then per document and per question what the prompt kept."""
    first = docs[0]["generation"]["context"]
    documents = {d["generation"]["prompt"]["document"]["doc_id"]: d["generation"]["prompt"]["document"] for d in docs}
    questions = {}
    for d in docs:
        prompt = d["generation"]["prompt"]
        questions[d["id"]] = {"tokens": prompt["tokens"], **({"evidence": prompt["evidence"]}
                                                              if "evidence" in prompt else {})}
    truncated = {doc_id for doc_id, info in documents.items() if info["truncated"]}
    fates = [fate for q in questions.values() for fate in q.get("evidence", {}).values()]
    return {**first, "documents": len(documents), "documents_truncated": len(truncated),
            "questions_truncated": sum(d["generation"]["prompt"]["document"]["doc_id"] in truncated for d in docs),
            "pages": {k: [v["pages_kept"], v["pages_total"]] for k, v in documents.items()},
            "tokens": {k: [v["tokens"], v["tokens_total"]] for k, v in documents.items()},
            "evidence_pages": {state: fates.count(state) for state in ("kept", "partly", "cut")},
            "questions": questions}


def prediction_text(reply) -> str:
    """The answer in a model's reply, as `chimdqa generate` stores it (no reply: an empty answer)."""
    return prompts.parse_reply(reply or "", ask_confidence=False)[0]


def scored_item(doc: dict, reply) -> dict:
    """What one answered question contributes to its task's scores (and to the harness's sample log)."""
    return {**{key: doc[key] for key in DOC_KEYS}, "prediction": prediction_text(reply)}


# -- scores --------------------------------------------------------------------------------------------------
def judge_settings():
    """The factual judge as `chimdqa evaluate` would be configured by ENVIRONMENT (an EvalConfig)."""
    values = {name: os.environ.get(var) or None for name, var in ENVIRONMENT.items()
              if name in ("judge", "judge_model", "api_base", "api_key_env", "judge_prompt", "llm_cache")}
    if values["api_base"]:
        values["api_base"] = tuple(values["api_base"].split())
    try:
        return EvalConfig(**{k: v for k, v in values.items() if v is not None})
    except InputError as err:  # it names evaluate's flag; say where the value came from
        given = ", ".join(ENVIRONMENT[k] for k, v in values.items() if v is not None)
        raise InputError(f"the factual judge's settings from the environment ({given or 'none'}): {err}") from None


def factual_scores(items) -> dict:
    """{CO, NA, IN, CGA, F1} (0-100) of these answered factual questions, graded by the judge ENVIRONMENT names."""
    return dict(_factual_scores(_key(items), judge_settings()))


def open_scores(items) -> dict:
    """{meteor, rouge_l, cider} (0-100) of these answered open-ended questions."""
    return dict(_open_scores(_key(items)))


def _key(items) -> tuple:
    return tuple((i["id"], i["question"], i["answer"], i["prediction"]) for i in items)


def _items(key) -> list[dict]:
    return [{"id": i, "question": q, "answer": a, "prediction": p} for i, q, a, p in key]


@functools.lru_cache(maxsize=64)  # the five factual metrics aggregate the same answers: they are graded once
def _factual_scores(key: tuple, settings) -> tuple:
    if not key:
        raise InputError("no factual answers to score")
    settings.check_judge()
    endpoint = settings.endpoint()
    client = endpoint.client() if endpoint is not None else None
    family = FAMILIES["factual"]
    try:
        scores = score_family(family, _items(key), None, settings, client=client)
    except ChatError as err:
        raise InputError(str(err)) from None
    finally:
        if client is not None:
            client.close()
    summary = summarize(scores.per_item, statistic=family.statistic)
    return tuple((name, summary[name]["value"]) for name in FACTUAL_METRICS)


@functools.lru_cache(maxsize=64)
def _open_scores(key: tuple) -> tuple:
    if not key:
        raise InputError("no open-ended answers to score")
    family = FAMILIES["open_ended"]
    scores = score_family(family, _items(key), set(OPEN_METRICS), EvalConfig(metrics=OPEN_METRICS))
    summary = summarize(scores.per_item, statistic=family.statistic)
    return tuple((name, summary[name]["value"]) for name in OPEN_METRICS)
