"""Where answers come from: an OpenAI-compatible chat endpoint through the one LLM client (chimdqa_eval.llm), or
a local causal LM through transformers (batched greedy generation).

Both take prompts (chat messages with a cache key) and return one Answer per prompt, in order: the reply text,
its token log-probabilities when asked, or the error that left it unanswered.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

BACKENDS = ("openai", "transformers")


@dataclass(frozen=True)
class Prompt:
    messages: tuple
    key: str               # covers everything the reply depends on besides the model and endpoint settings


@dataclass
class Answer:
    text: str | None
    error: str | None = None
    logprobs: list | None = None
    cached: bool = False


def prompt_cache_key(version: str, messages) -> str:
    """A prompt's cache key: the template version and every message. The client adds the rest of the request
    (model, API origins, temperature, max tokens, extra fields such as logprobs)."""
    from chimdqa_eval.llm import prompt_key

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
        from chimdqa_eval.llm import ChatRequest

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
    """Greedy generation with a local causal LM (chimdqa_eval.models), in batches of prompts of similar length."""

    name = "transformers"

    def __init__(self, model: str, *, max_new_tokens: int = 256, batch_size: int = 8, device=None,
                 logprobs: bool = False, download: bool = False):
        from chimdqa_eval.models import ModelUnavailable, load_model
        from chimdqa_eval.schema import InputError

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

    def prompt_text(self, messages) -> str:
        """The chat template when the tokenizer has one; else the messages' contents, one paragraph each."""
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False)
        return "\n\n".join(m["content"] for m in messages) + "\n\n"

    def context_room(self, messages_without_context) -> int:
        """Tokens left for a document in the longest of these prompts (rendered with an empty context), after the
        prompt itself and the answer's max_new_tokens."""
        longest = max(len(self.tokenizer(self.prompt_text(m))["input_ids"]) for m in messages_without_context)
        return self.model.max_length - self.max_new_tokens - longest

    def complete(self, prompts) -> list[Answer]:
        from chimdqa_eval.models import greedy_generate

        encoded = [self.tokenizer(self.prompt_text(p.messages))["input_ids"] for p in prompts]
        limit = self.model.max_length - self.max_new_tokens
        answers: list = [None] * len(prompts)
        fitting = []
        for i, ids in enumerate(encoded):
            if len(ids) > limit:
                answers[i] = Answer(None, f"the prompt has {len(ids)} tokens; {self.model.name} takes {limit} "
                                          f"besides the {self.max_new_tokens} new ones (lower --max-context-tokens "
                                          "or --top-k)")
            else:
                fitting.append(i)
        generated = greedy_generate(self.model, [encoded[i] for i in fitting], max_new_tokens=self.max_new_tokens,
                                    with_logprobs=self.logprobs, max_items=self.batch_size, desc="chimdqa generate")
        for i, (tokens, logprobs) in zip(fitting, generated):
            answers[i] = Answer(self.tokenizer.decode(tokens, skip_special_tokens=True).strip(), None, logprobs)
        return answers

    def metadata(self) -> dict:
        return {"model_fingerprint": self.model.fingerprint[:16], "decoding": "greedy",
                "batch_size": self.batch_size}

    def pending(self, prompts) -> int:
        return len(prompts)  # nothing is cached: every prompt is generated

    def close(self) -> None:
        pass
