"""ChiMDQA RAG metric: RAGChecker's eleven claim-level metrics (the paper's Table 6) for Chinese RAG systems."""
import datasets
import evaluate

from chimdqa_eval.rag import compute_rag
from chimdqa_eval.rag.scoring import check_inputs

_CITATION = """\
@article{chimdqa2025,
  title   = {ChiMDQA: Towards Comprehensive Chinese Document QA with Fine-grained Evaluation},
  journal = {arXiv preprint},
  year    = {2025}
}
@inproceedings{ru2024ragchecker,
  title     = {RAGChecker: A Fine-grained Framework for Diagnosing Retrieval-Augmented Generation},
  author    = {Ru, Dongyu and Qiu, Lin and Hu, Xiangkun and Zhang, Tianhang and Shi, Peng and Chang, Shuaichen and
               Cheng, Jiayang and Wang, Cunxiang and Sun, Shichao and Li, Huanyu and Zhang, Zizhao and
               Wang, Binjie and Jiang, Jiarong and He, Tong and Wang, Zhiguo and Liu, Pengfei and Zhang, Yue and
               Zhang, Zheng},
  booktitle = {NeurIPS Datasets and Benchmarks},
  year      = {2024}
}
"""

_DESCRIPTION = """\
The RAG metric of ChiMDQA (the paper's Table 6), defined as RAGChecker defines it. Claims are extracted from
the response and from the reference answer, then each claim is checked against the other answer and against
every retrieved chunk, giving four entailment structures. From them: overall precision, recall and F1;
retriever claim recall and context precision; generator context utilization, noise sensitivity (relevant /
irrelevant chunks), hallucination, self-knowledge and faithfulness. Each is computed per query (an empty claim
or chunk list gives 0, as in RAGChecker), averaged over queries and reported on a 0-100 scale at full
precision (RAGChecker rounds to one decimal). On RAGChecker's labels the numbers equal RAGChecker's.
Claims come from an offline Chinese clause splitter or an LLM; labels from an NLI model, an LLM judge, or the
caller. Only the structures the requested metrics need are computed. LLM replies are cached on disk, so an
interrupted run resumes without asking anything twice.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): the RAG system's responses.
    references (list of str): one reference (ground-truth) answer per response.
    questions (list of str): the questions.
    retrieved_contexts (list of list of str): the chunks retrieved for each question.
    metrics (list of str, optional): metric names, or the groups "overall", "retriever", "generator", "all".
    extractor (str): "sentence" (default, offline clause splitting) or "llm".
    checker (str): "nli" (default; needs nli_model=), "llm" (needs judge_model= and api_base=) or
        "precomputed" (every structure comes from labels=).
    nli_model (str, optional): path or Hub name of a transformers sequence-classification NLI model; label names
        are read from its config (entailment / neutral / contradiction).
    judge_model (str), api_base (str), api_key_env (str, default "OPENAI_API_KEY"), concurrency (int),
        cache_path (str): the OpenAI-compatible endpoint used by the LLM extractor and checker; or
        endpoint (chimdqa_eval.llm.LLMEndpoint): several API bases, timeout, retries, a request cap, prices.
    labels (list of dict, optional): per query, any of RAGChecker's response_claims, gt_answer_claims,
        answer2response, response2answer, retrieved2response, retrieved2answer ("Entailment" / "Neutral" /
        "Contradiction"); given fields are used as they are.
    domains, question_types (list of str, optional): labels per query for the breakdowns.
    device (str, optional): torch device for the NLI model.
Returns:
    precision, recall, f1, claim_recall, context_precision, context_utilization,
    noise_sensitivity_in_relevant, noise_sensitivity_in_irrelevant, hallucination, self_knowledge,
    faithfulness: 0-100, the mean of per-query scores; overall / retriever / generator: the same, grouped as
    RAGChecker groups them; n: number of queries; per_item: claims, labels and scores per query;
    by_domain / by_question_type: {label: {metric: value, "n": count}}; signature: reproducibility string.
Examples:
    >>> chimdqa_rag = evaluate.load("metrics/chimdqa_rag")
    >>> results = chimdqa_rag.compute(
    ...     predictions=["北京是中国的首都。"], references=["中国的首都是北京。"], questions=["中国的首都是哪里？"],
    ...     retrieved_contexts=[["北京是中华人民共和国的首都。"]], checker="precomputed",
    ...     labels=[{"answer2response": ["Entailment"], "response2answer": ["Entailment"],
    ...              "retrieved2response": [["Entailment"]], "retrieved2answer": [["Neutral"]]}])
    >>> results["precision"], results["faithfulness"], results["claim_recall"]
    (100.0, 100.0, 0.0)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ChimdqaRag(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string"),
                                        "questions": datasets.Value("string"),
                                        "retrieved_contexts": datasets.Sequence(datasets.Value("string"))}),
            reference_urls=["https://github.com/amazon-science/RAGChecker"],
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """RAGChecker's metrics for the given queries (evaluate appends the argument documentation below)."""
        # Checked before evaluate's own encoding, whose error does not say which query is wrong.
        if predictions is not None or references is not None:
            check_inputs(predictions, references, kwargs.get("questions"), kwargs.get("retrieved_contexts"))
        return super().compute(predictions=predictions, references=references, **kwargs)

    def _compute(self, predictions, references, questions, retrieved_contexts, **options):
        return compute_rag(predictions, references, questions, retrieved_contexts, **options)
