"""ChiMDQA / Chinese SimpleQA factual metric: CO, NA, IN, CGA and F1 from an offline rule judge or an LLM judge."""
import datasets
import evaluate

from chimdqa_eval.factual import compute_factual
from chimdqa_eval.schema import check_answer_pairs

_CITATION = """\
@article{chimdqa2025,
  title   = {ChiMDQA: Towards Comprehensive Chinese Document QA with Fine-grained Evaluation},
  journal = {arXiv preprint},
  year    = {2025}
}
@article{he2024chinesesimpleqa,
  title   = {Chinese SimpleQA: A Chinese Factuality Evaluation for Large Language Models},
  author  = {He, Yancheng and Li, Shilong and Liu, Jiaheng and others},
  journal = {arXiv preprint arXiv:2411.07140},
  year    = {2024}
}
"""

_DESCRIPTION = """\
The factual metric of ChiMDQA (the paper's Table 4) and of Chinese SimpleQA. Each answer gets one grade:
CO (correct: it gives the reference's key information and contradicts nothing), NA (not attempted: a refusal,
a request for context or only a vague range, contradicting nothing) or IN (incorrect: a wrong value or entity,
several competing candidates, a hedge around a wrong answer). CO, NA and IN are percentages of all items;
CGA = CO / (CO + IN) is the accuracy on attempted items and F1 is the harmonic mean of CO and CGA, all 0-100.

The default judge, "rule", is offline and deterministic: Chinese-aware normalization (NFKC, full/half width,
punctuation, case, common traditional characters), Chinese numerals and units (三千五百, 1.2万, 百分之五),
numbers compared to the last significant figure of the reference, refusal / hedge / competing-candidate cues,
either side of a parenthesis, and folded transliteration variants. The "llm" judge asks any OpenAI-compatible
chat endpoint with a versioned Chinese grader prompt, caches every verdict on disk, and reports items it could
not grade instead of guessing. Every result carries a signature naming the judge and its version.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): model answers (an empty answer is NA).
    references (list of str): one reference answer per prediction.
    questions (list of str, optional): the questions; the LLM judge shows them to the grader and the rule
        judge ignores numbers an answer merely repeats from its question.
    domains, question_types, levels, categories (list of str, optional): labels per item for the breakdowns
        by_domain, by_question_type, by_level, by_category. Question types may be given in Chinese (检索, 筛选,
        统计, 计算, 比较, ...); categories are "factual" / "open_ended".
    groups (dict of str -> list of str, optional): any other breakdown, e.g. {"primary_category": [...]} for
        Chinese SimpleQA gives by_primary_category.
    judge (str): "rule" (default, offline), "llm", or "cascade" (the rules where they are certain, the LLM
        judge for the rest).
    judge_model (str), api_base (str): the grader model and its OpenAI-compatible base URL
        (e.g. "http://localhost:8000/v1"), required for judge="llm" / "cascade".
    judge_prompt (str, optional): path of a grader template (YAML: version, optional system, user with
        {question} {reference} {prediction}, verdict_regex with one capture group, verdicts mapping the captured
        text to CO / IN / NA; optional parse: strict | official, repair), or the name of a shipped one:
        "chinese-simpleqa-official" / "simpleqa-official" (the official graders' A/B/C rules under their parse
        rule; add ":strict" for ours); default the built-in zh-judge-1. The signature names its version and
        sha256.
    api_key_env (str): environment variable holding the API key (default "OPENAI_API_KEY"; none is sent when
        it is unset, as local servers expect).
    concurrency (int): parallel requests to the judge (default 16).
    cache_path (str, optional): sqlite file of cached verdicts (default under $CHIMDQA_CACHE or
        ~/.cache/chimdqa/llm); a re-run asks nothing again and an interrupted run resumes.
    endpoint (chimdqa_eval.llm.LLMEndpoint, optional): instead of the five above, with several API bases,
        timeout, retries, a cap on requests (max_calls) and prices.
Returns:
    CO, NA, IN, CGA, F1 (float, 0-100); grades (list of "CO" / "NA" / "IN" per item); by_<breakdown>
    ({label: {CO, NA, IN, CGA, F1}}) for each label column given; signature (str).
    The rule judge and the cascade also return certain (list of bool: were the rules sure?), reasons (the reason
    code of each item) and rules (the decision list's rule that decided it); the cascade adds judged_by ("rule" /
    "llm" per item) and cascade ({"rule", "llm", "llm_calls_saved"}).
    With judge="llm" also ungraded (int) and judge_errors ([{"index", "error"}]): items the judge gave no
    verdict for are graded "UNGRADED", counted in no share (CO + NA + IN then falls short of 100) and warned
    about.
Examples:
    >>> chimdqa_factual = evaluate.load("metrics/chimdqa_factual")
    >>> results = chimdqa_factual.compute(
    ...     predictions=["3518", "大约3500", "3520", "抱歉，文档中没有提到。"],
    ...     references=["3518.17"] * 4)
    >>> results["grades"]
    ['CO', 'NA', 'IN', 'NA']
    >>> results["CO"], results["NA"], results["IN"], results["CGA"]
    (25.0, 50.0, 25.0, 50.0)
    >>> round(results["F1"], 2)
    33.33

    >>> results = chimdqa_factual.compute(
    ...     predictions=["碳酸镁", "托马斯", "一九一九年", "可能是李白"],
    ...     references=["碳酸镁（MgCO3）", "贝蒂·汤玛斯（Betty Thomas）", "1919年", "陶渊明"],
    ...     domains=["academic", "news", "news", "education"])
    >>> results["grades"], results["by_domain"]["news"]["CO"]
    (['CO', 'CO', 'CO', 'IN'], 100.0)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ChimdqaFactual(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            reference_urls=["https://arxiv.org/abs/2411.07140"],
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Check the texts first (evaluate's own error does not say which item is wrong), then compute."""
        if predictions is not None or references is not None:  # None: they came through add() / add_batch()
            check_answer_pairs(predictions, references)
        return super().compute(predictions=predictions, references=references, **kwargs)

    def _compute(self, predictions, references, **options):
        return compute_factual(predictions, references, **options)
