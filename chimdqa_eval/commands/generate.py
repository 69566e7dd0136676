"""`chimdqa generate`: run a model on the release's questions and write a predictions file `chimdqa evaluate`
reads, with its metadata side file (the work is chimdqa_eval.generate.generation's).

    chimdqa generate --model qwen2.5-7b-instruct --api-base http://gpu1:8000/v1 http://gpu2:8000/v1 \\
        --mode rag --out preds-rag.jsonl

Exit status: 0 when every question was answered, 1 when some were left unanswered (listed; run again), 2 at
--max-llm-calls or on bad input.
"""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from chimdqa_eval.commands._options import add_endpoint_arguments
from chimdqa_eval.generate.backends import BACKENDS
from chimdqa_eval.generate.config import MODES, GenerateConfig
from chimdqa_eval.generate.generation import exit_code, generate
from chimdqa_eval.generate.packing import TRUNCATIONS
from chimdqa_eval.generate.retrieval import METHODS
from chimdqa_eval.schema import CONFIGS, QA_SPLITS

# Every flag's default is GenerateConfig's (the flags are its fields): one place for each.
DEFAULTS = {f.name: f.default for f in dataclasses.fields(GenerateConfig)}


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """Everything but --mode and --out (the fields of GenerateConfig): shared with `chimdqa run`."""
    parser.add_argument("--model", required=True,
                        help="the endpoint's model name, or a local causal LM folder with --backend transformers")
    parser.add_argument("--name", help="model name in the metadata and results (default: --model)")
    parser.add_argument("--notes", help="free text for the metadata")
    parser.add_argument("--backend", choices=BACKENDS, default=DEFAULTS["backend"],
                        help="openai: any OpenAI-compatible chat endpoint (default); transformers: a local model")
    data = parser.add_argument_group("data (as in chimdqa evaluate)")
    data.add_argument("--config", default=DEFAULTS["config"], choices=CONFIGS, help="dataset config (default all)")
    data.add_argument("--split", default=DEFAULTS["split"], choices=tuple(QA_SPLITS),
                      help="split (default test: all)")
    data.add_argument("--data-dir", metavar="DIR", help="release folder (default: the bundled sample)")
    data.add_argument("--data-files", nargs="+", metavar="FILE",
                      help="QA jsonl files instead of the release's (for chinese_simpleqa: its jsonl)")
    add_endpoint_arguments(parser.add_argument_group("endpoint (--backend openai)"), model_flag=None)
    gen = parser.add_argument_group("generation")
    gen.add_argument("--temperature", type=float, default=DEFAULTS["temperature"],
                     help=f"sampling temperature (default {DEFAULTS['temperature']:g})")
    gen.add_argument("--max-tokens", type=int, default=DEFAULTS["max_tokens"],
                     help=f"longest answer in tokens (default {DEFAULTS['max_tokens']})")
    gen.add_argument("--prompt", metavar="YAML", help="prompt template (default: the bundled templates/chimdqa.yaml)")
    gen.add_argument("--ask-confidence", action="store_true",
                     help="ask for a 0-100 confidence after the answer (calibration: evaluate reports ECE)")
    gen.add_argument("--logprobs", action="store_true",
                     help="store the answer tokens' log-probabilities (perplexity without a local LM)")
    long = parser.add_argument_group("long mode")
    long.add_argument("--max-context-tokens", type=int, default=DEFAULTS["max_context_tokens"],
                      help=f"document tokens in the prompt (default {DEFAULTS['max_context_tokens']})")
    long.add_argument("--truncation", choices=TRUNCATIONS, default=DEFAULTS["truncation"],
                      help="how a longer document is cut: middle (keep the first and last halves of the budget, "
                           "LongBench's rule; default), head (keep the start) or tail (keep the end)")
    long.add_argument("--context-tokenizer", metavar="NAME_OR_PATH",
                      help="the served model's Hugging Face tokenizer: counts the document's tokens (default: a "
                           "stated over-estimate) and, with --logprobs --ask-confidence, tells the answer's tokens "
                           "from the confidence line's")
    rag = parser.add_argument_group("rag mode")
    rag.add_argument("--retrieval", choices=METHODS, default=DEFAULTS["retrieval"],
                     help="bm25 (default), dense or hybrid (RRF)")
    rag.add_argument("--top-k", type=int, default=DEFAULTS["top_k"],
                     help=f"chunks in the prompt (default {DEFAULTS['top_k']})")
    rag.add_argument("--chunk-size", type=int, default=DEFAULTS["chunk_size"],
                     help=f"chunk size in characters (default {DEFAULTS['chunk_size']})")
    rag.add_argument("--chunk-overlap", type=int, default=DEFAULTS["chunk_overlap"],
                     help=f"overlap in characters (default {DEFAULTS['chunk_overlap']})")
    rag.add_argument("--embedding-model", metavar="NAME_OR_PATH", help="sentence-transformers encoder (dense, hybrid)")
    rag.add_argument("--reranker", metavar="NAME_OR_PATH", help="cross-encoder that re-ranks the candidates")
    rag.add_argument("--rerank-candidates", type=int, default=DEFAULTS["rerank_candidates"],
                     help=f"candidates re-ranked (default {DEFAULTS['rerank_candidates']})")
    local = parser.add_argument_group("local models (transformers backend, encoders)")
    local.add_argument("--device", help="torch device (default: cuda when available, else cpu)")
    local.add_argument("--batch-size", type=int, default=DEFAULTS["batch_size"],
                       help=f"prompts per generation batch (default {DEFAULTS['batch_size']})")
    local.add_argument("--allow-download", action="store_true",
                       help="let Hugging Face models download (by default the Hub is used offline)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mode", required=True, choices=MODES,
                        help="long (the document in the prompt), rag (retrieved chunks of it) or closed-book (no "
                             "document: Chinese SimpleQA, and on ChiMDQA the without-document baseline)")
    parser.add_argument("--out", required=True, metavar="PREDICTIONS.jsonl",
                        help="predictions file; its metadata goes to <stem>.meta.json beside it")
    add_model_arguments(parser)


def config_of(args) -> GenerateConfig:
    return GenerateConfig.from_values(vars(args))


def run(args) -> int:
    return exit_code(generate(config_of(args), args.mode, Path(args.out)))
