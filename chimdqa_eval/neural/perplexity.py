"""Perplexity on chimdqa_eval.models (which holds every torch / transformers call); the arithmetic is here.

Perplexity follows the strided sliding-window method of the transformers documentation
("Perplexity of fixed-length models"), computed from per-token log-probabilities so that padding in a batch
cannot change a text's score.
"""
from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass

from chimdqa_eval.models import LOADED_PER_KIND, MODEL_PACKAGES, load_model, logprob_sums
from chimdqa_eval.schema import InputError, check_texts
from chimdqa_eval.signature import make_signature

# A 12-layer GPT-2 pre-trained by UER on CLUECorpusSmall (Chinese web text), 1,024 positions, the
# bert-base-chinese character vocabulary: small enough for CPUs, long enough context for ChiMDQA answers, and
# the most widely used Chinese GPT-2 on the Hub.
DEFAULT_PERPLEXITY_MODEL = "uer/gpt2-chinese-cluecorpussmall"


# -------------------------------------------------------------------------------------------- perplexity

@dataclass(frozen=True)
class PerplexityResult:
    per_item: list[float]
    signature: str


def perplexity_from_logprobs(logprobs) -> list[float]:
    """exp(-mean log-probability) per item, from per-token natural-log probabilities as APIs return them."""
    if logprobs is None or isinstance(logprobs, (str, bytes)):
        raise InputError(f"logprobs: expected a list of lists of numbers, got {type(logprobs).__name__}")
    out = []
    for i, item in enumerate(logprobs):
        if item is None or isinstance(item, (str, bytes)) or not hasattr(item, "__len__"):
            raise InputError(f"logprobs[{i}]: expected a list of numbers, got {type(item).__name__}")
        if len(item) == 0:
            raise InputError(f"logprobs[{i}]: empty list; perplexity needs at least one token")
        for j, value in enumerate(item):
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
                raise InputError(f"logprobs[{i}][{j}]: expected a number, got {value!r:.60}")
            if value > 0:
                raise InputError(f"logprobs[{i}][{j}]: a log-probability cannot be positive, got {value!r}")
        out.append(math.exp(-math.fsum(float(v) for v in item) / len(item)))
    return out


class PerplexityScorer:
    """Perplexity under a causal LM, loaded once.

    A text is tokenized without special tokens and preceded by the tokenizer's start token (bos, else cls)
    when it has one, so that its first token is scored too. Texts longer than the model's context are scored
    in windows of the full context advanced by `stride` tokens (default half the context); each window
    scores only the tokens the previous window did not, with the rest of the window as context.
    """

    def __init__(self, model=DEFAULT_PERPLEXITY_MODEL, device=None, batch_size=8, stride=None, download=None):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise InputError(f"batch_size: expected a positive integer, got {batch_size!r}")
        self.model_name, self.batch_size = str(model), batch_size
        self.model = load_model("causal-lm", self.model_name, "perplexity", device=device, download=download)
        self.tokenizer = self.model.tokenizer
        self.window = self.model.max_length
        self.fingerprint = self.model.fingerprint
        if stride is None:
            stride = max(1, self.window // 2)
        if not isinstance(stride, int) or isinstance(stride, bool) or not 1 <= stride < self.window:
            raise InputError(f"stride: expected an integer from 1 to {self.window - 1}, got {stride!r}")
        self.stride = stride
        # GPT-2 tokenizers have a bos token; BERT-vocabulary Chinese GPT-2s (UER's) start texts with [CLS].
        start = self.tokenizer.bos_token_id
        self.start_id = start if start is not None else self.tokenizer.cls_token_id
        start_token = "none" if self.start_id is None else self.tokenizer.convert_ids_to_tokens(self.start_id)
        self.signature = make_signature({
            "metric": "perplexity", "model": self.model_name.replace("|", "/"), "weights": self.fingerprint[:12],
            "context": self.window, "stride": stride, "start": start_token}, MODEL_PACKAGES)

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """The start token (if any) then the text's tokens, uncut."""
        ids = self.tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"] if texts else []
        prefix = [] if self.start_id is None else [self.start_id]
        return [prefix + list(i) for i in ids]

    def windows(self, length: int) -> list[tuple[int, int, int]]:
        """(begin, end, first scored position) of each window over a sequence of `length` tokens."""
        out, scored_until = [], 1  # position 0 has no context to be predicted from
        for begin in range(0, length, self.stride):
            end = min(begin + self.window, length)
            out.append((begin, end, scored_until))
            scored_until = end
            if end == length:
                break
        return out

    def score(self, texts) -> PerplexityResult:
        texts = check_texts("texts", texts)
        sequences = self.token_ids(texts)
        pieces, owners = [], []
        for i, sequence in enumerate(sequences):
            if len(sequence) < 2:
                raise InputError(f"texts[{i}]: no tokens to score (empty text); perplexity is undefined")
            for begin, end, first in self.windows(len(sequence)):
                pieces.append(sequence[begin:end])
                owners.append((i, first - begin))
        sums = [0.0] * len(texts)
        firsts = [first for _, first in owners]
        for (i, _), total in zip(owners, logprob_sums(self.model, pieces, firsts, max_items=self.batch_size)):
            sums[i] += total
        per_item = [math.exp(-s / (len(seq) - 1)) for s, seq in zip(sums, sequences)]
        return PerplexityResult(per_item, self.signature)

@functools.lru_cache(maxsize=LOADED_PER_KIND)
def get_perplexity_scorer(model=DEFAULT_PERPLEXITY_MODEL, device=None, batch_size=8, stride=None,
                          download=None) -> PerplexityScorer:
    """The PerplexityScorer for this configuration, kept loaded for reuse. Raises ModelUnavailable."""
    return PerplexityScorer(model, device, batch_size, stride, download)
