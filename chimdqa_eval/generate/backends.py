"""Where answers come from: an OpenAI-compatible chat endpoint through the one LLM client (chimdqa_eval.llm), or
a local causal LM through transformers (batched greedy generation).

Both take prompts (chat messages with a cache key) and return one Answer per prompt, in order: the reply text,
its token log-probabilities when asked, or the error that left it unanswered. Both cache every answer the
moment it is had, in the LLM reply cache (chimdqa_eval.llm.ChatCache: $CHIMDQA_CACHE/llm/chat.sqlite, or
--llm-cache), so a run that was stopped resumes where it stopped and a second run generates nothing.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from chimdqa_eval import models
from chimdqa_eval.cache import cache_dir
from chimdqa_eval.llm import ChatCache, ChatRequest, prompt_key
from chimdqa_eval.models import ModelUnavailable, load_model
from chimdqa_eval.schema import InputError

BACKENDS = ("openai", "transformers")


@dataclass(frozen=True)
class Prompt:
    messages: tuple
    key: str               # covers everything the reply depends on besides the model and endpoint settings
    bare: tuple | None = None    # the messages with the document or passages left out (None: closed-book)
    shrink: str | None = None    # the flags that shorten the document or passages part, for advice


@dataclass
class Answer:
    text: str | None
    error: str | None = None
    logprobs: list | None = None
    cached: bool = False
    tokens: list | None = None   # the generated token ids, when the backend has them (transformers)


def prompt_cache_key(version: str, messages) -> str:
    """A prompt's cache key: the template version and every message. The client adds the rest of the request
    (model, API origins, temperature, max tokens, extra fields such as logprobs)."""
    return prompt_key(f"generate-{version}", json.dumps(list(messages), ensure_ascii=False, sort_keys=True))


class ApiBackend:
    """Chat completions from an OpenAI-compatible endpoint (chimdqa_eval.llm: one or more API bases, the cache,
    the call cap); answers are cached as they arrive, so a re-run (or a run resumed after a kill) asks only what
    is not answered yet."""

    name = "openai"
    stage = "generate"

    def __init__(self, client, *, logprobs: bool = False):
        self.client = client
        self.logprobs = logprobs

    def requests(self, prompts) -> list:
        return [ChatRequest(p.messages, p.key, extra={"logprobs": True} if self.logprobs else None) for p in prompts]

    def pending(self, prompts) -> int:
        """How many of the prompts are not answered in the cache yet."""
        return self.client.pending(self.requests(prompts))

    def complete(self, prompts) -> list[Answer]:
        outcomes = self.client.complete_all(self.requests(prompts), str, desc="chimdqa generate", stage=self.stage)
        return [Answer(o.raw if o.ok else None, o.error, o.logprobs, o.cached) for o in outcomes]

    def metadata(self) -> dict:
        endpoint = self.client.endpoint
        return {"api": endpoint.origins, "api_bases": len(endpoint.api_bases),
                "concurrency_per_base": endpoint.concurrency, "usage": self.client.usage_report()}

    def close(self) -> None:
        self.client.close()


class TransformersBackend:
    """Greedy generation with a local causal LM (chimdqa_eval.models), in batches of prompts of similar length.
    Each batch's answers go into the reply cache as soon as it is generated, under the model's content
    fingerprint (weights and tokenizer) and the number of new tokens, with the generated token ids."""

    name = "transformers"

    def __init__(self, model: str, *, max_new_tokens: int = 256, batch_size: int = 8, device=None,
                 logprobs: bool = False, download: bool = False, cache_path=None):
        try:
            self.model = load_model("causal-lm", model, "generation", device=device, download=download)
        except ModelUnavailable as err:
            raise InputError(str(err)) from None
        self.tokenizer = self.model.tokenizer
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.logprobs = logprobs
        self.cache = ChatCache(Path(cache_path) if cache_path else cache_dir("llm") / "chat.sqlite")
        self._cache_model = f"transformers:{self.model.fingerprint}"
        self._settings = json.dumps({"decoding": "greedy", "max_new_tokens": max_new_tokens})

    def prompt_text(self, messages) -> str:
        """The chat template when the tokenizer has one; else the messages' contents, one paragraph each."""
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False)
        return "\n\n".join(m["content"] for m in messages) + "\n\n"

    def _length(self, messages) -> int:
        return len(self.tokenizer(self.prompt_text(messages))["input_ids"])

    def context_room(self, messages_without_context) -> int:
        """Tokens left for a document in the longest of these prompts (rendered with an empty context), after the
        prompt itself and the answer's max_new_tokens."""
        return self.model.max_length - self.max_new_tokens - max(map(self._length, messages_without_context))

    def decode(self, tokens) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=True)

    def _cached(self, prompt: Prompt) -> Answer | None:
        record = self.cache.get(self._cache_model, self._settings, prompt.key)
        if record is None or (self.logprobs and record.get("logprobs") is None):
            return None
        return Answer(record["text"], None, record["logprobs"] if self.logprobs else None, True, record["tokens"])

    def _too_long(self, prompt: Prompt, length: int) -> str:
        """Why a prompt of `length` tokens is not generated, and what to lower: the document part's flags when
        the prompt without it fits, else --max-tokens."""
        limit = self.model.max_length - self.max_new_tokens
        said = (f"the prompt has {length} tokens; {self.model.name} takes {limit} besides the {self.max_new_tokens} "
                "new ones (--max-tokens)")
        bare = self._length(prompt.bare) if prompt.bare is not None else length
        if prompt.shrink is not None and bare <= limit:
            return f"{said}: lower {prompt.shrink}"
        without = f", and without the document it has {bare}" if prompt.bare is not None else ""
        return f"{said}{without}: lower --max-tokens, or use a model with more positions"

    def pending(self, prompts) -> int:
        """How many distinct prompts have no answer in the cache yet."""
        return sum(self._cached(p) is None for p in {p.key: p for p in prompts}.values())

    def complete(self, prompts) -> list[Answer]:
        answers: dict = {}
        todo: dict = {}
        for prompt in prompts:
            if prompt.key in answers or prompt.key in todo:
                continue
            hit = self._cached(prompt)
            if hit is not None:
                answers[prompt.key] = hit
                continue
            ids = self.tokenizer(self.prompt_text(prompt.messages))["input_ids"]
            if len(ids) > self.model.max_length - self.max_new_tokens:
                answers[prompt.key] = Answer(None, self._too_long(prompt, len(ids)))
            else:
                todo[prompt.key] = ids
        order = sorted(todo, key=lambda key: len(todo[key]))  # batches of similar length, as greedy_generate makes
        batches = [order[start:start + self.batch_size] for start in range(0, len(order), self.batch_size)]
        for batch in models.progress(batches, len(order), "chimdqa generate"):
            generated = models.greedy_generate(self.model, [todo[key] for key in batch],
                                               max_new_tokens=self.max_new_tokens, with_logprobs=self.logprobs,
                                               max_items=self.batch_size, desc="batch")
            for key, (tokens, logprobs) in zip(batch, generated):
                text = self.decode(tokens).strip()
                self.cache.put(self._cache_model, self._settings, key,
                               {"text": text, "logprobs": logprobs, "tokens": tokens,
                                "usage": {"prompt_tokens": len(todo[key]), "completion_tokens": len(tokens)}})
                answers[key] = Answer(text, None, logprobs, False, tokens)
        return [answers[p.key] for p in prompts]

    def metadata(self) -> dict:
        return {"model_fingerprint": self.model.fingerprint[:16], "decoding": "greedy",
                "batch_size": self.batch_size}

    def close(self) -> None:
        self.cache.close()
