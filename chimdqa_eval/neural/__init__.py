"""Model-based open-ended metrics: BERTScore (bertscore.py) and perplexity (perplexity.py), both on
chimdqa_eval.models, the one module that imports torch and transformers."""
from chimdqa_eval.models import MODEL_PACKAGES, ModelUnavailable
from chimdqa_eval.neural.bertscore import (BERT_SCORE_COMPAT, DEFAULT_BERTSCORE_LAYERS, DEFAULT_BERTSCORE_MODEL,
                                           LONG_TEXT_MODES, BertScorer, BertScoreResult, get_bert_scorer,
                                           greedy_match, idf_weights, read_baseline, stitch_windows)
from chimdqa_eval.neural.perplexity import (DEFAULT_PERPLEXITY_MODEL, PerplexityResult, PerplexityScorer,
                                            get_perplexity_scorer, perplexity_from_logprobs)

__all__ = ["MODEL_PACKAGES", "ModelUnavailable", "BERT_SCORE_COMPAT", "DEFAULT_BERTSCORE_LAYERS",
           "DEFAULT_BERTSCORE_MODEL", "LONG_TEXT_MODES", "BertScorer", "BertScoreResult", "get_bert_scorer",
           "greedy_match", "idf_weights", "read_baseline", "stitch_windows", "DEFAULT_PERPLEXITY_MODEL",
           "PerplexityResult", "PerplexityScorer", "get_perplexity_scorer", "perplexity_from_logprobs"]
