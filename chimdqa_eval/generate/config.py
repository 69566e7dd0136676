"""`GenerateConfig`: every setting of a generation run (`chimdqa generate`, `chimdqa run`, the harness tasks),
typed, frozen and checked, with the same names and defaults as the command's flags. The generation library takes
it; the commands only build it from their flags."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from chimdqa_eval.generate.backends import BACKENDS
from chimdqa_eval.generate.packing import DEFAULT_MAX_CONTEXT_TOKENS, DEFAULT_TRUNCATION, TRUNCATIONS
from chimdqa_eval.generate.retrieval import RetrievalSettings
from chimdqa_eval.schema import CONFIGS, QA_SPLITS, InputError

MODES = ("long", "rag", "closed-book")
_RAG = RetrievalSettings()  # the rag mode's defaults are retrieval's own


@dataclass(frozen=True)
class GenerateConfig:
    model: str
    name: str | None = None
    notes: str | None = None
    backend: str = "openai"
    # the questions, as in chimdqa evaluate
    config: str = "all"
    split: str = "test"
    data_dir: str | None = None
    data_files: tuple | None = None
    # the endpoint (--backend openai), read by llm.endpoint_from_args
    api_base: tuple | None = None
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 16
    timeout: float = 60.0
    max_retries: int = 5
    max_llm_calls: int | None = None
    price_per_mtok: tuple | None = None
    llm_cache: str | None = None
    dry_run: bool = False
    # generation
    temperature: float = 0.0
    max_tokens: int = 512
    prompt: str | None = None
    ask_confidence: bool = False
    logprobs: bool = False
    # long mode
    max_context_tokens: int = DEFAULT_MAX_CONTEXT_TOKENS
    truncation: str = DEFAULT_TRUNCATION
    context_tokenizer: str | None = None
    # rag mode
    retrieval: str = _RAG.method
    top_k: int = _RAG.top_k
    chunk_size: int = _RAG.chunk_size
    chunk_overlap: int = _RAG.chunk_overlap
    embedding_model: str | None = None
    reranker: str | None = None
    rerank_candidates: int = _RAG.rerank_candidates
    # local models
    device: str | None = None
    batch_size: int = 8
    allow_download: bool = False

    def __post_init__(self):
        for name in ("api_base", "data_files", "price_per_mtok"):  # one value or a list: kept as a tuple
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, (value,) if isinstance(value, str) else tuple(value))
        self.check()

    @classmethod
    def from_values(cls, values) -> "GenerateConfig":
        """From a mapping with (at least) the fields' names, e.g. vars() of the command's parsed flags; other
        keys are ignored."""
        return cls(**{f.name: values[f.name] for f in dataclasses.fields(cls) if f.name in values})

    def replace(self, **changes) -> "GenerateConfig":
        return dataclasses.replace(self, **changes)

    def check(self) -> None:
        """InputError naming the flag for a value no run could use."""
        for name, allowed in (("backend", BACKENDS), ("config", CONFIGS), ("split", tuple(QA_SPLITS)),
                              ("truncation", TRUNCATIONS)):
            if getattr(self, name) not in allowed:
                raise InputError(f"--{name} {getattr(self, name)}: expected one of {', '.join(allowed)}")
        for name in ("max_tokens", "batch_size", "max_context_tokens"):
            if getattr(self, name) < 1:
                raise InputError(f"--{name.replace('_', '-')}: expected at least 1, got {getattr(self, name)}")
        if self.backend == "transformers" and self.context_tokenizer:
            raise InputError(f"--context-tokenizer {self.context_tokenizer}: the transformers backend counts with "
                             "the model's own tokenizer; leave the flag out")
        if self.backend == "openai" and self.logprobs and self.ask_confidence and not self.context_tokenizer:
            raise InputError("--logprobs with --ask-confidence: the endpoint sends one log-probability per token of "
                             "the whole reply, the confidence line's included, and which of them are the answer's "
                             "takes the served model's tokenizer: add --context-tokenizer NAME_OR_PATH (or leave "
                             "out one of the two flags)")
