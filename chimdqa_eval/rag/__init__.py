"""RAGChecker's metrics for Chinese RAG systems: claims -> entailment checks -> eleven formulas.

    from chimdqa_eval.rag import compute_rag
    compute_rag(predictions, references, questions, retrieved_contexts, checker="llm",
                judge_model="qwen2.5-72b-instruct", api_base="http://localhost:8000/v1")
"""
from chimdqa_eval.rag.checkers import CheckTask, LLMChecker, ModelUnavailable, NLIChecker, nli_checker
from chimdqa_eval.rag.claims import LLMExtractor, LLMFailure, SentenceExtractor, sentence_claims
from chimdqa_eval.rag.metrics import (ALL_METRICS, GENERATOR, GROUPS, OVERALL, REQUIREMENTS, RETRIEVER, STRUCTURES,
                                      query_scores, required_structures, resolve_metrics)
from chimdqa_eval.rag.scoring import RagItem, compute_rag, evaluate_items

__all__ = ["ALL_METRICS", "GENERATOR", "GROUPS", "OVERALL", "REQUIREMENTS", "RETRIEVER", "STRUCTURES", "CheckTask",
           "LLMChecker", "LLMExtractor", "LLMFailure", "ModelUnavailable", "NLIChecker", "RagItem",
           "SentenceExtractor", "compute_rag", "evaluate_items", "nli_checker", "query_scores",
           "required_structures", "resolve_metrics", "sentence_claims"]
