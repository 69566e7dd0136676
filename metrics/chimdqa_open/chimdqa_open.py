"""ChiMDQA open-ended metric: METEOR, ROUGE-L, CIDEr, CIDEr-D, perplexity and BERTScore on Chinese answers."""
import datasets
import evaluate

from chimdqa_eval.open_ended import compute_open
from chimdqa_eval.schema import check_answer_pairs

_CITATION = """\
@article{chimdqa2025,
  title   = {ChiMDQA: Towards Comprehensive Chinese Document QA with Fine-grained Evaluation},
  journal = {arXiv preprint},
  year    = {2025}
}
"""

_DESCRIPTION = """\
The open-ended metric of ChiMDQA (the paper's Table 5). Lexical metrics run over one Chinese
tokenization (jieba's accurate mode by default, or characters) and equal the reference implementations fed the same
tokens: METEOR as NLTK's meteor_score (no WordNet: synonyms are a pluggable source, none by default), ROUGE-L
F-measure as rouge_score, CIDEr as Vedantam et al. 2015 define it (the mean over n = 1..4 of tf-idf cosines, the
paper's Table 5 column) and CIDEr-D as pycocoevalcap (clipped counts, length penalty sigma = 6); both take document
frequencies over the evaluated references. BERTScore equals bert_score on the same model (bert-base-chinese, layer
8 by default) and perplexity comes from a causal LM or from log-probabilities the caller supplies. Scores are on
the paper's 0-100 scale except perplexity; every aggregate is the mean of per-item scores, and each metric carries
a reproducibility signature. Nothing touches the network unless a model has to be fetched from the Hub.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): model answers.
    references (list of str): one reference answer per prediction.
    metrics (list of str, optional): some of "meteor", "rouge_l", "cider", "cider_d", "perplexity", "bertscore".
        Default: all six, and a metric whose model cannot be loaded is skipped (reason under "skipped"); metrics you
        name are explicit and an unavailable model raises an error instead. `explicit=True/False` overrides.
    tokenizer (str): "jieba" (default) or "char".
    domains, question_types, levels (list of str, optional): labels per item for the breakdowns; question
        types may be given in Chinese (推理, 扩展, 总结, 建议, 生成, ...).
    logprobs (list of list of float, optional): per-token log-probabilities of each prediction; perplexity is
        then exp(-mean) per item and no model is loaded.
    perplexity_model (str, optional): causal LM for perplexity (default "uer/gpt2-chinese-cluecorpussmall").
    bertscore_model (str): default "bert-base-chinese"; bertscore_num_layers (int): default 8.
    idf (bool), rescale_with_baseline (bool): as in bert_score.
    long_answers (str): "truncate" (default, as bert_score; the count is "bertscore_truncated") or "window".
    synonyms (callable, optional): word -> synonyms, for METEOR.
    device (str, optional): torch device for the models.
Returns:
    meteor, rouge_l, cider, bertscore_f1, bertscore_precision, bertscore_recall: 0-100, the mean of per-item
        scores (CIDEr: the mean cosine times 100).
    cider_d: pycocoevalcap's CIDEr-D (0-10) times 100, as captioning papers report it (0-1000).
    perplexity: the mean of per-item perplexities (empty predictions have none and are left out).
    per_item: {metric: list}; by_domain / by_question_type / by_level: {label: {metric: value}};
    skipped: {metric: reason}; signature: {metric: signature string}.
Empty predictions score 0 on the lexical metrics and on BERTScore and have no perplexity; an empty reference is
an error.
Examples:
    >>> chimdqa_open = evaluate.load("metrics/chimdqa_open")
    >>> results = chimdqa_open.compute(predictions=["北京是中国的首都。"], references=["中国的首都是北京。"],
    ...                                metrics=["rouge_l", "meteor"])
    >>> round(results["rouge_l"], 2), round(results["meteor"], 2)
    (66.67, 85.19)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ChimdqaOpen(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            reference_urls=["https://github.com/google-research/google-research/tree/master/rouge",
                            "https://www.nltk.org/api/nltk.translate.meteor_score.html",
                            "https://github.com/salaniz/pycocoevalcap",
                            "https://github.com/Tiiiger/bert_score"],
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Check the texts first (evaluate's own error does not say which item is wrong), then compute."""
        if predictions is not None or references is not None:
            check_answer_pairs(predictions, references)
        return super().compute(predictions=predictions, references=references, **kwargs)

    def _compute(self, predictions, references, **options):
        return compute_open(predictions, references, **options)
