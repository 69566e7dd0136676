"""Run a model on ChiMDQA / Chinese SimpleQA questions (`chimdqa generate`, `chimdqa run`).

prompts.py (versioned YAML templates, reply parsing) · packing.py (long-context packing and truncation) ·
chunking.py (chunks within one page and one section) + retrieval.py (BM25, dense, hybrid, re-ranking) ·
evidence.py (hit@k / recall@k of evidence pages) · backends.py (OpenAI-compatible endpoints, local transformers
models) · config.py (GenerateConfig) · generation.py (generate(); the commands are chimdqa_eval.commands.generate
and .run).
"""
