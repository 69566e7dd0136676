"""Run a model on ChiMDQA / Chinese SimpleQA questions (`chimdqa generate`, `chimdqa run`).

prompts.py (versioned YAML templates) · packing.py (long-context packing) · chunking.py + retrieval.py (chunks,
BM25, dense, hybrid, re-ranking) · evidence.py (hit@k / recall@k of evidence pages) · backends.py (OpenAI-compatible
endpoints, local transformers models) · command.py / run_command.py (the CLI).
"""
