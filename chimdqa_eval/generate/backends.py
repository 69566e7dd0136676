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


def prompt_cache_key(version: str, messages, extra: dict) -> str:
    """The full request as a cache key: template version, every message and the extra request fields."""
    from chimdqa_eval.llm import prompt_key

    return prompt_key(f"generate-{version}", json.dumps(list(messages), ensure_ascii=False, sort_keys=True),
                      json.dumps(extra, sort_keys=True))


class ApiBackend:
    """Chat completions from an OpenAI-compatible endpoint; answers are cached as they arrive, so a re-run (or a
    run resumed after a kill) asks only what is not answered yet."""

    name = "openai"

    def __init__(self, client, *, logprobs: bool = False):
        self.client = client
        self.logprobs = logprobs

    @property
    def extra(self) -> dict:
        return {"logprobs": True} if self.logprobs else {}

    def complete(self, prompts) -> list[Answer]:
        from chimdqa_eval.llm import ChatRequest

        requests = [ChatRequest(p.messages, p.key) for p in prompts]
        outcomes = self.client.complete_all(requests, str, desc="chimdqa generate")
        return [Answer(o.raw if o.ok else None, o.error, getattr(o, "logprobs", None), o.cached) for o in outcomes]

    def metadata(self) -> dict:
        return {}

    def close(self) -> None:
        self.client.close()


class TransformersBackend:
    """Greedy generation with a local causal LM, in batches of prompts of similar length (left padding)."""

    name = "transformers"

    def __init__(self, model: str, *, max_new_tokens: int = 256, batch_size: int = 8, device=None,
                 logprobs: bool = False):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from chimdqa_eval.neural import (ModelUnavailable, load_pretrained, max_input_length, model_fingerprint,
                                         torch_device)
        from chimdqa_eval.schema import InputError

        try:
            self.tokenizer = load_pretrained(AutoTokenizer, model, "generation")
            self.model = load_pretrained(AutoModelForCausalLM, model, "generation")
        except ModelUnavailable as err:
            raise InputError(str(err)) from None
        self.device = torch_device(device)
        self.model.to(self.device).eval()
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.max_length = max_input_length(self.tokenizer, self.model.config)
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.logprobs = logprobs
        self.model_name = model
        self.fingerprint = model_fingerprint(self.model, self.tokenizer)[:16]

    @property
    def extra(self) -> dict:
        return {"logprobs": True} if self.logprobs else {}

    def prompt_text(self, messages) -> str:
        """The chat template when the tokenizer has one; else the messages' contents, one paragraph each."""
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False)
        return "\n\n".join(m["content"] for m in messages) + "\n\n"

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def complete(self, prompts) -> list[Answer]:
        from chimdqa_eval.neural import progress

        texts = [self.prompt_text(p.messages) for p in prompts]
        encoded = [self.tokenizer(t)["input_ids"] for t in texts]
        answers: list = [None] * len(prompts)
        limit = self.max_length - self.max_new_tokens
        fitting = []
        for i, ids in enumerate(encoded):
            if len(ids) > limit:
                answers[i] = Answer(None, f"the prompt has {len(ids)} tokens; {self.model_name} takes {limit} "
                                          f"besides the {self.max_new_tokens} new ones (lower "
                                          "--max-context-tokens or --top-k)")
            else:
                fitting.append(i)
        order = sorted(fitting, key=lambda i: len(encoded[i]))
        batches = [order[s:s + self.batch_size] for s in range(0, len(order), self.batch_size)]
        for batch in progress(batches, len(order), "chimdqa generate"):
            for i, answer in zip(batch, self._generate([encoded[i] for i in batch])):
                answers[i] = answer
        return answers

    def _generate(self, sequences) -> list[Answer]:
        import torch

        pad = self.tokenizer.pad_token_id
        width = max(map(len, sequences))
        ids = torch.full((len(sequences), width), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for row, seq in enumerate(sequences):
            ids[row, width - len(seq):] = torch.tensor(seq)
            mask[row, width - len(seq):] = 1
        with torch.inference_mode():
            out = self.model.generate(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                                      do_sample=False, max_new_tokens=self.max_new_tokens, pad_token_id=pad,
                                      return_dict_in_generate=True, output_scores=self.logprobs)
        new = out.sequences[:, width:]
        scores = (self.model.compute_transition_scores(out.sequences, out.scores, normalize_logits=True)
                  if self.logprobs else None)
        answers = []
        eos = self.model.generation_config.eos_token_id
        eos = set(eos if isinstance(eos, list) else [eos]) - {None}
        for row in range(len(sequences)):
            tokens = new[row].tolist()
            length = next((j + 1 for j, t in enumerate(tokens) if t in eos), len(tokens))  # through the EOS
            text = self.tokenizer.decode(tokens[:length], skip_special_tokens=True).strip()
            logprobs = [float(x) for x in scores[row, :length]] if scores is not None else None
            answers.append(Answer(text, None, logprobs))
        return answers

    def metadata(self) -> dict:
        return {"model_path": self.model_name, "model_fingerprint": self.fingerprint, "decoding": "greedy",
                "max_new_tokens": self.max_new_tokens, "batch_size": self.batch_size}

    def close(self) -> None:
        pass
